"""Eval-only rows: `d3d bench --write-prompts` then `d3d data --eval-only` answer held-out evaluation prompts for
offline acceptance, and every training path refuses the result (the decontamination guarantee stays whole)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from d3d.cli import main
from d3d.errors import D3DError
from d3d.evaluation.suites import load_suite
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from d3d.training.data import DataConfig
from d3d.training.data_journal import meta_path, read_rows
from d3d.training.draft_vocab import response_token_counts
from d3d.training.packing import load_examples

VOCAB = 100_000  # ample for the tiny chat tokenizer's ids


def write_prompts(tmp_path: Path, capsys, limit: int = 3) -> Path:
    path = tmp_path / "he_prompts.jsonl"
    assert main(["bench", "--suite", "humaneval", "--limit", str(limit), "--write-prompts", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"{limit} prompts of suite humaneval: {path}"
    return path


def data_argv(out: Path, prompts: Path, model_dir: Path, *extra: str) -> list[str]:
    return ["data", "--out", str(out), "--prompts", str(prompts), "--target", str(model_dir), "--greedy",
            "--max-new-tokens", "3", "--batch-size", "2", "--device", "cpu", *extra]


@pytest.fixture
def eval_rows(tmp_path, capsys, tiny_chat_model_dir) -> Path:
    prompts = write_prompts(tmp_path, capsys)
    out = tmp_path / "eval_he.jsonl"
    assert main(data_argv(out, prompts, tiny_chat_model_dir, "--eval-only")) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-2].startswith("check       off (--eval-only")
    assert json.loads(printed[-1])["rows"] == 3
    return out


def test_written_prompts_are_the_bench_prompts_and_rewriting_is_idempotent(tmp_path, capsys):
    path = write_prompts(tmp_path, capsys, limit=5)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["id"], r["prompt"]) for r in rows] == [(p.id, p.text) for p in load_suite("humaneval", 5)]
    before = path.read_text()
    write_prompts(tmp_path, capsys, limit=5)  # the same file again: left as it is
    assert path.read_text() == before
    assert main(["bench", "--suite", "humaneval", "--limit", "4", "--write-prompts", str(path)]) == 2
    assert "exists and holds something else" in capsys.readouterr().err
    assert path.read_text() == before  # never overwritten


def test_eval_only_answers_held_out_prompts_and_marks_every_row(eval_rows, tmp_path, capsys, tiny_chat_model_dir):
    rows = read_rows(eval_rows)
    assert sorted(r["id"] for r in rows) == sorted(p.id for p in load_suite("humaneval", 3))  # length-sorted batches
    assert all(r["eval_only"] is True for r in rows)
    meta = json.loads(meta_path(eval_rows).read_text())
    assert meta["eval_only"] is True and meta["decontamination"] is None
    # the same prompts without --eval-only are held out, every one of them
    assert main(data_argv(tmp_path / "train.jsonl", tmp_path / "he_prompts.jsonl", tiny_chat_model_dir)) == 2
    assert "no prompt left to answer after deduplication and decontamination" in capsys.readouterr().err


def test_resuming_with_the_other_kind_is_refused(eval_rows, tmp_path, capsys, tiny_chat_model_dir):
    assert main(data_argv(eval_rows, tmp_path / "he_prompts.jsonl", tiny_chat_model_dir)) == 2
    assert "the output was made with --eval-only" in capsys.readouterr().err
    assert all(r["eval_only"] for r in read_rows(eval_rows)) and len(read_rows(eval_rows)) == 3


def test_training_paths_refuse_eval_only_rows_and_evaluation_reads_them(eval_rows):
    with pytest.raises(D3DError, match="holds eval-only rows"):
        load_examples([eval_rows], VOCAB, max_length=64)
    with pytest.raises(D3DError, match="holds eval-only rows"):
        response_token_counts([str(eval_rows)], VOCAB)  # the drafting vocabulary is counted on training data
    examples, report = load_examples([eval_rows], VOCAB, max_length=64, eval_only_ok=True)
    assert report.kept == len(examples) == 3


def test_eval_drafter_reads_eval_only_rows_but_will_not_calibrate_on_them(eval_rows, tmp_path, capsys,
                                                                         tiny_chat_model_dir):
    target = load_decoder(tiny_chat_model_dir)
    drafter_dir = tmp_path / "drafter"
    Drafter.from_base(tiny_chat_model_dir, [0, 1], 4, 96, "", target=target).save_pretrained(drafter_dir)
    argv = ["eval-drafter", "--target", str(tiny_chat_model_dir), "--drafter", str(drafter_dir),
            "--data", str(eval_rows)]
    assert main(argv) == 0 and json.loads(capsys.readouterr().out.strip().splitlines()[-1])["rows"] == 3
    assert main(argv + ["--save"]) == 2
    assert "never train or calibrate one" in capsys.readouterr().err
    assert not (drafter_dir / "acceptance.json").exists()


def test_one_marked_row_is_enough_to_refuse_a_file(eval_rows, tmp_path):
    rows = read_rows(eval_rows)
    mixed = tmp_path / "mixed.jsonl"
    plain = [{k: v for k, v in r.items() if k != "eval_only"} for r in rows]
    mixed.write_text("".join(json.dumps(r) + "\n" for r in plain[:2] + rows[2:]))
    with pytest.raises(D3DError, match="holds eval-only rows"):
        load_examples([mixed], VOCAB, max_length=64)
    mixed.write_text("".join(json.dumps(r) + "\n" for r in plain))
    assert load_examples([mixed], VOCAB, max_length=64)[1].kept == 3


@pytest.mark.parametrize("extra", [dict(exclude=(Path("x.jsonl"),)), dict(self_instruct=4)])
def test_eval_only_takes_prompts_as_given(tmp_path, extra):
    DataConfig(out=tmp_path / "x.jsonl", prompts=(tmp_path / "p.jsonl",), eval_only=True).validate()  # fine alone
    with pytest.raises(D3DError, match="--eval-only answers evaluation prompts as given"):
        DataConfig(out=tmp_path / "x.jsonl", prompts=(tmp_path / "p.jsonl",), eval_only=True, **extra).validate()
