"""The `d3d data` subcommand: flags in, `d3d.training.data.generate_dataset` called by keyword.

Parsing only; importing this module costs nothing (torch and transformers load when the command
runs), so `d3d --help` stays fast. The defaults here match `DataConfig`'s (a test checks).

    d3d data --out data/train.jsonl --prompts mine.jsonl --self-instruct 200 --max-new-tokens 256
    d3d data --rescore data/train.jsonl --out data/train_top8.jsonl --top-k-logits 8   # top-k for old rows
    d3d bench --suite humaneval --write-prompts runs/he_prompts.jsonl                    # eval-only rows:
    d3d data --eval-only --prompts runs/he_prompts.jsonl --out runs/eval_he.jsonl --greedy --max-new-tokens 128
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from d3d.errors import D3DError


def add_data_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="generate training data: prompts in, the target's own responses out",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", required=True, help="output file, .jsonl or .parquet (resumed if it exists)")
    p.add_argument("--prompts", action="append", default=[], metavar="PATH.jsonl",
                   help="JSONL prompt file, a 'prompt' string (and optional 'id') per line (repeatable)")
    p.add_argument("--dataset", default=None, metavar="NAME_OR_PATH",
                   help="Hugging Face dataset: hub name, local .json/.jsonl/.csv/.parquet file or saved dataset folder")
    p.add_argument("--split", default="train", help="dataset split")
    p.add_argument("--column", default="prompt", help="dataset column holding the prompt (text or chat messages)")
    p.add_argument("--self-instruct", type=int, default=0, metavar="N",
                   help="N user turns written by the target itself from its chat template (Magpie); 0 = off")
    p.add_argument("--endpoint", default=None, metavar="URL",
                   help="OpenAI-compatible server (vLLM, SGLang) that answers instead of the local target")
    p.add_argument("--endpoint-model", default=None, metavar="NAME",
                   help="model name on the endpoint (default: the only model it serves)")
    p.add_argument("--target", default=None,
                   help="hub id, local directory or .gguf (default: embedded SmolLM2-135M-Instruct); "
                        "with --endpoint, its tokenizer must match the served model")
    p.add_argument("--max-new-tokens", type=int, default=256, help="response budget per prompt")
    p.add_argument("--batch-size", type=int, default=8,
                   help="prompts answered together (concurrent requests with --endpoint)")
    p.add_argument("--greedy", action="store_true", help="greedy responses instead of the target's recommended sampling")
    p.add_argument("--temperature", type=float, default=None, help="override the recommended temperature")
    p.add_argument("--top-p", type=float, default=None, help="override the recommended top_p")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (each row is seeded from it and its id)")
    p.add_argument("--limit", type=int, default=None, help="first N usable prompts only")
    p.add_argument("--exclude", action="append", default=[], metavar="PATH.jsonl",
                   help="held-out prompts to keep out of the data, on top of HumanEval (repeatable)")
    p.add_argument("--skip-answered", action="append", default=[], metavar="PATH",
                   help="another d3d data output: its prompt ids are not answered again, e.g. to continue a "
                        "prompt file in another dtype (repeatable)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    p.add_argument("--dtype", default=None, choices=["auto", "bfloat16", "float16", "float32"],
                   help="target weights' dtype (default: float32 on a CPU, bfloat16 on CUDA; auto: bfloat16 where fast)")
    p.add_argument("--top-k-logits", type=int, default=0, metavar="K",
                   help="also record the target's K likeliest tokens and log-probabilities per response position "
                        "(for distillation); 0 = off")
    p.add_argument("--eval-only", action="store_true",
                   help="answer held-out evaluation prompts themselves (e.g. from d3d bench --write-prompts) for "
                        "d3d eval-drafter: nothing is held out, every row is marked eval_only, training refuses the file")
    p.add_argument("--rescore", default=None, metavar="PATH",
                   help="instead of generating: add the target's top-K (--top-k-logits K) to the rows of this "
                        "d3d data output (written without it) by one teacher-forced pass per row, into --out")
    p.set_defaults(func=cmd_data)


def cmd_rescore(args: argparse.Namespace) -> int:
    from d3d.training.rescore import RescoreConfig, format_report, rescore

    given = [flag for flag, value in (("--prompts", args.prompts), ("--dataset", args.dataset),
                                      ("--self-instruct", args.self_instruct), ("--endpoint", args.endpoint),
                                      ("--eval-only", args.eval_only)) if value]
    if given:
        raise D3DError(f"--rescore reads its rows from a file: it cannot be combined with {', '.join(given)}")
    cfg = RescoreConfig(source=Path(args.rescore), out=Path(args.out), top_k=args.top_k_logits, target=args.target,
                        device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    report = rescore(cfg)
    print(format_report(report))
    print(json.dumps(report.as_dict()))
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    if args.rescore is not None:
        return cmd_rescore(args)
    from d3d.training.data import DataConfig, format_report, generate_dataset

    cfg = DataConfig(
        out=Path(args.out), prompts=tuple(Path(p) for p in args.prompts), dataset=args.dataset,
        split=args.split, column=args.column, self_instruct=args.self_instruct, endpoint=args.endpoint,
        endpoint_model=args.endpoint_model, target=args.target, max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size, greedy=args.greedy, temperature=args.temperature, top_p=args.top_p,
        seed=args.seed, limit=args.limit, exclude=tuple(Path(p) for p in args.exclude), device=args.device,
        skip_answered=tuple(Path(p) for p in args.skip_answered),
        dtype=args.dtype, top_k_logits=args.top_k_logits, eval_only=args.eval_only,
    )
    report = generate_dataset(cfg)
    print(format_report(report))
    print(json.dumps(report.as_dict()))
    return 0 if report.overlaps == 0 else 1
