# The two commands of the README. Both create (once) and reuse .venv/ and
# install purlin into it, so they work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install clean

# Editing the C++/CUDA runtime reinstalls, which rebuilds purlin._runtime.
CSRC := $(wildcard csrc/CMakeLists.txt csrc/*/*.cpp csrc/*/*.h csrc/*/*/*.cpp csrc/*/*/*.h purlin/cuda/include/purlin/abi.h purlin/cuda/include/purlin/counts_tables.h \
           purlin/jax/ffi/purlin_jax_api.h)

# A torch already there is kept; else the CPU build the tests need (2.13.0).
$(STAMP): pyproject.toml CMakeLists.txt $(CSRC)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install -q 'torch==2.13.0'
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/purlin-examples

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider
	$(BIN)/lit -sv tests/filecheck

clean:
	rm -rf $(VENV) build
