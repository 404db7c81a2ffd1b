# tfk8s: every target sets up what it needs on a fresh machine.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
STACK ?= scene1-case3

.PHONY: setup plan test bench clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)

# Who runs where, from the stack file alone: no cluster, no Pulumi CLI.
plan: $(STAMP)
	$(VENV)/bin/python -m components plan $(STACK)

test: $(STAMP)
	$(VENV)/bin/python -m pytest

bench: $(STAMP)
	$(VENV)/bin/python benchmarks/program_under_mocks.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
