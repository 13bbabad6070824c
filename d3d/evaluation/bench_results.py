"""The benchmark's results file and what it is keyed by.

A results file is JSONL: a header line (the configuration, the content key and the drafter's
description; with drafter variants, each variant mode's drafter description too), then one line
per finished prompt. A run resumes a file only when its header matches exactly. The content
key makes that safe across changes that keep paths and flags: it holds a digest of the target's
and the drafters' files (configs and weights), the dtype and the d3d version, so after a new
drafter ships, the same `d3d bench` command writes a new file instead of reporting the old
drafter's rows.

This module knows nothing about decoding; `bench.py` uses it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from d3d.errors import D3DError
from d3d.jsonl import JsonlFile

RESULTS_FORMAT = 2  # bump when the meaning of recorded fields changes (2: content key in the header)
DIGEST_SUFFIXES = (".json", ".safetensors", ".txt", ".model")  # the files of a model directory that define it


def d3d_version() -> str:
    try:
        return metadata.version("d3d")
    except metadata.PackageNotFoundError:
        return "unknown"


def directory_digest(path: Path | None) -> str | None:
    """sha256 (16 hex) over the defining files of a model or drafter directory (None: no directory)."""
    if path is None:
        return None
    path = Path(path).resolve()
    files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix in DIGEST_SUFFIXES)
    stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return _digest(path, stamp)


@lru_cache(maxsize=16)
def _digest(path: Path, stamp: tuple) -> str:
    """The digest of the files listed in `stamp` (cached while their sizes and times hold)."""
    h = hashlib.sha256()
    for name, _, _ in stamp:
        h.update(name.encode() + b"\0")
        with open(path / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()[:16]




class ResultsFile:
    """Append-only JSONL of finished prompts, resumable when its header matches the config."""

    def __init__(self, path: Path, header: dict) -> None:
        self.path = path
        self.header = {"format": RESULTS_FORMAT, **header}
        self.file = JsonlFile(path, what="results file")

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold an exclusive lock for the run: two runs appending to one file would mix timings."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path.with_name(self.path.name + ".lock"), "w")
        except OSError as error:
            raise D3DError(f"cannot use results file {self.path}: {error}") from error
        with handle:
            try:
                import fcntl

                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except ImportError:  # not POSIX: run unlocked
                pass
            except BlockingIOError:
                raise D3DError(f"results file {self.path} is in use by another bench run") from None
            yield

    def open(self, fresh: bool) -> dict[str, dict]:
        """Finished rows by prompt id (none when fresh or new); the file is ready to append to."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if fresh or not self.path.exists():
                self._rewrite([])
                return {}
            rows = self._read()
        except OSError as error:
            raise D3DError(f"cannot use results file {self.path}: {error}") from error
        return {row["id"]: row for row in rows}

    def append(self, row: dict) -> None:
        self.file.append(row)

    def _read(self) -> list[dict]:
        records = self.file.read()  # a line torn by an interrupted write is cut off (d3d.jsonl)
        header = records[0] if records else None
        if header != self.header:
            raise D3DError(
                f"results file {self.path} was written for a different configuration "
                f"({_header_difference(header, self.header)}); pass --fresh to overwrite it, or choose another --out"
            )
        rows = records[1:]
        if any("id" not in row for row in rows):
            raise D3DError(f"results file {self.path} is corrupted; pass --fresh to start over")
        return rows

    def _rewrite(self, rows: list[dict]) -> None:
        """Replace the file with the header and `rows`, atomically."""
        self.file.rewrite([self.header, *rows])


def _header_difference(found, wanted: dict) -> str:
    """Which settings differ, in a few words."""
    if not isinstance(found, dict) or "config" not in found:
        return "not a d3d bench results file"
    old_config = found.get("config") if isinstance(found.get("config"), dict) else {}
    names = [k for k in wanted["config"] if old_config.get(k) != wanted["config"][k]]
    names += [k for k in ("format", "drafter", "variant_drafters") if found.get(k) != wanted.get(k)]
    return "differs in " + ", ".join(names) if names else "unreadable header"


def results_path_for(key: dict, results_dir: Path) -> Path:
    """The default results file of a key: results_dir/<hash of the key>.jsonl."""
    blob = json.dumps(key, sort_keys=True).encode()
    return results_dir / f"{hashlib.sha256(blob).hexdigest()[:12]}.jsonl"
