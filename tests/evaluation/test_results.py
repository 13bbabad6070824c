"""The results page (`make results`): sections run as commands, resumably, a failing command is
reported without stopping the others, `--only` / `--list`, and every section renders from its
output. No measurement runs here: a fake executor writes each command's output in the format the
real command prints (built with the real printers where they exist: the benchmark's summary, the
cost report, the load-test and soak tables, the data report)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from d3d.evaluation import results
from d3d.evaluation.bench_summary import summarize
from d3d.evaluation.pass_cost import report as cost_report
from d3d.evaluation.results import machine, main, make_results, short_machine
from d3d.evaluation.results_config import ResultsConfig
from d3d.evaluation.results_goals import _x
from d3d.evaluation.results_steps import Step, read_step, run_command, run_step
from d3d.evaluation.step_profile import OpTime, StepProfile
from d3d.serving.loadtest import PhaseResult, report as load_report
from d3d.serving.soak import Outcome, SoakConfig, SoakReport, print_table
from d3d.training.data import DataReport, format_report

TABLE_MODES = ("ar", "pld", "sync", "tree", "tree-drafter", "tree-lookup", "ar@float32", "ar@int8", "sync@int8", "tree@int8")


def printed(fn, *args) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return out.getvalue()


def record(seconds: float, tokens: list[int], rounds: int, **extra) -> dict:
    return {"new_tokens": len(tokens), "total_s": seconds, "rounds": rounds, "round_tokens": len(tokens), "draft_s": 0.0,
            "verify_s": seconds, "tokens": tokens} | extra


def bench_output(llamacpp: bool) -> str:
    """A speed-table run's output: the benchmark's own summary of two fake prompts."""
    tokens = list(range(20))
    seconds = {"ar": 2.0, "pld": 1.0, "sync": 1.6, "tree": 0.8, "tree-drafter": 1.0, "tree-lookup": 0.9,
               "ar@float32": 2.5, "ar@int8": 1.5, "sync@int8": 1.4, "tree@int8": 0.7, "llamacpp": 1.0}
    modes = TABLE_MODES + (("llamacpp",) if llamacpp else ())
    tree = {"tree_nodes": 30, "nodes_hist": {"15": 3}, "wins": {"drafter": 1, "lookup": 2}, "drafter_rounds": 3}
    rows = []
    for i in range(2):
        res = {}
        for m in modes:
            rounds = 20 if m.startswith("ar") or m == "llamacpp" else 8
            res[m] = record(seconds[m], tokens, rounds, **(tree if m.startswith("tree") else {}),
                            **({} if m.startswith("ar") or m == "llamacpp" else {"agreement": "identical"}))
        res["sync"]["agreement"] = "near_tie" if i else "identical"
        if "llamacpp" in res:
            res["llamacpp"]["tokens"] = tokens[:10] + [99] * 10
        rows.append({"results": res})
    summary = summarize(rows, modes, greedy=True, drafter="shipped drafter")
    return "mode table as printed\n" + json.dumps(summary) + "\n"


def prefill_output() -> str:
    summary = {"ar": {"score": 0.8, "speedup": 1.0, "ttft_speedup": 1.0, "decode_speedup": 1.0},
               "sync": {"score": 0.8, "speedup": 1.1, "ttft_speedup": 1.0, "decode_speedup": 1.1}}
    for keep in (0.1, 0.2, 0.3):
        for sel, score in (("probe", 0.75), ("lexical", 0.7), ("last", 0.3), ("random", 0.2)):
            summary[f"sync@keep{keep}@{sel}"] = {"score": score, "selector": sel, "speedup": 2.5, "ttft_speedup": 4.0,
                                                 "decode_speedup": 1.0, "kept_share": keep}
    return "prefill tables\n" + json.dumps(summary) + "\n"


def data_output(name: str) -> str:
    r = DataReport(prompts=32, written=32, rows=32, tokens=2048, seconds=10.0 if "b128" not in name else 5.0, overlaps=0)
    return format_report(r) + "\n" + json.dumps(r.as_dict()) + "\n"


def profile_output() -> str:
    ops = [OpTime("aten::mm", 7.0, 3.0, 0.6), OpTime("aten::add", 20.0, 1.0, 0.2)]
    profiles = [StepProfile(1, 256, 5.0, 270_000_000, 9_000_000, 55.8, ops), StepProfile(16, 256, 7.0, 270_000_000, 9_000_000, 39.9, ops)]
    return "tables\n" + json.dumps({"setting": "dtype bfloat16, weights dense", "profiles": [asdict(p) for p in profiles]}) + "\n"


def soak_output() -> str:
    rep = SoakReport([Outcome("greedy", "ok"), Outcome("disconnect", "disconnected")], 0, 300.0, 310.0, 0)
    return printed(print_table, rep, SoakConfig())


def load_output() -> str:
    phases = [PhaseResult(n, spec, 8, 0, 10.0, 512, (40.0 if spec else 41.0) * n, 0.2, 0.4, 0.03, 0.05, 1.2 if spec else 1.0)
              for n in (1, 2) for spec in (True, False)]
    return printed(lambda: print(json.dumps(load_report(phases))))


def demo_output() -> str:
    stats = {"mode": "sync", "new_tokens": 128, "total_s": 4.0, "tau": 1.3}
    ar = {"mode": "ar", "new_tokens": 128, "total_s": 5.0, "tau": 1.0}
    return ("def fib(n): ...\n---\ntarget SmolLM2 | dtype bfloat16\nmode sync | 128 tokens in 4.00 s\n"
            + json.dumps({"stats": stats, "ar": ar, "speedup": 1.25, "identical": True}) + "\n")


class FakeCommands:
    """Stands in for every command of the page: writes what the real command prints (and the
    block-attention script's files), counts the runs, and fails the steps it is told to."""

    def __init__(self, cfg: ResultsConfig, fail: dict[str, int] | None = None, llamacpp: bool = True) -> None:
        self.cfg, self.fail, self.llamacpp, self.ran = cfg, dict(fail or {}), llamacpp, []

    def __call__(self, step: Step, out: Path, log: Path) -> int:
        key = f"{out.parent.name}/{step.name}"
        self.ran.append(key)
        log.write_text(f"log of {key}\nTraceback: the last line of {key}\n")
        if key in self.fail:
            out.write_text("half an output")
            return self.fail.pop(key)
        out.write_text(self.output(out.parent.name, step))
        return 0

    def output(self, folder: str, step: Step) -> str:
        if folder == "data_tp":
            return data_output(step.name)
        if folder == "cost":
            if step.name.startswith("profile_"):
                return profile_output()
            costs = {1: 0.02, 2: 0.021, 16: 0.03, 64: 0.08} if "int8" not in step.name else {1: 0.015, 16: 0.028}
            out = io.StringIO()
            cost_report(costs, out)
            return out.getvalue()
        if folder == "block_attention":
            runs = Path(step.env["OUT"])
            for name, tau in (("bidirectional", 1.30), ("causal", 1.26)):
                (runs / name).mkdir(parents=True, exist_ok=True)
                (runs / name / "offline.json").write_text(json.dumps({"tau_sim": tau, "mean_accepted": tau - 1,
                                                                      "alpha": [0.3, 0.1, 0.05, 0.0]}))
            return "| block attention | steps |\n|---|---|\n| bidirectional | 40 |\n| causal | 41 |\n"
        return {"table": lambda: bench_output(self.llamacpp), "load": load_output, "soak": soak_output,
                "prefill": prefill_output, "demo": demo_output}[folder]()


@pytest.fixture
def cfg(tmp_path) -> ResultsConfig:
    return ResultsConfig(runs_dir=str(tmp_path / "runs"), page=str(tmp_path / "docs/results.md"), images=str(tmp_path / "img"),
                         table_modes=TABLE_MODES, prune_log=str(tmp_path / "none.jsonl"))


def test_every_section_renders_its_table_and_the_goals_from_the_outputs(cfg):
    fake = FakeCommands(cfg)
    text = make_results(cfg, execute=fake).read_text()
    assert len(fake.ran) == 6 + 8 + 2 + 1 + 1 + 1 + 1 + 1  # every command of every default section, once
    assert "## Goals" in text and text.index("## Goals") < text.index("## Data generation throughput")
    assert "| float32 | 128 | 32 | 2048 | 5.0 | **409.6** |" in text  # data: tokens/s per (dtype, batch)
    assert "| t_1 (ms) | 20.00 | 20.00 | 15.00 | 20.00 | 15.00 |" in text and "| 16 | 1.50 | 1.50 | 1.87 | 1.50 | 1.87 |" in text
    assert "| k | bfloat16+packed | bfloat16 | bfloat16+int8 | float32 | float32+int8 |" in text
    assert "| bfloat16 | 1 | 5.00 | 270.0 | 9.0 | 55.8 |" in text and "| `aten::mm` | 3.000 (60%) | 3.000 (60%) |" in text
    # the speed table: tokens/s, ratios against ar and against the fastest plain decoding, agreement (rule 3)
    assert "| `tree` | 2.50 | 25.0 | 2.50x | 1.88x | identical |" in text
    assert "| `sync` | 2.50 | 12.5 | 1.25x | 0.94x | 1 identical, 1 near ties, **0 divergences** |" in text
    assert "| `ar@int8` | 1.00 | 13.3 | 1.33x | 1.00x | ~2/2 as ar, shared prefix 100% |" in text
    assert "| `llamacpp` | 1.00 | 20.0 | 2.00x | 1.50x | ~0/2 as ar, shared prefix 50% |" in text
    assert "| `tree-lookup` | 3.8 | 1.50 | drafter:2 lookup:4 | 38% |" in text  # the tree's shape
    assert "| 2 | 80.0 | 82.0 | 0.98x | 200 / 200 | 30.0 / 30.0 | 1.20 | 0 / 0 |" in text  # load test
    assert "| hung" in text and '"drain_exit_status": 0' in text  # the soak's own table and JSON line
    assert "| causal | 41 |" in text and '"causal": {"tau_sim": 1.26' in text  # block attention
    assert "| `sync@keep0.2@probe` | 0.2 | probe | 0.750 | 94% | 4.00x | 1.00x | 2.50x | 0.20 |" in text
    assert text.index("| `ar` | full |") < text.index("| `sync` | full |") < text.index("| `sync@keep0.1@probe`") \
        < text.index("| `sync@keep0.3@random`")
    assert "| 1.30 | 32.0 | 25.6 | 1.25x | yes |" in text and "def fib" not in text  # demo: stats, not the answer
    assert "BUDGET_CPU_S=300 OUT=" in text and "d3d bench --suite humaneval --limit 40 --modes ar,pld,sync,tree" in text
    # goals, read from the outputs
    assert "| HumanEval: sync >= 1.8x, ahead of prompt lookup | sync 1.25x, prompt lookup 2.00x | **missed** |" in text
    assert "| `make demo` above 1.2x | 1.25x | met |" in text
    assert "| rho 0.2, probe: score >= 90% of the full prompt's | 0.750 of 0.800 (94%) | met |" in text
    assert "| rho 0.2: probe beats every naive selector (last, random, lexical) on score | probe 0.750; last 0.300, " \
           "random 0.200, lexical 0.700 | met |" in text
    assert "| rho 0.2, the default selector (lexical): score >= 90% of the full prompt's | 0.700 of 0.800 (87%) | **missed** |" in text
    assert "causal 1.260, bidirectional 1.300 (-3.1%) | met |" in text
    assert "| load test: speculation on >= 0.97x of off at every concurrency | N=1: 0.98x, N=2: 0.98x | met |" in text
    assert "| speed table: no output diverges from plain decoding | 0 divergences, 2 near ties (rule 4) | met |" in text
    assert "| tree ahead of prompt lookup and sync on both suites |" in text and "| HumanEval: tree tau >= 2.5 and >= 1.8x | tau 2.50, 2.50x | met |" in text
    tree_row = next(line for line in text.splitlines() if line.startswith("| tree ahead of prompt lookup"))
    assert "humaneval: tree 2.50x, sync 1.25x, pld 2.00x (per token 2.50x, 1.25x, 2.00x)" in tree_row, tree_row
    assert "| moonshot: best d3d mode >= 1.5x llama.cpp on HumanEval | `tree@int8` 28.6 tokens/s = 1.43x llama.cpp | **missed** |" in text
    assert "| alpha_1 >= 0.6 (offline, dev) | 0." in text  # the shipped drafter's acceptance.json


def test_a_failing_command_is_reported_and_the_rest_still_run_then_it_is_retried(cfg):
    fake = FakeCommands(cfg, fail={"cost/bfloat16_dense": 3, "table/humaneval": 1})
    text = make_results(cfg, execute=fake).read_text()
    assert "table/mixed" in fake.ran and "demo/demo" in fake.ran and "cost/float32_dense" in fake.ran
    assert "**`bfloat16_dense` failed** (exit status 3): `d3d cost --dtype bfloat16" in text
    assert "Traceback: the last line of cost/bfloat16_dense" in text  # the end of its log
    assert "| [cost](#pass-costs-and-the-step-profile-d3d-cost) | 7/8 | failed |" in text
    assert "| HumanEval: sync >= 1.8x, ahead of prompt lookup | not measured | - |" in text
    assert not (Path(cfg.runs_dir) / "cost" / "bfloat16_dense.out").exists()  # half an output is not a measurement
    fake.ran.clear()
    text = make_results(cfg, execute=fake).read_text()
    assert sorted(fake.ran) == ["cost/bfloat16_dense", "table/humaneval"]  # only the failed ones run again
    assert "failed** (" not in text and "| [cost](#pass-costs-and-the-step-profile-d3d-cost) | 8/8 | measured |" in text


def test_measured_outputs_are_not_run_again_and_only_runs_some_sections(cfg):
    fake = FakeCommands(cfg)
    make_results(cfg, only="demo,cost", execute=fake)
    assert {k.split("/")[0] for k in fake.ran} == {"demo", "cost"}
    text = Path(cfg.page).read_text()
    assert "| [table](#speed-table-humaneval-and-mixed) | 0/2 | not measured yet | - | - |" in text  # the page still shows every section
    meta = json.loads((Path(cfg.runs_dir) / "demo" / "demo.step.json").read_text())
    assert meta["machine"] == machine() and " CPU cores (" in meta["machine"]
    # which commit and which machine measured each section (the page is rendered later, perhaps elsewhere)
    assert f"| [demo](#make-demo) | 1/1 | measured | 0 min | {meta['commit']} | {short_machine(meta)} |" in text
    assert "`humaneval` is not measured yet: `python -m d3d.evaluation.results --only table`" in text
    before = Path(cfg.page).read_text()
    fake.ran.clear()
    make_results(cfg, only="demo,cost", execute=fake)
    assert fake.ran == [] and Path(cfg.page).read_text() == before
    (Path(cfg.runs_dir) / "demo" / "demo.out").unlink()
    make_results(cfg, only="demo", execute=fake)
    assert fake.ran == ["demo/demo"]


def test_kept_measurements_render_a_fresh_clone_and_fresh_measures_a_section_again(cfg, tmp_path):
    cfg.keep_dir = str(tmp_path / "kept")
    fake = FakeCommands(cfg)
    before = make_results(cfg, execute=fake).read_text()
    kept = {p.relative_to(cfg.keep_dir).as_posix() for p in Path(cfg.keep_dir).rglob("*") if p.is_file()}
    assert "table/humaneval.out" in kept and "table/humaneval.step.json" in kept and "demo/demo.out" in kept
    assert "block_attention/runs/causal/offline.json" in kept  # the block-attention table reads these
    assert not any(k.endswith((".log", ".partial")) for k in kept)  # logs and data stay on the machine
    shutil.rmtree(cfg.runs_dir)  # a fresh clone: only the kept files
    fake.ran.clear()
    assert make_results(cfg, execute=fake).read_text() == before and fake.ran == []  # nothing measured again
    make_results(cfg, only="demo", fresh="table", execute=fake)
    assert sorted(fake.ran) == ["table/humaneval", "table/mixed"]  # --fresh runs the section even outside --only
    fresh_meta = json.loads((Path(cfg.keep_dir) / "table" / "mixed.step.json").read_text())
    assert fresh_meta == json.loads((Path(cfg.runs_dir) / "table" / "mixed.step.json").read_text())  # kept again


def test_list_render_only_and_bad_section_names(cfg, capsys, monkeypatch):
    monkeypatch.setattr(results, "ResultsConfig", lambda **kw: ResultsConfig(**kw | {"table_modes": TABLE_MODES}))
    run_step(Step("demo", ["d3d", "generate"]), Path(cfg.runs_dir) / "demo", FakeCommands(cfg))
    assert main(["--list", "--runs-dir", cfg.runs_dir]) == 0
    listed = capsys.readouterr().out
    assert "sweep (optional)" in listed and "[measured] d3d generate" in listed and "[pending] d3d cost --dtype bfloat16" in listed
    assert main(["--render-only", "--runs-dir", cfg.runs_dir, "--page", cfg.page]) == 0
    assert "| `make demo` above 1.2x | 1.25x | met |" in Path(cfg.page).read_text()
    capsys.readouterr()
    assert main(["--only", "cost,nope", "--runs-dir", cfg.runs_dir]) == 2
    err = capsys.readouterr().err
    assert "unknown section 'nope'" in err and err.count("\n") == 1


def test_optional_sections_run_only_when_asked(cfg, tmp_path):
    stages = [{"kind": "stage", "stage": 0, "layers": [0, 1, 2], "tau_layer_dev": 2.0, "tau_select": 1.9, "speedup": 1.1},
              {"kind": "stage", "stage": 1, "layers": [0, 2], "removed": 1, "tau_removed": 1.8, "tau_layer_dev": 1.95,
               "tau_select": 1.85}]
    Path(cfg.prune_log).write_text("".join(json.dumps(s) + "\n" for s in stages))
    fake = FakeCommands(cfg)
    text = make_results(cfg, only="pruning", execute=fake).read_text()
    assert fake.ran == [] and "| 1 | [0, 2] | 1 | 1.800 | 1.950 | 1.850 | untimed |" in text
    assert (tmp_path / "img" / "pruning_curve.png").stat().st_size > 0
    assert "Budget sweep" not in text  # optional and never run: not on the page


def test_the_real_executor_keeps_stdout_and_the_log(tmp_path):
    step = Step("hello", ["python", "-c", "import sys; print('table'); print('{\"x\": 1}'); print('progress', file=sys.stderr)"])
    o = run_step(step, tmp_path, run_command, "abc123", "2 CPU cores (Some CPU), no GPU, torch 2.0, Linux x86_64")
    assert o.summary == {"x": 1} and o.printed == "table" and o.meta["commit"] == "abc123"
    assert short_machine(read_step(step, tmp_path).meta) == "2 CPU cores (Some CPU), no GPU"  # kept with the output
    assert short_machine({}) == "not recorded"
    assert (tmp_path / "hello.log").read_text() == "progress\n"
    bad = run_step(Step("bad", ["python", "-c", "raise SystemExit(4)"]), tmp_path, run_command)
    assert not bad.measured and bad.failure["status"] == 4 and not (tmp_path / "bad.out").exists()


def test_the_dev_goals_read_the_dev_sets_own_numbers_from_a_pooled_acceptance_table():
    from d3d.evaluation.results_goals import _on_dev

    class Table:
        def __init__(self, record: dict) -> None:
            self.record = record

        def acceptance(self) -> dict:
            return self.record

    dev_only = {"tau_sim": 2.1, "alpha": [0.65]}
    pooled = {"tau_sim": 2.6, "alpha": [0.75], "by_data": {
        "data/smollm2/dev_tasks.jsonl": {"tau_sim": 3.2, "alpha": [0.83]},
        "data/smollm2/dev.jsonl": {"tau_sim": 2.1, "alpha": [0.65]}}}
    assert _on_dev(Table(dev_only)) == dev_only
    assert _on_dev(Table(pooled)) == {"tau_sim": 2.1, "alpha": [0.65]}


def test_a_ratio_just_below_its_goal_is_not_shown_rounded_up_to_it():
    assert (_x(1.7988, 1.8), _x(1.8012, 1.8), _x(1.7488, 1.8), _x(1.7988)) == ("1.799x", "1.80x", "1.75x", "1.80x")
    assert _x(1.2951, 1.3) == "1.295x" and _x(1.3, 1.3) == "1.30x"


def test_the_recorded_commit_says_when_the_package_differs_from_it(tmp_path, monkeypatch):
    """A page measured with an uncommitted drafter or code must not name the commit as if it held them."""
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "d3d").mkdir()
    (tmp_path / "d3d" / "weights.bin").write_text("a")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "results.md").write_text("page")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    monkeypatch.chdir(tmp_path)
    clean = results.git_commit()
    assert clean != "unknown" and not clean.endswith("+changes")
    (tmp_path / "docs" / "results.md").write_text("page, rewritten while measuring")
    assert results.git_commit() == clean  # the page itself changes during a run
    (tmp_path / "d3d" / "weights.bin").write_text("b")
    assert results.git_commit() == clean + "+changes"
