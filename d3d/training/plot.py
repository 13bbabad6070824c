"""Training curves from a `d3d train` log: loss parts and validation tau against the step.

Reads `log.jsonl` (kinds "train" and "eval"; a resumed run's log holds each step once) and draws
two panels with matplotlib's Agg backend: L_diff and L_AR (train, and dev where logged) on the
left, validation tau on the right. It knows nothing about models or training.

    d3d plot runs/drafter/log.jsonl --out runs/drafter/curve.png
"""

from __future__ import annotations

import json
from pathlib import Path

from d3d.errors import D3DError
from d3d.plotting import save_figure


def read_log(log_path: str | Path) -> tuple[list[dict], list[dict]]:
    """(train records, eval records) of a JSONL log; unreadable lines are skipped."""
    path = Path(log_path)
    if not path.is_file():
        raise D3DError(f"log not found: {path}")
    train, evals = [], []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("kind") == "train":
            train.append(record)
        elif isinstance(record, dict) and record.get("kind") == "eval":
            evals.append(record)
    if not train and not evals:
        raise D3DError(f"no training or validation records in {path}")
    return train, evals


def plot_log(log_path: str | Path, png_path: str | Path) -> Path:
    """Draw the curves of `log_path` into `png_path`; returns the PNG's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train, evals = read_log(log_path)
    fig, (loss_ax, tau_ax) = plt.subplots(1, 2, figsize=(11, 4))
    _series(loss_ax, train, "loss_diff", "L_diff (train)")
    _series(loss_ax, train, "loss_ar", "L_AR (train)")
    _series(loss_ax, evals, "dev_loss_diff", "L_diff (dev)", marker="o")
    _series(loss_ax, evals, "dev_loss_ar", "L_AR (dev)", marker="o")
    loss_ax.set(xlabel="optimizer step", ylabel="cross-entropy (nats)", title="losses")
    _series(tau_ax, evals, "tau", "validation tau", marker="o")
    taus = [r["tau"] for r in evals if r.get("tau") is not None]
    tau_ax.set_ylim(1.0, max(taus + [1.5]) + 0.5)  # tau >= 1 always; a flat start should look flat
    tau_ax.set(xlabel="optimizer step", ylabel="tokens per round", title="acceptance length tau")
    for ax in (loss_ax, tau_ax):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    return save_figure(fig, png_path)


def _series(ax, records: list[dict], key: str, label: str, marker: str | None = None) -> None:
    points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
    if points:
        steps, values = zip(*points)
        ax.plot(steps, values, label=label, marker=marker, markersize=3)
