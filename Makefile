# The README's two commands: `make demo` and `make test`. Both install what is missing first.
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: setup demo test unit lint bench bench-quick examples-smoke clean-results

setup:
	bash scripts/setup

demo: setup
	$(BIN)/layerbench run src/layerbench/data/default-campaign.yaml

# The unit tests (pure, each in its own folders) on two workers (pytest-xdist): 80 s instead of 145 on this 2-core
# machine. The integration and e2e tests mostly wait (servers, pods, clusters, fixed-length runs): the Kubernetes
# modules run in one lane beside all the others, then the few that load the machine on purpose run alone
# (tests/lanes.py says how and why).
test: setup lint
ifeq ($(strip $(PYTEST_ARGS)),)
	@rc=0; $(BIN)/python -m pytest -q -n 2 tests/unit || rc=$$?; \
	$(BIN)/python tests/lanes.py || rc=$$?; exit $$rc
else
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
endif

examples-smoke: setup
	$(BIN)/python -m pytest -q tests/e2e/test_examples_smoke.py

unit: setup
	$(BIN)/python -m pytest -q -n 2 tests/unit

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
