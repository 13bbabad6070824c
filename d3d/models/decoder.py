"""Native decoder runtime for the Llama family (Llama, Mistral, Qwen2, Qwen3, SmolLM/SmolLM2).

One module serves both the target and the drafter. Parameter names mirror transformers'
`*ForCausalLM` checkpoints (`model.layers.{i}.self_attn.q_proj.weight`, ...), so weights load
straight from any Hugging Face safetensors checkpoint of these families, optionally keeping only
a subset of layers (the drafter). A forward pass takes `Rows` (clean rows first, then block rows,
see `attention.py`), writes the clean rows' keys and values into a `KVCache`, and returns logits
only for the rows asked for, so a decode step never pays the vocabulary projection for rows that
nobody reads.

What it does not know: tokenizers, drafting policy, verification. Loading from GGUF or the hub is
`hub.py`'s job; this module loads from a local directory.

    model = load_decoder(model_dir)                         # full target
    drafter_body = load_decoder(model_dir, layers=[0, 1])   # first two layers only
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import PretrainedConfig

from d3d.errors import D3DError
from d3d.models.attention import AttentionProbe, Rows, build_mask, limit_to_ancestors
from d3d.models.kv_cache import KVCache
from d3d.models.precision import REFINE_TOP, Precision  # noqa: F401  (Precision: re-exported, its old home)
from d3d.models.quantize import dense_rows

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")


@dataclass(frozen=True)
class ArchSpec:
    """What the runtime needs to know about one Llama-family architecture."""

    model_type: str  # one of SUPPORTED_MODEL_TYPES
    vocab_size: int  # rows of the embedding / LM head
    hidden_size: int  # model width
    intermediate_size: int  # MLP width
    num_layers: int  # layers of the full checkpoint
    num_heads: int  # query heads
    num_kv_heads: int  # key/value heads (GQA)
    head_dim: int  # per-head width
    rms_norm_eps: float  # RMSNorm epsilon
    qkv_bias: bool  # bias on q/k/v projections (Qwen2 always; others via attention_bias)
    o_bias: bool  # bias on the output projection
    mlp_bias: bool  # bias on the MLP projections
    qk_norm: bool  # per-head RMSNorm on q and k before RoPE (Qwen3)
    tie_word_embeddings: bool  # LM head shares the embedding matrix
    layer_windows: tuple[int | None, ...] = ()  # per checkpoint layer: its sliding attention window (None: full)

    @staticmethod
    def from_config(cfg: PretrainedConfig) -> ArchSpec:
        if cfg.model_type not in SUPPORTED_MODEL_TYPES:
            raise D3DError(
                f"architecture '{cfg.model_type}' is not supported by the native runtime "
                f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})"
            )
        heads = cfg.num_attention_heads
        attn_bias = bool(getattr(cfg, "attention_bias", False))
        return ArchSpec(
            model_type=cfg.model_type,
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.hidden_size,
            intermediate_size=cfg.intermediate_size,
            num_layers=cfg.num_hidden_layers,
            num_heads=heads,
            num_kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
            head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
            rms_norm_eps=cfg.rms_norm_eps,
            qkv_bias=cfg.model_type == "qwen2" or attn_bias,
            o_bias=attn_bias and cfg.model_type != "qwen2",
            mlp_bias=bool(getattr(cfg, "mlp_bias", False)),
            qk_norm=cfg.model_type == "qwen3",
            tie_word_embeddings=bool(getattr(cfg, "tie_word_embeddings", False)),
            layer_windows=layer_windows(cfg),
        )


def layer_windows(cfg: PretrainedConfig) -> tuple[int | None, ...]:
    """Each layer's sliding attention window, as transformers applies it: a query at position p sees
    keys at positions > p - window. Mistral windows every layer; Qwen2/3 the "sliding_attention" layers."""
    window = getattr(cfg, "sliding_window", None)
    kinds = getattr(cfg, "layer_types", None)
    if not window:
        return (None,) * cfg.num_hidden_layers
    if cfg.model_type == "mistral" or kinds is None:
        return (int(window),) * cfg.num_hidden_layers
    return tuple(int(window) if kind == "sliding_attention" else None for kind in kinds)


def rope_inverse_frequencies(cfg: PretrainedConfig, head_dim: int) -> tuple[Tensor, float]:
    """(inv_freq [head_dim/2], attention scaling) using transformers' RoPE variants."""
    params = dict(getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {})
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type == "default":
        base = params.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
        inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
        return inv.float(), 1.0
    if rope_type == "dynamic":
        raise D3DError("dynamic NTK RoPE is not supported by the native runtime")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    if rope_type not in ROPE_INIT_FUNCTIONS:
        raise D3DError(f"RoPE type '{rope_type}' is not supported by the native runtime")
    inv, scale = ROPE_INIT_FUNCTIONS[rope_type](cfg, torch.device("cpu"))
    return inv.float(), float(scale)


class RMSNorm(nn.Module):
    """RMSNorm computed in float32, as transformers' Llama does."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor, out_dtype: torch.dtype | None = None) -> Tensor:
        """Normalised x in `out_dtype` (default: the weight's dtype, so a float32 residual stream
        still feeds low-precision projections)."""
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        dtype = out_dtype or self.weight.dtype
        return self.weight.to(dtype) * x32.to(dtype)


def rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def fuse_on_load(module: nn.Module, fused: str, parts: tuple[str, ...]) -> None:
    """Keep checkpoint names on disk while `module` holds one fused projection: a state dict lists
    `parts` (copies of the fused weight's rows: safetensors and Accelerate refuse partial views of
    one storage), and loading one concatenates them. So checkpoints, drafters and training keep
    transformers' names (`q_proj`, `up_proj`, ...)."""

    def split(mod: nn.Module, state: dict, prefix: str, _meta) -> None:
        for kind in ("weight", "bias"):
            tensor = state.pop(f"{prefix}{fused}.{kind}", None)
            if tensor is not None:
                sizes = [getattr(mod, f"{fused}_sizes")[i] for i in range(len(parts))]
                state.update({f"{prefix}{p}.{kind}": t.clone() for p, t in zip(parts, tensor.split(sizes))})

    def join(mod: nn.Module, state: dict, prefix: str, *_args) -> None:
        for kind in ("weight", "bias"):
            names = [f"{prefix}{p}.{kind}" for p in parts]
            if all(n in state for n in names):
                state[f"{prefix}{fused}.{kind}"] = torch.cat([state.pop(n) for n in names])

    module.register_state_dict_post_hook(split)
    module.register_load_state_dict_pre_hook(join)


class Attention(nn.Module):
    def __init__(self, spec: ArchSpec) -> None:
        super().__init__()
        h, kv, d = spec.num_heads, spec.num_kv_heads, spec.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = h, kv, d
        self.qkv_proj_sizes = (h * d, kv * d, kv * d)  # q, k, v rows of the fused projection
        self.qkv_proj = nn.Linear(spec.hidden_size, sum(self.qkv_proj_sizes), bias=spec.qkv_bias)
        fuse_on_load(self, "qkv_proj", ("q_proj", "k_proj", "v_proj"))
        self.o_proj = nn.Linear(h * d, spec.hidden_size, bias=spec.o_bias)
        if spec.qk_norm:
            self.q_norm = RMSNorm(d, spec.rms_norm_eps)
            self.k_norm = RMSNorm(d, spec.rms_norm_eps)
        self.qk_norm = spec.qk_norm

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, ctx: PassContext, layer: int) -> Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv_proj(x).split(self.qkv_proj_sizes, -1)  # one GEMM for all three
        q = q.view(b, n, self.num_heads, self.head_dim)
        k = k.view(b, n, self.num_kv_heads, self.head_dim)
        v = v.view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)  # [b, h, n, d]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        keys, values = ctx.keys_values(layer, k, v)
        mask, is_causal = ctx.attention_mask(layer)
        if ctx.probe is not None:
            ctx.probe.record(q, keys, mask, layer)
        if ctx.attention_fp32:  # same scores whatever the pass's key length (Precision); keys and
            q, keys, values = q.float(), keys.float(), values.float()  # values are float32 in the cache
        out = F.scaled_dot_product_attention(
            q, keys, values, attn_mask=mask, is_causal=is_causal,
            enable_gqa=self.num_heads != self.num_kv_heads,
        )
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1).to(x.dtype))


class MLP(nn.Module):
    def __init__(self, spec: ArchSpec) -> None:
        super().__init__()
        self.gate_up_proj_sizes = (spec.intermediate_size, spec.intermediate_size)  # gate, up rows
        self.gate_up_proj = nn.Linear(spec.hidden_size, 2 * spec.intermediate_size, bias=spec.mlp_bias)
        fuse_on_load(self, "gate_up_proj", ("gate_proj", "up_proj"))
        self.down_proj = nn.Linear(spec.intermediate_size, spec.hidden_size, bias=spec.mlp_bias)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up_proj(x).split(self.gate_up_proj_sizes, -1)  # one GEMM for both
        return self.down_proj(F.silu(gate) * up)


class DecoderLayer(nn.Module):
    def __init__(self, spec: ArchSpec) -> None:
        super().__init__()
        self.self_attn = Attention(spec)
        self.mlp = MLP(spec)
        self.input_layernorm = RMSNorm(spec.hidden_size, spec.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(spec.hidden_size, spec.rms_norm_eps)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, ctx: PassContext, layer: int) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, ctx, layer)
        return x + self.mlp(self.post_attention_layernorm(x))


def refined_logits(hidden: Tensor, head: nn.Module, dtype: torch.dtype, top: int) -> Tensor:
    """float32 logits [..., V] of float32 hidden [..., d]: the low-precision projection `head` (dense
    or int8) in `dtype`, with each row's `top` largest entries recomputed exactly in float32 from the
    head's own weights (so their order is float32's)."""
    logits = head(hidden.to(dtype)).float()
    idx = logits.topk(top, -1).indices  # [..., top]
    rows = dense_rows(head, idx.flatten()).view(*idx.shape, -1)  # [..., top, d]
    exact = torch.einsum("...d,...md->...m", hidden, rows)
    return logits.scatter_(-1, idx, exact)


class PassContext:
    """Per-pass state shared by all layers: the cache, how many rows to cache, the masks (one per
    distinct attention window of the layers), and an optional probe recording some rows'
    attention probabilities (None on every fast path)."""

    attention_fp32 = False  # set per pass from the model's Precision

    def __init__(self, rows: Rows, cache: KVCache | None, probe: AttentionProbe | None = None,
                 windows: tuple[int | None, ...] = ()) -> None:
        self.cache = cache
        self.probe = probe
        self.num_clean = rows.num_clean
        self.has_blocks = rows.has_blocks
        self.windows = windows  # per layer of this model: its attention window (empty: every layer full)
        self.key_span = None  # set by `fix_key_span`: the cache's fixed key span (`key_span`)
        self.masks = {w: self._mask(rows, cache, w) for w in set(windows) or {None}}

    def fix_key_span(self, rows: Rows) -> None:
        """Attend over the cache's key span for this pass (`KVCache.key_span`: a length that does not
        depend on the pass's row count), columns past the pass's end masked (`Precision`)."""
        cache = self.cache
        if cache is None or rows.has_blocks:
            return
        end = cache.length + rows.num_clean
        self.key_span = span = cache.key_span(end)
        live = torch.arange(span, device=cache.valid.device) < end
        key_val = cache.valid[:, :span] & live
        key_pos = torch.where(live, cache.positions[:, :span], torch.zeros_like(cache.positions[:, :span]))
        key_grp = torch.full_like(key_pos, -1)
        self.masks = {w: (limit_to_ancestors(build_mask(rows, key_pos, key_grp, key_val, w), rows, cache.length), False)
                      for w in self.masks}

    def attention_mask(self, layer: int) -> tuple[Tensor | None, bool]:
        """(boolean mask [b, 1, n, K] or None, is_causal) for one layer."""
        return self.masks[self.windows[layer] if self.windows else None]

    def _mask(self, rows: Rows, cache: KVCache | None, window: int | None) -> tuple[Tensor | None, bool]:
        plain = not rows.has_blocks and rows.valid is None and rows.ancestors is None
        span = (0 if cache is None else cache.length) + rows.num_rows  # key columns of a plain pass
        if window is not None and span > window:
            plain = False  # some key falls outside some row's window: build the mask
        if cache is None:
            if plain:
                return None, True
            mask = build_mask(rows, rows.positions, rows.row_groups(), rows.row_valid(), window)
            return limit_to_ancestors(mask, rows, 0), False
        if plain and not cache.has_padding:
            if rows.num_clean == 1:
                return None, False  # one new token sees every cached column
            if cache.length == 0:
                return None, True
        end = cache.length + rows.num_clean
        nc = rows.num_clean
        key_pos = torch.cat([cache.positions[:, :end], rows.positions[:, nc:]], 1)
        key_grp = torch.cat([torch.full_like(cache.positions[:, :end], -1), rows.row_groups()[:, nc:]], 1)
        key_val = torch.cat([cache.valid[:, :end], rows.row_valid()[:, nc:]], 1)
        return limit_to_ancestors(build_mask(rows, key_pos, key_grp, key_val, window), rows, cache.length), False

    def keys_values(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Cache the clean rows' k, v [b, h_kv, n, d] and return every key/value this pass sees."""
        if self.cache is None:
            return k, v
        nc = self.num_clean
        self.cache.write_layer(layer, k[:, :, :nc], v[:, :, :nc])
        ck, cv = self.cache.layer_view(layer, self.key_span or self.cache.length + nc)
        if not self.has_blocks:
            return ck, cv
        return torch.cat([ck, k[:, :, nc:]], 2), torch.cat([cv, v[:, :, nc:]], 2)


class DecoderBody(nn.Module):
    """`model.*` of a transformers checkpoint: embeddings, layers, final norm."""

    def __init__(self, spec: ArchSpec, num_layers: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(spec) for _ in range(num_layers))
        self.norm = RMSNorm(spec.hidden_size, spec.rms_norm_eps)


class DecoderModel(nn.Module):
    """A Llama-family causal LM keeping the layers `layer_ids` of a checkpoint described by `config`."""

    def __init__(self, config: PretrainedConfig, layer_ids: list[int] | None = None) -> None:
        super().__init__()
        self.config = config
        self.spec = ArchSpec.from_config(config)
        self.layer_ids = list(range(self.spec.num_layers)) if layer_ids is None else list(layer_ids)
        self.model = DecoderBody(self.spec, len(self.layer_ids))
        self.windows = tuple(self.spec.layer_windows[i] for i in self.layer_ids)  # per kept layer
        self.lm_head = nn.Linear(self.spec.hidden_size, self.spec.vocab_size, bias=False)
        if self.spec.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.precision = Precision()  # set by the loader (`load_target(precision=...)`, `precision.py`)
        self.weights = "dense"  # "int8" once `quantize.quantize_decoder` replaced the projections
        inv_freq, self.rope_scale = rope_inverse_frequencies(config, self.spec.head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @property
    def device(self) -> torch.device:
        return self.model.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.norm.weight.dtype

    @property
    def cache_dtype(self) -> torch.dtype:
        """The KV cache's dtype: float32 when attention runs in float32 (`Precision`), so a pass casts
        only its new keys, not the whole cache in every layer; the model dtype otherwise."""
        return torch.float32 if self.precision.attention_fp32 else self.dtype

    def new_cache(self, batch: int = 1, capacity: int = 256) -> KVCache:
        s = self.spec
        return KVCache(len(self.layer_ids), batch, s.num_kv_heads, s.head_dim, capacity, self.cache_dtype, self.device)

    def rope(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """cos, sin [b, 1, n, head_dim] for positions [b, n]."""
        freqs = positions[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), -1)[:, None]
        return (emb.cos() * self.rope_scale).to(self.dtype), (emb.sin() * self.rope_scale).to(self.dtype)

    def hidden_states(
        self, rows: Rows, cache: KVCache | None = None, probe: AttentionProbe | None = None,
        out_dtype: torch.dtype | None = None, num_layers: int | None = None,
    ) -> Tensor:
        """Final-norm hidden states [b, n, hidden] for every row (in `out_dtype`, default the
        model's); caches the clean rows.

        `probe`, if given, records the attention probabilities of its rows in every layer.
        `num_layers` runs only the first that many layers (a prefix: the selective-prefill probe
        on a few target layers); with a cache, only those layers' keys are written.
        """
        x = self.model.embed_tokens(rows.input_ids)
        if self.precision.residual_fp32:
            x = x.float()
        cos, sin = self.rope(rows.positions)
        if cache is not None:
            cache.reserve(rows.num_clean)
            cache.write_meta(rows.positions[:, : rows.num_clean], None if rows.valid is None else rows.valid[:, : rows.num_clean])
        ctx = PassContext(rows, cache, probe, self.windows)
        ctx.attention_fp32 = self.precision.attention_fp32
        if self.precision.fixed_key_span:
            ctx.fix_key_span(rows)
        for i, layer in enumerate(self.model.layers[:num_layers]):
            x = layer(x, cos, sin, ctx, i)
        if cache is not None:
            cache.advance(rows.num_clean)
        return self.model.norm(x, out_dtype)

    def forward(self, rows: Rows, cache: KVCache | None = None, logits_from: int = 0) -> Tensor:
        """Logits [b, n - logits_from, vocab] for rows [logits_from, n); caches the clean rows.

        Only the requested rows go through the LM head, so a pass never pays the vocabulary
        projection for rows nobody reads.
        """
        top = self.precision.refine_top
        if not top or self.dtype == torch.float32:
            return self.lm_head(self.hidden_states(rows, cache)[:, logits_from:])
        hidden = self.hidden_states(rows, cache, out_dtype=torch.float32)[:, logits_from:]
        return refined_logits(hidden, self.lm_head, self.dtype, top)


def _weight_files(model_dir: Path) -> list[Path]:
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [model_dir / n for n in names]
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise D3DError(f"no safetensors weights in {model_dir}")
    return files


def _checkpoint_name(name: str, index_of: dict[int, int]) -> str | None:
    """Map a checkpoint key to this model's key (renumbering kept layers); None to skip it."""
    if not name.startswith("model.layers."):
        return name
    layer = int(name.split(".")[2])
    if layer not in index_of:
        return None
    return f"model.layers.{index_of[layer]}." + name.split(".", 3)[3]


def load_decoder(
    model_dir: str | Path,
    layers: list[int] | None = None,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    config: PretrainedConfig | None = None,
) -> DecoderModel:
    """Load a Llama-family checkpoint directory, keeping only `layers` (all by default)."""
    from safetensors import safe_open
    from transformers import AutoConfig

    model_dir = Path(model_dir)
    config = config or AutoConfig.from_pretrained(model_dir)
    layer_ids = list(range(config.num_hidden_layers)) if layers is None else list(layers)
    index_of = {orig: new for new, orig in enumerate(layer_ids)}
    state: dict[str, Tensor] = {}
    for path in _weight_files(model_dir):
        with safe_open(str(path), framework="pt") as weights:  # reads only the tensors kept
            for name in weights.keys():
                key = _checkpoint_name(name, index_of)
                if key is not None:
                    state[key] = weights.get_tensor(name)
    return build_from_state(config, layer_ids, state, dtype, device, source=str(model_dir))


def build_from_state(
    config: PretrainedConfig,
    layer_ids: list[int],
    state: dict[str, Tensor],
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    external: tuple[str, ...] = (),
    source: str = "checkpoint",
) -> DecoderModel:
    """Build a model from a state dict (layers already renumbered 0..len-1) without a random init.

    `external` names weights supplied later by the caller (e.g. embeddings shared with a target);
    they stay uninitialised here. Any other missing weight is a D3DError.
    """
    with torch.device("meta"):
        model = DecoderModel(config, layer_ids)
    tied = model.spec.tie_word_embeddings
    if tied:
        state = {k: v for k, v in state.items() if k != "lm_head.weight"}
    expected = set(model.state_dict()) - set(external) - ({"lm_head.weight"} if tied else set())
    missing = expected - state.keys()
    if missing:
        raise D3DError(f"{source} lacks {len(missing)} weights, e.g. {sorted(missing)[0]}")
    model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, strict=False, assign=True)
    for name in external:  # placeholders on the target device until the caller shares real ones
        module_name, _, attr = name.rpartition(".")
        module = model.get_submodule(module_name)
        setattr(module, attr, torch.nn.Parameter(torch.empty(getattr(module, attr).shape, dtype=dtype)))
    if tied:
        model.lm_head.weight = model.model.embed_tokens.weight
    model.inv_freq = rope_inverse_frequencies(config, model.spec.head_dim)[0]
    return model.to(device).eval()
