"""Which prompt tokens selective prefill protects: the template's scaffolding and the final instruction."""

from __future__ import annotations

import torch

from d3d.inference.prompt_layout import chat_frame, protected_tokens


class CharChatTokenizer:
    """One token per character (id = code point) and a ChatML-like template with a system turn."""

    chat_template = "fake"
    all_special_ids = [1]

    def apply_chat_template(self, messages, add_generation_prompt=True, tokenize=True, return_dict=False):
        text = "\x01system\nBe brief.\x02\n" + "".join(f"\x01{m['role']}\n{m['content']}\x02\n" for m in messages)
        return [ord(c) for c in text + ("\x01assistant\n" if add_generation_prompt else "")]

    def batch_decode(self, batch):
        return ["".join(chr(t) for t in ids) for ids in batch]


def encode(tok, content):
    return torch.tensor(tok.apply_chat_template([{"role": "user", "content": content}]))


def kept_text(ids, mask):
    return "".join(chr(t) for t, k in zip(ids.tolist(), mask.tolist()) if k)


def test_frame_is_the_template_around_the_user_content():
    tok = CharChatTokenizer()
    frame = chat_frame(tok)
    assert "".join(map(chr, frame.head)) == "\x01system\nBe brief.\x02\n\x01user\n"
    assert "".join(map(chr, frame.tail)) == "\x02\n\x01assistant\n"


def test_scaffolding_and_last_paragraph_are_protected():
    tok = CharChatTokenizer()
    ids = encode(tok, "first document\n\nsecond document\n\nWhat is it?")
    mask = protected_tokens(tok, ids, chat_frame(tok))
    assert kept_text(ids, mask) == "\x01system\nBe brief.\x02\n\x01user\nWhat is it?\x02\n\x01assistant\n"


def test_instruction_is_capped_and_unframed_prompts_protect_special_tokens():
    tok = CharChatTokenizer()
    ids = encode(tok, "x" * 50 + "\n\n" + "question " * 10)
    mask = protected_tokens(tok, ids, chat_frame(tok), max_instruction_tokens=8)
    assert kept_text(ids, mask) == "\x01system\nBe brief.\x02\n\x01user\n" + "uestion " + "\x02\n\x01assistant\n"
    raw = torch.tensor([1, 50, 51, 52, 53, 54])  # not made by the template: special tokens + the last tokens
    assert protected_tokens(tok, raw, chat_frame(tok), max_instruction_tokens=2).tolist() == [True, False, False, False, True, True]
