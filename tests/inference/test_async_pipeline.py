"""Asynchronous decoding through the pipeline, `d3d generate` and `d3d bench`."""

from __future__ import annotations

import io
import json

import pytest
import torch

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.errors import D3DError
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.inference.async_engine import AsyncConfig, AsyncDecodeStats
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline, worker_drafter


def test_worker_loads_the_same_drafter_as_the_pipeline(tiny_chat_model_dir):
    pipe = Pipeline.load(str(tiny_chat_model_dir), block_size=4, device="cpu")
    here = pipe.drafter.drafter
    there = worker_drafter(pipe.target.name, str(tiny_chat_model_dir), None, 4, torch.float32, "cpu")
    ids = torch.randint(0, 90, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(there.draft_logits(there.new_cache(), ids), here.draft_logits(here.new_cache(), ids))
    assert there.config.layers == here.config.layers and there.block_size == 4
    assert len(there.model.model.layers) == len(here.config.layers)


def test_pipeline_async_equals_ar_with_an_auto_budget(tiny_chat_model_dir, capsys):
    pipe = Pipeline.load(str(tiny_chat_model_dir), block_size=4, device="cpu",
                         async_config=AsyncConfig(backend="thread"))
    ids = pipe.target.encode_chat("w10 w11 w12")
    ar, _ = pipe.generate(ids, "ar", GenerationConfig(max_new_tokens=20))
    got, stats = pipe.generate(ids, "async", GenerationConfig(max_new_tokens=20))
    pipe.close()
    assert got == ar and isinstance(stats, AsyncDecodeStats) and stats.backend == "thread"
    assert "(auto)" in capsys.readouterr().err and pipe.async_runner.choice is not None
    assert stats.budget == str(pipe.async_runner.choice.budget)


def test_generate_async_in_a_worker_process(tiny_chat_model_dir, tmp_path, capsys):
    timeline = tmp_path / "t.json"
    code = main(["generate", "--prompt", "w9 w10", "--target", str(tiny_chat_model_dir), "--max-new-tokens", "16",
                 "--block-size", "4", "--mode", "async", "--budget", "2,2", "--compare", "--json",
                 "--timeline", str(timeline), "--draft-threads", "1", "--target-threads", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "identical output: yes" in captured.out and "hit rate" in captured.out
    stats = json.loads(captured.out.strip().splitlines()[-1])["stats"]
    assert stats["backend"] == "process" and stats["budget"] == "C=2,F=2" and stats["n_async"] == 4 * 4
    record = json.loads(timeline.read_text())
    kinds = {e["kind"] for e in record["events"]}
    assert {"verify", "successors", "draft"} <= kinds and timeline.with_suffix(".png").stat().st_size > 0


@pytest.mark.parametrize("argv, message", [
    (["--budget", "3"], "budget"), (["--budget", "0,2"], "budget"), (["--draft-threads", "0"], "--draft-threads"),
])
def test_bad_async_flags_are_one_line(tiny_chat_model_dir, capsys, argv, message):
    code = main(["generate", "--prompt", "w9", "--target", str(tiny_chat_model_dir), "--mode", "async", *argv])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and message in err and err.count("\n") == 1


def test_bench_reports_async_against_sync(tiny_chat_model_dir, tmp_path):
    suite = tmp_path / "prompts.jsonl"
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(["w10 w11", "w20 w30"])))
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=10, device="cpu",
                      modes=("sync", "async"), budget="2,1", async_backend="thread", block_size=4,
                      out=str(tmp_path / "r.jsonl"), timeline=str(tmp_path / "tl.json"))
    out = io.StringIO()
    summary = run_bench(cfg, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[-2:] == ["hit", "hidden"] and json.loads(lines[-1]) == summary
    a, s = summary["async"], summary["sync"]
    assert a["identical"] is True and a["budget"] == "C=2,F=1" and a["fallbacks"] == 0
    assert {"hit_rate", "hidden_share", "mean_td_ms", "mean_tv_ms", "speedup_vs_sync"} <= set(a)
    assert s["hit_rate"] is None and s["hidden_share"] == 0.0 and s["mean_tv_ms"] > 0
    assert (tmp_path / "tl.png").exists()
    # settings only async reads do not split results files of runs without async
    assert "budget" not in BenchConfig(modes=("sync",)).results_key()


def test_bench_sweeps_budgets_with_one_worker(tiny_chat_model_dir, tmp_path):
    suite = tmp_path / "prompts.jsonl"
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(["w10 w11", "w20 w30"])))
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=10, device="cpu",
                      modes=("sync", "async"), sweep=("1,1", "3,2"), async_backend="thread", block_size=4,
                      out=str(tmp_path / "r.jsonl"))
    assert cfg.run_modes == ("ar", "sync", "async@1,1", "async@3,2")
    summary = run_bench(cfg, io.StringIO())
    assert list(summary) == ["ar", "sync", "async@1,1", "async@3,2"]
    for mode, (c, f) in (("async@1,1", (1, 1)), ("async@3,2", (3, 2))):
        s = summary[mode]
        assert s["identical"] is True and s["budget"] == f"C={c},F={f}" and s["n_async"] == 4 * ((c - 1) * f + 2)
        assert s["speedup_vs_sync"] > 0 and s["hit_rate"] is not None
    with pytest.raises(D3DError, match="needs the async mode"):
        BenchConfig(modes=("sync",), sweep=("2,1",)).validate()
    with pytest.raises(D3DError, match="budget must be"):
        BenchConfig(modes=("async",), sweep=("2",)).validate()
