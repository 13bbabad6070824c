"""Tests for d3d.training.rescore (`d3d data --rescore`): top-k added to rows written without it.

On the conftest's tiny chat model (float32): rows generated greedy with `--top-k-logits`, stripped
of their top-k and rescored, get back exactly the fields generation wrote; an interrupted run
resumes to the same file; bad inputs are one-line D3DErrors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from d3d.cli import main
from d3d.errors import D3DError
from d3d.inference.pipeline import Target, load_target
from d3d.jsonl import read_records
from d3d.training.data import DataConfig, generate_dataset
from d3d.training.data_journal import read_rows
from d3d.training.rescore import RescoreConfig, rescore

K = 4


@pytest.fixture(scope="module")
def chat_target(tiny_chat_model_dir) -> Target:
    return load_target(str(tiny_chat_model_dir), "cpu", "float32")


def word_prompts(n: int) -> list[dict]:
    """Distinct prompts of varied lengths the tiny word-level tokenizer knows."""
    return [{"id": f"p{i}", "prompt": " ".join(f"w{10 + i + k}" for k in range(1 + i % 5))} for i in range(n)]


@pytest.fixture(scope="module")
def generated(tmp_path_factory, chat_target) -> tuple[Path, Path]:
    """(rows generated with top-k, the same rows and meta.json written without it) in one folder."""
    folder = tmp_path_factory.mktemp("rescore")
    prompts = folder / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in word_prompts(11)))
    with_topk = folder / "with_topk.jsonl"
    generate_dataset(DataConfig(out=with_topk, prompts=(prompts,), max_new_tokens=9, batch_size=3, greedy=True,
                                top_k_logits=K, progress=False), target=chat_target)
    # Varied response lengths (the tiny model never stops early): row i keeps its first 2 + i % 8
    # tokens. A prefix's top-k is the full row's, since position t sees only what precedes it.
    cut = [{k: v[: 2 + i % 8] if k.endswith("_ids") and k != "prompt_ids" or k == "topk_logprobs" else v
            for k, v in row.items()} for i, row in enumerate(read_rows(with_topk))]
    with_topk.write_text("".join(json.dumps(r) + "\n" for r in cut))
    plain = folder / "plain.jsonl"
    rows = [{k: v for k, v in row.items() if not k.startswith("topk_")} for row in cut]
    plain.write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = json.loads((folder / "with_topk.meta.json").read_text())
    (folder / "plain.meta.json").write_text(json.dumps(meta | {"responses": {"kind": "native"}}))
    return with_topk, plain


def config(source: Path, out: Path, **overrides) -> RescoreConfig:
    return RescoreConfig(**(dict(source=source, out=out, top_k=K, batch_size=4, progress=False) | overrides))


def assert_same_rows(got: list[dict], want: list[dict]) -> None:
    """Rescored rows are the generated ones: same keys in the same order, every field but
    topk_logprobs equal, log-probabilities at 3 decimals and equal up to one rounding step.

    Why not exact equality: generation reads position t from a cached one-token pass, rescoring from
    one batched teacher-forced pass; in float32 their log-softmax values differ around 1e-7, which
    flips the third decimal where a value sits on a rounding boundary. On the tiny model every value
    is equal (checked below: at least 99%); on SmolLM2-135M 59 of 15,032 stored values differed by
    0.001 (12 rows of the mix archive), every top-k id equal.
    """
    assert [list(r) for r in got] == [list(r) for r in want]
    strip = lambda rows: [{k: v for k, v in r.items() if k != "topk_logprobs"} for r in rows]  # noqa: E731
    assert strip(got) == strip(want)
    pairs = [(a, b) for g, w in zip(got, want) for ga, wa in zip(g["topk_logprobs"], w["topk_logprobs"])
             for a, b in zip(ga, wa, strict=True)]
    assert len(pairs) == sum(len(r["topk_ids"]) * K for r in want)
    assert all(round(a, 3) == a and abs(a - b) < 1.0001e-3 for a, b in pairs)
    assert sum(a == b for a, b in pairs) >= 0.99 * len(pairs)


class Interrupt(Exception):
    pass


def stop_after_first_batch(index: int) -> None:
    raise Interrupt


def test_rescored_rows_equal_what_generation_recorded(tmp_path, generated, chat_target):
    with_topk, plain = generated
    out = tmp_path / "rescored.jsonl"
    report = rescore(config(plain, out), target=chat_target)
    want, got = read_rows(with_topk), read_rows(out)
    assert len({len(r["response_ids"]) for r in want}) == 8 and all(len(r["topk_ids"][0]) == K for r in want)
    assert_same_rows(got, want)
    assert (report.rows, report.written, report.already_done, report.mismatches) == (11, 11, 0, 0)
    meta = json.loads((tmp_path / "rescored.meta.json").read_text())
    assert meta["responses"] == {"kind": "native", "top_k_logits": K} and meta["rows"] == 11
    assert meta["rescored"]["source"] == str(plain) and meta["rescored"]["dtype"] == "float32"
    assert meta["rescored"]["argmax_mismatches"] == 0
    assert meta["tokenizer_fingerprint"] == json.loads(plain.with_name("plain.meta.json").read_text())[
        "tokenizer_fingerprint"]


def test_recorded_tokens_that_are_not_the_argmax_are_counted_not_dropped(tmp_path, generated, chat_target):
    _, plain = generated
    rows = read_records(plain)
    first = rows[0]["response_ids"]
    rows[0]["response_ids"] = [(first[0] + 1) % 90] + first[1:]  # not the argmax at position 0
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = rescore(config(edited, tmp_path / "out.jsonl"), target=chat_target)
    assert report.mismatches >= 1 and report.mismatched_rows == 1 and len(read_rows(tmp_path / "out.jsonl")) == 11


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_interrupted_rescore_resumes_to_the_uninterrupted_output(tmp_path, generated, chat_target, suffix):
    _, plain = generated
    whole, parts = tmp_path / f"whole{suffix}", tmp_path / f"parts{suffix}"
    rescore(config(plain, whole), target=chat_target)
    with pytest.raises(Interrupt):
        rescore(config(plain, parts), target=chat_target, on_batch=stop_after_first_batch)
    journal = parts if suffix == ".jsonl" else tmp_path / "parts.parquet.journal.jsonl"
    assert [r["id"] for r in read_rows(journal)] == [r["id"] for r in read_records(plain)[:4]]
    with journal.open("a") as handle:  # a write torn by a kill
        handle.write('{"id": "p9", "source": "prom')
    report = rescore(config(plain, parts), target=chat_target)
    assert (report.already_done, report.written, report.rows) == (4, 7, 11)
    assert read_rows(parts) == read_rows(whole)
    assert suffix == ".parquet" or parts.read_bytes() == whole.read_bytes()
    again = rescore(config(plain, parts), target=chat_target)
    assert (again.already_done, again.written, again.mismatches) == (11, 0, 0)
    with pytest.raises(D3DError, match="other settings"):
        rescore(config(plain, parts, top_k=K + 1), target=chat_target)


def test_refusals_are_one_line_d3d_errors(tmp_path, generated, chat_target):
    with_topk, plain = generated
    rows = read_records(plain)

    def write(name: str, content: list[dict], meta: dict | None = None) -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in content))
        if meta is not None:
            path.with_name(path.stem + ".meta.json").write_text(json.dumps(meta))
        return path

    out = tmp_path / "out.jsonl"
    cases = [
        (config(tmp_path / "missing.jsonl", out), "not found"),
        (config(plain, plain), "must differ"),
        (config(plain, plain.with_suffix(".parquet")), "overwrite"),
        (config(plain, out, top_k=0), "between 1 and"),
        (config(with_topk, out), "already has top-k"),
        (config(write("no_ids.jsonl", [{"id": "a", "prompt": "x", "response_ids": [5, 6]}]), out),
         "lacks an id, prompt_ids or response_ids"),
        (config(write("no_resp.jsonl", [{k: v for k, v in rows[0].items() if k != "response_ids"}]), out),
         "lacks an id, prompt_ids or response_ids"),
        (config(write("other_tok.jsonl", rows, {"tokenizer_fingerprint": "0123456789abcdef"}), out),
         "another tokenizer"),
    ]
    for cfg, message in cases:
        with pytest.raises(D3DError, match=message):
            rescore(cfg, target=chat_target)
    assert not out.exists()
    write("foreign.jsonl", [{**rows[1], "topk_ids": [[1]], "topk_logprobs": [[0.0]]}])
    with pytest.raises(D3DError, match="not the first rows"):
        rescore(config(plain, tmp_path / "foreign.jsonl"), target=chat_target)


def test_cli_rescore_runs_and_refuses_prompt_sources(tmp_path, generated, tiny_chat_model_dir, capsys):
    with_topk, plain = generated
    out = tmp_path / "cli.jsonl"
    argv = ["data", "--rescore", str(plain), "--out", str(out), "--top-k-logits", str(K), "--target",
            str(tiny_chat_model_dir), "--device", "cpu", "--dtype", "float32", "--batch-size", "5"]
    assert main(argv) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-2].startswith("check       0 positions") and json.loads(printed[-1])["rows"] == 11
    assert_same_rows(read_rows(out), read_rows(with_topk))
    assert main(argv + ["--prompts", str(plain)]) == 2
    assert "cannot be combined with --prompts" in capsys.readouterr().err
    assert main(argv[:5] + ["--target", str(tiny_chat_model_dir)]) == 2  # K defaults to 0
    assert "--top-k-logits between 1 and 64" in capsys.readouterr().err
