"""`d3d bench` modes on other builds of the target (ar@float32, sync@int8) and the llama.cpp mode."""

from __future__ import annotations

import io
import json
import sys

import pytest

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.errors import D3DError
from d3d.evaluation.bench import BenchConfig, format_table, run_bench
from d3d.evaluation.variants import add_fastest_plain, reference_of, split_variant, with_references
from d3d.models import quantize


def test_variant_names():
    assert split_variant("sync@int8") == ("sync", "int8")
    assert split_variant("ar@float32+int8") == ("ar", "float32+int8")
    assert split_variant("async@2,1") == ("async@2,1", None)  # a budget, not a variant
    assert split_variant("sync@keep0.3") == ("sync@keep0.3", None)
    assert with_references(["ar", "sync", "sync@int8", "ar@float32"]) == ["ar", "sync", "ar@int8", "sync@int8",
                                                                            "ar@float32"]
    assert reference_of("sync@int8") == "ar@int8" and reference_of("ar@int8") == "ar" == reference_of("sync")


def test_speedup_against_the_fastest_plain_decoding_is_per_token():
    summary = {"ar": {"tokens_per_s": 10.0}, "ar@float32": {"tokens_per_s": 20.0}, "sync": {"tokens_per_s": 15.0},
               "llamacpp": {"tokens_per_s": 30.0}}
    add_fastest_plain(summary)
    assert summary["sync"]["fastest_plain"] == "ar@float32" and summary["sync"]["speedup_vs_fastest_plain"] == 0.75
    assert summary["sync"]["speedup_vs_llamacpp"] == 0.5 and summary["ar"]["speedup_vs_fastest_plain"] == 0.5


def test_sync_on_int8_weights_is_compared_with_int8_plain_decoding(tiny_chat_model_dir, tmp_path, monkeypatch):
    """Coarse weights (5 levels) make the quantized target another model than the dense one: sync on
    it must equal plain decoding on it, not the run's dense plain decoding."""
    monkeypatch.setattr(quantize, "INT8_MAX", 2)
    suite = tmp_path / "prompts.jsonl"
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(["w10 w11", "w40 w9"])))
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=10, device="cpu", dtype="float32",
                      modes=("sync@int8", "ar@bfloat16"), block_size=4, drafter="untrained", out=str(tmp_path / "r.jsonl"))
    out = io.StringIO()
    summary = run_bench(cfg, out)
    assert list(summary) == ["ar", "ar@int8", "sync@int8", "ar@bfloat16"]
    assert summary["sync@int8"]["identical"] is True and summary["sync@int8"]["divergences"] == 0
    assert summary["ar@int8"]["identical"] is False and summary["ar@int8"]["agreement_with_ar"]["identical_prompts"] < 2
    assert "divergences" not in summary["ar@int8"]  # another model: agreement, not a losslessness check
    assert summary["sync@int8"]["fastest_plain"] in ("ar", "ar@int8", "ar@bfloat16")
    assert "vs best" in out.getvalue().splitlines()[0] and format_table(summary)


def test_tree_modes_on_int8_weights_equal_int8_plain_decoding(tiny_chat_model_dir, tmp_path, monkeypatch):
    """tree@int8 (both branches, and each alone) runs on the quantized target with the run's tree
    settings: every output equals ar@int8's, the tree shape is reported, and ar@int8 itself differs
    from the dense ar (5 weight levels), so the comparison is with the right reference."""
    monkeypatch.setattr(quantize, "INT8_MAX", 2)
    suite = tmp_path / "prompts.jsonl"
    prompts = ["w10 w11 w12 w10 w11 w12", "w40 w9 w40 w9"]
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    modes = ("tree@int8", "tree-drafter@int8", "tree-lookup@int8")
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=10, device="cpu", dtype="float32",
                      modes=modes, block_size=4, drafter="untrained", out=str(tmp_path / "r.jsonl"))
    summary = run_bench(cfg, io.StringIO())
    assert list(summary) == ["ar", "ar@int8", *modes]
    assert summary["ar@int8"]["agreement_with_ar"]["identical_prompts"] < 2
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()[1:]]
    for mode in modes:
        assert summary[mode]["identical"] is True and summary[mode]["divergences"] == 0, mode
        assert all(r["results"][mode]["tokens"] == r["results"]["ar@int8"]["tokens"] for r in rows), mode
        assert sum(summary[mode]["wins"].values()) == summary[mode]["rounds"], mode
    assert summary["tree-lookup@int8"]["drafter_share"] == 0
    assert BenchConfig(modes=("tree@int8",)).results_key()["tree_branches"] == "drafter,lookup"


def test_llamacpp_without_the_extra_is_one_line(tiny_chat_model_dir, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp raises ImportError
    with pytest.raises(D3DError, match=r"pip install '\.\[llamacpp\]'"):
        BenchConfig(modes=("llamacpp",)).validate()
    code = main(["bench", "--modes", "ar,llamacpp", "--target", str(tiny_chat_model_dir), "--limit", "1"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "llama-cpp-python" in err and err.count("\n") == 1


def test_unknown_variant_is_an_unknown_mode():
    with pytest.raises(D3DError, match="unknown mode 'sync@int3'"):
        BenchConfig(modes=("sync@int3",)).validate()


def test_block_size_variant_drafts_shorter_blocks_with_the_run_target(tiny_chat_model_dir, tmp_path):
    """sync@b3 beside sync (B=5) in one run: the same target (no ar@b3 reference is added, both are
    compared with the run's ar and equal it), and no round of sync@b3 drafts more than B-1 = 2
    tokens, where sync drafts up to 4."""
    suite = tmp_path / "prompts.jsonl"
    prompts = ["w10 w11 w12 w10 w11 w12", "w40 w9 w40 w9"]
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=12, device="cpu",
                      dtype="float32", modes=("sync", "sync@b3"), block_size=5, drafter="untrained",
                      draft_length="5", out=str(tmp_path / "r.jsonl"))
    summary = run_bench(cfg, io.StringIO())
    assert list(summary) == ["ar", "sync", "sync@b3"]
    for mode in ("sync", "sync@b3"):
        assert summary[mode]["identical"] is True and summary[mode]["divergences"] == 0, mode
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()[1:]]
    assert reference_of("sync@b3") == "ar" and split_variant("ar@b3") == ("ar@b3", None)
    assert split_variant("sync@int8+b3") == ("sync", "int8+b3") and reference_of("sync@int8+b3") == "ar@int8+b3"
    assert split_variant("sync@b1") == ("sync@b1", None) and split_variant("sync@b3+b4") == ("sync@b3+b4", None)
    widest = {m: max(rows_ for r in rows for _, rows_ in r["results"][m]["passes"]) for m in ("sync", "sync@b3")}
    assert widest == {"sync": 5, "sync@b3": 3}  # anchor + B-1 drafted tokens per verification


def test_back_off_variant_drafts_every_round_beside_the_default(tiny_chat_model_dir, tmp_path):
    """sync@skip0 beside sync, an untrained drafter, the adaptive verification length: sync's back-off takes
    plain steps while drafting loses, sync@skip0 never does; both equal the run's ar."""
    suite = tmp_path / "prompts.jsonl"
    prompts = ["w10 w11 w12 w10 w11 w12", "w40 w9 w40 w9"]
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=40, device="cpu",
                      dtype="float32", modes=("sync", "sync@skip0"), block_size=5, drafter="untrained",
                      out=str(tmp_path / "r.jsonl"))
    summary = run_bench(cfg, io.StringIO())
    assert list(summary) == ["ar", "sync", "sync@skip0"]
    for mode in ("sync", "sync@skip0"):
        assert summary[mode]["identical"] is True and summary[mode]["divergences"] == 0, mode
    assert summary["sync"]["skipped_rounds"] > 0 and summary["sync@skip0"]["skipped_rounds"] == 0
    assert reference_of("sync@skip0") == "ar" and split_variant("sync@new+skip0") == ("sync", "new+skip0")
    for not_one in ("ar@skip0", "tree@skip0", "async@skip0", "sync@skip0+skip2"):
        assert split_variant(not_one) == (not_one, None), not_one
