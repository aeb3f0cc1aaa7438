"""The first process inside a sandbox whose agent may reach endpoints: it forwards
127.0.0.1:PROXY_PORT to the runner's proxy socket, runs the agent, and exits with its code.

    python -m closer.sandbox.inside --proxy-socket /run/closer/proxy.sock -- AGENT ARGV...
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

from closer.sandbox.netproxy import PROXY_PORT, splice


def forward(listen_port: int, socket_path: str) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(32)

    def accept_loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(socket_path)
            except OSError:
                conn.close()
                continue
            threading.Thread(target=splice, args=(conn, upstream), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--proxy-socket" or argv[2] != "--":
        print("usage: python -m closer.sandbox.inside --proxy-socket PATH -- ARGV...", file=sys.stderr)
        return 2
    forward(PROXY_PORT, argv[1])
    return subprocess.call(argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
