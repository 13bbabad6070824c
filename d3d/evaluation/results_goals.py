"""The page's goal tables: per issue (16-21), each goal the issue set against what the page measured.

Every "measured" cell is read from the sections' JSON lines (and, for the drafter's offline
acceptance, from the drafter's `acceptance.json`, written by `d3d eval-drafter --save`); a goal
whose data is missing says "not measured" instead of a verdict. The thresholds are the issues'
own; nothing measured is written here.

This module knows nothing about running commands; `results.py` hands it the sections' outputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from d3d.evaluation.prefill_metrics import mode_keep
from d3d.evaluation.results_config import ResultsConfig
from d3d.evaluation.results_sections import block_summary, md_table
from d3d.evaluation.results_steps import StepOutput
from d3d.evaluation.variants import cross_target
from d3d.inference.selectors import DEFAULT_SELECTOR

NAIVE_SELECTORS = ("last", "random", "lexical")  # the selectors issue 17's probe must beat (no model reads the prompt)
NOT_D3D = ("pld", "hf", "hf-assisted", "llamacpp")  # modes that are not this runtime's decoding


class Missing(Exception):
    """A goal's data was not measured (yet)."""


@dataclass
class Goal:
    text: str  # the goal, as the issue sets it
    measure: Callable[["Measured"], tuple[str, bool | None]]  # (what was measured, met?) ; None: no verdict


class Measured:
    """The sections' JSON lines, by section and step, with lookups that raise `Missing`."""

    def __init__(self, outputs: dict[str, dict[str, StepOutput]], cfg: ResultsConfig) -> None:
        self.outputs, self.cfg = outputs, cfg

    def summary(self, section: str, step: str) -> dict:
        o = self.outputs.get(section, {}).get(step)
        if o is None or o.summary is None:
            raise Missing(f"{section}/{step}")
        return o.summary

    def mode(self, suite: str, mode: str) -> dict:
        s = self.summary("table", suite)
        if mode not in s:
            raise Missing(f"{suite}/{mode}")
        return s[mode]

    def acceptance(self) -> dict:
        """The drafter's offline acceptance (`d3d eval-drafter --save`)."""
        if self.cfg.drafter:
            path = Path(self.cfg.drafter) / "acceptance.json"
        else:
            from d3d.inference.pipeline import SHIPPED_DRAFTERS_DIR
            from d3d.models import hub

            path = SHIPPED_DRAFTERS_DIR / hub.DEFAULT_TARGET / "acceptance.json"
        if self.cfg.target or not path.exists():
            raise Missing("acceptance.json")
        return json.loads(path.read_text())

    def keep_mode(self, keep: float, selector: str) -> dict:
        s = self.summary("prefill", "longctx2")
        for mode, m in s.items():
            if mode_keep(mode) == keep and m.get("selector") == selector:
                return m
        raise Missing(f"rho {keep} {selector}")


def _x(v: float, goal: float | None = None) -> str:
    """`v` as a ratio to two decimals, or three where two would round it across `goal` (1.799x, not 1.80x)."""
    digits = 3 if goal is not None and (round(v, 2) >= goal) != (v >= goal) else 2
    return f"{v:.{digits}f}x"


def at_least(value: float, goal: float, text: str) -> tuple[str, bool]:
    return text, value >= goal


# ---------------------------------------------------------------------------------------------
# Issue by issue


def _data_best(m: Measured) -> tuple[str, bool | None]:
    runs = {n: o.summary for n, o in m.outputs.get("data-throughput", {}).items() if o.summary}
    if not runs:
        raise Missing("data")
    name, best = max(runs.items(), key=lambda r: r[1]["tokens_per_s"])
    dtype, batch = name.rsplit("_b", 1)
    return f"{best['tokens_per_s']:.1f} tokens/s at batch {batch}, {dtype}", None


def _sync_vs_pld(m: Measured) -> tuple[str, bool]:
    sync, pld = m.mode("humaneval", "sync")["speedup"], m.mode("humaneval", "pld")["speedup"]
    return f"sync {_x(sync, 1.8)}, prompt lookup {_x(pld)}", sync >= 1.8 and sync > pld


def _on_dev(m: Measured) -> dict:
    """The drafter's offline acceptance on the dev set: its own entry when the table was measured
    on several sets pooled (`by_data`), else the table's."""
    record = m.acceptance()
    own = [r for path, r in record.get("by_data", {}).items() if Path(path).name == "dev.jsonl"]
    return own[0] if own else record


ISSUE_16 = [
    Goal("alpha_1 >= 0.6 (offline, dev)", lambda m: at_least(a := _on_dev(m)["alpha"][0], 0.6, f"{a:.3f}")),
    Goal("offline tau >= 3 on dev", lambda m: at_least(t := _on_dev(m)["tau_sim"], 3.0, f"{t:.2f}")),
    Goal("HumanEval: sync >= 1.8x, ahead of prompt lookup", _sync_vs_pld),
    Goal("mixed: sync >= 1.3x", lambda m: at_least(s := m.mode("mixed", "sync")["speedup"], 1.3, _x(s, 1.3))),
    Goal("`make demo` above 1.2x", lambda m: (_x(s := m.summary("demo", "demo")["speedup"]), s > 1.2)),
    Goal("data generation at the batch size that fills the machine", _data_best),
]


def _selector_vs(m: Measured, what: str, selector: str = "probe") -> tuple[str, bool]:
    probe, full = m.keep_mode(0.2, selector), m.summary("prefill", "longctx2")["ar"]
    if what == "score":
        share = probe["score"] / full["score"] if full.get("score") else None
        if share is None:
            raise Missing("full score")
        return f"{probe['score']:.3f} of {full['score']:.3f} ({share:.0%})", share >= 0.9
    goal = {"ttft_speedup": 3.0, "speedup": 2.0}[what]
    return at_least(probe[what], goal, _x(probe[what]))


def _probe_beats_naive(m: Measured) -> tuple[str, bool]:
    probe = m.keep_mode(0.2, "probe")["score"]
    naive = {}
    for name in NAIVE_SELECTORS:
        try:
            naive[name] = m.keep_mode(0.2, name)["score"]
        except Missing:
            pass
    if not naive:
        raise Missing("naive selectors")
    text = f"probe {probe:.3f}; " + ", ".join(f"{n} {s:.3f}" for n, s in naive.items())
    return text, all(probe > s for s in naive.values())


ISSUE_17 = [
    Goal("rho 0.2, probe: score >= 90% of the full prompt's", lambda m: _selector_vs(m, "score")),
    Goal("rho 0.2, probe: TTFT >= 3x", lambda m: _selector_vs(m, "ttft_speedup")),
    Goal("rho 0.2, probe: end to end >= 2x", lambda m: _selector_vs(m, "speedup")),
    Goal(f"rho 0.2: probe beats every naive selector ({', '.join(NAIVE_SELECTORS)}) on score", _probe_beats_naive),
    Goal(f"rho 0.2, the default selector ({DEFAULT_SELECTOR}): score >= 90% of the full prompt's",
         lambda m: _selector_vs(m, "score", DEFAULT_SELECTOR)),
    Goal(f"rho 0.2, {DEFAULT_SELECTOR}: TTFT >= 3x", lambda m: _selector_vs(m, "ttft_speedup", DEFAULT_SELECTOR)),
    Goal(f"rho 0.2, {DEFAULT_SELECTOR}: end to end >= 2x", lambda m: _selector_vs(m, "speedup", DEFAULT_SELECTOR)),
]


def _causal_within(m: Measured) -> tuple[str, bool]:
    runs = block_summary(m.cfg)
    if "causal" not in runs or "bidirectional" not in runs:
        raise Missing("block attention")
    causal, bidir = runs["causal"]["tau_sim"], runs["bidirectional"]["tau_sim"]
    return f"causal {causal:.3f}, bidirectional {bidir:.3f} ({causal / bidir - 1:+.1%})", causal >= 0.95 * bidir


ISSUE_18 = [Goal("causal-block drafter within 5% of the bidirectional one's offline tau", _causal_within)]


def _load_ratio(m: Measured) -> tuple[str, bool]:
    s = m.summary("load", "loadtest")
    ratios = {n: e["speedup"] for n, e in s.items() if e.get("speedup") is not None}
    if not ratios:
        raise Missing("load")
    return ", ".join(f"N={n}: {_x(r)}" for n, r in ratios.items()), all(r >= 0.97 for r in ratios.values())


def _soak(m: Measured) -> tuple[str, bool]:
    d = m.summary("soak", "soak")
    text = (f"hung {d['hung']}, unclean {d['unclean']}, greedy mismatches {d['greedy_mismatches']}, RSS "
            f"{d['rss_growth']:+.1%}, exit {d['drain_exit_status']}")
    return text, d["hung"] == 0 and d["unclean"] == 0 and d["greedy_mismatches"] == 0 and d["rss_growth"] <= 0.10 \
        and d["drain_exit_status"] == 0


def _no_divergence(m: Measured) -> tuple[str, bool]:
    ties = divergences = 0
    for suite, _ in m.cfg.table_suites:
        for mode, s in m.summary("table", suite).items():
            if mode != "ar" and not cross_target(mode) and "divergences" in s:
                ties, divergences = ties + s["near_ties"], divergences + s["divergences"]
    return f"{divergences} divergences, {ties} near ties (rule 4)", divergences == 0


ISSUE_19 = [
    Goal("load test: speculation on >= 0.97x of off at every concurrency", _load_ratio),
    Goal("soak: no hung or unclean request, greedy = plain, RSS within 10%, exit 0", _soak),
    Goal("speed table: no output diverges from plain decoding", _no_divergence),
]


def _tree_ahead(m: Measured) -> tuple[str, bool]:
    """Judged by the wall-time ratio; the per-token ratios (tokens/s) are shown beside it, since
    bfloat16 near ties can make one mode write more tokens than another on the same prompts."""
    parts, ok = [], True
    for suite, _ in m.cfg.table_suites:
        modes = [m.mode(suite, x) for x in ("tree", "sync", "pld")]
        tree, sync, pld = (e["speedup"] for e in modes)
        text = f"{suite}: tree {_x(tree)}, sync {_x(sync)}, pld {_x(pld)}"
        per_token = [e.get("speedup_per_token") for e in modes]
        if all(v is not None for v in per_token):
            text += " (per token {}, {}, {})".format(*(_x(v) for v in per_token))
        parts.append(text)
        ok = ok and tree > sync and tree > pld
    return "; ".join(parts), ok


def _humaneval_tree(m: Measured) -> tuple[str, bool]:
    t = m.mode("humaneval", "tree")
    return f"tau {t['tau']:.2f}, {_x(t['speedup'], 1.8)}", t["tau"] >= 2.5 and t["speedup"] >= 1.8


def _branch_gain(m: Measured, without: str) -> tuple[str, bool]:
    parts, ok = [], True
    for suite, _ in m.cfg.table_suites:
        tree, alone = m.mode(suite, "tree")["speedup"], m.mode(suite, without)["speedup"]
        parts.append(f"{suite}: tree {_x(tree)} vs {without} {_x(alone)}")
        ok = ok and tree > alone
    return "; ".join(parts), ok


ISSUE_20 = [
    Goal("tree ahead of prompt lookup and sync on both suites", _tree_ahead),
    Goal("HumanEval: tree tau >= 2.5 and >= 1.8x", _humaneval_tree),
    Goal("mixed: tree >= 1.3x", lambda m: at_least(s := m.mode("mixed", "tree")["speedup"], 1.3, _x(s, 1.3))),
    Goal("the drafter branch earns its place (tree faster than tree-lookup)", lambda m: _branch_gain(m, "tree-lookup")),
    Goal("the lookup branch earns its place (tree faster than tree-drafter)", lambda m: _branch_gain(m, "tree-drafter")),
]


def _ms_per_token(m: Measured) -> tuple[str, bool]:
    rate = m.mode("humaneval", "ar")["tokens_per_s"]
    text = f"{1000 / rate:.1f} ms per token (HumanEval, prefill included)"
    try:
        text += f"; t_1 {m.summary('cost', 'bfloat16_dense')['1']['ms']:.1f} ms"
    except Missing:
        pass
    return text, 1000 / rate <= 20


def _int8_vs_llamacpp(m: Measured) -> tuple[str, bool]:
    int8, llama = m.mode("humaneval", "ar@int8")["tokens_per_s"], m.mode("humaneval", "llamacpp")["tokens_per_s"]
    return f"ar@int8 {int8:.1f} tokens/s, llama.cpp {llama:.1f}", int8 >= llama


def _moonshot(m: Measured) -> tuple[str, bool]:
    s, llama = m.summary("table", "humaneval"), m.mode("humaneval", "llamacpp")["tokens_per_s"]
    ours = {mode: v["tokens_per_s"] for mode, v in s.items() if mode not in NOT_D3D and v.get("tokens_per_s")}
    best = max(ours, key=ours.get)
    return f"`{best}` {ours[best]:.1f} tokens/s = {_x(ours[best] / llama)} llama.cpp", ours[best] >= 1.5 * llama


ISSUE_21 = [
    Goal("bf16 plain decoding <= 20 ms per token", _ms_per_token),
    Goal("int8 plain decoding >= llama.cpp's plain tokens/s", _int8_vs_llamacpp),
    Goal("moonshot: best d3d mode >= 1.5x llama.cpp on HumanEval", _moonshot),
]

ISSUES = [
    ("16", "a drafter that accepts, data at scale", ISSUE_16),
    ("17", "selective prefill that keeps the right chunks", ISSUE_17),
    ("18", "causal-block drafters", ISSUE_18),
    ("19", "batch engine, agreement, server hardening", ISSUE_19),
    ("20", "tree verification", ISSUE_20),
    ("21", "a lean target step, int8, llama.cpp", ISSUE_21),
]


def evaluate(goal: Goal, m: Measured) -> list[str]:
    """A table row: the goal, what was measured, the verdict."""
    try:
        text, ok = goal.measure(m)
    except (Missing, KeyError):
        return [goal.text, "not measured", "-"]
    return [goal.text, text, "-" if ok is None else ("met" if ok else "**missed**")]


def goal_tables(outputs: dict[str, dict[str, StepOutput]], cfg: ResultsConfig) -> list[str]:
    m = Measured(outputs, cfg)
    lines = ["## Goals", "", "Each issue's goals against this page's measurements (read from the sections below; "
             "\"not measured\": the section has no output yet).", ""]
    for number, title, goals in ISSUES:
        lines += [f"### Issue {number}: {title}", ""]
        lines += md_table(["goal", "measured", "verdict"], [evaluate(g, m) for g in goals]) + [""]
    return lines

