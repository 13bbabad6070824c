"""Helpers shared by the task-prompt tests: the stub in a rendered prompt, the function it defines, the
regex of one example line of a format, the names a task catalogue uses over the k values, and the two
checks every held-out set gets (its functions stay out of later draws and out of its training file).

A plain module (not a test file): the tests import it as `tests.training.task_stubs`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from d3d.training.task_families import Task
from d3d.training import task_prompts
from d3d.training.task_prompts import ExampleFormat, base_name

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


def assert_held_out_functions_stay_out(families: str, held_out_seed: int, seed: int) -> None:
    """The held-out prompts' functions, read back by functions_in, are never drawn again, under any k."""
    held_out = task_prompts.build_tasks(48, seed=held_out_seed, families=families)
    texts = [row["prompt"] for row in held_out]
    held = task_prompts.functions_in(texts, families)
    assert held == {base_name(function_name(text)) for text in texts} and 20 < len(held) < 60
    rows = task_prompts.build_tasks(600, seed=seed, families=families, skip_functions=held)
    drawn = {base_name(function_name(row["prompt"])) for row in rows}
    assert len(drawn) > 40 and not drawn & held, drawn & held


def assert_file_asks_for_no_held_out_function(held_out: Path, drawn_file: Path, families: str, make) -> None:
    """A committed training file asks for none of its held-out file's functions, and for every other one."""
    held_texts, texts = ([json.loads(line)["prompt"] for line in path.read_text(encoding="utf-8").splitlines()]
                         for path in (held_out, drawn_file))
    held, drawn = task_prompts.functions_in(held_texts, families), task_prompts.functions_in(texts, families)
    assert len(held_texts) == len(set(held_texts)) == 48 and held
    assert len(texts) == len(set(texts)) == 8000 and not drawn & held, drawn & held
    assert held | drawn == {base_name(t.name) for t in make(2)}  # the file draws every function left
