"""An offline, deterministic mix of user prompts for `d3d data`: what people ask a small model.

Nothing can be downloaded on the machines this project trains on, so the prompts are composed here
from fixed vocabularies, seeded templates and the Python standard library's own text and source:

    math      word problems (shopping, rates, percentages, areas, ages, averages ...) with numbers
              drawn from a seeded generator; the target works them out step by step
    code      explain / document / test / type / refactor a real stdlib function, given its source;
              complete a stub in the style of HumanEval (a signature and docstring; HumanEval itself is
              held out later by `d3d data`); the stdlib implementation prompts of `code_prompts.py`
    chat      explanations, how-tos, comparisons and advice over a fixed list of everyday topics
    writing   emails, poems, stories, product descriptions, rewrites, and summaries of real stdlib
              documentation paragraphs

The same `--seed` gives the same file, byte for byte, on the same Python minor version (the stdlib
is part of the input; 3.11 made `data/mix_prompts.jsonl`); ids are stable (`<kind>-<n>`), so a `d3d data`
run over the file resumes. Held-out evaluation prompts are removed by `d3d data`'s decontamination
(HumanEval and every `--exclude` file), not here. It knows nothing about models or tokenizers.

    python -m d3d.training.prompt_mix --out data/mix_prompts.jsonl --per-kind 3000 --seed 0

A further file for more data (another seed) must not repeat a prompt already answered or held out:
`--skip-texts FILE` drops every prompt whose exact text is in FILE (repeatable), and `--id-prefix`
keeps its ids apart from the first file's, since `d3d data --skip-answered` matches prompts by id.

    python -m d3d.training.prompt_mix --out data/mix_prompts2.jsonl --per-kind 3500 --seed 1 --id-prefix s1- \
        --skip-texts data/mix_prompts.jsonl --skip-texts data/mix_dev_prompts.jsonl
"""

from __future__ import annotations

import argparse
import inspect
import json
import random
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

from d3d.errors import D3DError
from d3d.training import code_prompts
from d3d.training.prompts import read_prompt_jsonl

NAMES = ("Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Liam", "Maya",
         "Noah", "Olga", "Pablo", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wei", "Yara", "Zoe")
ITEMS = ("apples", "stickers", "marbles", "books", "pencils", "cookies", "stamps", "cards", "shells", "eggs",
         "candles", "bottles", "plants", "balloons", "coins")
SHOP = (("notebook", 3), ("pen", 2), ("backpack", 25), ("sandwich", 6), ("coffee", 4), ("ticket", 12),
        ("shirt", 18), ("lamp", 30), ("puzzle", 9), ("mug", 7))

MATH_TEMPLATES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: (f"{(n := r.choice(NAMES))} has {r.randint(10, 90)} {(i := r.choice(ITEMS))}. {n} buys "
               f"{r.randint(2, 40)} more and gives {r.randint(2, 9)} to {r.choice(NAMES)}. How many {i} does {n} have now?"),
    lambda r: (f"A {(s := r.choice(SHOP))[0]} costs ${s[1] + r.randint(0, 9)}. {r.choice(NAMES)} buys "
               f"{r.randint(2, 12)} of them and pays with a ${r.choice((50, 100, 200))} bill. How much change is left?"),
    lambda r: (f"A train travels at {r.randint(40, 140)} km/h for {r.randint(2, 7)} hours, then at "
               f"{r.randint(30, 120)} km/h for {r.randint(1, 5)} hours. How far does it travel in total, and what is "
               f"its average speed?"),
    lambda r: (f"A store offers {r.choice((10, 15, 20, 25, 30, 40))}% off a jacket that costs ${r.randint(40, 250)}. "
               f"Sales tax of {r.choice((5, 6, 7, 8))}% is added after the discount. What is the final price?"),
    lambda r: (f"A rectangular garden is {r.randint(4, 40)} m long and {r.randint(3, 25)} m wide. A path "
               f"{r.choice((1, 2))} m wide runs around the outside. What is the area of the path?"),
    lambda r: (f"{(a := r.choice(NAMES))} is {r.randint(3, 9)} times as old as {(b := r.choice(NAMES))}. In "
               f"{r.randint(2, 12)} years, {a} will be {r.randint(2, 4)} times as old as {b}. How old are they now?"),
    lambda r: (f"The test scores of a class are {', '.join(str(r.randint(55, 100)) for _ in range(r.randint(5, 9)))}. "
               f"Find the mean, the median and the range."),
    lambda r: (f"{r.randint(2, 9)} workers can build a wall in {r.randint(6, 30)} days. How long would "
               f"{r.randint(3, 15)} workers take, working at the same rate?"),
    lambda r: (f"A recipe for {r.randint(2, 6)} people uses {r.randint(100, 600)} g of flour and "
               f"{r.randint(1, 4)} eggs. How much of each is needed for {r.randint(7, 20)} people?"),
    lambda r: (f"You invest ${r.choice((500, 1000, 2500, 5000))} at {r.choice((2, 3, 4, 5, 6))}% interest "
               f"compounded yearly. How much do you have after {r.randint(2, 10)} years?"),
    lambda r: (f"A tank holds {r.randint(200, 2000)} liters. One pipe fills it in {r.randint(2, 12)} hours and "
               f"another drains it in {r.randint(13, 30)} hours. With both open, how long until it is full?"),
    lambda r: f"What is {r.randint(12, 999)} x {r.randint(12, 99)}? Show the long multiplication.",
    lambda r: f"Simplify the fraction {(g := r.randint(2, 12)) * r.randint(2, 30)}/{g * r.randint(2, 30)} and explain each step.",
    lambda r: (f"Solve for x: {r.randint(2, 12)}x + {r.randint(1, 50)} = {r.randint(51, 200)}. "
               f"Check your answer."),
    lambda r: (f"{r.choice(NAMES)} reads {r.randint(10, 60)} pages a day. The book has {r.randint(200, 900)} pages. "
               f"After {r.randint(2, 6)} days, how many pages are left and how many more days are needed?"),
    lambda r: (f"A phone plan costs ${r.randint(10, 40)} a month plus ${r.choice((0.05, 0.1, 0.25))} per text. "
               f"{r.choice(NAMES)} sends {r.randint(50, 400)} texts in a month. What is the bill?"),
    lambda r: f"Convert {r.randint(1, 300)} {(u := r.choice(('miles', 'kilograms', 'liters', 'feet')))} to "
              f"{ {'miles': 'kilometers', 'kilograms': 'pounds', 'liters': 'gallons', 'feet': 'meters'}[u]}, showing the conversion.",
    lambda r: (f"A bag has {r.randint(2, 9)} red, {r.randint(2, 9)} blue and {r.randint(1, 6)} green marbles. Two "
               f"are drawn without replacement. What is the probability both are red?"),
)
MATH_ASK = ("", " Solve it step by step.", " Explain your reasoning.", " Give the answer at the end.")

TOPICS = (
    "photosynthesis", "black holes", "the water cycle", "inflation", "compound interest", "vaccines", "climate change",
    "the French Revolution", "the Roman Empire", "plate tectonics", "machine learning", "neural networks", "blockchain",
    "the internet", "DNS", "HTTPS", "public-key cryptography", "recursion", "version control with git", "databases",
    "SQL joins", "REST APIs", "unit testing", "the immune system", "sleep", "meditation", "the stock market",
    "supply and demand", "renewable energy", "electric cars", "the Moon's phases", "tides", "rainbows", "volcanoes",
    "earthquakes", "evolution", "genetics", "the Renaissance", "World War I", "the printing press", "electricity",
    "magnetism", "gravity", "relativity", "quantum computing", "operating systems", "memory management",
    "garbage collection", "compilers", "cloud computing", "containers", "caching", "hash tables", "binary search",
    "sorting algorithms", "big-O notation", "time zones", "budgeting", "credit scores", "healthy eating", "exercise",
    "learning a language", "public speaking", "time management", "remote work", "job interviews", "negotiation",
    "gardening", "composting", "baking bread", "making coffee", "photography", "chess openings", "playing guitar",
    "writing a resume", "first aid", "recycling", "bees", "coral reefs", "the Amazon rainforest", "deserts",
    "the human heart", "the brain", "memory", "habits", "procrastination", "stress", "teamwork", "leadership",
    "project management", "open-source software", "Linux", "Python", "JavaScript", "spreadsheets", "statistics",
    "probability", "the scientific method", "critical thinking", "democracy", "taxes", "insurance", "mortgages",
)
CHAT_TEMPLATES = (
    "What is {t}?", "Explain {t} to a ten-year-old.", "Explain {t} in simple terms.", "How does {t} work?",
    "Give me three interesting facts about {t}.", "What are common misconceptions about {t}?",
    "Why does {t} matter?", "Summarize the key ideas of {t} in a few bullet points.",
    "I am a beginner. Where should I start with {t}?", "What is the history of {t}, briefly?",
    "Compare {t} and {u}.", "What do {t} and {u} have in common?", "Give me five tips about {t}.",
    "Write a short quiz with three questions about {t}, with answers.", "What questions should I ask about {t}?",
)
CHAT_STYLES = ("", " Keep it short.", " Use an example.", " Answer in a few bullet points.", " Be detailed.",
               " Use an analogy.", " Assume I know the basics.")
RECIPIENTS = ("my manager", "a customer", "my landlord", "a professor", "the team", "a new colleague", "a friend",
              "a hotel", "a supplier", "my neighbour")
SUBJECTS = ("a delayed delivery", "a meeting next week", "a request for time off", "a thank-you for their help",
            "a price increase", "an invitation to a party", "a broken heater", "feedback on a project",
            "a missed deadline", "a job offer", "a refund", "a change of plans")
THINGS = ("the sea", "autumn leaves", "a city at night", "an old clock", "a cat on a windowsill", "the first snow",
          "a lighthouse", "a train journey", "a forgotten garden", "a thunderstorm", "morning coffee", "a robot",
          "a library", "the desert wind", "a small boat", "a mountain village")
PRODUCTS = ("a reusable water bottle", "noise-cancelling headphones", "a standing desk", "a smart thermostat",
            "a hiking backpack", "a cast-iron pan", "an e-reader", "a mechanical keyboard", "a yoga mat", "a desk lamp")
WRITING_TEMPLATES = (
    "Write a short, polite email to {r} about {s}.", "Write a haiku about {x}.", "Write a short poem about {x}.",
    "Write the opening paragraph of a story about {x}.", "Write a product description for {p}.",
    "Write a tweet announcing {p}.", "Write a short speech thanking {r} for {s}.",
    "Describe {x} in three vivid sentences.", "Write a limerick about {x}.",
    "Write a short dialogue between two friends about {s}.",
)
WRITING_STYLES = ("", " Keep it formal.", " Make it warm and friendly.", " Keep it under 100 words.",
                  " Make it a little funny.", " Use simple words.")
SUMMARY_TEMPLATES = (
    "Summarize this text in two sentences:\n\n{d}", "Explain this documentation in plain words:\n\n{d}",
    "Rewrite this text so a beginner understands it:\n\n{d}", "List the main points of this text:\n\n{d}",
    "Write three questions a reader might ask after reading this:\n\n{d}",
)
CODE_TEMPLATES = (
    "Explain what this Python function does, step by step:\n\n```python\n{src}\n```",
    "Add type hints and a docstring to this function:\n\n```python\n{src}\n```",
    "Write pytest unit tests for this function:\n\n```python\n{src}\n```",
    "Is there anything that could be improved in this code? Suggest changes.\n\n```python\n{src}\n```",
    "Rewrite this function in a more readable way, keeping its behaviour:\n\n```python\n{src}\n```",
    "What is the time complexity of this function, and why?\n\n```python\n{src}\n```",
)
SOURCE_MODULES = ("bisect", "heapq", "textwrap", "fnmatch", "colorsys", "statistics", "calendar", "difflib", "shlex",
                  "functools", "string", "html", "base64", "fractions", "ipaddress", "json.encoder", "json.decoder",
                  "urllib.parse", "posixpath", "random", "copy", "collections", "csv", "glob", "tokenize", "pprint",
                  "quopri", "uu", "keyword", "operator", "numbers", "dataclasses", "enum", "graphlib", "reprlib")
MAX_SOURCE_LINES = 40  # functions longer than this are skipped (prompts stay short)


def import_quietly(module_name: str):
    """The module, or None where this Python lacks it (deprecation warnings of old modules silenced)."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return importlib.import_module(module_name)
        except ImportError:
            return None


def stdlib_functions() -> list[tuple[str, str, str]]:
    """(qualified name, source, first docstring paragraph) of short pure-Python stdlib functions, in a fixed order."""
    found = []
    for module_name in SOURCE_MODULES:
        if (module := import_quietly(module_name)) is None:
            continue
        for name, obj in sorted(vars(module).items()):
            if not inspect.isfunction(obj) or obj.__module__ != module.__name__:
                continue
            try:
                source = textwrap.dedent(inspect.getsource(obj))
            except (OSError, TypeError):
                continue
            if 3 <= source.count("\n") <= MAX_SOURCE_LINES:
                doc = (inspect.getdoc(obj) or "").split("\n\n")[0].strip()
                found.append((f"{module_name}.{name}", source.rstrip(), doc))
    return found


def documentation_paragraphs(min_words: int = 25, max_words: int = 160) -> list[str]:
    """Prose paragraphs from stdlib module and function docstrings, in a fixed order."""
    paragraphs, seen = [], set()
    for module_name in sorted(set(SOURCE_MODULES) | set(code_prompts.MODULES)):
        if (module := import_quietly(module_name)) is None:
            continue
        docs = [inspect.getdoc(module) or ""] + [inspect.getdoc(o) or "" for _, o in sorted(vars(module).items())
                                                if callable(o) and getattr(o, "__module__", None) == module.__name__]
        for doc in docs:
            for para in doc.split("\n\n"):
                text = " ".join(para.split())
                if min_words <= len(text.split()) <= max_words and ">>>" not in text and text not in seen:
                    seen.add(text)
                    paragraphs.append(text)
    return paragraphs


def math_prompts(rng: random.Random, n: int) -> Iterator[str]:
    for _ in range(n):
        yield rng.choice(MATH_TEMPLATES)(rng) + rng.choice(MATH_ASK)


def chat_prompts(rng: random.Random, n: int) -> Iterator[str]:
    for _ in range(n):
        t, u = rng.sample(TOPICS, 2)
        yield rng.choice(CHAT_TEMPLATES).format(t=t, u=u) + rng.choice(CHAT_STYLES)


def writing_prompts(rng: random.Random, n: int, paragraphs: list[str]) -> Iterator[str]:
    for i in range(n):
        if i % 3 == 2 and paragraphs:
            yield rng.choice(SUMMARY_TEMPLATES).format(d=rng.choice(paragraphs))
        else:
            yield rng.choice(WRITING_TEMPLATES).format(r=rng.choice(RECIPIENTS), s=rng.choice(SUBJECTS),
                                                       x=rng.choice(THINGS), p=rng.choice(PRODUCTS)) + rng.choice(WRITING_STYLES)


def stub_prompt(name: str, source: str, doc: str) -> str | None:
    """A HumanEval-shaped completion request: the function's signature and docstring, body removed."""
    header = source.split(":\n", 1)[0] if source.startswith("def ") else None
    if header is None or not doc:
        return None
    body = textwrap.indent(f'"""{doc}\n"""', "    ")
    return f"Complete the following Python function.\n\n```python\n{header}:\n{body}\n```"


def code_tasks(rng: random.Random, n: int, functions: list[tuple[str, str, str]]) -> Iterator[str]:
    for i in range(n):
        name, source, doc = functions[i % len(functions)]
        stub = stub_prompt(name, source, doc) if i % 4 == 3 else None
        yield stub or rng.choice(CODE_TEMPLATES).format(src=source)


def build_mix(per_kind: int, seed: int, skip: frozenset[str] = frozenset(), id_prefix: str = "") -> list[dict]:
    """`per_kind` prompts of each kind (code tasks also add the stdlib implementation prompts),
    deduplicated, leaving out the texts in `skip`; ids are `id_prefix` + `<kind>-<n>`."""
    rng = random.Random(seed)
    kinds = {
        "math": math_prompts(rng, per_kind),
        "chat": chat_prompts(rng, per_kind),
        "writing": writing_prompts(rng, per_kind, documentation_paragraphs()),
        "code": code_tasks(rng, per_kind, stdlib_functions()),
    }
    rows, seen = [], set(skip)
    for kind, prompts in kinds.items():
        for i, text in enumerate(prompts):
            if text not in seen:
                seen.add(text)
                rows.append({"id": f"{id_prefix}{kind}-{i}", "kind": kind, "prompt": text})
    for row in code_prompts.code_prompts(seed=seed, variants=3):
        if row["prompt"] not in seen and " at 0x" not in row["prompt"]:  # a default's repr with an address
            seen.add(row["prompt"])
            rows.append({"id": f"{id_prefix}impl-{row['id']}", "kind": "code", "prompt": row["prompt"]})
    rng.shuffle(rows)  # kinds interleave, so any prefix of the file (a --limit run) is a mix
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="output JSONL file of prompts")
    parser.add_argument("--per-kind", type=int, default=3000, help="prompts per kind (math, chat, writing, code)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--id-prefix", default="", help="prefix of every id (keeps a second file's ids apart)")
    parser.add_argument("--skip-texts", type=Path, action="append", default=[], metavar="FILE",
                        help="leave out prompts whose exact text is in this JSONL file of {prompt} rows (repeatable)")
    args = parser.parse_args(argv)
    try:
        skip = frozenset(r.text for file in args.skip_texts for r in read_prompt_jsonl(file))
    except D3DError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    rows = build_mix(args.per_kind, args.seed, skip, args.id_prefix)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    counts = {k: sum(r["kind"] == k for r in rows) for k in ("math", "chat", "writing", "code")}
    skipped = f", {len(skip)} known texts left out" if skip else ""
    print(f"{len(rows)} prompts -> {args.out} ({counts}{skipped})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
