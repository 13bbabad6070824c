"""Helpers shared by the task-prompt tests: the stub in a rendered prompt, the function it defines, the
regex of one example line of a format, and the names a task catalogue uses over the k values.

A plain module (not a test file): the tests import it as `tests.training.task_stubs`.
"""

from __future__ import annotations

import re
from pathlib import Path

from d3d.training.task_families import Task
from d3d.training.task_prompts import ExampleFormat

DATA = Path(__file__).resolve().parents[2] / "data"
CODE_BLOCK = re.compile(r"```python\n(.*)```", re.S)
K_VALUES = range(2, 8)


def stub_code(prompt: str) -> str | None:
    """The code block of a stub prompt; None for a plain request."""
    match = CODE_BLOCK.search(prompt)
    return match.group(1) if match and prompt.startswith("Complete the following") else None


def function_name(prompt: str) -> str:
    """The function a prompt asks for: the stub's `def` name, or the first `name` of a plain request."""
    code = stub_code(prompt)
    return re.search(r"def (\w+)\(", code).group(1) if code else re.search(r"`(\w+)", prompt).group(1)


def names_of(make) -> set[str]:
    """Every task name the catalogue `make` gives over K_VALUES."""
    return {t.name for k in K_VALUES for t in make(k)}


def define_stub(task: Task, code: str):
    """The stub function a prompt's code block defines (so the code parses and names its arguments)."""
    namespace: dict = {}
    exec(compile(code, task.name, "exec"), namespace)
    return namespace[task.name]


def entry_pattern(shape: ExampleFormat) -> re.Pattern:
    """A regex for one example line of `shape`, with groups call / value / inputs."""
    pattern = re.escape(shape.entry)
    for field in ("call", "value", "inputs"):
        pattern = pattern.replace(re.escape("{" + field + "}"), f"(?P<{field}>.+)")
    return re.compile(pattern)
