"""Offline coding prompts derived from the Python standard library's documented functions.

The training recipe for this machine needs prompts besides self-instruct, and nothing can be
downloaded here. Every documented public function of a fixed list of stdlib modules becomes one
request to implement a function with that behaviour ("Write a Python function `chunked(...)` that
..."), phrased with a few templates. Only the first docstring sentence and the signature are used;
the target writes the code. HumanEval is held out later by `d3d data`'s decontamination.

    python -m d3d.training.code_prompts --out data/code_prompts.jsonl --limit 400
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


def code_prompts(limit: int | None = None, seed: int = 0) -> list[dict]:
    """Prompt rows {id, prompt}, deduplicated by function name, shuffled with `seed`."""
    rng = random.Random(seed)
    seen: set[str] = set()
    rows = []
    for name, sig, what in documented_functions():
        if name in seen:
            continue
        seen.add(name)
        text = rng.choice(TEMPLATES).format(name=name, sig=sig, what=what)
        rows.append({"id": f"stdlib-{name}", "prompt": text})
    rng.shuffle(rows)
    return rows[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSONL file to write")
    parser.add_argument("--limit", type=int, default=None, help="at most N prompts")
    parser.add_argument("--seed", type=int, default=0, help="shuffle / template seed")
    args = parser.parse_args()
    rows = code_prompts(args.limit, args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} prompts to {args.out}")


if __name__ == "__main__":
    main()
