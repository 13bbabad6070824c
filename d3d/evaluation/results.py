"""`make results`: run every benchmark of the results page and write `docs/results.md` from them.

One command regenerates the page (`make results`):

1. Table 1 (the paper's): tau and speedup of plain decoding, transformers prompt lookup, the
   AR-drafter baseline (native engine and transformers assisted generation), D3D sync and D3D
   async, on HumanEval and on the built-in mixed suite (math, code, chat, writing); one `d3d
   bench` run per suite, every mode interleaved prompt by prompt;
2. the budget sweep: async at C in {2,4,8,12} x F in {1,2,3} against N_async (Figure 3);
3. the pruning curve: tau and speedup against depth, from a `d3d prune` log (Figure 2);
4. the timeline of one asynchronous generation.

Every benchmark writes a resumable results file under `runs/results/`, so an interrupted
regeneration continues where it stopped and a finished one only re-renders. The page embeds each
table as printed, the command that reproduces it, and the JSON summary; plots go to `docs/img/`.

    from d3d.evaluation.results import ResultsConfig, make_results
    make_results(ResultsConfig(sweep_limit=5))
"""

from __future__ import annotations

import datetime
import io
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import torch

from d3d.errors import D3DError
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.evaluation.suites import BUILTIN_SUITES
from d3d.jsonl import read_records
from d3d.plotting import save_figure

TABLE_MODES = ("ar", "pld", "ar-drafter", "hf-assisted", "sync", "async")
MODE_NAMES = {
    "ar": "plain decoding (native runtime)",
    "pld": "prompt lookup (transformers)",
    "ar-drafter": "AR drafter, same depth (native engine)",
    "hf-assisted": "AR drafter, same depth (transformers assisted generation)",
    "sync": "D3D sync",
    "async": "D3D async",
}


@dataclass
class ResultsConfig:
    """What the results page measures."""

    drafter: str | None = None  # D3D drafter (None: the shipped one)
    target: str | None = None  # target model (None: the embedded SmolLM2-135M-Instruct)
    ar_drafter: str = "runs/smollm2-ar/drafter"  # AR-drafter baseline (recipes/smollm2-ar.yaml)
    prune_log: str = "runs/smollm2-long-prune-150/log.jsonl"  # `d3d prune` log of the shipped drafter (pruning curve)
    limit: int | None = None  # prompts per suite for Table 1 (None: `suite_limits`)
    suite_limits: dict = field(default_factory=lambda: {"humaneval": 40, "mixed": 20})  # default 40 otherwise
    sweep_limit: int = 3  # HumanEval prompts for the budget sweep (small: the sweep is 7 runs per prompt)
    coverages: tuple[int, ...] = (2, 4, 8)
    fanouts: tuple[int, ...] = (1, 2)
    dtype: str = "auto"  # every benchmark's dtype (auto: bfloat16 where the hardware has it)
    extra_limit: int = 10  # HumanEval prompts of the precision and verification-length sections (0 = skip)
    max_new_tokens: int = 128
    suites: tuple[str, ...] = ("humaneval", "mixed")
    sweep_suite: str = "humaneval"
    runs_dir: str = "runs/results"  # resumable benchmark results
    page: str = "docs/results.md"
    images: str = "docs/img"


def _bench(cfg: BenchConfig) -> tuple[dict, str]:
    """Run one benchmark; its summary and its table (the printed output without the JSON line)."""
    out = io.StringIO()
    summary = run_bench(cfg, out)
    return summary, "\n".join(out.getvalue().splitlines()[:-1])


def suite_name(suite: str) -> str:
    """A built-in suite's name, or a suite file's stem."""
    return suite if suite.strip().lower() in BUILTIN_SUITES else Path(suite).stem


def table_modes(cfg: ResultsConfig) -> tuple[str, ...]:
    """Table 1's modes: the AR-drafter baselines only when their draft model exists."""
    have_ar = bool(cfg.ar_drafter) and Path(cfg.ar_drafter).exists()
    return tuple(m for m in TABLE_MODES if have_ar or m not in ("ar-drafter", "hf-assisted"))


def table_bench(cfg: ResultsConfig, suite: str) -> tuple[BenchConfig, dict, str]:
    bench = BenchConfig(
        suite=suite, limit=cfg.limit or cfg.suite_limits.get(suite_name(suite), 40), modes=table_modes(cfg),
        max_new_tokens=cfg.max_new_tokens, drafter=cfg.drafter,
        target=cfg.target, dtype=cfg.dtype,
        ar_drafter=cfg.ar_drafter, out=str(Path(cfg.runs_dir) / f"table_{suite_name(suite)}.jsonl"),
        timeline=str(Path(cfg.images) / "timeline.json") if suite == cfg.suites[0] else None,
    )
    summary, table = _bench(bench)
    return bench, summary, table


def sweep_bench(cfg: ResultsConfig) -> tuple[BenchConfig, dict, str]:
    budgets = tuple(f"{c},{f}" for c in cfg.coverages for f in cfg.fanouts)
    bench = BenchConfig(
        suite=cfg.sweep_suite, limit=cfg.sweep_limit, modes=("sync", "async"), sweep=budgets,
        max_new_tokens=cfg.max_new_tokens, drafter=cfg.drafter, target=cfg.target, dtype=cfg.dtype,
        out=str(Path(cfg.runs_dir) / f"sweep_{suite_name(cfg.sweep_suite)}.jsonl"),
    )
    summary, table = _bench(bench)
    return bench, summary, table


# name -> (title, BenchConfig overrides, environment): the precision and verification-length runs
EXTRA_BENCHES = {
    "float32": ("float32 (exact: must be identical)", {"dtype": "float32"}, {}),
    "bf16-unfixed": ("bfloat16, precision fixes off, every drafted token verified (the previous behaviour)",
                     {"dtype": "bfloat16", "draft_length": "16"}, {"D3D_PRECISION_FIXES": "0"}),
    "bf16-k16": ("bfloat16, precision fixes on, every drafted token verified", {"dtype": "bfloat16", "draft_length": "16"}, {}),
    "bf16-auto": ("bfloat16, precision fixes on, verification length chosen per round", {"dtype": "bfloat16"}, {}),
    "untrained-k16": ("untrained drafter, bfloat16, every drafted token verified",
                      {"dtype": "bfloat16", "draft_length": "16", "drafter": "untrained"}, {}),
    "untrained-auto": ("untrained drafter, bfloat16, verification length chosen per round",
                       {"dtype": "bfloat16", "drafter": "untrained"}, {}),
}


def extra_bench(cfg: ResultsConfig, name: str) -> tuple[BenchConfig, dict, str]:
    """One run of EXTRA_BENCHES: plain decoding against sync on the first `extra_limit` HumanEval prompts."""
    _, overrides, env = EXTRA_BENCHES[name]
    settings = dict(suite="humaneval", limit=cfg.extra_limit, modes=("ar", "sync"), max_new_tokens=cfg.max_new_tokens,
                    drafter=cfg.drafter, target=cfg.target, out=str(Path(cfg.runs_dir) / f"extra_{name}.jsonl"))
    bench = BenchConfig(**settings | overrides)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        summary, table = _bench(bench)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return bench, summary, table


def pass_cost_tables() -> dict[str, dict[int, float]]:
    """t_v(k) / t_v(1) of the default target in bfloat16 and float32 (this machine's cached tables)."""
    from d3d.inference.pass_costs import machine_pass_costs
    from d3d.inference.pipeline import load_target

    return {dt: machine_pass_costs(load_target(None, "cpu", dt).native("pass timing")).table
            for dt in ("bfloat16", "float32")}


def command_of(bench: BenchConfig) -> str:
    """The `d3d bench` command line that reproduces a benchmark."""
    parts = ["d3d bench", *([f"--target {bench.target}"] if bench.target else []), f"--suite {bench.suite}", f"--limit {bench.limit}",
             f"--modes {','.join(bench.modes)}", f"--max-new-tokens {bench.max_new_tokens}"]
    parts += [f"--dtype {bench.dtype}"] if bench.dtype else []
    parts += [f"--draft-length {bench.draft_length}"] if bench.draft_length != "auto" else []
    if bench.drafter:
        parts.append(f"--drafter {bench.drafter}")
    if bench.ar_drafter and {"ar-drafter", "hf-assisted"} & set(bench.modes):
        parts.append(f"--ar-drafter {bench.ar_drafter}")
    if bench.sweep:
        parts.append("--sweep " + " ".join(bench.sweep))
    parts.append(f"--out {bench.out}")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# Plots


def plot_sweep(summary: dict, png: Path) -> Path:
    """Speedup over plain decoding and hit rate against N_async, one line per fan-out F."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points: dict[int, list[tuple[int, float, float, int]]] = {}
    for mode, s in summary.items():
        if not mode.startswith("async@"):
            continue
        c, f = (int(x) for x in mode.split("@")[1].split(","))
        points.setdefault(f, []).append((s["n_async"], s["speedup"], s["hit_rate"] or 0.0, c))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for f, rows in sorted(points.items()):
        rows.sort()
        n = [r[0] for r in rows]
        left.plot(n, [r[1] for r in rows], marker="o", label=f"F={f}")
        right.plot(n, [r[2] for r in rows], marker="o", label=f"F={f}")
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depth = [len(s["layers"]) for s in stages]
    fig, left = plt.subplots(figsize=(6, 3.8))
    left.plot(depth, [s["tau_layer_dev"] for s in stages], marker="o", label="tau (layer-choice dev)")
    left.plot(depth, [s["tau_select"] for s in stages], marker="s", label="tau (selection dev)")
    left.set(xlabel="drafter layers", ylabel="tau", title="acceptance-guided pruning")
    left.invert_xaxis()
    lines, more = left.get_legend_handles_labels(), ([], [])
    if any(s.get("speedup") for s in stages):  # stages chosen by offline tau are untimed
        right = left.twinx()
        right.plot(depth, [s["speedup"] for s in stages], color="#c62828", marker="^", label="sync speedup")
        right.set_ylabel("speedup over plain decoding")
        more = right.get_legend_handles_labels()
    left.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="best")
    return save_figure(fig, png)


# ---------------------------------------------------------------------------------------------
# The page


def table1(summaries: dict[str, dict]) -> str:
    """Markdown: one row per mode, tau and speedup per suite (Table 1 of the paper)."""
    suites = list(summaries)
    head = "| method | " + " | ".join(f"{suite_name(s)} tau | {suite_name(s)} speedup" for s in suites) + " |"
    rule = "|---|" + "---|---|" * len(suites)
    rows = [head, rule]
    for mode in TABLE_MODES:
        cells = []
        for suite in suites:
            s = summaries[suite].get(mode)
            cells += ["-", "-"] if s is None else [f"{s['tau']:.2f}", f"**{s['speedup']:.2f}x**" if mode == "async" else f"{s['speedup']:.2f}x"]
        rows.append(f"| {MODE_NAMES[mode]} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def machine() -> str:
    cpu = f"{os.cpu_count()} CPU cores"
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ", no GPU"
    return f"{cpu}{gpu}, torch {torch.__version__}, {platform.system()} {platform.machine()}"


def _lengths(counts: dict | None) -> str:
    return " ".join(f"{k}:{n}" for k, n in counts.items()) if counts else "all 16 (fixed)"


def extra_sections(extras: dict[str, tuple], costs: dict[str, dict[int, float]]) -> list[str]:
    """Markdown: pass costs, the agreement table per dtype, and verification length auto against 16."""
    lines = ["## Pass costs", "", "t_v(k) / t_v(1): a k-row target pass against a 1-token step, 256 cached tokens, this "
             "machine (the tables `--draft-length auto` reads; `d3d cost --dtype ...` prints them).", "",
             "| k | " + " | ".join(costs) + " |", "|---|" + "---|" * len(costs)]
    base = {dt: t[1] for dt, t in costs.items()}
    for k in (1, 2, 4, 8, 12, 16):
        lines.append(f"| {k} | " + " | ".join(f"{t[k] * 1e3:.1f} ms ({t[k] / base[dt]:.2f})" for dt, t in costs.items()) + " |")
    lines += ["", "## Greedy agreement and verification length", "",
              "Plain decoding against D3D sync on the first HumanEval prompts, 128 new tokens. A prompt whose output "
              "differs is a *near tie* when, at the first differing token, both tokens' float32 logits are within "
              "64 x eps(dtype) nats (0.5 in bfloat16) of the float32 maximum, else a *divergence* "
              "(a bug): `d3d/evaluation/agreement.py`, docs/design.md \"Precision and near ties\".", "",
              "| run | prompts | identical | near ties | divergences | tau | speedup | rows verified per round (k: rounds) |",
              "|---|---|---|---|---|---|---|---|"]
    for name, (bench, summary, _) in extras.items():
        s = summary["sync"]
        lines.append(f"| {EXTRA_BENCHES[name][0]} | {s['n_prompts']} | {s['identical_prompts']} | {s['near_ties']} | "
                     f"{s['divergences']} | {s['tau']:.2f} | {s['speedup']:.2f}x | {_lengths(s.get('draft_lengths'))} |")
    lines.append("")
    for name, (bench, _, table) in extras.items():
        lines += [f"<details><summary>{EXTRA_BENCHES[name][0]}</summary>", "", "```",
                  f"$ {command_of(bench)}" + ("  # with D3D_PRECISION_FIXES=0" if EXTRA_BENCHES[name][2] else ""),
                  table, "```", "", "</details>", ""]
    return lines


def render(cfg: ResultsConfig, tables: dict, sweep: tuple | None, stages: list[dict], plots: dict,
           extras: dict | None = None, costs: dict | None = None) -> str:
    lines = [
        "# Results",
        "",
        "<!-- Generated by `make results` (python -m d3d.evaluation.results); edits are overwritten. -->",
        "",
        f"Generated {datetime.date.today().isoformat()} on {machine()}. Target: SmolLM2-135M-Instruct "
        f"(the embedded GGUF, dequantized), dtype {cfg.dtype} (auto: bfloat16 on this CPU). Every ratio is measured side by side in one run: the "
        "modes of a table run back to back on each prompt, in an order rotated per prompt, and each speedup is "
        "plain decoding's total wall time over the mode's, prefill included. Greedy decoding throughout; "
        "`identical` says whether every output equals plain decoding's token for token.",
        "",
        "## Table 1: acceptance length and speedup",
        "",
        table1({suite: summary for suite, (_, summary, _) in tables.items()}),
        "",
    ]
    if "ar-drafter" not in table_modes(cfg):
        lines += [f"The AR-drafter rows are empty: no AR draft model at `{cfg.ar_drafter}` (train it with "
                  "`d3d train --config recipes/smollm2-ar.yaml`).", ""]
    for suite, (bench, summary, table) in tables.items():
        drafter = summary.get("sync", {}).get("drafter", "")
        lines += [f"### {suite_name(suite)}", "", f"Drafter: {drafter}", "", "```", f"$ {command_of(bench)}", table, "```", ""]
    if "timeline" in plots:
        lines += ["### One asynchronous generation", "",
                  "Every verification (target, top lane) and every drafter pass (bottom lane) of the last async "
                  "generation of the HumanEval run; green verifications used a successor branch (hit), red ones "
                  "drafted synchronously (miss).", "", f"![timeline]({plots['timeline']})", ""]
    if sweep is not None:
        bench, summary, table = sweep
        lines += ["## Budget sweep (Figure 3)", "",
                  "Async decoding at fixed budgets C (rejection positions covered) x F (alternatives per position); "
                  "N_async = B((C-1)F+2) rows per packed successor pass.", "",
                  f"![budget sweep]({plots['sweep']})", "", "```", f"$ {command_of(bench)}", table, "```", ""]
    if extras:
        lines += extra_sections(extras, costs or {})
    if stages:
        lines += ["## Pruning curve (Figure 2)", "",
                  f"From `{cfg.prune_log}`: each stage removes the layer whose removal costs least validation tau "
                  "(layer-choice dev set), recovery-trains with distillation, then measures tau on both dev sets and "
                  "the sync speedup on the selection dev set; the shipped drafter is the fastest stage.", "",
                  f"![pruning curve]({plots['pruning']})", "",
                  "| stage | layers | removed | tau before recovery | tau (layer dev) | tau (selection dev) | speedup |",
                  "|---|---|---|---|---|---|---|"]
        for s in stages:
            removed = "-" if s.get("removed") is None else s["removed"]
            before = "-" if s.get("tau_removed") is None else f"{s['tau_removed']:.3f}"
            speedup = f"{s['speedup']:.2f}x" if s.get("speedup") else "untimed"
            lines.append(f"| {s['stage']} | {s['layers']} | {removed} | {before} | {s['tau_layer_dev']:.3f} | "
                         f"{s['tau_select']:.3f} | {speedup} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def make_results(cfg: ResultsConfig) -> Path:
    """Run (or resume) every benchmark, draw the plots, write the page; returns its path."""
    images, page = Path(cfg.images), Path(cfg.page)
    tables = {suite: table_bench(cfg, suite) for suite in cfg.suites}
    plots = {}
    timeline_png = images / "timeline.png"
    if timeline_png.exists():
        plots["timeline"] = os.path.relpath(timeline_png, page.parent)
    sweep = sweep_bench(cfg) if cfg.sweep_limit else None
    if sweep is not None:
        plots["sweep"] = os.path.relpath(plot_sweep(sweep[1], images / "budget_sweep.png"), page.parent)
    stages = read_prune_log(Path(cfg.prune_log))
    if stages:
        plots["pruning"] = os.path.relpath(plot_pruning(stages, images / "pruning_curve.png"), page.parent)
    extras = {name: extra_bench(cfg, name) for name in EXTRA_BENCHES} if cfg.extra_limit else {}
    costs = pass_cost_tables() if extras and cfg.target is None else {}
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render(cfg, tables, sweep, stages, plots, extras, costs))
    return page


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m d3d.evaluation.results", description=__doc__.splitlines()[0])
    parser.add_argument("--drafter", default=None, help="D3D drafter (default: the shipped one)")
    parser.add_argument("--ar-drafter", default=ResultsConfig.ar_drafter, help="AR-drafter baseline directory")
    parser.add_argument("--prune-log", default=ResultsConfig.prune_log, help="d3d prune log for the pruning curve")
    parser.add_argument("--limit", type=int, default=None, help="prompts per suite in Table 1 (default: 40 HumanEval, 20 mixed)")
    parser.add_argument("--sweep-limit", type=int, default=ResultsConfig.sweep_limit, help="prompts in the sweep (0 = skip)")
    parser.add_argument("--max-new-tokens", type=int, default=ResultsConfig.max_new_tokens)
    parser.add_argument("--page", default=ResultsConfig.page, help="markdown file to write")
    parser.add_argument("--dtype", default=ResultsConfig.dtype, choices=["auto", "bfloat16", "float16", "float32"])
    parser.add_argument("--extra-limit", type=int, default=ResultsConfig.extra_limit,
                        help="HumanEval prompts of the agreement and verification-length runs (0 = skip)")
    parser.add_argument("--mixed-limit", type=int, default=20, help="prompts of the mixed suite in Table 1")
    args = parser.parse_args(argv)
    cfg = ResultsConfig(drafter=args.drafter, ar_drafter=args.ar_drafter, prune_log=args.prune_log, limit=args.limit,
                        sweep_limit=args.sweep_limit, max_new_tokens=args.max_new_tokens, page=args.page,
                        dtype=args.dtype, extra_limit=args.extra_limit,
                        suite_limits={"humaneval": 40, "mixed": args.mixed_limit})
    try:
        print(f"wrote {make_results(cfg)}")
    except D3DError as error:
        print(f"d3d results: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
