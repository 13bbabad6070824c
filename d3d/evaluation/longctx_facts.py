"""Planted facts, the larger long-context suite `longctx2`, and a calibration set disjoint from it.

    fact         one planted fact in real documentation (paragraphs of Python standard-library
                 docstrings): "Orla Finch was born in the town of Brackwater." The question
                 asks for it in other words ("In which town did Orla Finch come into the
                 world?"), so it shares the person's name with the fact but little else;
                 metric: the answer appears in the reply (1/0)
    oblique      the same, asked without the name or any other content word of the fact
                 ("One sentence above gives a person's birthplace. What is the name of that
                 place?"): word overlap cannot find it, only reading can
    longctx2     the `longctx` suite (passkey, multikey, docqa) plus the fact and oblique tasks,
                 5 prompts per task and length (1k, 2k, 4k tokens of context): 75 scored prompts,
                 interleaved so that `--limit 15` holds one prompt of each task at each length
    calibration  the same five task types drawn from disjoint sources: other seeds, other
                 standard-library modules (no docstring paragraph of the suite's modules), other
                 names, towns and filler. For choosing a probe's layers by measurement
                 (`scripts/calibrate_probe_layers.py`), never on the suite itself.

Every prompt carries its `evidence`, the text whose chunk a good selector must keep (the pass-key
sentence, the asked code's sentence, the planted fact, or the asked function's entry header).
Everything is generated offline and deterministically; this module knows nothing about models or
tokenizers.

    prompts = longctx2_prompts()            # the suite (`--suite longctx2`)
    calib = calibration_prompts(per_task=3)  # never scored against the suite
"""

from __future__ import annotations

from d3d.evaluation.longctx import (
    CHARS_PER_TOKEN, LENGTHS, SUITE, Sources, docqa_prompt, doc_paragraphs, multikey_prompt, passkey_prompt,
    prompt_id, rng_for,
)
from d3d.evaluation.prompt import Prompt

TASKS2 = ("passkey", "multikey", "docqa", "fact", "oblique")
FACTS = (  # (the planted sentence, the question naming its subject, the question naming nothing of it, the answer's pool)
    ("{person} was born in the town of {town}.",
     "In which town did {person} come into the world? Answer with the town only.",
     "One sentence above gives a person's birthplace. What is the name of that place? Answer with the name only.",
     "town"),
    ("The weekly meeting with {person} has been moved to {day}.",
     "On which day of the week does {person} now get together with the team? Answer with the day only.",
     "A rescheduled get-together is mentioned above. On what day does it happen now? Answer with the day only.",
     "day"),
    ("The combination of the locker that belongs to {person} is {number}.",
     "Which number opens {person}'s locker? Answer with the number only.",
     "Someone's storage cabinet has a code above. What is that code? Answer with the number only.",
     "number"),
    ("The last ferry to {island} leaves the harbour at {time}.",
     "At what time does the final boat to {island} depart? Answer with the time only.",
     "A boat departure is mentioned above. When does it depart? Answer with the time only.",
     "time"),
    ("{person} keeps a pet {animal} in a small garden shed.",
     "What kind of animal lives at {person}'s place? Answer with the animal only.",
     "Someone above looks after a creature. Which creature is it? Answer with the animal only.",
     "animal"),
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SUITE_POOLS = {
    "person": ("Orla Finch", "Tomas Varga", "Ines Holloway", "Priya Castell", "Malik Stroud", "Greta Lindqvist",
               "Kofi Marsh", "Yuki Tanabe", "Lena Ostrova", "Rafael Quint"),
    "town": ("Brackwater", "Eldham", "Fernhollow", "Gorsemoor", "Kestwick", "Lowbridge", "Marrowby", "Thistlecombe"),
    "island": ("Skerrin", "Valdholm", "Orrisay", "Brannock", "Eilidh Mor", "Tarvik"),
    "animal": ("hedgehog", "tortoise", "ferret", "axolotl", "peacock", "chinchilla"),
}
CALIBRATION_POOLS = {
    "person": ("Bram Okafor", "Celia Dunmore", "Hugo Treacher", "Nadia Pell", "Oskar Wren", "Sanne Vos",
               "Teodor Ilic", "Wanda Kerr"),
    "town": ("Ashcombe", "Coldharbour", "Dunmere", "Harrowgate", "Pennick", "Wyvernley"),
    "island": ("Corran", "Maddry", "Sulvig", "Tolsta"),
    "animal": ("parrot", "iguana", "gecko", "rabbit", "goldfish"),
}
CALIBRATION_MODULES = (  # standard-library modules none of the suite's documents come from (not inspect:
    # torch replaces inspect.getfile, so its entries would depend on what else was imported)
    "ast", "codecs", "contextlib", "dataclasses", "mimetypes", "pkgutil", "quopri", "secrets",
    "subprocess", "tarfile", "traceback", "types", "typing", "urllib.request", "webbrowser",
)
CALIBRATION_NAMES = ("alder", "basalt", "cinder", "dune", "fennel", "glacier", "hazel", "iris", "jasper", "kelp",
                     "larch", "moss", "nettle", "opal", "pine", "quill", "reed", "sorrel", "thorn", "umber")
CALIBRATION_FILLER = ("Rivers run down to the sea. Leaves fall in autumn. The kettle is on. Trains leave on time. "
                      "Snow covers the hills. ")
CALIBRATION = Sources("d3d-calibration", "calibration", CALIBRATION_MODULES, CALIBRATION_NAMES, CALIBRATION_FILLER,
                      avoid=SUITE.modules)


def longctx2_prompts(per_task: int = 5, lengths: tuple[int, ...] = LENGTHS) -> list[Prompt]:
    """The suite: `per_task` prompts per task and length, interleaved (passkey-1000-00,
    multikey-1000-00, docqa-1000-00, fact-1000-00, oblique-1000-00, passkey-2000-00, ...)."""
    return [_make(task, length, i, SUITE) for i in range(per_task) for length in lengths for task in TASKS2]


def calibration_prompts(per_task: int = 3, lengths: tuple[int, ...] = LENGTHS) -> list[Prompt]:
    """The calibration set, interleaved as the suite is; disjoint from `longctx2_prompts`."""
    return [_make(task, length, i, CALIBRATION) for i in range(per_task) for length in lengths for task in TASKS2]


def _make(task: str, length: int, index: int, sources: Sources) -> Prompt:
    if task in ("fact", "oblique"):
        return fact_prompt(length, index, sources, oblique=task == "oblique")
    return {"passkey": passkey_prompt, "multikey": multikey_prompt, "docqa": docqa_prompt}[task](length, index, sources)


def fact_prompt(length: int, index: int, sources: Sources = SUITE, oblique: bool = False) -> Prompt:
    """One planted fact in documentation, asked for in other words (`oblique`: without naming it)."""
    task = "oblique" if oblique else "fact"
    rng = rng_for(sources, task, length, index)
    pools = CALIBRATION_POOLS if sources is CALIBRATION else SUITE_POOLS
    paragraphs = doc_paragraphs(rng, length * CHARS_PER_TOKEN, sources)
    fact, named, unnamed, kind = FACTS[rng.randrange(len(FACTS))]
    question = unnamed if oblique else named
    values = {name: rng.choice(pool) for name, pool in pools.items()}
    values |= {"day": rng.choice(DAYS), "number": str(rng.randint(10000, 99999)),
               "time": f"{rng.randint(5, 23)}:{rng.choice(('05', '15', '25', '35', '45', '55'))}"}
    planted = fact.format(**values)
    paragraphs.insert(rng.randint(0, len(paragraphs)), planted)
    text = ("Below is some documentation. One sentence in it is not about software.\n\n" + "\n".join(paragraphs)
            + "\n\n" + question.format(**values))
    return Prompt(prompt_id(sources, task, length, index), text, (values[kind],), "contains", task, planted)
