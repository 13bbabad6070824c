"""Fault and soak test of `d3d serve` (`python -m d3d.serving.soak`): many clients, faults mixed
in, one SIGTERM under load; it prints a table and one JSON line, and exits 1 if a check fails.

It starts its own server on a free loopback port (the model flags as for `d3d serve`; a tiny
random model in the test suite) and runs, bounded in count and time:

    reference  each greedy prompt once, alone, with plain decoding (`d3d_speculative: false`);
               this is also the warm-up, after which the server's RSS is read
    soak       `requests` requests from `clients` concurrent clients: streaming and not, greedy
               and sampled (seeded), speculation on; `disconnect_share` of the clients leave every
               answer midway (a stream closed after two chunks, or a read timeout); every tenth
               request is a bad body (malformed JSON, over --max-body-bytes, a refused field).
               Then the server's RSS is read again.
    drain      every client sends one more long request; once they are under way the server
               gets SIGTERM; each must end in full or with a clean error (503 or an error event
               and [DONE]), and the server must exit with status 0.

Checks: no request hangs (each has a deadline); every request ends as expected for its kind
(an answer, a 4xx for a bad body, a clean failure during the drain); greedy answers equal the
reference; RSS after the soak within `rss_tolerance` of RSS after warm-up; exit status 0.

This module knows nothing about models; it speaks HTTP and reads /proc (Linux) for the RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from d3d.errors import D3DError
from d3d.serving.flags import add_model_flags
from d3d.serving.loadtest import free_port, wait_healthy

BAD_KINDS = ("malformed", "oversized", "refused")  # bad bodies, in turn
CLEAN = ("ok", "disconnected", "answered_before_leaving", "bad_body_4xx", "shutdown_503", "shutdown_event",
         "refused_connection", "rejected_429")  # results that are not faults


@dataclass
class SoakConfig:
    """One soak run."""

    requests: int = 200  # soak requests (the drain phase adds one per client)
    clients: int = 16  # concurrent clients
    disconnect_share: float = 0.2  # share of clients that leave every answer midway
    max_tokens: int = 32  # max_tokens of a soak request
    drain_tokens: int = 128  # max_tokens of a drain-phase request
    suite: str = "mixed"  # prompts: humaneval, mixed or a .jsonl file
    prompts: int = 8  # distinct prompts used
    deadline_s: float = 300.0  # a request still open after this is hung
    rss_tolerance: float = 0.10  # allowed RSS growth from warm-up to the end of the soak
    max_body_bytes: int = 65536  # the server's --max-body-bytes (small, so oversized bodies are cheap)
    drain_s: float = 60.0  # the server's --drain-seconds
    max_batch: int = 8  # the server's --max-batch
    target: str | None = None  # the server's --target
    drafter: str | None = None  # the server's --drafter
    dtype: str = "auto"  # the server's --dtype
    device: str | None = None  # the server's --device
    log: str | None = None  # the server's output goes here (default: inherited)

    def validate(self) -> None:
        if self.requests < 1 or self.clients < 1 or self.max_tokens < 1 or self.prompts < 1:
            raise D3DError("--requests, --clients, --max-tokens and --prompts must be positive")
        if not 0 <= self.disconnect_share < 1:
            raise D3DError(f"--disconnect-share must be in [0, 1), got {self.disconnect_share}")


@dataclass
class Outcome:
    """How one request ended."""

    kind: str  # what was sent: greedy / sampled / disconnect / malformed / oversized / refused / drain
    result: str  # one of CLEAN, or what went wrong
    text: str = ""  # the answer (greedy checks)
    prompt: int = 0  # index of its prompt


@dataclass
class SoakReport:
    """The figures of one run."""

    outcomes: list[Outcome] = field(default_factory=list)
    mismatches: int = 0  # greedy answers unlike the reference
    rss_warm_mb: float = 0.0
    rss_after_mb: float = 0.0
    exit_status: int | None = None

    @property
    def results(self) -> Counter:
        return Counter(o.result for o in self.outcomes)

    @property
    def hung(self) -> int:
        return self.results["hung"]

    @property
    def unclean(self) -> int:
        return sum(n for r, n in self.results.items() if r not in CLEAN)

    @property
    def rss_growth(self) -> float:
        return self.rss_after_mb / self.rss_warm_mb - 1 if self.rss_warm_mb else 0.0

    def passed(self, tolerance: float) -> bool:
        return self.unclean == 0 and self.mismatches == 0 and self.rss_growth <= tolerance and self.exit_status == 0

    def as_dict(self) -> dict:
        return {"requests": len(self.outcomes), "results": dict(sorted(self.results.items())),
                "by_kind": dict(sorted(Counter(o.kind for o in self.outcomes).items())), "hung": self.hung,
                "unclean": self.unclean, "greedy_mismatches": self.mismatches, "rss_warm_mb": round(self.rss_warm_mb, 1),
                "rss_after_mb": round(self.rss_after_mb, 1), "rss_growth": round(self.rss_growth, 4),
                "drain_exit_status": self.exit_status}


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise D3DError(f"no VmRSS for process {pid}")


# ---------------------------------------------------------------------------------------------
# Requests


def chat_body(prompt: str, max_tokens: int, stream: bool, greedy: bool, seed: int, speculative: bool = True) -> dict:
    return {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "stream": stream,
            "temperature": 0 if greedy else 0.8, "seed": seed, "d3d_speculative": speculative}


async def post_json(client, url: str, body: dict) -> tuple[str, str]:
    """(result, text) of a non-streaming request."""
    r = await client.post(f"{url}/v1/chat/completions", json=body)
    if r.status_code == 200:
        choice = r.json()["choices"][0]
        return ("ok" if choice["finish_reason"] else "no_finish_reason"), choice["message"]["content"]
    return status_result(r.status_code), ""


def status_result(status: int) -> str:
    return {429: "rejected_429", 503: "shutdown_503"}.get(status, f"http_{status}")


async def post_stream(client, url: str, body: dict, leave_after: int | None = None) -> tuple[str, str]:
    """(result, text) of a streaming request; `leave_after` chunks, then the client goes away."""
    parts, finished, chunks = [], False, 0
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            return status_result(r.status_code), ""
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                return ("ok" if finished else "no_finish_reason"), "".join(parts)
            event = json.loads(line[6:])
            if "error" in event:
                return ("shutdown_event" if event["error"]["code"] == 503 else f"error_event_{event['error']['code']}"), ""
            for choice in event.get("choices", []):
                parts.append(choice["delta"].get("content") or "")
                finished = finished or bool(choice["finish_reason"])
            chunks += 1
            if leave_after is not None and chunks >= leave_after:
                return "disconnected", ""
    return "stream_cut", ""


async def send_bad(client, url: str, kind: str, max_body: int) -> str:
    if kind == "malformed":
        content = b'{"messages": [{"role": "user", "content": "unterminated'
    elif kind == "oversized":
        content = json.dumps({"messages": [{"role": "user", "content": "x" * (max_body + 1)}]}).encode()
    else:
        content = json.dumps({"messages": [{"role": "user", "content": "hi"}], "logit_bias": {"5": 3}}).encode()
    r = await client.post(f"{url}/v1/chat/completions", content=content, headers={"content-type": "application/json"})
    return "bad_body_4xx" if r.status_code in (400, 413) else status_result(r.status_code)


async def one(client, url: str, kind: str, prompts: list[str], i: int, cfg: SoakConfig) -> Outcome:
    """Request number i of the given kind, bounded by the deadline; never raises."""
    p = i % len(prompts)
    stream, greedy = i % 2 == 0, (i // 2) % 2 == 0

    async def run() -> tuple[str, str]:
        if kind in BAD_KINDS:
            return await send_bad(client, url, kind, cfg.max_body_bytes), ""
        if kind == "disconnect":  # a long answer (no end-of-sequence stop), left midway
            body = chat_body(prompts[p], 4 * cfg.drain_tokens, True, greedy, i) | {"ignore_eos": True}
            return await (post_stream(client, url, body, leave_after=2) if stream else leave_midway(client, url, body))
        if kind == "drain":
            return await post_stream(client, url, chat_body(prompts[p], cfg.drain_tokens, True, True, i))
        body = chat_body(prompts[p], cfg.max_tokens, stream, kind == "greedy", i)
        return await (post_stream(client, url, body) if stream else post_json(client, url, body))

    try:
        result, text = await asyncio.wait_for(run(), cfg.deadline_s)
    except asyncio.TimeoutError:
        result, text = "hung", ""
    except Exception as exc:  # noqa: BLE001 - every failure is classified, none stops the soak
        result, text = connection_result(exc), ""
    return Outcome(kind, result, text, p)


async def leave_midway(client, url: str, body: dict) -> tuple[str, str]:
    """A non-streaming request whose client gives up while the answer is being generated."""
    import httpx

    try:
        await client.post(f"{url}/v1/chat/completions", json=body | {"stream": False},
                          timeout=httpx.Timeout(10.0, read=0.3))
    except httpx.ReadTimeout:
        return "disconnected", ""
    return "answered_before_leaving", ""


def connection_result(exc: Exception) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectError):
        return "refused_connection"  # the server had closed its socket (drain)
    return f"exception_{type(exc).__name__}"


# ---------------------------------------------------------------------------------------------
# Phases


def request_kind(i: int, client: int, cfg: SoakConfig) -> str:
    """What request i (sent by `client`) is: every tenth a bad body, leaving clients disconnect."""
    if i % 10 == 7:
        return BAD_KINDS[(i // 10) % len(BAD_KINDS)]
    if client < round(cfg.disconnect_share * cfg.clients):
        return "disconnect"
    return "greedy" if (i // 2) % 2 == 0 else "sampled"


async def reference(client, url: str, prompts: list[str], cfg: SoakConfig) -> list[str]:
    """Each prompt's greedy answer, alone, by plain decoding (the streaming and non-streaming kinds agree)."""
    answers = []
    for prompt in prompts:
        result, text = await post_json(client, url, chat_body(prompt, cfg.max_tokens, False, True, 0, speculative=False))
        if result != "ok":
            raise D3DError(f"the reference request failed: {result}")
        answers.append(text)
    return answers


async def soak_phase(url: str, prompts: list[str], cfg: SoakConfig) -> list[Outcome]:
    import httpx

    outcomes: list[Outcome] = []
    counter = iter(range(cfg.requests))

    async def client_loop(c: int) -> None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0)) as client:
            for i in counter:
                outcomes.append(await one(client, url, request_kind(i, c, cfg), prompts, i, cfg))

    await asyncio.gather(*(client_loop(c) for c in range(cfg.clients)))
    return outcomes


async def drain_phase(url: str, prompts: list[str], cfg: SoakConfig, proc: subprocess.Popen) -> list[Outcome]:
    """One long request per client; SIGTERM once they are under way (or after 2 s)."""
    import httpx

    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0)) as client:
        tasks = [asyncio.create_task(one(client, url, "drain", prompts, cfg.requests + c, cfg)) for c in range(cfg.clients)]
        await asyncio.sleep(2.0)
        proc.send_signal(signal.SIGTERM)
        return list(await asyncio.gather(*tasks))


def count_mismatches(outcomes: list[Outcome], answers: list[str]) -> int:
    return sum(1 for o in outcomes if o.kind == "greedy" and o.result == "ok" and o.text != answers[o.prompt])


# ---------------------------------------------------------------------------------------------
# The run


def server_command(cfg: SoakConfig, port: int) -> list[str]:
    cmd = [sys.executable, "-m", "d3d.cli", "serve", "--port", str(port), "--dtype", cfg.dtype,
           "--max-batch", str(cfg.max_batch), "--max-queue", str(max(64, 2 * cfg.clients)),
           "--max-body-bytes", str(cfg.max_body_bytes), "--drain-seconds", str(cfg.drain_s)]
    for flag, value in (("--target", cfg.target), ("--drafter", cfg.drafter), ("--device", cfg.device)):
        if value:
            cmd += [flag, value]
    return cmd


async def run_phases(url: str, prompts: list[str], cfg: SoakConfig, proc: subprocess.Popen, log) -> SoakReport:
    import httpx

    report = SoakReport()
    async with httpx.AsyncClient(timeout=cfg.deadline_s) as client:
        answers = await reference(client, url, prompts, cfg)
    report.rss_warm_mb = rss_mb(proc.pid)
    log(f"[soak] warm: RSS {report.rss_warm_mb:.0f} MiB; {cfg.requests} requests from {cfg.clients} clients")
    report.outcomes = await soak_phase(url, prompts, cfg)
    report.rss_after_mb = rss_mb(proc.pid)
    log(f"[soak] soaked: RSS {report.rss_after_mb:.0f} MiB; SIGTERM under load")
    report.outcomes += await drain_phase(url, prompts, cfg, proc)
    report.mismatches = count_mismatches(report.outcomes, answers)
    return report


def run_soak(cfg: SoakConfig) -> SoakReport:
    """Start a server, run the phases, print the table and the JSON line; returns the report."""
    from d3d.evaluation.suites import load_suite

    cfg.validate()
    prompts = [p.text for p in load_suite(cfg.suite, limit=cfg.prompts)]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    out = open(cfg.log, "w") if cfg.log else None  # noqa: SIM115 - closed below
    proc = subprocess.Popen(server_command(cfg, port), stdout=out, stderr=subprocess.STDOUT if out else None)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    try:
        wait_healthy(url, proc)
        report = asyncio.run(run_phases(url, prompts, cfg, proc, log))
        try:
            report.exit_status = proc.wait(cfg.drain_s + 30)
        except subprocess.TimeoutExpired:
            report.exit_status = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if out:
            out.close()
    print_table(report, cfg)
    return report


def print_table(report: SoakReport, cfg: SoakConfig) -> None:
    d = report.as_dict()
    rows = [("requests", f"{d['requests']} ({', '.join(f'{k} {n}' for k, n in d['by_kind'].items())})")]
    rows += [(f"  {result}", str(n)) for result, n in d["results"].items()]
    rows += [("unclean (faults)", str(d["unclean"])), ("hung", str(d["hung"])),
             ("greedy answers unlike plain decoding", str(d["greedy_mismatches"])),
             ("RSS after warm-up / after soak", f"{d['rss_warm_mb']:.0f} / {d['rss_after_mb']:.0f} MiB "
                                                f"({d['rss_growth']:+.1%}, limit {cfg.rss_tolerance:+.0%})"),
             ("exit status after the drain", str(d["drain_exit_status"])),
             ("verdict", "PASS" if report.passed(cfg.rss_tolerance) else "FAIL")]
    width = max(len(name) for name, _ in rows)
    print("| what | count |\n|---|---|")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value} |")
    print(json.dumps(d))


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    """`python -m d3d.serving.soak [flags]`: exit 0 if every check passed, 1 if not, 2 on bad input."""
    p = argparse.ArgumentParser(prog="python -m d3d.serving.soak", description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    defaults = SoakConfig()
    for name in ("requests", "clients", "max_tokens", "drain_tokens", "prompts", "max_batch", "max_body_bytes"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in ("disconnect_share", "deadline_s", "rss_tolerance", "drain_s"):
        p.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    p.add_argument("--suite", default=defaults.suite, help="prompts: humaneval, mixed or a .jsonl file")
    p.add_argument("--log", default=None, help="write the server's output here")
    add_model_flags(p)
    args = p.parse_args(argv)
    try:
        report = run_soak(SoakConfig(**vars(args)))
    except D3DError as err:
        print(f"soak: error: {err}", file=sys.stderr)
        return 2
    return 0 if report.passed(args.rss_tolerance) else 1


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
