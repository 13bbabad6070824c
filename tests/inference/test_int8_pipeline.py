"""An int8 target is the target of every mode; the Precision setting reaches the model."""

from __future__ import annotations

import pytest
import torch

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline, load_target
from d3d.models.precision import REFINE_TOP, Precision
from d3d.models.quantize import Int8Linear


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_int8_greedy_speculative_equals_int8_plain_decoding(tiny_chat_model_dir, dtype):
    """bfloat16 holds here too: the tiny models' argmaxes are far apart (no near ties)."""
    pipe = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype=dtype, weights="int8")
    target, drafter = pipe.target.model, pipe.drafter.drafter.model
    assert pipe.target.weights == "int8" and isinstance(target.model.layers[0].mlp.gate_up_proj, Int8Linear)
    assert isinstance(drafter.model.layers[0].self_attn.qkv_proj, Int8Linear) and drafter.lm_head is target.lm_head
    dense = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype=dtype)
    cfg = GenerationConfig(max_new_tokens=24)
    for words in ("w10 w11 w12", "w40 w9", "w77 w78 w79 w80"):
        ids = pipe.target.encode_chat(words)
        ar, _ = pipe.generate(ids, "ar", cfg)
        sync, stats = pipe.generate(ids, "sync", cfg)
        assert sync == ar and stats.rounds < len(ar)  # some drafted tokens were accepted
        with torch.no_grad():  # and the int8 target is another model than the dense one
            assert not torch.equal(target.lm_head(torch.ones(1, 64, dtype=target.dtype)),
                                   dense.target.model.lm_head(torch.ones(1, 64, dtype=target.dtype)))


def test_precision_setting_reaches_the_model(tiny_chat_model_dir):
    bf16 = load_target(str(tiny_chat_model_dir), "cpu", "bfloat16")
    assert bf16.model.precision == Precision.all()
    chosen = load_target(str(tiny_chat_model_dir), "cpu", "bfloat16", precision="fp32-residual,exact-logits")
    assert chosen.model.precision == Precision(residual_fp32=True, refine_top=REFINE_TOP)
    assert chosen.model.new_cache().keys.dtype == torch.bfloat16  # attention stays bfloat16: so does the cache
    assert load_target(str(tiny_chat_model_dir), "cpu", "bfloat16", precision="none").model.precision == Precision()


def test_bad_precision_or_weights_is_one_line(tiny_chat_model_dir, capsys):
    code = main(["generate", "--prompt", "w9", "--target", str(tiny_chat_model_dir), "--precision", "fast-please"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "unknown precision switch 'fast-please'" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):  # argparse's own message for a value outside the choices
        main(["cost", "--weights", "int3"])
