"""The benchmark's modes: one runner per mode name (the `MODES` registry), and the names derived
from them (budget-sweep modes `async@C,F`, selective-prefill modes `sync@keepRHO[@SELECTOR]`,
modes on another build of the target or with another drafter `MODE@VARIANT`).

A runner takes the run's pipeline, the prompt's ids [1, prompt_len] and the generation settings,
and returns the new tokens and the decode statistics. This module knows nothing about results
files, summaries or tables (`bench.py`, `bench_summary.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from d3d.evaluation.llamacpp import run_llamacpp
from d3d.evaluation.prefill_metrics import keep_runner, mode_keep, mode_selector
from d3d.evaluation.variants import split_variant, variant_runner
from d3d.inference.baselines import hf_generate
from d3d.inference.engine import DecodeStats, GenerationConfig
from d3d.inference.pipeline import Pipeline

PLD_TOKENS = 10  # candidate tokens per round of prompt-lookup decoding

ModeRunner = Callable[[Pipeline, Tensor, GenerationConfig], tuple[list[int], DecodeStats]]
SWEEP_SEPARATOR = "@"  # async@C,F: the async mode at a fixed budget


def run_ar(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    return pipe.generate(prompt_ids, "ar", cfg)


def run_sync(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    return pipe.generate(prompt_ids, "sync", cfg)


def run_async(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    return pipe.generate(prompt_ids, "async", cfg)


def run_hf(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    return hf_generate(pipe.target, prompt_ids, cfg)


def run_pld(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    return hf_generate(pipe.target, prompt_ids, cfg, prompt_lookup=PLD_TOKENS)


def run_ar_drafter(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    return pipe.generate(prompt_ids, "ar-drafter", cfg)


def run_hf_assisted(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
    return hf_generate(pipe.target, prompt_ids, cfg, assistant=pipe.ar_drafter_hf, assistant_tokens=pipe.ar_draft_tokens)


MODES: dict[str, ModeRunner] = {
    "ar": run_ar, "sync": run_sync, "async": run_async, "hf": run_hf, "pld": run_pld,
    "ar-drafter": run_ar_drafter, "hf-assisted": run_hf_assisted, "llamacpp": run_llamacpp,
}
TREE_MODES = ("tree", "tree-drafter", "tree-lookup")  # tree decoding: both branches (--tree-branches), each alone
DRAFTER_MODES = ("sync", "async", *TREE_MODES)  # modes that use the drafter (their summary names it)
AR_DRAFTER_MODES = ("ar-drafter", "hf-assisted")  # modes that use the AR draft model


def tree_runner(branches: tuple[str, ...] | None) -> ModeRunner:
    """Tree decoding with `branches` (None: the pipeline's own, `--tree-branches`)."""

    def run_tree(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
        saved = pipe.tree_branches
        pipe.tree_branches = branches or saved
        try:
            return pipe.generate(prompt_ids, "tree", cfg)
        finally:
            pipe.tree_branches = saved

    return run_tree


MODES.update({"tree": tree_runner(None), "tree-drafter": tree_runner(("drafter",)), "tree-lookup": tree_runner(("lookup",))})


def base_mode(mode: str) -> str:
    """"async" for "async@C,F", the mode itself otherwise."""
    return mode.split(SWEEP_SEPARATOR)[0]


def runner_for(mode: str) -> ModeRunner:
    """The runner of a mode name, budget-sweep and selective-prefill (sync@keepRHO) modes included."""
    if mode_keep(mode) is not None:
        return keep_runner(mode_keep(mode), mode_selector(mode))
    base, variant = split_variant(mode)
    if variant is not None:  # ar@float32, sync@int8, tree@int8, sync@NAME ... (variants.py)
        return variant_runner(mode, MODES[base])
    if base_mode(mode) == "async" and SWEEP_SEPARATOR in mode:
        budget = mode.split(SWEEP_SEPARATOR, 1)[1]

        def run_at_budget(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig):
            pipe.async_runner.config.budget = budget  # read at the start of every async generation
            return pipe.generate(prompt_ids, "async", cfg)

        return run_at_budget
    return MODES[mode]
