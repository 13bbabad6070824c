"""Timelines: JSON relative to the start of generation, and a plot of both lanes."""

from __future__ import annotations

import json

from d3d.evaluation.timeline import plot_timeline, save_timeline
from d3d.inference.async_engine import AsyncDecodeStats


def test_timeline_round_trip_and_plot(tmp_path):
    stats = AsyncDecodeStats("async", budget="C=2,F=1", n_async=48, backend="process", origin_s=100.0)
    stats.timeline = [
        {"kind": "verify", "round": 0, "start": 100.010, "end": 100.050, "source": "first", "rows": 16},
        {"kind": "draft", "round": 0, "start": 100.002, "end": 100.009, "rows": 30},
        {"kind": "successors", "round": 0, "start": 100.011, "end": 100.040, "rows": 48},
        {"kind": "verify", "round": 1, "start": 100.051, "end": 100.090, "source": "hit", "rows": 16},
    ]
    stats.count_hidden()
    assert (stats.hidden_rounds, stats.overlapped_rounds) == (1, 1)
    path = save_timeline(stats, tmp_path / "sub" / "t.json")
    record = json.loads(path.read_text())
    assert [e["kind"] for e in record["events"]] == ["draft", "verify", "successors", "verify"]  # by start
    assert record["events"][0]["start_ms"] == 2.0 and record["events"][-1]["end_ms"] == 90.0
    assert record["summary"]["hidden_share"] == 1.0 and record["summary"]["budget"] == "C=2,F=1"
    png = plot_timeline(path, tmp_path / "t.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
