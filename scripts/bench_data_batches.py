"""Batched generation with and without dropping finished rows, interleaved on the same batches.

`generate_batch` drops a batch's finished rows once they are 1/8 of it (its `shrink_fraction`); 0
keeps every row to the end (the behaviour before). Both settings answer the same batches of the
same prompts in turn (greedy, so the outputs must be identical up to bfloat16 near ties); prints a
table, then one JSON line.

    .venv/bin/python scripts/bench_data_batches.py --prompts data/task_prompts.jsonl --batches 3
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from d3d.inference.pipeline import load_target
from d3d.inference.sampling import SamplingConfig
from d3d.training.generation import generate_batch, pad_token_id
from d3d.training.prompts import read_prompt_jsonl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", default="data/task_prompts.jsonl")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=192)
    ap.add_argument("--dtype", default="bfloat16")
    args = ap.parse_args()
    target = load_target(None, "cpu", args.dtype)
    model = target.native("data generation")
    records = read_prompt_jsonl(args.prompts).records[: args.batches * args.batch_size]
    prompts = [target.encode_chat(r.text)[0].tolist() for r in records]
    stops, pad = frozenset(target.eos_token_ids), pad_token_id(target.tokenizer)
    settings = {"keep every row (before)": 0, "drop finished rows (1/8)": 8}
    seconds = {name: 0.0 for name in settings}
    tokens = {name: 0 for name in settings}
    outputs: dict[str, list[list[int]]] = {name: [] for name in settings}
    for b in range(args.batches):
        batch = prompts[b * args.batch_size : (b + 1) * args.batch_size]
        order = list(settings) if b % 2 == 0 else list(reversed(settings))
        for name in order:
            t0 = time.perf_counter()
            outs = generate_batch(model, batch, args.max_new_tokens, SamplingConfig(), stops, pad_id=pad,
                                  shrink_fraction=settings[name])
            seconds[name] += time.perf_counter() - t0
            tokens[name] += sum(len(o.tokens) for o in outs)
            outputs[name] += [o.tokens for o in outs]
        print(f"batch {b + 1}/{args.batches} done", flush=True)
    names = list(settings)
    same = sum(a == c for a, c in zip(outputs[names[0]], outputs[names[1]]))
    base = tokens[names[0]] / seconds[names[0]]
    print(f"| setting | rows | response tokens | s | tokens/s | vs before |\n|---|---|---|---|---|---|")
    for name in names:
        tps = tokens[name] / seconds[name]
        print(f"| {name} | {len(outputs[name])} | {tokens[name]} | {seconds[name]:.1f} | {tps:.1f} | {tps / base:.2f}x |")
    print(f"identical responses: {same} of {len(prompts)}")
    print(json.dumps({"batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens, "dtype": args.dtype,
                      "threads": torch.get_num_threads(), "identical": same, "rows": len(prompts),
                      **{f"tokens_per_s[{n}]": round(tokens[n] / seconds[n], 1) for n in names}}))


if __name__ == "__main__":
    main()
