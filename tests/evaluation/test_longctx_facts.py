"""The longctx2 suite and the calibration set: deterministic, answerable, and disjoint from each other."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections import Counter

from d3d.evaluation.longctx import SUITE, paragraph_pool, score
from d3d.evaluation.longctx_facts import CALIBRATION, TASKS2, calibration_prompts, fact_prompt, longctx2_prompts
from d3d.evaluation.suites import load_suite

DIGEST = ("import hashlib, json\n"
          "from d3d.evaluation.longctx_facts import calibration_prompts, longctx2_prompts\n"
          "rows = [[p.id, p.text, p.reference, p.evidence] for p in longctx2_prompts() + calibration_prompts()]\n"
          "print(hashlib.sha256(json.dumps(rows).encode()).hexdigest())\n")


def test_suites_are_the_same_in_every_process():
    """Nothing per-process leaks into the texts (a function default prints its address, sets
    iterate by hash seed): two fresh interpreters with different hash seeds agree with this one."""
    here = hashlib.sha256(json.dumps([[p.id, p.text, p.reference, p.evidence]
                                      for p in longctx2_prompts() + calibration_prompts()]).encode()).hexdigest()
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", DIGEST], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": seed, "PATH": ""})
        assert out.stdout.strip() == here


def test_longctx2_is_longctx_plus_facts_interleaved_and_answerable():
    prompts = load_suite("longctx2")
    assert len(prompts) == 75 and len({p.id for p in prompts}) == 75
    assert {p.id for p in load_suite("longctx")} < {p.id for p in prompts}
    assert [p.task for p in prompts[:5]] == list(TASKS2) and prompts[5].id == "longctx/passkey-2000-00"
    assert Counter(p.id.split("-")[1] for p in prompts) == {"1000": 25, "2000": 25, "4000": 25}
    for p in prompts:
        assert p.text.count(p.evidence) == 1, p.id  # the selector's target is one place in the context
        if p.task != "docqa":
            assert p.reference[0] in p.evidence and score(p, p.reference[0]) == 1.0


def test_fact_questions_are_asked_in_other_words():
    for i in range(5):
        p = fact_prompt(2000, i)
        question = p.text.rsplit("\n\n", 1)[1]
        assert p.evidence not in question and p.reference[0] not in question
        assert score(p, f"It is {p.reference[0]}.") == 1.0 and score(p, "I do not know.") == 0.0


def test_oblique_questions_share_no_content_word_with_the_fact():
    stop = {"the", "a", "of", "to", "in", "is", "at", "has", "been", "with", "that", "only", "answer"}
    for length in (1000, 2000, 4000):
        for i in range(5):
            p = fact_prompt(length, i, oblique=True)
            question = p.text.rsplit("\n\n", 1)[1]
            words = lambda text: set(re.findall(r"[a-z]+", text.lower())) - stop  # noqa: E731
            assert p.task == "oblique" and not words(question) & words(p.evidence), (p.id, question)


def test_calibration_set_is_disjoint_from_the_suites():
    suite, calibration = longctx2_prompts(), calibration_prompts()
    assert len(calibration) == 45 and all(p.id.startswith("calibration/") for p in calibration)
    assert not {p.evidence for p in suite} & {p.evidence for p in calibration}
    suite_paragraphs = set(paragraph_pool(SUITE.modules))
    for p in calibration:
        assert p.text.count(p.evidence) == 1
        lines = set(p.text.split("\n"))
        assert not lines & suite_paragraphs, p.id  # no documentation paragraph of the suite's modules
        assert not any(f"secret code of {name} " in p.text for name in SUITE.names), p.id  # other names
        assert SUITE.filler not in p.text
    assert CALIBRATION.namespace != SUITE.namespace and not set(CALIBRATION.modules) & set(SUITE.modules)
