"""llama.cpp as a baseline mode of the benchmark (`--modes llamacpp`): what a CPU user runs instead.

The mode runs the target's own GGUF file (the embedded `SmolLM2-135M-Instruct.Q4_1.gguf`, or the
`.gguf` given as `--target`) through llama-cpp-python, on the same prompts as every other mode:
the chat template is applied by our tokenizer and the token ids are passed in (the GGUF and the
converted copy share the vocabulary), greedy, with as many threads as torch uses. It reports
tokens/s like every mode; its output is compared with our plain decoding as agreement, not as
identity: llama.cpp computes with its own quantized kernels, so it is another model.

llama-cpp-python is an optional extra, built from source. On a CPU whose hypervisor forbids AMX
tiles (this project's machine) a native build dies with SIGILL, so build with AMX off (about 15
minutes on 2 cores; kept out of `make demo` and `make test`):

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
      -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON \
      -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
      .venv/bin/pip install --no-binary llama-cpp-python --no-cache-dir '.[llamacpp]'

Without it the mode stops with one line naming the extra. This module knows nothing about the
benchmark's table; `bench.py` calls `run_llamacpp` like any mode runner.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.engine import DecodeStats, GenerationConfig, context_budget
from d3d.models import hub

EXTRA = "llamacpp"  # pip install '.[llamacpp]'
MISSING = (f"mode llamacpp needs llama-cpp-python: pip install '.[{EXTRA}]' (built with AMX off on this machine; "
           "the command is in docs/runtime.md, \"llama.cpp baseline\")")


def import_llama_cpp():
    """The `llama_cpp` module, or a D3DError naming the extra."""
    try:
        import llama_cpp
    except ImportError:
        raise D3DError(MISSING) from None
    return llama_cpp


def target_gguf(name: str) -> Path:
    """The GGUF file of a target spec: the embedded one for the default target, else the spec itself."""
    if name.strip().lower() == hub.DEFAULT_TARGET:
        return hub.default_gguf_path()
    path = Path(name).expanduser()
    if path.suffix.lower() == ".gguf" and path.is_file():
        return path
    raise D3DError(f"mode llamacpp runs a GGUF file: use the embedded target or --target path/to/model.gguf, not {name}")


class LlamaCpp:
    """One llama.cpp model, loaded once per run, generating greedily from token ids."""

    def __init__(self, gguf: Path, context: int, threads: int) -> None:
        llama_cpp = import_llama_cpp()
        self.llm = llama_cpp.Llama(model_path=str(gguf), n_ctx=context, n_threads=threads, n_threads_batch=threads,
                                   n_batch=512, logits_all=False, verbose=False)

    def generate(self, prompt: list[int], stop, budget: int) -> tuple[list[int], DecodeStats]:
        """Greedy tokens after `prompt` until `stop` (a StopChecker) says so, and their stats."""
        stats = DecodeStats("llamacpp", prompt_tokens=len(prompt))
        stop.max_new_tokens = budget
        self.llm.reset()  # no reuse of an earlier prompt's cache: every prompt is prefilled in full
        start = time.perf_counter()
        for token in self.llm.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True):
            if not stop.tokens:
                stats.prefill_s = time.perf_counter() - start  # prompt evaluation + the first token
            else:
                stats.record_round(1)
            if stop.push(int(token)):
                break
        stats.total_s = time.perf_counter() - start
        stats.verify_s = stats.total_s - stats.prefill_s
        stats.new_tokens, stats.stop_reason = len(stop.tokens), stop.reason
        return list(stop.tokens), stats


def run_llamacpp(pipe, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    """The bench's mode runner: greedy llama.cpp on prompt_ids [1, n] (the model is loaded on first use)."""
    if not cfg.sampling.greedy:
        raise D3DError("mode llamacpp runs greedy only (temperature 0)")
    runner = pipe.__dict__.get("_llamacpp")
    if runner is None:
        target = pipe.target
        runner = pipe._llamacpp = LlamaCpp(target_gguf(target.name), target.context_length, torch.get_num_threads())
    prompt = prompt_ids[0].tolist()
    budget = context_budget(pipe.target.context_length, len(prompt), cfg.max_new_tokens)
    return runner.generate(prompt, pipe.target.stop_checker(cfg), budget)
