# neuronfleet: `make demo` and `make test` set themselves up (project venv, Node from PyPI, pinned CDK CLI).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ENV ?= dev
# The project's own Node/CDK first; no CDK notices, telemetry or update checks (synth stays offline).
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup demo synth test lint bench wheel clean scan

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml package.json package-lock.json scripts/setup_node.py
	@echo "==> setting up $(VENV) (pinned Python deps, Node.js from PyPI, CDK CLI from package-lock.json)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(PY) scripts/setup_node.py
	touch $@

demo: $(STAMP)
	$(PY) scripts/demo.py

synth: $(STAMP)
	rm -rf cdk.out
	cdk synth --quiet -c env=$(ENV)
	@ls cdk.out/*.template.json

# Static checks only. The shipped AWS data is checked against the installed moto and botocore by pytest, once
# (tests/unit/test_catalog.py runs scripts/refresh_data.py --check), so a bare `pytest` checks it too.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m mypy lambdas

test: lint
	$(PY) -m pytest

# Security scanners on every example fleet, by hand (minutes): cdk-nag's AwsSolutions, NIST 800-53 R5, HIPAA Security and
# PCI DSS 3.2.1 packs, and checkov if installed apart (scripts/scan.py says how); docs/security.md has the counts.
scan: $(STAMP)
	$(PY) scripts/scan.py

bench: $(STAMP)
	$(PY) scripts/bench_floor.py
	$(PY) scripts/bench_synth.py
	$(PY) scripts/bench_collector.py

# The construct library as a wheel in dist/ (pip install dist/neuronfleet-*.whl; it is not on PyPI). The wheel holds
# the library, its data, the Lambda sources and the `neuronfleet` command; the fleet-file app stays in the repository.
wheel: $(STAMP)
	rm -rf dist build  # a build/ left from an earlier build would add files that moved away
	$(PY) -m build --wheel --no-isolation --outdir dist .
	@ls dist/*.whl

clean:
	rm -rf cdk.out build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
