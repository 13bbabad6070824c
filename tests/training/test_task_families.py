"""Tests for d3d.training.task_families and task_prompts' example formats.

Every example in every format is what the reference solution returns and every task's examples are
informative (for the first, third, fourth and fifth sets too: test_task_prompts.py and
test_task_families3/4/5.py leave those checks here), `--families new` shares nothing with the first
file, and the first file still comes out of seed 0 byte for byte.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import json
import random
from collections import Counter

import pytest

from d3d.errors import D3DError
from d3d.training import task_prompts
from d3d.training.task_families import extra_tasks
from d3d.training.task_families3 import third_tasks
from d3d.training.task_families4 import fourth_tasks
from d3d.training.task_families5 import fifth_tasks
from d3d.training.task_families6 import sixth_tasks
from d3d.training.task_families7 import seventh_tasks
from d3d.training.task_families8 import eighth_tasks
from d3d.training.task_families9 import ninth_tasks
from d3d.training.task_families10 import tenth_tasks
from d3d.training.task_prompts import DOCTEST, EXAMPLE_FORMATS, all_tasks, render
from tests.training.task_stubs import DATA, K_VALUES, define_stub, entry_pattern, function_name, names_of, stub_code

OTHER_FORMATS = [f for f in EXAMPLE_FORMATS if f is not DOCTEST]


def test_the_new_families_are_many_distinct_and_apart_from_the_first_files():
    old = names_of(all_tasks)
    for k in range(2, 8):
        names = [t.name for t in extra_tasks(k)]
        assert len(names) == len(set(names)) >= 100
        assert not set(names) & old, set(names) & old
    assert len({t.name for k in range(2, 8) for t in extra_tasks(k)}) > 150  # constants in names vary with k


@pytest.mark.parametrize(("make", "k", "draws", "most"), [
    *[pytest.param(extra_tasks, k, 25, 24, id=f"new-{k}") for k in (2, 3, 6, 7)],
    *[pytest.param(third_tasks, k, 40, 36, id=f"third-{k}") for k in K_VALUES],
    *[pytest.param(fourth_tasks, k, 25, 22, id=f"fourth-{k}") for k in K_VALUES],
    *[pytest.param(fifth_tasks, k, 25, 22, id=f"fifth-{k}") for k in K_VALUES],
])
def test_every_tasks_examples_are_informative(make, k, draws, most):
    """Over `draws` example inputs every task gives at least two answers, and no answer more than `most` times."""
    r = random.Random(k)
    for task in make(k):
        answers = [repr(task.solve(*task.example(r))) for _ in range(draws)]
        assert len(set(answers)) > 1 and max(map(answers.count, answers)) <= most, (task.name, set(answers))


@pytest.mark.parametrize(("make", "k", "least"), [
    *[pytest.param(all_tasks, k, 50, id=f"first-{k}") for k in (2, 3, 5, 7)],
    *[pytest.param(extra_tasks, k, 200, id=f"new-{k}") for k in (2, 3, 6, 7)],
    *[pytest.param(third_tasks, k, 300, id=f"third-{k}") for k in range(2, 8)],
    *[pytest.param(fourth_tasks, k, 300, id=f"fourth-{k}") for k in range(2, 8)],
    *[pytest.param(fifth_tasks, k, 300, id=f"fifth-{k}") for k in K_VALUES],
    *[pytest.param(sixth_tasks, k, 300, id=f"sixth-{k}") for k in K_VALUES],
    *[pytest.param(seventh_tasks, k, 300, id=f"seventh-{k}") for k in K_VALUES],
    *[pytest.param(eighth_tasks, k, 300, id=f"eighth-{k}") for k in K_VALUES],
    *[pytest.param(ninth_tasks, k, 300, id=f"ninth-{k}") for k in K_VALUES],
    *[pytest.param(tenth_tasks, k, 300, id=f"tenth-{k}") for k in K_VALUES],
])
def test_every_tasks_doctest_examples_pass_against_its_reference(make, k, least):
    """Rendered with `>>>` examples, each stub of every catalogue parses and passes as doctests."""
    r = random.Random(k)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    checked = 0
    for task in make(k):
        for _ in range(6):
            code = stub_code(render(task, r))
            if code is None:
                continue  # a plain request has no examples
            stub = define_stub(task, code)
            test = doctest.DocTestParser().get_doctest(stub.__doc__, {task.name: task.solve}, task.name, None, 0)
            assert test.examples, code
            assert runner.run(test, out=lambda _: None).failed == 0, code
            checked += 1
    assert checked > least


@pytest.mark.parametrize("shape", OTHER_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize(("makes", "k", "draws", "least"), [
    *[pytest.param((all_tasks, extra_tasks), k, 4, 500, id=f"old+new-{k}") for k in (2, 5)],
    pytest.param((third_tasks,), 3, 3, 100, id="third-3"),
    pytest.param((fourth_tasks,), 4, 3, 100, id="fourth-4"),
    pytest.param((fifth_tasks,), 5, 3, 100, id="fifth-5"),
    pytest.param((sixth_tasks,), 6, 3, 100, id="sixth-6"),
    pytest.param((seventh_tasks,), 7, 3, 100, id="seventh-7"),
    pytest.param((eighth_tasks,), 2, 3, 100, id="eighth-2"),
    pytest.param((ninth_tasks,), 3, 3, 100, id="ninth-3"),
    pytest.param((tenth_tasks,), 4, 3, 100, id="tenth-4"),
])
def test_every_other_formats_examples_show_what_the_reference_returns(shape, makes, k, draws, least):
    """For every catalogue: parse each shown example, compute f(args) and compare to the shown value."""
    r = random.Random(k)
    pattern, checked = entry_pattern(shape), 0
    for task in [task for make in makes for task in make(k)]:
        for _ in range(draws):
            code = stub_code(render(task, r, (shape,)))
            if code is None:
                continue
            stub = define_stub(task, code)
            lines = [line.strip() for line in stub.__doc__.splitlines()]
            assert ">>>" not in stub.__doc__ and shape.heading in lines, code
            entries = [line for line in lines[lines.index(shape.heading) + 1:] if line]
            assert 1 <= len(entries) <= 3, code
            for entry in entries:
                match = pattern.fullmatch(entry)
                assert match, entry
                if "inputs" in match.groupdict():  # "For xs = [1], k = 2 the output should be ..."
                    inputs = eval(f"dict({match['inputs']})")
                    assert list(inputs) == list(inspect.signature(stub).parameters), entry
                    result = task.solve(*inputs.values())
                else:
                    assert match["call"].startswith(f"{task.name}("), entry
                    result = eval(match["call"], {task.name: task.solve})
                assert ast.literal_eval(match["value"]) == result and repr(result) == match["value"], entry
                checked += 1
    assert checked > least


def test_mixed_formats_keep_doctest_the_most_common_and_show_every_format():
    rows = task_prompts.build_tasks(1000, seed=2, id_prefix="t2-", families="new")
    patterns = {shape.name: entry_pattern(shape) for shape in OTHER_FORMATS}
    seen: Counter = Counter()
    for row in rows:
        code = stub_code(row["prompt"])
        if code is None:
            continue
        lines = [line.strip() for line in code.split('"""')[1].splitlines()]  # the docstring, not `def f() -> int:`
        shown = [name for name, p in patterns.items() if any(p.fullmatch(line) for line in lines)]
        seen["doctest" if any(line.startswith(">>> ") for line in lines) else "".join(shown)] += 1
    assert set(seen) == {shape.name for shape in EXAMPLE_FORMATS}, seen  # each stub shows exactly one format
    assert 0.5 < seen["doctest"] / sum(seen.values()) < 0.7, seen


def test_families_new_is_deterministic_and_has_none_of_the_first_files_functions(tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for path, seed in ((a, 1), (b, 1), (c, 2)):
        assert task_prompts.main(["--out", str(path), "--count", "300", "--seed", str(seed), "--families", "new"]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    rows = [json.loads(line) for line in a.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 300 and all(row["id"].startswith("task2-") for row in rows)
    names = {function_name(row["prompt"]) for row in rows}
    assert len(names) > 80 and not names & names_of(all_tasks)


def test_families_all_draws_from_both_catalogues():
    names = {function_name(row["prompt"]) for row in task_prompts.build_tasks(600, seed=3, families="all")}
    assert names & names_of(all_tasks) and names - names_of(all_tasks)


def test_an_unknown_family_is_refused_in_one_line(capsys):
    with pytest.raises(D3DError, match="families must be one of"):
        task_prompts.build_tasks(10, seed=0, families="newest")
    with pytest.raises(SystemExit) as exit_info:
        task_prompts.main(["--out", "unused.jsonl", "--families", "newest"])
    assert exit_info.value.code == 2 and "--families" in capsys.readouterr().err


def test_seed_0_still_writes_the_first_file_byte_for_byte(tmp_path):
    out = tmp_path / "t.jsonl"
    assert task_prompts.main(["--out", str(out), "--count", "6000", "--seed", "0"]) == 0
    assert out.read_bytes() == (DATA / "task_prompts.jsonl").read_bytes()


def test_the_second_file_shares_no_prompt_or_id_with_the_first():
    second = DATA / "task_prompts2.jsonl"
    first_rows = [json.loads(line) for line in (DATA / "task_prompts.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(line) for line in second.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({row["prompt"] for row in rows}) == 6000
    assert not {row["prompt"] for row in rows} & {row["prompt"] for row in first_rows}
    assert not {row["id"] for row in rows} & {row["id"] for row in first_rows}
