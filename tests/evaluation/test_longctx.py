"""The long-context suite: deterministic prompts with their answers, and the task metrics."""

from __future__ import annotations

from d3d.evaluation.longctx import TASKS, longctx_prompts, multikey_prompt, passkey_prompt, score, token_f1
from d3d.evaluation.suites import load_suite


def test_suite_is_deterministic_interleaved_and_answerable():
    prompts = load_suite("longctx")
    assert prompts == longctx_prompts() and len(prompts) == 45 and len({p.id for p in prompts}) == 45
    assert [p.task for p in prompts[:3]] == list(TASKS) and prompts[3].id == "longctx/passkey-2000-00"
    for p in prompts:
        assert p.reference and p.text.rstrip().endswith(("only.", "sentence."))
        if p.task != "docqa":
            assert p.reference[0] in p.text.split("\n\n")[1] if p.task == "passkey" else p.reference[0] in p.text


def test_context_lengths_grow():
    sizes = [len(passkey_prompt(n, 0).text) for n in (1000, 2000, 4000)]
    assert sizes[0] < sizes[1] < sizes[2] and 3000 < sizes[0] < 6000


def test_passkey_metric_wants_the_whole_number():
    p = passkey_prompt(1000, 0)
    key = p.reference[0]
    assert score(p, f"The pass key is {key}.") == 1.0
    assert score(p, f"1{key}") == 0.0 and score(p, "I do not know.") == 0.0


def test_multikey_metric_rejects_distractor_codes():
    p = multikey_prompt(1000, 0)
    right, wrong = p.reference[0], p.reference[1]
    assert score(p, right) == 1.0 and score(p, f"{right} or {wrong}") == 0.0 and score(p, wrong) == 0.0


def test_token_f1():
    assert token_f1("Return the sum.", "return the sum") == 1.0
    assert token_f1("nothing alike", "return the sum") == 0.0
    assert round(token_f1("return a value", "return the sum"), 4) == 0.5
