"""Batched speculative decoding for continuous batching: many sequences, one round at a time.

`BatchDecoder` owns the target and the drafter and advances every running sequence by one round
per `step()`:

    draft   one batched drafter pass: each drafting sequence feeds the tokens it committed since
            its last pass as clean rows (ragged, padded on the right) plus one block
            [anchor, M, ..., M] anchored at its own position
    verify  one batched target pass over every sequence's [anchor, d_1..d_n_r] (ragged n_r,
            padded on the right, padding rows invalid)
    accept  `verify.verify` per sequence, with that sequence's own sampling settings and seeded
            generators (acceptance lives only in verify.py)
    commit  each sequence's target cache slot is cropped to its own accepted prefix

Sequences join with `add` (their prefill runs alone through `engine.start_decode`, exactly as a
single request's would, and is then copied into a slot of the shared `RaggedKVCache`) and leave
with `remove`, both between rounds. A sequence's output is what it would be alone: greedy output
equals plain greedy decoding (the argmax of the same target over the same prefix), and sampled
output follows the target's distribution, because each sequence draws from its own generators
(target: seed, drafter: seed + 1, as `Pipeline.stream` seeds synchronous decoding) and nothing
else in the batch touches them.

Those generators are drawn once per round, so a request's sampled tokens would still depend on how
its rounds were shaped, i.e. on the load. A request with `GenerationConfig.position_seeded` (the
server's seeded requests) instead samples the token at every position with noise drawn from
(seed, position) and is verified by `verify.verify_coupled`: its tokens are those plain decoding
would sample with that noise, whatever the batch, the verification lengths or the plain steps.

Whether the batch drafts at all this round comes from its `BatchGate` (plain steps for the whole
batch, no drafter pass, while drafting does not pay). Whether a sequence drafts, and how many drafted
tokens it verifies, comes from its own `DraftPolicy` (made per sequence by the `draft_policy`
factory, e.g. `draft_length.DraftLengthPolicy` over `BatchShare` costs, so that at a large batch,
where the target is compute-bound, speculation shrinks); without one every drafted token is
verified. Gate and policies only see the drafter's distributions (each position's largest q) and
finished rounds, never the tokens sampled in the round, so every choice stays lossless.

This module knows nothing about HTTP, queues, threads or tokenizers: the serving loop
(`d3d.serving.engine_loop`) calls `add`, `step` and `remove`.

    decoder = BatchDecoder(target, drafter, max_batch=8)
    seq = decoder.add(prompt_ids, GenerationConfig(max_new_tokens=64), stop)
    while decoder.running:
        for seq, tokens in decoder.step(): print(seq.ident, tokens)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

import torch
from torch import Tensor

from d3d.inference.draft_length import MAX_SKIP, DraftLengthPolicy
from d3d.inference.drafting import Draft
from d3d.inference.engine import (
    DecodeStats,
    GenerationConfig,
    context_budget,
    context_length,
    now,
    pick_token,
    sampling_generator,
    start_decode,
)
from d3d.inference.sampling import position_noise, probs_from_logits, sample, sample_with_noise
from d3d.inference.stopping import StopChecker
from d3d.inference.verify import verify, verify_coupled
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import Drafter, predicting_rows
from d3d.models.ragged_cache import RaggedKVCache, new_ragged_cache



class DraftPolicy(Protocol):
    """Per-sequence verification-length policy (the interface of `draft_length.DraftLengthPolicy`)."""

    def should_draft(self) -> bool:
        """Called once per round before drafting; False: a plain step this round."""

    def choose(self, confidence: Tensor | None, available: int) -> int:
        """m in 0..available: drafted tokens to verify, from their confidences [available]."""

    def observe(self, verified: int, appended: int) -> None:
        """After a drafting round: drafted tokens verified, tokens appended."""


DraftPolicyFactory = Callable[[Callable[[], int]], DraftPolicy]
"""Makes one sequence's policy; its argument returns the current batch size."""


class BatchShare:
    """Pass costs as one sequence's share of a batched pass: seconds(k) = t_v(batch * k) / batch.

    Wraps a single-sequence cost table (`pass_costs.PassCosts`, anything with `seconds(k)`). At
    batch 1 it is the table itself; as the batch grows and a pass of batch * k rows stops being
    nearly free, verifying more rows costs each sequence more, so a policy verifies fewer.
    """

    def __init__(self, costs, batch_size: Callable[[], int]) -> None:
        self.costs, self.batch_size = costs, batch_size

    def seconds(self, k: int) -> float:
        b = max(1, self.batch_size())
        return self.costs.seconds(b * k) / b


class BatchGate:
    """Whether the batch drafts at all this round: the single-request back-off of
    `draft_length.DraftLengthPolicy` (plain steps 1, 2, 4, ... up to `max_skip` while drafting loses,
    then one drafting round to re-check), fed with whole rounds of the batch. While it is closed the
    batched drafter pass is skipped and every sequence takes a plain step.

    A drafting round of b sequences with a verification pass w rows wide costs t_d(b) + t_v(b * w)
    and appended A tokens, where b plain steps would have cost t_v(b) for b tokens; its gain is
    A * t_v(b) / (b * (t_d(b) + t_v(b * w))). Costed from the measured tables, never from the
    round's wall time. t_d(b) scales the one-sequence drafter pass t_d like a target pass over the
    same rows: t_d * t_v(b * B) / t_v(B) (the drafter is a few of the target's layers).
    """

    def __init__(self, costs, draft_s: float, block_size: int, max_skip: int = MAX_SKIP) -> None:
        self.costs, self.draft_s, self.block_size = costs, draft_s, block_size  # costs: `pass_costs.PassCosts`
        self.backoff = DraftLengthPolicy(costs, max_skip=max_skip, draft_s=draft_s)  # the back-off state

    def should_draft(self) -> bool:
        """False while the batch takes plain steps (one call per round)."""
        return self.backoff.should_draft()

    def observe(self, batch: int, width: int, appended: int) -> None:
        """After a drafting round: sequences in it, rows of its verification pass, tokens appended."""
        t_v = self.costs.seconds
        drafting = self.draft_s * t_v(batch * self.block_size) / t_v(self.block_size)
        self.backoff.record_gain(appended * t_v(batch) / (batch * (drafting + t_v(batch * width))))


DRAFT_SEED_OFFSET = 1  # the drafter samples with seed + 1, as synchronous decoding does


@dataclass
class Sequence:
    """One running request: its tokens, settings, generators and where its caches live."""

    ident: int  # unique per decoder, in order of arrival
    committed: list[int]  # prompt + generated tokens (the last one is the next anchor)
    prompt_len: int  # tokens of the prompt
    cfg: GenerationConfig  # sampling settings and seed of this request
    stop: StopChecker  # its stop conditions (budget already clamped to the context)
    speculate: bool  # False: plain decoding (one target token per round, no drafter)
    stats: DecodeStats  # tokens, rounds, accepted-length histogram of this request
    target_gen: torch.Generator | None  # seeded with cfg.seed (None when greedy)
    draft_gen: torch.Generator | None  # seeded with cfg.seed + 1 (None when greedy)
    slot: int = -1  # row of the target's ragged cache
    draft_slot: int = -1  # row of the drafter's ragged cache (-1: not drafting)
    policy: DraftPolicy | None = None  # its verification-length policy (None: verify every drafted token)

    @property
    def finished(self) -> bool:
        return self.stop.reason is not None

    @property
    def generated(self) -> list[int]:
        return self.committed[self.prompt_len :]

    @property
    def coupled(self) -> bool:
        """Sampled with per-position noise (`GenerationConfig.position_seeded`): load-independent tokens."""
        return self.cfg.position_seeded and not self.cfg.sampling.greedy

    def noise(self, first: int, n: int, vocab: int, device: torch.device) -> Tensor:
        """Race noise [n, V] of sequence positions first .. first + n - 1 (`sampling.position_noise`)."""
        return position_noise(self.cfg.seed, range(first, first + n), vocab, device)


@dataclass
class RoundStats:
    """What one `step()` did, for metrics."""

    batch: int = 0  # sequences verified in this round
    drafting: int = 0  # sequences drafted for in this round
    appended: list[int] = field(default_factory=list)  # tokens each sequence appended (before stop truncation)
    draft_s: float = 0.0  # wall time of the batched drafter pass
    verify_s: float = 0.0  # wall time of the batched target pass and acceptance


def pad_right(rows: list[list[int]], fill: int, device: torch.device) -> tuple[Tensor, Tensor | None]:
    """ids [b, m] (m = longest row) padded with `fill`, and valid [b, m] (False on padding; None
    when no row is padded, so that the runtime may take its unmasked fast paths)."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), fill, dtype=torch.long)
    valid = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        valid[i, : len(r)] = True
    padded = any(len(r) < width for r in rows)
    return ids.to(device), valid.to(device) if padded else None


def batched_block_logits(drafter: Drafter, cache: RaggedKVCache, new_tokens: list[list[int]], anchor_pos: list[int]) -> Tensor:
    """Logits [b, B-1, V] of one block per cache slot, drafted in one pass.

    new_tokens[r]: slot r's committed tokens not yet in its drafter cache (its anchor last, at
    position anchor_pos[r]); they are fed as clean rows and cached. Block r sees slot r's clean
    keys before its anchor and its own rows, exactly like `Drafter.draft_logits` for one sequence.
    """
    dev, bs = drafter.model.device, drafter.block_size
    ids, valid = pad_right(new_tokens, drafter.config.mask_token_id, dev)
    starts = torch.tensor(cache.lengths, device=dev)
    blocks = torch.full((len(new_tokens), 1, bs), drafter.config.mask_token_id, dtype=torch.long, device=dev)
    blocks[:, 0, 0] = torch.tensor([t[-1] for t in new_tokens], device=dev)
    anchors = torch.tensor(anchor_pos, device=dev).view(-1, 1)
    rows = Rows.with_blocks(Rows.clean(ids, starts, valid), blocks, anchors, drafter.config.causal_blocks)
    new_lengths = [length + len(t) for length, t in zip(cache.lengths, new_tokens)]
    hidden = drafter.model.hidden_states(rows, cache)[:, rows.num_clean :]  # [b, B, hidden]
    cache.set_lengths(new_lengths)
    return drafter.project(predicting_rows(hidden, drafter.config.labels))  # the drafter's label convention


def verify_logits(target: DecoderModel, cache: RaggedKVCache, blocks: list[list[int]], anchor_pos: list[int]) -> Tensor:
    """Target logits [b, m, V] for each slot's block [anchor, d_1..d_n] (ragged, padded right).

    Every row is cached (padding as invalid columns); the caller crops each slot afterwards.
    """
    dev = target.device
    ids, valid = pad_right(blocks, 0, dev)
    return target(Rows.clean(ids, torch.tensor(anchor_pos, device=dev), valid), cache)


def position_confidence(probs: Tensor | None, logits: Tensor) -> Tensor:
    """Each position's largest q [n], from the drafter's probs [n, V] (or its raw logits [n, V] when
    greedy): a function of the prefix only. The q of the token the drafter sampled would not do: a
    length chosen from it verifies the drafts the drafter happened to like, which biases the output
    (`draft_length.py`, tests/inference/test_batch_sampling.py)."""
    if probs is not None:
        return probs.max(-1).values
    return logits.float().softmax(-1).max(-1).values


class BatchDecoder:
    """Continuous-batching speculative decoder over one target and (optionally) one drafter."""

    def __init__(self, target: DecoderModel, drafter: Drafter | None, max_batch: int = 8,
                 draft_policy: DraftPolicyFactory | None = None, capacity: int = 256,
                 gate: BatchGate | None = None) -> None:
        self.target, self.drafter, self.max_batch = target, drafter, max_batch
        self.draft_policy = draft_policy
        self.gate = gate  # None: the drafter pass runs whenever some sequence drafts
        self.target_cache = new_ragged_cache(target, max_batch, capacity)
        self.draft_cache = new_ragged_cache(drafter.model, max_batch, capacity) if drafter is not None else None
        self.slots: list[Sequence] = []  # slots[i] lives in target cache slot i
        self.draft_slots: list[Sequence] = []  # draft_slots[i] lives in drafter cache slot i
        self._ids = itertools.count()

    @property
    def running(self) -> list[Sequence]:
        return list(self.slots)

    @property
    def block_size(self) -> int:
        return self.drafter.block_size if self.drafter is not None else 1

    @property
    def full(self) -> bool:
        return len(self.slots) >= self.max_batch

    @torch.inference_mode()
    def add(self, prompt: Tensor, cfg: GenerationConfig, stop: StopChecker, speculate: bool = True) -> Sequence:
        """Prefill prompt [1, n] alone, pick the first token, and join the batch (unless that token ends it).

        Raises D3DError (via `start_decode`) if the prompt does not fit the context.
        """
        if self.full:
            raise RuntimeError("the batch is full")
        speculate = speculate and self.drafter is not None
        stats = DecodeStats("sync" if speculate else "ar")
        ctx = context_length(self.target.config)
        stop.max_new_tokens = min(stop.max_new_tokens, context_budget(ctx, prompt.shape[1], cfg.max_new_tokens))
        # the single-request prefill, with a cache sized for the prompt only (it is copied into a slot)
        start = start_decode(self.target, prompt, replace(cfg, max_new_tokens=1), StopChecker(1), stats)
        draft_gen = sampling_generator(cfg, self.target.device, DRAFT_SEED_OFFSET) if speculate else None
        seq = Sequence(next(self._ids), prompt[0].tolist(), prompt.shape[1], cfg, stop, speculate, stats,
                       start.generator, draft_gen)
        first = self._pick(seq, start.last_logits[None]) if seq.coupled else start.first_token
        seq.committed.append(first)
        stats.new_tokens = 1
        if stop.push(first):
            stats.stop_reason = stop.reason
            return seq
        seq.slot = self.target_cache.place(start.cache)
        self.slots.append(seq)
        if speculate:
            self._join_drafter(seq, prompt)
            seq.policy = self.draft_policy(lambda: len(self.slots)) if self.draft_policy is not None else None
        return seq

    def _join_drafter(self, seq: Sequence, prompt: Tensor) -> None:
        """Cache the prompt in the drafter (a clean pass of its own) and give it a drafter slot."""
        single = self.drafter.new_cache(prompt.shape[1] + 1)
        self.drafter.model.hidden_states(Rows.clean(prompt, 0), single)
        seq.draft_slot = self.draft_cache.place(single)
        self.draft_slots.append(seq)

    def remove(self, seq: Sequence) -> None:
        """Leave the batch (finished or cancelled); frees its cache slots."""
        if seq.slot >= 0:
            self._release(self.target_cache, self.slots, seq.slot, "slot")
            seq.slot = -1
        if seq.draft_slot >= 0:
            self._release(self.draft_cache, self.draft_slots, seq.draft_slot, "draft_slot")
            seq.draft_slot = -1

    @staticmethod
    def _release(cache: RaggedKVCache, slots: list[Sequence], slot: int, attr: str) -> None:
        moved = cache.release(slot)
        if moved is not None:
            slots[slot] = slots[moved]
            setattr(slots[slot], attr, slot)
        slots.pop()

    def _num_draft(self, seq: Sequence) -> int:
        """Tokens to draft for seq this round (0: a plain step); asks its policy once per round."""
        n = min(self.block_size - 1, seq.stop.remaining - 1) if seq.speculate else 0
        if n > 0 and seq.policy is not None and not seq.policy.should_draft():
            return 0
        return n

    def _draft(self, rnd: RoundStats) -> dict[int, Draft]:
        """One batched drafter pass for every drafting sequence; their drafts by sequence id."""
        if self.gate is not None and self.draft_slots and not self.gate.should_draft():
            return {}
        wanted = {s.ident: self._num_draft(s) for s in self.draft_slots}
        if not any(n > 0 for n in wanted.values()):
            return {}
        cache = self.draft_cache
        new_tokens = [s.committed[length:] for s, length in zip(self.draft_slots, cache.lengths)]
        anchor_pos = [len(s.committed) - 1 for s in self.draft_slots]
        logits = batched_block_logits(self.drafter, cache, new_tokens, anchor_pos)  # [b, B-1, V]
        drafts = {}
        for i, seq in enumerate(self.draft_slots):
            n = wanted[seq.ident]
            if n > 0:
                drafts[seq.ident] = self._propose(seq, logits[i, :n])
        rnd.drafting = len(drafts)
        return drafts

    def _propose(self, seq: Sequence, logits: Tensor) -> Draft:
        """The draft of one sequence from its block logits [n, V], shortened by the verify-length hook."""
        sampling = seq.cfg.sampling
        if sampling.greedy:
            draft = Draft(logits.argmax(-1))
        elif seq.coupled:  # the same noise the target's tokens at these positions will be drawn with
            probs = probs_from_logits(logits, sampling)
            noise = seq.noise(len(seq.committed), logits.shape[0], logits.shape[-1], logits.device)
            draft = Draft(sample_with_noise(probs, noise), probs)
        else:
            probs = probs_from_logits(logits, sampling)
            draft = Draft(sample(probs, seq.draft_gen), probs)
        if seq.policy is None:
            return draft
        n = draft.tokens.numel()
        m = max(0, min(n, int(seq.policy.choose(position_confidence(draft.probs, logits), n))))
        return Draft(draft.tokens[:m], None if draft.probs is None else draft.probs[:m])

    @torch.inference_mode()
    def step(self) -> tuple[list[tuple[Sequence, list[int]]], RoundStats]:
        """One round for every running sequence: ([(sequence, tokens it appended)], round stats).

        Finished sequences leave the batch before this returns (their `finished` is True).
        """
        rnd = RoundStats(batch=len(self.slots))
        if not self.slots:
            return [], rnd
        dev = self.target.device
        t0 = now(dev)
        drafts = self._draft(rnd)
        t1 = now(dev)
        blocks, anchor_pos = [], []
        for seq in self.slots:
            draft = drafts.get(seq.ident)
            blocks.append(seq.committed[-1:] + ([] if draft is None else draft.tokens.tolist()))
            anchor_pos.append(len(seq.committed) - 1)
        logits = verify_logits(self.target, self.target_cache, blocks, anchor_pos)  # [b, m, V]
        out, lengths = [], []
        for i, seq in enumerate(self.slots):
            draft = drafts.get(seq.ident)
            tokens, accepted = self._accept(seq, draft, logits[i, : len(blocks[i])])
            if draft is not None and seq.policy is not None:
                seq.policy.observe(draft.tokens.numel(), len(tokens))
            lengths.append(anchor_pos[i] + 1 + accepted)
            rnd.appended.append(len(tokens))
            out.append((seq, self._commit(seq, tokens)))
        self.target_cache.set_lengths(lengths)
        if drafts and self.gate is not None:
            self.gate.observe(len(blocks), max(len(b) for b in blocks), sum(rnd.appended))
        rnd.draft_s, rnd.verify_s = t1 - t0, now(dev) - t1
        for seq, _ in out:
            seq.stats.draft_s += rnd.draft_s
            seq.stats.verify_s += rnd.verify_s
            if seq.finished:
                self.remove(seq)
        return out, rnd

    @staticmethod
    def _pick(seq: Sequence, logits: Tensor) -> int:
        """The token after seq.committed from logits [1, V]: a plain step, as plain decoding picks it."""
        if not seq.coupled:
            return int(pick_token(logits[0], seq.cfg.sampling, seq.target_gen))
        noise = seq.noise(len(seq.committed), 1, logits.shape[-1], logits.device)
        return int(sample_with_noise(probs_from_logits(logits[0], seq.cfg.sampling), noise[0]))

    @classmethod
    def _accept(cls, seq: Sequence, draft: Draft | None, logits: Tensor) -> tuple[list[int], int]:
        """(tokens appended, drafted tokens accepted) for one sequence; logits [n+1, V]."""
        if draft is None or draft.tokens.numel() == 0:
            return [cls._pick(seq, logits[:1])], 0
        if seq.coupled:
            noise = seq.noise(len(seq.committed), logits.shape[0], logits.shape[-1], logits.device)
            result = verify_coupled(draft.tokens, logits, seq.cfg.sampling, noise)
        else:
            result = verify(draft.tokens, draft.probs, logits, seq.cfg.sampling, seq.target_gen)
        return result.tokens.tolist(), result.num_accepted

    @staticmethod
    def _commit(seq: Sequence, tokens: list[int]) -> list[int]:
        """Record the round and keep what the stop checker lets through."""
        seq.stats.record_round(len(tokens))
        kept = seq.stop.accept(tokens)
        seq.committed.extend(kept)
        seq.stats.new_tokens += len(kept)
        if seq.finished:
            seq.stats.stop_reason = seq.stop.reason
        return kept
