"""The seventh task families' reference solutions and example generators: tokens to tariffs.

The second half of what `task_families7.py` builds on (the first half, polynomials to nested
dictionaries, is in `task_reference7.py`): its last five families (tokens and text statistics, notes
and beats, RGB colours, interest in whole cents, tariffs of bands and brackets), with the tables some
solutions read (note names, interval names, basic colours, the tax brackets and postage bands the
descriptions state), the reference solutions too long for a lambda (tokenize, split_sentences,
syllables, major_scale, note_to_midi, hue, loan_months, cheapest_plan ...) and the seeded example
generators (expression, prose, notes, colour, plans ...: each takes the `random.Random` the task
draws from and only draws from it). The module knows nothing about tasks, rendering or files, so the
task files drawn through it regenerate byte for byte. Nothing here runs on its own:
`python -m d3d.training.task_prompts --families seventh` draws tasks built on it.
"""

from __future__ import annotations

import colorsys
import random
import re
from collections import Counter

from d3d.training.task_families import WORDS

NOTES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
MAJOR_STEPS = (0, 2, 4, 5, 7, 9, 11)
INTERVALS = ("unison", "minor second", "major second", "minor third", "major third", "perfect fourth", "tritone",
             "perfect fifth", "minor sixth", "major sixth", "minor seventh", "major seventh", "octave")
BASIC_COLOURS = {"black": (0, 0, 0), "white": (255, 255, 255), "red": (255, 0, 0), "green": (0, 128, 0),
                 "blue": (0, 0, 255), "yellow": (255, 255, 0), "grey": (128, 128, 128), "orange": (255, 165, 0)}
RGB = (("colour", "Tuple[int, int, int]"),)
TWO_RGB = (("first", "Tuple[int, int, int]"), ("second", "Tuple[int, int, int]"))
TAX_BRACKETS = ((10000, 0), (40000, 10), (None, 20))  # (upper bound, percent) in dollars
POWER_TIERS = ((100, 5), (200, 8), (None, 12))  # (units in the tier, cents a unit)
POSTAGE = ((100, 120), (500, 250), (1000, 400), (2000, 650))  # (grams up to, cents)
GRAM_WORDS = ("banana", "abab", "noon", "cocoa", "tatata")
SHORT_WORDS = ("the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "it")


def tokenize(expression: str) -> list[str]:
    return re.findall(r"\d+|[A-Za-z_]\w*|[^\s\w]", expression)


def expression(r: random.Random) -> str:
    parts = [r.choice((str(r.randint(0, 120)), r.choice(("x", "rate", "n_1", "total"))))]
    for _ in range(r.randint(1, 3)):
        parts += [r.choice("+-*/%<>="), r.choice((str(r.randint(0, 99)), r.choice(("y", "count", "a2"))))]
    text = r.choice((" ", "")).join(parts)
    return f"({text})" if r.random() < 0.3 else text


def bigram_counts(text: str) -> dict[str, int]:
    words = text.split()
    return dict(Counter(f"{a} {b}" for a, b in zip(words, words[1:])))


def split_sentences(text: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.!?]) +", text.strip()) if part]


def prose(r: random.Random) -> str:
    """Two to four short sentences ending in '.', '!' or '?'."""
    sentences = [" ".join(r.choice(SHORT_WORDS) for _ in range(r.randint(1, 5))).capitalize() + r.choice("..!?")
                 for _ in range(r.randint(1, 4))]
    return " ".join(sentences)


def plain_words(r: random.Random, pool: int = 10) -> str:
    return " ".join(r.choice(SHORT_WORDS[:pool]) for _ in range(r.randint(3, 9)))


def contexts(text: str, word: str) -> list[str]:
    words = text.split()
    return [" ".join(words[max(i - 1, 0): i + 2]) for i, w in enumerate(words) if w == word]


def most_common_gram(text: str, size: int) -> str:
    letters = text.replace(" ", "")
    grams = [letters[i: i + size] for i in range(len(letters) - size + 1)]
    return Counter(grams).most_common(1)[0][0] if grams else ""


def syllables(word: str) -> int:
    groups = re.findall(r"[aeiouy]+", word.lower())
    silent = len(groups) > 1 and word.lower().endswith("e") and not word.lower().endswith(("le", "ee"))
    return max(len(groups) - silent, 1)


def word_offsets(text: str, word: str) -> list[int]:
    return [m.start() for m in re.finditer(rf"\b{re.escape(word)}\b", text)]


def transpose(notes: list[str], semitones: int) -> list[str]:
    return [NOTES[(NOTES.index(n) + semitones) % 12] for n in notes]


def major_scale(tonic: str) -> list[str]:
    return [NOTES[(NOTES.index(tonic) + s) % 12] for s in MAJOR_STEPS]


def note_to_midi(note: str) -> int:
    name, octave = re.fullmatch(r"([A-G]#?)(-?\d)", note).groups()
    return 12 * (int(octave) + 1) + NOTES.index(name)


def midi_to_note(number: int) -> str:
    return f"{NOTES[number % 12]}{number // 12 - 1}"


def midi_note(r: random.Random) -> str:
    return midi_to_note(r.randint(36, 84))


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def colour(r: random.Random) -> tuple[int, int, int]:
    return tuple(r.choice((0, 255, r.randint(0, 255), r.randint(0, 255))) for _ in range(3))


def closest_colour(rgb: tuple[int, int, int]) -> str:
    return min(BASIC_COLOURS, key=lambda name: sum((a - b) ** 2 for a, b in zip(rgb, BASIC_COLOURS[name])))


def hue(rgb: tuple[int, int, int]) -> int:
    return round(colorsys.rgb_to_hsv(*(c / 255 for c in rgb))[0] * 360) % 360


def posterize(rgb: tuple[int, int, int], levels: int) -> tuple[int, int, int]:
    return tuple(c * levels // 256 * 255 // (levels - 1) for c in rgb)


def compound(principal: int, percent: int, years: int) -> int:
    for _ in range(years):
        principal += principal * percent // 100
    return principal


def years_to_double(percent: int) -> int:
    balance, years = 10000, 0
    while balance < 20000:
        balance, years = balance + balance * percent // 100, years + 1
    return years


def loan_months(principal: int, percent: int, payment: int) -> int:
    if payment <= principal * percent // 100:
        return -1
    months = 0
    while principal > 0:
        principal, months = principal + principal * percent // 100 - payment, months + 1
    return months


def savings_months(goal: int, deposit: int, percent: int) -> int:
    balance, months = 0, 0
    while balance < goal:
        balance, months = balance + balance * percent // 100 + deposit, months + 1
    return months


def instalments(total: int, count: int) -> list[int]:
    share, extra = divmod(total, count)
    return [share + (i < extra) for i in range(count)]


def cash_rounded(cents: int) -> int:
    return (cents + 2) // 5 * 5


def banded(amount: int, bands: tuple) -> int:
    """The charge of `amount` over bands of (size of the band or None for the rest, rate)."""
    total = 0
    for size, rate in bands:
        part = amount if size is None else min(amount, size)
        total, amount = total + part * rate, amount - part
    return total


def income_tax(income: int) -> int:
    owed, lower = 0, 0
    for upper, percent in TAX_BRACKETS:
        part = max(0, (income if upper is None else min(income, upper)) - lower)
        owed, lower = owed + part * percent, upper or lower
    return owed // 100


def postage(grams: int) -> int:
    return next((cents for limit, cents in POSTAGE if grams <= limit), -1)


def parking_fee(minutes: int) -> int:
    days, rest = divmod(minutes, 24 * 60)
    day_fee = lambda m: 0 if m <= 30 else min(2 * -(-m // 60), 20)  # noqa: E731
    return 20 * days + day_fee(rest)


def volume_total(quantity: int, unit_price: int) -> int:
    percent = 20 if quantity >= 50 else 10 if quantity >= 10 else 0
    return quantity * unit_price * (100 - percent) // 100


def cheapest_plan(usage: int, plans: dict[str, tuple[int, int, int]]) -> str:
    cost = lambda name: plans[name][0] + max(usage - plans[name][1], 0) * plans[name][2]  # noqa: E731
    return min(sorted(plans), key=cost)


def plans(r: random.Random) -> tuple[int, dict[str, tuple[int, int, int]]]:
    names = r.sample(("basic", "plus", "pro", "lite", "max"), r.randint(2, 4))
    return r.randint(0, 600), {n: (r.randint(0, 40) * 50, r.randint(0, 5) * 100, r.randint(1, 15)) for n in names}


def spread_amount(r: random.Random) -> int:
    return r.choice((r.randint(0, 99), r.randint(100, 9999), r.randint(10000, 500000)))


def word(r: random.Random) -> str:
    return r.choice(WORDS + ("make", "table", "little", "beautiful", "quiet", "free", "cake"))
