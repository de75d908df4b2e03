# Two commands do all the set-up on a fresh machine:
#   make demo   install everything, then run the whole pipeline (tinyrps all --out out)
#   make test   install everything, then run the whole test suite
# For development:
#   make test-fast   the tests not marked slow: no emulator, no cross compiler, no full pipeline
#   make fuzz        fuzz every firmware parser for FUZZ_SECONDS each (default 60); fails on a finding
#                    (FUZZ_PROGRAMS="out/run/export/cortex-m55.pte" adds full programs to the pte seeds)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# The stamp changes with pyproject.toml, so an edited dependency list reinstalls.
STAMP  := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-16)

FUZZ_SECONDS ?= 60
# pytest's exit status 5 means it collected nothing: the suite is missing, which is a failure.
PYTEST = $(PY) -m pytest $(1); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: the suite is missing (tests/)"; exit 1; fi; \
	exit $$rc

.PHONY: demo test test-fast fuzz setup system-deps clean

demo: setup
	$(VENV)/bin/tinyrps all --out out

# Two workers (pytest-xdist): the suite waits on QEMU, compilers and subprocesses about a third of
# its time, so a second worker fills the other core. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist worksteal)

test: setup
	@$(call PYTEST,$(XDIST))

test-fast: setup
	@$(call PYTEST,$(XDIST) -m "not slow")

fuzz: setup
	$(PY) scripts/fuzz.py run --seconds $(FUZZ_SECONDS) $(foreach p,$(FUZZ_PROGRAMS),--program $(p))

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
	rm -rf out .pytest_cache "$${XDG_CACHE_HOME:-$$HOME/.cache}/tinyrps/firmware" \
		"$${XDG_CACHE_HOME:-$$HOME/.cache}/tinyrps/test-fixtures"
