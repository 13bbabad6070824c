"""Transformers baselines on the target's own weights: plain `generate`, prompt-lookup decoding, and
assisted generation with an AR draft model (classic speculative decoding, `ar_drafter_hf_model`).

`hf_generate` runs `target.hf_model.generate` (the same weights as the native runtime) and fills
a `DecodeStats` exactly as the native decoders do, so a benchmark can put the baselines beside
`ar` and `sync` in one table:

    rounds       target forward calls after the first (counted by a forward hook on the model)
    round_tokens tokens appended by those calls (the first call's tokens are excluded, as the
                 engine excludes the prefill's token); tau = round_tokens / rounds
    prefill_s    the first forward call; verify_s: the later forward calls; draft_s: for prompt
                 lookup and assisted generation, the time between forward calls (n-gram lookup
                 or the assistant's passes, and bookkeeping), else 0

Stopping follows the project's `StopChecker` exactly: a stopping criterion feeds every token
transformers appends into `target.stop_checker(cfg)`, so generation ends at the same token as
the native decoders (eos, stop string or budget) and the output is that checker's tokens. This is
used instead of transformers' own `stop_strings`, whose matching differs in edge cases.

The module knows nothing about benchmarks or the pipeline (a target is anything shaped like
`HFTarget`); sampled runs are seeded with `cfg.seed` through
torch's global generator (transformers offers no other), so they differ from native samples.

    tokens, stats = hf_generate(target, target.encode_chat("Hi"), GenerationConfig(), prompt_lookup=10)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.engine import DecodeStats, GenerationConfig, context_budget, now
from d3d.inference.stopping import StopChecker
from d3d.models.drafter import Drafter


class HFTarget(Protocol):
    """What the baselines need of a target (`pipeline.Target` is one): its transformers model,
    tokenizer, context window, end-of-sequence ids and stopping rule."""

    hf_model: Any  # a transformers causal LM with the target's weights
    tokenizer: Any  # its transformers tokenizer
    context_length: int  # tokens the model can attend to
    eos_token_ids: tuple[int, ...]  # ids that end generation

    def stop_checker(self, cfg: GenerationConfig) -> StopChecker: ...


@dataclass
class _ForwardTimer:
    """Counts and times the target's forward calls through module hooks."""

    device: torch.device
    durations: list[float] = field(default_factory=list)  # seconds per forward call, in order
    started: float = 0.0  # wall clock at the start of the call in flight

    def before(self, *_) -> None:
        self.started = now(self.device)

    def after(self, *_) -> None:
        self.durations.append(now(self.device) - self.started)


def _stopping_criterion(stop: StopChecker, prompt_len: int, chunks: list[list[int]]):
    """A transformers StoppingCriteria that feeds new tokens to `stop` and records each step's chunk."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    class FeedStopChecker(StoppingCriteria):
        def __call__(self, input_ids: Tensor, scores=None, **kwargs) -> Tensor:  # input_ids: [1, n]
            seen = prompt_len + sum(len(c) for c in chunks)
            chunk = input_ids[0, seen:].tolist()  # the one host sync per step (deliberate)
            chunks.append(chunk)
            if stop.reason is None:
                stop.accept(chunk)
            return torch.full((input_ids.shape[0],), stop.reason is not None, device=input_ids.device)

    return StoppingCriteriaList([FeedStopChecker()])


def _hf_generation_config(target: HFTarget, cfg: GenerationConfig, budget: int, prompt_lookup: int):
    """A complete transformers GenerationConfig (nothing inherited from the checkpoint's defaults)."""
    from transformers import GenerationConfig as HFGenerationConfig

    eos = list(target.eos_token_ids)
    pad = target.tokenizer.pad_token_id
    options = dict(
        max_new_tokens=budget, eos_token_id=eos or None, pad_token_id=pad if pad is not None else (eos or [None])[0],
        prompt_lookup_num_tokens=prompt_lookup or None, do_sample=not cfg.sampling.greedy,
    )

    if not cfg.sampling.greedy:
        s = cfg.sampling
        options.update(temperature=s.temperature, top_k=s.top_k, top_p=s.top_p)
    return HFGenerationConfig(**options)


def _fill_stats(stats: DecodeStats, stop: StopChecker, chunks: list[list[int]], timer: _ForwardTimer,
                total_s: float, drafted: bool) -> None:
    stats.new_tokens = len(stop.tokens)
    stats.stop_reason = stop.reason
    kept = len(stop.tokens) - len(chunks[0]) if chunks else 0  # tau counts only what the output keeps
    for chunk in chunks[1:]:  # the first forward call is the prefill
        stats.record_round(max(min(len(chunk), kept), 0))
        kept -= len(chunk)
    stats.rounds = max(len(timer.durations) - 1, 0)  # forward calls, the authority on rounds
    stats.prefill_s = timer.durations[0] if timer.durations else 0.0
    stats.verify_s = sum(timer.durations[1:])
    stats.total_s = total_s
    if drafted:
        stats.draft_s = max(total_s - stats.prefill_s - stats.verify_s, 0.0)


@torch.inference_mode()
def hf_generate(
    target: HFTarget, prompt_ids: Tensor, cfg: GenerationConfig, prompt_lookup: int = 0, assistant=None,
    assistant_tokens: int = 4,
) -> tuple[list[int], DecodeStats]:
    """Generate with transformers on `target.hf_model`. prompt_ids: [1, n].

    prompt_lookup > 0 turns on prompt-lookup decoding with that many candidate tokens per round
    (mode "pld"); an `assistant` model turns on assisted generation with `assistant_tokens` draft
    tokens per round (mode "hf-assisted"); neither is plain `generate` (mode "hf"). Returns the new
    tokens and their stats.
    """
    cfg.validate()
    model = target.hf_model
    prompt_ids = prompt_ids.to(model.device)
    budget = context_budget(target.context_length, prompt_ids.shape[1], cfg.max_new_tokens)
    stop = target.stop_checker(cfg)
    stop.max_new_tokens = budget
    chunks: list[list[int]] = []
    timer = _ForwardTimer(model.device)
    hooks = [model.register_forward_pre_hook(timer.before), model.register_forward_hook(timer.after)]
    mode = "pld" if prompt_lookup else "hf-assisted" if assistant is not None else "hf"
    if assistant is not None:  # transformers reads these from the assistant: classic fixed-k drafting
        assistant.generation_config.update(num_assistant_tokens=assistant_tokens, num_assistant_tokens_schedule="constant",
                                           assistant_confidence_threshold=0.0)
    stats = DecodeStats(mode, prompt_tokens=prompt_ids.shape[1])
    try:
        if not cfg.sampling.greedy:
            torch.manual_seed(cfg.seed)
        t0 = now(model.device)
        output = model.generate(
            prompt_ids, attention_mask=torch.ones_like(prompt_ids),
            generation_config=_hf_generation_config(target, cfg, budget, prompt_lookup),
            stopping_criteria=_stopping_criterion(stop, prompt_ids.shape[1], chunks),
            **({"assistant_model": assistant} if assistant is not None else {}),
        )
        total_s = now(model.device) - t0
    finally:
        for hook in hooks:
            hook.remove()
    if stop.reason is None:  # a step the criterion did not see (should not happen): truncate here
        stop.accept(output[0, prompt_ids.shape[1] + len(stop.tokens):].tolist())
    _fill_stats(stats, stop, chunks, timer, total_s, bool(prompt_lookup) or assistant is not None)
    return list(stop.tokens), stats


def ar_drafter_hf_model(drafter: Drafter, target: HFTarget):
    """The drafter as a transformers causal LM (its layers, the target's embeddings), for assisted generation.

    Our runtime uses transformers' parameter names, so the state dict maps one to one; the config
    is the base model's with `num_hidden_layers` cut to the drafter's depth.
    """
    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(drafter.model.config)
    config.num_hidden_layers = len(drafter.config.layers)
    if hasattr(config, "layer_types") and config.layer_types is not None:
        config.layer_types = [config.layer_types[i] for i in drafter.config.layers]
    hf = target.hf_model
    model = AutoModelForCausalLM.from_config(config, dtype=hf.dtype)
    state = {k: v.detach() for k, v in drafter.model.state_dict().items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "rotary" not in k]
    if missing or unexpected:
        raise D3DError(f"drafter does not map onto a transformers {config.model_type} model: "
                       f"missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.generation_config.pad_token_id = hf.generation_config.pad_token_id
    return model.to(hf.device).eval()
