"""Selective prefill in the benchmark: the `sync@keepRHO[@SELECTOR]` modes, task scores, TTFT / decode / E2E speedups.

A mode `sync@keep0.2@lexical` is synchronous D3D decoding after selective prefill at rho = 0.2
(`d3d/inference/prefill.py`) with the lexical chunk selector; the plain `sync@keep0.2` is the
drafter's probe (the name results files hold from before modes named their selector). Every
selector of `d3d/inference/selectors.py` runs in the same run, on the same prompts, beside the
full-prompt modes. Because the target reads a reduced prompt, its output differs from ar's, so the benchmark reports, per
mode and against full-prompt plain decoding (`ar`) in the same run (the paper's Tables 6-7):

    score           mean task metric over the prompts (scored suites such as `longctx`), and
                    `score_by_task` per task type
    ttft_speedup    ar's total time to first token / the mode's (a keep mode's TTFT is one span
                    from before its selector's scoring, a probe pass for instance, to the first token)
    decode_speedup  the mode's decoding rate / ar's: tokens after the first per second after the
                    first token (per token, because the outputs differ in length)
    speedup         (the benchmark's own) ar's total wall time / the mode's: end to end
    kept_share      tokens the target read / prompt tokens (keep modes)
    selector        the chunk selector of a keep mode

This module knows nothing about the command line or about models beyond a decode function.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from d3d.evaluation.longctx import score
from d3d.evaluation.suites import Prompt
from d3d.inference.engine import DecodeStats, GenerationConfig
from d3d.inference.pipeline import Pipeline
from d3d.inference.selectors import DEFAULT_SELECTOR, LEGACY_SELECTOR

KEEP_PREFIX = "sync@keep"  # sync@keep0.2: sync after selective prefill at rho = 0.2
SELECTOR_SEPARATOR = "@"  # sync@keep0.2@lexical: ... with the lexical chunk selector


def keep_mode(keep: float, select: str | None = None) -> str:
    """The mode name of selective prefill at retention `keep` with selector `select` (None: the default)."""
    return f"{KEEP_PREFIX}{keep:g}" + (f"{SELECTOR_SEPARATOR}{select}" if select else "")


def keep_modes(keeps: tuple[float, ...], selects: tuple[str, ...]) -> list[str]:
    """Every (retention, selector) mode, by retention then selector; a run of the legacy selector
    (the probe) alone keeps the plain names `sync@keepRHO` that results files hold from before
    modes named their selector."""
    if selects == (LEGACY_SELECTOR,):
        return [keep_mode(k) for k in keeps]
    return [keep_mode(k, s) for k in keeps for s in selects]


def mode_keep(mode: str) -> float | None:
    """rho of a keep mode's name, None for any other mode."""
    if not mode.startswith(KEEP_PREFIX):
        return None
    return float(mode[len(KEEP_PREFIX) :].split(SELECTOR_SEPARATOR)[0])


def mode_selector(mode: str) -> str | None:
    """The chunk selector of a keep mode's name (the legacy probe when it names none), None for other modes."""
    if not mode.startswith(KEEP_PREFIX):
        return None
    _, _, select = mode[len(KEEP_PREFIX) :].partition(SELECTOR_SEPARATOR)
    return select or LEGACY_SELECTOR


def keep_runner(keep: float, select: str = DEFAULT_SELECTOR) -> Callable[[Pipeline, Tensor, GenerationConfig], tuple[list[int], DecodeStats]]:
    """The benchmark runner of `sync@keep<keep>[@<select>]`."""

    def run_keep(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
        return pipe.generate(prompt_ids, "sync", cfg, prefill_keep=keep, prefill_select=select)

    return run_keep


def prefill_record(stats: DecodeStats) -> dict:
    """What a selective-prefill run adds to a results-file record (nothing for other modes)."""
    if not hasattr(stats, "select_s"):
        return {}
    return {"select_s": stats.select_s, "ttft_s": stats.ttft_s, "prompt_tokens": stats.prompt_tokens,
            "full_prompt_tokens": stats.full_prompt_tokens, "selector": stats.selector}


def add_scores(prompt: Prompt, results: dict[str, dict], decode: Callable[[list[int]], str]) -> None:
    """Grade every mode's answer to a scored prompt in place (`score` field); unscored: nothing."""
    if not prompt.reference:
        return
    for record in results.values():
        record["score"] = score(prompt, decode(record["tokens"]))
        record["task"] = prompt.task


def wants_prefill_summary(rows: list[dict], modes: tuple[str, ...]) -> bool:
    """Report scores and TTFT / decode speedups: a keep mode ran, or the suite is scored."""
    scored = any("score" in r for row in rows for r in row["results"].values())
    return scored or any(mode_keep(m) is not None for m in modes)


def _ttft(record: dict) -> float | None:
    return record.get("ttft_s", record.get("prefill_s"))


def _decode_rate(records: list[dict]) -> float | None:
    """Tokens after the first per second after the first token, over `records`."""
    tokens = sum(max(r["new_tokens"] - 1, 0) for r in records)
    seconds = sum(r["total_s"] - (_ttft(r) or 0.0) for r in records)
    return tokens / seconds if seconds > 0 else None


def _ratio(num: float | None, den: float | None) -> float | None:
    return round(num / den, 4) if num is not None and den else None


def prefill_summary(records: list[dict], ar_records: list[dict]) -> dict:
    """score, score_by_task, ttft_speedup, decode_speedup and kept_share of one mode against ar."""
    ttfts, ar_ttfts = [_ttft(r) for r in records], [_ttft(r) for r in ar_records]
    known = None not in ttfts and None not in ar_ttfts
    out = {
        "ttft_speedup": _ratio(sum(ar_ttfts), sum(ttfts)) if known else None,
        "decode_speedup": _ratio(_decode_rate(records), _decode_rate(ar_records)) if known else None,
        "mean_ttft_ms": round(1000 * sum(ttfts) / len(ttfts), 2) if known and ttfts else None,
        "score": None, "score_by_task": {},
    }
    scores = [r["score"] for r in records if r.get("score") is not None]
    if scores and len(scores) == len(records):
        out["score"] = round(sum(scores) / len(scores), 4)
        for task in sorted({r.get("task", "") for r in records}):
            mine = [r["score"] for r in records if r.get("task", "") == task]
            out["score_by_task"][task] = round(sum(mine) / len(mine), 4)
    if records and all("full_prompt_tokens" in r for r in records):
        out["kept_share"] = round(sum(r["prompt_tokens"] for r in records) / sum(r["full_prompt_tokens"] for r in records), 4)
        out["selector"] = records[0].get("selector", LEGACY_SELECTOR)
    return out


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_prefill_table(summary: dict) -> str:
    """Per mode: score, kept share, TTFT, TTFT / decode / E2E speedups against full-prompt ar,
    then the score per task type (the paper's Tables 6-7 layout)."""
    tasks = sorted({t for s in summary.values() for t in s.get("score_by_task", {})})
    width = max([15, *(len(m) for m in summary)])
    head = (f"{'mode':<{width}} {'score':>6} {'kept':>6} {'ttft ms':>9} {'ttft x':>7} {'decode x':>8} {'e2e x':>7}"
            + "".join(f" {t[:9]:>9}" for t in tasks))
    lines = [head, "-" * len(head)]
    for mode, s in summary.items():
        lines.append(
            f"{mode:<{width}} {_fmt(s.get('score'), '.3f'):>6} {_fmt(s.get('kept_share', 1.0), '.2f'):>6} "
            f"{_fmt(s.get('mean_ttft_ms'), '.0f'):>9} {_fmt(s.get('ttft_speedup'), '.2f'):>7} "
            f"{_fmt(s.get('decode_speedup'), '.2f'):>8} {_fmt(s.get('speedup'), '.2f'):>7}"
            + "".join(f" {_fmt(s.get('score_by_task', {}).get(t), '.3f'):>9}" for t in tasks))
    return "\n".join(lines)
