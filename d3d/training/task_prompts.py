"""Offline programming tasks in HumanEval's shape, with worked examples computed by running them.

The code prompts of `code_prompts.py` and `prompt_mix.py` come from the standard library: real
functions, but few (about 1,700 prompts) and far from the small algorithmic puzzles users and
HumanEval ask for. This module composes such puzzles from a grammar instead:

    lists     a condition on integers (even, above k, divisible by k, prime ...) combined with what to
              return about the matching elements (their sum, count, largest, squares, first index ...)
    strings   transformations and questions about text (vowels, palindromes, run-length, Caesar ...)
    numbers   digit and divisor arithmetic (digit sums, primes, gcd, Collatz steps, base conversion ...)
    sequences list utilities (running sums, rotation, chunks, windows, merging, frequencies ...)

`task_families.py` adds more families (mappings, grids, pairs, floats, more text, ordering, small
puzzles), `task_families3.py` a third set (number theory, parsing, membership, nesting,
simulations, predicates, formatting, counting), `task_families4.py` a fourth (ranges, matrices,
tallies, ciphers, calendar, history, digits, windows), `task_families5.py` a fifth (records,
multisets, geometry, graphs, games, ledgers, bits, layout), `task_families6.py` a sixth (checks,
voting, similarity, machines, queues, standings, units, encodings, parsers, timetables),
`task_families7.py` a seventh (polynomials, fractions, recurrences, boards, documents, tokens, music,
colours, interest, tariffs), `task_families8.py` an eighth (numerals, permutations, trees, genomes,
addresses, markup, listings, wordplay, traces, statistics), `task_families9.py` a ninth (relations,
logic, sparse, stringology, figurate, modular, packing, heaps, linked, signals) and `task_families10.py`
a tenth (linear, networks, partitions, hashing, generators, codecs, alphabets, recreations, nim,
wildcards); `--families` picks the first four ("old", the default), the second set ("new"), both
("all"), the third set ("third"), the first three sets ("every"), the fourth set alone ("fourth"), the
fifth alone ("fifth"), the sixth alone ("sixth"), the seventh alone ("seventh"), the eighth alone
("eighth"), the ninth alone ("ninth") or the tenth alone ("tenth").

Every task has a reference implementation, used only to compute the docstring's examples; the target
writes the code. With `--families old` every example is HumanEval's `>>> f(x)` followed by its value,
exactly as the first file was written; with any other choice 60% are, and the rest use HumanEval's other
shapes (`f(x) ==> value`, `f(x) == value`, `f(x) -> value`, `f(x) ➞ value`, "For x = 1 the output
should be 2"). Names, argument names, type-hint style, phrasing, constants and example inputs vary
with a seeded generator, so one seed gives thousands of distinct prompts. Most prompts are stubs to
complete, worded exactly as the bench's HumanEval suite asks; the rest are plain requests. HumanEval
itself is held out later by `d3d data`'s decontamination. The same arguments give the same file,
byte for byte.

    python -m d3d.training.task_prompts --out data/task_prompts.jsonl --count 6000 --seed 0
    python -m d3d.training.task_prompts --out data/task_prompts2.jsonl --count 6000 --seed 1 --families new
    python -m d3d.training.task_prompts --out data/task_prompts3.jsonl --count 6000 --seed 2 --families all \
        --id-prefix task3- --skip-texts data/task_prompts.jsonl --skip-texts data/task_prompts2.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts6.jsonl --count 8000 --seed 6 --families third \
        --id-prefix task6- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev_prompts.jsonl

The fourth set's held-out prompts and its first file (no function name is shared with an earlier file,
and the seventh leaves out every function the held-out prompts ask for, under every k):

    python -m d3d.training.task_prompts --out data/task_dev4_prompts.jsonl --count 48 --seed 14 --families fourth \
        --id-prefix taskdev4- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev_prompts.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts7.jsonl --count 8000 --seed 7 --families fourth \
        --id-prefix task7- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev_prompts.jsonl \
        --skip-texts data/task_dev4_prompts.jsonl --skip-functions data/task_dev4_prompts.jsonl

The fifth set's held-out prompts and its first file, the eighth (which leaves out every function the
held-out prompts ask for, under every k):

    python -m d3d.training.task_prompts --out data/task_dev5_prompts.jsonl --count 48 --seed 15 --families fifth \
        --id-prefix taskdev5- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev4_prompts.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts8.jsonl --count 8000 --seed 8 --families fifth \
        --id-prefix task8- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev4_prompts.jsonl \
        --skip-texts data/task_dev5_prompts.jsonl --skip-functions data/task_dev5_prompts.jsonl

The sixth set's held-out prompts and its first file, the ninth (which leaves out every function the
held-out prompts ask for, under every k):

    python -m d3d.training.task_prompts --out data/task_dev6_prompts.jsonl --count 48 --seed 16 --families sixth \
        --id-prefix taskdev6- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev5_prompts.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts9.jsonl --count 8000 --seed 9 --families sixth \
        --id-prefix task9- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev5_prompts.jsonl \
        --skip-texts data/task_dev6_prompts.jsonl --skip-functions data/task_dev6_prompts.jsonl

The seventh set's held-out prompts and its first file, the tenth (which leaves out every function the
held-out prompts ask for, under every k):

    python -m d3d.training.task_prompts --out data/task_dev7_prompts.jsonl --count 48 --seed 17 --families seventh \
        --id-prefix taskdev7- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev6_prompts.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts10.jsonl --count 8000 --seed 10 --families seventh \
        --id-prefix task10- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_dev6_prompts.jsonl \
        --skip-texts data/task_dev7_prompts.jsonl --skip-functions data/task_dev7_prompts.jsonl

The eighth set's held-out prompts and its first file, the eleventh (which leaves out every function the
held-out prompts ask for, under every k):

    python -m d3d.training.task_prompts --out data/task_dev8_prompts.jsonl --count 48 --seed 18 --families eighth \
        --id-prefix taskdev8- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_prompts9.jsonl \
        --skip-texts data/task_dev_prompts.jsonl ... --skip-texts data/task_dev7_prompts.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts11.jsonl --count 8000 --seed 11 --families eighth \
        --id-prefix task11- --skip-texts (the same files) --skip-texts data/task_prompts10.jsonl \
        --skip-texts data/task_dev8_prompts.jsonl --skip-functions data/task_dev8_prompts.jsonl

The ninth set's held-out prompts and its first file, the twelfth (which leaves out every function the
held-out prompts ask for, under every k):

    python -m d3d.training.task_prompts --out data/task_dev9_prompts.jsonl --count 48 --seed 19 --families ninth \
        --id-prefix taskdev9- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_prompts10.jsonl \
        --skip-texts data/task_dev_prompts.jsonl ... --skip-texts data/task_dev8_prompts.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts12.jsonl --count 8000 --seed 12 --families ninth \
        --id-prefix task12- --skip-texts (the same files) --skip-texts data/task_prompts11.jsonl \
        --skip-texts data/task_dev9_prompts.jsonl --skip-functions data/task_dev9_prompts.jsonl

The tenth set's held-out prompts and its first file, the thirteenth (which leaves out every function the
held-out prompts ask for, under every k):

    python -m d3d.training.task_prompts --out data/task_dev10_prompts.jsonl --count 48 --seed 20 --families tenth \
        --id-prefix taskdev10- --skip-texts data/task_prompts.jsonl ... --skip-texts data/task_prompts12.jsonl \
        --skip-texts data/task_dev_prompts.jsonl ... --skip-texts data/task_dev9_prompts.jsonl
    python -m d3d.training.task_prompts --out data/task_prompts13.jsonl --count 8000 --seed 13 --families tenth \
        --id-prefix task13- --skip-texts (the same files) --skip-texts data/task_dev10_prompts.jsonl \
        --skip-functions data/task_dev10_prompts.jsonl

`--skip-texts FILE` (repeatable) leaves out every prompt whose exact text is in FILE, so a new file
asks nothing an earlier one already asked; the count is still met from the rest of the grammar.
`--skip-functions FILE` holds out by function instead: no task whose function a prompt in FILE asks
for (under any constant k) is drawn, so a held-out set keeps measuring unseen functions.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from d3d.errors import D3DError
from d3d.training.prompts import read_prompt_jsonl
from d3d.training.task_families import WORDS, Task, extra_tasks, int_list, is_prime, sentence
from d3d.training.task_families3 import third_tasks
from d3d.training.task_families4 import fourth_tasks
from d3d.training.task_families5 import fifth_tasks
from d3d.training.task_families6 import sixth_tasks
from d3d.training.task_families7 import seventh_tasks
from d3d.training.task_families8 import eighth_tasks
from d3d.training.task_families9 import ninth_tasks
from d3d.training.task_families10 import tenth_tasks

STUB_TEMPLATE = (  # the bench's HumanEval wording (d3d/evaluation/suites.py), so training sees that shape
    "Complete the following Python function. Reply with the full function in a Python code block."
    "\n\n```python\n{code}```"
)
REQUEST_TEMPLATES = (
    "Write a Python function `{name}({args})`. {what}",
    "Implement `{name}({args})` in Python: {what_lower} Give the code and explain it briefly.",
    "I need a Python function called `{name}`. {what} Can you write it, with a docstring?",
)
STUB_SHARE = 0.7  # the rest are plain requests


def conditions(k: int) -> list[tuple[str, str, str, Callable[[int], bool]]]:
    """(name fragment, singular and plural description, predicate) of integer conditions, some with k."""
    return [
        ("even", "even", "even", lambda x: x % 2 == 0),
        ("odd", "odd", "odd", lambda x: x % 2 != 0),
        ("positive", "strictly positive", "strictly positive", lambda x: x > 0),
        ("negative", "negative", "negative", lambda x: x < 0),
        (f"above_{k}", f"greater than {k}", f"greater than {k}", lambda x: x > k),
        (f"below_{k}", f"smaller than {k}", f"smaller than {k}", lambda x: x < k),
        (f"divisible_by_{k}", f"divisible by {k}", f"divisible by {k}", lambda x: x % k == 0),
        ("prime", "a prime number", "prime numbers", is_prime),
        ("square", "a perfect square", "perfect squares", lambda x: x >= 0 and math.isqrt(x) ** 2 == x),
        ("two_digit", "a two-digit number (10 to 99, or -99 to -10)", "two-digit numbers (10 to 99, or -99 to -10)",
         lambda x: 10 <= abs(x) <= 99),
    ]


def list_tasks(k: int) -> list[Task]:
    """Conditions on a list of integers combined with what to return about the matching elements."""
    tasks = []
    for frag, sg, pl, p in conditions(k):
        reducers = [
            (f"sum_{frag}", "int", f"Return the sum of the elements of the list that are {pl}. "
             "Return 0 if there are none.", lambda xs, p=p: sum(x for x in xs if p(x))),
            (f"count_{frag}", "int", f"Count how many elements of the list are {pl}.",
             lambda xs, p=p: sum(1 for x in xs if p(x))),
            (f"largest_{frag}", "Optional[int]", f"Return the largest element that is {sg}, or None if no "
             "element is.", lambda xs, p=p: max((x for x in xs if p(x)), default=None)),
            (f"filter_{frag}", "List[int]", f"Return a new list with only the elements that are {pl}, "
             "in their original order.", lambda xs, p=p: [x for x in xs if p(x)]),
            (f"squares_of_{frag}", "List[int]", f"Return the squares of the elements that are {pl}, "
             "in their original order.", lambda xs, p=p: [x * x for x in xs if p(x)]),
            (f"first_{frag}_index", "int", f"Return the index of the first element that is {sg}, "
             "or -1 if there is none.", lambda xs, p=p: next((i for i, x in enumerate(xs) if p(x)), -1)),
            (f"all_{frag}", "bool", f"Return True if every element of the list is {sg}, and False "
             "otherwise. An empty list gives True.", lambda xs, p=p: all(p(x) for x in xs)),
            (f"remove_{frag}", "List[int]", f"Return the list without the elements that are {pl}.",
             lambda xs, p=p: [x for x in xs if not p(x)]),
        ]
        for name, ret, what, f in reducers:
            tasks.append(Task(name, (("numbers", "List[int]"),), ret, what, f, lambda r: (int_list(r),)))
    return tasks


def run_length(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{s[i]}{j - i}")
        i = j
    return "".join(out)


def caesar(s: str, k: int) -> str:
    return "".join(chr((ord(c) - 97 + k) % 26 + 97) if c.islower() else c for c in s)


def string_tasks(k: int) -> list[Task]:
    """Questions about and transformations of text."""
    text = (("text", "str"),)
    word = lambda r: (r.choice(WORDS) + r.choice(("", "", r.choice(WORDS))),)  # noqa: E731
    phrase = lambda r: (sentence(r),)  # noqa: E731
    rows = [
        ("count_vowels", "int", "Return the number of vowels (a, e, i, o, u) in the string.",
         lambda s: sum(c in "aeiou" for c in s.lower()), phrase),
        ("is_palindrome", "bool", "Return True if the string reads the same forwards and backwards.",
         lambda s: s == s[::-1], word),
        ("reverse_words", "str", "Return the sentence with the order of its words reversed.",
         lambda s: " ".join(s.split()[::-1]), phrase),
        ("capitalize_words", "str", "Return the sentence with the first letter of every word in upper case.",
         lambda s: " ".join(w[:1].upper() + w[1:] for w in s.split()), phrase),
        ("longest_word", "str", "Return the longest word of the sentence; the first one if several are "
         "equally long.", lambda s: max(s.split(), key=len), phrase),
        ("run_length_encode", "str", "Encode the string with run-length encoding: each run of a repeated "
         "character becomes the character followed by the length of the run.", run_length,
         lambda r: ("".join(r.choice("abc") * r.randint(1, 4) for _ in range(r.randint(2, 4))),)),
        (f"caesar_shift_{k}", "str", f"Shift every lower-case letter {k} places forward in the alphabet, "
         "wrapping from z to a. Other characters stay as they are.", lambda s: caesar(s, k), phrase),
        ("swap_case", "str", "Return the string with upper-case letters made lower-case and lower-case "
         "letters made upper-case.", lambda s: s.swapcase(),
         lambda r: ("".join(c.upper() if r.random() < 0.4 else c for c in sentence(r)),)),
        ("most_common_letter", "str", "Return the letter that occurs most often in the string, ignoring "
         "spaces; the alphabetically first one on a tie.",
         lambda s: min(Counter(s.replace(" ", "")).items(), key=lambda kv: (-kv[1], kv[0]))[0], phrase),
        ("first_unique_char", "str", "Return the first character that occurs exactly once in the string, "
         "or an empty string if there is none.",
         lambda s: next((c for c in s if s.count(c) == 1), ""), word),
        (f"words_longer_than_{k}", "List[str]", f"Return the words of the sentence that have more than {k} "
         "letters, in order.", lambda s: [w for w in s.split() if len(w) > k], phrase),
        ("remove_duplicate_letters", "str", "Return the string with only the first occurrence of each "
         "character kept.", lambda s: "".join(dict.fromkeys(s)), word),
        ("count_words", "Dict[str, int]", "Return a dictionary mapping each word of the sentence to the "
         "number of times it occurs.", lambda s: dict(Counter(s.split())), phrase),
        ("acronym", "str", "Return the upper-case first letters of the words of the phrase, joined.",
         lambda s: "".join(w[0].upper() for w in s.split()), phrase),
        ("snake_to_camel", "str", "Convert a snake_case name to camelCase.",
         lambda s: s.split("_")[0] + "".join(w.title() for w in s.split("_")[1:]),
         lambda r: ("_".join(r.choice(WORDS) for _ in range(r.randint(2, 3))),)),
    ]
    return [Task(n, text, ret, what, f, ex) for n, ret, what, f, ex in rows]


def collatz_steps(n: int) -> int:
    steps = 0
    while n != 1:
        n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
    return steps


def fibonacci(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def to_base(n: int, b: int) -> str:
    digits = ""
    while True:
        n, d = divmod(n, b)
        digits = "0123456789abcdef"[d] + digits
        if n == 0:
            return digits


def number_tasks(k: int) -> list[Task]:
    """Digit, divisor and sequence arithmetic on non-negative integers."""
    n1 = (("n", "int"),)
    small = lambda r: (r.randint(1, 30),)  # noqa: E731
    wide = lambda r: (r.randint(1, 9999),)  # noqa: E731
    rows = [
        ("digit_sum", "int", "Return the sum of the decimal digits of n.", lambda n: sum(map(int, str(n))), wide),
        ("reverse_digits", "int", "Return the number whose decimal digits are those of n in reverse order.",
         lambda n: int(str(n)[::-1]), wide),
        ("count_divisors", "int", "Return how many positive integers divide n exactly.",
         lambda n: sum(n % d == 0 for d in range(1, n + 1)), small),
        ("nth_fibonacci", "int", "Return the n-th Fibonacci number, where the sequence starts 0, 1, 1, 2.",
         fibonacci, small),
        ("collatz_steps", "int", "Return how many steps the Collatz rule (halve an even number, replace an "
         "odd one by 3n + 1) takes to reach 1 from n.", collatz_steps, small),
        ("digital_root", "int", "Repeatedly add the digits of n until one digit is left, and return it.",
         lambda n: 1 + (n - 1) % 9, wide),
        (f"to_base_{k}", "str", f"Return the representation of n in base {k} as a string of digits.",
         lambda n: to_base(n, k), wide),
        (f"is_power_of_{k}", "bool", f"Return True if n is a power of {k} (1 counts as {k} to the power 0).",
         lambda n: next((True for e in range(40) if k ** e == n), False),
         lambda r: (r.choice((k ** r.randint(0, 5), r.randint(1, 200))),)),
        ("count_primes_below", "int", "Return how many prime numbers are smaller than n.",
         lambda n: sum(is_prime(i) for i in range(n)), lambda r: (r.randint(2, 60),)),
        ("sum_of_multiples", "int", f"Return the sum of all positive integers below n that are multiples of "
         f"3 or of {k}.", lambda n: sum(i for i in range(1, n) if i % 3 == 0 or i % k == 0), small),
        ("count_set_bits", "int", "Return the number of ones in the binary representation of n.",
         lambda n: bin(n).count("1"), wide),
        ("largest_prime_factor", "int", "Return the largest prime factor of n, for n greater than 1.",
         lambda n: max(d for d in range(2, n + 1) if n % d == 0 and is_prime(d)), lambda r: (r.randint(2, 500),)),
    ]
    tasks = [Task(n, n1, ret, what, f, ex) for n, ret, what, f, ex in rows]
    pair = lambda r: (r.randint(2, 90), r.randint(2, 90))  # noqa: E731
    tasks += [Task("gcd", (("a", "int"), ("b", "int")), "int", "Return the greatest common divisor of a and b.",
                   math.gcd, pair),
              Task("lcm", (("a", "int"), ("b", "int")), "int", "Return the least common multiple of a and b.",
                   lambda a, b: a * b // math.gcd(a, b), pair)]
    return tasks


def sequence_tasks(k: int) -> list[Task]:
    """Utilities over lists: sums, windows, rotation, merging, frequencies."""
    xs = (("values", "List[int]"),)
    one = lambda r: (int_list(r, 0, 20),)  # noqa: E731
    rows = [
        ("running_sum", "List[int]", "Return the running sums of the list: element i is the sum of the first "
         "i + 1 elements.", lambda v: [sum(v[: i + 1]) for i in range(len(v))]),
        ("unique_in_order", "List[int]", "Return the list with duplicates removed, keeping the first "
         "occurrence of each value.", lambda v: list(dict.fromkeys(v))),
        (f"rotate_left_{k}", "List[int]", f"Return the list rotated {k} places to the left.",
         lambda v: v[k % len(v):] + v[: k % len(v)]),
        (f"chunks_of_{k}", "List[List[int]]", f"Split the list into consecutive chunks of {k} elements; "
         "the last chunk may be shorter.", lambda v: [v[i: i + k] for i in range(0, len(v), k)]),
        (f"window_sums_{k}", "List[int]", f"Return the sums of every window of {k} consecutive elements.",
         lambda v: [sum(v[i: i + k]) for i in range(len(v) - k + 1)]),
        ("second_largest", "Optional[int]", "Return the second largest distinct value, or None if there is "
         "no such value.", lambda v: sorted(set(v))[-2] if len(set(v)) > 1 else None),
        ("pairwise_differences", "List[int]", "Return the differences between consecutive elements.",
         lambda v: [b - a for a, b in zip(v, v[1:])]),
        ("most_frequent", "int", "Return the value that occurs most often; the smallest one on a tie.",
         lambda v: min(Counter(v).items(), key=lambda kv: (-kv[1], kv[0]))[0]),
        ("is_sorted", "bool", "Return True if the list is sorted in non-decreasing order.",
         lambda v: v == sorted(v)),
        ("alternating_sum", "int", "Return the first element minus the second plus the third, and so on.",
         lambda v: sum(x if i % 2 == 0 else -x for i, x in enumerate(v))),
        ("longest_increasing_run", "int", "Return the length of the longest run of strictly increasing "
         "consecutive elements.", lambda v: max(
             (j - i for i in range(len(v)) for j in range(i + 1, len(v) + 1) if all(a < b for a, b in zip(v[i:j], v[i + 1:j]))),
             default=0)),
    ]
    tasks = [Task(n, xs, ret, what, f, one) for n, ret, what, f in rows]
    two = lambda r: (sorted(int_list(r, 0, 30)), sorted(int_list(r, 0, 30)))  # noqa: E731
    tasks += [Task("merge_sorted", (("left", "List[int]"), ("right", "List[int]")), "List[int]",
                   "Merge two sorted lists into one sorted list.", lambda a, b: sorted(a + b), two),
              Task("common_elements", (("left", "List[int]"), ("right", "List[int]")), "List[int]",
                   "Return the values present in both lists, sorted and without duplicates.",
                   lambda a, b: sorted(set(a) & set(b)), two)]
    return tasks


def all_tasks(k: int) -> list[Task]:
    return list_tasks(k) + string_tasks(k) + number_tasks(k) + sequence_tasks(k)


CATALOGUES: dict[str, tuple[Callable[[int], list[Task]], ...]] = {  # --families: whose tasks, in this order
    "old": (all_tasks,),  # this module's
    "new": (extra_tasks,),  # task_families'
    "all": (all_tasks, extra_tasks),
    "third": (third_tasks,),  # task_families3's
    "every": (all_tasks, extra_tasks, third_tasks),  # the first three sets; a later set gets its own choice
    "fourth": (fourth_tasks,),  # task_families4's
    "fifth": (fifth_tasks,),  # task_families5's
    "sixth": (sixth_tasks,),  # task_families6's
    "seventh": (seventh_tasks,),  # task_families7's
    "eighth": (eighth_tasks,),  # task_families8's
    "ninth": (ninth_tasks,),  # task_families9's
    "tenth": (tenth_tasks,),  # task_families10's
}
FAMILIES = tuple(CATALOGUES)


def tasks_of(families: str, k: int) -> list[Task]:
    """The catalogue of `families` (one of FAMILIES) with the constant k."""
    if families not in FAMILIES:
        raise D3DError(f"families must be one of {', '.join(FAMILIES)}, got {families!r}")
    return [task for make in CATALOGUES[families] for task in make(k)]


@dataclass(frozen=True)
class ExampleFormat:
    """One way HumanEval's docstrings show examples: an optional heading line, then one entry each."""

    name: str
    heading: str  # the line above the examples ("" for none)
    entry: str  # one example, from {call}, {value} (the result's repr) and {inputs} ("xs = [1], k = 2")
    weight: float  # share of the stubs when the formats are mixed


EXAMPLE_FORMATS = (
    ExampleFormat("doctest", "", ">>> {call}\n    {value}", 0.6),
    ExampleFormat("long_arrow", "For example:", "{call} ==> {value}", 0.08),
    ExampleFormat("equals", "Example:", "{call} == {value}", 0.08),
    ExampleFormat("arrow", "Examples:", "{call} -> {value}", 0.08),
    ExampleFormat("heavy_arrow", "Examples:", "{call} \u279e {value}", 0.08),
    ExampleFormat("prose", "Examples:", "For {inputs} the output should be {value}", 0.08),
)
DOCTEST = EXAMPLE_FORMATS[0]  # the only format of the first file (--families old)
ARG_RENAMES = {"numbers": ("numbers", "nums", "lst", "arr", "values"), "values": ("values", "items", "data", "xs"),
               "text": ("text", "s", "string", "sentence"), "n": ("n", "num", "number"),
               "words": ("words", "names", "tokens", "strings"), "grid": ("grid", "matrix", "rows", "board"),
               "mapping": ("mapping", "counts", "table", "scores"), "intervals": ("intervals", "ranges", "spans"),
               "points": ("points", "coords", "locations")}
PHRASINGS = ("{what}", "Given {arg}, {what_lower}", "{what}\n    {extra}")
EXTRAS = ("Do not modify the input.", "The input may be empty unless stated otherwise.", "Keep it simple and readable.")
TYPING_NAMES = ("List", "Dict", "Optional", "Tuple")


def hint(kind: str, modern: bool) -> str:
    """The type hint in `typing` style or, when `modern`, with builtin generics."""
    if not modern:
        return kind
    for old, new in (("List[", "list["), ("Dict[", "dict["), ("Tuple[", "tuple[")):
        kind = kind.replace(old, new)
    return re.sub(r"Optional\[(.*)\]", r"\1 | None", kind)


def render(task: Task, r: random.Random, formats: tuple[ExampleFormat, ...] = (DOCTEST,)) -> str:
    """One prompt for `task`: a stub to complete with computed examples, or a plain request.

    The examples take one of `formats`, drawn by weight; a single format costs no draw, so that the
    default renders exactly as the first file was rendered.
    """
    renames = {a: r.choice(ARG_RENAMES.get(a, (a,))) for a, _ in task.args}
    modern = r.random() < 0.4
    args = ", ".join(f"{renames[a]}: {hint(t, modern)}" for a, t in task.args)
    what = task.what
    for old, new in renames.items():  # the description names one-letter arguments as the signature does
        if len(old) == 1:
            what = re.sub(rf"\b{old}\b", new, what)
    if r.random() >= STUB_SHARE:
        return r.choice(REQUEST_TEMPLATES).format(name=task.name, args=args, what=what,
                                                  what_lower=what[0].lower() + what[1:])
    first_arg = renames[task.args[0][0]]
    doc = r.choice(PHRASINGS).format(what=what, what_lower=what[0].lower() + what[1:], arg=f"`{first_arg}`",
                                     extra=r.choice(EXTRAS))
    shape = formats[0] if len(formats) == 1 else r.choices(formats, [f.weight for f in formats])[0]
    examples = [f"    {shape.heading}"] if shape.heading else []
    for _ in range(r.randint(1, 3)):
        inputs = task.example(r)
        call, value = f"{task.name}({', '.join(map(repr, inputs))})", task.solve(*inputs)
        named = ", ".join(f"{renames[a]} = {v!r}" for (a, _), v in zip(task.args, inputs))
        if value is None and shape is DOCTEST:  # the interpreter prints nothing for None, so the example says so
            call, value = f"{call} is None", True
        examples.append("    " + shape.entry.format(call=call, value=repr(value), inputs=named))
    imports = sorted({name for name in TYPING_NAMES if not modern and f"{name}[" in args + task.returns})
    header = f"from typing import {', '.join(imports)}\n\n\n" if imports else "\n\n"
    body = f'    """{doc}\n' + "\n".join(examples) + '\n    """\n'
    return STUB_TEMPLATE.format(code=f"{header}def {task.name}({args}) -> {hint(task.returns, modern)}:\n{body}")


def base_name(name: str) -> str:
    """A task's name without the constant k that some names end in (`window_spreads_6` -> `window_spreads`)."""
    return re.sub(r"_\d+$", "", name)


def functions_in(texts: Iterable[str], families: str) -> frozenset[str]:
    """The base names of the `families` tasks (any k) whose function some text in `texts` asks for.

    A prompt names its function as `name(` (a stub or a signature) or as `` `name` `` (a plain
    request, "a Python function called `name`"); both count.
    """
    joined = "\n".join(texts)
    return frozenset(base_name(t.name) for k in range(2, 8) for t in tasks_of(families, k)
                     if re.search(rf"\b{re.escape(t.name)}\(|`{re.escape(t.name)}`", joined))


def build_tasks(count: int, seed: int, id_prefix: str = "task-", families: str = "old",
                skip: frozenset[str] = frozenset(), skip_functions: frozenset[str] = frozenset()) -> list[dict]:
    """`count` distinct prompts (fewer if the grammar runs dry), ids `<id_prefix><n>`, kind "code".

    Prompts whose text is in `skip` (an earlier file's) are drawn again instead. Tasks whose base
    name is in `skip_functions` are left out of the catalogue for every k, so a held-out set's
    functions stay unseen; with none left out the draws are exactly those of the earlier files.

    `families` picks the catalogue (see FAMILIES). The first file's families alone keep their `>>>`
    examples, so seed 0 still writes data/task_prompts.jsonl byte for byte; the others mix formats.
    """
    if count < 1:
        raise D3DError(f"count must be at least 1, got {count}")
    catalogues = {k: [t for t in tasks_of(families, k) if base_name(t.name) not in skip_functions]
                  for k in range(2, 8)}  # built once; an unknown name fails here
    if not all(catalogues.values()):
        raise D3DError(f"no {families} task is left once the held-out functions are left out")
    formats = (DOCTEST,) if families == "old" else EXAMPLE_FORMATS
    r = random.Random(seed)
    rows, seen, tries = [], set(), 0
    while len(rows) < count and tries < count * 20:
        tries += 1
        task = r.choice(catalogues[r.randint(2, 7)])
        text = render(task, r, formats)
        if text not in seen and text not in skip:
            seen.add(text)
            rows.append({"id": f"{id_prefix}{len(rows)}", "kind": "code", "prompt": text})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSONL prompt file to write")
    parser.add_argument("--count", type=int, default=6000, help="number of prompts")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (the same seed gives the same file)")
    parser.add_argument("--families", choices=FAMILIES, default="old",
                        help="task families: old (the first file's, `>>>` examples only), new (task_families.py), "
                             "all (old and new), third (task_families3.py), every (those three), fourth "
                             "(task_families4.py), fifth (task_families5.py), sixth (task_families6.py), seventh "
                             "(task_families7.py), eighth (task_families8.py), ninth (task_families9.py) or tenth "
                             "(task_families10.py); all but old mix HumanEval's example formats")
    parser.add_argument("--id-prefix", default=None,
                        help="id prefix, to keep several files' ids apart (default: task- for --families old, "
                             "task2- otherwise)")
    parser.add_argument("--skip-texts", type=Path, action="append", default=[], metavar="FILE",
                        help="leave out prompts whose exact text is in this JSONL file of {prompt} rows (repeatable)")
    parser.add_argument("--skip-functions", type=Path, action="append", default=[], metavar="FILE",
                        help="leave out every task whose function a prompt in this JSONL file asks for, for "
                             "every k (a held-out set's functions stay unseen; repeatable)")
    args = parser.parse_args(argv)
    id_prefix = args.id_prefix or ("task-" if args.families == "old" else "task2-")
    try:
        skip = frozenset(r.text for file in args.skip_texts for r in read_prompt_jsonl(file))
        held_out = [r.text for file in args.skip_functions for r in read_prompt_jsonl(file)]
        skip_functions = functions_in(held_out, args.families)
        rows = build_tasks(count=args.count, seed=args.seed, id_prefix=id_prefix, families=args.families, skip=skip,
                           skip_functions=skip_functions)
    except D3DError as e:
        parser.error(str(e))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    skipped = f" ({len(skip)} known texts left out)" if skip else ""
    held = f" ({len(skip_functions)} held-out functions left out)" if held_out else ""
    print(f"wrote {len(rows)} prompts to {args.out}{skipped}{held}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
