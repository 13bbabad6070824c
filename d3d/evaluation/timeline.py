"""Timelines of asynchronous decoding: every verification (t_v, target process) and every drafter
pass (t_d successor passes and synchronous drafts, drafting process), saved as JSON and plotted.

Times are `time.perf_counter()` readings; on Linux that clock is CLOCK_MONOTONIC, shared by all
processes, so the target's and the worker's events sit on one axis. The JSON keeps them relative
to the start of generation, in milliseconds:

    {"summary": {...AsyncDecodeStats.as_dict()...},
     "events": [{"kind": "verify" | "successors" | "draft", "round": r, "start_ms": .., "end_ms": .., ...}]}

    save_timeline(stats, "docs/img/timeline.json")
    plot_timeline("docs/img/timeline.json", "docs/img/timeline.png")

This module knows nothing about models; it reads `AsyncDecodeStats` and writes files.
"""

from __future__ import annotations

import json
from pathlib import Path

from d3d.plotting import pyplot, save_figure

LANES = {"verify": 1.0, "successors": 0.0, "draft": 0.0}  # y of each kind: target above, drafter below
COLORS = {"hit": "#2e7d32", "miss": "#c62828", "first": "#757575", "sync": "#757575", "none": "#757575",
          "successors": "#1565c0", "draft": "#ef6c00"}


def timeline_record(stats) -> dict:
    """The JSON-ready timeline of one `AsyncDecodeStats`."""
    origin = stats.origin_s
    events = []
    for event in sorted(stats.timeline, key=lambda e: e["start"]):
        relative = {k: v for k, v in event.items() if k not in ("start", "end")}
        relative["start_ms"] = round((event["start"] - origin) * 1e3, 3)
        relative["end_ms"] = round((event["end"] - origin) * 1e3, 3)
        events.append(relative)
    return {"summary": stats.as_dict(), "events": events}


def save_timeline(stats, json_path: str | Path) -> Path:
    """Write the timeline of `stats` (an `AsyncDecodeStats`) to `json_path`."""
    path = Path(json_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(timeline_record(stats), indent=1) + "\n")
    return path


def plot_timeline(json_path: str | Path, png_path: str | Path, max_rounds: int | None = 60) -> Path:
    """Plot a saved timeline: target verifications on top (green: its candidates came from a hit,
    red: drafted after a miss), drafter passes below (blue: successor pass, orange: sync draft)."""
    plt = pyplot()
    from matplotlib.patches import Patch

    record = json.loads(Path(json_path).read_text())
    events = [e for e in record["events"] if max_rounds is None or e["round"] < max_rounds]
    fig, ax = plt.subplots(figsize=(14, 2.8))
    for event in events:
        color = COLORS[event.get("source", "none")] if event["kind"] == "verify" else COLORS[event["kind"]]
        width = event["end_ms"] - event["start_ms"]
        ax.barh(LANES[event["kind"]], width, left=event["start_ms"], height=0.6, color=color, edgecolor="white", linewidth=0.3)
    ax.set_yticks([1.0, 0.0], ["target: verify (t_v)", "drafter: t_d"])
    ax.set_xlabel("ms since generation start")
    s = record["summary"]
    shown = "" if max_rounds is None else f", first {max_rounds} rounds"
    ax.set_title(f"async {s['budget']} (N_async {s['n_async']}, {s['backend']}){shown}: hit rate {s['hit_rate']:.2f}, "
                 f"hidden {s['hidden_share']:.2f}, t_d {s['mean_td_s'] * 1e3:.1f} ms, t_v {s['mean_tv_s'] * 1e3:.1f} ms, "
                 f"tau {s['tau']:.2f}", fontsize=9)
    legend = [Patch(color=COLORS[k], label=label) for k, label in
              [("hit", "verify (hit)"), ("miss", "verify (miss)"), ("first", "verify (first / sync)"),
               ("successors", "successor pass"), ("draft", "sync draft")]]
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=5, fontsize=8, frameon=False)
    return save_figure(fig, png_path)
