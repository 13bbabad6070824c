"""`d3d loadtest` (or `python -m d3d.serving.loadtest`): concurrent streaming clients against `d3d serve`.

For each concurrency N (default 1, 2, 4, 8) it runs two phases against the same server process,
speculation on and off (the request field `d3d_speculative`), alternating which goes first from
one N to the next. A phase runs N clients that send streaming chat requests back to back
(prompts from a suite, in order) until `requests` were sent or `phase_s` passed; requests in
flight then finish. Loopback only: it starts its own server (`d3d serve` with the model flags, on
a free port) unless given the URL of one on 127.0.0.1 / localhost.

Per phase: throughput (completion tokens / phase wall time), time to first token (request sent
-> first streamed token) p50/p99, inter-token latency p50/p99 (each gap between streamed chunks,
split evenly over the tokens the later chunk carried, so a k-token speculative chunk counts as k
gaps of gap/k), tau (tokens appended per verification round, from the server), and errors
(HTTP errors, error events, streams that end without [DONE] or short of a finish reason).
It prints a table, then one JSON line keyed by concurrency.

Its flags are defined here (`add_loadtest_parser`), so `python -m d3d.serving.loadtest` needs
nothing from the command line module (`d3d.cli` registers the same parser as `d3d loadtest`).
This module knows nothing about models; it speaks HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from d3d.errors import D3DError
from d3d.serving.flags import add_model_flags

LOOPBACK = ("127.0.0.1", "localhost", "::1")
SERVER_START_S = 600.0  # how long a started server may take to load its models


@dataclass
class LoadTestConfig:
    """One load test."""

    url: str | None = None  # a running server on loopback; None: start one
    concurrency: tuple[int, ...] = (1, 2, 4, 8)  # client counts, one pair of phases each
    requests: int = 16  # requests per phase
    max_tokens: int = 128  # max_tokens of every request
    phase_s: float = 300.0  # no new requests after this many seconds of a phase
    suite: str = "mixed"  # prompts: humaneval, mixed or a .jsonl file
    temperature: float = 0.0  # sampling temperature (0 = greedy)
    out: str | None = None  # also write the JSON result here
    target: str | None = None  # started server: --target
    drafter: str | None = None  # started server: --drafter
    dtype: str = "auto"  # started server: --dtype
    device: str | None = None  # started server: --device
    max_batch: int = 8  # started server: --max-batch
    draft_length: str = "auto"  # started server: --draft-length

    def validate(self) -> None:
        if not self.concurrency or min(self.concurrency) < 1:
            raise D3DError("--concurrency needs positive client counts")
        if self.requests < 1 or self.max_tokens < 1 or self.phase_s <= 0:
            raise D3DError("--requests, --max-tokens and --phase-seconds must be positive")
        if self.url is not None and urlparse(self.url).hostname not in LOOPBACK:
            raise D3DError(f"the load test only talks to loopback servers, not {self.url}")


@dataclass
class RequestRecord:
    """What one request measured."""

    ok: bool = False  # finished with a finish reason and [DONE]
    error: str = ""  # why not
    ttft_s: float = 0.0  # request sent -> first token
    gaps: list[float] = field(default_factory=list)  # per-token inter-token latencies
    tokens: int = 0  # completion tokens (usage)
    rounds: int = 0  # verification rounds (server)
    tau: float = 0.0  # tokens per round (server)


@dataclass
class PhaseResult:
    """One (concurrency, speculation) phase."""

    concurrency: int
    speculative: bool
    requests: int  # sent
    errors: int  # requests that did not finish cleanly
    wall_s: float  # phase wall time
    tokens: int  # completion tokens of clean requests
    tokens_per_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    itl_p50_s: float
    itl_p99_s: float
    tau: float  # round tokens / rounds over clean requests


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


# ---------------------------------------------------------------------------------------------
# One request


def request_body(model: str, prompt: str, cfg: LoadTestConfig, speculative: bool) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": cfg.max_tokens,
            "temperature": cfg.temperature, "stream": True, "stream_options": {"include_usage": True},
            "d3d_speculative": speculative, "d3d_stats": True}


def absorb_chunk(record: RequestRecord, chunk: dict, sent: float, last: list[float]) -> bool:
    """Fold one streamed JSON chunk into the record; True once a finish reason was seen."""
    if "error" in chunk:
        record.error = chunk["error"].get("message", "error event")
        return False
    now = time.perf_counter()
    n = chunk.get("d3d", {}).get("tokens", 0)
    if n and chunk.get("choices"):
        if not last:
            record.ttft_s = now - sent
            n -= 1  # the first token has no gap
        else:
            record.gaps.extend([(now - last[0]) / n] * n if n else [])
        last[:] = [now]
    if chunk.get("usage"):
        record.tokens = chunk["usage"]["completion_tokens"]
        record.rounds = chunk.get("d3d", {}).get("rounds", 0)
        record.tau = chunk.get("d3d", {}).get("tau", 0.0)
    return any(c.get("finish_reason") for c in chunk.get("choices", []))


async def one_request(client, url: str, body: dict) -> RequestRecord:
    record, last, finished, done = RequestRecord(), [], False, False
    sent = time.perf_counter()
    try:
        async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
            if response.status_code != 200:
                record.error = f"HTTP {response.status_code}: {(await response.aread())[:200]!r}"
                return record
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    done = True
                    break
                finished = absorb_chunk(record, json.loads(data), sent, last) or finished
    except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the test
        record.error = f"{type(exc).__name__}: {exc}"
        return record
    record.ok = done and finished and not record.error
    if not record.ok and not record.error:
        record.error = "the stream ended early"
    return record


# ---------------------------------------------------------------------------------------------
# Phases


async def run_phase(url: str, model: str, prompts: list[str], cfg: LoadTestConfig, n: int, speculative: bool) -> PhaseResult:
    import httpx

    records: list[RequestRecord] = []
    counter = iter(range(cfg.requests))
    start = time.perf_counter()

    async def client_loop(client) -> None:
        for i in counter:
            if time.perf_counter() - start > cfg.phase_s:
                return
            body = request_body(model, prompts[i % len(prompts)], cfg, speculative)
            records.append(await one_request(client, url, body))

    limits = httpx.Limits(max_connections=n + 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0), limits=limits) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(n)))
    wall = time.perf_counter() - start
    return summarize(records, n, speculative, wall)


def summarize(records: list[RequestRecord], n: int, speculative: bool, wall: float) -> PhaseResult:
    good = [r for r in records if r.ok]
    tokens = sum(r.tokens for r in good)
    ttft = [r.ttft_s for r in good]
    gaps = [g for r in good for g in r.gaps]
    rounds = sum(r.rounds for r in good)
    round_tokens = sum(r.tau * r.rounds for r in good)
    return PhaseResult(
        concurrency=n, speculative=speculative, requests=len(records), errors=len(records) - len(good),
        wall_s=round(wall, 3), tokens=tokens, tokens_per_s=round(tokens / wall, 3) if wall else 0.0,
        ttft_p50_s=round(percentile(ttft, 50), 4), ttft_p99_s=round(percentile(ttft, 99), 4),
        itl_p50_s=round(percentile(gaps, 50), 5), itl_p99_s=round(percentile(gaps, 99), 5),
        tau=round(round_tokens / rounds, 3) if rounds else 0.0,
    )


async def run_all(url: str, cfg: LoadTestConfig, prompts: list[str], log) -> list[PhaseResult]:
    import httpx

    async with httpx.AsyncClient(timeout=30) as client:
        model = (await client.get(f"{url}/v1/models")).json()["data"][0]["id"]
        warm = request_body(model, prompts[0], cfg, True) | {"max_tokens": 8}
        await one_request(client, url, warm)  # first-request costs stay out of the table
    results = []
    for i, n in enumerate(cfg.concurrency):
        for speculative in ((True, False) if i % 2 == 0 else (False, True)):
            result = await run_phase(url, model, prompts, cfg, n, speculative)
            log(f"[loadtest] N={n} speculation {'on' if speculative else 'off'}: {result.tokens_per_s:.1f} tokens/s, "
                f"{result.errors} errors")
            results.append(result)
    return results


# ---------------------------------------------------------------------------------------------
# Report


def report(results: list[PhaseResult]) -> dict:
    """Print the table, then return the JSON summary keyed by concurrency."""
    head = f"{'N':>3} {'spec':>4} {'req':>4} {'err':>4} {'tok/s':>8} {'TTFT p50':>9} {'TTFT p99':>9} {'ITL p50':>9} {'ITL p99':>9} {'tau':>5}"
    print(head)
    print("-" * len(head))
    summary: dict[str, dict] = {}
    for r in results:
        print(f"{r.concurrency:>3} {'on' if r.speculative else 'off':>4} {r.requests:>4} {r.errors:>4} {r.tokens_per_s:>8.1f} "
              f"{r.ttft_p50_s * 1e3:>7.0f}ms {r.ttft_p99_s * 1e3:>7.0f}ms {r.itl_p50_s * 1e3:>7.1f}ms "
              f"{r.itl_p99_s * 1e3:>7.1f}ms {r.tau:>5.2f}")
        entry = summary.setdefault(str(r.concurrency), {})
        entry["on" if r.speculative else "off"] = {k: v for k, v in asdict(r).items() if k not in ("concurrency", "speculative")}
    for entry in summary.values():
        if "on" in entry and "off" in entry and entry["off"]["tokens_per_s"]:
            entry["speedup"] = round(entry["on"]["tokens_per_s"] / entry["off"]["tokens_per_s"], 3)
    return summary


# ---------------------------------------------------------------------------------------------
# A server of its own


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(cfg: LoadTestConfig, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "d3d.cli", "serve", "--port", str(port), "--dtype", cfg.dtype,
           "--max-batch", str(cfg.max_batch), "--max-queue", str(max(64, max(cfg.concurrency))),
           "--draft-length", cfg.draft_length]
    for flag, value in (("--target", cfg.target), ("--drafter", cfg.drafter), ("--device", cfg.device)):
        if value:
            cmd += [flag, value]
    return subprocess.Popen(cmd)


def wait_healthy(url: str, proc: subprocess.Popen | None, timeout: float = SERVER_START_S) -> None:
    import httpx

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if proc is not None and proc.poll() is not None:
            raise D3DError(f"the server exited with status {proc.returncode} before it was ready")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise D3DError(f"no healthy server at {url} after {timeout:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def run_loadtest(cfg: LoadTestConfig) -> dict:
    """Run every phase; print the table and the JSON line; return the summary."""
    from d3d.evaluation.suites import load_suite

    cfg.validate()
    prompts = [p.text for p in load_suite(cfg.suite)]
    proc, url = None, cfg.url.rstrip("/") if cfg.url else None
    if url is None:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(cfg, port)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    try:
        wait_healthy(url, proc)
        results = asyncio.run(run_all(url, cfg, prompts, log))
    finally:
        if proc is not None:
            stop_server(proc)
    summary = report(results)
    line = json.dumps(summary)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(line + "\n")
    print(line)
    return summary


# ---------------------------------------------------------------------------------------------
# Flags


def add_loadtest_parser(sub: argparse._SubParsersAction) -> None:
    """Register `loadtest` (for `d3d loadtest` and `python -m d3d.serving.loadtest`)."""
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
    add_model_flags(lt)
    lt.add_argument("--max-batch", type=int, default=8, help="the started server's --max-batch")
    lt.add_argument("--draft-length", default="auto", help="the started server's --draft-length")
    lt.set_defaults(func=cmd_loadtest)


def cmd_loadtest(args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    """`python -m d3d.serving.loadtest ...` is `d3d loadtest ...` (bad input: one line, exit status 2)."""
    parser = argparse.ArgumentParser(prog="python -m d3d.serving")
    add_loadtest_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["loadtest", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except D3DError as err:
        print(f"d3d loadtest: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
