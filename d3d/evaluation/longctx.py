"""The built-in long-context suite (`--suite longctx`): offline, generated deterministically, scored.

Every prompt is one user turn: a long context, a blank line, then the question (the final
instruction, which selective prefill always keeps). Task types, each at every context length in
`LENGTHS` (approximate tokens of context, measured in characters: ~4 characters per token):

    passkey   single-needle retrieval: a five-digit pass key sentence hidden at a seeded depth in
              repeated filler sentences; metric: the key appears in the answer (1/0)
    multikey  multi-key retrieval: eight "the code of <name> is <number>" sentences spread
              through real text (the Python standard library's docstrings); the question asks
              for one of them; metric: that code appears in the answer and no other code does
    docqa     question answering over real documents: reference entries of Python standard
              library functions (signature + docstring, from the running interpreter); the
              question names one function and asks what it does; metric: token F1 (SQuAD's)
              between the answer's first sentence and that entry's summary line (its first
              paragraph), in [0, 1]

Prompt ids are "longctx/<task>-<length>-<nn>". Seeds, documents, names and filler come from a
`Sources` (`SUITE` here); the calibration set (`longctx_facts.py`) draws the same task types from
disjoint ones. A prompt carries its answer and metric
(`Prompt.reference`, `Prompt.metric`); `score` grades an answer. Python's own docstrings change
between Python versions, so the multikey and docqa texts (and the bench's prompt hashes) are tied to
the interpreter; passkey prompts are identical everywhere. This module knows nothing about models.

    prompts = longctx_prompts(per_task=5)
"""

from __future__ import annotations

import importlib
import inspect
import random
import re
import sysconfig
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from d3d.evaluation.prompt import Prompt

LENGTHS = (1000, 2000, 4000)  # context sizes in approximate tokens (the target's window is 8k)
CHARS_PER_TOKEN = 4  # rough English / code ratio of the SmolLM2 tokenizer, used to size contexts
TASKS = ("passkey", "multikey", "docqa")
MULTIKEY_NEEDLES = 4  # key sentences per multikey prompt
DOC_MODULES = (  # standard-library modules whose functions make the documents (sorted by name below)
    "base64", "bisect", "calendar", "colorsys", "copy", "csv", "difflib", "filecmp", "fnmatch", "functools",
    "glob", "gzip", "hashlib", "heapq", "html", "ipaddress", "itertools", "json", "keyword",
    "linecache", "locale", "operator", "os.path", "pickle", "platform", "pprint", "random", "re", "shlex",
    "shutil", "statistics", "string", "tempfile", "textwrap", "timeit", "tokenize", "unicodedata", "urllib.parse",
    "uuid", "zipfile", "zlib",
)
FILLER = ("The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ")
NAMES = ("amber", "birch", "cobalt", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper",
         "kestrel", "lotus", "marble", "nectar", "onyx", "pepper", "quartz", "raven", "saffron", "tundra")
METRICS = ("contains", "contains-only", "f1")


@dataclass(frozen=True)
class Sources:
    """Where a family of prompts draws its seeds and texts from (the suite's, or a disjoint set's)."""

    namespace: str  # every prompt's random.Random is seeded by "<namespace>/<task>/<length>/<index>"
    id_prefix: str  # prompt ids are "<id_prefix>/<task>-<length>-<nn>"
    modules: tuple[str, ...]  # standard-library modules whose documented functions make the documents
    names: tuple[str, ...]  # names whose secret codes the multikey prompts hide
    filler: str  # the passkey prompts' repeated filler
    avoid: tuple[str, ...] = ()  # modules none of whose docstring paragraphs may appear (another set's)


SUITE = Sources("d3d-longctx", "longctx", DOC_MODULES, NAMES, FILLER)


def longctx_prompts(per_task: int = 5, lengths: tuple[int, ...] = LENGTHS, tasks: tuple[str, ...] = TASKS) -> list[Prompt]:
    """The suite: `per_task` prompts per task and length, interleaved so that any limit that is a
    multiple of len(tasks) * len(lengths) keeps the mix (passkey-1000-00, multikey-1000-00,
    docqa-1000-00, passkey-2000-00, ..., docqa-4000-00, passkey-1000-01, ...)."""
    makers = {"passkey": passkey_prompt, "multikey": multikey_prompt, "docqa": docqa_prompt}
    return [makers[task](length, i) for i in range(per_task) for length in lengths for task in tasks]


def rng_for(sources: Sources, task: str, length: int, index: int) -> random.Random:
    return random.Random(f"{sources.namespace}/{task}/{length}/{index}")


def prompt_id(sources: Sources, task: str, length: int, index: int) -> str:
    return f"{sources.id_prefix}/{task}-{length}-{index:02d}"


def passkey_prompt(length: int, index: int, sources: Sources = SUITE) -> Prompt:
    """Single-needle retrieval in repeated filler."""
    rng = rng_for(sources, "passkey", length, index)
    key = str(rng.randint(10000, 99999))
    filler = sources.filler
    reps = max(1, length * CHARS_PER_TOKEN // len(filler))
    depth = rng.randint(0, reps - 1)
    needle = f"The pass key is {key}. Remember it. {key} is the pass key. "
    context = "".join(needle + filler if i == depth else filler for i in range(reps))
    text = (f"There is important information hidden inside a lot of irrelevant text. Find it and memorize it.\n\n"
            f"{context.strip()}\n\nWhat is the pass key? Answer with the number only.")
    return Prompt(prompt_id(sources, "passkey", length, index), text, (key,), "contains", "passkey", needle.strip())


def multikey_prompt(length: int, index: int, sources: Sources = SUITE) -> Prompt:
    """Multi-key retrieval: several coded names spread through real text, one asked for."""
    rng = rng_for(sources, "multikey", length, index)
    paragraphs = doc_paragraphs(rng, length * CHARS_PER_TOKEN, sources)
    names = rng.sample(sources.names, MULTIKEY_NEEDLES)
    codes = [str(c) for c in rng.sample(range(1000, 9999), MULTIKEY_NEEDLES)]
    slots = sorted(rng.sample(range(len(paragraphs) + 1), MULTIKEY_NEEDLES))
    for offset, (slot, name, code) in enumerate(zip(slots, names, codes)):
        paragraphs.insert(slot + offset, f"The secret code of {name} is {code}.")
    asked = rng.randrange(MULTIKEY_NEEDLES)
    others = tuple(c for i, c in enumerate(codes) if i != asked)
    text = ("Below is some documentation with a few secret codes hidden in it.\n\n" + "\n".join(paragraphs)
            + f"\n\nWhat is the secret code of {names[asked]}? Answer with the number only.")
    return Prompt(prompt_id(sources, "multikey", length, index), text, (codes[asked], *others), "contains-only", "multikey",
                  f"The secret code of {names[asked]} is {codes[asked]}.")


def docqa_prompt(length: int, index: int, sources: Sources = SUITE) -> Prompt:
    """Say what a function does, as its reference entry (in the context) summarises it."""
    rng = rng_for(sources, "docqa", length, index)
    entries = list(function_entries(sources.modules))
    rng.shuffle(entries)
    chosen, size = [], 0
    for entry in entries:
        if size >= length * CHARS_PER_TOKEN:
            break
        chosen.append(entry)
        size += len(entry[2])
    name, summary, entry = chosen[rng.randrange(len(chosen))]
    text = ("Below are reference entries of Python functions.\n\n" + "\n\n".join(e[2] for e in chosen)
            + f"\n\nAccording to the reference entries above, what does the function {name} do? Answer in one sentence.")
    return Prompt(prompt_id(sources, "docqa", length, index), text, (summary,), "f1", "docqa", entry.split("\n")[0])


@lru_cache(maxsize=4)
def function_entries(modules: tuple[str, ...] = DOC_MODULES) -> tuple[tuple[str, str, str], ...]:
    """(qualified name, summary line, entry text) of documented public functions of `modules`,
    sorted by name; only functions whose summary line is unique and at least five words long, and
    only functions defined in the standard library's own files (other libraries patch a few, e.g.
    warnings.showwarning, which would make the documents depend on what else was imported)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    found = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name, obj in inspect.getmembers(module, inspect.isfunction):
            doc = inspect.getdoc(obj)
            if name.startswith("_") or not doc or getattr(obj, "__module__", "") not in (module.__name__, module_name):
                continue
            if stdlib not in Path(inspect.getfile(obj)).resolve().parents:
                continue
            summary = doc.split("\n\n")[0].replace("\n", " ").strip()
            if len(summary.split()) < 5 or len(summary) > 200:
                continue
            try:  # defaults that are functions print their address: drop it, it differs per process
                signature = re.sub(r" at 0x[0-9a-fA-F]+>", ">", str(inspect.signature(obj)))
            except (TypeError, ValueError):
                signature = "(...)"
            qualified = f"{module_name}.{name}"
            body = doc if len(doc) < 1500 else doc[:1500].rsplit("\n", 1)[0]
            found[qualified] = (qualified, summary, f"{qualified}{signature}\n{body}")
    summaries = [e[1] for e in found.values()]
    return tuple(found[k] for k in sorted(found) if summaries.count(found[k][1]) == 1)


def doc_paragraphs(rng: random.Random, chars: int, sources: Sources = SUITE) -> list[str]:
    """Seeded paragraphs of the docstrings of `sources.modules` totalling about `chars` characters
    (none that `sources.avoid`'s modules also hold)."""
    avoided = set(paragraph_pool(sources.avoid)) if sources.avoid else set()
    paragraphs = [p for p in paragraph_pool(sources.modules) if p not in avoided]
    rng.shuffle(paragraphs)
    out, size = [], 0
    for p in paragraphs:
        if size >= chars:
            break
        out.append(p)
        size += len(p) + 1
    return out


def paragraph_pool(modules: tuple[str, ...] = DOC_MODULES) -> list[str]:
    """Every docstring paragraph (after the summary) of more than 60 characters of `modules`, in order."""
    paragraphs = [p.replace("\n", " ").strip() for e in function_entries(modules) for p in e[2].split("\n\n")[1:]]
    return [p for p in paragraphs if len(p) > 60]


def score(prompt: Prompt, answer: str) -> float | None:
    """The task metric of one answer (in [0, 1]), or None for a prompt without a reference.

    contains       the first reference appears in the answer (numbers as whole numbers; names
                   case-insensitively, with or without the module prefix)
    contains-only  as contains, and none of the other references (distractor codes) appear
    f1             token F1 between the answer's first sentence and the first reference
    """
    if not prompt.reference:
        return None
    if prompt.metric == "f1":
        return round(token_f1(first_sentence(answer), prompt.reference[0]), 4)
    hit = _mentions(answer, prompt.reference[0])
    if prompt.metric == "contains-only":
        hit = hit and not any(_mentions(answer, other) for other in prompt.reference[1:])
    return float(hit)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _mentions(answer: str, reference: str) -> bool:
    if reference.isdigit():
        return re.search(rf"(?<!\d){reference}(?!\d)", answer) is not None
    return reference.lower() in answer.lower()


def first_sentence(text: str) -> str:
    """Up to the first full stop followed by white space (or the end), the first line at most."""
    text = text.strip().split("\n")[0]
    match = re.search(r"\.(\s|$)", text)
    return text[: match.start() + 1] if match else text


def token_f1(answer: str, reference: str) -> float:
    """SQuAD-style F1 over lower-cased word tokens (articles and punctuation dropped)."""
    a = [w for w in _words(answer) if w not in ("a", "an", "the")]
    r = [w for w in _words(reference) if w not in ("a", "an", "the")]
    common = sum((Counter(a) & Counter(r)).values())
    if not common:
        return 0.0
    precision, recall = common / len(a), common / len(r)
    return 2 * precision * recall / (precision + recall)
