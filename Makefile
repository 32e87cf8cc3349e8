# The two commands of the README: `make demo` and `make test`. Both set themselves up.
.PHONY: demo demo-sentiment test lint bootstrap bootstrap-runtime build-spam build-sentiment

VENV := .venv
BIN := $(VENV)/bin
ARTIFACTS ?= artifacts

bootstrap:
	@bash scripts/bootstrap.sh

# building and serving need no test servers (browser, Prometheus, spamc, ...): skip their apt
bootstrap-runtime:
	@bash scripts/bootstrap.sh --runtime

demo: bootstrap-runtime
	ARTIFACTS=$(ARTIFACTS) bash scripts/demo.sh

# spam plus English and Chinese sentiment (longer: two more trainings); `demo` stays spam only.
demo-sentiment: bootstrap-runtime
	ARTIFACTS=$(ARTIFACTS) bash scripts/demo_sentiment.sh

test: bootstrap lint
	$(BIN)/python -m pytest -q

# mypy's files (pyproject.toml) are textgate and benchmarks too
lint:
	$(BIN)/ruff check textgate tests benchmarks
	$(BIN)/ruff format --check textgate tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

build-spam: bootstrap-runtime
	$(BIN)/textgate build spam -o $(ARTIFACTS)/spam

build-sentiment: bootstrap-runtime
	$(BIN)/textgate build sentiment -o $(ARTIFACTS)/sentiment

# Benchmarks (benchmarks/suite/suite.py): ratios within one run, written to benchmarks/results/latest.json.
.PHONY: bench bench-quick
bench: build-spam
	$(BIN)/python benchmarks/suite/suite.py --bundle $(ARTIFACTS)/spam
	$(BIN)/python benchmarks/suite/suite.py --bundle $(ARTIFACTS)/spam --workload mail --out benchmarks/results/latest_mail.json
	$(BIN)/python benchmarks/suite/suite.py --bundle $(ARTIFACTS)/spam --workload stream --cascade --campaign-entries 10000 --out benchmarks/results/latest_stream.json
	$(BIN)/python benchmarks/suite/gateway_workers.py --bundle $(ARTIFACTS)/spam --out benchmarks/results/gateway_workers.json

bench-quick: build-spam
	$(BIN)/python benchmarks/suite/suite.py --quick --bundle $(ARTIFACTS)/spam

# Fault runs (tests/integration/test_faults.py) three times each; CI runs them once.
.PHONY: faults soak
faults: bootstrap
	TEXTGATE_FAULT_ROUNDS=3 $(BIN)/python -m pytest -q -s tests/integration/test_faults.py

# 20 minutes at 70 % of measured capacity (benchmarks/suite/soak.py); CI runs a one-minute version.
SOAK_MINUTES ?= 20
soak: bootstrap build-spam
	$(BIN)/python benchmarks/suite/soak.py --bundle $(ARTIFACTS)/spam --minutes $(SOAK_MINUTES)
