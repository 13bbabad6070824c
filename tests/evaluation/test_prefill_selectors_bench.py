"""Prefill selectors in `d3d bench` and `d3d generate`: one mode per (retention, selector), recorded."""

from __future__ import annotations

import io
import json

import pytest

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.evaluation import bench
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.evaluation.prefill_metrics import keep_mode, keep_modes, mode_keep, mode_selector
from d3d.evaluation.prompt import Prompt
from d3d.inference.selectors import DEFAULT_SELECTOR

LONG = " ".join(f"w{8 + i % 89}" for i in range(300))  # 300 words: 256 of them are the protected instruction


@pytest.fixture
def config(tiny_chat_model_dir, tmp_path):
    def make(**overrides) -> BenchConfig:
        base = dict(suite="longctx", target=str(tiny_chat_model_dir), max_new_tokens=4, device="cpu",
                    out=str(tmp_path / "results.jsonl"), modes=("sync",), prefill_keep=(0.9,))
        return BenchConfig(**{**base, **overrides})

    return make


def test_every_selector_runs_in_the_same_run_and_is_recorded(config, monkeypatch):
    prompts = [Prompt("a", LONG, ("w9",), "contains", "any")]
    monkeypatch.setattr(bench, "load_suite", lambda name, limit=None: prompts[:limit])
    out = io.StringIO()
    summary = run_bench(config(prefill_select="lexical,random,last,target-layers", prefill_layers="1-2"), out)
    keeps = ["sync@keep0.9@lexical", "sync@keep0.9@random", "sync@keep0.9@last", "sync@keep0.9@target-layers"]
    assert list(summary) == ["ar", "sync", *keeps]
    for mode in keeps:
        assert summary[mode]["selector"] == mode_selector(mode) and 0.8 < summary[mode]["kept_share"] < 1.0
        assert summary[mode]["ttft_speedup"] > 0 and summary[mode]["score"] in (0.0, 1.0)
    assert any("sync@keep0.9@target-layers" in line for line in out.getvalue().splitlines())


def test_the_default_selector_is_named_and_the_probe_alone_keeps_the_old_names_and_key(config):
    assert DEFAULT_SELECTOR == "lexical" and config().run_modes == ("ar", "sync", "sync@keep0.9@lexical")
    assert config().results_key()["prefill_select"] == "lexical"
    probe = config(prefill_select="probe")  # the plain names and key of results files from before selectors
    assert probe.run_modes == ("ar", "sync", "sync@keep0.9") and mode_selector("sync@keep0.9") == "probe"
    assert "prefill_select" not in probe.results_key() and "prefill_layers" not in probe.results_key()
    assert config(prefill_select="probe,lexical").run_modes[2:] == ("sync@keep0.9@probe", "sync@keep0.9@lexical")
    assert "prefill_layers" in config(prefill_select="target-layers+lexical").results_key()


def test_mode_names_round_trip():
    assert keep_mode(0.2, "target-layers+lexical") == "sync@keep0.2@target-layers+lexical"
    assert mode_keep("sync@keep0.2@lexical") == 0.2 and mode_selector("sync@keep0.2@lexical") == "lexical"
    assert mode_selector("sync@keep0.2") == "probe" and mode_selector("async@4,1") is None
    assert keep_modes((0.1, 0.2), ("last", "random")) == [
        "sync@keep0.1@last", "sync@keep0.1@random", "sync@keep0.2@last", "sync@keep0.2@random"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["generate", "--prompt", "hi", "--prefill-keep", "0.2", "--prefill-select", "bm25"], "unknown prefill selector"),
        (["generate", "--prompt", "hi", "--prefill-keep", "0.2", "--prefill-select", "last,random"], "one selector"),
        (["generate", "--prompt", "hi", "--prefill-keep", "0.2", "--prefill-layers", "7-3"], "probe layers"),
        (["bench", "--prefill-keep", "0.2", "--prefill-select", "probe,nope"], "unknown prefill selector"),
        (["bench", "--prefill-keep", "0.2", "--prefill-layers", "x"], "probe layers"),
    ],
)
def test_bad_selector_flags_are_one_line_and_exit_2(capsys, argv, message):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert err.startswith("d3d: error:") and message in err and err.count("\n") == 1


def test_generate_names_the_selector(tiny_chat_model_dir, capsys):
    code = main(["generate", "--prompt", LONG, "--target", str(tiny_chat_model_dir), "--prefill-keep", "0.9",
                 "--prefill-chunk", "8", "--prefill-select", "lexical", "--max-new-tokens", "3", "--device", "cpu",
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0 and "selector lexical" in captured.err and "selector lexical" in captured.out
    assert json.loads(captured.out.strip().splitlines()[-1])["stats"]["selector"] == "lexical"
