"""Detailed routing with qrouter (route) and the cell pin-access LEF it reads (pinaccess);
patches/ holds Closer's qrouter patches (scripts/build-qrouter.sh applies them)."""
