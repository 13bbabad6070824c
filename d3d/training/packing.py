"""Training rows in, packed multi-anchor batches out (DESIGN.md "Training", paper section 3.2).

One packed example per (prompt, response): the clean rows `prompt + response` (causal; they carry
the AR loss) followed by K blocks, one per anchor, each `[anchor, M x (B-1)]`. The mask is
`Rows.with_blocks`' rule: block k sees clean keys at positions strictly before its anchor, plus its
own block (its rows up to each row under causal block attention), so anchors closer than B apart
never leak later context into an earlier block.

Index conventions. Code is 0-based, the paper 1-based. With P prompt and T response tokens:

    ids = prompt + response                   clean row i sits at absolute position i
    response index a (0..T-1)                 is the paper's r_{a+1}, at absolute position P + a
    anchors: a in 0..T-2, drawn without       the paper's 1 <= s < T with s = a + 1; the first
      replacement, sorted                     response token (the target's first output, the
                                              first anchor at inference) can be an anchor
    block of anchor a                         rows j = 0..B-1 at positions P + a + j, row 0 the
                                              anchor r_a. Same-position labels (the paper's and
                                              DFlash's): row j >= 1 is labelled response[a + j];
                                              next-token labels: row j <= B-2 is labelled
                                              response[a + j + 1] (the anchor row predicts the
                                              first drafted token, the last row has no label).
                                              Either way drafted token i = 1..B-1 is supervised
                                              while a + i <= T - 1, i.e. the first
                                              min(B-1, T-1-a) of them (the paper's
                                              b_k = min(B-1, T-s)); the other rows carry -100
    AR labels                                 clean row i is labelled ids[i + 1] whenever ids[i+1]
                                              is a response token: rows P-1 .. P+T-2, T labels
                                              (T-1 when the prompt is empty)
    top-k (optional)                          a block row labelled response[i] also carries the
                                              row's stored top-k of position i (`d3d data
                                              --top-k-logits`: the distribution response[i] was
                                              chosen from), for distillation; IGNORE ids elsewhere

Batching: examples are shuffled per epoch (seeded) and grouped greedily into micro-batches of at
most `max_examples` examples and, optionally, `max_tokens` padded rows; clean rows are right
padded (`valid` marks real rows), missing blocks are all-mask blocks without labels. The anchors
of example i in epoch e come from a generator seeded with (seed, e, i), so a batch is a pure
function of (seed, epoch, position): resuming needs only the epoch and the batch count.

Eval-only rows (`d3d data --eval-only`: answers to held-out evaluation prompts, each marked
`"eval_only": true`) are refused unless the caller reads them for evaluation (`eval_only_ok`):
training, pruning's distillation data and the drafting vocabulary never see them.

This module knows nothing about models, losses or optimisers; it reads files, counts what it
drops, and builds index tensors.

    examples, report = load_examples(["data/train.jsonl"], vocab_size=49152, max_length=2048)
    dataset = PackedDataset(examples, PackingConfig(block_size=16, num_anchors=128, mask_token_id=16))
    batch = PackedBatch.from_dict(collate([dataset[0], dataset[1]]))
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset, Sampler

from d3d.errors import D3DError
from d3d.models.attention import Rows
from d3d.models.drafter import label_offset

IGNORE = -100  # label of rows that carry no loss (torch's cross_entropy ignore_index)
DATA_SUFFIXES = (".jsonl", ".parquet")  # files a data folder may hold
SIDE_FILES = (".journal.jsonl", ".self-instruct.jsonl")  # `d3d data` bookkeeping, not training rows
META_SUFFIX = ".meta.json"  # `d3d data` writes <stem>.meta.json beside <stem>.jsonl / <stem>.parquet


# ---------------------------------------------------------------------------------------------
# Reading rows


@dataclass
class Example:
    """One training row: token ids of the prompt (chat template applied) and the target's response."""

    prompt_ids: np.ndarray  # [P] int32
    response_ids: np.ndarray  # [T] int32, T >= 2
    row_id: str = ""  # the row's id in the data file, for messages
    topk_ids: np.ndarray | None = None  # [T, k] int32: the target's k likeliest tokens at each response position
    topk_logprobs: np.ndarray | None = None  # [T, k] float32: their log-probabilities (`d3d data --top-k-logits`)
    source: str = ""  # the row's `source` field (its prompt file or generator: `self-instruct`, `code_prompts.jsonl`)


@dataclass
class DataReport:
    """What loading kept and dropped; logged once per run."""

    files: int = 0  # data files read
    rows: int = 0  # rows found
    kept: int = 0  # rows turned into examples
    malformed: int = 0  # rows that are not JSON objects with integer prompt_ids/response_ids in the vocabulary
    short: int = 0  # rows whose response has fewer than 2 tokens (no anchor possible)
    truncated: int = 0  # rows cut to max_length tokens
    clamped: int = 0  # rows whose response allows fewer than K anchors (K clamped to T-1)
    topk: int = 0  # kept rows carrying the target's top-k per response position (for distillation)
    bad_topk: int = 0  # kept rows whose top-k is malformed (trained on hard labels only)

    def summary(self) -> str:
        text = f"{self.kept} of {self.rows} rows from {self.files} file(s)"
        dropped = [(self.malformed, "malformed"), (self.short, "with a response under 2 tokens")]
        notes = [(self.truncated, "truncated to max length"), (self.clamped, "with fewer anchors than K (clamped)"),
                 (self.topk, "with top-k logits"), (self.bad_topk, "with malformed top-k (ignored)")]
        dropped = [f"{n} {what}" for n, what in dropped if n]
        notes = [f"{n} {what}" for n, what in notes if n]
        if dropped:
            text += "; skipped " + ", ".join(dropped)
        if notes:
            text += "; " + ", ".join(notes)
        return text


def data_files(paths: Sequence[str | Path]) -> list[Path]:
    """The JSONL/Parquet files named by `paths`: files, or folders of such files (side files skipped)."""
    files: list[Path] = []
    for spec in paths:
        path = Path(spec).expanduser()
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in DATA_SUFFIXES and not p.name.endswith(SIDE_FILES))
            if not found:
                raise D3DError(f"no .jsonl or .parquet files in data folder {path}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise D3DError(f"data file not found: {path}")
    if not files:
        raise D3DError("no training data given (pass --data FILE)")
    return files


def meta_files(files: Sequence[Path]) -> list[Path]:
    """The settings files beside data files: `<stem>.meta.json`, or a folder-wide `meta.json`."""
    found = {f.with_name(f.stem + META_SUFFIX) for f in files} | {f.parent / "meta.json" for f in files}
    return sorted(m for m in found if m.is_file())


def read_meta(files: Sequence[Path]) -> list[dict]:
    """The parsed settings files beside `files` (see `meta_files`); a malformed one is a D3DError."""
    metas = []
    for meta in meta_files(files):
        try:
            value = json.loads(meta.read_text())
        except (ValueError, UnicodeDecodeError) as err:
            raise D3DError(f"malformed {meta}: {err}") from None
        metas.append(value if isinstance(value, dict) else {})
    return metas


def load_examples(
    paths: Sequence[str | Path], vocab_size: int, max_length: int, num_anchors: int = 1, eval_only_ok: bool = False
) -> tuple[list[Example], DataReport]:
    """Examples from every file, with a report of what was dropped. Bad files raise D3DError, and so does a
    file holding eval-only rows unless `eval_only_ok` (the caller evaluates with them, never trains)."""
    report = DataReport()
    examples: list[Example] = []
    for file in data_files(paths):
        report.files += 1
        found = _examples_from_file(file, vocab_size, max_length, num_anchors, report, eval_only_ok)
        examples.extend(found)
    return examples, report


def _examples_from_file(
    file: Path, vocab_size: int, max_length: int, num_anchors: int, report: DataReport, eval_only_ok: bool = False
) -> list[Example]:
    rows = list(_read_rows(file))
    if not rows:
        raise D3DError(f"data file {file} is empty")
    if not eval_only_ok and any(row is not None and row.get("eval_only") is True for row in rows):
        raise D3DError(f"data file {file} holds eval-only rows (`d3d data --eval-only`: answers to held-out "
                       f"evaluation prompts); it can evaluate a drafter (d3d eval-drafter without --save, a dev "
                       f"set) but never train or calibrate one")
    report.rows += len(rows)
    examples, malformed = [], 0
    for row in rows:
        status, example = _parse_row(row, vocab_size)
        malformed += status == "malformed"
        report.short += status == "short"
        if example is not None:
            report.bad_topk += status == "bad top-k"
            report.topk += example.topk_ids is not None
            report.truncated += _truncate(example, max_length)
            report.clamped += len(example.response_ids) - 1 < num_anchors
            examples.append(example)
    report.malformed += malformed
    if malformed == len(rows):
        raise D3DError(
            f"data file {file} is malformed: no row is a JSON object with integer prompt_ids and response_ids"
        )
    report.kept += len(examples)
    return examples


def _read_rows(file: Path) -> Iterator[dict | None]:
    """Rows of a JSONL or Parquet file; None for a line that is not a JSON object."""
    if file.suffix == ".parquet":
        yield from _read_parquet(file)
        return
    try:
        with file.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json_object(line)
    except UnicodeDecodeError:
        raise D3DError(f"data file {file} is not UTF-8 text (expected JSONL or .parquet)") from None


def json_object(line: str) -> dict | None:
    """The JSON object on one line, or None for a malformed, torn or non-object line."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _read_parquet(file: Path) -> list[dict]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file)
    except Exception as err:  # pyarrow raises several types for corrupt or foreign files
        raise D3DError(f"cannot read Parquet file {file}: {type(err).__name__}") from None
    return table.to_pylist()


def _parse_row(row: dict | None, vocab_size: int) -> tuple[str, Example | None]:
    """("ok", example), ("bad top-k", example without its top-k), ("short", None) or ("malformed", None)."""
    if row is None:
        return "malformed", None
    prompt, response = _id_array(row.get("prompt_ids"), vocab_size), _id_array(row.get("response_ids"), vocab_size)
    if prompt is None or response is None:
        return "malformed", None
    if len(response) < 2:
        return "short", None
    example = Example(prompt, response, str(row.get("id", "")), source=str(row.get("source", "")))
    if "topk_ids" not in row and "topk_logprobs" not in row:
        return "ok", example
    topk = _topk_arrays(row.get("topk_ids"), row.get("topk_logprobs"), len(response), vocab_size)
    if topk is None:
        return "bad top-k", example
    example.topk_ids, example.topk_logprobs = topk
    return "ok", example


def _topk_arrays(ids, logprobs, response_len: int, vocab_size: int) -> tuple[np.ndarray, np.ndarray] | None:
    """([T, k] int32 ids, [T, k] float32 log-probabilities) of a row, or None unless both are T x k
    (k >= 1) numbers, the ids whole and in the vocabulary, the log-probabilities finite and <= 0."""
    try:
        ids_f, lp = np.asarray(ids, dtype=np.float64), np.asarray(logprobs, dtype=np.float64)
    except (TypeError, ValueError):  # ragged lists, strings, None
        return None
    if ids_f.ndim != 2 or ids_f.shape != lp.shape or ids_f.shape[0] != response_len or ids_f.shape[1] < 1:
        return None
    whole = np.all(ids_f == np.round(ids_f)) and ids_f.min() >= 0 and ids_f.max() < vocab_size
    if not whole or not np.all(np.isfinite(lp)) or lp.max() > 1e-3:  # 3-decimal rounding may give +0.0005
        return None
    return ids_f.astype(np.int32), lp.astype(np.float32)


def _id_array(value, vocab_size: int) -> np.ndarray | None:
    if not isinstance(value, (list, tuple, np.ndarray)):
        return None
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        return None
    array = np.asarray(value, dtype=np.int64).reshape(-1)
    if array.size and (array.min() < 0 or array.max() >= vocab_size):
        return None
    return array.astype(np.int32)


def _truncate(example: Example, max_length: int) -> bool:
    """Cut prompt + response to max_length tokens: the response keeps its start, at least
    min(T, max_length // 2) tokens of it, and the prompt keeps its end."""
    p, t = len(example.prompt_ids), len(example.response_ids)
    if p + t <= max_length:
        return False
    if p > max_length - min(t, max_length // 2):
        p = max_length - min(t, max_length // 2)
        example.prompt_ids = example.prompt_ids[len(example.prompt_ids) - p :]
    example.response_ids = example.response_ids[: max_length - p]
    if example.topk_ids is not None:
        example.topk_ids = example.topk_ids[: max_length - p]
        example.topk_logprobs = example.topk_logprobs[: max_length - p]
    return True


# ---------------------------------------------------------------------------------------------
# Packing one example


@dataclass(frozen=True)
class PackingConfig:
    block_size: int = 16  # B: one anchor + B-1 mask tokens
    num_anchors: int = 128  # K: anchors per response (at most T-1)
    mask_token_id: int = 0  # the reserved [M] id
    labels: str = "same-position"  # which block row predicts drafted token j: row j, or row j-1 ("next-token")


@dataclass
class PackedExample:
    """One example's rows before batching (k = number of anchors, B = block size)."""

    input_ids: Tensor  # [L] prompt + response, the clean rows
    ar_labels: Tensor  # [L] next-token label per clean row, IGNORE where the next token is not a response token
    blocks: Tensor  # [k, B] the anchor token, then B-1 mask ids
    anchor_pos: Tensor  # [k] absolute position of each anchor
    block_labels: Tensor  # [k, B] label per block row (its convention's); IGNORE on rows predicting nothing or past the response
    block_topk_ids: Tensor | None = None  # [k, B, K] the target's top-k at each row's label index; IGNORE where unlabelled
    block_topk_logprobs: Tensor | None = None  # [k, B, K] their log-probabilities (0 where unlabelled)

    @property
    def num_rows(self) -> int:
        return self.input_ids.numel() + self.blocks.numel()


def num_anchors_for(response_len: int, num_anchors: int) -> int:
    """K clamped to the T-1 valid anchors of a response."""
    return max(0, min(num_anchors, response_len - 1))


def packed_length(prompt_len: int, response_len: int, cfg: PackingConfig) -> int:
    return prompt_len + response_len + num_anchors_for(response_len, cfg.num_anchors) * cfg.block_size


def sample_anchors(response_len: int, num_anchors: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted response indices a in [0, T-2], drawn without replacement (see the module docstring)."""
    k = num_anchors_for(response_len, num_anchors)
    return np.sort(rng.choice(response_len - 1, size=k, replace=False))


def pack_example(example: Example, anchors: np.ndarray, cfg: PackingConfig) -> PackedExample:
    """Clean rows plus one block per anchor (response indices `anchors`)."""
    prompt = torch.as_tensor(example.prompt_ids, dtype=torch.long)
    response = torch.as_tensor(example.response_ids, dtype=torch.long)
    p, t, bs = len(prompt), len(response), cfg.block_size
    ids = torch.cat([prompt, response])
    ar_labels = torch.full_like(ids, IGNORE)
    first = max(p - 1, 0)  # first clean row whose next token is a response token
    ar_labels[first : p + t - 1] = ids[first + 1 : p + t]
    a = torch.as_tensor(anchors, dtype=torch.long)
    blocks = torch.full((len(a), bs), cfg.mask_token_id, dtype=torch.long)
    blocks[:, 0] = response[a]
    drafted = torch.arange(bs) + label_offset(cfg.labels)  # the drafted token each row predicts (valid: 1..B-1)
    target_idx = a[:, None] + drafted  # response index each block row predicts
    inside = (target_idx <= t - 1) & (drafted >= 1) & (drafted <= bs - 1)
    block_labels = torch.where(inside, response[target_idx.clamp(max=t - 1)], IGNORE)
    packed = PackedExample(ids, ar_labels, blocks, p + a, block_labels)
    if example.topk_ids is not None:
        packed.block_topk_ids, packed.block_topk_logprobs = block_topk(example, target_idx.clamp(0, t - 1), inside)
    return packed


def block_topk(example: Example, target_idx: Tensor, inside: Tensor) -> tuple[Tensor, Tensor]:
    """The stored top-k of the response index each block row is labelled with (the same index as
    its label): target_idx, inside [k, B] -> ids [k, B, K] (IGNORE outside), log-probabilities [k, B, K]."""
    ids = torch.as_tensor(example.topk_ids, dtype=torch.long)[target_idx]  # [k, B, K]
    logprobs = torch.as_tensor(example.topk_logprobs, dtype=torch.float32)[target_idx]
    return torch.where(inside[..., None], ids, IGNORE), torch.where(inside[..., None], logprobs, 0.0)


# ---------------------------------------------------------------------------------------------
# Batches


@dataclass
class PackedBatch:
    """A micro-batch of packed examples, right-padded (b examples, L clean rows, k blocks of B rows)."""

    input_ids: Tensor  # [b, L] clean rows
    valid: Tensor  # [b, L] False on padding rows
    ar_labels: Tensor  # [b, L] IGNORE where there is no AR loss
    blocks: Tensor  # [b, k, B] padding blocks are all-mask and unlabelled
    anchor_pos: Tensor  # [b, k] anchor positions (0 for padding blocks)
    block_labels: Tensor  # [b, k, B] IGNORE where there is no diffusion loss
    block_topk_ids: Tensor | None = None  # [b, k, B, K] the target's top-k per labelled row; IGNORE where none (None: no example has any)
    block_topk_logprobs: Tensor | None = None  # [b, k, B, K] their log-probabilities at temperature 1 (0 where none)

    def rows(self, causal_blocks: bool = False) -> Rows:
        """The query rows of the packed pass: clean rows (causal, padded) then every block
        (bidirectional, or causal among a block's rows with `causal_blocks`)."""
        clean = Rows.clean(self.input_ids, 0, valid=self.valid)
        return Rows.with_blocks(clean, self.blocks, self.anchor_pos, causal_blocks)

    @property
    def num_examples(self) -> int:
        return self.input_ids.shape[0]

    def as_dict(self) -> dict[str, Tensor]:
        """The batch's tensors by field name (absent top-k fields left out)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, batch: dict[str, Tensor]) -> PackedBatch:
        return cls(**{f.name: batch[f.name] for f in fields(cls) if f.name in batch})


def collate(examples: Sequence[PackedExample], mask_token_id: int = 0) -> dict[str, Tensor]:
    """Pad examples into one batch; a dict of tensors, so that any launcher can move it to a device."""
    b = len(examples)
    seq = max(e.input_ids.numel() for e in examples)
    k = max(e.blocks.shape[0] for e in examples)
    bs = examples[0].blocks.shape[1]
    batch = PackedBatch(
        input_ids=torch.zeros(b, seq, dtype=torch.long),
        valid=torch.zeros(b, seq, dtype=torch.bool),
        ar_labels=torch.full((b, seq), IGNORE, dtype=torch.long),
        blocks=torch.full((b, k, bs), mask_token_id, dtype=torch.long),
        anchor_pos=torch.zeros(b, k, dtype=torch.long),
        block_labels=torch.full((b, k, bs), IGNORE, dtype=torch.long),
    )
    for i, e in enumerate(examples):
        n, m = e.input_ids.numel(), e.blocks.shape[0]
        batch.input_ids[i, :n], batch.valid[i, :n], batch.ar_labels[i, :n] = e.input_ids, True, e.ar_labels
        batch.blocks[i, :m], batch.anchor_pos[i, :m], batch.block_labels[i, :m] = e.blocks, e.anchor_pos, e.block_labels
    if any(e.block_topk_ids is not None for e in examples):
        batch.block_topk_ids, batch.block_topk_logprobs = _collate_topk(examples, k, bs)
    return batch.as_dict()


def _collate_topk(examples: Sequence[PackedExample], k: int, bs: int) -> tuple[Tensor, Tensor]:
    """Top-k of every example padded to [b, k, B, K] (K the widest): IGNORE ids and 0 log-probabilities
    for padding, for blocks of examples without top-k and for top-k narrower than K."""
    width = max(e.block_topk_ids.shape[-1] for e in examples if e.block_topk_ids is not None)
    ids = torch.full((len(examples), k, bs, width), IGNORE, dtype=torch.long)
    logprobs = torch.zeros((len(examples), k, bs, width), dtype=torch.float32)
    for i, e in enumerate(examples):
        if e.block_topk_ids is not None:
            m, w = e.block_topk_ids.shape[0], e.block_topk_ids.shape[-1]
            ids[i, :m, :, :w], logprobs[i, :m, :, :w] = e.block_topk_ids, e.block_topk_logprobs
    return ids, logprobs


class PackedDataset(Dataset):
    """Examples packed on the fly with anchors seeded by (seed, epoch, index)."""

    def __init__(self, examples: Sequence[Example], cfg: PackingConfig, seed: int = 0) -> None:
        self.examples = list(examples)
        self.cfg = cfg
        self.seed = seed
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.examples)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __getitem__(self, index: int) -> PackedExample:
        example = self.examples[index]
        rng = np.random.default_rng([self.seed, self.epoch, index])
        anchors = sample_anchors(len(example.response_ids), self.cfg.num_anchors, rng)
        return pack_example(example, anchors, self.cfg)

    def lengths(self) -> list[int]:
        return [packed_length(len(e.prompt_ids), len(e.response_ids), self.cfg) for e in self.examples]


class TokenBudgetBatchSampler(Sampler[list[int]]):
    """Seeded shuffle per epoch, then greedy micro-batches under an example cap and a padded-row budget.

    `batch_size` is None on purpose: Accelerate then shards these variable-size batches whole
    (batch i goes to process i mod N) instead of splitting them.
    """

    batch_size = None

    def __init__(self, lengths: Sequence[int], max_examples: int = 1, max_tokens: int = 0, seed: int = 0) -> None:
        self.lengths = list(lengths)
        self.max_examples = max_examples
        self.max_tokens = max_tokens
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def plan(self, epoch: int) -> list[list[int]]:
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self.lengths)).tolist()
        batches: list[list[int]] = []
        current: list[int] = []
        for index in order:
            if current and not self._fits(current + [index]):
                batches.append(current)
                current = []
            current.append(index)
        return batches + ([current] if current else [])

    def _fits(self, batch: list[int]) -> bool:
        if len(batch) > self.max_examples:
            return False
        padded = len(batch) * max(self.lengths[i] for i in batch)
        return self.max_tokens <= 0 or padded <= self.max_tokens

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.plan(self.epoch))

    def __len__(self) -> int:
        return len(self.plan(self.epoch))


def steps_per_epoch(sampler: TokenBudgetBatchSampler, epoch: int, num_processes: int, grad_accum: int) -> int:
    """Optimizer steps in one epoch when every process takes every num_processes-th batch."""
    per_process = math.ceil(len(sampler.plan(epoch)) / num_processes)
    return math.ceil(per_process / grad_accum)
