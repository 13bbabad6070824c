"""`d3d train` end to end on a tiny model: the loss falls, resuming is exact, bad input fails clearly."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from d3d.cli import main
from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.decoder import load_decoder
from d3d.models.drafter import WEIGHTS_NAME, Drafter
from d3d.training.objective import DrafterObjective, build_drafter_body
from d3d.training.resolve import resolve_models
from d3d.training.train import TrainConfig, train
from tests.conftest import save_tiny_model
from tests.helpers import MASK_ID


def write_rows(path, count: int = 20, seed: int = 0):
    """Rows whose responses are arithmetic sequences: learnable, so the loss must fall."""
    g = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        start, step = int(g.integers(5, 90)), int(g.integers(1, 4))
        response = [5 + (start + step * j) % 85 for j in range(int(g.integers(6, 16)))]
        prompt = g.integers(5, 90, 3).tolist()
        rows.append({"id": str(i), "source": "test", "prompt_ids": prompt, "response_ids": response})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def tiny_config(tmp_path, model_dir, **overrides) -> TrainConfig:
    data = tmp_path / "data.jsonl"
    if not data.exists():
        write_rows(data)
    settings = dict(
        data=[str(data)], target=str(model_dir), num_layers=2, block_size=4, num_anchors=6, mask_token_id=MASK_ID,
        lr=3e-3, warmup_steps=1, batch_size=2, grad_accum=1, max_steps=6, save_every=0, eval_every=0,
        output_dir=str(tmp_path / "run"),
    )
    return TrainConfig(**(settings | overrides))


def records(run_dir, kind: str) -> list[dict]:
    lines = (run_dir / "log.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def test_loss_falls_and_the_drafter_is_saved_ready_for_inference(tmp_path, tiny_llama_dir):
    cfg = tiny_config(
        tmp_path, tiny_llama_dir, max_steps=60, lr=1e-2, eval_every=30, eval_prompts=3, eval_max_new_tokens=8
    )
    out = train(cfg)
    losses = [r["loss"] for r in records(tmp_path / "run", "train")]
    assert len(losses) == 60 and np.mean(losses[-10:]) < 0.7 * np.mean(losses[:5])
    evals = records(tmp_path / "run", "eval")
    assert [e["step"] for e in evals] == [0, 30, 60] and all(e["tau"] >= 1 and e["prompts"] == 3 for e in evals)
    assert evals[-1]["dev_loss_diff"] < evals[0]["dev_loss_diff"]
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_pretrained(out, target=target)
    assert drafter.config.trained and drafter.config.shared_embeddings and drafter.config.layers == [0, 1]
    assert drafter.config.training["num_anchors"] == 6 and drafter.config.training["steps"] == 60
    assert drafter.config.recorded_tau() == evals[-1]["tau"]  # the budget model's prior for this drafter
    assert "model.embed_tokens.weight" not in load_file(str(out / WEIGHTS_NAME))
    assert drafter.model.lm_head.weight is target.lm_head.weight  # frozen, shared, not trained
    before = load_decoder(tiny_llama_dir, layers=[0, 1])
    assert not torch.equal(drafter.model.model.layers[0].mlp.gate_up_proj.weight, before.model.layers[0].mlp.gate_up_proj.weight)


def test_resume_after_interrupt_reproduces_the_uninterrupted_run(tmp_path, tiny_qwen3_dir, monkeypatch):
    """Interrupted mid-accumulation in epoch 0, resumed, and carried across an epoch boundary."""
    settings = dict(grad_accum=2, max_steps=6, keep_checkpoints=2)  # 20 rows / 2 = 10 micro-batches = 5 steps per epoch
    train(tiny_config(tmp_path, tiny_qwen3_dir, output_dir=str(tmp_path / "whole"), **settings))
    forward, calls = DrafterObjective.forward, {"n": 0}

    def interrupting_forward(self, **batch):
        calls["n"] += 1
        if calls["n"] == 7:  # the first micro-batch of step 4
            raise KeyboardInterrupt
        return forward(self, **batch)

    monkeypatch.setattr(DrafterObjective, "forward", interrupting_forward)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(tmp_path, tiny_qwen3_dir, output_dir=str(tmp_path / "split"), **settings))
    state = json.loads((tmp_path / "split/checkpoints/step-00000003/trainer_state.json").read_text())
    assert state["progress"]["step"] == 3 and state["progress"]["batches"] == 6
    monkeypatch.setattr(DrafterObjective, "forward", forward)
    train(tiny_config(tmp_path, tiny_qwen3_dir, output_dir=str(tmp_path / "split"), **settings))

    whole, split = records(tmp_path / "whole", "train"), records(tmp_path / "split", "train")
    assert [r["step"] for r in split] == [1, 2, 3, 4, 5, 6] and [r["epoch"] for r in split] == [0, 0, 0, 0, 0, 1]
    assert [(r["step"], r["total_steps"]) for r in records(tmp_path / "split", "resume")] == [(3, 6)]
    for a, b in zip(whole, split):
        for key in ("loss", "loss_diff", "loss_ar", "grad_norm", "lr", "rows_seen"):
            assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-6), (a["step"], key)
    wa = load_file(str(tmp_path / "whole/drafter" / WEIGHTS_NAME))
    wb = load_file(str(tmp_path / "split/drafter" / WEIGHTS_NAME))
    assert wa.keys() == wb.keys()
    for key in wa:
        torch.testing.assert_close(wa[key], wb[key], atol=1e-6, rtol=1e-6)
    assert sorted(p.name for p in (tmp_path / "split/checkpoints").iterdir()) == ["step-00000003", "step-00000006"]


def test_start_batch_continues_another_runs_data_order(tmp_path, tiny_llama_dir, monkeypatch):
    """A fresh run with start_batch k trains on the micro-batches a run that stopped after k would see next."""
    forward, seen = DrafterObjective.forward, []

    def recording_forward(self, **batch):
        seen.append(batch["input_ids"].clone())
        return forward(self, **batch)

    monkeypatch.setattr(DrafterObjective, "forward", recording_forward)
    settings = dict(grad_accum=2, keep_checkpoints=1)  # 20 rows / 2 = 10 micro-batches = 5 steps per epoch
    train(tiny_config(tmp_path, tiny_llama_dir, output_dir=str(tmp_path / "whole"), max_steps=7, **settings))
    whole, seen[:] = list(seen), []
    train(tiny_config(tmp_path, tiny_llama_dir, output_dir=str(tmp_path / "later"), max_steps=4, start_batch=6, **settings))
    assert len(seen) == 8 and all(torch.equal(a, b) for a, b in zip(seen, whole[6:14]))  # epoch 0's rest, then epoch 1
    assert [r["epoch"] for r in records(tmp_path / "later", "train")] == [0, 0, 1, 1]
    seen[:] = []
    train(tiny_config(tmp_path, tiny_llama_dir, output_dir=str(tmp_path / "derived"), max_steps=0, start_batch=6, **settings))
    assert len(records(tmp_path / "derived", "train")) == 2 and len(seen) == 4  # one epoch less its first 3 steps
    with pytest.raises(D3DError, match="start batch 10 is not inside the first pass"):
        train(tiny_config(tmp_path, tiny_llama_dir, output_dir=str(tmp_path / "past"), start_batch=10, **settings))


def test_bad_input_fails_with_one_line_errors(tmp_path, tiny_llama_dir):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(D3DError, match="is empty"):
        train(tiny_config(tmp_path, tiny_llama_dir, data=[str(empty)]))
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps({"prompt_ids": [1, 2], "response_ids": [3]}) + "\n")
    with pytest.raises(D3DError, match="no usable training rows .*1 with a response under 2 tokens"):
        train(tiny_config(tmp_path, tiny_llama_dir, data=[str(short)]))
    with pytest.raises(D3DError, match="layers \\[7\\] do not exist"):
        train(tiny_config(tmp_path, tiny_llama_dir, layers=[0, 7]))
    with pytest.raises(D3DError, match="pass --mask-token-id"):
        train(tiny_config(tmp_path, tiny_llama_dir, mask_token_id=None))
    with pytest.raises(D3DError, match="unknown training setting"):
        TrainConfig.from_dict({"learning_rate": 1})
    with pytest.raises(D3DError, match="setting 'max_steps'"):
        TrainConfig.from_dict({"max_steps": "many"})
    parsed = TrainConfig.from_dict({"layers": "0,2", "gamma": "none", "lr": "3e-4", "freeze-embeddings": "no"})
    assert parsed == TrainConfig(layers=[0, 2], gamma=None, lr=3e-4, freeze_embeddings=False)


def save_word_tokenizer(path, vocab_size: int = 97) -> None:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab_size)}, unk_token="w0"))
    PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="w0", eos_token="w2").save_pretrained(path)


def test_tokenizer_mismatch_is_refused_and_a_match_trains(tmp_path):
    model_dir = save_tiny_model(tmp_path / "model", "llama")
    save_word_tokenizer(model_dir)
    fingerprint = hub.tokenizer_fingerprint(hub.load_tokenizer(model_dir))
    data = write_rows(tmp_path / "train.jsonl")
    meta = tmp_path / "train.meta.json"  # what `d3d data` writes beside train.jsonl
    meta.write_text(json.dumps({"target_dir": "elsewhere", "tokenizer_fingerprint": "0123456789abcdef"}))
    with pytest.raises(D3DError, match="different tokenizer"):
        train(tiny_config(tmp_path, model_dir, data=[str(data)]))
    meta.write_text(json.dumps({"tokenizer_fingerprint": fingerprint}))
    out = train(tiny_config(tmp_path, model_dir, data=[str(data)], max_steps=1))
    assert Drafter.from_pretrained(out, target=load_decoder(model_dir)).config.tokenizer_fingerprint == fingerprint


def test_resume_refuses_a_different_model(tmp_path, tiny_llama_dir):
    train(tiny_config(tmp_path, tiny_llama_dir, max_steps=1))
    with pytest.raises(D3DError, match="different layers"):
        train(tiny_config(tmp_path, tiny_llama_dir, max_steps=2, layers=[1]))


def test_a_run_saved_before_a_setting_existed_resumes_with_its_default(tmp_path, tiny_llama_dir):
    """A run folder written by an older d3d lacks newer settings; they read as their defaults, not as changes."""
    train(tiny_config(tmp_path, tiny_llama_dir, max_steps=1, save_every=1))
    file = tmp_path / "run" / "train_config.json"
    saved = json.loads(file.read_text())
    del saved["draft_vocab_from"]  # a model setting added after this run was started
    file.write_text(json.dumps(saved))
    train(tiny_config(tmp_path, tiny_llama_dir, max_steps=2, save_every=1))
    assert [r["step"] for r in records(tmp_path / "run", "resume")] == [1]


def test_cli_train_config_file_flags_and_plot(tmp_path, tiny_llama_dir, capsys):
    cfg = tiny_config(tmp_path, tiny_llama_dir, max_steps=5, eval_every=1, eval_prompts=2, eval_max_new_tokens=4)
    config_file = tmp_path / "recipe.yaml"
    config_file.write_text("\n".join(f"{k}: {json.dumps(v)}" for k, v in cfg.__dict__.items()) + "\n")
    assert main(["train", "--config", str(config_file), "--max-steps", "2", "--lambda-ar", "0"]) == 0
    run = tmp_path / "run"
    assert [r["step"] for r in records(run, "train")] == [1, 2]  # the flag beat the file's max_steps: 5
    assert json.loads((run / "train_config.json").read_text())["lambda_ar"] == 0.0
    assert main(["plot", str(run / "log.jsonl"), "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["train", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert main(["train", "--config", str(config_file), "--num-anchors", "x"]) == 2
    assert "setting 'num_anchors'" in capsys.readouterr().err
    shutil.rmtree(run)


def test_a_saved_drafter_continues_with_a_layer_removed_and_a_teacher(tmp_path, tiny_llama_dir):
    """Pruning recovery's building block: init from a drafter minus one layer, distilled from it."""
    teacher_dir = train(tiny_config(tmp_path, tiny_llama_dir, num_layers=3, max_steps=3))
    cfg = tiny_config(tmp_path, tiny_llama_dir, init=str(teacher_dir), layers=[0, 2], num_layers=0,
                      teacher=str(teacher_dir), max_steps=2, output_dir=str(tmp_path / "pruned"))
    target = load_decoder(tiny_llama_dir)
    before = Drafter.from_pretrained(teacher_dir, target=target)
    out = train(cfg)
    pruned = Drafter.from_pretrained(out, target=target)
    assert pruned.config.layers == [0, 2] and pruned.config.base_model == before.config.base_model
    assert [r.get("loss_kl", 0) > 0 for r in records(tmp_path / "pruned", "train")] == [True, True]
    first = records(tmp_path / "pruned", "train")[0]
    assert first["loss"] == pytest.approx(first["loss_diff"] + first["loss_ar"] + first["loss_kl"], rel=1e-5)
    # layer 2 of the pruned drafter started from the teacher's layer 2 (moved by only two small steps)
    moved = pruned.model.model.layers[1].mlp.gate_up_proj.weight - before.model.model.layers[2].mlp.gate_up_proj.weight
    assert moved.abs().max() < 0.1
    with pytest.raises(D3DError, match="not layers of the drafter"):
        train(tiny_config(tmp_path, tiny_llama_dir, init=str(teacher_dir), layers=[5], output_dir=str(tmp_path / "x")))
    with pytest.raises(D3DError, match="not a saved drafter"):
        train(tiny_config(tmp_path, tiny_llama_dir, teacher=str(tmp_path), output_dir=str(tmp_path / "y")))


def test_sigterm_checkpoints_like_ctrl_c_and_a_run_with_offline_validation_resumes(tmp_path, tiny_qwen3_dir, monkeypatch):
    """`kill` (SIGTERM) saves the last step; the resume reads validation records without a real tau."""
    import os
    import signal

    settings = dict(max_steps=4, eval_every=2, eval_real=False, eval_prompts=3, output_dir=str(tmp_path / "run"))
    forward, calls = DrafterObjective.forward, {"n": 0}

    def terminating_forward(self, **batch):
        calls["n"] += 1
        if calls["n"] == 4:  # the first micro-batch of step 4, after the step-2 validation
            os.kill(os.getpid(), signal.SIGTERM)
        return forward(self, **batch)

    monkeypatch.setattr(DrafterObjective, "forward", terminating_forward)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(tmp_path, tiny_qwen3_dir, **settings))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone after the run
    assert (tmp_path / "run/checkpoints/step-00000003").is_dir()
    evals = records(tmp_path / "run", "eval")
    assert evals and all("tau" not in e and e["offline_tau"] >= 1 for e in evals)
    monkeypatch.setattr(DrafterObjective, "forward", forward)
    train(tiny_config(tmp_path, tiny_qwen3_dir, **settings))
    assert [r["step"] for r in records(tmp_path / "run", "train")] == [1, 2, 3, 4]


def test_draft_vocab_from_init_keeps_the_init_drafters_ids_and_data_re_ranks_them(tmp_path, tiny_llama_dir):
    """Continuing a drafter: `draft_vocab_from: init` keeps its drafting ids; the default re-ranks on the new rows."""
    first = train(tiny_config(tmp_path, tiny_llama_dir, draft_vocab_size=12, max_steps=1))
    init_ids = Drafter.from_pretrained(first, target=load_decoder(tiny_llama_dir)).draft_vocab.tolist()
    other = write_rows(tmp_path / "other.jsonl", seed=5)  # other responses: another frequency ranking
    runs = {}
    for source in ("init", "data"):
        cfg = tiny_config(tmp_path, tiny_llama_dir, init=str(first), num_layers=0, data=[str(other)],
                          draft_vocab_size=12, draft_vocab_from=source, max_steps=1, output_dir=str(tmp_path / source))
        runs[source] = Drafter.from_pretrained(train(cfg), target=load_decoder(tiny_llama_dir)).draft_vocab.tolist()
    assert runs["init"] == init_ids
    assert runs["data"] != init_ids  # the re-ranked set (why `init` exists)
    with pytest.raises(D3DError, match="drafts from 13 tokens, the run asks for 16"):  # 12 + eos
        train(tiny_config(tmp_path, tiny_llama_dir, init=str(first), num_layers=0, draft_vocab_size=16,
                          draft_vocab_from="init", output_dir=str(tmp_path / "bad")))
    with pytest.raises(D3DError, match="needs --init"):
        train(tiny_config(tmp_path, tiny_llama_dir, draft_vocab_size=16, draft_vocab_from="init",
                          output_dir=str(tmp_path / "bad2")))


def test_half_precision_on_a_cpu_without_it_is_warned_about(monkeypatch):
    from d3d.inference import pipeline
    from d3d.training import train as train_module

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    monkeypatch.setattr(pipeline, "cpu_has_native_bf16", lambda: False)
    assert "20-40x slower" in train_module.slow_precision_warning("bf16", cpu)
    assert "fp16" in train_module.slow_precision_warning("fp16", cpu)
    assert train_module.slow_precision_warning("no", cpu) is None
    assert train_module.slow_precision_warning("bf16", cuda) is None
    monkeypatch.setattr(pipeline, "cpu_has_native_bf16", lambda: True)
    assert train_module.slow_precision_warning("bf16", cpu) is None


def test_a_drafter_stored_int8_initialises_training_with_its_dequantized_weights(tmp_path, tiny_llama_dir):
    """A continued run may start from a shipped (int8-stored) drafter: it trains from q * scale, not from noise."""
    target = load_decoder(tiny_llama_dir)
    dense_dir = train(tiny_config(tmp_path, tiny_llama_dir, num_layers=2, max_steps=2))
    stored = tmp_path / "int8"
    Drafter.from_pretrained(dense_dir, target=target).save_pretrained(stored, storage="int8")
    assert any(v.dtype == torch.int8 for v in load_file(str(stored / WEIGHTS_NAME)).values())
    cfg = tiny_config(tmp_path, tiny_llama_dir, init=str(stored), max_steps=1, output_dir=str(tmp_path / "cont"))
    body = build_drafter_body(cfg, resolve_models(cfg))
    reference = Drafter.from_pretrained(stored, target=target).model.state_dict()
    for name, value in body.state_dict().items():
        assert torch.equal(value.float(), reference[name].float()), name
    out = train(cfg)  # and the run trains from there
    assert records(tmp_path / "cont", "train")[0]["loss"] < 20 and (out / WEIGHTS_NAME).exists()
