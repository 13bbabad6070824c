"""Selective-prefill chunk selectors: budget and order, the baselines, BM25, the target-layer probe, TTFT."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from d3d.errors import D3DError
from d3d.inference import prefill as prefill_module
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import GenerationConfig, autoregressive_decode
from d3d.inference.prefill import (
    FullPromptDrafterSource, PrefillConfig, SelectiveStats, reduce_for_target, select_prompt, selective_decode,
)
from d3d.inference.prompt_layout import stopword_ids
from d3d.inference.sampling import SamplingConfig
from d3d.inference.selectors import (
    SELECTORS, ChunkScorer, FusedScorer, LastScorer, LexicalScorer, PromptChunks, bm25, build_scorer, layer_attention_mass,
    parse_probe_layers, parse_selectors, ranks,
)
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID


def ids(seed: int, n: int) -> torch.Tensor:
    return torch.randint(5, 90, (1, n), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def models(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "fp", target=target)
    return target, drafter


def protected_head_tail(n: int, head: int = 3, tail: int = 6) -> torch.Tensor:
    protected = torch.zeros(n, dtype=torch.bool)
    protected[:head] = protected[n - tail :] = True
    return protected


@pytest.mark.parametrize("select", SELECTORS)
def test_every_selector_keeps_order_protected_tokens_and_the_budget(models, select):
    target, drafter = models
    prompt, protected = ids(1, 90), protected_head_tail(90)
    for keep in (0.2, 0.5):
        config = PrefillConfig(keep=keep, chunk_size=8, select=select, layers=(1, 2))
        selection, cache = select_prompt(drafter, prompt, protected, config, target)
        kept = selection.kept.tolist()
        assert kept == sorted(kept) and len(set(kept)) == len(kept)
        assert set(protected.nonzero()[:, 0].tolist()) <= set(kept)
        assert len(kept) <= int(keep * 90) and len(kept) > protected.sum()
        assert cache.length == (90 if select == "probe" else 0)  # only the probe reads the prompt before the first token


def test_random_is_deterministic_per_seed(models):
    _, drafter = models
    prompt, protected = ids(2, 120), protected_head_tail(120)

    def kept(seed: int) -> list[int]:
        config = PrefillConfig(keep=0.3, chunk_size=8, select="random", seed=seed)
        return select_prompt(drafter, prompt, protected, config)[0].kept.tolist()

    assert kept(0) == kept(0) and kept(5) == kept(5)
    assert len({tuple(kept(s)) for s in range(6)}) > 1  # other seeds, other chunks


def test_last_keeps_the_latest_chunks():
    chunks = PromptChunks(ids(3, 40), protected_head_tail(40, 0, 4), torch.tensor([0, 8, 16, 24, 32]),
                          torch.tensor([8, 16, 24, 32, 36]))
    assert ranks(LastScorer().score(chunks, None)).tolist() == [5, 4, 3, 2, 1]


def test_lexical_picks_the_chunk_holding_the_questions_rare_words():
    """Filler chunks share common ids (10-14) with each other and with the question; one chunk also
    holds the question's rare ids (70, 71). Stopword ids are ignored even when they are rare."""
    filler = [10, 11, 12, 13, 14, 10, 11, 12]
    body = [t for _ in range(9) for t in filler]
    body[44:47] = [70, 71, 12]  # the needle, inside chunk 5 (tokens 40-47)
    body[12] = 80  # a stopword (in place of a 14), also in the question: must not pull chunk 1 up
    question = [10, 11, 70, 80, 71, 12, 13]
    prompt = torch.tensor([[1, 2] + body + question])
    protected = torch.zeros(prompt.shape[1], dtype=torch.bool)
    protected[:2] = protected[-len(question) :] = True
    starts = torch.arange(2, 2 + len(body), 8)
    chunks = PromptChunks(prompt, protected, starts, torch.clamp(starts + 8, max=2 + len(body)))
    scores = LexicalScorer(frozenset({80}), spread=0.0).score(chunks, None)
    assert int(scores.argmax()) == 5 and float(scores[5]) > 2 * float(scores[[c for c in range(9) if c != 5]].max())
    assert abs(float(scores[1]) - float(scores[0])) < 0.1 * float(scores[0])  # the stopword counts for nothing
    unfiltered = LexicalScorer(spread=0.0).score(chunks, None)
    assert ranks(unfiltered)[1] == 2  # as a rare term it would have pulled chunk 1 up
    spread = build_scorer("lexical", stop_ids=frozenset({80})).score(chunks, None)  # the default spreads to neighbours
    assert ranks(spread)[5] == 1 and sorted(ranks(spread)[[4, 6]].tolist()) == [2, 3]


def test_lexical_keeps_both_halves_of_a_sentence_cut_by_a_chunk_boundary():
    """The question's rare ids (70, 71) end chunk 3; the answer (77) opens chunk 4, which matches
    nothing. Without spreading, chunks with one common question id outrank chunk 4 and the answer
    is dropped at a three-chunk budget; with it, chunk 3 and both its neighbours are kept. Chunk 7 touches no
    neighbour (a protected token sits between it and chunk 6), so nothing spreads into it."""
    filler = [20 + i for i in range(8)]
    body = [t for _ in range(8) for t in filler]
    body[29:32] = [70, 71, 72]  # end of chunk 3
    body[32] = 77  # start of chunk 4: the answer
    body[8] = 12  # chunk 1 holds one common question id
    body[48] = 12  # ... and so does chunk 6
    question = [70, 71, 12, 13]
    prompt = torch.tensor([[1, 2] + body[:56] + [3] + body[56:] + question])
    protected = torch.zeros(prompt.shape[1], dtype=torch.bool)
    protected[:2] = protected[58] = protected[-len(question):] = True
    starts = torch.tensor([2 + 8 * c for c in range(7)] + [59])
    chunks = PromptChunks(prompt, protected, starts, starts + 8)
    plain, spread = LexicalScorer(spread=0.0).score(chunks, None), LexicalScorer(spread=0.5).score(chunks, None)
    assert ranks(plain)[3] == 1 and ranks(plain)[4] > 3
    assert sorted(ranks(spread)[[2, 3, 4]].tolist()) == [1, 2, 3]
    assert float(spread[7]) == float(plain[7])  # not touching chunk 6
    assert torch.allclose(spread[4], 0.5 * plain[3])  # chunk 4 matches nothing itself


def test_bm25_prefers_rare_terms_and_short_documents():
    docs = [[1, 2, 3], [1, 2, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [4, 5]]
    s = bm25(docs, {1, 9})
    assert s[1] > s[2] > s[0] > s[3] == 0  # 9 is rare (2 documents) and the short document holds it


def test_target_layer_probe_equals_transformers_eager_attention(tiny_llama_dir):
    """The last prompt token's attention in layers 1 and 2, summed over heads, equals transformers'
    eager attention probabilities of the full model, although only layers 0-2 run."""
    target = load_decoder(tiny_llama_dir)
    hf = AutoModelForCausalLM.from_pretrained(tiny_llama_dir, attn_implementation="eager").eval()
    prompt = ids(4, 33)
    with torch.no_grad():
        attentions = torch.stack(hf(prompt, output_attentions=True).attentions)  # [layers, 1, h, L, L]
    want = attentions[[1, 2], 0, :, -1, :].sum((0, 1))  # [L]
    calls = []
    for layer in target.model.layers:
        layer.register_forward_hook(lambda *_: calls.append(1))
    with torch.no_grad():
        got = layer_attention_mass(target, prompt, (1, 2))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert len(calls) == 3  # layers 0, 1, 2 only: a prefix of the target


def test_fusion_ranks_by_reciprocal_rank():
    class Fixed(ChunkScorer):
        def __init__(self, name, scores):
            self.name, self.scores = name, torch.tensor(scores)

        def score(self, prompt, cache):
            return self.scores

    chunks = PromptChunks(ids(0, 4), torch.zeros(4, dtype=torch.bool), torch.arange(4), torch.arange(1, 5))
    fused = FusedScorer((Fixed("a", [100.0, 3.0, 2.0, 1.0]), Fixed("b", [1.0, 4.0, 3.0, 2.0])), k=1)
    # ranks a: 1 2 3 4, b: 4 1 2 3 -> 1/2+1/5, 1/3+1/2, 1/4+1/3, 1/5+1/4 (summed raw scores would put chunk 0 first)
    assert fused.name == "a+b" and ranks(fused.score(chunks, None)).tolist() == [2, 1, 3, 4]


@pytest.mark.parametrize("select", ["lexical", "target-layers+lexical"])
def test_other_selectors_decode_the_kept_tokens_and_draft_from_the_full_prompt(models, select):
    """Lossless on the reduced prompt, and the drafter, which reads the prompt only at its first
    drafting round, drafts as it would from the full prompt."""
    target, drafter = models
    prompt, protected = ids(6, 70), protected_head_tail(70)
    config = PrefillConfig(keep=0.3, chunk_size=8, select=select, layers=(1,))
    reduced = reduce_for_target(drafter, prompt, protected, config, target)
    assert reduced.drafter_cache.length == 0 and reduced.target_ids.shape[1] < 70
    cfg = GenerationConfig(max_new_tokens=16)
    want = [t for c in autoregressive_decode(target, reduced.target_ids, cfg, StopChecker(16, ()), SelectiveStats("ar")) for t in c]
    stats = SelectiveStats("sync")
    got = [t for c in selective_decode(target, drafter, prompt, protected, config, cfg, StopChecker(16, ()), stats) for t in c]
    assert got == want and stats.selector == select and stats.as_dict()["selector"] == select
    out = ids(7, 4)
    source = FullPromptDrafterSource(drafter, reduce_for_target(drafter, prompt, protected, config, target), SamplingConfig())
    source.start(200)
    drafted = source.propose(torch.cat([source.reduced.target_ids, out], 1), 3).tokens
    assert drafted.tolist() == DrafterSource(drafter, SamplingConfig()).propose(torch.cat([prompt, out], 1), 3).tokens.tolist()


class Clock:
    """A fake wall clock: every reading advances it by one; `spend` advances it by more."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self, device=None) -> float:
        self.t += 1.0
        return self.t

    def spend(self, seconds: float) -> None:
        self.t += seconds


@pytest.mark.parametrize("select", ["probe", "lexical"])
def test_ttft_span_holds_the_scoring_and_the_selection(models, monkeypatch, select):
    """By construction, not by timing: a scorer that takes 1000 fake seconds shows up whole in TTFT
    (and in select_s), for the probe and for a selector that never touches a model."""
    target, drafter = models
    clock = Clock()
    monkeypatch.setattr(prefill_module, "now", clock)
    real = PrefillConfig.scorer

    def slow_scorer(self, target_model, drafter_model):
        inner = real(self, target_model, drafter_model)

        class Slow(ChunkScorer):
            name = inner.name

            def score(self, prompt, cache):
                clock.spend(1000.0)
                return inner.score(prompt, cache)

        return Slow()

    monkeypatch.setattr(PrefillConfig, "scorer", slow_scorer)
    stats = SelectiveStats("sync")
    config = PrefillConfig(keep=0.5, chunk_size=8, select=select)
    cfg = GenerationConfig(max_new_tokens=6)
    for _ in selective_decode(target, drafter, ids(8, 50), protected_head_tail(50), config, cfg, StopChecker(6, ()), stats):
        pass
    assert 1000 <= stats.select_s <= stats.ttft_s <= stats.total_s
    assert stats.ttft_s < 1000 + 20  # the span closes at the first token (the fake clock ticks a few times)


def test_bad_selector_settings_are_clear_errors(models):
    target, drafter = models
    with pytest.raises(D3DError, match="unknown prefill selector 'bm25'"):
        PrefillConfig(select="bm25").validate()
    with pytest.raises(D3DError, match="unknown prefill selector"):
        parse_selectors("probe,nope")
    with pytest.raises(D3DError, match="do not exist"):
        select_prompt(drafter, ids(0, 30), protected_head_tail(30), PrefillConfig(0.5, 8, "target-layers", layers=(9,)), target)
    with pytest.raises(D3DError, match="needs the target"):
        select_prompt(drafter, ids(0, 30), protected_head_tail(30), PrefillConfig(0.5, 8, "target-layers"))
    for spec in ("", "7-3", "a", "-1", "3-"):
        with pytest.raises(D3DError, match="probe layers"):
            parse_probe_layers(spec)
    assert parse_probe_layers("3-5,9,4") == (3, 4, 5, 9) and parse_selectors("last, random,last") == ("last", "random")


def test_stopword_ids_are_whole_stopword_and_punctuation_tokens():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<unk>", "the", "What", "is", "?", "pass", "key", "secret"]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    assert stopword_ids(tokenizer) == {1, 2, 3, 4}  # the, What, is, ?; not the content words, not <unk>
