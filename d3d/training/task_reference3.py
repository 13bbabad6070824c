"""The third task families' reference solutions and example generators, and their argument shapes.

`task_families3.py` builds its tasks (a name, a description, a reference solution and an example
generator each) from what is here: the argument shapes several families share (N, TWO_LISTS,
NESTED), the tables some solutions read (Roman numerals, digit names, words of every length), the
reference solutions too long for a lambda (to_roman ... change_ways) and the seeded example
generators that make a task's examples informative (nested_list ... balanced_halves: each takes the
`random.Random` the task draws from and only draws from it). `task_families4.py` builds on some of
them too. The module knows nothing about tasks, rendering or files; the solutions are pure and the
generators draw only from the generator they are handed, so the task files drawn through them
regenerate byte for byte. Nothing here runs on its own: `python -m d3d.training.task_prompts
--families third` draws tasks built on it.
"""

from __future__ import annotations

import random

from d3d.training.task_families import int_list

N = (("n", "int"),)
TWO_LISTS = (("left", "List[int]"), ("right", "List[int]"))
NESTED = (("nested", "list"),)
ROMAN = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
         (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))
DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
MIXED_WORDS = ("a", "be", "go", "cat", "sun", "blue", "fish", "happy", "green", "little", "summer", "weather",
               "journey", "elephant", "of", "rain")  # every length from 1 to 8, so any k finds some


def to_roman(n: int) -> str:
    numeral = ""
    for value, letters in ROMAN:
        times, n = divmod(n, value)
        numeral += letters * times
    return numeral


def roman_to_int(numeral: str) -> int:
    values = dict(zip("IVXLCDM", (1, 5, 10, 50, 100, 500, 1000)))
    return sum(-values[a] if values.get(b, 0) > values[a] else values[a] for a, b in zip(numeral, numeral[1:] + " "))


def in_base(n: int, base: int) -> str:
    digits = ""
    while True:
        n, d = divmod(n, base)
        digits = str(d) + digits
        if n == 0:
            return digits


def proper_divisors(n: int) -> list[int]:
    return [d for d in range(1, n) if n % d == 0]


def divisor_kind(n: int) -> str:
    total = sum(proper_divisors(n))
    return "perfect" if total == n else "abundant" if total > n else "deficient"


def expand_ranges(text: str) -> list[int]:
    numbers: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        numbers += range(int(low), int(high or low) + 1)
    return numbers


def looks_like_email(text: str) -> bool:
    local, _, domain = text.partition("@")
    return text.count("@") == 1 and local != "" and "." in domain and domain[0] != "." and domain[-1] != "."


def typed_text(keys: str) -> str:
    typed: list[str] = []
    for key in keys:
        if key != "#":
            typed.append(key)
        elif typed:
            typed.pop()
    return "".join(typed)


def run_commands(commands: list[str], take_first: bool) -> list[int]:
    """A stack (take_first False: 'push x' / 'pop') or a queue (True: 'enqueue x' / 'dequeue')."""
    items: list[int] = []
    for command in commands:
        if " " in command:
            items.append(int(command.split()[1]))
        elif items:
            items.pop(0 if take_first else -1)
    return items


def robot_position(moves: str) -> tuple[int, int]:
    return (moves.count("R") - moves.count("L"), moves.count("U") - moves.count("D"))


def apply_orders(stock: dict[str, int], orders: list[tuple[str, int]]) -> dict[str, int]:
    stock = dict(stock)
    for item, amount in orders:
        stock[item] = stock.get(item, 0) + amount
    return stock


def run_counter(operations: list[str]) -> int:
    value = 0
    for op in operations:
        value = value + 1 if op == "inc" else value - 1 if op == "dec" else value * 2
    return value


def josephus(n: int, step: int) -> int:
    people, i = list(range(1, n + 1)), 0
    while len(people) > 1:
        i = (i + step - 1) % len(people)
        people.pop(i)
    return people[0]


def nesting_depth(nested: list) -> int:
    return 1 + max((nesting_depth(x) for x in nested if isinstance(x, list)), default=0)


def flatten(nested: list) -> list[int]:
    return [y for x in nested for y in (flatten(x) if isinstance(x, list) else [x])]


def is_mountain(v: list[int]) -> bool:
    top = v.index(max(v))
    return (0 < top < len(v) - 1 and all(a < b for a, b in zip(v[:top], v[1:top + 1]))
            and all(a > b for a, b in zip(v[top:], v[top + 1:])))


def is_zigzag(v: list[int]) -> bool:
    steps = [b - a for a, b in zip(v, v[1:])]
    return all(steps) and all(s * t < 0 for s, t in zip(steps, steps[1:]))


def ordinal(n: int) -> str:
    return f"{n}{'th' if n % 100 in (11, 12, 13) else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def clock(seconds: int) -> str:
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"


def stair_climbs(n: int, longest: int) -> int:
    ways = [1] + [0] * n
    for i in range(1, n + 1):
        ways[i] = sum(ways[i - s] for s in range(1, min(longest, i) + 1))
    return ways[n]


def change_ways(amount: int, coins: tuple[int, ...]) -> int:
    ways = [1] + [0] * amount
    for coin in coins:
        for total in range(coin, amount + 1):
            ways[total] += ways[total - coin]
    return ways[amount]


def nested_list(r: random.Random, depth: int = 3) -> list:
    """1 to 4 digits and lists, the lists nested up to `depth` levels in all."""
    return [nested_list(r, depth - 1) if depth > 1 and r.random() < 0.35 else r.randint(0, 9)
            for _ in range(r.randint(1, 4))]


def piece_sizes(r: random.Random, total: int) -> list[int]:
    """1 to 4 positive sizes that add up to `total`."""
    cuts = [0] + sorted(r.sample(range(1, total), r.randint(0, min(3, total - 1)))) + [total]
    return [b - a for a, b in zip(cuts, cuts[1:])]


def sometimes(r: random.Random, made: list, otherwise: list) -> list:
    """`made` (a list built to have some property) half of the time, `otherwise` the other half."""
    return made if r.random() < 0.5 else otherwise


def runs(r: random.Random, k: int) -> list[int]:
    """2 to 4 runs of equal values, neighbouring runs different, shorter than k but one k long half of the time."""
    lengths = [r.randint(1, k - 1) for _ in range(r.randint(2, 4))]
    if r.random() < 0.5:
        lengths[r.randrange(len(lengths))] = k
    values = [r.randint(0, 3)]
    for _ in lengths[1:]:
        values.append(r.choice([x for x in range(4) if x != values[-1]]))
    return [x for x, n in zip(values, lengths) for _ in range(n)]


def broken_sometimes(r: random.Random, text: str, alphabet: str) -> str:
    """`text`, or half of the time `text` with a character dropped, added (from `alphabet`) or replaced."""
    i, c = r.randrange(len(text)), r.choice(alphabet)
    return r.choice((text, text, text[:i] + text[i + 1:], text[:i] + c + text[i:], text[:i] + c + text[i + 1:]))


def with_repeats(r: random.Random, times: int) -> list[int]:
    """A shuffled list of digits in which one occurs `times` times (70% of the time; else once) among 2 to 5 others."""
    value = r.randint(0, 9)
    values = [value] * (times if r.random() < 0.7 else 1) + [r.choice([d for d in range(10) if d != value])
                                                             for _ in range(r.randint(2, 5))]
    return r.sample(values, len(values))


def mountain_sometimes(r: random.Random) -> list[int]:
    """Distinct values rising to their largest and falling again; the top is sometimes at an end, or two swapped."""
    values = r.sample(range(20), r.randint(3, 7))
    rest, top = sorted(values)[:-1], max(values)
    r.shuffle(rest)
    cut = r.randint(0, len(rest))
    order = sorted(rest[:cut]) + [top] + sorted(rest[cut:], reverse=True)
    if r.random() < 0.25:
        i = r.randrange(len(order) - 1)
        order[i], order[i + 1] = order[i + 1], order[i]
    return order


def balanced_halves(r: random.Random) -> list[int]:
    """A list whose second half is the first shuffled, with a middle element now and then."""
    half = int_list(r, 0, 9)[:3]
    return half + [r.randint(0, 9)] * r.randint(0, 1) + r.sample(half, len(half))
