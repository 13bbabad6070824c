"""What the results page measures: one dataclass, a default and a comment on every field.

The defaults are this session's page (`make results`): the embedded SmolLM2-135M-Instruct target
and its shipped drafter, bfloat16 for the speed tables, float32 where exact arithmetic is the
point. `results_sections.py` turns these settings into commands; nothing here runs anything.
"""

from __future__ import annotations

from dataclasses import dataclass

DEMO_PROMPT = "Write a Python function that returns the n-th Fibonacci number, with a short docstring."  # the Makefile's PROMPT
TABLE_MODES = ("ar", "pld", "sync", "sync@b16", "async", "tree", "ar@int8", "ar@dense", "llamacpp")  # issue 16's
# modes (ar, pld, sync, async; the drafter modes run the drafter's run block size, 8 for the shipped one) plus sync
# drafting its trained blocks of 16 (`sync@b16`, what its run block size was measured against), the tree, int8 plain decoding,
# the run's target unpacked (`ar@dense`: the run's default weights are packed where that runs, `packed.py`) and
# llama.cpp (only where `import llama_cpp` works). The branch
# ablations (tree-drafter, tree-lookup), sync@int8 and the float32 baseline are in earlier pages (git history):
# the quiet window on 2 cores is short.
MIXED_MODES = ("ar", "pld", "sync", "sync@b16", "async", "tree", "llamacpp")  # the mixed suite
PREFILL_SELECTORS = "probe,target-layers,target-layers+lexical,lexical,last,random"  # every selector, one run


@dataclass
class ResultsConfig:
    """Every setting of the page's measurements (the command-line flags of `python -m d3d.evaluation.results`)."""

    runs_dir: str = "runs/results"  # each section's raw outputs, in a folder of its own
    keep_dir: str | None = None  # where the measurements are kept in git (`results_keep.py`; the command's default:
    # docs/results-data), None: nowhere
    page: str = "docs/results.md"  # the page written from them
    images: str = "docs/img"  # plots of the optional sections
    dtype: str = "bfloat16"  # dtype of the speed tables, the load test, the prefill table and the demo
    target: str | None = None  # target model (None: the embedded SmolLM2-135M-Instruct)
    drafter: str | None = None  # D3D drafter (None: the shipped one)
    max_new_tokens: int = 128  # new tokens per prompt in the speed tables and the demo
    table_suites: tuple[tuple[str, int], ...] = (("humaneval", 40), ("mixed", 20))  # (suite, prompts) of the speed table
    table_modes: tuple[str, ...] = TABLE_MODES  # bench modes of the speed table
    suite_modes: tuple[tuple[str, tuple[str, ...]], ...] = (("mixed", MIXED_MODES),)  # (suite, modes) overriding table_modes
    data_prompts: str = "data/mix_prompts.jsonl"  # prompts of the data-throughput runs
    data_batches: tuple[int, ...] = (32, 64, 128)  # batch sizes measured (each run answers one batch)
    data_dtypes: tuple[str, ...] = ("float32", "bfloat16")  # dtypes measured
    data_tokens: int = 64  # response budget of the data-throughput runs
    cost_sizes: str = "1,2,4,8,16,24,32,48,64"  # pass sizes of the cost tables
    cost_builds: tuple[tuple[str, str], ...] = (("bfloat16", "packed"), ("bfloat16", "dense"), ("bfloat16", "int8"),
                                                ("float32", "dense"), ("float32", "int8"))  # (dtype, weights) of the cost tables
    profile_builds: tuple[tuple[str, str], ...] = (("bfloat16", "packed"), ("bfloat16", "dense"),
                                                   ("bfloat16", "int8"))  # `d3d cost --profile`
    load_concurrency: str = "1,2,4,8"  # client counts of the load test
    load_requests: int = 8  # requests per (concurrency, speculation) phase
    load_tokens: int = 64  # max_tokens of each load-test request
    soak_dtype: str = "float32"  # dtype of the soak server (greedy answers are compared exactly)
    block_budget_cpu_s: int = 300  # training CPU seconds per variant of the block-attention comparison
    prefill_limit: int = 10  # longctx2 prompts (10: each of the five tasks at 1k and 2k tokens)
    prefill_keeps: str = "0.1,0.2,0.3"  # retentions rho
    prefill_selectors: str = PREFILL_SELECTORS  # chunk selectors, all in the same run
    prefill_layers: str = "3-7"  # the target-layers selectors' layers (scripts/calibrate_probe_layers.py recommends)
    prefill_tokens: int = 32  # new tokens per long-context prompt (the answers are short)
    demo_prompt: str = DEMO_PROMPT  # `make demo`'s prompt
    # the optional sections (off unless asked for: --optional or --only)
    ar_drafter: str = "runs/smollm2-ar/drafter"  # AR-drafter baseline of the async table (skipped when absent)
    async_limit: int = 40  # HumanEval prompts of the async table
    sweep_limit: int = 3  # HumanEval prompts of the budget sweep (7 runs per prompt)
    coverages: tuple[int, ...] = (2, 4, 8)  # budget sweep: rejection positions covered, C
    fanouts: tuple[int, ...] = (1, 2)  # budget sweep: alternatives per position, F
    prune_log: str = "runs/smollm2-long-prune-150/log.jsonl"  # `d3d prune` log of the pruning curve
