"""Helpers shared by the tests: prompts, plain greedy reference decoding, and the exact-distribution
machinery of the statistical sampling tests (enumerated marginals and one chi-square check).

Fixtures (tiny checkpoints) live in conftest.py; test-only draft sources in inference/sources.py.
"""

from __future__ import annotations

from pathlib import Path

import torch
from scipy.stats import chisquare
from torch import Tensor

from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode
from d3d.inference.sampling import SamplingConfig, probs_from_logits
from d3d.inference.stopping import StopChecker
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel, load_decoder
from tests.conftest import save_tiny_model

MASK_ID = 96  # the tiny drafters' mask token: the last id of the 97-token tiny vocabulary
MIN_P_VALUE = 1e-3  # a statistical test fails below this chi-square p-value


def prompt(seed: int = 0, n: int = 7) -> Tensor:
    """A random prompt [1, n] of ids below 90 (clear of the tiny tokenizer's special ids' roles)."""
    return torch.randint(0, 90, (1, n), generator=torch.Generator().manual_seed(seed))


def greedy(target: DecoderModel, prompt_ids: Tensor, max_new: int = 40, eos: tuple[int, ...] = ()) -> list[int]:
    """Plain greedy decoding: the reference every lossless mode must reproduce."""
    cfg = GenerationConfig(max_new_tokens=max_new)
    stop = StopChecker(max_new, eos)
    return [t for chunk in autoregressive_decode(target, prompt_ids, cfg, stop, DecodeStats("ar")) for t in chunk]


def run_decode(decode, *args, max_new: int = 40, eos: tuple[int, ...] = (), cfg: GenerationConfig | None = None,
               **kwargs):
    """(tokens, stats) of one run of a decode loop, e.g. run_decode(speculative_decode, target, source, prompt);
    `kwargs` go to the decode loop (e.g. policy=...)."""
    cfg = cfg or GenerationConfig(max_new_tokens=max_new)
    stats = DecodeStats("x")
    out = [t for chunk in decode(*args, cfg, StopChecker(cfg.max_new_tokens, eos), stats, **kwargs) for t in chunk]
    return out, stats


def small_vocab_target(path: Path, layers: int = 1, head_scale: float = 0.15) -> DecoderModel:
    """A float64 target over 12 tokens whose LM head is scaled by `head_scale` (small: every token
    has real mass; large: a peaked target), for the statistical tests."""
    d = save_tiny_model(path, "llama", seed=1, vocab_size=12, hidden_size=16, intermediate_size=32,
                        num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1)
    target = load_decoder(d, dtype=torch.float64)
    with torch.no_grad():
        target.lm_head.weight.mul_(head_scale)
    return target


def exact_marginals(target: DecoderModel, prompt_ids: Tensor, sampling: SamplingConfig, depth: int) -> list[Tensor]:
    """Exact distribution [V] of each of the first `depth` generated tokens, by enumerating every
    continuation (V^(depth-1) sequences: keep V and depth small)."""
    v = target.spec.vocab_size
    seqs, joint, marginals = prompt_ids, torch.ones(1, dtype=torch.float64), []
    with torch.no_grad():
        for _ in range(depth):
            step = probs_from_logits(target(Rows.clean(seqs, 0))[:, -1].double(), sampling)  # [S, V]
            joint = (joint[:, None] * step).flatten()
            marginals.append(joint.view(-1, v).sum(0))
            seqs = torch.cat([seqs.repeat_interleave(v, 0), torch.arange(v).repeat(seqs.shape[0])[:, None]], 1)
    return marginals


def count_positions(outputs: list[list[int]], depth: int, vocab: int) -> Tensor:
    """counts [depth, vocab]: how often each token appeared at each of the first `depth` positions."""
    counts = torch.zeros(depth, vocab)
    for out in outputs:
        counts[torch.arange(depth), torch.tensor(out[:depth])] += 1
    return counts


def assert_follows(counts: Tensor, want: Tensor, label: str = "") -> None:
    """counts [V] of sampled tokens follow the probabilities want [V]: nothing outside the support,
    and a chi-square goodness of fit above MIN_P_VALUE on it."""
    support = want > 0
    assert counts[~support].sum() == 0, f"{label}: sampled a token of probability 0"
    expected = want[support] / want[support].sum() * counts.sum()
    p_value = chisquare(counts[support].numpy(), expected.numpy()).pvalue
    assert p_value > MIN_P_VALUE, f"{label}: chi-square p-value {p_value:.2e}"
