"""Append-only JSON-lines files that survive an interrupted write: the one log format of every resumable run.

Training logs, pruning logs, benchmark results and generated data are all files of one JSON
object per line, appended as work finishes and read back to resume. A process killed mid-write
leaves at most one torn last line. `JsonlFile.read` repairs it: a last line that still parses
is completed with its newline, one that does not is cut off (the work it recorded is redone). A
malformed line anywhere else is not an interruption but a foreign or damaged file: one-line
D3DError naming the line.

This module knows nothing about what the records mean.

    log = JsonlFile(Path("runs/x/log.jsonl"))
    records = log.read()            # [] when the file does not exist
    log.append({"kind": "train", "step": 1})
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from d3d.errors import D3DError


class JsonlFile:
    """One append-only JSONL file of dict records."""

    def __init__(self, path: str | os.PathLike, durable: bool = False, what: str = "file") -> None:
        self.path = Path(path)
        self.durable = durable  # fsync every append (generated data: an hour of work per file)
        self.what = what  # how error messages name the file ("results file", "pruning log", ...)
        self.repaired = False  # set by `read` when it cut or completed a torn last line

    def read(self) -> list[dict]:
        """Every record; the file is repaired in place if its last line was torn."""
        if not self.path.is_file():
            return []
        records, torn = parse_records(self.path.read_bytes(), self.path, self.what)
        if torn is not None:
            self._repair(torn)
        return records

    def append(self, *records: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
                if self.durable:
                    handle.flush()
                    os.fsync(handle.fileno())
        except OSError as error:
            raise D3DError(f"cannot write {self.what} {self.path}: {error}") from None

    def rewrite(self, records: Iterable[dict]) -> None:
        """Replace the whole file with `records`, atomically (a temporary file, then a rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = self.path.with_name(f".{self.path.name}.partial")
        staging.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        os.replace(staging, self.path)

    def _repair(self, torn: tuple[int, bool]) -> None:
        cut, complete = torn
        with self.path.open("rb+") as handle:
            if complete:
                handle.seek(0, os.SEEK_END)
                handle.write(b"\n")
            else:
                handle.truncate(cut)
        self.repaired = True


def read_records(path: str | os.PathLike, what: str = "file") -> list[dict]:
    """The records of a JSONL file without repairing it (readers that must not write); [] if missing."""
    path = Path(path)
    return parse_records(path.read_bytes(), path, what)[0] if path.is_file() else []


def parse_records(data: bytes, path: Path, what: str = "file") -> tuple[list[dict], tuple[int, bool] | None]:
    """(records, torn): torn = (offset of the last line, whether it parses) when that line is torn, else None.

    A last line is torn when it lacks its newline or does not parse; a bad line before it is a D3DError.
    """
    lines = data.split(b"\n")
    ends_cleanly = data.endswith(b"\n") or not data
    body = lines[:-1]  # lines followed by a newline (the last element is what follows the last newline)
    records, offset = [], 0
    for number, raw in enumerate(body, 1):
        record = _record(raw)
        if record is None and raw.strip():
            if number == len(body) and ends_cleanly:  # a bad last line: the write of it was interrupted
                return records, (offset, False)
            raise D3DError(f"{what} {path} line {number} is not a JSON object; is it a file written by d3d?")
        if record is not None:
            records.append(record)
        offset += len(raw) + 1
    if ends_cleanly or not lines[-1].strip():
        return records, None
    last = _record(lines[-1])
    if last is not None:
        records.append(last)
    return records, (offset, last is not None)


def _record(raw: bytes) -> dict | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
