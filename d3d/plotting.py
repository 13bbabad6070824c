"""Shared matplotlib plumbing for the project's plots (training curves, decoding timelines).

Knows nothing about what is plotted: it picks the headless backend and writes figures to disk.
"""

from __future__ import annotations

from pathlib import Path


def pyplot():
    """matplotlib.pyplot on the headless Agg backend (imported on first use: plotting is optional)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, png_path: str | Path, dpi: int = 120) -> Path:
    """Lay out, write (creating parent folders) and close `fig`; returns the file's path."""
    plt = pyplot()
    fig.tight_layout()
    out = Path(png_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
