"""The ninth task families' reference solutions and example generators: relations to figurate numbers.

The first half of what `task_families9.py` builds on (the second half, modular arithmetic to signals,
is in `task_reference9b.py`): its first five families (binary relations as lists of pairs, boolean
formulas and clauses, sparse vectors and matrices as dictionaries, the structure of a single string,
figurate numbers), with the argument shapes they share (RELATION, FORMULA, CLAUSES, VECTOR, MATRIX,
WORD), the reference solutions too long for a lambda (transitive_closure, equivalence_classes,
truth_values, pure_literals, add_sparse, prefix_function, z_function, lyndon_factorization ...) and
the seeded example generators (relation, formula, clauses, sparse_vector, sparse_matrix, word ...:
each takes the `random.Random` the task draws from and only draws from it). The module knows nothing
about tasks, rendering or files, so the task files drawn through it regenerate byte for byte. Nothing
here runs on its own: `python -m d3d.training.task_prompts --families ninth` draws tasks built on it.
"""

from __future__ import annotations

import random
from itertools import product

from d3d.training.task_families import Task  # noqa: F401  (imports run one way: this module sits below task_prompts)

RELATION = (("pairs", "List[Tuple[int, int]]"),)
FORMULA = (("formula", "str"),)
CLAUSES = (("clauses", "List[List[int]]"),)
VECTOR = (("vector", "Dict[int, int]"),)
TWO_VECTORS = (("first", "Dict[int, int]"), ("second", "Dict[int, int]"))
MATRIX = (("matrix", "Dict[Tuple[int, int], int]"),)
WORD = (("word", "str"),)
VARIABLES = "pqr"


# relations


def relation(r: random.Random, n: int = 0, low: int = 1, high: int = 5) -> list[tuple[int, int]]:
    """A few distinct pairs of numbers below n (2 to 4 when not given), sorted."""
    n = n or r.randint(2, 4)
    return sorted({(r.randrange(n), r.randrange(n)) for _ in range(r.randint(low, high))})


def relation_on_set(r: random.Random) -> tuple[list[tuple[int, int]], int]:
    """A relation on 0 .. n-1 that holds every (i, i) half of the time."""
    n = r.randint(2, 4)
    pairs = relation(r, n, 0, 4)
    if r.random() < 0.5:
        pairs = sorted(set(pairs) | {(i, i) for i in range(n)})
    return pairs, n


def symmetric_or_not(r: random.Random) -> tuple[list[tuple[int, int]]]:
    pairs = relation(r, 0, 2, 5)
    return (sorted(set(pairs) | {(b, a) for a, b in pairs}) if r.random() < 0.5 else pairs,)


def antisymmetric_or_not(r: random.Random) -> tuple[list[tuple[int, int]]]:
    pairs = relation(r, 0, 2, 5)
    if r.random() < 0.5:
        return (sorted({(min(a, b), max(a, b)) for a, b in pairs}),)
    a, b = r.sample(range(3), 2)
    return (sorted(set(pairs) | {(a, b), (b, a)}),)


def transitive_or_not(r: random.Random) -> tuple[list[tuple[int, int]]]:
    pairs = relation(r, 0, 2, 4)
    if r.random() < 0.5:
        return (transitive_closure(pairs),)
    a, b, c = r.sample(range(4), 3)  # a chain from a to c without its shortcut
    return (sorted((set(pairs) | {(a, b), (b, c)}) - {(a, c)}),)


def functional_or_not(r: random.Random) -> tuple[list[tuple[int, int]]]:
    if r.random() < 0.5:
        n = r.randint(2, 4)
        return (sorted((a, r.randrange(n)) for a in r.sample(range(n), r.randint(1, n))),)
    a, b, c = r.randrange(3), *r.sample(range(3), 2)  # one first number with two second numbers
    return (sorted(set(relation(r, 3, 0, 3)) | {(a, b), (a, c)}),)


def compose(first: list[tuple[int, int]], second: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pairs (a, c) with (a, b) in first and (b, c) in second, sorted and once each."""
    return sorted({(a, c) for a, b in first for b2, c in second if b == b2})


def transitive_closure(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    closure = set(pairs)
    while True:
        grown = closure | set(compose(sorted(closure), sorted(closure)))
        if grown == closure:
            return sorted(closure)
        closure = grown


def is_transitive(pairs: list[tuple[int, int]]) -> bool:
    return set(compose(pairs, pairs)) <= set(pairs)


def relation_power(pairs: list[tuple[int, int]], times: int) -> list[tuple[int, int]]:
    out = sorted(set(pairs))
    for _ in range(times - 1):
        out = compose(out, pairs)
    return out


def equivalence_classes(pairs: list[tuple[int, int]], n: int) -> list[list[int]]:
    """The classes of the smallest equivalence relation on 0 .. n-1 holding the pairs."""
    label = list(range(n))
    for a, b in pairs:
        old, new = label[a], label[b]
        label = [new if x == old else x for x in label]
    classes: dict[int, list[int]] = {}
    for i, x in enumerate(label):
        classes.setdefault(x, []).append(i)
    return sorted(classes.values())


def relation_and_size(r: random.Random) -> tuple[list[tuple[int, int]], int]:
    n = r.randint(3, 6)
    return relation(r, n, 1, 4), n


# logic


def formula(r: random.Random, depth: int = 2, top: bool = True) -> str:
    """A formula over p, q and r with 'and', 'or', 'not' and parentheses; at the top always two parts."""
    if depth == 0 or (not top and r.random() < 0.35):
        return ("not " if r.random() < 0.3 else "") + r.choice(VARIABLES)
    parts = [formula(r, depth - 1, False) for _ in range(2)]
    if parts[0][-1] == parts[1][-1] and len(parts[0]) < 6 and len(parts[1]) < 6:  # two atoms of one variable
        parts[1] = parts[1][:-1] + r.choice(VARIABLES.replace(parts[0][-1], ""))
    parts = [f"({p})" if (" and " in p or " or " in p) and not p.startswith("not (") else p for p in parts]
    text = f" {r.choice(('and', 'or'))} ".join(parts)
    return text if top or r.random() < 0.7 else f"not ({text})"


def truth_value(text: str, true_variables: str) -> bool:
    """The formula's value with the listed variables True and the others False."""
    return bool(eval(text, {"__builtins__": {}}, {v: v in true_variables for v in VARIABLES}))  # noqa: S307


def truth_values(text: str) -> list[bool]:
    """The formula's values for (p, q, r) from (False, False, False) to (True, True, True), r fastest."""
    return [truth_value(text, "".join(v for v, on in zip(VARIABLES, row) if on))
            for row in product((False, True), repeat=3)]


def tautology_or_not(r: random.Random) -> tuple[str]:
    part = formula(r, 1)
    choice = r.randrange(4)
    if choice == 0:
        return (f"({part}) or not ({part})",)
    if choice == 1:
        v = r.choice(VARIABLES)
        return (f"{v} or not {v} and {r.choice(VARIABLES)}" if r.random() < 0.5 else f"not {v} or {v}",)
    return (formula(r),)


def clauses(r: random.Random, variables: int) -> list[list[int]]:
    return [[r.choice((1, -1)) * v for v in r.sample(range(1, variables + 1), r.randint(1, min(3, variables)))]
            for _ in range(r.randint(1, 3))]


def clauses_and_assignment(r: random.Random) -> tuple[list[list[int]], list[bool]]:
    n = r.randint(2, 4)
    return clauses(r, n), [r.random() < 0.5 for _ in range(n)]


def clause_true(clause: list[int], assignment: list[bool]) -> bool:
    return any(assignment[abs(x) - 1] == (x > 0) for x in clause)


def pure_literals(cnf: list[list[int]]) -> list[int]:
    seen = {x for clause in cnf for x in clause}
    return sorted((x for x in seen if -x not in seen), key=abs)


# sparse vectors and matrices


def sparse_vector(r: random.Random, length: int = 6, most: int = 4) -> dict[int, int]:
    """Entries at 1 to `most` of the indices below `length`, each a value from -9 to 9 other than 0."""
    return {i: r.choice((-1, 1)) * r.randint(1, 9) for i in sorted(r.sample(range(length), r.randint(1, most)))}


def two_vectors(r: random.Random) -> tuple[dict[int, int], dict[int, int]]:
    first = sparse_vector(r)
    second = sparse_vector(r)
    if r.random() < 0.4:  # entries that cancel
        for i in list(first)[: r.randint(1, 2)]:
            second[i] = -first[i]
        second = dict(sorted(second.items()))
    return first, second


def add_sparse(first: dict[int, int], second: dict[int, int]) -> dict[int, int]:
    total = {i: first.get(i, 0) + second.get(i, 0) for i in sorted(set(first) | set(second))}
    return {i: v for i, v in total.items() if v}


def vector_and_length(r: random.Random) -> tuple[dict[int, int], int]:
    vector = sparse_vector(r, 6, 3)
    return vector, max(vector) + 1 + r.randint(0, 2)


def sparse_matrix(r: random.Random, rows: int = 3, cols: int = 3) -> dict[tuple[int, int], int]:
    cells = sorted(r.sample([(i, j) for i in range(rows) for j in range(cols)], r.randint(1, min(5, rows * cols))))
    return {cell: r.choice((-1, 1)) * r.randint(1, 9) for cell in cells}


def matrix_and_vector(r: random.Random) -> tuple[dict[tuple[int, int], int], list[int]]:
    n = r.randint(2, 4)
    return sparse_matrix(r, n, n), [r.randint(-3, 5) for _ in range(n)]


def matrix_and_shape(r: random.Random) -> tuple[dict[tuple[int, int], int], int, int]:
    rows, cols = r.randint(2, 3), r.randint(2, 4)
    return sparse_matrix(r, rows, cols), rows, cols


def times_vector(matrix: dict[tuple[int, int], int], vector: list[int]) -> list[int]:
    out = [0] * len(vector)
    for (i, j), value in matrix.items():
        out[i] += value * vector[j]
    return out


def sparse_row_sums(matrix: dict[tuple[int, int], int]) -> dict[int, int]:
    sums: dict[int, int] = {}
    for (i, _), value in sorted(matrix.items()):
        sums[i] = sums.get(i, 0) + value
    return sums


# the structure of one string


def word(r: random.Random, low: int = 2, high: int = 9, letters: str = "aab") -> str:
    return "".join(r.choice(letters) for _ in range(r.randint(low, high)))


def periodic_word(r: random.Random, low: int = 3, high: int = 10) -> str:
    """A block repeated (and cut) to a length from low to high, one letter changed now and then."""
    block = word(r, 1, 4, "abc")
    text = (block * high)[: r.randint(low, high)]
    if r.random() < 0.3:
        i = r.randrange(len(text))
        text = text[:i] + "d" + text[i + 1:]
    return text


def prefix_function(text: str) -> list[int]:
    """pi[i]: the longest proper prefix of text[:i + 1] that is also its suffix."""
    pi = [0] * len(text)
    for i in range(1, len(text)):
        j = pi[i - 1]
        while j and text[i] != text[j]:
            j = pi[j - 1]
        pi[i] = j + (text[i] == text[j])
    return pi


def z_function(text: str) -> list[int]:
    """z[i]: the length of the longest common prefix of text and text[i:] (z[0] is the length)."""
    out = []
    for i in range(len(text)):
        n = 0
        while i + n < len(text) and text[n] == text[i + n]:
            n += 1
        out.append(n)
    return out


def smallest_period(text: str) -> int:
    return next(p for p in range(1, len(text) + 1) if all(text[i] == text[i + p] for i in range(len(text) - p)))


def least_rotation(text: str) -> str:
    return min(text[i:] + text[:i] for i in range(len(text))) if text else ""


def is_lyndon(text: str) -> bool:
    return bool(text) and all(text < text[i:] + text[:i] for i in range(1, len(text)))


def lyndon_or_not(r: random.Random) -> tuple[str]:
    text = word(r, 2, 7, "ab")
    return (least_rotation(text) if r.random() < 0.5 else text,)


def lyndon_factorization(text: str) -> list[str]:
    """Duval's algorithm: the factors, each a Lyndon word, none smaller than the next."""
    out, i = [], 0
    while i < len(text):
        j, k = i + 1, i
        while j < len(text) and text[k] <= text[j]:
            k = i if text[k] < text[j] else k + 1
            j += 1
        while i <= k:
            out.append(text[i: i + j - k])
            i += j - k
    return out


def longest_repeat(text: str) -> str:
    """The longest substring found at two or more places (overlaps allowed), the earliest on a tie."""
    for size in range(len(text) - 1, 0, -1):
        starts = [i for i in range(len(text) - size + 1) if text.find(text[i: i + size], i + 1) >= 0]
        if starts:
            return text[starts[0]: starts[0] + size]
    return ""


def has_square(text: str, size: int) -> bool:
    return any(text[i: i + size] == text[i + size: i + 2 * size] for i in range(len(text) - 2 * size + 1))


def square_or_not(r: random.Random, size: int) -> tuple[str]:
    if r.random() < 0.5:
        return (word(r, 2 * size, 2 * size + 3, "abc"),)
    block = word(r, size, size, "abc")
    return (word(r, 0, 2, "abc") + block * 2 + word(r, 0, 2, "abc"),)


def period_or_not(r: random.Random, period: int) -> tuple[str]:
    """A word repeating a block of `period` letters, one letter after the first block changed half of the time."""
    block = word(r, period, period, "ab")
    text = (block * 4)[: r.randint(period + 1, period + 5)]
    if r.random() < 0.5:
        i = r.randrange(period, len(text))
        text = text[:i] + ("b" if text[i] == "a" else "a") + text[i + 1:]
    return (text,)


# figurate numbers


def polygonal(sides: int, n: int) -> int:
    return ((sides - 2) * n * n - (sides - 4) * n) // 2


def centered_polygonal(sides: int, n: int) -> int:
    return sides * n * (n - 1) // 2 + 1


def is_pentagonal(n: int) -> bool:
    return any(m * (3 * m - 1) // 2 == n for m in range(1, n + 1))


def pentagonal_or_not(r: random.Random) -> tuple[int]:
    m = r.randint(1, 9)
    return (r.choice((m * (3 * m - 1) // 2, r.randint(1, 120))),)


def pronic_or_not(r: random.Random) -> tuple[int]:
    m = r.randint(0, 11)
    return (r.choice((m * (m + 1), r.randint(0, 130))),)


def triangular_between(low: int, high: int) -> list[int]:
    out, m = [], 0
    while m * (m + 1) // 2 <= high:
        if m * (m + 1) // 2 >= low:
            out.append(m * (m + 1) // 2)
        m += 1
    return out
