"""Measure asynchronous decoding under each split of this machine's cores between the target
and the drafting worker (docs/async.md, "Thread split"), interleaved with ar and sync.

    .venv/bin/python scripts/async_thread_split.py --tokens 32 --repeats 2 --budget 2,2
"""

from __future__ import annotations

import argparse
import json
import os

import torch

from d3d.inference.async_engine import AsyncConfig
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline

PROMPT = "Write a Python function that returns the n-th Fibonacci number, with a short docstring."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=32, help="new tokens per generation")
    parser.add_argument("--repeats", type=int, default=2, help="generations per setting (interleaved)")
    parser.add_argument("--budget", default="2,2", help="async budget C,F (fixed, so that only threads vary)")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    splits = sorted({(t, d) for t in range(1, cores + 1) for d in range(1, cores + 1) if t + d <= cores + 1})
    base = Pipeline.load(None)
    pipes = {f"async t{t}+d{d}": Pipeline(base.target, async_config=AsyncConfig(args.budget, "process", d, t))
             for t, d in splits}
    ids = base.target.encode_chat(PROMPT)
    cfg = GenerationConfig(max_new_tokens=args.tokens)
    runs = {"ar": (base, "ar"), "sync": (base, "sync")} | {name: (pipe, "async") for name, pipe in pipes.items()}
    for pipe, mode in runs.values():  # warm-up: worker start, first calls
        pipe.generate(ids, mode, GenerationConfig(max_new_tokens=4))
    totals = {name: [0.0, 0, [], []] for name in runs}
    for _ in range(args.repeats):
        for name, (pipe, mode) in runs.items():
            tokens, stats = pipe.generate(ids, mode, cfg)
            print(f"  {name}: {stats.new_tokens / stats.total_s:.2f} tokens/s", flush=True)
            totals[name][0] += stats.total_s
            totals[name][1] += stats.new_tokens
            if mode == "async":
                totals[name][2].append(stats.hidden_share)
                totals[name][3].append((stats.mean_successor_s, stats.mean_verify_s))
    result = {}
    for name, (seconds, tokens, hidden, times) in totals.items():
        row = {"tokens_per_s": round(tokens / seconds, 2)}
        if hidden:
            row |= {"hidden_share": round(sum(hidden) / len(hidden), 2),
                    "t_d_ms": round(1e3 * sum(t[0] for t in times) / len(times), 1),
                    "t_v_ms": round(1e3 * sum(t[1] for t in times) / len(times), 1)}
        result[name] = row
        print(f"{name:<14} {row}")
    for pipe in pipes.values():
        pipe.close()
    print(json.dumps({"cores": cores, "torch_threads_default": torch.get_num_threads(), "budget": args.budget,
                      "tokens": args.tokens, "repeats": args.repeats, "results": result}))


if __name__ == "__main__":
    main()
