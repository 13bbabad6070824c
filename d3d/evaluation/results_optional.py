"""The results page's optional sections, off by default (the quiet window is short): run them with
`python -m d3d.evaluation.results --optional`, or name them in `--only`.

    async    HumanEval with D3D async (and the AR-drafter baselines where their model exists), and the
             timeline of the last async generation (docs/img/timeline.png)
    sweep    async at fixed budgets C x F against N_async (the paper's Figure 3), plotted
    pruning  tau and speedup against drafter depth from a `d3d prune` log (Figure 2); runs nothing

Like the default sections (`results_sections.py`), each lists its commands and renders markdown from
their outputs; the plots are drawn when the page is rendered.
"""

from __future__ import annotations

import os
from pathlib import Path

from d3d.evaluation.results_config import ResultsConfig
from d3d.evaluation.results_sections import Section, fmt, md_table, out_path, speed_table, standard
from d3d.evaluation.results_steps import Step, StepOutput
from d3d.jsonl import read_records
from d3d.plotting import pyplot, save_figure


def _rel(cfg: ResultsConfig, path: Path) -> str:
    return os.path.relpath(path, Path(cfg.page).parent)


def _drafters(cfg: ResultsConfig) -> list[str]:
    return (["--target", cfg.target] if cfg.target else []) + (["--drafter", cfg.drafter] if cfg.drafter else [])


def async_steps(cfg: ResultsConfig) -> list[Step]:
    have_ar = bool(cfg.ar_drafter) and Path(cfg.ar_drafter).exists()
    modes = ["ar", "pld", *(["ar-drafter", "hf-assisted"] if have_ar else []), "sync", "async"]
    cmd = ["d3d", "bench", "--suite", "humaneval", "--limit", str(cfg.async_limit), "--modes", ",".join(modes),
           "--max-new-tokens", str(cfg.max_new_tokens), "--dtype", cfg.dtype, "--out", out_path(cfg, "async", "humaneval.jsonl"),
           "--timeline", str(Path(cfg.images) / "timeline.json"), *_drafters(cfg)]
    return [Step("humaneval", cmd + (["--ar-drafter", cfg.ar_drafter] if have_ar else []))]


def async_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    s = outputs["humaneval"].summary
    lines = speed_table(s) + [""] if s else []
    png = Path(cfg.images) / "timeline.png"
    if png.exists():
        lines += ["Every verification (top lane) and drafter pass (bottom lane) of the last async generation; green "
                  "verifications used a successor branch (hit), red ones drafted synchronously (miss).", "",
                  f"![timeline]({_rel(cfg, png)})", ""]
    return lines + standard(outputs, [])


def sweep_steps(cfg: ResultsConfig) -> list[Step]:
    budgets = [f"{c},{f}" for c in cfg.coverages for f in cfg.fanouts]
    return [Step("humaneval", ["d3d", "bench", "--suite", "humaneval", "--limit", str(cfg.sweep_limit), "--modes", "sync,async",
                               "--sweep", *budgets, "--max-new-tokens", str(cfg.max_new_tokens), "--dtype", cfg.dtype,
                               "--out", out_path(cfg, "sweep", "humaneval.jsonl"), *_drafters(cfg)])]


def sweep_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    s = outputs["humaneval"].summary
    if s is None:
        return []
    png = plot_sweep(s, Path(cfg.images) / "budget_sweep.png")
    return (["Async decoding at fixed budgets C (rejection positions covered) x F (alternatives per position); "
             "N_async = B((C-1)F+2) rows per packed successor pass.", "", f"![budget sweep]({_rel(cfg, png)})", ""]
            + speed_table(s) + [""] + standard(outputs, []))


def plot_sweep(summary: dict, png: Path) -> Path:
    """Speedup over plain decoding and hit rate against N_async, one line per fan-out F."""
    plt = pyplot()

    points: dict[int, list[tuple[int, float, float, int]]] = {}
    for mode, s in summary.items():
        if mode.startswith("async@"):
            c, f = (int(x) for x in mode.split("@")[1].split(","))
            points.setdefault(f, []).append((s["n_async"], s["speedup"], s["hit_rate"] or 0.0, c))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for f, rows in sorted(points.items()):
        rows.sort()
        left.plot([r[0] for r in rows], [r[1] for r in rows], marker="o", label=f"F={f}")
        right.plot([r[0] for r in rows], [r[2] for r in rows], marker="o", label=f"F={f}")
        for r in rows:
            left.annotate(f"C={r[3]}", (r[0], r[1]), fontsize=7, textcoords="offset points", xytext=(3, 3))
    if "sync" in summary:
        left.axhline(summary["sync"]["speedup"], color="gray", ls="--", lw=1, label="sync")
    left.axhline(1.0, color="black", lw=0.6)
    left.set(xlabel="N_async = B((C-1)F+2) tokens per successor pass", ylabel="speedup over plain decoding",
             title="async speedup against budget")
    right.set(xlabel="N_async", ylabel="cache hit rate", title="hit rate against budget", ylim=(0, 1))
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    return save_figure(fig, png)


def read_prune_log(path: Path) -> list[dict]:
    """The stage records of a `d3d prune` log, by stage (empty if there is no log)."""
    records = read_records(path, "pruning log")  # a torn last line (a run interrupted mid-write) is skipped
    stages = {r["stage"]: r for r in records if r.get("kind") == "stage"}
    return [stages[k] for k in sorted(stages)]


def plot_pruning(stages: list[dict], png: Path) -> Path:
    """Tau (both dev sets) and speedup against drafter depth."""
    plt = pyplot()

    depth = [len(s["layers"]) for s in stages]
    fig, left = plt.subplots(figsize=(6, 3.8))
    left.plot(depth, [s["tau_layer_dev"] for s in stages], marker="o", label="tau (layer-choice dev)")
    left.plot(depth, [s["tau_select"] for s in stages], marker="s", label="tau (selection dev)")
    left.set(xlabel="drafter layers", ylabel="tau", title="acceptance-guided pruning")
    left.invert_xaxis()
    lines, more = left.get_legend_handles_labels(), ([], [])
    if any(s.get("speedup") for s in stages):  # stages chosen by offline tau are untimed
        right = left.twinx()
        right.plot(depth, [s.get("speedup") or float("nan") for s in stages], color="#c62828", marker="^", label="sync speedup")
        right.set_ylabel("speedup over plain decoding")
        more = right.get_legend_handles_labels()
    left.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="best")
    return save_figure(fig, png)


def pruning_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    stages = read_prune_log(Path(cfg.prune_log))
    if not stages:
        return [f"No pruning log at `{cfg.prune_log}`.", ""]
    png = plot_pruning(stages, Path(cfg.images) / "pruning_curve.png")
    rows = [[str(s["stage"]), str(s["layers"]), "-" if s.get("removed") is None else str(s["removed"]),
             fmt(s.get("tau_removed"), ".3f"), fmt(s["tau_layer_dev"], ".3f"), fmt(s["tau_select"], ".3f"),
             f"{s['speedup']:.2f}x" if s.get("speedup") else "untimed"] for s in stages]
    return ([f"From `{cfg.prune_log}`: each stage removes the layer whose removal costs least validation tau, "
             "recovery-trains with distillation, then measures tau on both dev sets.", "", f"![pruning curve]({_rel(cfg, png)})", ""]
            + md_table(["stage", "layers", "removed", "tau before recovery", "tau (layer dev)", "tau (selection dev)",
                        "speedup"], rows) + [""])


OPTIONAL_SECTIONS = [
    Section("async", "async", "D3D async on HumanEval (optional)", async_steps, async_render, default=False),
    Section("sweep", "sweep", "Budget sweep (optional, Figure 3)", sweep_steps, sweep_render, default=False),
    Section("pruning", "pruning", "Pruning curve (optional, Figure 2)", lambda cfg: [], pruning_render, default=False),
]
