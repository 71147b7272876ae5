# The two commands of the README.  Both set everything up on a fresh machine.
#   make gate   the standard suite on every backend, gated against baselines/
#   make test   the project's own tests
PYTHON ?= python3
VENV ?= .venv
BACKENDS ?= torch jax tensorflow numpy
PYTEST_ARGS ?=

$(VENV)/.installed: requirements/ci.txt requirements/ci-constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -r requirements/ci.txt -c requirements/ci-constraints.txt
	$(VENV)/bin/python -m pip install --quiet --no-deps -e .
	touch $@

.PHONY: venv gate test lint update-baselines article
venv: $(VENV)/.installed

gate: $(VENV)/.installed
	@status=0; for backend in $(BACKENDS); do \
	  echo "== kerasperf gate: $$backend"; \
	  PYTHONHASHSEED=0 KERAS_BACKEND=$$backend $(VENV)/bin/python -m pytest -p no:cacheprovider \
	    --kerasperf --kerasperf-strict --pyargs pytest_kerasperf.suite \
	    --kerasperf-json=kerasperf-results-$$backend.json $(PYTEST_ARGS) || status=1; \
	done; exit $$status

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -n auto $(PYTEST_ARGS)

# The article in one command: every backend with its plain torch / plain JAX twin,
# then the article's tables and charts from the four results files.
ARTICLE_DIR ?= kerasperf-article
article: $(VENV)/.installed
	@mkdir -p $(ARTICLE_DIR)
	@for backend in $(BACKENDS); do \
	  echo "== kerasperf article: $$backend"; \
	  PYTHONHASHSEED=0 KERAS_BACKEND=$$backend $(VENV)/bin/python -m pytest -p no:cacheprovider -q \
	    --kerasperf --kerasperf-plain --pyargs pytest_kerasperf.suite \
	    --kerasperf-json=$(ARTICLE_DIR)/$$backend.json $(PYTEST_ARGS) || exit 1; \
	done
	$(VENV)/bin/kerasperf report $(foreach b,$(BACKENDS),$(ARTICLE_DIR)/$(b).json) --article \
	  --markdown $(ARTICLE_DIR)/report.md --charts $(ARTICLE_DIR)/charts

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

update-baselines: $(VENV)/.installed
	@for backend in $(BACKENDS); do \
	  PYTHONHASHSEED=0 KERAS_BACKEND=$$backend $(VENV)/bin/python -m pytest -p no:cacheprovider \
	    --kerasperf-update-baseline --pyargs pytest_kerasperf.suite || exit 1; \
	done
