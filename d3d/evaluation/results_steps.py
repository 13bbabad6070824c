"""The results page's unit of work: a step is one command whose standard output is a measurement.

A step runs as a subprocess, exactly as the page shows it (`d3d ...` is this interpreter's
`python -m d3d.cli`). Its stdout goes to `<folder>/<name>.out` only once it exits with an accepted
status (written to `.partial` first), its stderr to `<name>.log` (and to the terminal, so progress
bars stay visible), and a line of facts about the run to `<name>.step.json` (when it finished, at
which commit, how long it took). A step whose `.out` exists is measured: it is not run again. A
step that fails leaves `<name>.failed` (exit status and the end of its log) and is tried again on
the next run.

This module knows nothing about what the commands measure (`results_sections.py`) or about the
page (`results.py`).
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LOG_TAIL_LINES = 12  # lines of a failed step's log kept for the page


@dataclass
class Step:
    """One command of a section."""

    name: str  # file stem in the section's folder: <name>.out, .log, .step.json, .failed
    command: list[str]  # as the page shows it: "d3d ...", "python -m ...", "scripts/..."
    env: dict[str, str] = field(default_factory=dict)  # extra environment (shown before the command)
    ok_status: tuple[int, ...] = (0,)  # exit statuses whose output is a measurement (a soak check that failed: 1)
    fresh: tuple[str, ...] = ()  # files removed before the step runs (a half-written earlier attempt would resume)

    def shown(self) -> str:
        """The command line that reproduces the step, environment first."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (env + " " if env else "") + shlex.join(self.command)

    def argv(self) -> list[str]:
        """The command as run: `d3d` and `python` are this interpreter's."""
        head, rest = self.command[0], self.command[1:]
        if head == "d3d":
            return [sys.executable, "-m", "d3d.cli", *rest]
        if head == "python":
            return [sys.executable, *rest]
        return list(self.command)


@dataclass
class StepOutput:
    """What a step left in its folder: its output once measured, else the last failure (or nothing)."""

    step: Step
    text: str | None = None  # stdout of the finished step
    failure: dict | None = None  # {"status": exit status or None, "error": text, "log_tail": [lines]}
    meta: dict = field(default_factory=dict)  # {"finished", "commit", "machine", "wall_s", "status"}

    @property
    def command(self) -> str:
        """The command as it ran (as the section would run it now, before it has run)."""
        return self.meta.get("command") or self.step.shown()

    @property
    def measured(self) -> bool:
        return self.text is not None

    @property
    def summary(self) -> dict | None:
        """The JSON line the command printed last (None: none, or not measured)."""
        line = self.json_line
        return json.loads(line) if line else None

    @property
    def json_line(self) -> str | None:
        for line in reversed((self.text or "").splitlines()):
            if line.strip():
                return line.strip() if line.lstrip().startswith("{") and _parses(line) else None
        return None

    @property
    def printed(self) -> str:
        """The output without its JSON line: the command's own table."""
        lines = (self.text or "").rstrip("\n").splitlines()
        if self.json_line is not None:
            lines = lines[:-1]
        return "\n".join(lines).rstrip()


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


Executor = Callable[[Step, Path, Path], int]  # (step, stdout file, log file) -> exit status


def run_command(step: Step, out_path: Path, log_path: Path) -> int:
    """Run the step's command: stdout to `out_path`; stderr to `log_path` and to this terminal."""
    env = os.environ | step.env
    with open(out_path, "wb") as out, open(log_path, "wb") as log:
        proc = subprocess.Popen(step.argv(), stdout=out, stderr=subprocess.PIPE, env=env)
        for chunk in iter(lambda: proc.stderr.read1(4096), b""):  # type: ignore[union-attr]
            log.write(chunk)
            _echo(chunk)
        return proc.wait()


def _echo(chunk: bytes) -> None:
    """Pass a child's stderr (progress bars, logs) through to this terminal."""
    stream = getattr(sys.stderr, "buffer", None)
    if stream is not None:
        stream.write(chunk)
        sys.stderr.flush()
    else:
        sys.stderr.write(chunk.decode(errors="replace"))


def paths(folder: Path, name: str) -> dict[str, Path]:
    return {kind: folder / f"{name}.{kind}" for kind in ("out", "partial", "log", "step.json", "failed")}


def read_step(step: Step, folder: Path) -> StepOutput:
    """The step's files as they are now."""
    p = paths(folder, step.name)
    text = p["out"].read_text() if p["out"].exists() else None
    failure = json.loads(p["failed"].read_text()) if text is None and p["failed"].exists() else None
    meta = json.loads(p["step.json"].read_text()) if p["step.json"].exists() else {}
    return StepOutput(step, text, failure, meta)


def run_step(step: Step, folder: Path, execute: Executor = run_command, commit: str = "unknown",
             machine: str = "unknown") -> StepOutput:
    """Run the step unless its output exists; record the output (with the commit and the machine that measured it), or
    the failure."""
    p = paths(folder, step.name)
    if p["out"].exists():
        return read_step(step, folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in step.fresh:
        Path(name).unlink(missing_ok=True)
    started = time.monotonic()
    try:
        status: int | None = execute(step, p["partial"], p["log"])
        error = f"exit status {status}"
    except (OSError, subprocess.SubprocessError) as exc:  # the command could not start
        status, error = None, f"{type(exc).__name__}: {exc}"
    wall = round(time.monotonic() - started, 1)
    if status in step.ok_status:
        p["partial"].replace(p["out"])
        p["failed"].unlink(missing_ok=True)
        meta = {"finished": datetime.datetime.now().isoformat(timespec="seconds"), "commit": commit, "machine": machine,
                "wall_s": wall, "status": status, "command": step.shown()}
        p["step.json"].write_text(json.dumps(meta) + "\n")
    else:
        tail = p["log"].read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:] if p["log"].exists() else []
        p["failed"].write_text(json.dumps({"status": status, "error": error, "wall_s": wall, "log_tail": tail}) + "\n")
    return read_step(step, folder)

