"""The committed recipes: each one reads as a training config, and no two write to one output folder.

A recipe copied from its predecessor and left pointing at the old run's folder would make `d3d train`
refuse to start (the folder holds a run with another init) or, with the same init, resume the old run.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from d3d.training.train_config import TrainConfig

RECIPES = sorted((Path(__file__).resolve().parents[2] / "recipes").glob("*.yaml"))
MIX_NAME = re.compile(r"smollm2-d3d-(mix\d*g?)\.yaml")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def test_recipes_are_found() -> None:
    assert len(RECIPES) >= 4


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_recipe_reads_as_a_training_config(path: Path) -> None:
    config = TrainConfig.from_dict(load(path))
    if config.data:  # the GPU recipe gets its data from the script that runs it
        config.validate()


def test_no_two_recipes_share_an_output_dir() -> None:
    dirs = Counter(load(p).get("output_dir") for p in RECIPES if load(p).get("output_dir"))
    assert [d for d, n in dirs.items() if n > 1] == []


@pytest.mark.parametrize("path", [p for p in RECIPES if MIX_NAME.fullmatch(p.name)], ids=lambda p: p.name)
def test_continued_run_writes_to_its_own_folder(path: Path) -> None:
    name = MIX_NAME.fullmatch(path.name).group(1)
    assert load(path).get("output_dir") == f"runs/smollm2-{name}"
