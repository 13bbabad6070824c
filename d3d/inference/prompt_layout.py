"""Which prompt tokens selective prefill always keeps (`prefill.py` selects among the rest).

A chat prompt is the chat template's scaffolding around the final user message. Kept whatever the
probe says (`protected_tokens`):

    head         every token before the final user message's content: the template's opening,
                 its (default) system prompt, earlier turns, and the user role header
                 (`<|im_start|>system ... <|im_end|>\\n<|im_start|>user\\n` in ChatML)
    tail         every token after the content: the end of the turn and the assistant header that
                 the answer follows (`<|im_end|>\\n<|im_start|>assistant\\n`)
    instruction  the final user instruction: the user message's last paragraph (the text after
                 its last blank line), at most `max_instruction_tokens` of its final tokens; a
                 message without a blank line protects its last `max_instruction_tokens` tokens

Only the rest of the user message (the documents, the context) is cut into chunks and scored.
Head and tail come from the template itself (`chat_frame`: the same messages rendered with two
different final contents; what the two share at each end is scaffolding), so this works for any
template, not only ChatML. `stopword_ids` gives the token ids of common English function words
and punctuation, which the lexical selector ignores. This module knows tokenizers and nothing
about models.

    frame = chat_frame(tokenizer)
    protected = protected_tokens(tokenizer, prompt_ids[0], frame)   # [L] bool
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

DEFAULT_INSTRUCTION_TOKENS = 256  # at most this many final tokens of the user message count as the instruction
PROBE_CONTENTS = ("0", "1")  # two one-token user messages that differ only in their content
STOPWORDS = (  # English function words, question words and instruction words that say nothing about where an answer is
    "a an the and or but if of to in on at by for with from as into about above below over under than then "
    "is are was were be been being am do does did done have has had it its this that these those there here "
    "what which who whom whose when where why how all any some no not only just also very can could will would "
    "should may might must shall i you he she we they me him her us them my your our their "
    "answer question number one sentence according"
).split()
PUNCTUATION = tuple(".,;:!?'\"()[]{}-_/\\*#`")  # single characters that are tokens of their own


@dataclass(frozen=True)
class ChatFrame:
    """The template's scaffolding around the final user message, as token ids."""

    head: tuple[int, ...]  # tokens before the final user content
    tail: tuple[int, ...]  # tokens after it


def _encode(tokenizer, messages: list[dict]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return list(ids)


def chat_frame(tokenizer, history: list[dict] | None = None) -> ChatFrame:
    """The head and tail of a prompt made of `history` (earlier messages) + one user message.

    No chat template: an empty frame (the whole prompt is the user's text).
    """
    if not getattr(tokenizer, "chat_template", None):
        return ChatFrame((), ())
    a, b = (_encode(tokenizer, [*(history or []), {"role": "user", "content": c}]) for c in PROBE_CONTENTS)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return ChatFrame(tuple(a[:head]), tuple(a[len(a) - tail :]))


def instruction_start(tokenizer, content: list[int], max_tokens: int) -> int:
    """Index in `content` (the user message's tokens) where the final instruction begins: the token
    holding the first character after the last blank line, or the last `max_tokens` tokens."""
    pieces = tokenizer.batch_decode([[t] for t in content]) if content else []
    cut = "".join(pieces).rstrip().rfind("\n\n")
    start, end = 0, 0
    if cut >= 0:
        for start, piece in enumerate(pieces):
            end += len(piece)
            if end > cut + 2:
                break
    return max(start, len(content) - max_tokens)


def protected_tokens(
    tokenizer, prompt_ids: Tensor, frame: ChatFrame, max_instruction_tokens: int = DEFAULT_INSTRUCTION_TOKENS
) -> Tensor:
    """[L] bool: True for the head, tail and final instruction of prompt_ids [L] (module doc).

    If the prompt does not start with the frame's head and end with its tail (it was not made
    by this template), only the tokenizer's special tokens and the instruction are protected.
    """
    ids = prompt_ids.tolist()
    head, tail = len(frame.head), len(frame.tail)
    framed = len(ids) >= head + tail and tuple(ids[:head]) == frame.head and tuple(ids[len(ids) - tail :]) == frame.tail
    protected = torch.zeros(len(ids), dtype=torch.bool)
    if framed:
        protected[:head] = True
        protected[len(ids) - tail :] = True
    else:
        head, tail = 0, 0
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        protected |= torch.tensor([t in special for t in ids], dtype=torch.bool)
    content = ids[head : len(ids) - tail]
    protected[head + instruction_start(tokenizer, content, max_instruction_tokens) : len(ids) - tail] = True
    return protected


def stopword_ids(tokenizer) -> frozenset[int]:
    """Ids of tokens that spell a stopword (any case, with or without a leading space) or a
    punctuation mark as one whole token; words the tokenizer splits, or does not know, are left out."""
    ids = set()
    for word in (*STOPWORDS, *PUNCTUATION):
        for spelling in {word, word.capitalize(), " " + word, " " + word.capitalize()}:
            pieces = tokenizer.encode(spelling, add_special_tokens=False)
            if len(pieces) == 1 and pieces[0] != tokenizer.unk_token_id:
                ids.add(pieces[0])
    return frozenset(ids)
