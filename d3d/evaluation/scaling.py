"""The scaling line: HumanEval sync tau against the response tokens a drafter has trained on.

Each continued run starts from an earlier drafter, so the runs form one curve of tokens seen (the
sum of every run in its chain) against the tau of its ship bench. The table lives in
`docs/scaling_humaneval.csv` (one row per run: tokens seen, tau, whether it trained, how the tau
was measured; benches on another machine enter as a same-run difference to the drafter before it).
This module fits tau = slope * log10(tokens seen) + intercept by least squares over the trained
rows (an average of drafters trained on nothing and is left out), reads the line forward, and draws
the points and the line.

    python -m d3d.evaluation.scaling                       # table, then one JSON line
    python -m d3d.evaluation.scaling --plot docs/img/scaling_humaneval.png
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from d3d.errors import D3DError
from d3d.plotting import pyplot, save_figure

DEFAULT_TABLE = Path(__file__).resolve().parents[2] / "docs" / "scaling_humaneval.csv"  # in a checkout
COLUMNS = ("run", "tokens_seen", "humaneval_sync_tau", "trained")


@dataclass(frozen=True)
class ScalingPoint:
    """One run of the chain: its name, tokens seen by the end of it, its HumanEval sync tau."""

    run: str
    tokens_seen: int
    tau: float
    trained: bool  # False for an average of drafters: it adds no tokens and stays out of the fit


@dataclass(frozen=True)
class ScalingLine:
    """tau = slope * log10(tokens) + intercept, fitted over `points` trained rows."""

    slope: float  # tau per tenfold of tokens seen
    intercept: float
    points: int

    def tau_at(self, tokens: float) -> float:
        """The line's tau at `tokens` response tokens seen."""
        return self.slope * math.log10(tokens) + self.intercept

    def tokens_for(self, tau: float) -> float:
        """The tokens seen at which the line reaches `tau` (inf when the slope is not positive)."""
        if self.slope <= 0:
            return math.inf
        return 10 ** ((tau - self.intercept) / self.slope)


def read_points(path: str | Path = DEFAULT_TABLE) -> list[ScalingPoint]:
    """The rows of the scaling table; a D3DError naming the row for a missing or bad value."""
    table = Path(path)
    if not table.is_file():
        raise D3DError(f"scaling table not found: {table}")
    with table.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise D3DError(f"{table} lacks the column(s) {', '.join(missing)}")
        points = [_point(row, table, i) for i, row in enumerate(reader, start=2)]
    if not points:
        raise D3DError(f"{table} has no rows")
    return points


def _point(row: dict, table: Path, line: int) -> ScalingPoint:
    """One CSV row as a ScalingPoint; a D3DError naming the line when a value does not parse."""
    try:
        tokens, tau = int(row["tokens_seen"]), float(row["humaneval_sync_tau"])
    except (TypeError, ValueError):
        raise D3DError(f"{table} line {line}: tokens_seen must be an integer and humaneval_sync_tau a "
                       f"number, got {row['tokens_seen']!r} and {row['humaneval_sync_tau']!r}") from None
    if tokens <= 0 or not math.isfinite(tau):
        raise D3DError(f"{table} line {line}: tokens_seen must be positive and tau finite")
    if row["trained"] not in ("yes", "no"):
        raise D3DError(f"{table} line {line}: trained must be yes or no, got {row['trained']!r}")
    return ScalingPoint(row["run"], tokens, tau, row["trained"] == "yes")


def fit_line(points: list[ScalingPoint]) -> ScalingLine:
    """The least-squares line of tau against log10(tokens seen) over the trained points."""
    used = [p for p in points if p.trained]
    try:
        fit = statistics.linear_regression([math.log10(p.tokens_seen) for p in used], [p.tau for p in used])
    except statistics.StatisticsError:  # fewer than two points, or every x the same
        raise D3DError("the scaling line needs at least two trained runs at different token counts") from None
    return ScalingLine(fit.slope, fit.intercept, len(used))


def plot_line(points: list[ScalingPoint], line: ScalingLine, out: str | Path) -> Path:
    """The points (trained filled, averages hollow) and the fitted line, read forward one tenfold."""
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7, 4))
    trained = [p for p in points if p.trained]
    ax.scatter([p.tokens_seen for p in trained], [p.tau for p in trained], color="tab:blue", label="continued runs")
    others = [p for p in points if not p.trained]
    if others:
        ax.scatter([p.tokens_seen for p in others], [p.tau for p in others], facecolors="none",
                   edgecolors="tab:blue", label="weight average (not fitted)")
    lo, hi = min(p.tokens_seen for p in points), max(p.tokens_seen for p in points) * 10
    xs = [lo * (hi / lo) ** (i / 50) for i in range(51)]
    ax.plot(xs, [line.tau_at(x) for x in xs], color="tab:orange",
            label=f"fit: {line.slope:.2f} tau per tenfold")
    ax.axhline(4.0, color="gray", linestyle="--", linewidth=1, label="the paper's tau 4")
    ax.set_xscale("log")
    ax.set_xlabel("response tokens trained on (the chain of continued runs)")
    ax.set_ylabel("HumanEval-40 sync tau")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return save_figure(fig, out)


def main(argv: list[str] | None = None) -> int:
    """Print the table and the fit (one JSON line last); draw the plot with --plot."""
    parser = argparse.ArgumentParser(prog="python -m d3d.evaluation.scaling", description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(DEFAULT_TABLE), help="the scaling CSV (default: the checkout's docs/scaling_humaneval.csv)")
    parser.add_argument("--plot", default=None, help="write the points and the line to this PNG")
    args = parser.parse_args(argv)
    try:
        points = read_points(args.table)
        line = fit_line(points)
        plot = plot_line(points, line, args.plot) if args.plot else None
    except D3DError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("| run | tokens seen | HumanEval sync tau | line |")
    print("|---|---|---|---|")
    for p in points:
        print(f"| {p.run}{'' if p.trained else ' (not fitted)'} | {p.tokens_seen / 1e6:.2f}M | {p.tau:.2f} | "
              f"{line.tau_at(p.tokens_seen):.2f} |")
    last = max(p.tokens_seen for p in points)
    summary = {"slope_per_tenfold": round(line.slope, 4), "intercept": round(line.intercept, 4),
               "points": line.points, "tokens_seen": last, "tau_at_tenfold_more": round(line.tau_at(10 * last), 3),
               "tokens_for_tau_4": round(line.tokens_for(4.0)), "plot": str(plot) if plot else None}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
