# The two entry points of the README. Both bootstrap first (idempotent; a second run only checks).
SHELL := /bin/bash
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: bootstrap demo test doctor

bootstrap:
	@bash scripts/bootstrap.sh

demo: bootstrap
	@bash scripts/demo.sh

test: bootstrap
	@$(VENV)/bin/python -m pytest

doctor: bootstrap
	@$(VENV)/bin/closer doctor
