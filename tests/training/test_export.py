"""`d3d export --format vllm`: transformers loads the export, whose logits for prefix + anchor + mask
tokens under plain causal attention equal the causal drafter's block logits (float32), on the
drafting vocabulary with zero logits outside it; the exported tokenizer round-trips; drafters that
vLLM's parallel drafting would run differently are refused in one line."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from d3d.cli import main
from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from d3d.training.export import ExportConfig, export_vllm
from tests.conftest import save_tiny_model, save_tiny_tokenizer
from tests.helpers import MASK_ID, prompt

BS = 6


@pytest.fixture(scope="module", params=["llama", "qwen3"])
def chat_model(request, tmp_path_factory):
    """A tiny target with a tokenizer: Llama with tied embeddings, Qwen3 with an untied head."""
    path = save_tiny_model(tmp_path_factory.mktemp(request.param), request.param)
    return save_tiny_tokenizer(path)


def save_drafter(model_dir, path, vocab=None, **settings):
    target = load_decoder(model_dir)
    fingerprint = hub.tokenizer_fingerprint(hub.load_tokenizer(model_dir))
    kw = dict(labels="next-token", block_attention="causal") | settings
    drafter = Drafter.from_base(model_dir, [0, 2, 3], BS, MASK_ID, fingerprint, target=target, **kw)
    if vocab is not None:
        drafter.set_draft_vocab(vocab)
    drafter.save_pretrained(path)
    return Drafter.from_pretrained(path, target=target)


@pytest.mark.parametrize("vocab", [None, torch.arange(5, 97, 3)])
def test_export_logits_equal_the_drafters_block_under_plain_causal_attention(chat_model, tmp_path, vocab):
    drafter = save_drafter(chat_model, tmp_path / "drafter", vocab)
    report = export_vllm(ExportConfig(drafter=str(tmp_path / "drafter"), out=str(tmp_path / "out"),
                                      target=str(chat_model), dtype="float32"))
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["pard_token"] == MASK_ID and config["num_hidden_layers"] == 3 and report.max_speculative_tokens == BS - 1
    hf = AutoModelForCausalLM.from_pretrained(str(tmp_path / "out"), dtype=torch.float32).eval()
    for seed, n in [(1, 7), (2, 12)]:
        prefix = prompt(seed, n)  # its last token is the anchor
        ids = torch.cat([prefix, torch.full((1, BS - 1), MASK_ID)], 1)
        with torch.no_grad():
            got = hf(input_ids=ids).logits[0, n - 1 : n - 1 + BS - 1]  # anchor + B-2 masks predict drafted 1..B-1
            want = drafter.draft_logits(drafter.new_cache(64), prefix)[0]  # [B-1, V]
        inside = torch.isfinite(want[0])
        assert inside.sum() == (97 if vocab is None else vocab.numel())
        torch.testing.assert_close(got[:, inside], want[:, inside], atol=2e-5, rtol=2e-5)
        assert (got[:, ~inside] == 0).all()  # zero head rows outside the drafting vocabulary


def test_exported_tokenizer_round_trips(chat_model, tmp_path):
    save_drafter(chat_model, tmp_path / "drafter")
    export_vllm(ExportConfig(drafter=str(tmp_path / "drafter"), out=str(tmp_path / "out"), target=str(chat_model)))
    ours, theirs = AutoTokenizer.from_pretrained(str(tmp_path / "out")), hub.load_tokenizer(chat_model)
    text = "w10 w11 user w96 w42"
    assert ours.encode(text) == theirs.encode(text) and ours.decode(ours.encode(text)) == text
    chat = [{"role": "user", "content": "w12 w13"}]
    assert ours.apply_chat_template(chat, add_generation_prompt=True) == theirs.apply_chat_template(
        chat, add_generation_prompt=True)
    assert hub.tokenizer_fingerprint(ours) == hub.tokenizer_fingerprint(theirs)


def test_cli_refuses_a_bidirectional_drafter_in_one_line(chat_model, tmp_path, capsys):
    save_drafter(chat_model, tmp_path / "drafter", block_attention="bidirectional")
    code = main(["export", "--format", "vllm", "--drafter", str(tmp_path / "drafter"), "--out", str(tmp_path / "out"),
                 "--target", str(chat_model)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "bidirectional block attention" in err
    assert "--block-attention causal" in err and not (tmp_path / "out").exists()


def test_other_drafters_and_outputs_are_refused(chat_model, tmp_path, capsys):
    save_drafter(chat_model, tmp_path / "same", labels="same-position")
    with pytest.raises(D3DError, match="same-position labels"):
        export_vllm(ExportConfig(drafter=str(tmp_path / "same"), out=str(tmp_path / "o1"), target=str(chat_model)))
    save_drafter(chat_model, tmp_path / "causal")
    with pytest.raises(D3DError, match="holds a drafter"):
        export_vllm(ExportConfig(drafter=str(tmp_path / "causal"), out=str(tmp_path / "causal"), target=str(chat_model)))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(D3DError, match="not empty"):
        export_vllm(ExportConfig(drafter=str(tmp_path / "causal"), out=str(tmp_path / "busy"), target=str(chat_model)))
    assert main(["export", "--drafter", str(tmp_path / "causal"), "--out", str(tmp_path / "o2"),
                 "--target", str(chat_model)]) == 0
    assert "pard_token 96" in capsys.readouterr().out
    assert main(["export", "--drafter", str(tmp_path / "causal"), "--out", str(tmp_path / "o2"),
                 "--target", str(chat_model)]) == 0  # an earlier export is replaced
