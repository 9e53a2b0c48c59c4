# neuronfleet: `make demo` and `make test` set themselves up (project venv, Node from PyPI, pinned CDK CLI).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed
ENV ?= dev
DEMO_ARGS ?=
# The project's own Node/CDK first; no CDK notices, telemetry or update checks (synth stays offline).
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
# Annotations without a JavaScript stack trace: the CLI printed the jsii kernel's `/tmp/.../lib/program.js:1:5591` above
# each note (the CLI no longer passes aws:cdk:disable-stack-trace; in cdk.json it is a reserved key the CLI warns of).
# Templates are byte for byte the same.
export CDK_DISABLE_STACK_TRACE := 1
# Bytecode is cached (__pycache__ is ignored by git and by the asset staging, core/assets.py): with
# PYTHONDONTWRITEBYTECODE set, every process recompiled the library's 1.2 MB of source (issue 42).
unexport PYTHONDONTWRITEBYTECODE
# Each setup step says what it fetches and how big it is; a silent step prints a line at least every 10 s (progress.py).
STEP := $(PYTHON) scripts/progress.py
PIP := $(PY) -m pip install --disable-pip-version-check --progress-bar off

.PHONY: setup setup-demo demo synth test lint bench wheel clean scan

# setup-demo: what `make demo`, `make synth` and `make bench` need; setup: that and the test and lint tools.
setup-demo: $(DEMO_STAMP)
setup: $(STAMP)

$(DEMO_STAMP): requirements.txt requirements-demo.txt pyproject.toml package.json package-lock.json scripts/setup_node.py
	@echo "==> setup 1/4: the virtualenv $(VENV) ($(PYTHON) -m venv; nothing downloaded)"
	test -x $(PY) || $(STEP) "python -m venv" -- $(PYTHON) -m venv $(VENV)
	@echo "==> setup 2/4: Python packages for the demo (requirements-demo.txt: 73 packages, about 240 MB downloaded, \
	about 1.0 GB installed and byte-compiled: aws-cdk-lib 464 MB, Node.js 24 206 MB, moto with its CloudFormation \
	checker cfn-lint 190 MB; 2 to 4 minutes on 2 shared cores)"
	$(STEP) "pip install -r requirements-demo.txt" --watch $(VENV) -- $(PIP) -r requirements-demo.txt
	@echo "==> setup 3/4: neuronfleet itself, editable (pip install -e .; nothing downloaded)"
	$(STEP) "pip install -e ." -- $(PIP) --no-deps --no-build-isolation -e .
	@echo "==> setup 4/4: Node.js into $(VENV)/bin and the pinned AWS CDK CLI (npm ci: aws-cdk from \
	package-lock.json, about 8 MB downloaded, 29 MB in node_modules)"
	$(STEP) "npm ci" -- $(PY) scripts/setup_node.py
	touch $@

$(STAMP): $(DEMO_STAMP) requirements-dev.txt
	@echo "==> setup for tests: test runner, validators and linters (requirements-dev.txt adds 21 packages, about \
	80 MB downloaded, about 290 MB installed: kubernetes-validate 108 MB, duckdb 68 MB, mypy 63 MB, ruff 24 MB)"
	$(STEP) "pip install -r requirements-dev.txt" --watch $(VENV) -- $(PIP) -r requirements-dev.txt
	touch $@

demo: $(DEMO_STAMP)
	$(PY) scripts/demo.py $(DEMO_ARGS)

synth: $(DEMO_STAMP)
	rm -rf cdk.out
	cdk synth --quiet -c env=$(ENV)
	@ls cdk.out/*.template.json

# Static checks only. The shipped AWS data is checked against the installed moto and botocore by pytest, once
# (tests/unit/test_catalog.py runs scripts/refresh_data.py --check), so a bare `pytest` checks it too.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m mypy lambdas

# Both cores (pytest-xdist): the tests that synthesise the example fleets share one worker's synths, a module with a
# module-scoped fixture stays on one worker, every other test goes where there is room (tests/conftest.py, work_unit).
PYTEST_WORKERS ?= 2
test: lint
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# Security scanners on every example fleet, by hand (minutes): cdk-nag's AwsSolutions, NIST 800-53 R5, HIPAA Security and
# PCI DSS 3.2.1 packs, and checkov if installed apart (scripts/scan.py says how); docs/security.md has the counts.
scan: $(STAMP)
	$(PY) scripts/scan.py

# Figures, then the synth guards of issue 42 (exit 1 when prod's kit/floor CPU ratio is above 1.5x or the Rainier
# fleet's above 2.0x; docs/synth.md). scripts/bench_synth.py (prod against an empty app) is run by hand.
bench: $(DEMO_STAMP)
	$(PY) scripts/bench_cli.py
	$(PY) scripts/bench_collector.py
	$(PY) scripts/bench_floor.py

# The construct library as a wheel in dist/ (pip install dist/neuronfleet-*.whl; it is not on PyPI). The wheel holds
# the library, its data, the Lambda sources and the `neuronfleet` command; the fleet-file app stays in the repository.
wheel: $(STAMP)
	rm -rf dist build  # a build/ left from an earlier build would add files that moved away
	$(PY) -m build --wheel --no-isolation --outdir dist .
	@ls dist/*.whl

clean:
	rm -rf cdk.out build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
