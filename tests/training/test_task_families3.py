"""Tests for d3d.training.task_families3's own choice `every`, and the fifth file still regenerating.

`every` draws from the first three sets (and not the fourth), and the earlier files still come out
of their seeds byte for byte. The checks every later set must pass (many names apart from the earlier
catalogues and HumanEval's, no 13-word n-gram shared with a HumanEval prompt, imports downward,
a deterministic `--families third`) are test_task_families4.py's, one case per set; that every
example is informative and what the reference returns is checked with the other catalogues' in
test_task_families.py.
"""

from __future__ import annotations

from d3d.training import task_prompts
from d3d.training.task_families import extra_tasks
from d3d.training.task_families3 import third_tasks
from d3d.training.task_prompts import all_tasks
from tests.training.task_stubs import DATA, function_name, names_of


def test_families_every_draws_from_all_three_catalogues():
    names = {function_name(row["prompt"]) for row in task_prompts.build_tasks(900, seed=3, families="every")}
    for catalogue in (all_tasks, extra_tasks, third_tasks):
        assert names & names_of(catalogue), catalogue.__name__
    assert names <= names_of(all_tasks) | names_of(extra_tasks) | names_of(third_tasks)


def test_seed_5_still_writes_the_fifth_file_byte_for_byte(tmp_path):
    earlier = ["task_prompts.jsonl", "task_prompts2.jsonl", "task_prompts3.jsonl", "task_prompts4.jsonl",
               "task_dev_prompts.jsonl"]
    out = tmp_path / "t5.jsonl"
    skips = [arg for name in earlier for arg in ("--skip-texts", str(DATA / name))]
    args = ["--out", str(out), "--count", "8000", "--seed", "5", "--families", "all", "--id-prefix", "task5-"]
    assert task_prompts.main(args + skips) == 0
    assert out.read_bytes() == (DATA / "task_prompts5.jsonl").read_bytes()
