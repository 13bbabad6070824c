"""A drafter's run block size: the B inference runs when no --block-size is given, set at export
from measured speed. It changes how many rows a drafter pass drafts, never the output: every mode
still equals plain decoding; offline acceptance keeps the whole trained block."""

from __future__ import annotations

import json

import pytest
import torch

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.errors import D3DError
from d3d.inference.async_engine import AsyncConfig
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline, load_drafter, load_target, worker_drafter
from d3d.models import hub
from d3d.models.drafter import Drafter, DrafterConfig, read_drafter_config
from d3d.training.average import average_drafters

PROMPTS = ("w10 w11 w12 w10 w11 w12", "w40 w9 w40 w9", "w77 w78 w79 w80")
TRAINED_B = 8


@pytest.fixture
def target(tiny_chat_model_dir):
    return load_target(str(tiny_chat_model_dir), "cpu", torch.float32)


def save_drafter(model_dir, target, path, seed: int = 0):
    """A drafter trained (as far as its config says) with blocks of TRAINED_B, weights moved by a seed."""
    drafter = Drafter.from_base(model_dir, [0, 1], TRAINED_B, hub.choose_mask_token_id(target.tokenizer),
                                hub.tokenizer_fingerprint(target.tokenizer), target=target.model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in drafter.parameters():
            if p is not target.model.model.embed_tokens.weight and p is not target.model.lm_head.weight:
                p.add_(0.02 * torch.randn(p.shape, generator=gen))
    drafter.config.trained = True
    drafter.save_pretrained(path)
    return path


def export_run(source, out, run_block_size: int) -> int:
    return main(["export", "--format", "d3d", "--drafter", str(source), "--out", str(out),
                 "--run-block-size", str(run_block_size), "--dtype", "float32"])


def test_export_sets_the_run_block_size_and_inference_runs_it(tiny_chat_model_dir, target, tmp_path, capsys):
    src = save_drafter(tiny_chat_model_dir, target, tmp_path / "d")
    assert export_run(src, tmp_path / "run4", 4) == 0
    assert "inference runs blocks of 4" in capsys.readouterr().out
    config, _ = read_drafter_config(tmp_path / "run4")
    assert (config.block_size, config.run_block_size) == (TRAINED_B, 4)
    choice = load_drafter(target, str(tmp_path / "run4"))
    assert choice.drafter.block_size == 4 and choice.block_size_override is None
    assert "runs blocks of 4" in choice.description and f"--block-size {TRAINED_B}" in choice.description
    choice.drafter.save_pretrained(tmp_path / "resaved")  # the run block is the runtime's, the config keeps its B
    assert choice.drafter.config.block_size == TRAINED_B
    assert read_drafter_config(tmp_path / "resaved")[0].block_size == TRAINED_B
    for asked, override in ((TRAINED_B, None), (4, None), (3, f"trained with B={TRAINED_B}, running with B=3")):
        choice = load_drafter(target, str(tmp_path / "run4"), block_size=asked)
        assert (choice.drafter.block_size, choice.block_size_override) == (asked, override)
    offline = load_drafter(target, str(tmp_path / "run4"), run_default=False)  # what eval-drafter loads
    assert offline.drafter.block_size == TRAINED_B
    assert worker_drafter(target.name, str(tiny_chat_model_dir), str(tmp_path / "run4"), None, torch.float32,
                          "cpu").block_size == 4  # an async worker process drafts the same blocks
    assert export_run(tmp_path / "run4", tmp_path / "run0", 0) == 0  # 0: back to the trained block
    assert load_drafter(target, str(tmp_path / "run0")).drafter.block_size == TRAINED_B
    plain = load_drafter(target, str(src))  # a drafter never given one runs its trained block
    assert plain.drafter.block_size == TRAINED_B and "runs blocks of" not in plain.description


@pytest.mark.parametrize("mode", ["sync", "async", "tree"])
def test_every_mode_at_the_run_block_size_equals_plain_decoding(tiny_chat_model_dir, target, tmp_path, mode):
    """float32, greedy: the shorter block changes the drafts, never the tokens."""
    save_drafter(tiny_chat_model_dir, target, tmp_path / "d", seed=3)
    assert export_run(tmp_path / "d", tmp_path / "run3", 3) == 0
    pipe = Pipeline(target, str(tmp_path / "run3"), async_config=AsyncConfig(backend="thread"))
    cfg = GenerationConfig(max_new_tokens=20)
    for words in PROMPTS:
        ids = target.encode_chat(words)
        ar, _ = pipe.generate(ids, "ar", cfg)
        out, stats = pipe.generate(ids, mode, cfg)
        assert out == ar, (mode, words)
        assert stats.block_size_override is None
    assert pipe.drafter.drafter.block_size == 3
    pipe.close()


@pytest.mark.parametrize("bad", ["1", str(TRAINED_B + 1), "-2"])
def test_a_run_block_size_the_drafter_cannot_run_is_refused_in_one_line(tiny_chat_model_dir, target, tmp_path,
                                                                        capsys, bad):
    src = save_drafter(tiny_chat_model_dir, target, tmp_path / "d")
    code = main(["export", "--format", "d3d", "--drafter", str(src), "--out", str(tmp_path / "o"),
                 "--run-block-size", bad])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "run block size" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()  # refused before anything was written
    code = main(["export", "--format", "vllm", "--drafter", str(src), "--out", str(tmp_path / "v"),
                 "--run-block-size", "4"])
    assert code == EXIT_BAD_INPUT and "--run-block-size is for --format d3d" in capsys.readouterr().err


def test_a_hand_edited_config_with_a_bad_run_block_size_is_a_clear_error(tiny_chat_model_dir, target, tmp_path):
    src = save_drafter(tiny_chat_model_dir, target, tmp_path / "d")
    meta = json.loads((src / "drafter_config.json").read_text())
    meta["drafter"]["run_block_size"] = TRAINED_B * 2
    (src / "drafter_config.json").write_text(json.dumps(meta))
    with pytest.raises(D3DError, match="run block size must be 0"):
        load_drafter(target, str(src))
    with pytest.raises(D3DError, match="run block size"):
        DrafterConfig(base_model="m", layers=[0], block_size=16, run_block_size=17).validate()


def test_the_average_of_drafters_with_different_run_block_sizes_runs_its_trained_block(tiny_chat_model_dir, target,
                                                                                       tmp_path):
    """The run block size is a measurement of one drafter's speed: it neither blocks averaging nor
    carries over to the average, whose speed nobody has measured."""
    save_drafter(tiny_chat_model_dir, target, tmp_path / "a", seed=1)
    assert export_run(tmp_path / "a", tmp_path / "a4", 4) == 0
    b = save_drafter(tiny_chat_model_dir, target, tmp_path / "b", seed=2)
    average_drafters([str(tmp_path / "a4"), str(b)], str(tmp_path / "ab"))
    config, _ = read_drafter_config(tmp_path / "ab")
    assert config.run_block_size == 0 and config.block_size == TRAINED_B
