"""Compare drafters (or drafting vocabularies of one drafter) on dev prompts of the embedded target.

For each drafter: greedy tau (`measure_tau`) and the sync speedup over plain decoding, the two
decoded back to back on every prompt with alternating order (`prune.measure_speedup`). Each
speedup is a ratio measured within its own interleaved run; compare them, not the tokens/s.

    python scripts/compare_drafters.py runs/smollm2-prune/drafter runs/smollm2-vocab8192 --prompts 6
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from d3d.inference.pipeline import load_target
from d3d.models.drafter import Drafter
from d3d.training.prune import measure_speedup
from d3d.training.resolve import target_eos_ids
from d3d.training.validation import measure_tau


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drafters", nargs="+", help="drafter directories")
    parser.add_argument("--dev", default="data/smollm2/dev2.jsonl", help="d3d data rows whose prompts are decoded")
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args()
    target = load_target(None, "cpu")
    eos = target_eos_ids(target.model_dir)
    rows = [json.loads(line) for line in open(args.dev) if line.strip()][: args.prompts]
    prompts = [np.array(r["prompt_ids"]) for r in rows]
    for path in args.drafters:
        drafter = Drafter.from_pretrained(path, target=target.model)
        tau = measure_tau(target.model, drafter, prompts, args.max_new_tokens, eos)["tau"]
        speed = measure_speedup(target.model, drafter, prompts, args.max_new_tokens, eos)
        print(f"{path:45s} layers {len(drafter.config.layers)} vocab {drafter.config.draft_vocab_size or 'full':>6} "
              f"tau {tau:.3f} speedup {speed['speedup']:.3f}", flush=True)


if __name__ == "__main__":
    main()
