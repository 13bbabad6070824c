"""The `d3d serve` and `d3d loadtest` subcommands: flags in, typed functions called by keyword.

`loadtest`'s flags live beside the load test (`loadtest.add_loadtest_parser`), which also runs as
`python -m d3d.serving.loadtest`. Parsing only; importing this module costs nothing (torch,
FastAPI and uvicorn load when a command runs), so `d3d --help` stays fast.

    d3d serve --port 8000 --dtype bfloat16 --max-batch 8 --max-queue 64
    d3d loadtest --dtype bfloat16 --concurrency 1,2,4,8 --requests 16 --max-tokens 128
"""

from __future__ import annotations

import argparse

from d3d.serving.flags import add_drafter_weights_flag, add_model_flags, add_runtime_flags
from d3d.serving.loadtest import add_loadtest_parser


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    """Register `serve` and `loadtest`."""
    p = sub.add_parser("serve", help="OpenAI-compatible server: continuous batching + speculative decoding",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    p.add_argument("--port", type=int, default=8000, help="TCP port")
    add_model_flags(p)
    add_runtime_flags(p)
    add_drafter_weights_flag(p)
    p.add_argument("--max-batch", type=int, default=8, help="requests decoded together per round")
    p.add_argument("--max-queue", type=int, default=64, help="requests waiting beyond the batch; more get 429")
    p.add_argument("--served-model-name", default=None, help="the model id clients pass (default: the target's name)")
    p.add_argument("--draft-length", default="auto",
                   help="rows verified per round: auto (adaptive per request and batch size), all (every drafted "
                        "token), or k (anchor + k-1 drafted tokens; 1 = no speculation)")
    p.add_argument("--drain-seconds", type=float, default=30.0, help="on SIGTERM, how long running requests may finish")
    p.add_argument("--log-level", default="warning", help="uvicorn log level (info logs every request)")
    p.add_argument("--max-body-bytes", type=int, default=4 * 1024 * 1024, help="request bodies beyond this get a 413")
    p.add_argument("--max-prompt-chars", type=int, default=0,
                   help="prompt text beyond this many characters is a 400, before tokenizing (0: 16 per context token)")
    p.set_defaults(func=cmd_serve)

    add_loadtest_parser(sub)


def cmd_serve(args: argparse.Namespace) -> int:
    from d3d.serving.server import ServeConfig, run_server

    return run_server(ServeConfig(
        host=args.host, port=args.port, target=args.target, drafter=args.drafter, dtype=args.dtype,
        device=args.device, max_batch=args.max_batch, max_queue=args.max_queue,
        served_model_name=args.served_model_name, draft_length=args.draft_length, drain_s=args.drain_seconds,
        log_level=args.log_level, precision=args.precision, weights=args.weights,
        drafter_weights=args.drafter_weights, max_body_bytes=args.max_body_bytes,
        max_prompt_chars=args.max_prompt_chars,
    ))
