"""The D3D drafter: a standalone block-diffusion model that drafts B-1 tokens in one pass.

A drafter is a `DecoderModel` keeping a subset of a pretrained causal LM's layers. It reads only
token ids (never the target's hidden states). One pass takes the committed tokens it has not yet
cached as clean rows plus one block `[anchor, M, ..., M]`, caches only the clean rows, and returns
logits for the B-1 drafted tokens at anchor_pos + 1 .. anchor_pos + B-1. Which block row predicts
drafted token j is the drafter's label convention (`DrafterConfig.labels`): row j under
"same-position" (DFlash's and the D3D paper's convention), row j-1 under "next-token" (the anchor
row predicts the first drafted token, as a pretrained LM head does; the last mask row is context
only). How block rows attend to each other is its block attention (`DrafterConfig.block_attention`):
"bidirectional" (the paper's: every row of a block sees the whole block) or "causal" (a row sees the
block's rows up to itself, so a block pass is a plain causal pass over prefix + anchor + masks, the
form vLLM's parallel drafting runs; `d3d.training.export`). Training (`d3d.training.packing`,
`d3d.training.losses`) and every inference path read both settings from here.

On disk (`save_pretrained`): `drafter_config.json` (this module's `DrafterConfig` plus the base
model's transformers config) and `model.safetensors` with the drafter's own weights. When the
drafter shares the target's embeddings and LM head, those are not stored and `from_pretrained`
takes them from the target. `save_pretrained(..., storage="int8")` stores the decoder layers'
projections as int8 with per-row scales (about half the bytes of bfloat16); loading dequantizes them
(`weight_storage.py`), so the drafter runs at any dtype or weight format as a dense one would.

This module knows nothing about verification or the decode loop.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor
from transformers import AutoConfig, PretrainedConfig

from d3d.errors import D3DError
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel, build_from_state, load_decoder
from d3d.models.kv_cache import KVCache
from d3d.models.packed import pack_linear
from d3d.models.quantize import Int8Linear
from d3d.models.weight_storage import check_storage, decode_state, read_tensors, write_weights

CONFIG_NAME = "drafter_config.json"
WEIGHTS_NAME = "model.safetensors"
FORMAT_VERSION = 1
ACCEPTANCE_FILE = "acceptance.json"  # the acceptance table `d3d eval-drafter --save` measures beside the weights
SHARED_KEYS = ("model.embed_tokens.weight", "lm_head.weight")
DRAFT_VOCAB_KEY = "draft_vocab_ids"  # optional int64 tensor in the weights file: the drafting vocabulary
LABEL_CONVENTIONS = ("same-position", "next-token")  # which block row predicts drafted token j: row j, or row j-1
BLOCK_ATTENTION = ("bidirectional", "causal")  # block rows see their whole block, or its rows up to themselves


@dataclass
class DrafterConfig:
    """Everything needed to rebuild a drafter next to its target."""

    base_model: str  # the causal LM the layers were taken from (path or hub id)
    layers: list[int]  # indices of the base model's layers kept, in order
    block_size: int = 16  # B: one anchor + B-1 masked positions
    mask_token_id: int = 0  # the reserved [M] token id
    shared_embeddings: bool = True  # embeddings and LM head are the target's, not stored
    vocab_size: int = 0  # must equal the target's
    tokenizer_fingerprint: str = ""  # hash of the tokenizer vocabulary (see hub.tokenizer_fingerprint)
    trained: bool = False  # False for a drafter initialised but never trained
    training: dict = field(default_factory=dict)  # recipe / provenance written by `d3d train`
    objective: str = "diffusion"  # "diffusion" (a D3D block drafter) or "ar" (an AR draft model, L_AR only)
    pruning: dict = field(default_factory=dict)  # stages and choice written by `d3d prune`
    draft_vocab_size: int = 0  # tokens the drafter may propose (0 = the whole vocabulary); see set_draft_vocab
    draft_vocab: dict = field(default_factory=dict)  # how the drafting vocabulary was chosen (`d3d draft-vocab`)
    labels: str = "same-position"  # label convention (LABEL_CONVENTIONS); drafters saved before it existed are same-position
    block_attention: str = "bidirectional"  # BLOCK_ATTENTION; drafters saved before it existed are bidirectional
    run_block_size: int = 0  # the B inference runs when no --block-size is given (0: block_size), chosen by measured
    # speed and set by `d3d export --run-block-size` (docs/runtime.md, "Run block size"); a smaller B drafts fewer rows
    format_version: int = FORMAT_VERSION

    def recorded_tau(self) -> float | None:
        """The validation tau this drafter recorded: its pruning choice's, else its training's last."""
        stages = self.pruning.get("stages") if self.pruning else None
        if stages:
            chosen = next((s for s in stages if s.get("index") == self.pruning.get("chosen")), None)
            if chosen and chosen.get("tau_select"):
                return float(chosen["tau_select"])
        tau = self.training.get("validation_tau") if self.training else None
        return float(tau) if tau else None

    def validate(self) -> None:
        if self.block_size < 2:
            raise D3DError(f"block size must be at least 2, got {self.block_size}")
        if self.run_block_size and not 2 <= self.run_block_size <= self.block_size:
            raise D3DError(f"run block size must be 0 (the trained {self.block_size}) or 2 to {self.block_size}, "
                           f"got {self.run_block_size}")
        if not self.layers:
            raise D3DError("a drafter needs at least one layer")
        if self.objective not in ("diffusion", "ar"):
            raise D3DError(f"unknown drafter objective '{self.objective}' (diffusion or ar)")
        if self.labels not in LABEL_CONVENTIONS:
            raise D3DError(f"unknown label convention '{self.labels}' ({' or '.join(LABEL_CONVENTIONS)})")
        causal_blocks(self.block_attention)  # a D3DError for an unknown value

    @property
    def causal_blocks(self) -> bool:
        """True when block rows attend causally among themselves (`block_attention` "causal")."""
        return causal_blocks(self.block_attention)


class Drafter(torch.nn.Module):
    """A block-diffusion drafter over a `DecoderModel` body."""

    def __init__(self, model: DecoderModel, config: DrafterConfig) -> None:
        super().__init__()
        config.validate()
        self.model = model
        self.register_buffer("draft_vocab", None, persistent=False)  # sorted token ids, or None = all
        self._head_rows: tuple[Tensor, torch.nn.Module] | None = None  # (the LM head it was cut from, its rows)
        self.config = config
        self.run_block: int | None = None  # the B inference drafts (a run block size or --block-size); never saved
        self.measured_tau: float | None = None  # tau_sim of the acceptance table saved beside the weights, if any

    def prior_tau(self) -> float | None:
        """The tau `--budget auto` assumes: the acceptance table measured on these weights when it has
        one, else the validation tau its training or pruning recorded (`DrafterConfig.recorded_tau`)."""
        return self.measured_tau if self.measured_tau is not None else self.config.recorded_tau()

    @property
    def block_size(self) -> int:
        """The B a pass drafts: the runtime's block when one is set, else the trained `config.block_size`."""
        return self.run_block or self.config.block_size

    def new_cache(self, capacity: int = 256) -> KVCache:
        return self.model.new_cache(1, capacity)

    def share_embeddings_with(self, target: DecoderModel) -> None:
        """Use the target's embedding matrix and LM head (tied Parameters, no copy; an int8 or packed
        head, `quantize.py`, is shared as a module)."""
        self.model.model.embed_tokens.weight = target.model.embed_tokens.weight
        if type(target.lm_head) is torch.nn.Linear:
            self.model.lm_head.weight = target.lm_head.weight
        else:  # int8 or packed (`packed.py`): the module itself
            self.model.lm_head = target.lm_head

    @classmethod
    def from_base(
        cls,
        base_dir: str | Path,
        layers: list[int],
        block_size: int,
        mask_token_id: int,
        tokenizer_fingerprint: str,
        target: DecoderModel | None = None,
        base_name: str | None = None,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        labels: str = "same-position",
        block_attention: str = "bidirectional",
    ) -> Drafter:
        """Initialise from a pretrained causal LM, keeping `layers`; share the target's embeddings if given."""
        cfg = AutoConfig.from_pretrained(base_dir)
        bad = [i for i in layers if not 0 <= i < cfg.num_hidden_layers]
        if bad:
            raise D3DError(f"layers {bad} do not exist in {base_dir} ({cfg.num_hidden_layers} layers)")
        body = load_decoder(base_dir, layers, dtype, device, cfg)
        config = DrafterConfig(
            base_model=base_name or str(base_dir), layers=list(layers), block_size=block_size,
            mask_token_id=mask_token_id, shared_embeddings=target is not None,
            vocab_size=body.spec.vocab_size, tokenizer_fingerprint=tokenizer_fingerprint, labels=labels,
            block_attention=block_attention,
        )
        drafter = cls(body, config)
        if target is not None:
            drafter.share_embeddings_with(target)
        return drafter

    def set_draft_vocab(self, ids: Tensor | None) -> None:
        """Restrict what the drafter proposes to the token ids `ids` (None: the whole vocabulary).

        The LM head then projects onto those rows only (FR-Spec's frequency-ranked drafting
        vocabulary): on a small target the vocabulary projection is most of a drafting pass. Logits
        keep the full vocabulary's shape, -inf outside the subset, so every consumer (greedy,
        sampling, the async alternatives) is unchanged. Lossless: the target verifies every token,
        and q is 0 where the drafter cannot propose.
        """
        if ids is None:
            self.draft_vocab, self._head_rows = None, None
            self.config.draft_vocab_size = 0
            return
        ids = torch.unique(torch.as_tensor(ids, dtype=torch.long).flatten())  # sorted
        vocab = self.config.vocab_size or self.model.spec.vocab_size
        if ids.numel() == 0 or int(ids[0]) < 0 or int(ids[-1]) >= vocab:
            raise D3DError(f"draft vocabulary ids must be non-empty and within [0, {vocab})")
        self.draft_vocab = ids.to(self.model.device)
        self._head_rows = None
        self.config.draft_vocab_size = int(ids.numel())

    def project(self, hidden: Tensor) -> Tensor:
        """Logits over the whole vocabulary for final hidden states [..., h].

        The rows go through the head as one [rows, h] matrix (`flat_rows`). Given the predicting
        rows of a block (a strided view) and the detached drafting rows, `torch.matmul` would not
        fold them into one matrix product: it would broadcast the head to a batched product and, in
        bfloat16, copy the head's weight on every pass (about a quarter of the shipped drafter's pass).
        """
        rows = flat_rows(hidden)
        if self.draft_vocab is None:
            return self.model.lm_head(rows).view(*hidden.shape[:-1], -1)
        head = self.model.lm_head
        if isinstance(head, Int8Linear):  # its drafting rows as a smaller int8 layer
            if self._head_rows is None or self._head_rows[0] is not head.qweight:
                self._head_rows = (head.qweight, head.select_rows(self.draft_vocab.to(head.qweight.device)))
            sub, vocab = self._head_rows[1](rows), head.out_features
        else:
            weight = head.weight
            cut = self._head_rows
            if cut is None or cut[0] is not weight or cut[1].weight.device != hidden.device:
                rows_of = weight.detach()[self.draft_vocab.to(weight.device)].to(hidden.device)
                self._head_rows = (weight, head_layer(rows_of, packed=self.model.weights == "packed"))
            sub, vocab = self._head_rows[1](rows), weight.shape[0]
        return self._scatter_vocab(sub, vocab).view(*hidden.shape[:-1], vocab)

    def _scatter_vocab(self, sub: Tensor, vocab: int) -> Tensor:
        """Logits [..., vocab] from the drafting vocabulary's logits sub [..., |subset|], -inf elsewhere."""
        out = sub.new_full((*sub.shape[:-1], vocab), float("-inf"))
        return out.index_copy_(-1, self.draft_vocab.to(out.device), sub)

    def most_likely(self, logits: Tensor) -> tuple[Tensor, Tensor]:
        """(tokens, q) [...]: each row's most probable token under softmax(logits [..., vocab]) and
        its probability, bit for bit `torch.softmax(logits.float(), -1).max(-1)` (first index on ties).

        The softmax spans the whole vocabulary (its sum sets q's last bits), but with a drafting
        vocabulary the max reads only that vocabulary's columns: every other q is exactly 0, below
        the row's largest, and the ids are sorted, so the first largest entry and its index agree.
        """
        probs = torch.softmax(logits.float(), -1)
        if self.draft_vocab is None:
            top = probs.max(-1)
            return top.indices, top.values
        ids = self.draft_vocab.to(probs.device)
        top = probs.index_select(-1, ids).max(-1)
        return ids[top.indices], top.values

    def save_pretrained(self, path: str | Path, dtype: torch.dtype | None = None, storage: str = "dense") -> None:
        """Write safetensors + drafter_config.json; `dtype` (e.g. bfloat16) converts the stored weights,
        `storage` "int8" stores the layers' projections as int8 with float32 scales (`weight_storage.py`)."""
        check_storage(storage)
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = dict(self.model.state_dict())
        if self.draft_vocab is not None:
            state[DRAFT_VOCAB_KEY] = self.draft_vocab.detach().cpu().contiguous()
        if self.config.shared_embeddings:
            for k in SHARED_KEYS:
                state.pop(k, None)
        elif self.model.spec.tie_word_embeddings:
            state.pop("lm_head.weight", None)
        meta = {"drafter": asdict(self.config), "model_config": self.model.config.to_dict()}
        write_weights(path / WEIGHTS_NAME, state, storage, dtype)
        (path / CONFIG_NAME).write_text(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        target: DecoderModel | None = None,
        dtype: torch.dtype | None = None,
        device: str | torch.device | None = None,
    ) -> Drafter:
        """Load a saved drafter; `target` supplies shared embeddings and the default dtype/device."""
        config, model_config = read_drafter_config(path)
        if config.shared_embeddings and target is None:
            raise D3DError(f"drafter {path} shares the target's embeddings: load it with its target")
        if target is not None and config.vocab_size != target.spec.vocab_size:
            raise D3DError(
                f"drafter vocabulary ({config.vocab_size}) differs from the target's ({target.spec.vocab_size})"
            )
        dtype = dtype or (target.dtype if target is not None else torch.float32)
        device = device or (target.device if target is not None else "cpu")
        state = read_weights(Path(path) / WEIGHTS_NAME)
        draft_vocab = state.pop(DRAFT_VOCAB_KEY, None)
        external = SHARED_KEYS if config.shared_embeddings else ()
        body = build_from_state(model_config, config.layers, state, dtype, device, external, str(path))
        drafter = cls(body, config)
        if config.shared_embeddings:
            drafter.share_embeddings_with(target)  # type: ignore[arg-type]
        drafter = drafter.to(device).eval()
        if draft_vocab is not None:
            drafter.set_draft_vocab(draft_vocab)
        drafter.measured_tau = read_measured_tau(path)
        return drafter

    def draft_logits(self, cache: KVCache, committed: Tensor, rows: int | None = None) -> Tensor:
        """Logits [1, B-1, vocab] for the block anchored at the last committed token.

        committed: [1, n] every committed token; those beyond `cache.length` (the anchor included)
        are fed as clean rows and cached, so the cache ends holding all of `committed`.
        `rows` (see `block_logits`): only the first drafted tokens' logits, [1, rows, vocab].
        """
        n = committed.shape[1]
        anchor_pos = torch.tensor([n - 1], device=committed.device)
        return self.block_logits(cache, committed[:, cache.length :], committed[0, -1:], anchor_pos, rows)

    def block_logits(self, cache: KVCache, clean: Tensor, anchors: Tensor, anchor_pos: Tensor,
                     rows: int | None = None) -> Tensor:
        """Logits [k, B-1, vocab] of k blocks `[anchor, M, ..., M]` drafted in one pass.

        clean: [1, n] tokens fed as clean rows at positions cache.length.. and cached (n may be 0).
        anchors: [k] anchor tokens; anchor_pos: [k] their positions. Block i sees the clean keys at
        positions < anchor_pos[i] (cached or fed in this pass) and its own rows (those up to each
        row under causal block attention), nothing else, so
        one pass drafts any set of blocks whose prefixes are prefixes of the clean sequence: the
        one block of synchronous drafting, or every successor branch of asynchronous drafting.
        Only the B-1 predicting rows of each block go through the LM head, or with `rows` only the
        first `rows` of them ([k, rows, vocab]; the block pass itself is unchanged, so these logits
        equal the first rows of the full call): a round that verifies fewer tokens than B-1 does not
        pay the head and the vocabulary scatter for the rest.
        """
        hidden = self.block_hidden(cache, clean, anchors, anchor_pos)
        return self.project(hidden if rows is None else hidden[:, :rows])

    def block_hidden(self, cache: KVCache, clean: Tensor, anchors: Tensor, anchor_pos: Tensor) -> Tensor:
        """Final hidden states [k, B-1, hidden] of the rows predicting drafted tokens 1..B-1 (see `block_logits`)."""
        k, bs = anchors.shape[0], self.block_size
        blocks = torch.full((1, k, bs), self.config.mask_token_id, dtype=clean.dtype, device=clean.device)
        blocks[0, :, 0] = anchors
        clean_rows = Rows.clean(clean, cache.length)
        rows = Rows.with_blocks(clean_rows, blocks, anchor_pos.view(1, k), self.config.causal_blocks)
        hidden = self.model.hidden_states(rows, cache)[0, rows.num_clean :]  # [k*B, hidden]
        return predicting_rows(hidden.view(k, bs, -1), self.config.labels)


def head_layer(rows: Tensor, packed: bool) -> torch.nn.Module:
    """A bias-free layer projecting onto the head rows [n, h] (a drafting vocabulary's), packed
    (`packed.py`) when the drafter's weights are."""
    layer = torch.nn.Linear(rows.shape[1], rows.shape[0], bias=False, device="meta")
    layer.weight = torch.nn.Parameter(rows, requires_grad=False)
    return pack_linear(layer) if packed else layer


def label_offset(labels: str) -> int:
    """Block row j predicts drafted token j + offset: 0 for same-position labels, 1 for next-token."""
    if labels not in LABEL_CONVENTIONS:
        raise D3DError(f"unknown label convention '{labels}' ({' or '.join(LABEL_CONVENTIONS)})")
    return LABEL_CONVENTIONS.index(labels)


def causal_blocks(block_attention: str) -> bool:
    """Whether block rows attend causally among themselves under `block_attention` (BLOCK_ATTENTION)."""
    if block_attention not in BLOCK_ATTENTION:
        raise D3DError(f"unknown block attention '{block_attention}' ({' or '.join(BLOCK_ATTENTION)})")
    return block_attention == "causal"


def flat_rows(hidden: Tensor) -> Tensor:
    """hidden [..., h] as one [rows, h] matrix: a view when the rows are evenly strided (the
    predicting rows of a single block), else a copy of the activations (several blocks)."""
    return hidden.reshape(-1, hidden.shape[-1])


def predicting_rows(block: Tensor, labels: str) -> Tensor:
    """The B-1 rows [..., B-1, h] of blocks [..., B, h] that predict drafted tokens 1..B-1, in order."""
    return block[..., 1:, :] if label_offset(labels) == 0 else block[..., :-1, :]


def load_drafter_body(
    path: str | Path, keep: list[int] | None = None, dtype: torch.dtype = torch.float32, device="cpu"
) -> tuple[DecoderModel, DrafterConfig]:
    """A saved drafter's body keeping the layers `keep` (original layer ids; all by default).

    Shared embeddings stay placeholders (`SHARED_KEYS`) for the caller to fill. This is how pruning
    starts a stage: the current drafter minus one layer, weights and all.
    """
    config, model_config = read_drafter_config(path)
    keep = list(config.layers) if keep is None else list(keep)
    unknown = [i for i in keep if i not in config.layers]
    if unknown or not keep:
        raise D3DError(f"layers {unknown or keep} are not layers of the drafter {path} ({config.layers})")
    local = {orig: j for j, orig in enumerate(config.layers)}
    renumber = {local[orig]: new for new, orig in enumerate(keep)}
    state = {}
    for name, value in read_weights(Path(path) / WEIGHTS_NAME).items():
        if name == DRAFT_VOCAB_KEY:  # a drafting vocabulary is an inference setting, not part of the body
            continue
        if name.startswith("model.layers."):
            j = int(name.split(".")[2])
            if j not in renumber:
                continue
            name = f"model.layers.{renumber[j]}." + name.split(".", 3)[3]
        state[name] = value
    external = SHARED_KEYS if config.shared_embeddings else ()
    return build_from_state(model_config, keep, state, dtype, device, external, str(path)), config


def read_draft_vocab(path: str | Path) -> Tensor | None:
    """The drafting vocabulary ids stored in a saved drafter's weights file, or None."""
    from safetensors import safe_open

    with safe_open(str(Path(path) / WEIGHTS_NAME), "pt") as handle:
        return handle.get_tensor(DRAFT_VOCAB_KEY) if DRAFT_VOCAB_KEY in handle.keys() else None


def is_drafter_dir(path: str | Path) -> bool:
    return (Path(path) / CONFIG_NAME).is_file()


def read_drafter_config(path: str | Path) -> tuple[DrafterConfig, PretrainedConfig]:
    """Parse `drafter_config.json`; a clear D3DError if it is missing or malformed."""
    file = Path(path) / CONFIG_NAME
    if not file.is_file():
        raise D3DError(f"not a drafter checkpoint (no {CONFIG_NAME}): {path}")
    try:
        meta = json.loads(file.read_text())
        config = DrafterConfig(**meta["drafter"])
        model_config = AutoConfig.for_model(**meta["model_config"])
    except (ValueError, KeyError, TypeError) as exc:
        raise D3DError(f"malformed drafter config {file}: {exc}") from None
    config.validate()
    return config, model_config


def read_acceptance_table(file: Path) -> dict | None:
    """The acceptance table at `file`, None if there is none; a D3DError if it is not a JSON object."""
    if not file.is_file():
        return None
    try:
        table = json.loads(file.read_text())
    except ValueError as err:
        raise D3DError(f"{file} is not an acceptance table ({err})") from None
    if not isinstance(table, dict):
        raise D3DError(f"{file} is not an acceptance table (not a JSON object)")
    return table


def read_measured_tau(path: str | Path) -> float | None:
    """tau_sim of the acceptance table beside a drafter (`d3d eval-drafter --save`); None without one
    (or without its tau_sim); a clear D3DError for a table that is not JSON or a tau that is not >= 1."""
    file = Path(path) / ACCEPTANCE_FILE
    table = read_acceptance_table(file)
    tau = table.get("tau_sim") if table is not None else None
    if tau is None:  # no table, or one without an overall tau (written by hand or by an older version)
        return None
    if not isinstance(tau, (int, float)) or isinstance(tau, bool) or not tau >= 1.0:
        raise D3DError(f"{file} is not an acceptance table (tau_sim {tau!r}, expected a number >= 1)")
    return float(tau)


def read_weights(file: Path) -> dict[str, Tensor]:
    """A drafter weights file's tensors, int8-stored projections dequantized to float32."""
    if not file.is_file():
        raise D3DError(f"drafter weights missing: {file}")
    try:
        tensors, metadata = read_tensors(file)
    except Exception as exc:  # safetensors raises several types for corrupt files
        raise D3DError(f"cannot read drafter weights {file}: {exc}") from None
    return decode_state(tensors, metadata, str(file))
