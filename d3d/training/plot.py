"""Training curves from a `d3d train` log: loss parts against the step, and tau against training tokens.

Reads `log.jsonl` (kinds "train" and "eval"; a resumed run's log holds each step once) and draws
three panels with matplotlib's Agg backend: L_diff and L_AR (train, and dev where logged) on the
left; in the middle the validation tau, offline (simulated on the dev rows) and real where logged,
against the response tokens trained on (the scaling curve; the step for logs that predate the
token count); on the right alpha_1 (the first drafted token's offline acceptance) against the CPU
hours of the training steps. A run continued from an earlier run's drafter (`init:`) draws as one
curve with `--after EARLIER/log.jsonl` (repeatable, oldest first): the earlier logs come first, and
this run's steps, tokens and CPU hours are counted on from where they ended. It knows nothing about
models or training.

    d3d plot runs/drafter/log.jsonl --out runs/drafter/curve.png
    d3d plot runs/smollm2-mix2/log.jsonl --after runs/smollm2-mix/log.jsonl --out curve.png
"""

from __future__ import annotations

from pathlib import Path

from d3d.errors import D3DError
from d3d.jsonl import read_records
from d3d.plotting import pyplot, save_figure


def read_log(log_path: str | Path) -> tuple[list[dict], list[dict]]:
    """(train records, eval records) of a JSONL log; unreadable lines are skipped."""
    path = Path(log_path)
    if not path.is_file():
        raise D3DError(f"log not found: {path}")
    records = read_records(path, "training log")
    train = [r for r in records if r.get("kind") == "train"]
    evals = [r for r in records if r.get("kind") == "eval"]
    if not train and not evals:
        raise D3DError(f"no training or validation records in {path}")
    return train, evals


OFFSET_KEYS = ("step", "tokens_seen", "cpu_s")  # counted on across chained runs


def chain_logs(log_paths: list[str | Path]) -> tuple[list[dict], list[dict]]:
    """(train, eval records) of runs that continued one another, oldest first, as one run.

    Each later run's step, tokens_seen and cpu_s are offset by the largest values the runs
    before it reached, so the x axes read as total training; each record is copied, not changed.
    """
    train: list[dict] = []
    evals: list[dict] = []
    offset = dict.fromkeys(OFFSET_KEYS, 0.0)
    for path in log_paths:
        run_train, run_evals = read_log(path)
        shifted = [_shift(r, offset) for r in run_train], [_shift(r, offset) for r in run_evals]
        train += shifted[0]
        evals += shifted[1]
        for key in OFFSET_KEYS:
            seen = [r[key] for r in shifted[0] + shifted[1] if r.get(key) is not None]
            offset[key] = max(seen + [offset[key]])
    return train, evals


def _shift(record: dict, offset: dict[str, float]) -> dict:
    return record | {k: record[k] + offset[k] for k in OFFSET_KEYS if record.get(k) is not None and offset[k]}


def plot_log(log_path: str | Path, png_path: str | Path, after: list[str | Path] | None = None) -> Path:
    """Draw the curves of `log_path` (continuing the runs `after`, oldest first) into `png_path`."""
    plt = pyplot()

    train, evals = chain_logs([*(after or []), log_path])
    fig, (loss_ax, tau_ax, alpha_ax) = plt.subplots(1, 3, figsize=(16, 4))
    _series(loss_ax, train, "loss_diff", "L_diff (train)")
    _series(loss_ax, train, "loss_ar", "L_AR (train)")
    _series(loss_ax, evals, "dev_loss_diff", "L_diff (dev)", marker="o")
    _series(loss_ax, evals, "dev_loss_ar", "L_AR (dev)", marker="o")
    loss_ax.set(xlabel="optimizer step", ylabel="cross-entropy (nats)", title="losses")
    x = "tokens_seen" if evals and all("tokens_seen" in r for r in evals) else "step"
    _series(tau_ax, evals, "offline_tau", "offline tau (simulated, dev rows)", marker="o", x=x)
    _series(tau_ax, evals, "tau", "validation tau (real decoding)", marker="s", x=x)
    taus = [r[k] for r in evals for k in ("tau", "offline_tau") if r.get(k) is not None]
    tau_ax.set_ylim(1.0, max(taus + [1.5]) + 0.5)  # tau >= 1 always; a flat start should look flat
    xlabel = "response tokens trained on" if x == "tokens_seen" else "optimizer step"
    tau_ax.set(xlabel=xlabel, ylabel="tokens per round", title="acceptance length tau")
    _alpha_panel(alpha_ax, train, evals)
    for ax in (loss_ax, tau_ax, alpha_ax):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    return save_figure(fig, png_path)


def cpu_hours_at_evals(train: list[dict], evals: list[dict]) -> list[tuple[float, float]]:
    """(CPU hours of training steps up to the validation, alpha_1) per validation with both known."""
    cpu_by_step = {r["step"]: r["cpu_s"] for r in train if r.get("cpu_s") is not None}
    points = []
    for r in evals:
        alpha = r.get("offline_alpha")
        earlier = [s for s in cpu_by_step if s <= r["step"]]
        if alpha and (earlier or r["step"] == 0):
            points.append((cpu_by_step[max(earlier)] / 3600 if earlier else 0.0, alpha[0]))
    return points


def _alpha_panel(ax, train: list[dict], evals: list[dict]) -> None:
    points = cpu_hours_at_evals(train, evals)
    if points:
        hours, alpha = zip(*points)
        ax.plot(hours, alpha, label="alpha_1 (offline, dev rows)", marker="o", markersize=3)
    ax.set_ylim(0.0, 1.0)
    ax.set(xlabel="CPU hours of training steps", ylabel="acceptance of the first drafted token",
           title="alpha_1")


def _series(ax, records: list[dict], key: str, label: str, marker: str | None = None, x: str = "step") -> None:
    points = [(r[x], r[key]) for r in records if r.get(key) is not None]
    if points:
        steps, values = zip(*points)
        ax.plot(steps, values, label=label, marker=marker, markersize=3)
