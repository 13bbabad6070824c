"""The sections of the results page: what each runs (its steps) and how its outputs read (its markdown).

In page order, the cheap ones and the ones that fill caches first:

    data-throughput  `d3d data`: response tokens/s per dtype and batch size (issue 16)
    cost             `d3d cost`: t_1 and t_v(k)/t_1 per build, and `--profile`: per-op time, GB/s (issue 21)
    table            `d3d bench` on HumanEval and mixed: plain, prompt lookup, sync, tree, other builds,
                     llama.cpp; tokens/s, ratios, speed against the fastest plain decoding, agreement
    load             `d3d loadtest`: concurrent clients, speculation on against off (issue 19)
    soak             `python -m d3d.serving.soak`: faults, disconnects, SIGTERM under load (issue 19)
    block-attention  `scripts/compare_block_attention.sh`: causal against bidirectional drafters (issue 18)
    prefill          `d3d bench --suite longctx2`: every chunk selector at each retention (issue 17)
    demo             `make demo`'s command, with its JSON line

A section's `steps(cfg)` lists its commands (`results_steps.Step`); its `render(cfg, outputs)`
turns the measured outputs (by step name) into markdown: the commands, a table read from the
commands' JSON lines, the printed tables and the JSON lines themselves. Rendering reads files
only; nothing here runs a command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from d3d.evaluation.llamacpp import MISSING as LLAMACPP_MISSING
from d3d.evaluation.prefill_metrics import mode_keep
from d3d.evaluation.results_config import ResultsConfig
from d3d.evaluation.results_steps import Step, StepOutput

PROFILE_TOP_OPS = 8  # ops per build in the profile table


@dataclass
class Section:
    """One measurement of the page."""

    name: str  # what --only names
    folder: str  # its outputs: <runs_dir>/<folder>/
    title: str  # the page's heading
    steps: Callable[[ResultsConfig], list[Step]]  # its commands, in order
    render: Callable[[ResultsConfig, dict[str, StepOutput]], list[str]]  # markdown from its outputs, by step name
    default: bool = True  # run by a plain `make results` (False: only with --optional or --only)


# ---------------------------------------------------------------------------------------------
# Markdown helpers


def fmt(value, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


def commands_block(outputs: list[StepOutput]) -> list[str]:
    return ["```bash", *(o.command for o in outputs), "```"]


def printed_block(outputs: list[StepOutput], summary: str = "printed output") -> list[str]:
    """Each command and what it printed, folded."""
    body = []
    for o in outputs:
        body += [f"$ {o.command}", o.printed, ""]
    return ["<details><summary>" + summary + "</summary>", "", "```", *body[:-1], "```", "", "</details>"]


def json_block(lines: list[str]) -> list[str]:
    return ["<details><summary>JSON summary line" + ("s" if len(lines) > 1 else "") + "</summary>", "", "```json",
            *lines, "```", "", "</details>"]


def measured(outputs: dict[str, StepOutput]) -> list[StepOutput]:
    return [o for o in outputs.values() if o.measured]


def standard(outputs: dict[str, StepOutput], table: list[str]) -> list[str]:
    """Commands, the section's own table, the printed outputs and the JSON lines."""
    done = measured(outputs)
    if not done:
        return []
    lines = commands_block(done) + [""] + (table + [""] if table else []) + printed_block(done) + [""]
    jsons = [o.json_line for o in done if o.json_line]
    return lines + (json_block(jsons) + [""] if jsons else [])


def _model_args(cfg: ResultsConfig, drafter: bool = True) -> list[str]:
    args = ["--target", cfg.target] if cfg.target else []
    return args + (["--drafter", cfg.drafter] if cfg.drafter and drafter else [])


def out_path(cfg: ResultsConfig, folder: str, name: str) -> str:
    return str(Path(cfg.runs_dir) / folder / name)


# ---------------------------------------------------------------------------------------------
# a. data throughput


def data_steps(cfg: ResultsConfig) -> list[Step]:
    steps = []
    for dtype in cfg.data_dtypes:
        for batch in cfg.data_batches:
            data = out_path(cfg, "data_tp", f"data/{dtype}_b{batch}.jsonl")
            cmd = ["d3d", "data", "--prompts", cfg.data_prompts, "--out", data, "--greedy", "--max-new-tokens",
                   str(cfg.data_tokens), "--batch-size", str(batch), "--limit", str(batch), "--dtype", dtype,
                   *_model_args(cfg, drafter=False)]
            steps.append(Step(f"{dtype}_b{batch}", cmd, fresh=(data, data.removesuffix(".jsonl") + ".meta.json")))
    return steps


def data_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    rows = []
    for name, o in outputs.items():
        s = o.summary
        if s is not None:
            dtype, batch = name.rsplit("_b", 1)
            rows.append([dtype, batch, str(s["written"]), str(s["tokens"]), fmt(s["seconds"], ".1f"),
                         f"**{s['tokens_per_s']:.1f}**"])
    intro = [f"`d3d data` answering one batch of `{cfg.data_prompts}` (greedy, {cfg.data_tokens} new tokens), "
             "one run per dtype and batch size; tokens/s counts response tokens over the answering wall time.", ""]
    return intro + standard(outputs, md_table(["dtype", "batch", "rows", "tokens", "seconds", "tokens/s"], rows))


# ---------------------------------------------------------------------------------------------
# b. pass costs and the step profile


def _build(dtype: str, weights: str) -> str:
    return dtype if weights == "dense" else f"{dtype}+{weights}"


def cost_steps(cfg: ResultsConfig) -> list[Step]:
    steps = []
    for dtype, weights in cfg.cost_builds:
        extra = ["--weights", weights]  # always said: the default (auto) is packed where that runs
        steps.append(Step(f"{dtype}_{weights}", ["d3d", "cost", "--dtype", dtype, "--sizes", cfg.cost_sizes, *extra,
                                                 *_model_args(cfg, drafter=False)]))
    for dtype, weights in cfg.profile_builds:
        extra = ["--weights", weights]
        steps.append(Step(f"profile_{dtype}_{weights}", ["d3d", "cost", "--profile", "--dtype", dtype, *extra,
                                                         *_model_args(cfg, drafter=False)]))
    return steps


def cost_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    tables = {_build(*n.split("_", 1)): o.summary for n, o in outputs.items() if not n.startswith("profile_") and o.summary}
    profiles = {_build(*n.removeprefix("profile_").split("_", 1)): o.summary for n, o in outputs.items()
                if n.startswith("profile_") and o.summary}
    lines = ["t_v(k)/t_1: a k-row target pass against a one-token step after 256 cached tokens (median of 20, "
             "sizes interleaved); the first row is t_1 itself.", ""]
    if tables:
        sizes = sorted({int(k) for t in tables.values() for k in t}, key=int)
        rows = [["t_1 (ms)", *(fmt(t.get("1", {}).get("ms"), ".2f") for t in tables.values())]]
        rows += [[str(k), *(fmt(t.get(str(k), {}).get("ratio"), ".2f") for t in tables.values())] for k in sizes if k != 1]
        lines += md_table(["k", *tables], rows) + [""]
    if profiles:
        lines += ["`d3d cost --profile`: one pass per size, unprofiled wall time, bytes read (weights + KV cache) "
                  "and the rate they imply; then the ops with the most self time.", ""]
        lines += md_table(["build", "rows", "ms", "weights MB", "KV MB", "GB/s"], [
            [b, str(p["rows"]), fmt(p["wall_ms"]), fmt(p["weight_bytes"] / 1e6, ".1f"), fmt(p["kv_bytes"] / 1e6, ".1f"),
             fmt(p["gb_per_s"], ".1f")] for b, s in profiles.items() for p in s["profiles"]]) + [""]
        for build, s in profiles.items():
            lines += [f"Top ops, {build} ({s['setting']}):", ""] + profile_ops_table(s["profiles"]) + [""]
    return lines + standard(outputs, [])


def profile_ops_table(profiles: list[dict]) -> list[str]:
    """The first profile's top ops, with their ms and share in every profiled size."""
    names = [op["name"] for op in profiles[0]["ops"][:PROFILE_TOP_OPS]]
    by_size = [{op["name"]: op for op in p["ops"]} for p in profiles]
    rows = [[f"`{n}`", *(f"{fmt(ops.get(n, {}).get('ms'), '.3f')} ({fmt(ops.get(n, {}).get('share', 0) * 100, '.0f')}%)"
                         for ops in by_size)] for n in names]
    return md_table(["op", *(f"{p['rows']}-row ms (share)" for p in profiles)], rows)


# ---------------------------------------------------------------------------------------------
# c. the speed table


def llamacpp_importable() -> bool:
    """Whether `import llama_cpp` works, asked of a child process (a bad build may crash on load)."""
    probe = subprocess.run([sys.executable, "-c", "import llama_cpp"], capture_output=True)
    return probe.returncode == 0


def table_modes(cfg: ResultsConfig, llamacpp: bool | None = None) -> tuple[str, ...]:
    """The table's modes; llamacpp only where it imports."""
    keep = llamacpp_importable() if llamacpp is None and "llamacpp" in cfg.table_modes else llamacpp
    return tuple(m for m in cfg.table_modes if m != "llamacpp" or keep)


def table_steps(cfg: ResultsConfig) -> list[Step]:
    modes, by_suite = table_modes(cfg), dict(cfg.suite_modes)
    return [Step(suite, ["d3d", "bench", "--suite", suite, "--limit", str(limit), "--modes",
                         ",".join(m for m in by_suite.get(suite, cfg.table_modes) if m in modes or m not in cfg.table_modes),
                         "--max-new-tokens", str(cfg.max_new_tokens), "--dtype", cfg.dtype,
                         "--out", out_path(cfg, "table", f"{suite}.jsonl"), *_model_args(cfg)])
            for suite, limit in cfg.table_suites]


def agreement_text(mode: str, s: dict) -> str:
    """What a mode's outputs are against its reference (rule 3 of `agreement.py`; `variants.py`)."""
    if mode == "ar":
        return "reference"
    if "agreement_with_ar" in s:
        a = s["agreement_with_ar"]
        return f"~{a['identical_prompts']}/{s['n_prompts']} as ar, shared prefix {fmt(a['shared_prefix'], '.0%')}"
    if s.get("identical") is None:
        return "-"
    if s["identical"]:
        return "identical"
    return f"{s['identical_prompts']} identical, {s['near_ties']} near ties, **{s['divergences']} divergences**"


def speed_table(summary: dict) -> list[str]:
    rows = []
    for mode, s in summary.items():
        rows.append([f"`{mode}`", fmt(s.get("tau")), fmt(s.get("tokens_per_s"), ".1f"), fmt(s.get("speedup"), ".2f", "x"),
                     fmt(s.get("speedup_vs_fastest_plain"), ".2f", "x"), agreement_text(mode, s),
                     fmt(s.get("mean_td_ms", s.get("mean_draft_ms")), ".1f"), fmt(s.get("mean_verify_ms"), ".1f")])
    return md_table(["mode", "tau", "tokens/s", "speedup vs ar", "vs fastest plain", "output against its reference",
                     "t_d ms", "t_v ms"], rows)


def tree_table(summary: dict) -> list[str]:
    rows = [[f"`{m}`", fmt(s["mean_nodes"], ".1f"), fmt(s["mean_accepted_depth"]),
             " ".join(f"{k}:{n}" for k, n in s.get("wins", {}).items()) or "-", fmt(s.get("drafter_share"), ".0%")]
            for m, s in summary.items() if "mean_nodes" in s]
    return md_table(["tree mode", "nodes per round", "accepted depth", "accepted path from (branch:rounds)",
                     "rounds with a drafter pass"], rows) if rows else []


def table_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    lines = ["Every mode runs on the same prompts, back to back, in an order rotated per prompt; greedy. `speedup "
             "vs ar` is plain decoding's total wall time over the mode's (prefill included); `vs fastest plain` is "
             "the mode's tokens/s over the fastest plain decoding of the run (`ar`, `ar@float32` or `ar@int8`). A "
             "mode on another build (`sync@int8`, `tree@int8`) must equal plain decoding of that build; plain decoding "
             "on another build and llama.cpp are compared with `ar` as agreement only. `ar` runs the default "
             "weights (`--weights auto`: packed bfloat16 where that runs, `docs/runtime.md`); `ar@dense` is the same "
             "target unpacked, bit for bit the same logits, so it must be identical. Outputs that differ are "
             "judged by agreement rule 4 (`agreement.py`): a near tie is replayed in each run's own dtype, shapes "
             "and thread count, a divergence is a bug.", ""]
    for name, o in outputs.items():
        s = o.summary
        if s is None:
            continue
        fastest = next(iter(s.values())).get("fastest_plain")
        lines += [f"### {name}", "", f"Fastest plain decoding of the run: `{fastest}` at "
                  f"{fmt(s.get(fastest, {}).get('tokens_per_s'), '.1f')} tokens/s.", ""] + speed_table(s) + [""]
        tree = tree_table(s)
        lines += tree + [""] if tree else []
        if "llamacpp" not in s:
            lines += [f"llama.cpp is absent from this run: {LLAMACPP_MISSING}.", ""]
        drafter = s.get("sync", {}).get("drafter")
        lines += [f"Drafter: {drafter}", ""] if drafter else []
    return lines + standard(outputs, [])


# ---------------------------------------------------------------------------------------------
# d. load test, e. soak


def load_steps(cfg: ResultsConfig) -> list[Step]:
    return [Step("loadtest", ["d3d", "loadtest", "--dtype", cfg.dtype, "--concurrency", cfg.load_concurrency,
                              "--requests", str(cfg.load_requests), "--max-tokens", str(cfg.load_tokens), *_model_args(cfg)])]


def load_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    s = outputs["loadtest"].summary or {}
    rows = []
    for n, e in s.items():
        on, off = e.get("on", {}), e.get("off", {})
        rows.append([n, fmt(on.get("tokens_per_s"), ".1f"), fmt(off.get("tokens_per_s"), ".1f"), fmt(e.get("speedup"), ".2f", "x"),
                     f"{fmt(on.get('ttft_p50_s', 0) * 1e3, '.0f')} / {fmt(off.get('ttft_p50_s', 0) * 1e3, '.0f')}",
                     f"{fmt(on.get('itl_p50_s', 0) * 1e3, '.1f')} / {fmt(off.get('itl_p50_s', 0) * 1e3, '.1f')}",
                     fmt(on.get("tau")), f"{on.get('errors', '-')} / {off.get('errors', '-')}"])
    head = ["clients", "tokens/s on", "tokens/s off", "on / off", "TTFT p50 ms on / off", "ITL p50 ms on / off",
            "tau on", "errors on / off"]
    intro = [f"`d3d serve` ({cfg.dtype}) under N concurrent streaming clients, speculation on and off in turn against "
             "the same server process.", ""]
    return intro + standard(outputs, md_table(head, rows) if rows else [])


def soak_steps(cfg: ResultsConfig) -> list[Step]:
    log = out_path(cfg, "soak", "server.log")
    return [Step("soak", ["python", "-m", "d3d.serving.soak", "--dtype", cfg.soak_dtype, "--log", log, *_model_args(cfg)],
                 ok_status=(0, 1))]  # 1: a check failed; the table says which


def soak_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    o = outputs["soak"]
    table = [line for line in o.printed.splitlines() if line.startswith("|")]
    intro = [f"The fault and soak test of `d3d serve` on the embedded model ({cfg.soak_dtype}): many clients, "
             "disconnects, bad bodies, one SIGTERM under load (docs/serving.md).", ""]
    return intro + standard(outputs, table)


# ---------------------------------------------------------------------------------------------
# f. block attention


def block_runs(cfg: ResultsConfig) -> Path:
    return Path(cfg.runs_dir) / "block_attention" / "runs"


def block_steps(cfg: ResultsConfig) -> list[Step]:
    env = {"BUDGET_CPU_S": str(cfg.block_budget_cpu_s), "OUT": str(block_runs(cfg))}
    return [Step("compare", ["scripts/compare_block_attention.sh"], env=env)]


def block_summary(cfg: ResultsConfig) -> dict:
    """Each variant's offline acceptance (`d3d eval-drafter`'s JSON line, kept by the script)."""
    found = {}
    for path in sorted(block_runs(cfg).glob("*/offline.json")):
        r = json.loads(path.read_text())
        found[path.parent.name] = {"tau_sim": r["tau_sim"], "mean_accepted": r["mean_accepted"], "alpha_1_3": r["alpha"][:3]}
    return found


def block_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    o = outputs["compare"]
    if not o.measured:
        return []
    table = [line for line in o.printed.splitlines() if line.startswith("|")]
    intro = [f"Two drafters from the same start, data and settings, trained for {cfg.block_budget_cpu_s} CPU seconds "
             "each, differing only in `--block-attention`; offline acceptance on the dev rows (docs/training.md).", ""]
    return intro + commands_block([o]) + [""] + table + [""] + json_block([json.dumps(block_summary(cfg))]) + [""]


# ---------------------------------------------------------------------------------------------
# g. selective prefill, h. demo


def prefill_steps(cfg: ResultsConfig) -> list[Step]:
    return [Step("longctx2", ["d3d", "bench", "--suite", "longctx2", "--limit", str(cfg.prefill_limit), "--modes", "sync",
                              "--prefill-keep", cfg.prefill_keeps, "--prefill-select", cfg.prefill_selectors,
                              "--prefill-layers", cfg.prefill_layers, "--max-new-tokens", str(cfg.prefill_tokens),
                              "--dtype", cfg.dtype, "--out", out_path(cfg, "prefill", "longctx2.jsonl"), *_model_args(cfg)])]


def prefill_rows(summary: dict) -> list[list[str]]:
    full = summary.get("ar", {}).get("score")
    rows = []
    order = lambda ms: (mode_keep(ms[0]) is not None, mode_keep(ms[0]) or 0.0)  # noqa: E731 (full prompt first, then by rho)
    for mode, s in sorted(summary.items(), key=order):
        keep = mode_keep(mode)
        share = fmt(s["score"] / full, ".0%") if full and s.get("score") is not None else "-"
        rows.append([f"`{mode}`", "full" if keep is None else str(keep), s.get("selector", "-") if keep else "-",
                     fmt(s.get("score"), ".3f"), share, fmt(s.get("ttft_speedup"), ".2f", "x"),
                     fmt(s.get("decode_speedup"), ".2f", "x"), fmt(s.get("speedup"), ".2f", "x"), fmt(s.get("kept_share"), ".2f")])
    return rows


def prefill_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    s = outputs["longctx2"].summary or {}
    head = ["mode", "rho", "selector", "score", "of full", "TTFT speedup", "decode speedup", "end to end", "kept"]
    intro = [f"Selective prefill on the first {cfg.prefill_limit} `longctx2` prompts: every chunk selector at "
             f"rho {cfg.prefill_keeps.replace(',', ' / ')}, in one run beside the full prompt (`ar`, `sync`); every "
             "speedup is against full-prompt plain decoding, and TTFT includes each selector's scoring (docs/prefill.md).", ""]
    return intro + standard(outputs, md_table(head, prefill_rows(s)) if s else [])


def demo_steps(cfg: ResultsConfig) -> list[Step]:
    return [Step("demo", ["d3d", "generate", "--prompt", cfg.demo_prompt, "--max-new-tokens", str(cfg.max_new_tokens),
                          "--compare", "--json", *_model_args(cfg)])]


def demo_render(cfg: ResultsConfig, outputs: dict[str, StepOutput]) -> list[str]:
    o = outputs["demo"]
    s = o.summary
    if s is None:
        return []
    stats, ar = s["stats"], s.get("ar", {})
    rate = lambda d: d["new_tokens"] / d["total_s"] if d.get("total_s") else None  # noqa: E731
    row = [fmt(stats.get("tau")), fmt(rate(stats), ".1f"), fmt(rate(ar), ".1f") if ar else "-", fmt(s.get("speedup"), ".2f", "x"),
           {True: "yes", False: "NO", None: "-"}[s.get("identical")]]
    tail = o.printed.split("\n---\n", 1)[-1]
    mode = stats.get("mode", "sync")
    return ([f"`make demo`'s command (with `--json`): one prompt, D3D {mode} (`d3d generate`'s default mode) against "
             "plain decoding.", ""] + commands_block([o])
            + [""] + md_table(["tau", f"{mode} tokens/s", "plain tokens/s", "speedup", "identical"], [row])
            + ["", "```", tail, "```", ""] + json_block([o.json_line]) + [""])


SECTIONS = [
    Section("data-throughput", "data_tp", "Data generation throughput (`d3d data`)", data_steps, data_render),
    Section("cost", "cost", "Pass costs and the step profile (`d3d cost`)", cost_steps, cost_render),
    Section("table", "table", "Speed table: HumanEval and mixed", table_steps, table_render),
    Section("load", "load", "Load test (`d3d loadtest`)", load_steps, load_render),
    Section("soak", "soak", "Fault and soak test of the server", soak_steps, soak_render),
    Section("block-attention", "block_attention", "Causal against bidirectional block attention", block_steps, block_render),
    Section("prefill", "prefill", "Selective prefill: the chunk selectors", prefill_steps, prefill_render),
    Section("demo", "demo", "`make demo`", demo_steps, demo_render),
]
