# Every target works from a fresh clone: it creates .venv and installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime
DEMO_DIR ?= demo-output
DEMO_MODEL ?= $(DEMO_DIR)/model.nbc
FUZZ_SECONDS ?= 60
FUZZ_WORK ?= $(or $(TMPDIR),/tmp)/nbclass-fuzz

.DEFAULT_GOAL := help
.PHONY: help install demo test lint bench bench-serving bench-accuracy clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e . --config-settings editable_mode=compat
	touch $(RUNTIME)

$(STAMP): $(RUNTIME)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install nbclass with its test dependencies

demo: $(RUNTIME) ## Fit the demo corpus, classify a piped document, show top features
	mkdir -p $(DEMO_DIR)
	$(BIN)/nbclass fit corpora/demo -o $(DEMO_MODEL)
	echo "My card was charged twice for the same invoice, please refund one payment" \
	  | $(BIN)/nbclass predict -m $(DEMO_MODEL) --format jsonl
	$(BIN)/nbclass predict -m $(DEMO_MODEL) corpora/demo-docs
	$(BIN)/nbclass top-features -m $(DEMO_MODEL) -k 10

test: $(STAMP) ## Run the whole test suite
	$(BIN)/python -m pytest -q

lint: $(STAMP) ## Check style with ruff
	$(BIN)/python -m pip install --quiet --disable-pip-version-check ruff
	$(BIN)/python -m ruff check nbclass tests bench fuzz

bench: $(STAMP) ## Benchmark against scikit-learn on 20 Newsgroups (minutes; 1 GB generated), the scale section (an hour; 600 MB generated), then nbclass serve
	$(BIN)/python bench/run.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/serving.py

bench-serving: $(STAMP) ## Benchmark nbclass serve alone with wrk on 127.0.0.1 (installs wrk with apt-get if missing)
	$(BIN)/python bench/serving.py

bench-accuracy: $(STAMP) ## Accuracy, macro-F1, log loss, ECE against scikit-learn's NB and LinearSVC on every shared corpus
	$(BIN)/python bench/accuracy.py

.PHONY: fuzz
fuzz: $(STAMP) ## Fuzz the model loaders, forged headers, corpus and table readers (atheris, FUZZ_SECONDS each)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,fuzz]' --config-settings editable_mode=compat
	$(BIN)/python fuzz/seeds.py $(FUZZ_WORK)
	$(BIN)/python fuzz/run.py model_loader $(FUZZ_SECONDS) $(FUZZ_WORK)
	$(BIN)/python fuzz/run.py corpus_reader $(FUZZ_SECONDS) $(FUZZ_WORK)
	$(BIN)/python fuzz/run.py model_header $(FUZZ_SECONDS) $(FUZZ_WORK)
	$(BIN)/python fuzz/run.py table_reader $(FUZZ_SECONDS) $(FUZZ_WORK)

clean: ## Remove the virtual environment and caches
	rm -rf $(VENV) $(DEMO_DIR) .pytest_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
