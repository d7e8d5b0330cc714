# Set-up is part of every target: a fresh checkout needs only `make serve` or `make test`.
PY ?= python3
VENV := .venv
OLDEST := .venv-jax-oldest
JAX_OLDEST := 0.4.38

.PHONY: install serve test test-oldest lint bench clean web docs container-test \
	container-base container-offline

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	@# An editable install leaves our own modules uncompiled, and with PYTHONDONTWRITEBYTECODE
	@# set every `jaxjudge` process would compile them again (~0.05 s of each one-off grade).
	$(VENV)/bin/python -m compileall -q jaxjudge
	touch $@

install: $(VENV)/.installed

serve: install
	$(VENV)/bin/jaxjudge serve

lint: install
	$(VENV)/bin/ruff check .

# The whole suite on the newest supported JAX, then the sample-submission suite on the oldest.
# The oldest JAX's venv installs beside the first suite (its log in .venv-jax-oldest.log).
test: lint
	@$(MAKE) --no-print-directory $(OLDEST)/.installed > $(OLDEST).log 2>&1 & pid=$$!; \
	$(VENV)/bin/python -m pytest; rc=$$?; \
	wait $$pid || { cat $(OLDEST).log; exit 1; }; exit $$rc
	$(MAKE) test-oldest

$(OLDEST)/.installed: pyproject.toml
	$(PY) -m venv $(OLDEST)
	$(OLDEST)/bin/pip install -q --upgrade pip
	$(OLDEST)/bin/pip install -q -e '.[dev]' 'jax==$(JAX_OLDEST)' 'jaxlib==$(JAX_OLDEST)'
	$(OLDEST)/bin/python -m compileall -q jaxjudge
	touch $@

test-oldest: $(OLDEST)/.installed
	$(OLDEST)/bin/python -m pytest -m "not lowering_independent" tests/test_samples.py \
		tests/test_problem_package.py tests/test_stages_trace.py tests/test_exported_reader.py

# The browser page: rebuild the committed bundle in jaxjudge/service/static/ from web/ with
# the locked npm packages (Node >= 20.19), and refresh the axe-core copy the browser tests
# use without Node.
web:
	cd web && npm ci --no-audit --no-fund && npm run build
	cp web/node_modules/axe-core/axe.min.js tests/data/axe-core/axe.min.js

# The documentation site (Sphinx + MyST + Furo) in docs/_build/html, built strictly: any warning
# (a missing page, a broken cross-reference, a bad toctree) fails. The `docs` extra is part of
# `dev`; the check installs it into an older .venv that lacks it. `make serve` never needs it.
docs: install
	@$(VENV)/bin/python -c 'import sphinx, myst_parser, furo' 2>/dev/null \
		|| $(VENV)/bin/pip install -q -e '.[docs]'
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

# The container image built with podman from a Debian-packages base and run as the docs say
# (root, podman, mmdebstrap, runc; exit status 77 when they cannot work here).
container-test:
	docker/test-image.sh

# The image without a container registry: a base from Debian packages (docker/base-image.sh,
# mmdebstrap; it needs a Debian mirror), then the image on it (it needs PyPI or a mirror:
# CONTAINER_BUILD_FLAGS='--build-arg PIP_INDEX_URL=...'). On a host that may not raise ulimits
# (podman's builds and runs fail with "error setting rlimit"), add to CONTAINER_BUILD_FLAGS
# --ulimit nofile=N:N --ulimit nproc=32768:32768, N being `ulimit -Hn`.
CONTAINER_ENGINE ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
CONTAINER_BUILD_FLAGS ?=
container-base:
	CONTAINER_ENGINE=$(CONTAINER_ENGINE) docker/base-image.sh

container-offline:
	base=$$(CONTAINER_ENGINE=$(CONTAINER_ENGINE) docker/base-image.sh) \
	&& $(CONTAINER_ENGINE) build $(if $(filter podman,$(CONTAINER_ENGINE)),--format docker) \
		--build-arg "PYTHON_IMAGE=$$base" $(CONTAINER_BUILD_FLAGS) -t jaxjudge .

bench: install
	$(VENV)/bin/python bench/run.py

clean:
	rm -rf $(VENV) $(OLDEST) *.egg-info docs/_build docs/generated
