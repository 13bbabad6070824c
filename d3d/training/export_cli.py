"""The `d3d export` subcommand (the export itself lives in `export.py`).

    d3d export --format vllm --drafter runs/causal/drafter --out exports/smollm2-d3d-causal

It prints what it wrote and the `vllm serve` command that uses it (docs/serving.md, "Serving with vLLM").
"""

from __future__ import annotations

import argparse
import json

EXPORT_DESCRIPTION = (
    "Export a causal-block drafter as a plain Hugging Face causal LM with the fields vLLM's parallel "
    "drafting reads (pard_token), the full-vocabulary LM head and the tokenizer files."
)


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="export a causal-block drafter for vLLM's parallel drafting",
                       description=EXPORT_DESCRIPTION)
    p.add_argument("--format", default="vllm", choices=["vllm"], help="export format")
    p.add_argument("--drafter", required=True, help="drafter directory (trained with --block-attention causal)")
    p.add_argument("--out", required=True, help="directory of the exported checkpoint (new or empty)")
    p.add_argument("--target", default=None,
                   help="target giving the shared embeddings and the tokenizer (default: the drafter's base model)")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"],
                   help="dtype of the stored weights")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from d3d.training.export import ExportConfig, export_vllm

    report = export_vllm(ExportConfig(drafter=args.drafter, out=args.out, target=args.target, dtype=args.dtype,
                                      format=args.format))
    vocab = f"{report.draft_vocab_size} drafting tokens, the other rows zero" if report.draft_vocab_size else "full"
    print(f"exported {report.layers} layers, LM head over {report.vocab_size} tokens ({vocab}), "
          f"pard_token {report.mask_token_id}: {report.out}")
    spec = {"method": "draft_model", "model": str(report.out), "parallel_drafting": True,
            "num_speculative_tokens": report.max_speculative_tokens}
    print(f"serve (num_speculative_tokens: at most {report.max_speculative_tokens}, the block it was trained on; "
          f"fewer where acceptance is short): vllm serve TARGET --speculative-config '{json.dumps(spec)}'")
    return 0
