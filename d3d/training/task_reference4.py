"""The fourth task families' reference solutions and example generators, and their argument shapes.

`task_families4.py` builds its tasks from what is here, as `task_families3.py` does from
`task_reference3.py`: the argument shapes several families share (SPAN_PAIR, PAIRS, DATE, COMMANDS,
ACTIONS), the tables some solutions read (days per month, postfix operators, weekday names), the
reference solutions too long for a lambda (overlap, islands, rail_fence, next_day, browse,
evaluate_postfix, surviving_asteroids, round_robin, persistence ...) and the seeded example
generators (toeplitz, changed_sometimes, a_date, balanced_brackets, postfix_tokens, push_pop ...: each
takes the `random.Random` the task draws from and only draws from it). The module knows nothing about
tasks, rendering or files, so the task files drawn through it regenerate byte for byte. Nothing here
runs on its own: `python -m d3d.training.task_prompts --families fourth` draws tasks built on it.
"""

from __future__ import annotations

import math
import operator
import random
from collections import deque
from itertools import accumulate, groupby

from d3d.training.task_families import WORDS, counts, grid, group_by

SPAN_PAIR = (("first", "Tuple[int, int]"), ("second", "Tuple[int, int]"))
PAIRS = (("pairs", "List[Tuple[str, int]]"),)
DATE = (("day", "int"), ("month", "int"), ("year", "int"))
COMMANDS = (("commands", "List[str]"),)
ACTIONS = (("actions", "List[str]"),)
MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
OPERATIONS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def overlap(first: tuple[int, int], second: tuple[int, int]) -> tuple[int, int] | None:
    low, high = max(first[0], second[0]), min(first[1], second[1])
    return (low, high) if low <= high else None


def most_disjoint(spans: list[tuple[int, int]]) -> int:
    chosen, last = 0, -math.inf
    for start, end in sorted(spans, key=lambda s: s[1]):
        if start > last:
            chosen, last = chosen + 1, end
    return chosen


def islands(cells: list[list[int]]) -> int:
    land, groups = {(i, j) for i, row in enumerate(cells) for j, v in enumerate(row) if v}, 0
    while land:
        groups, todo = groups + 1, [land.pop()]
        while todo:  # take the rest of this group's cells out of `land`
            i, j = todo.pop()
            near = {(i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1)} & land
            land -= near
            todo += near
    return groups


def toeplitz(r: random.Random) -> list[list[int]]:
    """A grid of digits whose every top-left to bottom-right diagonal repeats one value."""
    rows, cols, line = r.randint(2, 4), r.randint(2, 4), grid(r, 1, 8)[0]
    return [line[rows - i: rows - i + cols] for i in range(rows)]


def amounts_by_name(pairs: list[tuple[str, int]]) -> dict[str, list[int]]:
    return {name: [amount for _, amount in group] for name, group in group_by(pairs, lambda p: p[0]).items()}


def changed_sometimes(r: random.Random) -> tuple[dict[str, int], dict[str, int]]:
    """A small dictionary and a copy of it with some keys dropped, some values changed and a key added."""
    before = counts(r, 3, 6)
    after = {key: v + (r.random() < 0.3) for key, v in before.items() if r.random() < 0.85}
    return before, after | ({r.choice(WORDS[6:9]): 1} if r.random() < 0.3 else {})


def runs_of(items: str | list) -> list[tuple]:
    """(item, length) for each run of equal neighbours: a string's characters or a list's elements."""
    return [(x, len(list(run))) for x, run in groupby(items)]


def rail_fence(text: str, rails: int) -> str:
    cycle = 2 * rails - 2
    rows = [min(i % cycle, cycle - i % cycle) for i in range(len(text))]  # 0, 1 ... rails - 1, ... 1, 0, 1 ...
    return "".join(c for level in range(rails) for c, row in zip(text, rows) if row == level)


def repeated_letters(r: random.Random) -> str:
    return "".join(r.choice("abc") * r.randint(1, 4) for _ in range(r.randint(2, 4)))


def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def month_days(month: int, year: int) -> int:
    return 29 if month == 2 and is_leap(year) else MONTH_DAYS[month - 1]


def next_day(day: int, month: int, year: int) -> tuple[int, int, int]:
    return (day + 1, month, year) if day < month_days(month, year) else (1, month % 12 + 1, year + (month == 12))


def minutes_of(time: str) -> int:
    return int(time[:2]) * 60 + int(time[3:])


def hhmm(minutes: int) -> str:
    return f"{minutes // 60 % 24:02d}:{minutes % 60:02d}"


def a_date(r: random.Random) -> tuple[int, int, int]:
    """(day, month, year), the day often the last of its month."""
    month, year = r.randint(1, 12), r.choice((r.randint(1900, 2099), 4 * r.randint(475, 524), 1900, 2000))
    return (r.choice((r.randint(1, 28), month_days(month, year))), month, year)


def time_string(r: random.Random) -> str:
    return f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}"


def depths(text: str) -> list[int]:
    """The running depth of a string of '(' and ')': 1 more after each '(' and 1 less after each ')'."""
    return list(accumulate(1 if c == "(" else -1 for c in text))


def balanced_brackets(r: random.Random, depth: int = 3) -> str:
    return "".join("(" + (balanced_brackets(r, depth - 1) if depth > 1 and r.random() < 0.5 else "") + ")"
                   for _ in range(r.randint(1, 3)))


def browse(actions: list[str]) -> str:
    pages, at = ["home"], 0
    for action in actions:
        if action.startswith("visit "):
            pages, at = pages[: at + 1] + [action[6:]], at + 1
        else:
            at = max(0, at - 1) if action == "back" else min(len(pages) - 1, at + 1)
    return pages[at]


def evaluate_postfix(tokens: list[str]) -> int:
    stack: list[int] = []
    for token in tokens:
        stack = stack[:-2] + [OPERATIONS[token](*stack[-2:])] if token in OPERATIONS else stack + [int(token)]
    return stack[-1]


def postfix_tokens(r: random.Random, size: int) -> list[str]:
    """A postfix expression with `size` numbers from 0 to 9."""
    if size == 1:
        return [str(r.randint(0, 9))]
    left = r.randint(1, size - 1)
    return postfix_tokens(r, left) + postfix_tokens(r, size - left) + [r.choice("+-*")]


def simplify_path(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        parts = parts[:-1] if part == ".." else parts if part in ("", ".") else parts + [part]
    return "/" + "/".join(parts)


def surviving_asteroids(rocks: list[int]) -> list[int]:
    left: list[int] = []
    for rock in rocks:
        while rock < 0 and left and left[-1] > 0:  # a left-flying rock meets the nearest right-flying one
            ahead = left[-1]
            if ahead <= -rock:
                left.pop()
            if ahead >= -rock:
                rock = 0
        if rock:
            left.append(rock)
    return left


def round_robin(durations: list[int], share: int) -> list[int]:
    queue, left, finished = deque(range(len(durations))), list(durations), []
    while queue:
        job = queue.popleft()
        left[job] -= share
        (queue.append if left[job] > 0 else finished.append)(job)
    return finished


def stack_states(commands: list[str], add: str) -> list[list[str]]:
    """The stack after each command: `add` followed by an item puts the item on top, any other command takes
    the top item off (if there is one)."""
    stack: list[str] = []
    states = []
    for command in commands:
        stack = stack + [command[len(add):]] if command.startswith(add) else stack[:-1]
        states.append(stack)
    return states


def push_pop(r: random.Random) -> list[str]:
    return [f"push {r.randint(0, 9)}" if r.random() < 0.6 else "pop" for _ in range(r.randint(2, 7))]


def smallest_from_digits(n: int) -> int:
    digits = sorted(str(n))
    first = next(i for i, d in enumerate(digits) if d != "0")
    return int(digits[first] + "".join(digits[:first] + digits[first + 1:]))


def persistence(n: int) -> int:
    steps = 0
    while n >= 10:
        n, steps = math.prod(map(int, str(n))), steps + 1
    return steps


def squares_chain_reaches_one(n: int) -> bool:
    seen = set()
    while n != 1 and n not in seen:
        seen.add(n)
        n = sum(int(d) ** 2 for d in str(n))
    return n == 1


def number_with_zeros(r: random.Random) -> int:
    return int(r.choice("123456789") + "".join(r.choice("0012345789") for _ in range(r.randint(0, 4))))


def direction_changes(values: list[int]) -> int:
    signs = [(b > a) - (b < a) for a, b in zip(values, values[1:]) if a != b]
    return sum(s != t for s, t in zip(signs, signs[1:]))
