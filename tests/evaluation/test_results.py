"""The results page: every benchmark runs (resumably), the plots exist, the page holds the tables."""

from __future__ import annotations

import json

from d3d.evaluation.results import EXTRA_BENCHES, MODE_NAMES, TABLE_MODES, ResultsConfig, make_results, read_prune_log
from d3d.jsonl import read_records
from tests.inference.test_ar_drafting import save_ar_drafter

PROMPTS = ["w10 w11 w12 w13 w10 w11 w12", "w20 w30 w40"]


def assert_table1_holds_the_measured_numbers(page: str, results_file) -> None:
    """Every Table 1 cell is recomputed here from the per-prompt records of the benchmark's results
    file: tau = appended tokens / rounds, speedup = plain decoding's wall time / the mode's."""
    rows = [r for r in read_records(results_file) if "results" in r]
    assert len(rows) == len(PROMPTS)
    ar_s = sum(r["results"]["ar"]["total_s"] for r in rows)
    for mode in TABLE_MODES:
        records = [r["results"][mode] for r in rows]
        tau = round(sum(x["round_tokens"] for x in records) / sum(x["rounds"] for x in records), 4)
        speedup = round(ar_s / sum(x["total_s"] for x in records), 4)
        cell = f"**{speedup:.2f}x**" if mode == "async" else f"{speedup:.2f}x"
        assert f"| {MODE_NAMES[mode]} | {tau:.2f} | {cell} |" in page, (mode, tau, speedup)


def test_the_page_is_generated_from_real_runs_and_regenerated_from_their_files(tiny_chat_model_dir, tmp_path):
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(PROMPTS)))
    prune_log = tmp_path / "prune.jsonl"
    stages = [{"kind": "stage", "stage": 0, "layers": [0, 1, 2], "tau_layer_dev": 2.0, "tau_select": 1.9, "speedup": 1.1},
              {"kind": "ablation", "stage": 1, "layer": 1, "tau": 1.8, "dev_loss_diff": 3.0},
              {"kind": "stage", "stage": 1, "layers": [0, 2], "removed": 1, "tau_removed": 1.8, "tau_layer_dev": 1.95,
               "tau_select": 1.85, "speedup": 1.3}]
    prune_log.write_text("".join(json.dumps(r) + "\n" for r in stages))
    cfg = ResultsConfig(
        target=str(tiny_chat_model_dir), ar_drafter=str(save_ar_drafter(tiny_chat_model_dir, [0], tmp_path / "ar")),
        prune_log=str(prune_log), limit=2, sweep_limit=1, coverages=(1, 2), fanouts=(1,), max_new_tokens=8,
        suites=(str(suite),), sweep_suite=str(suite), runs_dir=str(tmp_path / "runs"), page=str(tmp_path / "docs/results.md"),
        images=str(tmp_path / "docs/img"), extra_limit=1, dtype="float32",
    )
    page = make_results(cfg)
    text = page.read_text()
    assert_table1_holds_the_measured_numbers(text, tmp_path / "runs" / "table_suite.jsonl")
    assert "## Table 1" in text and "| D3D async |" in text and "| AR drafter, same depth (native engine) |" in text
    assert "--ar-drafter" in text and "--sweep 1,1 2,1" in text
    for image in ("budget_sweep.png", "pruning_curve.png", "timeline.png"):
        assert (tmp_path / "docs/img" / image).stat().st_size > 0 and f"img/{image}" in text
    assert [s["stage"] for s in read_prune_log(prune_log)] == [0, 1]
    assert "| 0 | [0, 1, 2] | - | - | 2.000 | 1.900 | 1.10x |" in text and "| 1 | [0, 2] | 1 | 1.800 | 1.950 | 1.850 | 1.30x |" in text
    # a second run reuses every results file: nothing is generated again, the page is the same
    written = {p.name: p.read_text() for p in (tmp_path / "runs").iterdir() if p.suffix == ".jsonl"}
    assert len(written) == 2 + len(EXTRA_BENCHES)
    float32 = json.loads((tmp_path / "runs" / "extra_float32.jsonl").read_text().splitlines()[1])["results"]["sync"]
    assert float32["agreement"] == "identical"  # exact arithmetic: the agreement row must say so
    assert "| float32 (exact: must be identical) | 1 | 1 | 0 | 0 |" in text
    make_results(cfg)
    assert {p.name: p.read_text() for p in (tmp_path / "runs").iterdir() if p.suffix == ".jsonl"} == written
