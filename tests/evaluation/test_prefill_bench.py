"""Selective prefill in `d3d bench` and on the command line: keep modes, scores, speedups, bad input."""

from __future__ import annotations

import io
import json

import pytest

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.evaluation import bench
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.evaluation.prefill_metrics import keep_mode, mode_keep, prefill_summary
from d3d.evaluation.suites import Prompt

LONG = " ".join(f"w{8 + i % 89}" for i in range(300))  # 300 words: 256 of them are the protected instruction


@pytest.fixture
def config(tiny_chat_model_dir, tmp_path):
    def make(**overrides) -> BenchConfig:
        base = dict(suite="longctx", target=str(tiny_chat_model_dir), max_new_tokens=8, device="cpu",
                    out=str(tmp_path / "results.jsonl"), modes=("sync",))
        return BenchConfig(**{**base, **overrides})

    return make


@pytest.fixture
def scored_suite(monkeypatch):
    prompts = [Prompt("a", LONG, ("w",), "contains", "any"), Prompt("b", "w9 " + LONG, ("nothing",), "contains", "none")]
    monkeypatch.setattr(bench, "load_suite", lambda name, limit=None: prompts[:limit])
    return prompts


def test_keep_modes_report_scores_and_speedups(config, scored_suite):
    out = io.StringIO()
    summary = run_bench(config(prefill_keep=(0.9,)), out)
    lines = out.getvalue().splitlines()
    assert json.loads(lines[-1]) == summary
    assert list(summary) == ["ar", "sync", "sync@keep0.9@lexical"]  # the default selector, named
    keep = summary["sync@keep0.9@lexical"]
    assert keep["identical"] is None and summary["sync"]["identical"] is True
    assert 0.8 < keep["kept_share"] < 1.0  # the 300-word turn lost some chunks, within rho
    for mode in summary:
        assert summary[mode]["score"] == 0.5 and summary[mode]["score_by_task"] == {"any": 1.0, "none": 0.0}
        assert summary[mode]["ttft_speedup"] > 0 and summary[mode]["decode_speedup"] > 0
    assert summary["ar"]["ttft_speedup"] == 1.0
    assert any(line.split()[:3] == ["mode", "score", "kept"] for line in lines)
    again = run_bench(config(prefill_keep=(0.9,)), io.StringIO())  # resumes: nothing left to run
    assert again == summary


def test_unscored_suites_without_keep_modes_keep_the_old_summary(config, tmp_path):
    suite = tmp_path / "p.jsonl"
    suite.write_text(json.dumps({"prompt": "w10 w11 w12"}) + "\n")
    summary = run_bench(config(suite=str(suite)), io.StringIO())
    assert "score" not in summary["sync"] and "ttft_speedup" not in summary["sync"]
    assert "prefill_keep" not in config(suite=str(suite)).results_key()  # old results files still resume


def test_prefill_summary_ratios():
    ar = [{"new_tokens": 11, "total_s": 3.0, "prefill_s": 2.0, "score": 1.0, "task": "t"}]
    keep = [{"new_tokens": 6, "total_s": 1.0, "prefill_s": 0.3, "select_s": 0.2, "ttft_s": 0.5, "score": 0.0,
             "task": "t", "prompt_tokens": 20, "full_prompt_tokens": 100}]
    s = prefill_summary(keep, ar)
    assert s["ttft_speedup"] == 4.0  # 2.0 / 0.5
    assert s["decode_speedup"] == 1.0  # 10 tokens in 1 s against 5 tokens in 0.5 s
    assert s["kept_share"] == 0.2 and s["score"] == 0.0 and s["mean_ttft_ms"] == 500.0


def test_keep_mode_names_round_trip():
    assert keep_mode(0.1) == "sync@keep0.1" and mode_keep("sync@keep0.25") == 0.25 and mode_keep("async@4,1") is None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["generate", "--prompt", "hi", "--prefill-keep", "1.5"], "prefill keep"),
        (["generate", "--prompt", "hi", "--prefill-keep", "0"], "prefill keep"),
        (["generate", "--prompt", "hi", "--prefill-keep", "x"], "prefill keep"),
        (["generate", "--prompt", "hi", "--prefill-keep", "0.2", "--mode", "async"], "--mode sync or ar"),
        (["generate", "--prompt", "hi", "--prefill-keep", "0.2", "--mode", "ar", "--prefill-select", "probe"],
         "probe needs a drafter"),
        (["generate", "--prompt", "hi", "--prefill-keep", "0.2,0.3"], "one retention"),
        (["generate", "--prompt", "hi", "--prefill-keep", "0.2", "--prefill-chunk", "0"], "--prefill-chunk"),
        (["bench", "--prefill-keep", "0.1,-0.2"], "prefill keep"),
    ],
)
def test_bad_prefill_flags_are_one_line_and_exit_2(capsys, argv, message):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert err.startswith("d3d: error:") and message in err and err.count("\n") == 1


def test_generate_with_prefill_keep_says_the_prompt_was_reduced(tiny_chat_model_dir, capsys):
    """No --mode with --prefill-keep: sync (the default tree does not run a reduced prompt)."""
    code = main(["generate", "--prompt", LONG, "--target", str(tiny_chat_model_dir), "--prefill-keep", "0.9",
                 "--prefill-chunk", "8", "--max-new-tokens", "4", "--device", "cpu", "--compare"])
    captured = capsys.readouterr()
    assert code == 0 and "mode sync |" in captured.out
    assert "reduced prompt" in captured.err and "selective prefill: the target read" in captured.out
    read, of = (int(x) for x in captured.out.split("the target read ")[1].split(" prompt tokens")[0].split(" of "))
    assert read <= 0.9 * of < of and "not expected" in captured.out


def test_generate_ar_with_prefill_keep_decodes_the_reduced_prompt_without_a_drafter(tiny_chat_model_dir, capsys, monkeypatch):
    from d3d.inference import pipeline

    monkeypatch.setattr(pipeline, "load_drafter", lambda *a, **kw: pytest.fail("plain decoding loaded a drafter"))
    code = main(["generate", "--prompt", LONG, "--target", str(tiny_chat_model_dir), "--mode", "ar", "--prefill-keep", "0.9",
                 "--prefill-chunk", "8", "--max-new-tokens", "4", "--device", "cpu"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "mode ar | 4 tokens" in captured.out and "selector lexical" in captured.out
    read, of = (int(x) for x in captured.out.split("the target read ")[1].split(" prompt tokens")[0].split(" of "))
    assert read <= 0.9 * of < of
