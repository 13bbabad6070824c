"""The `d3d serve` and `d3d loadtest` subcommands: flags in, typed functions called by keyword.

Parsing only; importing this module costs nothing (torch, FastAPI and uvicorn load when a
command runs), so `d3d --help` stays fast.

    d3d serve --port 8000 --dtype bfloat16 --max-batch 8 --max-queue 64
    d3d loadtest --dtype bfloat16 --concurrency 1,2,4,8 --requests 16 --max-tokens 128
"""

from __future__ import annotations

import argparse

from d3d.errors import D3DError


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    """Register `serve` and `loadtest`."""
    p = sub.add_parser("serve", help="OpenAI-compatible server: continuous batching + speculative decoding",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    p.add_argument("--port", type=int, default=8000, help="TCP port")
    _model_flags(p)
    p.add_argument("--max-batch", type=int, default=8, help="requests decoded together per round")
    p.add_argument("--max-queue", type=int, default=64, help="requests waiting beyond the batch; more get 429")
    p.add_argument("--served-model-name", default=None, help="the model id clients pass (default: the target's name)")
    p.add_argument("--draft-length", default="auto",
                   help="rows verified per round: auto (adaptive per request and batch size), all (every drafted "
                        "token), or k (anchor + k-1 drafted tokens; 1 = no speculation)")
    p.add_argument("--drain-seconds", type=float, default=30.0, help="on SIGTERM, how long running requests may finish")
    p.add_argument("--log-level", default="warning", help="uvicorn log level (info logs every request)")
    p.set_defaults(func=cmd_serve)

    lt = sub.add_parser("loadtest", help="N concurrent streaming clients against d3d serve, speculation on and off",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    lt.add_argument("--url", default=None, help="a running server on loopback (default: start one with the model flags)")
    lt.add_argument("--concurrency", default="1,2,4,8", help="comma-separated client counts")
    lt.add_argument("--requests", type=int, default=16, help="requests per (concurrency, speculation) phase")
    lt.add_argument("--max-tokens", type=int, default=128, help="max_tokens of every request")
    lt.add_argument("--phase-seconds", type=float, default=300.0, help="time limit per phase (no new requests after it)")
    lt.add_argument("--suite", default="mixed", help="prompts: humaneval, mixed or a .jsonl file")
    lt.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    lt.add_argument("--out", default=None, help="also write the JSON result here")
    _model_flags(lt)
    lt.add_argument("--max-batch", type=int, default=8, help="the started server's --max-batch")
    lt.add_argument("--draft-length", default="auto", help="the started server's --draft-length")
    lt.set_defaults(func=cmd_loadtest)


def _model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=None, help="hub id, local directory or .gguf (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--drafter", default=None, help="drafter directory (default: the one shipped for the target)")
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"], help="target dtype")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)")


def cmd_serve(args: argparse.Namespace) -> int:
    from d3d.serving.server import ServeConfig, run_server

    return run_server(ServeConfig(
        host=args.host, port=args.port, target=args.target, drafter=args.drafter, dtype=args.dtype,
        device=args.device, max_batch=args.max_batch, max_queue=args.max_queue,
        served_model_name=args.served_model_name, draft_length=args.draft_length, drain_s=args.drain_seconds,
        log_level=args.log_level,
    ))


def cmd_loadtest(args: argparse.Namespace) -> int:
    from d3d.serving.loadtest import LoadTestConfig, run_loadtest

    try:
        levels = tuple(int(x) for x in args.concurrency.split(",") if x.strip())
    except ValueError:
        raise D3DError(f"--concurrency must be comma-separated integers, got '{args.concurrency}'") from None
    cfg = LoadTestConfig(
        url=args.url, concurrency=levels, requests=args.requests, max_tokens=args.max_tokens,
        phase_s=args.phase_seconds, suite=args.suite, temperature=args.temperature, out=args.out,
        target=args.target, drafter=args.drafter, dtype=args.dtype, device=args.device, max_batch=args.max_batch,
        draft_length=args.draft_length,
    )
    run_loadtest(cfg)
    return 0
