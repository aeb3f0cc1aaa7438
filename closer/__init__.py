"""Closer: a harness that measures how well hardware-design agents close a design under a budget."""

__version__ = "0.1.0"
# Version of the task suite format; every result record carries it.
SUITE_VERSION = "closer-suite-0.1"
