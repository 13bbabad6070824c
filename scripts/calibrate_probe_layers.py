"""Choose the target layers of the `target-layers` prefill selector by measurement, on calibration prompts.

The calibration prompts (`d3d/evaluation/longctx_facts.py`) are disjoint from the longctx and
longctx2 suites: other seeds, documents, names and filler. For each, the target reads the whole
prompt once and every candidate scorer (each layer, each head, each window of layers up to
--max-layer, each window fused with the lexical selector, lexical alone, the drafter's probe)
ranks the prompt's chunks (`d3d/evaluation/probe_calibration.py`). Prints, per candidate, the mean
rank of the evidence chunk and how often selection at rho 0.1 / 0.2 / 0.3 keeps it, then the
recommended `--prefill-layers`; writes everything as JSON to --out.

    .venv/bin/python scripts/calibrate_probe_layers.py --per-task 3 --out runs/calibration/probe_layers.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from d3d.evaluation.longctx_facts import calibration_prompts
from d3d.evaluation.probe_calibration import KEEPS, calibrate_prompt, recommend, summarize, window_cost
from d3d.inference.pipeline import Pipeline
from d3d.inference.prefill import DEFAULT_CHUNK_SIZE
from d3d.inference.prompt_layout import protected_tokens


def table(summary: dict[str, dict], num_layers: int, top_heads: int) -> str:
    heads = sorted((n for n in summary if n.startswith("head ")), key=lambda n: summary[n]["mean_rank_share"])[:top_heads]
    shown = [n for n in summary if not n.startswith("head ")] + heads
    lines = [f"{'candidate':<18} {'cost':>6} {'rank':>7} {'rank/c':>7}" + "".join(f" {'kept@' + format(k, 'g'):>8}" for k in KEEPS)]
    for name in shown:
        s, cost = summary[name], window_cost(name, num_layers)
        lines.append(f"{name:<18} {'-' if cost is None else format(cost, '.3f'):>6} {s['mean_rank']:>7.1f} "
                     f"{s['mean_rank_share']:>7.3f}" + "".join(f" {s['kept@' + format(k, 'g')]:>8.2f}" for k in KEEPS))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-task", type=int, default=3, help="calibration prompts per task and length (5 tasks, 3 lengths)")
    parser.add_argument("--lengths", default="1000,2000,4000", help="context lengths (approximate tokens)")
    parser.add_argument("--max-layer", type=int, default=15, help="windows of layers end at this layer at most")
    parser.add_argument("--max-cost", type=float, default=0.27, help="recommend a window costing at most this share of a prefill")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, help="tokens per chunk, as --prefill-chunk")
    parser.add_argument("--dtype", default="auto", help="the target's dtype, as the bench's --dtype")
    parser.add_argument("--no-probe", action="store_true", help="skip the drafter's probe")
    parser.add_argument("--top-heads", type=int, default=10, help="heads to print (best mean rank first)")
    parser.add_argument("--limit", type=int, default=None, help="first N calibration prompts only (a smoke run)")
    parser.add_argument("--out", default="runs/calibration/probe_layers.json", help="JSON report")
    args = parser.parse_args()

    lengths = tuple(int(x) for x in args.lengths.split(","))
    pipe = Pipeline.load(dtype=args.dtype)
    target, tokenizer = pipe.target.native("probe calibration"), pipe.target.tokenizer
    drafter = None if args.no_probe else pipe.drafter.drafter
    results, missed = [], []
    for prompt in calibration_prompts(args.per_task, lengths)[: args.limit]:
        ids = pipe.target.encode_chat(prompt.text)
        protected = protected_tokens(tokenizer, ids[0].cpu(), pipe.target.chat_frame)
        row = calibrate_prompt(target, drafter, tokenizer, ids, protected, prompt.evidence, prompt.id, args.chunk_size,
                               pipe.target.stopword_ids, args.max_layer)
        (results if row else missed).append(row or prompt.id)
        if row:
            print(f"{prompt.id}: {row.num_chunks} chunks, evidence rank: probe {row.rank.get('probe', '-')}, "
                  f"lexical {row.rank['lexical']}, layers 3-7 {row.rank.get('layers 3-7', '-')}", file=sys.stderr, flush=True)
    num_layers = len(target.layer_ids)
    summary = summarize(results)
    print(table(summary, num_layers, args.top_heads))
    choice = {"target-layers": recommend(summary, num_layers, args.max_cost),
              "target-layers+lexical": recommend(summary, num_layers, args.max_cost, fused=True)}
    print(f"\n{len(results)} prompts ({len(missed)} without a located evidence: {missed}); recommended windows "
          f"(kept@0.2 first, cost <= {args.max_cost}): {choice}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    report = {"prompts": len(results), "missed": missed, "recommended": choice, "max_cost": args.max_cost,
              "dtype": str(target.dtype), "summary": summary,
              "per_prompt": [{"id": r.prompt_id, "chunks": r.num_chunks, "rank": r.rank} for r in results]}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    with torch.inference_mode():
        main()
