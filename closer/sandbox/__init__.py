"""Isolation of the processes Closer does not trust (the agent), with bubblewrap.

`spec` holds what a sandbox is as data (mounts, identity, limits, network); `bwrap` turns a spec
into the command line that starts it; `hide` finds the EDA programs and packages a sandbox must
not reach; `reap` makes sure nothing of a sandbox outlives it; `netproxy` is the runner-owned
forwarder through which a sandbox reaches the endpoints its agent configuration allows.
"""
