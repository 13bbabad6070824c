"""`d3d bench` modes sync@dint8, async@dint8, tree@dint8 ...: the run's drafter at int8 runtime weights
(`ddense`: dense ones) on the run's target, compared with the run's own `ar`."""

from __future__ import annotations

import io
import json

import pytest
from torch import nn

from d3d.errors import D3DError
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.evaluation.variants import (
    Variant, changes_drafter, check_drafter_modes, cross_target, parse_drafter_variants, parse_variant, pipeline_for,
    reference_of, split_variant, with_references,
)
from d3d.inference.pipeline import Pipeline
from d3d.models import quantize
from d3d.models.quantize import Int8Linear
from tests.evaluation.test_bench_drafter_variants import fake_drafter_dir, save_drafter


def test_drafter_weight_mode_names():
    assert split_variant("sync@dint8") == ("sync", "dint8")
    assert parse_variant("dint8") == Variant(drafter_weights="int8")
    assert parse_variant("new+dint8") == Variant(drafter="new", drafter_weights="int8")
    assert parse_variant("dint8+b8") == Variant(block_size=8, drafter_weights="int8")
    assert parse_variant("ddense") == Variant(drafter_weights="dense") and parse_variant("dint8+ddense") is None
    assert split_variant("tree@dint8") == ("tree", "dint8") and split_variant("async@dint8+b8") == ("async", "dint8+b8")
    assert reference_of("sync@dint8") == "ar" and not cross_target("sync@dint8")  # the run's target: compared with ar
    assert with_references(["ar", "sync", "sync@dint8"]) == ["ar", "sync", "sync@dint8"]  # no ar@dint8 added
    assert split_variant("ar@dint8") == ("ar@dint8", None)  # plain decoding has no drafter: not a mode
    assert split_variant("ar@float32+dint8") == ("ar@float32+dint8", None)
    assert changes_drafter("sync@dint8+b8") and changes_drafter("sync@new") and not changes_drafter("sync@b8")
    assert not changes_drafter("sync@int8") and not changes_drafter("sync")


def test_drafter_weight_tokens_are_reserved_names(tmp_path):
    for name in ("dint8", "ddense", "DInt8"):
        with pytest.raises(D3DError, match=f"bad drafter variant name '{name}'"):
            parse_drafter_variants((f"{name}={fake_drafter_dir(tmp_path / 'd')}",))


@pytest.mark.parametrize("modes, message", [
    (("sync", "ar@dint8"), "'ar@dint8' is not a mode: plain decoding uses no drafter"),
    (("ar@b8+dint8",), "'ar@b8\\+dint8' is not a mode"),
    (("sync@float32+dint8",), "a drafter weight format \\(dint8\\) runs on the run's target and joins no dtype"),
    (("sync@int8+ddense",), "joins no dtype or weight format"),
])
def test_bad_drafter_weight_modes_are_d3d_errors(modes, message):
    with pytest.raises(D3DError, match=message):
        check_drafter_modes(modes, {})
    with pytest.raises(D3DError, match=message):
        BenchConfig(modes=modes, device="cpu").validate()
    check_drafter_modes(("sync@dint8", "async@dint8+b8", "tree@ddense", "sync@new+dint8"), {"new": "DIR"})  # fine


def test_a_drafter_weight_variant_shares_the_run_target(tiny_chat_model_dir):
    pipe = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype="float32")
    int8 = pipeline_for(pipe, "sync@dint8+b8")
    assert int8.target is pipe.target and int8.drafter_weights == "int8" and int8.block_size == 8
    assert isinstance(int8.drafter.drafter.model.model.layers[0].mlp.down_proj, Int8Linear)
    assert type(pipeline_for(pipe, "sync@b8").drafter.drafter.model.model.layers[0].mlp.down_proj) is nn.Linear
    assert type(pipe.drafter.drafter.model.model.layers[0].mlp.down_proj) is nn.Linear
    assert pipeline_for(pipe, "tree@dint8+b8") is int8  # one pipeline per variant


def test_sync_on_an_int8_drafter_is_compared_with_the_run_ar(tiny_chat_model_dir, tmp_path, monkeypatch):
    """Coarse drafter weights (5 levels) make the int8 drafter another drafter than the dense one:
    sync, async and tree with it still equal the run's dense ar (no ar@dint8 is added), and each
    mode's drafter description says which weights it ran with."""
    monkeypatch.setattr(quantize, "INT8_MAX", 2)
    deep = save_drafter(tiny_chat_model_dir, [0, 1, 2], tmp_path / "deep")
    suite = tmp_path / "prompts.jsonl"
    prompts = ["w10 w11 w12 w10 w11 w12", "w40 w9 w40 w9"]
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    modes = ("sync", "sync@dint8", "async@dint8", "tree@dint8", "sync@dint8+b6", "sync@deep+dint8")
    out = tmp_path / "r.jsonl"
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=10, device="cpu",
                      dtype="float32", modes=modes, drafter="untrained", block_size=4,
                      drafter_variants=(f"deep={deep}",), async_backend="thread", budget="2,1", draft_length="4",
                      out=str(out))
    summary = run_bench(cfg, io.StringIO())
    assert list(summary) == ["ar", *modes]
    for mode in modes:
        assert summary[mode]["identical"] is True and summary[mode]["divergences"] == 0, mode
    assert "runtime weights" not in summary["sync"]["drafter"]
    for mode in modes[1:]:
        assert "runtime weights int8 (the target's: dense)" in summary[mode]["drafter"], mode
    assert "UNTRAINED" in summary["sync@dint8"]["drafter"] and str(deep) in summary["sync@deep+dint8"]["drafter"]
    header, *rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert "runtime weights int8" in header["variant_drafters"]["sync@dint8"]
    assert all(r["results"][m]["tokens"] == r["results"]["ar"]["tokens"] for r in rows for m in modes)
    # the int8 drafter drafts otherwise than the dense one: some prompt's acceptance differs
    assert any(r["results"]["sync@dint8"]["rounds"] != r["results"]["sync"]["rounds"] for r in rows)


def test_ddense_beside_an_int8_target(tiny_chat_model_dir, tmp_path):
    suite = tmp_path / "prompts.jsonl"
    suite.write_text(json.dumps({"id": "p0", "prompt": "w10 w11 w12 w10 w11"}) + "\n")
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=10, device="cpu",
                      dtype="float32", weights="int8", modes=("sync", "sync@ddense"), drafter="untrained", block_size=4,
                      out=str(tmp_path / "r.jsonl"))
    summary = run_bench(cfg, io.StringIO())
    assert list(summary) == ["ar", "sync", "sync@ddense"] and summary["sync@ddense"]["identical"] is True
    assert "runtime weights dense (the target's: int8)" in summary["sync@ddense"]["drafter"]
