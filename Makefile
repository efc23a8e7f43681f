# The README's two commands: `make demo` and `make test`. Both install what is missing first.
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: setup demo test unit lint bench bench-quick examples-smoke clean-results

setup:
	bash scripts/setup

demo: setup
	$(BIN)/layerbench run src/layerbench/data/default-campaign.yaml

test: setup lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

examples-smoke: setup
	$(BIN)/python -m pytest -q tests/e2e/test_examples_smoke.py

unit: setup
	$(BIN)/python -m pytest -q tests/unit

lint: setup
	$(BIN)/ruff check src tests bench

BENCHES ?= bench/reset.py bench/fidelity.py bench/sampler_overhead.py

bench: setup
	@for b in $(BENCHES); do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# every bench at tiny sizes (what tests/integration/test_benches.py runs): it runs, its numbers mean nothing
bench-quick: setup
	@for b in $(filter-out bench/common.py,$(wildcard bench/*.py)); do echo "== $$b --quick"; \
		$(BIN)/python $$b --quick || exit 1; done

clean-results:
	rm -rf results test-artifacts
