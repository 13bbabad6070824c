"""`d3d eval-drafter`: a drafter's offline acceptance on greedy target data, and optionally the real check.

Offline acceptance (`d3d.inference.offline`) needs no target pass: the stored greedy responses are
the target's own continuations. `--compare-real` also decodes every row with synchronous
speculative decoding on the real target (budget = the stored response's length) and reports the
real tau beside the simulated one; they differ only where the target's greedy output in this
dtype leaves the stored response (rounding near ties). With several `--data` files the numbers are
pooled and each file's own tau and alpha are reported beside them (`by_data`), so one run gives a
calibration from every set and the per-set acceptance; `--group-by source` reports each row's `source`
field instead (`by_source`: the self-instruct chat rows of dev+dev2 apart from its code rows). `--save`
writes `<drafter>/acceptance.json`, the input of confidence-based verification lengths.

    d3d eval-drafter --data data/smollm2/dev.jsonl                 # the shipped drafter
    d3d eval-drafter --drafter runs/x/drafter --data dev.jsonl --limit 10 --compare-real --save
    d3d eval-drafter --data data/smollm2/dev.jsonl data/smollm2/dev2.jsonl --group-by source   # chat and code halves

It prints a readable table, then one JSON line. It knows nothing of training.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

from d3d.errors import D3DError

ACCEPTANCE_FILE = "acceptance.json"
DTYPES = ("bfloat16", "float32", "float64")  # torch dtype names accepted by --dtype
GROUPINGS = ("file", "source")  # --group-by: what `by_data` / `by_source` split the pooled numbers by
DRAFTER_WEIGHTS = ("auto", "dense", "int8", "packed")  # `pipeline.DRAFTER_WEIGHT_CHOICES`, spelled here to keep torch out


class AcceptanceRun(NamedTuple):
    """One offline acceptance measurement: the models, the rows read, the result and its JSON record."""

    target: Any  # the loaded target (`pipeline.load_target`)
    drafter: Any  # the loaded drafter
    rows: list[tuple[list[int], list[int]]]  # (prompt ids, stored response ids) per row
    result: Any  # `offline.OfflineResult`
    record: dict  # what the command prints as its JSON line (and `--save` writes)


def add_eval_drafter_parser(sub) -> None:
    p = sub.add_parser("eval-drafter", help="offline acceptance of a drafter on greedy target data (no target pass)")
    p.add_argument("--drafter", default=None, help="drafter directory (default: the one shipped for the target)")
    p.add_argument("--data", nargs="+", required=True, metavar="PATH", help="greedy `d3d data` rows (JSONL/Parquet)")
    p.add_argument("--target", default=None, help="target model (default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--limit", type=int, default=0, help="first N rows only (0 = all)")
    p.add_argument("--dtype", default="float32", choices=DTYPES, help="dtype of both models")
    p.add_argument("--drafter-weights", default="auto", choices=DRAFTER_WEIGHTS,
                   help="the drafter's runtime weights: auto = the target's; int8 = weight-only int8 layer projections "
                        "(the acceptance an int8 drafter gets: `--drafter-weights int8` of generate and bench)")
    p.add_argument("--compare-real", action="store_true", help="also decode every row for real and report real tau")
    p.add_argument("--group-by", default="file", choices=GROUPINGS,
                   help="per-group numbers beside the pooled ones: each --data file (when there are several) or "
                        "each row's `source` field")
    p.add_argument("--save", action="store_true", help=f"write <drafter dir>/{ACCEPTANCE_FILE}")
    p.set_defaults(func=cmd_eval_drafter)


def cmd_eval_drafter(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise D3DError(f"--limit must be >= 0, got {args.limit}")
    run = measure_acceptance(args.drafter, args.data, target=args.target, dtype=args.dtype,
                             weights=args.drafter_weights, group_by=args.group_by, limit=args.limit,
                             eval_only_ok=not args.save)
    record = run.record
    if args.compare_real:
        record |= real_tau(run.target, run.drafter, run.rows)
    print(format_report(run.result, record))
    if args.save:
        from d3d.inference.pipeline import shipped_drafter_dir

        path = save_acceptance(Path(args.drafter) if args.drafter else shipped_drafter_dir(run.target), record)
        print(f"saved {path}")
    print(json.dumps(record))
    return 0


def measure_acceptance(drafter_dir: str | None, data: list[str], *, target: str | None = None,
                       dtype: str = "float32", weights: str = "auto", group_by: str = "file", limit: int = 0,
                       eval_only_ok: bool = True) -> AcceptanceRun:
    """Offline acceptance of a drafter (None: the shipped one) on greedy rows, with its JSON record.

    `eval_only_ok` lets a benchmark's own prompts be read (never for a table that `--save` ships).
    """
    import torch

    from d3d.inference.offline import offline_acceptance
    from d3d.inference.pipeline import load_drafter, load_target
    from d3d.training.packing import load_examples

    loaded = load_target(target, dtype=getattr(torch, dtype))
    choice = load_drafter(loaded, drafter_dir, weights=weights, run_default=False)  # the whole trained block
    model = loaded.native("offline acceptance")
    rows, files, sources, summaries = [], [], [], []
    for path in data:  # one file at a time, so that each row keeps its file (several: a result per file too)
        examples, report = load_examples([path], model.spec.vocab_size, max_length=1 << 30, eval_only_ok=eval_only_ok)
        rows += [(e.prompt_ids.tolist(), e.response_ids.tolist()) for e in examples]
        files += [path] * len(examples)
        sources += [e.source or "(no source)" for e in examples]
        summaries.append(report.summary())
    rows, files, sources = (x[: limit or None] for x in (rows, files, sources))
    if not rows:
        raise D3DError(f"no usable rows in {', '.join(data)} ({'; '.join(summaries)})")
    started = time.perf_counter()
    groups = sources if group_by == "source" else files if len(data) > 1 else None
    result = offline_acceptance(choice.drafter, rows, groups)
    by_data = {"by_source" if group_by == "source" else "by_data": result.by_group} if result.by_group else {}
    record = {**result.as_dict(), **by_data, "data": ",".join(data), "dtype": dtype,
              "drafter": drafter_dir or "shipped", "drafter_weights": choice.weights,
              "offline_s": round(time.perf_counter() - started, 2)}
    return AcceptanceRun(loaded, choice.drafter, rows, result, record)


def real_tau(target, drafter, rows: list[tuple[list[int], list[int]]]) -> dict:
    """Greedy sync decoding of every row's prompt with a budget of its stored response's length."""
    import torch

    from d3d.inference.drafting import DrafterSource
    from d3d.inference.engine import DecodeStats, GenerationConfig, speculative_decode

    model, rounds, tokens, same = target.native("real tau"), 0, 0, 0
    for prompt_ids, response in rows:
        stats = DecodeStats("sync")
        cfg = GenerationConfig(max_new_tokens=len(response))
        prompt = torch.tensor([prompt_ids], device=model.device)
        out = [t for chunk in speculative_decode(model, DrafterSource(drafter, cfg.sampling), prompt, cfg,
                                                 target.stop_checker(cfg), stats) for t in chunk]
        rounds, tokens, same = rounds + stats.rounds, tokens + stats.round_tokens, same + (out == response)
    return {"tau_real": tokens / rounds if rounds else 0.0, "real_rounds": rounds, "rows_equal_stored": same}


def format_report(result, record: dict) -> str:
    """The readable table: an `OfflineResult` and the record around it."""
    lines = [f"drafter {record['drafter']}", f"rows {result.rows}, anchors {result.anchors}, dtype {record['dtype']}",
             f"tau (simulated sync)  {result.tau_sim:.3f}   over {result.rounds} rounds",
             f"mean accepted length  {result.mean_accepted:.3f}   over every anchor"]
    if "tau_real" in record:
        lines.append(f"tau (real sync)       {record['tau_real']:.3f}   difference "
                     f"{record['tau_real'] - result.tau_sim:+.3f}; {record['rows_equal_stored']} of {result.rows} "
                     "outputs equal the stored responses")
    lines.append("alpha_j  " + " ".join(f"{a:.2f}" for a in result.alpha))
    for path, own in result.by_group.items():
        lines.append(f"  {path}: tau {own['tau_sim']:.3f}, alpha_1 {own['alpha'][0]:.3f}, {own['rows']} rows")
    cal = result.calibration
    lines.append("top-token probability -> accepted (count)")
    for i, (ok, n) in enumerate(zip(cal["accept"], cal["count"])):
        lines.append(f"  [{cal['edges'][i]:.1f}, {cal['edges'][i + 1]:.1f})  {ok:.3f}  ({n})")
    return "\n".join(lines)


def save_acceptance(drafter_dir: Path | None, record: dict) -> Path:
    if drafter_dir is None:
        raise D3DError("--save needs a drafter directory (an untrained fallback drafter has none)")
    path = Path(drafter_dir) / ACCEPTANCE_FILE
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path
