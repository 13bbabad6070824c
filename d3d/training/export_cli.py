"""The `d3d export`, `d3d average` and `d3d grow` subcommands (the work itself lives in `export.py`,
`average.py` and `grow.py`).

    d3d export --format vllm --drafter runs/causal/drafter --out exports/smollm2-d3d-causal
    d3d export --format d3d --storage int8 --drafter runs/x/drafter --out ship/drafter [--run-block-size 8]

`--format vllm` prints what it wrote and the `vllm serve` command that uses it (docs/serving.md,
"Serving with vLLM"); `--format d3d` prints the weights file's size and what became of the
acceptance table (docs/runtime.md, "Drafter files").

    d3d average --drafter runs/a/drafter --drafter runs/b/drafter --out runs/ab/drafter

writes the weight average of drafters of one architecture (docs/training-runs.md, "Weight averaging").

    d3d grow --drafter d3d/drafters/smollm2-135m-instruct --add 2,26 --out runs/grown/drafter

writes a deeper drafter that drafts exactly as the original until it is trained (docs/training.md,
"Growing the drafter").
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from d3d.training.export import DrafterExportReport

EXPORT_DESCRIPTION = (
    "Export a drafter. --format vllm: a causal-block drafter as a plain Hugging Face causal LM with the "
    "fields vLLM's parallel drafting reads (pard_token), the full-vocabulary LM head and the tokenizer files. "
    "--format d3d: any drafter as a d3d drafter directory again, its weights in --dtype and stored "
    "--storage dense or int8 (about half the bytes of bfloat16), e.g. to ship it."
)


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="export a drafter for vLLM's parallel drafting, or re-store it for shipping",
                       description=EXPORT_DESCRIPTION)
    p.add_argument("--format", default="vllm", choices=["vllm", "d3d"], help="export format")
    p.add_argument("--drafter", required=True,
                   help="drafter directory (for --format vllm: trained with --block-attention causal)")
    p.add_argument("--out", required=True, help="directory of the exported checkpoint (new or empty)")
    p.add_argument("--target", default=None, help="--format vllm only: target giving the shared embeddings and "
                   "the tokenizer (default: the drafter's base model)")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"],
                   help="dtype of the stored weights (with --storage int8: of the tensors stored dense)")
    p.add_argument("--storage", default="dense", choices=["dense", "int8"],
                   help="--format d3d only: store the layers' projections dense or as int8 with per-row scales")
    p.add_argument("--run-block-size", type=int, default=None, metavar="B",
                   help="--format d3d only: the block size inference runs when no --block-size is given, chosen by "
                   "measured speed (d3d bench --modes sync,sync@bB); 0: the trained one (default: the source's)")
    p.set_defaults(func=cmd_export)


def add_average_parser(sub) -> None:
    p = sub.add_parser("average", help="average the weights of drafters of one architecture (a model soup)",
                       description="Write the weighted average of two or more drafters that share an architecture "
                       "and drafting vocabulary (e.g. two runs continued from one drafter) as a dense drafter "
                       "directory; measure its acceptance table again with d3d eval-drafter --save.")
    p.add_argument("--drafter", action="append", required=True, help="drafter directory (repeat, two or more)")
    p.add_argument("--weights", default=None,
                   help="comma-separated non-negative weights, one per --drafter, normalized to sum 1 (default: equal)")
    p.add_argument("--out", required=True, help="directory of the averaged drafter (new or empty)")
    p.add_argument("--dtype", default="float32", choices=["bfloat16", "float16", "float32"],
                   help="dtype of the stored weights")
    p.set_defaults(func=cmd_average)


def add_grow_parser(sub) -> None:
    p = sub.add_parser("grow", help="add target layers to a drafter as identity layers (a deeper starting point)",
                       description="Write a deeper drafter: the target's layers --add inserted at their depth with "
                       "their output projections zeroed, so it drafts exactly as the original until trained "
                       "(use it as init: of a training recipe).")
    p.add_argument("--drafter", required=True, help="drafter directory to grow (int8-stored ones are dequantized)")
    p.add_argument("--add", required=True, help="comma-separated target layer ids to add, e.g. 2,26")
    p.add_argument("--out", required=True, help="directory of the grown drafter (new or empty)")
    p.add_argument("--target", default=None, help="target the layers come from (default: the drafter's base model)")
    p.add_argument("--dtype", default="float32", choices=["bfloat16", "float16", "float32"],
                   help="dtype of the stored weights")
    p.set_defaults(func=cmd_grow)


def cmd_grow(args: argparse.Namespace) -> int:
    from d3d.errors import D3DError
    from d3d.training.grow import grow_drafter

    try:
        add = [int(i) for i in args.add.split(",")]
    except ValueError:
        raise D3DError(f"--add must be comma-separated layer ids, got '{args.add}'") from None
    report = grow_drafter(args.drafter, add, args.out, args.target, args.dtype)
    print(f"wrote {report.out}: layers {report.layers_before} -> {report.layers} ({len(report.added)} added as "
          f"identity layers), model.safetensors {report.size / 1e6:.1f} MB; it drafts exactly as {args.drafter} "
          f"until trained (init: {report.out} in a recipe)")
    return 0


def cmd_average(args: argparse.Namespace) -> int:
    from d3d.errors import D3DError
    from d3d.training.average import average_drafters

    try:
        weights = None if args.weights is None else [float(w) for w in args.weights.split(",")]
    except ValueError:
        raise D3DError(f"--weights must be comma-separated numbers, got '{args.weights}'") from None
    report = average_drafters(args.drafter, args.out, weights, args.dtype)
    mix = ", ".join(f"{w:.3f} x {d}" for w, d in zip(report.weights, report.drafters))
    print(f"wrote {report.out}: {report.tensors} tensors averaged ({mix}), model.safetensors "
          f"{report.size / 1e6:.1f} MB; measure its acceptance with: d3d eval-drafter --drafter {report.out} "
          f"--data DATA --save")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from d3d.training.export import ExportConfig, export_d3d, export_vllm

    cfg = ExportConfig(drafter=args.drafter, out=args.out, target=args.target, dtype=args.dtype, format=args.format,
                       storage=args.storage, run_block_size=args.run_block_size)
    if args.format == "d3d":
        print_drafter_export(export_d3d(cfg))
        return 0
    report = export_vllm(cfg)
    vocab = f"{report.draft_vocab_size} drafting tokens, the other rows zero" if report.draft_vocab_size else "full"
    print(f"exported {report.layers} layers, LM head over {report.vocab_size} tokens ({vocab}), "
          f"pard_token {report.mask_token_id}: {report.out}")
    spec = {"method": "draft_model", "model": str(report.out), "parallel_drafting": True,
            "num_speculative_tokens": report.max_speculative_tokens}
    print(f"serve (num_speculative_tokens: at most {report.max_speculative_tokens}, the block it was trained on; "
          f"fewer where acceptance is short): vllm serve TARGET --speculative-config '{json.dumps(spec)}'")
    return 0


def print_drafter_export(report: DrafterExportReport) -> None:
    """The summary of a `--format d3d` export."""
    print(f"wrote {report.out}: model.safetensors {report.size / 1e6:.1f} MB ({report.storage} storage, "
          f"{report.dtype}; the source's {report.source_size / 1e6:.1f} MB)")
    if report.run_block_size:
        print(f"inference runs blocks of {report.run_block_size} unless --block-size says otherwise")
    remeasure = f"d3d eval-drafter --drafter {report.out} --data {(report.data or 'DATA').replace(',', ' ')} --save"
    if report.acceptance == "same weights":
        print("acceptance.json copied: the weights are the source's, value for value")
    elif report.acceptance == "none":
        print(f"the source has no acceptance.json; measure one with: {remeasure}")
    else:
        print(f"acceptance.json copied, but it was measured on the source's weights (marked so in the file); "
              f"re-measure with: {remeasure}")
