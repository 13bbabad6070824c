"""Shared matplotlib plumbing for the project's plots (training curves, decoding timelines).

Knows nothing about what is plotted: it picks the headless backend and writes figures to disk.
"""

from __future__ import annotations

from pathlib import Path


def save_figure(fig, png_path: str | Path, dpi: int = 120) -> Path:
    """Lay out, write (creating parent folders) and close `fig`; returns the file's path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(png_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
