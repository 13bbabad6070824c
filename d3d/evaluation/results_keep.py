"""The results page's measurements kept in git, so that a fresh clone renders and resumes the page.

The page's commands write under `runs/results/` (git-ignored: their logs, data files and training
runs are large). What the page is rendered from is small: each step's standard output (`.out`), its
facts (`.step.json`) and the block-attention runs' `offline.json`. `keep` copies those files to a
committed folder (`docs/results-data/` by default) after every section; `restore` copies them back
where `runs/results/` lacks them, so that a measured step counts as measured on any machine and only
what is missing (or asked for again with `--fresh`) runs. `forget` removes a section's folder from
both places, to measure it again.

    restore(runs_dir, keep_dir)            # before running: the committed measurements count
    keep(runs_dir, keep_dir)               # after each section
    forget("table", runs_dir, keep_dir)    # --fresh table

This module knows nothing about sections or commands; `results.py` calls it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

KEPT_PATTERNS = ("*.out", "*.step.json", "offline.json")  # what the page is rendered from
MAX_KEPT_BYTES = 2_000_000  # a file larger than this is a log or data, never kept in git


def kept_files(root: Path) -> list[Path]:
    """The files under `root` the page is rendered from, relative to it, sorted."""
    if not root.is_dir():
        return []
    found = {p for pattern in KEPT_PATTERNS for p in root.rglob(pattern) if p.is_file()}
    return sorted(p.relative_to(root) for p in found if p.stat().st_size <= MAX_KEPT_BYTES)


def _copy_changed(src: Path, dst: Path) -> bool:
    """Copy `src` over `dst` unless they already hold the same bytes; whether it copied."""
    if dst.is_file() and dst.read_bytes() == src.read_bytes():
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.copyfile(src, tmp)
    tmp.replace(dst)
    return True


def keep(runs_dir: str | Path, keep_dir: str | Path) -> int:
    """Copy the measurements under `runs_dir` to `keep_dir`; how many files changed there."""
    runs, kept = Path(runs_dir), Path(keep_dir)
    return sum(_copy_changed(runs / rel, kept / rel) for rel in kept_files(runs))


def restore(runs_dir: str | Path, keep_dir: str | Path) -> int:
    """Copy the kept measurements that `runs_dir` lacks back into it; how many were copied. A step
    measured again on this machine (its `.out` present) keeps this machine's files."""
    runs, kept = Path(runs_dir), Path(keep_dir)
    copied = 0
    for rel in kept_files(kept):
        if not (runs / rel).exists():
            _copy_changed(kept / rel, runs / rel)
            copied += 1
    return copied


def forget(folder: str, *roots: str | Path | None) -> None:
    """Remove a section's folder under each root (the runs folder and the kept one, where set), so
    that its commands run again."""
    for root in roots:
        target = Path(root) / folder if root else None
        if target is not None and target.is_dir():
            shutil.rmtree(target)
