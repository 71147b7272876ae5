# The two commands of the README.  Both set everything up on a fresh machine:
#   make gate   the standard suite on every backend of Keras's CPU matrix, gated
#               against baselines/ (jax twice: without and with NNX)
#   make test   the project's own tests
PYTHON ?= python3
VENV ?= .venv
BACKENDS ?= torch jax tensorflow numpy openvino
# The bundled suites the gate runs and update-baselines records: the issue's models and the
# census of every public Keras callable (docs/census.md).
SUITES ?= pytest_kerasperf.suite pytest_kerasperf.census
PYTEST_ARGS ?=
# What the venv installs: requirements/ci.txt (the pinned perf set of
# requirements/perf.txt plus the project's tooling), with the full resolved
# environment as constraints.  A GPU runner installs requirements/perf-gpu.txt
# instead (CUDA builds; the CPU constraints would refuse them).
PERF_REQUIREMENTS ?= requirements/ci.txt
CONSTRAINTS := $(if $(filter requirements/ci.txt,$(PERF_REQUIREMENTS)),-c requirements/ci-constraints.txt)
STAMP := $(VENV)/.installed-$(notdir $(basename $(PERF_REQUIREMENTS)))
# jax runs twice in Keras's CI: as is, and with KERAS_NNX_ENABLED=true (its
# own baseline variant); its results file then ends in -nnx.
NNX := $(if $(filter true True TRUE 1,$(KERAS_NNX_ENABLED)),-nnx)
# One shard of the gate's tests (SHARD=K/N, --kerasperf-shard): a CI job of N; its results
# file then ends in -shardKofN (kerasperf report --expect wants all N of them).
SHARD ?=
SHARD_NAME := $(if $(SHARD),-shard$(subst /,of,$(SHARD)))

$(STAMP): $(PERF_REQUIREMENTS) requirements/perf.txt requirements/ci-constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -r $(PERF_REQUIREMENTS) $(CONSTRAINTS)
	$(VENV)/bin/python -m pip install --quiet --no-deps -e .
	touch $@

.PHONY: venv gate test test-fast lint audit update-baselines article startup keras-adoption instructions update-instructions
venv: $(STAMP)

gate: $(STAMP)
	@status=0; for backend in $(BACKENDS); do \
	  echo "== kerasperf gate: $$backend$(NNX)"; \
	  PYTHONHASHSEED=0 KERAS_BACKEND=$$backend $(VENV)/bin/python -m pytest -p no:cacheprovider \
	    --kerasperf --kerasperf-strict --kerasperf-ratchet --pyargs $(SUITES) \
	    $(if $(SHARD),--kerasperf-shard=$(SHARD)) \
	    --kerasperf-json=kerasperf-results-$$backend$(NNX)$(SHARD_NAME).json $(PYTEST_ARGS) || status=1; \
	done; exit $$status

test: $(STAMP)
	PYTHONHASHSEED=0 $(VENV)/bin/python -m pytest -n auto $(PYTEST_ARGS)

# The fast tier: tests that start no process and import no framework (tests/conftest.py
# sorts them), in seconds.
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow" $(PYTEST_ARGS)

# The article in one command: every backend with its plain torch / plain JAX twin,
# then the article's tables and charts from the results files, and its page (docs/publish.md).
ARTICLE_DIR ?= kerasperf-article
ARTICLE_BACKENDS ?= torch jax tensorflow numpy
article: $(STAMP)
	@mkdir -p $(ARTICLE_DIR)
	@for backend in $(ARTICLE_BACKENDS); do \
	  echo "== kerasperf article: $$backend"; \
	  PYTHONHASHSEED=0 KERAS_BACKEND=$$backend $(VENV)/bin/python -m pytest -p no:cacheprovider -q \
	    --kerasperf --kerasperf-plain --pyargs pytest_kerasperf.suite \
	    --kerasperf-json=$(ARTICLE_DIR)/$$backend.json $(PYTEST_ARGS) || exit 1; \
	done
	$(VENV)/bin/kerasperf report $(foreach b,$(ARTICLE_BACKENDS),$(ARTICLE_DIR)/$(b).json) --article \
	  --markdown $(ARTICLE_DIR)/report.md --charts $(ARTICLE_DIR)/charts
	$(VENV)/bin/kerasperf publish $(foreach b,$(ARTICLE_BACKENDS),$(ARTICLE_DIR)/$(b).json) \
	  -o $(ARTICLE_DIR)/index.html --title "kerasperf: Keras #22561 workloads"

# actionlint: every workflow's syntax and expressions (.github/actionlint.yaml: Keras's runner
# labels); shellcheck and pyflakes left out, so the findings do not depend on what else is installed.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/zizmor --offline .github/ adoption/keras/.github/
	$(VENV)/bin/actionlint -shellcheck= -pyflakes= .github/workflows/*.yml \
	  adoption/keras/.github/workflows/*.yml

# Re-record this machine's variant of each backend (KERAS_NNX_ENABLED=true: jax's
# NNX variant); other variants' files are never touched. SHARD=K/N re-records only that
# shard's entries (record as the gate shards: make gate SHARD=K/N).
update-baselines: $(STAMP)
	@for backend in $(BACKENDS); do \
	  echo "== kerasperf update-baselines: $$backend$(NNX)"; \
	  PYTHONHASHSEED=0 KERAS_BACKEND=$$backend $(VENV)/bin/python -m pytest -p no:cacheprovider \
	    --kerasperf-update-baseline --pyargs $(SUITES) $(if $(SHARD),--kerasperf-shard=$(SHARD)) \
	    $(PYTEST_ARGS) || exit 1; \
	done

# Counts that follow only the code (docs/exact-counts.md): the suites in several orders and
# pytest-xdist modes, each gated strictly, every record compared with the test's alone
# (kerasperf audit; writes kerasperf-audit-<backend>.md).
AUDIT_ORDERS ?= isolated,gate,reverse,random,loadfile,load,loadscope,worksteal,shards
audit: $(STAMP)
	@status=0; for backend in $(BACKENDS); do \
	  echo "== kerasperf audit: $$backend$(NNX)"; \
	  PYTHONHASHSEED=0 KERAS_BACKEND=$$backend $(VENV)/bin/kerasperf audit --orders $(AUDIT_ORDERS) \
	    --out kerasperf-audit-$$backend$(NNX) --markdown kerasperf-audit-$$backend$(NNX).md -- \
	    --kerasperf-strict --kerasperf-ratchet --pyargs $(SUITES) $(PYTEST_ARGS) || status=1; \
	done; exit $$status

# Instructions per workload call, counted under callgrind (docs/instructions.md): the
# eager forwards on numpy and torch, gated strictly against baselines/ (counts and
# instructions); `make update-instructions` records them. Needs valgrind.
INSTRUCTIONS_BACKENDS ?= numpy torch
INSTRUCTIONS_SELECT ?= forward and eager
CALLGRIND_ARGS ?=
instructions: $(STAMP)
	@status=0; for backend in $(INSTRUCTIONS_BACKENDS); do \
	  echo "== kerasperf instructions: $$backend"; \
	  KERAS_BACKEND=$$backend $(VENV)/bin/kerasperf callgrind $(CALLGRIND_ARGS) -- -p no:cacheprovider \
	    --kerasperf --kerasperf-strict --kerasperf-ratchet --pyargs pytest_kerasperf.suite -k "$(INSTRUCTIONS_SELECT)" \
	    --kerasperf-json=kerasperf-instructions-$$backend.json $(PYTEST_ARGS) || status=1; \
	done; exit $$status

update-instructions: $(STAMP)
	@for backend in $(INSTRUCTIONS_BACKENDS); do \
	  echo "== kerasperf update-instructions: $$backend"; \
	  KERAS_BACKEND=$$backend $(VENV)/bin/kerasperf callgrind $(CALLGRIND_ARGS) -- -p no:cacheprovider \
	    --kerasperf-update-baseline --pyargs pytest_kerasperf.suite -k "$(INSTRUCTIONS_SELECT)" \
	    $(PYTEST_ARGS) || exit 1; \
	done

# What installing the plugin costs a pytest run that does not use it.
startup: $(STAMP)
	$(VENV)/bin/python benchmarks/startup.py --runs 30

# pytest-kerasperf adopted in a Keras checkout (docs/keras-adoption.md): adds the
# Keras pull request's files to KERAS, then records and gates every variant of
# Keras's CPU matrix there with Keras's own commands.
#   make keras-adoption KERAS=/path/to/keras [ADOPTION_ARGS="--report DIR -k forward"]
keras-adoption: $(STAMP)
	$(VENV)/bin/python adoption/apply.py $(KERAS) $(ADOPTION_ARGS)
