# Two commands do all the set-up on a fresh machine:
#   make demo   install everything, then run the whole pipeline (tinyrps all --out out)
#   make test   install everything, then run the whole test suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# The stamp changes with pyproject.toml, so an edited dependency list reinstalls.
STAMP  := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-16)

.PHONY: demo test setup system-deps clean

demo: setup
	$(VENV)/bin/tinyrps all --out out

test: setup
	@$(PY) -m pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: the suite is missing (tests/)"; exit 1; fi; \
	exit $$rc

setup: $(STAMP) system-deps

# torch first, pinned: its CPU wheel lies on this machine's disk; asking for plain
# `torch` would download a multi-GB CUDA build. Elsewhere, point TORCH_INDEX at
# PyTorch's CPU index: make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# The Arm cross toolchain, QEMU and the build tools, from Debian, where missing.
system-deps:
	@scripts/install-system-deps.sh

clean:
	rm -rf out .pytest_cache "$${XDG_CACHE_HOME:-$$HOME/.cache}/tinyrps/firmware"
