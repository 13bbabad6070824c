"""Offline coding prompts derived from the Python standard library's documented functions.

The training recipe for this machine needs prompts besides self-instruct, and nothing can be
downloaded here. Every documented public function of a fixed list of stdlib modules becomes one
request to implement a function with that behaviour ("Write a Python function `chunked(...)` that
..."), phrased with a few templates; public methods of a few builtin and stdlib classes are used the
same way. Only the first docstring sentence and the signature are used; the target writes the code.
With `--variants N` each function is asked up to N times, with different templates, one of which is
a function stub to complete (the shape of a HumanEval prompt, though none of its problems). HumanEval
itself is held out later by `d3d data`'s decontamination, and `--exclude` drops functions whose id
appears in given JSONL files (the dev sets), so no variant of a dev prompt reaches training.

    python -m d3d.training.code_prompts --out data/code_prompts.jsonl --limit 400
    python -m d3d.training.code_prompts --out data/code_prompts_v2.jsonl --variants 2 \
        --exclude data/smollm2/dev.jsonl --exclude data/smollm2/dev2.jsonl
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

MODULES = (
    "bisect", "base64", "binascii", "calendar", "colorsys", "difflib", "fnmatch", "fractions", "functools",
    "glob", "heapq", "html", "itertools", "json", "keyword", "math", "operator", "os.path", "posixpath",
    "random", "re", "shlex", "statistics", "string", "textwrap", "unicodedata", "urllib.parse", "zlib",
    "ipaddress", "datetime", "collections", "copy", "decimal", "hashlib", "secrets", "struct", "uuid",
)
TEMPLATES = (
    "Write a Python function `{name}{sig}`. What it should do: {what} Include a docstring.",
    "Implement `{name}{sig}` in Python. Its job: {what} Explain the approach briefly, then give the code.",
    "How would I write a Python function `{name}{sig}`? It should {what} Show the code and one usage example.",
    "Write clean, well-commented Python code for a function named `{name}`. Behaviour: {what}",
)
STUB_TEMPLATE = (
    "Complete the following Python function. Reply with the full function in a Python code block."
    '\n\n```python\ndef {name}{sig}:\n    """{what_cap}\n    """\n```'
)
CLASSES = ("str", "list", "dict", "set", "bytes", "collections.Counter", "collections.deque", "fractions.Fraction")


def first_sentence(doc: str) -> str | None:
    """The docstring's first sentence (imperative in the stdlib: "Return ..."), lower-cased start."""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = re.split(r"(?<=[.!?])\s", text)[0].strip()
    if not 20 <= len(sentence) <= 200 or sentence.startswith((">>>", "(", "Deprecated")):
        return None
    if not sentence.endswith("."):
        sentence += "."
    return sentence[0].lower() + sentence[1:]


def documented_functions() -> Iterator[tuple[str, str, str]]:
    """(name, signature, first docstring sentence) for each usable public stdlib function."""
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or not callable(obj) or inspect.isclass(obj) or not obj.__doc__:
                continue
            what = first_sentence(obj.__doc__)
            try:
                sig = str(inspect.signature(obj))
            except (TypeError, ValueError):
                sig = "(...)"
            if what and len(sig) < 80:
                yield name, sig, what
    for qualified in CLASSES:
        module_name, _, class_name = qualified.rpartition(".")
        cls = getattr(importlib.import_module(module_name or "builtins"), class_name)
        for name, obj in sorted(vars(cls).items()):
            if name.startswith("_") or not callable(obj) or not getattr(obj, "__doc__", None):
                continue
            what = first_sentence(obj.__doc__)
            if what:
                yield f"{class_name.lower()}_{name}", "(obj, *args)", what


def code_prompts(limit: int | None = None, seed: int = 0, variants: int = 1, exclude_ids: frozenset[str] = frozenset()) -> list[dict]:
    """Prompt rows {id, prompt}: up to `variants` per function name, shuffled with `seed`.

    The first variant keeps the id `stdlib-<name>` of earlier versions; later ones are
    `stdlib-<name>-v<k>`. Variant 2 is the function stub to complete. Names whose first-variant
    id is in `exclude_ids` are skipped entirely.
    """
    rng = random.Random(seed)
    seen: set[str] = set()
    rows = []
    for name, sig, what in documented_functions():
        if name in seen or f"stdlib-{name}" in exclude_ids:
            continue
        seen.add(name)
        first = rng.choice(TEMPLATES)
        texts = [first.format(name=name, sig=sig, what=what)]
        if variants >= 2:
            texts.append(STUB_TEMPLATE.format(name=name, sig=sig, what_cap=what[0].upper() + what[1:]))
        others = [t for t in TEMPLATES if t != first]
        rng.shuffle(others)
        texts += [t.format(name=name, sig=sig, what=what) for t in others[: max(0, variants - 2)]]
        for k, text in enumerate(texts):
            rows.append({"id": f"stdlib-{name}" + (f"-v{k + 1}" if k else ""), "prompt": text})
    rng.shuffle(rows)
    return rows[:limit]


def ids_in(paths: list[str]) -> frozenset[str]:
    """Every "id" in the given JSONL files."""
    ids = set()
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                ids.add(str(json.loads(line).get("id")))
    return frozenset(ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSONL file to write")
    parser.add_argument("--limit", type=int, default=None, help="at most N prompts")
    parser.add_argument("--seed", type=int, default=0, help="shuffle / template seed")
    parser.add_argument("--variants", type=int, default=1, help="prompts per function (2nd: a stub to complete)")
    parser.add_argument("--exclude", action="append", default=[], help="JSONL file whose ids are skipped (repeatable)")
    args = parser.parse_args()
    if args.variants < 1:
        parser.error("--variants must be at least 1")
    rows = code_prompts(args.limit, args.seed, args.variants, ids_in(args.exclude))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} prompts to {args.out}")


if __name__ == "__main__":
    main()
