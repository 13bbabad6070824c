"""The benchmark's aggregation and table: per-mode totals over the finished prompts, the ratios
against plain decoding, the agreement counts, the drafting and tree statistics, and the printed table.

It reads results-file rows (one per prompt, each holding every mode's record, `bench.run_record`)
and knows nothing about decoding or models: `summarize` and `format_table` are pure functions of
those rows.
"""

from __future__ import annotations

from d3d.evaluation.agreement import agreement_summary
from d3d.evaluation.bench_modes import AR_DRAFTER_MODES, DRAFTER_MODES, TREE_MODES, base_mode
from d3d.evaluation.prefill_metrics import mode_keep, prefill_summary, wants_prefill_summary
from d3d.evaluation.variants import add_fastest_plain, agreement_with_ar, cross_target, reference_of, split_variant


def _mode_totals(records: list[dict]) -> dict:
    keys = ("new_tokens", "total_s", "rounds", "round_tokens", "draft_s", "verify_s")
    async_keys = ("hits", "misses", "successor_s", "successor_passes", "hidden_rounds", "overlapped_rounds", "wait_s")
    return {key: sum(r.get(key, 0) for r in records) for key in keys + async_keys}


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def summarize(rows: list[dict], modes: tuple[str, ...], greedy: bool, drafter: str | None = None,
              mode_drafters: dict[str, str] | None = None) -> dict:
    """Per-mode aggregates over `rows` (finished prompts), keyed by mode name (see module doc).
    `drafter` describes the run's drafter, `mode_drafters` (mode -> description) the drafter of
    each mode on a drafter variant (`variants.py`)."""
    mode_drafters = mode_drafters or {}
    ar_records = [row["results"]["ar"] for row in rows]
    ar = _mode_totals(ar_records)
    summary = {}
    for mode in modes:
        records = [row["results"][mode] for row in rows]
        refs = [row["results"][reference_of(mode)] for row in rows]  # its own target's plain decoding
        same = greedy and mode_keep(mode) is None  # a keep mode's target reads another prompt
        identical = all(r["tokens"] == a["tokens"] for r, a in zip(records, refs)) if same else None
        summary[mode] = _mode_summary(_mode_totals(records), ar, identical, len(rows))
        if same and cross_target(mode):  # another model: how far it follows ar (variants.py)
            summary[mode]["agreement_with_ar"] = agreement_with_ar([r["tokens"] for r in records],
                                                                   [a["tokens"] for a in ar_records])
        elif same and mode != "ar":
            summary[mode] |= agreement_summary([_agreement_kind(r, a) for r, a in zip(records, refs)])
        if base_mode(mode) in DRAFTER_MODES or mode in AR_DRAFTER_MODES:
            summary[mode] |= _drafting_summary(base_mode(mode), _mode_totals(records), records)
        if split_variant(mode)[0] in TREE_MODES:  # tree, tree-lookup, tree@int8 ...
            summary[mode] |= _tree_summary(records)
        described = mode_drafters.get(mode, drafter)
        if base_mode(mode) in DRAFTER_MODES and described is not None:
            summary[mode]["drafter"] = described
        if any(r.get("draft_lengths") for r in records):
            summary[mode]["draft_lengths"] = _merged_counts([r.get("draft_lengths") or {} for r in records])
            summary[mode]["skipped_rounds"] = sum(r.get("skipped_rounds", 0) for r in records)  # of draft_lengths["1"]
            priced = [r["policy_draft_s"] for r in records if r.get("policy_draft_s")]  # one value per pipeline
            if priced:
                summary[mode]["policy_td_ms"] = _rounded(1e3 * max(priced))
        if wants_prefill_summary(rows, modes):
            summary[mode] |= prefill_summary(records, ar_records)
    for mode in summary:
        if base_mode(mode) == "async" and "sync" in summary:
            summary[mode]["speedup_vs_sync"] = _rounded(_ratio(summary["sync"]["total_s"], summary[mode]["total_s"]))
    add_fastest_plain(summary)
    return summary


def _tree_summary(records: list[dict]) -> dict:
    """Tree shape over a mode's prompts: mean nodes per round, mean accepted depth (drafted tokens
    accepted per round), which branch the accepted path came from, and how often the drafter ran."""
    rounds = sum(r["rounds"] for r in records)
    return {
        "mean_nodes": _rounded(_ratio(sum(r.get("tree_nodes", 0) for r in records), rounds)),
        "mean_accepted_depth": _rounded(_ratio(sum(r["round_tokens"] - r["rounds"] for r in records), rounds)),
        "wins": _merged_names([r.get("wins") or {} for r in records]),
        "nodes_hist": _merged_counts([r.get("nodes_hist") or {} for r in records]),
        "drafter_share": _rounded(_ratio(sum(r.get("drafter_rounds", 0) for r in records), rounds)),
    }


def _merged_names(counts: list[dict[str, int]]) -> dict[str, int]:
    """Name -> count, summed over prompts, ordered by name."""
    total: dict[str, int] = {}
    for c in counts:
        for name, n in c.items():
            total[name] = total.get(name, 0) + n
    return dict(sorted(total.items()))


def _merged_counts(counts: list[dict[str, int]]) -> dict[str, int]:
    """Rows verified per round (k) -> rounds, summed over prompts, ordered by k."""
    total: dict[int, int] = {}
    for c in counts:
        for k, n in c.items():
            total[int(k)] = total.get(int(k), 0) + n
    return {str(k): total[k] for k in sorted(total)}


def _agreement_kind(record: dict, ar_record: dict) -> str:
    """A record's agreement (records written before the check: identical or divergence)."""
    if "agreement" in record:
        return record["agreement"]
    return "identical" if record["tokens"] == ar_record["tokens"] else "divergence"


def _drafting_summary(mode: str, t: dict, records: list[dict]) -> dict:
    """t_d / t_v, and for async the hit rate and the share of hidden drafting."""
    if mode != "async":
        return {"mean_td_ms": _rounded(_ratio(1000 * t["draft_s"], t["rounds"])),
                "mean_tv_ms": _rounded(_ratio(1000 * t["verify_s"], t["rounds"])), "hit_rate": None, "hidden_share": 0.0}
    return {
        "mean_td_ms": _rounded(_ratio(1000 * t["successor_s"], t["successor_passes"])),
        "mean_tv_ms": _rounded(_ratio(1000 * t["verify_s"], t["rounds"])),
        "hit_rate": _rounded(_ratio(t["hits"], t["hits"] + t["misses"])),
        "hidden_share": _rounded(_ratio(t["hidden_rounds"], t["overlapped_rounds"])),
        "mean_wait_ms": _rounded(_ratio(1000 * t["wait_s"], t["rounds"])),
        "budget": records[0].get("budget") if records else None,
        "n_async": records[0].get("n_async") if records else None,
        "fallbacks": sum(r.get("fallback") is not None for r in records),
    }


def _mode_summary(t: dict, ar: dict, identical: bool | None, n_prompts: int) -> dict:
    """One mode's totals `t` against ar's totals `ar`."""
    rate, ar_rate = _ratio(t["new_tokens"], t["total_s"]), _ratio(ar["new_tokens"], ar["total_s"])
    return {
        "tau": _rounded(_ratio(t["round_tokens"], t["rounds"])),
        "speedup": _rounded(_ratio(ar["total_s"], t["total_s"])),
        "tokens_per_s": _rounded(rate),
        "identical": identical,
        "speedup_per_token": _rounded(_ratio(rate or 0.0, ar_rate or 0.0)),
        "n_prompts": n_prompts, "new_tokens": t["new_tokens"], "total_s": round(t["total_s"], 4),
        "rounds": t["rounds"],
        "mean_draft_ms": _rounded(_ratio(1000 * t["draft_s"], t["rounds"])),
        "mean_verify_ms": _rounded(_ratio(1000 * t["verify_s"], t["rounds"])),
    }


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_table(summary: dict) -> str:
    """One row per mode: tau, tokens/s, speedup (against ar, and per token against the run's fastest plain
    decoding: "vs best"), identical, mean t_d / t_v, prompts, tokens, hit rate and hidden share (t_d:
    sync's draft, async's packed successor pass). Where outputs differ, identical reads "I/Tt/Dd": I
    identical prompts, T near ties, D divergences (`agreement.py`); for a mode on another model
    (ar@VARIANT, llamacpp) "~I/N": I of N prompts equal ar's output (agreement, `variants.py`).
    When the modes draft with more than one drafter (drafter variants), each drafter's modes and
    description follow the table."""
    width = max([11, *map(len, summary)])
    head = (f"{'mode':<{width}} {'tau':>6} {'tok/s':>8} {'speedup':>8} {'vs best':>8} {'identical':>9} {'t_d ms':>8} {'t_v ms':>8} "
            f"{'prompts':>7} {'tokens':>7} {'hit':>5} {'hidden':>6}")
    lines = [head, "-" * len(head)]
    for mode, s in summary.items():
        identical = "-" if s["identical"] is None else ("yes" if s["identical"] else "NO")
        if "near_ties" in s and not s["identical"]:  # identical prompts / near ties / divergences
            identical = f"{s['identical_prompts']}/{s['near_ties']}t/{s['divergences']}d"
        if "agreement_with_ar" in s and not s["identical"]:
            identical = f"~{s['agreement_with_ar']['identical_prompts']}/{s['n_prompts']}"
        lines.append(
            f"{mode:<{width}} {_fmt(s['tau'], '.3f'):>6} {_fmt(s['tokens_per_s'], '.2f'):>8} "
            f"{_fmt(s['speedup'], '.3f'):>8} {_fmt(s.get('speedup_vs_fastest_plain'), '.3f'):>8} {identical:>9} {_fmt(s.get('mean_td_ms', s['mean_draft_ms']), '.2f'):>8} "
            f"{_fmt(s['mean_verify_ms'], '.2f'):>8} {s['n_prompts']:>7} {s['new_tokens']:>7} "
            f"{_fmt(s.get('hit_rate'), '.2f'):>5} {_fmt(s.get('hidden_share'), '.2f'):>6}"
        )
    return "\n".join(lines + _drafter_lines(summary))


def _drafter_lines(summary: dict) -> list[str]:
    """"drafter of MODE, MODE: DESCRIPTION" per drafter, when the modes used more than one."""
    modes_of: dict[str, list[str]] = {}
    for mode, s in summary.items():
        if s.get("drafter"):
            modes_of.setdefault(s["drafter"], []).append(mode)
    if len(modes_of) < 2:
        return []
    return [f"drafter of {', '.join(modes)}: {description}" for description, modes in modes_of.items()]


def progress_text(summary: dict) -> str:
    parts = [f"{m} tau={_fmt(s['tau'], '.2f')} x{_fmt(s['speedup'], '.2f')}" for m, s in summary.items() if m != "ar"]
    return " | ".join(parts)
