# The two entry points of the README. Both bootstrap first (idempotent; a second run only checks).
SHELL := /bin/bash
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: bootstrap demo test doctor

bootstrap:
	@bash scripts/bootstrap.sh

demo: bootstrap
	@bash scripts/demo.sh

# Tests run in TEST_WORKERS processes, a test file per worker at a time (module fixtures are built
# once); the physical flows are single-threaded, so two workers halve the wall time on 2 cores.
TEST_WORKERS ?= 2

test: bootstrap
	@$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile

doctor: bootstrap
	@$(VENV)/bin/closer doctor
