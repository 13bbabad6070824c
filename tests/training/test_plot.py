"""The training-curve plot's data: alpha_1 against the CPU hours of the training steps."""

from __future__ import annotations

import json

import pytest

from d3d.errors import D3DError
from d3d.training.plot import chain_logs, cpu_hours_at_evals, plot_log


def test_alpha_points_take_the_cpu_time_of_the_last_step_at_or_before_each_validation():
    train = [{"step": s, "cpu_s": 36.0 * s} for s in (1, 2, 3, 4)]  # 100 steps would be one CPU hour
    evals = [{"step": 0, "offline_alpha": [0.2, 0.1]}, {"step": 2, "offline_alpha": [0.3]},
             {"step": 4, "offline_alpha": [0.5]}, {"step": 4}]  # the last one has no alpha: skipped
    assert cpu_hours_at_evals(train, evals) == [(0.0, 0.2), (0.02, 0.3), (0.04, 0.5)]


def test_plot_draws_a_png_and_refuses_an_empty_log(tmp_path):
    log = tmp_path / "log.jsonl"
    rows = [{"kind": "train", "step": 1, "loss_diff": 3.0, "loss_ar": 2.0, "cpu_s": 10.0},
            {"kind": "eval", "step": 1, "tokens_seen": 100, "offline_tau": 1.3, "offline_alpha": [0.3]}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert plot_log(log, tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    log.write_text("")
    with pytest.raises(D3DError, match="no training or validation records"):
        plot_log(log, tmp_path / "d.png")


def test_a_continued_run_counts_on_from_the_run_it_continued(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in [
        {"kind": "eval", "step": 0, "tokens_seen": 0, "offline_tau": 1.2, "offline_alpha": [0.2]},
        {"kind": "train", "step": 10, "tokens_seen": 500, "cpu_s": 36.0},
        {"kind": "eval", "step": 10, "tokens_seen": 500, "offline_tau": 1.5, "offline_alpha": [0.4]}]))
    second.write_text("".join(json.dumps(r) + "\n" for r in [
        {"kind": "eval", "step": 0, "tokens_seen": 0, "offline_tau": 1.5, "offline_alpha": [0.4]},
        {"kind": "train", "step": 5, "tokens_seen": 300, "cpu_s": 72.0},
        {"kind": "eval", "step": 5, "tokens_seen": 300, "offline_tau": 1.7, "offline_alpha": [0.5]}]))
    train, evals = chain_logs([first, second])
    assert [(r["step"], r["tokens_seen"]) for r in evals] == [(0, 0), (10, 500), (10, 500), (15, 800)]
    assert [(r["step"], r["cpu_s"]) for r in train] == [(10, 36.0), (15, 108.0)]
    assert cpu_hours_at_evals(train, evals) == [(0.0, 0.2), (0.01, 0.4), (0.01, 0.4), (0.03, 0.5)]
    assert json.loads(second.read_text().splitlines()[1])["step"] == 5  # the logs themselves are untouched
    assert plot_log(second, tmp_path / "c.png", after=[first]).read_bytes()[:4] == b"\x89PNG"
