"""The seventh task families' reference solutions and example generators: polynomials to documents.

The first half of what `task_families7.py` builds on (the second half, tokens to tariffs, is in
`task_reference7b.py`): its first five families (polynomials as coefficient lists, fractions as
(numerator, denominator) pairs, integer sequences defined by a rule, board puzzles on rows of
characters, nested dictionaries), with the argument shapes they share (COEFFICIENTS, FRACTION_PAIR,
BOARD, DOCUMENT), the reference solutions too long for a lambda (multiply, polynomial_text,
repeating_decimal, look_and_say, kaprekar_steps, minesweeper, life_step, maze_steps, flatten_dotted,
deep_merge ...) and the seeded example generators (polynomial, fraction, mine_board, maze, document
...: each takes the `random.Random` the task draws from and only draws from it). The module knows
nothing about tasks, rendering or files, so the task files drawn through it regenerate byte for
byte. Nothing here runs on its own: `python -m d3d.training.task_prompts --families seventh` draws
tasks built on it.
"""

from __future__ import annotations

import random
from collections import deque
from fractions import Fraction

from d3d.training.task_families import grid

COEFFICIENTS = (("coefficients", "List[int]"),)
TWO_POLYNOMIALS = (("first", "List[int]"), ("second", "List[int]"))
FRACTION_PAIR = (("a", "Tuple[int, int]"), ("b", "Tuple[int, int]"))
BOARD = (("board", "List[str]"),)
DOCUMENT = (("data", "dict"),)
KEYS = ("a", "b", "c", "id", "size", "x", "y")
STEPS = ((0, 1), (1, 0), (0, -1), (-1, 0))


def trimmed(coefficients: list[int]) -> list[int]:
    """The coefficients without zeros at the high end; [0] for the zero polynomial."""
    out = list(coefficients)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return out or [0]


def evaluate(coefficients: list[int], x: int) -> int:
    value = 0
    for c in reversed(coefficients):
        value = value * x + c
    return value


def add_polynomials(first: list[int], second: list[int]) -> list[int]:
    size = max(len(first), len(second))
    return trimmed([(first[i] if i < len(first) else 0) + (second[i] if i < len(second) else 0)
                    for i in range(size)])


def multiply(first: list[int], second: list[int]) -> list[int]:
    out = [0] * (len(first) + len(second) - 1)
    for i, a in enumerate(first):
        for j, b in enumerate(second):
            out[i + j] += a * b
    return trimmed(out)


def power(coefficients: list[int], exponent: int) -> list[int]:
    out = [1]
    for _ in range(exponent):
        out = multiply(out, coefficients)
    return out


def shifted(coefficients: list[int], by: int) -> list[int]:
    """The coefficients of p(x + by)."""
    out = [0]
    for c in reversed(coefficients):
        out = add_polynomials(multiply(out, [by, 1]), [c])
    return out


def polynomial_text(coefficients: list[int]) -> str:
    terms = [(c, i) for i, c in enumerate(coefficients) if c][::-1]
    if not terms:
        return "0"
    text = ""
    for c, i in terms:
        size = "" if abs(c) == 1 and i else str(abs(c))
        power = "" if i == 0 else "x" if i == 1 else f"x^{i}"
        sign = ("-" if c < 0 else "") if not text else (" - " if c < 0 else " + ")
        text += sign + size + power
    return text


def divide_by_root(coefficients: list[int], root: int) -> tuple[list[int], int]:
    """Synthetic division by (x - root): (quotient, remainder)."""
    carry, out = 0, []
    for c in reversed(coefficients):
        carry = carry * root + c
        out.append(carry)
    return trimmed(out[-2::-1]) if len(out) > 1 else [0], out[-1]


def sign_changes(coefficients: list[int]) -> int:
    signs = [c > 0 for c in coefficients if c]
    return sum(a != b for a, b in zip(signs, signs[1:]))


def polynomial(r: random.Random, low: int = 1, high: int = 4) -> list[int]:
    return [r.randint(-5, 5) for _ in range(r.randint(low, high))]


def with_roots(r: random.Random) -> list[int]:
    """A polynomial with a few small integer roots, sometimes times an extra factor without one."""
    out = [r.choice((1, -1, 2))]
    for _ in range(r.randint(1, 3)):
        out = multiply(out, [-r.randint(-4, 4), 1])
    return multiply(out, [1, 0, 1]) if r.random() < 0.3 else out


def lowest_terms(numerator: int, denominator: int) -> tuple[int, int]:
    value = Fraction(numerator, denominator)
    return value.numerator, value.denominator


def fraction(r: random.Random, low: int = -9) -> tuple[int, int]:
    return r.randint(low, 9), r.randint(1, 12)


def scaled_fraction(r: random.Random) -> tuple[int, int]:
    """A fraction not in lowest terms, its denominator sometimes negative."""
    m = r.randint(1, 4)
    return m * r.randint(-9, 9), m * r.choice((-1, 1)) * r.randint(1, 9)


def proper_fraction(r: random.Random) -> tuple[int, int]:
    denominator = r.randint(2, 12)
    return r.randint(1, denominator - 1), denominator


def egyptian(numerator: int, denominator: int) -> list[int]:
    out, rest = [], Fraction(numerator, denominator)
    while rest:
        unit = -(-rest.denominator // rest.numerator)
        out.append(unit)
        rest -= Fraction(1, unit)
    return out


def continued_fraction(numerator: int, denominator: int) -> list[int]:
    terms = []
    while denominator:
        terms.append(numerator // denominator)
        numerator, denominator = denominator, numerator % denominator
    return terms


def from_terms(terms: list[int]) -> tuple[int, int]:
    value = Fraction(terms[-1])
    for t in reversed(terms[:-1]):
        value = t + 1 / value
    return value.numerator, value.denominator


def repeating_decimal(numerator: int, denominator: int) -> str:
    whole, rest = divmod(numerator, denominator)
    digits, seen = "", {}
    while rest and rest not in seen:
        seen[rest] = len(digits)
        digit, rest = divmod(10 * rest, denominator)
        digits += str(digit)
    if not rest:
        return f"{whole}.{digits}" if digits else str(whole)
    start = seen[rest]
    return f"{whole}.{digits[:start]}({digits[start:]})"


def look_and_say(digits: str) -> str:
    out, i = "", 0
    while i < len(digits):
        j = i
        while j < len(digits) and digits[j] == digits[i]:
            j += 1
        out += f"{j - i}{digits[i]}"
        i = j
    return out


def recaman(n: int) -> list[int]:
    terms = [0]
    for i in range(1, n):
        back = terms[-1] - i
        terms.append(back if back > 0 and back not in terms else terms[-1] + i)
    return terms[:n]


def van_eck(n: int) -> list[int]:
    terms = [0]
    while len(terms) < n:
        last = terms[-1]
        earlier = [i for i in range(len(terms) - 1) if terms[i] == last]
        terms.append(len(terms) - 1 - earlier[-1] if earlier else 0)
    return terms[:n]


def kaprekar_steps(n: int) -> int:
    steps = 0
    while n != 6174:
        digits = sorted(f"{n:04d}")
        n, steps = int("".join(reversed(digits))) - int("".join(digits)), steps + 1
    return steps


def four_digits(r: random.Random) -> int:
    while True:
        n = r.randint(1000, 9999)
        if len(set(str(n))) > 1:
            return n


def summing_previous(n: int, count: int) -> int:
    terms = [1] * count
    while len(terms) < n:
        terms.append(sum(terms[-count:]))
    return terms[n - 1]


def padovan(n: int) -> int:
    terms = [1, 1, 1]
    while len(terms) <= n:
        terms.append(terms[-2] + terms[-3])
    return terms[n]


def stern(n: int) -> int:
    a, b = 1, 0
    while n:
        a, b = (a + b, b) if n % 2 == 0 else (a, a + b)
        n //= 2
    return b


def triangular_root(n: int) -> int:
    i = 0
    while i * (i + 1) // 2 < n:
        i += 1
    return i if i * (i + 1) // 2 == n else -1


def hailstone_peak(n: int) -> int:
    peak = n
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        peak = max(peak, n)
    return peak


def neighbours(board: list[str], row: int, col: int, diagonal: bool = True):
    """The (row, col) cells next to a cell, inside the board."""
    steps = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1) if (a, b) != (0, 0)] if diagonal else STEPS
    for a, b in steps:
        if 0 <= row + a < len(board) and 0 <= col + b < len(board[0]):
            yield row + a, col + b


def minesweeper(board: list[str]) -> list[str]:
    return ["".join("*" if c == "*" else str(sum(board[a][b] == "*" for a, b in neighbours(board, i, j)))
                    for j, c in enumerate(line)) for i, line in enumerate(board)]


def life_step(board: list[str]) -> list[str]:
    def alive(i: int, j: int) -> bool:
        n = sum(board[a][b] == "#" for a, b in neighbours(board, i, j))
        return n == 3 or (n == 2 and board[i][j] == "#")

    return ["".join("#" if alive(i, j) else "." for j in range(len(line))) for i, line in enumerate(board)]


def region_size(board: list[str], row: int, col: int) -> int:
    seen, todo = {(row, col)}, [(row, col)]
    while todo:
        cell = todo.pop()
        for nxt in neighbours(board, *cell, diagonal=False):
            if nxt not in seen and board[nxt[0]][nxt[1]] == board[row][col]:
                seen.add(nxt)
                todo.append(nxt)
    return len(seen)


def maze_steps(maze: list[str]) -> int:
    start = next((i, line.index("S")) for i, line in enumerate(maze) if "S" in line)
    dist, todo = {start: 0}, deque([start])
    while todo:
        cell = todo.popleft()
        if maze[cell[0]][cell[1]] == "E":
            return dist[cell]
        for nxt in neighbours(maze, *cell, diagonal=False):
            if nxt not in dist and maze[nxt[0]][nxt[1]] != "#":
                dist[nxt] = dist[cell] + 1
                todo.append(nxt)
    return -1


def cheapest_path(grid: list[list[int]]) -> int:
    best = [row[:] for row in grid]
    for i, row in enumerate(grid):
        for j in range(len(row)):
            before = [best[i - 1][j]] * (i > 0) + [best[i][j - 1]] * (j > 0)
            best[i][j] += min(before, default=0)
    return best[-1][-1]


def cost_grid(r: random.Random) -> list[list[int]]:
    return grid(r, r.randint(1, 4), r.randint(1, 4))


def queens_safe(queens: list[tuple[int, int]]) -> bool:
    return all(a[0] != b[0] and a[1] != b[1] and abs(a[0] - b[0]) != abs(a[1] - b[1])
               for i, a in enumerate(queens) for b in queens[i + 1:])


def settle(board: list[str]) -> list[str]:
    columns = ["".join(line[j] for line in board) for j in range(len(board[0]))]
    dropped = ["." * col.count(".") + col.replace(".", "") for col in columns]
    return ["".join(col[i] for col in dropped) for i in range(len(board))]


def word_in_grid(grid: list[str], word: str) -> bool:
    columns = ["".join(line[j] for line in grid) for j in range(len(grid[0]))]
    return any(word in line for line in grid + columns)


def board_of(r: random.Random, cells: str, rows: int = 0, cols: int = 0) -> list[str]:
    rows, cols = rows or r.randint(2, 4), cols or r.randint(2, 5)
    return ["".join(r.choice(cells) for _ in range(cols)) for _ in range(rows)]


def maze(r: random.Random) -> list[str]:
    rows = [list(line) for line in board_of(r, "...#", r.randint(3, 5), r.randint(3, 5))]
    cells = r.sample([(i, j) for i in range(len(rows)) for j in range(len(rows[0]))], 2)
    for (i, j), mark in zip(cells, "SE"):
        rows[i][j] = mark
    return ["".join(line) for line in rows]


def letter_grid(r: random.Random) -> tuple[list[str], str]:
    grid = board_of(r, "abcdeo", 3, 4)
    if r.random() < 0.5:
        return grid, r.choice(("ab", "cab", "bad", "odd", "dec"))
    line = r.choice(grid + ["".join(row[j] for row in grid) for j in range(4)])
    start = r.randint(0, len(line) - 2)
    return grid, line[start: start + r.randint(2, 3)]


def queens(r: random.Random) -> list[tuple[int, int]]:
    return [(i, r.randint(0, 7)) for i in r.sample(range(8), r.randint(2, 4))]


def flatten_dotted(data: dict, prefix: str = "") -> dict[str, int]:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(flatten_dotted(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def unflatten_dotted(flat: dict[str, int]) -> dict:
    out: dict = {}
    for path, value in flat.items():
        *parents, last = path.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = deep_merge(out[key], value) if both else value
    return out


def dict_depth(data: dict) -> int:
    return 1 + max((dict_depth(v) for v in data.values() if isinstance(v, dict)), default=0)


def map_leaves(data: dict, change) -> dict:
    return {k: map_leaves(v, change) if isinstance(v, dict) else change(v) for k, v in data.items()}


def prune_empty(data: dict) -> dict:
    out = {}
    for key, value in data.items():
        value = prune_empty(value) if isinstance(value, dict) else value
        if value != {}:
            out[key] = value
    return out


def rename_key(data: dict, old: str, new: str) -> dict:
    return {(new if k == old else k): rename_key(v, old, new) if isinstance(v, dict) else v for k, v in data.items()}


def largest_leaf_path(data: dict) -> str:
    flat = flatten_dotted(data)
    return max(flat, key=lambda path: (flat[path], -list(flat).index(path)))


def document(r: random.Random, depth: int = 3, empty: bool = False) -> dict:
    """Nested dictionaries with small whole numbers at the bottom (and sometimes empty dictionaries)."""
    out = {}
    for key in r.sample(KEYS, r.randint(1, 3)):
        if depth > 1 and r.random() < 0.45:
            out[key] = {} if empty and r.random() < 0.3 else document(r, depth - 1, empty)
        else:
            out[key] = r.randint(0, 9)
    return out


def two_documents(r: random.Random) -> tuple[dict, dict]:
    base = document(r)
    override = {key: document(r, 2) if isinstance(value, dict) and r.random() < 0.6 else r.randint(0, 9)
                for key, value in base.items() if r.random() < 0.6}
    return base, override or {r.choice(KEYS): r.randint(0, 9)}
