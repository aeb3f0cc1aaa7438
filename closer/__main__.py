"""`python -m closer` = the `closer` command (the evaluator runs the flow this way, in its own
process group, so that a wall-clock limit can stop it)."""

from closer.cli import main

main()
