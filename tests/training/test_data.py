"""Tests for d3d.training.data (`d3d data`): batched generation, resume, sources, decontamination.

Everything runs offline on tiny random models: the conftest's `tiny_llama_dir` for the runtime
alone, and `tiny_chat_model_dir` (with a word-level tokenizer, ids spelled "w<id>") end to end.
The OpenAI-compatible endpoint is a stub server started here on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch

from d3d.cli import build_parser, main
from d3d.errors import D3DError
from d3d.inference.pipeline import Target, load_target
from d3d.inference.sampling import SamplingConfig
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.training import data, self_instruct
from d3d.training.data import DataConfig, DataReport, generate_dataset, screen_rows
from d3d.training.data_journal import read_rows
from d3d.training.decontamination import Decontaminator, check_decontaminated, held_out_prompts, normalize_text
from d3d.training.endpoint import EndpointConfig, request_json
from d3d.training.generation import PendingPrompt, Response, generate_batch
from d3d.training.prompts import PromptRecord, read_prompt_dataset, read_prompt_jsonl
from d3d.training.self_instruct import (
    SelfInstructConfig, degenerate_reason, self_instruct_prompts, turn_end_ids, user_turn_template,
)

SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
EOS = 2  # <|im_end|> in the conftest's tiny tokenizer


@pytest.fixture(scope="module")
def chat_target(tiny_chat_model_dir) -> Target:
    return load_target(str(tiny_chat_model_dir), "cpu")


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def word_prompts(n: int, offset: int = 10) -> list[dict]:
    """Distinct prompts the tiny word-level tokenizer knows, of varied lengths."""
    return [{"id": f"p{i}", "prompt": " ".join(f"w{offset + i + k}" for k in range(1 + i % 4))} for i in range(n)]


def run(tmp_path: Path, loaded: Target | None, **overrides) -> DataReport:
    """`d3d data` into tmp_path/data.jsonl with `loaded` as the target (None: load from cfg.target)."""
    kw = dict(out=tmp_path / "data.jsonl", max_new_tokens=4, batch_size=3, greedy=True, progress=False) | overrides
    return generate_dataset(DataConfig(**kw), target=loaded)


# ---------------------------------------------------------------------------------------------
# Batched generation on the native runtime


def random_prompts(lengths: list[int], seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(5, 97, (n,), generator=g).tolist() for n in lengths]


def test_batched_greedy_matches_one_prompt_at_a_time(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir, dtype=torch.float64)
    prompts = random_prompts([3, 9, 5, 12, 1])
    greedy = SamplingConfig()
    free = [generate_batch(model, [p], 10, greedy, frozenset())[0].tokens for p in prompts]
    stop = free[0][4]  # a token row 0 emits mid-way: rows now stop at different steps
    alone = [generate_batch(model, [p], 10, greedy, frozenset({stop}))[0] for p in prompts]
    batched = generate_batch(model, prompts, 10, greedy, frozenset({stop}), pad_id=0)
    assert [b.tokens for b in batched] == [a.tokens for a in alone]
    assert [b.finish_reason for b in batched] == [a.finish_reason for a in alone]
    assert {"eos", "max_new_tokens"} <= {b.finish_reason for b in batched}
    assert batched[0].tokens[-1] == stop and len(batched[0].tokens) <= 5


def test_finished_rows_leave_the_batch(tiny_llama_dir):
    """Once an eighth of the batch is done, later passes run on the unfinished rows only, and every
    row's tokens and top-k stay those of the row answered alone."""
    model = load_decoder(tiny_llama_dir, dtype=torch.float64)
    prompts = random_prompts([3, 9, 5, 12, 1, 6, 4, 8, 2, 7], seed=5)
    greedy = SamplingConfig()
    free = [generate_batch(model, [p], 12, greedy, frozenset())[0].tokens for p in prompts]
    stops = frozenset({free[0][2], free[3][6]})
    alone = [generate_batch(model, [p], 12, greedy, stops, top_k_logits=3)[0] for p in prompts]
    widths: list[int] = []
    hook = model.register_forward_pre_hook(lambda module, args: widths.append(args[1].batch))
    try:
        batched = generate_batch(model, prompts, 12, greedy, stops, top_k_logits=3)
    finally:
        hook.remove()
    assert [b.tokens for b in batched] == [a.tokens for a in alone]
    assert [b.topk_ids for b in batched] == [a.topk_ids for a in alone]
    assert widths == sorted(widths, reverse=True) and widths[0] == len(prompts)
    unfinished = [sum(len(a.tokens) > step for a in alone) for step in range(len(widths))]
    assert widths[-1] < len(prompts) and all(w >= u for w, u in zip(widths, unfinished))

def test_shrink_fraction_zero_keeps_every_row_to_the_end(tiny_llama_dir):
    """`shrink_fraction=0` (the behaviour before shrinking, which the data benchmark compares
    against) runs every pass at the full batch width and gives the same tokens."""
    model = load_decoder(tiny_llama_dir, dtype=torch.float64)
    prompts = random_prompts([3, 9, 5, 12, 1, 6], seed=5)
    free = generate_batch(model, prompts[:1], 10, SamplingConfig(), frozenset())[0].tokens
    stops = frozenset({free[1]})
    widths: list[int] = []
    hook = model.register_forward_pre_hook(lambda module, args: widths.append(args[1].batch))
    try:
        kept = generate_batch(model, prompts, 10, SamplingConfig(), stops, shrink_fraction=0)
    finally:
        hook.remove()
    shrunk = generate_batch(model, prompts, 10, SamplingConfig(), stops)
    assert [k.tokens for k in kept] == [s.tokens for s in shrunk]
    assert kept[0].finish_reason == "eos" and len(kept[0].tokens) <= 2 and set(widths) == {len(prompts)}



def test_batched_sampling_matches_single_rows_with_their_seeds(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir, dtype=torch.float64)
    prompts, seeds = random_prompts([4, 7, 2], seed=2), [11, 12, 13]
    hot = SamplingConfig(temperature=1.5, top_p=0.95)
    batched = generate_batch(model, prompts, 8, hot, frozenset(), seeds)
    alone = [generate_batch(model, [p], 8, hot, frozenset(), [s])[0] for p, s in zip(prompts, seeds)]
    assert [b.tokens for b in batched] == [a.tokens for a in alone]
    assert len({tuple(b.tokens) for b in batched}) == 3


def test_recorded_top_k_is_the_distribution_each_token_came_from(tiny_llama_dir):
    """Row i, position t: the k likeliest tokens of a full uncached forward over prompt + tokens[:t]."""
    model = load_decoder(tiny_llama_dir, dtype=torch.float64)
    prompts = random_prompts([3, 8, 5], seed=4)
    outs = generate_batch(model, prompts, 6, SamplingConfig(temperature=1.3), frozenset(), [1, 2, 3], top_k_logits=4)
    for prompt, out in zip(prompts, outs):
        assert len(out.topk_ids) == len(out.tokens) == len(out.topk_logprobs) == 6
        full = torch.tensor([prompt + out.tokens])
        logits = model(Rows.clean(full, torch.tensor([0])))[0].double()  # [L, V]
        for t in range(len(out.tokens)):
            want = torch.log_softmax(logits[len(prompt) - 1 + t], -1).topk(4)
            assert out.topk_ids[t] == want.indices.tolist()
            assert out.topk_logprobs[t] == pytest.approx(want.values.tolist(), abs=6e-4)
    greedy = generate_batch(model, prompts, 6, SamplingConfig(), frozenset(), top_k_logits=2)
    assert all(o.topk_ids[t][0] == o.tokens[t] for o in greedy for t in range(6))
    assert generate_batch(model, prompts, 3, SamplingConfig(), frozenset())[0].topk_ids is None


def test_top_k_rows_and_dtype_reach_the_output(tmp_path, chat_target, tiny_chat_model_dir):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(4))
    run(tmp_path, chat_target, prompts=(prompts,), max_new_tokens=5, top_k_logits=3)
    rows = read_rows(tmp_path / "data.jsonl")
    assert all(len(r["topk_ids"]) == len(r["response_ids"]) and len(r["topk_ids"][0]) == 3 for r in rows)
    assert all(r["topk_ids"][t][0] == r["response_ids"][t] for r in rows for t in range(len(r["response_ids"])))
    meta = json.loads((tmp_path / "data.meta.json").read_text())
    assert meta["responses"]["top_k_logits"] == 3
    parquet = tmp_path / "pq"
    parquet.mkdir()
    run(parquet, chat_target, out=parquet / "data.parquet", prompts=(prompts,), max_new_tokens=5, top_k_logits=3)
    assert [r["topk_ids"] for r in read_rows(parquet / "data.parquet")] == [r["topk_ids"] for r in rows]
    bf16 = load_target(str(tiny_chat_model_dir), "cpu", "bfloat16")
    with pytest.raises(D3DError, match="dtype"):  # resuming with another dtype mixes two targets' data
        run(tmp_path, bf16, prompts=(prompts,), max_new_tokens=5, top_k_logits=3)


def test_generation_stops_at_the_context_limit(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir)
    prompt = random_prompts([model.config.max_position_embeddings - 3])[0]
    out = generate_batch(model, [prompt, prompt[:5]], 10, SamplingConfig(), frozenset())
    assert (len(out[0].tokens), out[0].finish_reason) == (3, "context")
    assert (len(out[1].tokens), out[1].finish_reason) == (10, "max_new_tokens")


# ---------------------------------------------------------------------------------------------
# Resume, output formats, meta.json


class Interrupt(Exception):
    pass


def stop_after(batches: int):
    def on_batch(index: int) -> None:
        if index + 1 == batches:
            raise Interrupt

    return on_batch


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_resume_after_interrupt_has_every_prompt_exactly_once(tmp_path, chat_target, suffix):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(10))
    cfg = DataConfig(out=tmp_path / f"data{suffix}", prompts=(prompts,), max_new_tokens=4, batch_size=3,
                     greedy=True, progress=False)
    with pytest.raises(Interrupt):
        generate_dataset(cfg, target=chat_target, on_batch=stop_after(2))
    journal = cfg.out if suffix == ".jsonl" else tmp_path / "data.parquet.journal.jsonl"
    assert len(read_rows(journal)) == 6
    with journal.open("a") as handle:  # a write torn by a kill
        handle.write('{"id": "p9", "source": "prom')
    report = generate_dataset(cfg, target=chat_target)
    ids = [row["id"] for row in read_rows(cfg.out)]
    assert sorted(ids) == sorted(f"p{i}" for i in range(10)) and len(ids) == 10
    assert (report.already_done, report.written, report.rows, report.overlaps) == (6, 4, 10, 0)
    assert suffix == ".jsonl" or not journal.exists()
    again = generate_dataset(cfg, target=chat_target)
    assert (again.already_done, again.written, again.rows) == (10, 0, 10)


def test_sigterm_finishes_the_batch_in_flight_then_stops_and_the_rerun_resumes(tmp_path, chat_target, monkeypatch):
    """`kill` during batch 2 keeps batch 2's rows (not only batch 1's) and exits as Ctrl-C does."""
    import os
    import signal

    from d3d.training import data as data_module

    make = data_module.make_response_source
    calls = {"n": 0}

    def terminated_in_batch_two(cfg, target, sampling):
        source = make(cfg, target, sampling)
        respond = source.respond

        def respond_and_get_killed(batch):
            calls["n"] += 1
            if calls["n"] == 2:
                os.kill(os.getpid(), signal.SIGTERM)  # arrives while batch 2 is being answered
            return respond(batch)

        source.respond = respond_and_get_killed
        return source

    monkeypatch.setattr(data_module, "make_response_source", terminated_in_batch_two)
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(10))
    cfg = DataConfig(out=tmp_path / "data.jsonl", prompts=(prompts,), max_new_tokens=4, batch_size=3,
                     greedy=True, progress=False)
    with pytest.raises(KeyboardInterrupt):
        generate_dataset(cfg, target=chat_target)
    assert calls["n"] == 2 and len(read_rows(cfg.out)) == 6  # batch 2 finished and appended, batch 3 never began
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone after the run
    monkeypatch.setattr(data_module, "make_response_source", make)
    report = generate_dataset(cfg, target=chat_target)
    assert (report.already_done, report.written, report.rows) == (6, 4, 10)


def test_skip_answered_continues_a_prompt_file_into_a_new_output(tmp_path, chat_target):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(10))
    first = DataConfig(out=tmp_path / "shard1.jsonl", prompts=(prompts,), max_new_tokens=4, batch_size=3,
                       greedy=True, progress=False)
    with pytest.raises(Interrupt):
        generate_dataset(first, target=chat_target, on_batch=stop_after(2))
    second = DataConfig(out=tmp_path / "shard2.parquet", prompts=(prompts,), max_new_tokens=4, batch_size=3,
                        greedy=True, progress=False, skip_answered=(first.out,))
    report = generate_dataset(second, target=chat_target)
    ids1 = [row["id"] for row in read_rows(first.out)]
    ids2 = [row["id"] for row in read_rows(second.out)]
    assert len(ids1) == 6 and not set(ids1) & set(ids2)
    assert sorted(ids1 + ids2) == sorted(f"p{i}" for i in range(10))
    assert (report.answered_elsewhere, report.already_done, report.written) == (6, 0, 4)
    assert json.loads((tmp_path / "shard2.meta.json").read_text())["skip_answered"] == [str(first.out)]
    with pytest.raises(D3DError, match="output itself"):
        generate_dataset(DataConfig(out=first.out, prompts=(prompts,), greedy=True, progress=False,
                                    skip_answered=(first.out,)), target=chat_target)
    with pytest.raises(D3DError, match="not found"):
        run(tmp_path, chat_target, prompts=(prompts,), skip_answered=(tmp_path / "missing.jsonl",))


def test_rows_hold_text_ids_and_settings_are_recorded(tmp_path, chat_target):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(4))
    run(tmp_path, chat_target, prompts=(prompts,), max_new_tokens=5)
    rows = read_rows(tmp_path / "data.jsonl")
    for row in rows:
        assert row["prompt_ids"] == chat_target.encode_chat(row["prompt"])[0].tolist()
        assert row["response"] == chat_target.decode(row["response_ids"])
        assert row["finish_reason"] in {"eos", "max_new_tokens"} and 2 <= len(row["response_ids"]) <= 5
    meta = json.loads((tmp_path / "data.meta.json").read_text())
    assert meta["sampling"]["greedy"] and meta["max_new_tokens"] == 5 and meta["rows"] == 4
    assert meta["tokenizer_fingerprint"] and meta["d3d_version"] and meta["sources"] == [str(prompts)]
    with pytest.raises(D3DError, match="different settings"):
        run(tmp_path, chat_target, prompts=(prompts,), max_new_tokens=6)


def test_recommended_sampling_and_overrides(tmp_path):
    assert data.recommended_sampling(tmp_path)[0] == SamplingConfig(temperature=0.7, top_p=0.9)
    (tmp_path / "generation_config.json").write_text('{"temperature": 0.6, "top_p": 0.95, "top_k": 20}')
    assert data.recommended_sampling(tmp_path)[0] == SamplingConfig(temperature=0.6, top_k=20, top_p=0.95)
    cfg = DataConfig(out=tmp_path / "x.jsonl", prompts=(tmp_path,), top_p=0.5)
    assert data.resolve_sampling(cfg, tmp_path)[0] == SamplingConfig(temperature=0.6, top_k=20, top_p=0.5)
    greedy = DataConfig(out=tmp_path / "x.jsonl", prompts=(tmp_path,), greedy=True)
    assert data.resolve_sampling(greedy, tmp_path)[0].greedy


# ---------------------------------------------------------------------------------------------
# Bad input


def test_jsonl_bad_rows_are_counted_and_skipped(tmp_path, capsys):
    path = write_jsonl(tmp_path / "p.jsonl", [
        {"prompt": "fine one"}, "not json", {"text": "no prompt field"}, "", {"prompt": "  "},
        '["a list"]', {"prompt": "fine two", "id": 7},
    ])
    loaded = read_prompt_jsonl(path)
    assert [(r.id, r.text) for r in loaded] == [("p:1", "fine one"), ("7", "fine two")]
    assert loaded.bad_rows == 4
    assert "skipped 4 malformed row(s) (first: line 2)" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", "\n\n", "garbage\n{]\n"])
def test_empty_or_malformed_prompt_file_is_one_clear_error(tmp_path, content):
    (tmp_path / "p.jsonl").write_text(content)
    with pytest.raises(D3DError, match="no usable prompt"):
        read_prompt_jsonl(tmp_path / "p.jsonl")
    with pytest.raises(D3DError, match="not found"):
        read_prompt_jsonl(tmp_path / "missing.jsonl")


def test_short_responses_are_counted_and_dropped():
    batch = [PendingPrompt(PromptRecord(f"r{i}", f"q{i}", "t"), [1, 2]) for i in range(3)]
    answers = [Response([], "", "eos"), Response([EOS], "", "eos"), Response([9, EOS], "w9", "eos")]
    report = DataReport()
    rows = screen_rows(batch, answers, Decontaminator([]), report)
    assert [r["id"] for r in rows] == ["r2"] and report.short == 2


def test_config_errors_are_one_line_d3d_errors(tmp_path):
    bad = [
        dict(out=tmp_path / "x.jsonl"),  # no prompt source
        dict(out=tmp_path / "x.csv", prompts=(tmp_path,)),
        dict(out=tmp_path / "x.jsonl", prompts=(tmp_path,), greedy=True, temperature=0.5),
        dict(out=tmp_path / "x.jsonl", prompts=(tmp_path,), max_new_tokens=1),
        dict(out=tmp_path / "x.jsonl", prompts=(tmp_path,), endpoint="localhost:8000"),
        dict(out=tmp_path / "x.jsonl", prompts=(tmp_path,), top_k_logits=-1),
        dict(out=tmp_path / "x.jsonl", prompts=(tmp_path,), top_k_logits=4, endpoint="http://localhost:8000"),
    ]
    for kw in bad:
        with pytest.raises(D3DError):
            DataConfig(**kw).validate()


# ---------------------------------------------------------------------------------------------
# Decontamination


def test_decontamination_drops_planted_humaneval_prompts(tmp_path, chat_target):
    humaneval = held_out_prompts()
    wrapped = "Complete the following Python function.\n\n```python\n" + humaneval[3] + "```"
    excluded = write_jsonl(tmp_path / "held_out.jsonl", [{"prompt": "Name THREE primary colours!"}])
    rows = word_prompts(3) + [{"id": "he-exact", "prompt": humaneval[0]}, {"id": "he-wrapped", "prompt": wrapped},
                              {"id": "ex", "prompt": "name three primary colours"}]
    prompts = write_jsonl(tmp_path / "prompts.jsonl", rows)
    report = run(tmp_path, chat_target, prompts=(prompts,), exclude=(excluded,))
    assert (report.contaminated, report.prompts, report.overlaps) == (3, 3, 0)
    assert check_decontaminated(tmp_path / "data.jsonl", held_out_prompts([excluded])) == 0
    planted = write_jsonl(tmp_path / "planted.jsonl", [{"prompt": wrapped, "response": "ok"}])
    assert check_decontaminated(planted, humaneval) == 1


def test_overlap_rule_exact_or_a_shared_13_gram():
    words = [f"word{i}" for i in range(20)]
    checker = Decontaminator([" ".join(words)])
    assert checker.overlaps(" ".join(words).upper() + " !!")  # normalised exact match
    assert checker.overlaps("prefix " + " ".join(words[3:16]) + " suffix")  # 13 shared words
    assert not checker.overlaps("prefix " + " ".join(words[3:15]) + " suffix")  # only 12
    assert not Decontaminator(["hello there"]).overlaps("hello there, how are you?")


# ---------------------------------------------------------------------------------------------
# Hugging Face dataset source (local files)


def test_dataset_source_from_local_files(tmp_path):
    from datasets import Dataset

    rows = [{"instruction": "first task"}, {"instruction": ""}, {"instruction": "second task"}]
    write_jsonl(tmp_path / "d.jsonl", rows)
    loaded = read_prompt_dataset(str(tmp_path / "d.jsonl"), "train", "instruction")
    assert [r.text for r in loaded] == ["first task", "second task"] and loaded.bad_rows == 1
    assert loaded.records[1].id == "d.jsonl:train:2" and loaded.records[0].source.startswith("dataset:")
    (tmp_path / "d.csv").write_text("id,prompt\na,csv one\nb,csv two\n")
    assert [(r.id, r.text) for r in read_prompt_dataset(str(tmp_path / "d.csv"))] == [("a", "csv one"), ("b", "csv two")]
    chat = [[{"role": "system", "content": "s"}, {"role": "user", "content": "from messages"}]]
    Dataset.from_dict({"messages": chat}).save_to_disk(str(tmp_path / "saved"))
    assert [r.text for r in read_prompt_dataset(str(tmp_path / "saved"), column="messages")] == ["from messages"]
    with pytest.raises(D3DError, match="no column 'prompt'"):
        read_prompt_dataset(str(tmp_path / "d.jsonl"))
    with pytest.raises(D3DError, match="cannot load dataset"):
        read_prompt_dataset(str(tmp_path / "nowhere"))


# ---------------------------------------------------------------------------------------------
# OpenAI-compatible endpoint (stub server)


class StubHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append(body)
        if self.server.fail_next:
            self.server.fail_next -= 1
            return self._send(self.server.fail_code, {"error": "try again"})
        text, finish = self.server.answer(body["messages"][-1]["content"])
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        self._send(200, {"id": "x", "object": "chat.completion", "model": body["model"], "choices": [choice]})

    def _send(self, code: int, obj: dict) -> None:
        raw = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args) -> None:
        pass


def stub_answer(prompt: str) -> tuple[str, str]:
    if prompt == "w10":
        return "", "stop"  # only the end-of-turn token: too short
    if prompt.startswith("w11"):
        return "w40 w41 w42", "length"
    return f"w50 {prompt}", "stop"


@pytest.fixture
def stub_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubHandler)
    server.seen, server.fail_next, server.fail_code, server.answer = [], 0, 500, stub_answer
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_endpoint_answers_are_tokenized_with_the_target_tokenizer(tmp_path, stub_server, tiny_chat_model_dir):
    url = f"http://127.0.0.1:{stub_server.server_address[1]}"
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(5))
    report = run(tmp_path, None, prompts=(prompts,), endpoint=url + "/v1", target=str(tiny_chat_model_dir),
                 greedy=False, temperature=0.3, top_p=0.8, max_new_tokens=7)
    rows = {r["id"]: r for r in read_rows(tmp_path / "data.jsonl")}
    assert report.short == 1 and sorted(rows) == ["p1", "p2", "p3", "p4"]
    assert rows["p1"]["response_ids"] == [40, 41, 42] and rows["p1"]["finish_reason"] == "max_new_tokens"
    assert rows["p2"]["response_ids"] == [50, 12, 13, 14, EOS]
    assert rows["p3"]["response"] == "w50 w13 w14 w15 w16" and rows["p3"]["finish_reason"] == "eos"
    sent = stub_server.seen[0]
    assert (sent["model"], sent["temperature"], sent["top_p"], sent["max_tokens"]) == ("stub-model", 0.3, 0.8, 7)
    meta = json.loads((tmp_path / "data.meta.json").read_text())
    assert meta["responses"] == {"kind": "endpoint", "url": url, "model": "stub-model"}


def test_endpoint_retries_transient_failures_and_reports_refusals(stub_server):
    url = f"http://127.0.0.1:{stub_server.server_address[1]}/v1/chat/completions"
    cfg = EndpointConfig(url, "m", timeout_s=5, retries=2, backoff_s=0.01)
    payload = {"model": "m", "messages": [{"role": "user", "content": "w20"}]}
    stub_server.fail_next = 2
    assert request_json(url, cfg, payload)["choices"][0]["message"]["content"] == "w50 w20"
    stub_server.fail_next = 3
    with pytest.raises(D3DError, match="failed 3 times; last: HTTP 500"):
        request_json(url, cfg, payload)
    stub_server.fail_next, stub_server.fail_code = 1, 400
    with pytest.raises(D3DError, match="refused the request: HTTP 400"):
        request_json(url, cfg, payload)


# ---------------------------------------------------------------------------------------------
# Self-instruct (Magpie)


def test_user_turn_prefix_is_cut_from_the_chat_template(chat_target):
    tokenizer = chat_target.tokenizer
    assert user_turn_template(tokenizer) == ("<|im_start|> user ", " <|im_end|> ")
    original = tokenizer.chat_template
    try:
        tokenizer.chat_template = SMOLLM2_TEMPLATE
        before, after = user_turn_template(tokenizer)
        assert before == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                          "<|im_end|>\n<|im_start|>user\n")
        assert after == "<|im_end|>\n" and turn_end_ids(tokenizer, after, ()) == {EOS}
        tokenizer.chat_template = None
        with pytest.raises(D3DError, match="chat template"):
            user_turn_template(tokenizer)
    finally:
        tokenizer.chat_template = original


@pytest.mark.parametrize("text, reason", [
    ("Write a short poem about the sea at night.", None),
    ("How do I reverse a list in Python, e.g. [1, 2, 3]?", None),
    ("   ", "empty"),
    ("Hi there", "too short"),
    ("1234 5678 9012 3456 7890 !!!! ????", "mostly non-alphabetic"),
    ("tell me more tell me more tell me more tell me more", "repeated n-grams"),
])
def test_degenerate_user_turns_are_recognised(text, reason):
    assert degenerate_reason(text) == reason


def test_self_instruct_writes_distinct_filtered_prompts_and_resumes(tmp_path, chat_target, monkeypatch):
    # A random model rarely ends its turn and writes "w<id>" words: sample hot, accept non-letters.
    cfg = SelfInstructConfig(temperature=50.0, top_p=1.0, max_new_tokens=40, attempts_per_prompt=8,
                             min_chars=4, min_alpha_fraction=0.0)
    journal = tmp_path / "si.jsonl"
    got = self_instruct_prompts(chat_target, 4, batch_size=8, seed=0, journal=journal, cfg=cfg, progress=False)
    texts = [r.text for r in got]
    assert len(texts) == 4 and len({normalize_text(t) for t in texts}) == 4
    assert all(degenerate_reason(t, cfg) is None and r.source == "self-instruct" for t, r in zip(texts, got))
    samples = read_rows(journal)
    assert {s["reason"] for s in samples} - {None} == {"unfinished"}
    monkeypatch.setattr(self_instruct, "generate_batch", lambda *a, **k: pytest.fail("resumed run sampled again"))
    again = self_instruct_prompts(chat_target, 4, batch_size=8, seed=0, journal=journal, cfg=cfg, progress=False)
    assert [r.text for r in again] == texts


def test_self_instruct_ids_carry_the_seed_so_shards_of_two_seeds_never_share_one(tmp_path, chat_target):
    # --skip-answered matches prompt ids: a second shard drawn with another seed must not look answered.
    cfg = SelfInstructConfig(temperature=50.0, top_p=1.0, max_new_tokens=40, attempts_per_prompt=8,
                             min_chars=4, min_alpha_fraction=0.0)
    ids = {}
    for seed in (2, 3):
        journal = tmp_path / f"si{seed}.jsonl"
        self_instruct_prompts(chat_target, 2, batch_size=4, seed=seed, journal=journal, cfg=cfg, progress=False)
        ids[seed] = {s["id"] for s in read_rows(journal)}
        assert all(i.startswith(f"self-instruct-s{seed}-") for i in ids[seed])
    assert ids[2] and ids[3] and not ids[2] & ids[3]


def test_self_instruct_end_to_end_run_completes(tmp_path, chat_target):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(2))
    report = run(tmp_path, chat_target, prompts=(prompts,), self_instruct=3, batch_size=4)
    journal = read_rows(tmp_path / "data.self-instruct.jsonl")
    assert len(journal) == 12  # 3 wanted x 4 attempts each, all degenerate "w<id>" text or unfinished
    assert report.prompts == 2 + sum(s["reason"] is None for s in journal) and report.overlaps == 0


# ---------------------------------------------------------------------------------------------
# Command line


def test_cli_data_runs_and_prints_the_check(tmp_path, tiny_chat_model_dir, capsys):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", word_prompts(3))
    out = tmp_path / "d.parquet"
    argv = ["data", "--out", str(out), "--prompts", str(prompts), "--target", str(tiny_chat_model_dir),
            "--max-new-tokens", "3", "--batch-size", "2", "--device", "cpu", "--seed", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert "0 overlaps with held-out prompts" in printed[-2]
    assert json.loads(printed[-1])["rows"] == 3 and len(read_rows(out)) == 3
    assert main(["data", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == "d3d: error: no prompt source: give --prompts, --dataset or --self-instruct"


def test_cli_defaults_match_the_config():
    args = build_parser().parse_args(["data", "--out", "x.jsonl"])
    cfg = DataConfig(out=Path("x.jsonl"))
    for name in ("split", "column", "self_instruct", "max_new_tokens", "batch_size", "greedy", "seed", "limit",
                 "temperature", "top_p", "endpoint", "endpoint_model", "target", "dataset", "device", "dtype",
                 "top_k_logits", "eval_only"):
        assert getattr(args, name) == getattr(cfg, name), name
