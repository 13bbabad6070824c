"""More programming-task families for `task_prompts.py`, and the `Task` record both modules build on.

The first 6,000 task prompts (data/task_prompts.jsonl) came from four families: conditions on integer
lists, text, digit arithmetic and list utilities. This module adds shapes those lacked:

    mappings  dictionaries and counting (word lengths, invert, group, merge, keys by value ...)
    grids     list[list[int]] matrices (transpose, row sums, diagonals, rotation, spiral order ...)
    pairs     tuples in and out (min and max, evens and odds, index pairs summing to k, points ...)
    floats    means, medians, rounding, shares, distances; results rounded so examples are exact
    text      a second set of string tasks (camelCase, anagrams, brackets, interleaving, rotation ...)
    ordering  sorting with keys (absolute value, last digit, length), intervals (merge, coverage)
    puzzles   stack, two-pointer and greedy exercises (adjacent pairs, next greater, coins, profit ...)

Every task has a reference solution that computes its docstring's examples and an example generator
whose inputs make them informative; constants vary with k (2 to 7) as in the first families. None is
a HumanEval problem. No name repeats one of the first families', so a file of these prompts shares no
prompt with the first file. The module knows nothing about rendering, example formats or files:
`task_prompts` imports `extra_tasks(k)` and renders the tasks (`--families new`, `all` or `every`). `Task` and
the small input helpers live here, below `task_prompts`, so that the imports run one way.

    python -m d3d.training.task_prompts --out data/task_prompts2.jsonl --count 6000 --seed 1 --families new
"""

from __future__ import annotations

import math
import os.path
import random
import re
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby, zip_longest


@dataclass(frozen=True)
class Task:
    """One puzzle: its name, typed arguments, what it does, a reference solution and example inputs."""

    name: str
    args: tuple[tuple[str, str], ...]  # (argument name, type hint)
    returns: str
    what: str  # one or two sentences, "Return ..." style
    solve: Callable
    example: Callable[[random.Random], tuple]


def is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, math.isqrt(n) + 1))


def int_list(r: random.Random, lo: int = -20, hi: int = 40) -> list[int]:
    return [r.randint(lo, hi) for _ in range(r.randint(3, 8))]


WORDS = ("apple", "river", "level", "stone", "moon", "noon", "python", "code", "tree", "radar", "light", "sky",
         "garden", "book", "data", "cloud", "piano", "zebra", "orange", "civic", "bread", "window", "echo", "star")


def sentence(r: random.Random) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(2, 6)))


def word_list(r: random.Random, pool: int = len(WORDS)) -> list[str]:
    """3 to 7 words from the first `pool` words (a small pool makes words repeat)."""
    return [r.choice(WORDS[:pool]) for _ in range(r.randint(3, 7))]


def counts(r: random.Random, hi: int = 20, pool: int = len(WORDS)) -> dict[str, int]:
    """3 to 5 distinct words from the first `pool`, each with a value from 1 to `hi`."""
    return {w: r.randint(1, hi) for w in r.sample(WORDS[:pool], r.randint(3, 5))}


def grid(r: random.Random, rows: int = 0, cols: int = 0) -> list[list[int]]:
    """A rows x cols grid of digits (2 to 4 of each when not given)."""
    rows, cols = rows or r.randint(2, 4), cols or r.randint(2, 4)
    return [[r.randint(0, 9) for _ in range(cols)] for _ in range(rows)]


def square_grid(r: random.Random) -> list[list[int]]:
    """A square grid of digits, symmetric now and then so that symmetry questions get both answers."""
    n = r.randint(2, 4)
    cells = grid(r, n, n)
    return [[cells[min(i, j)][max(i, j)] for j in range(n)] for i in range(n)] if r.random() < 0.4 else cells


def float_list(r: random.Random, places: int = 1) -> list[float]:
    """3 to 7 numbers from -5 to 20 with `places` decimals, each printed by Python exactly as drawn."""
    scale = 10 ** places
    return [r.randint(-5 * scale, 20 * scale) / scale for _ in range(r.randint(3, 7))]


def point(r: random.Random) -> tuple[int, int]:
    return (r.randint(-6, 6), r.randint(-6, 6))


def intervals(r: random.Random) -> list[tuple[int, int]]:
    """2 to 5 closed intervals (start, end) that often overlap."""
    return [(a, a + r.randint(0, 4)) for a in (r.randint(0, 12) for _ in range(r.randint(2, 5)))]


def with_numbers(r: random.Random, items: list, lo: int = 1, hi: int = 5) -> tuple[list, list[int]]:
    """`items` and a list as long of numbers from lo to hi."""
    return items, [r.randint(lo, hi) for _ in items]


def word_and(r: random.Random, related: Callable[[str], str]) -> tuple[str, str]:
    """A word and, half of the time, a string made from it by `related` (otherwise another word)."""
    word = r.choice(WORDS)
    return word, related(word) if r.random() < 0.5 else r.choice(WORDS)


def capitalized_sometimes(r: random.Random) -> str:
    return " ".join(w.title() if r.random() < 0.4 else w for w in sentence(r).split())


def bracket_string(r: random.Random) -> str:
    """Nested and side-by-side bracket pairs, broken half of the time (one dropped, or two swapped)."""
    text = ""
    for _ in range(r.randint(2, 4)):
        opening, closing = r.choice(("()", "[]", "{}"))
        text = r.choice((opening + text + closing, text + opening + closing))
    if r.random() < 0.5:
        i = r.randrange(len(text) - 1)
        text = r.choice((text[:i] + text[i + 1:], text[:i] + text[i + 1] + text[i] + text[i + 2:]))
    return text


def group_by(items: list, key: Callable) -> dict:
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def spiral(cells: list[list[int]]) -> list[int]:
    order: list[int] = []
    rest = list(cells)
    while rest:
        order += rest.pop(0)
        rest = [list(column) for column in zip(*rest)][::-1]  # turn what is left counter-clockwise
    return order


def brackets_balanced(text: str) -> bool:
    stack: list[str] = []
    for c in text:
        if c in "([{":
            stack.append(c)
        elif c in ")]}" and (not stack or "([{".index(stack.pop()) != ")]}".index(c)):
            return False
    return not stack


def is_subsequence(whole: str, part: str) -> bool:
    letters = iter(whole)
    return all(c in letters for c in part)  # `in` consumes the iterator up to the match


def reverse_vowels(text: str) -> str:
    vowels = [c for c in text if c in "aeiou"]
    return "".join(vowels.pop() if c in "aeiou" else c for c in text)


def merge_intervals(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def cancel_adjacent_pairs(text: str) -> str:
    stack: list[str] = []
    for c in text:
        if stack and stack[-1] == c:
            stack.pop()
        else:
            stack.append(c)
    return "".join(stack)


def fewest_coins(amount: int, coins: tuple[int, ...]) -> int:
    best = [0] * (amount + 1)
    for total in range(1, amount + 1):
        best[total] = 1 + min(best[total - c] for c in coins if c <= total)
    return best[amount]


def summarize_ranges(values: list[int]) -> list[str]:
    ranges, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[i - 1] + 1:
            first, last = values[start], values[i - 1]
            ranges.append(str(first) if first == last else f"{first}-{last}")
            start = i
    return ranges


def steps_to_zero(n: int) -> int:
    steps = 0
    while n:
        n, steps = (n // 2 if n % 2 == 0 else n - 1), steps + 1
    return steps


NUMS, WORDS_ARG, TEXT = (("numbers", "List[int]"),), (("words", "List[str]"),), (("text", "str"),)
MAPPING, GRID = (("mapping", "Dict[str, int]"),), (("grid", "List[List[int]]"),)
TWO_STRINGS, SPANS = (("first", "str"), ("second", "str")), (("intervals", "List[Tuple[int, int]]"),)
POINTS, XY = (("points", "List[Tuple[int, int]]"),), (("a", "Tuple[int, int]"), ("b", "Tuple[int, int]"))


def tasks(rows: list[tuple]) -> list[Task]:
    """Tasks from rows of (name, args, returns, what, solve, example)."""
    return [Task(*row) for row in rows]


def mapping_tasks(k: int) -> list[Task]:
    """Dictionaries and counting: build, invert, group, merge and query mappings."""
    words = lambda r: (word_list(r),)  # noqa: E731
    return tasks([
        ("word_lengths", WORDS_ARG, "Dict[str, int]", "Return a dictionary mapping each word to its number of "
         "letters.", lambda ws: {w: len(w) for w in ws}, words),
        ("invert_mapping", MAPPING, "Dict[int, str]", "Return a dictionary mapping each value to its key; when "
         "several keys share a value, the last of them wins.", lambda m: {v: key for key, v in m.items()},
         lambda r: (counts(r, 4),)),
        ("group_by_first_letter", WORDS_ARG, "Dict[str, List[str]]", "Group the words by their first letter: "
         "return a dictionary from each first letter to the words starting with it, in their original order.",
         lambda ws: group_by(ws, lambda w: w[0]), words),
        ("group_by_length", WORDS_ARG, "Dict[int, List[str]]", "Group the words by length: return a dictionary "
         "from each length to the words that long, in their original order.", lambda ws: group_by(ws, len), words),
        ("merge_counts", (("first", "Dict[str, int]"), ("second", "Dict[str, int]")), "Dict[str, int]",
         "Merge two dictionaries of counts into a new one; a key present in both gets the sum of its values.",
         lambda a, b: {key: a.get(key, 0) + b.get(key, 0) for key in {**a, **b}},
         lambda r: (counts(r, 9, 8), counts(r, 9, 8))),
        ("key_of_largest_value", MAPPING, "str", "Return the key with the largest value; the first such key on "
         "a tie.", lambda m: max(m, key=m.get), lambda r: (counts(r, 9),)),
        ("keys_sorted_by_value", MAPPING, "List[str]", "Return the keys sorted by their values, smallest first; "
         "keys with equal values keep their order.", lambda m: sorted(m, key=m.get), lambda r: (counts(r, 9),)),
        ("count_even_and_odd", NUMS, "Dict[str, int]", "Return a dictionary with the number of even elements "
         "under 'even' and the number of odd elements under 'odd'.",
         lambda v: {"even": sum(x % 2 == 0 for x in v), "odd": sum(x % 2 != 0 for x in v)}, lambda r: (int_list(r),)),
        (f"entries_above_{k}", MAPPING, "Dict[str, int]", f"Return a new dictionary with only the entries whose "
         f"value is greater than {k}.", lambda m: {key: v for key, v in m.items() if v > k},
         lambda r: (counts(r, 10),)),
        ("vowel_counts", TEXT, "Dict[str, int]", "Return a dictionary mapping each vowel (a, e, i, o, u) that "
         "occurs in the text to its number of occurrences, vowels in alphabetical order.",
         lambda s: {c: s.count(c) for c in "aeiou" if c in s}, lambda r: (sentence(r),)),
        ("first_positions", TEXT, "Dict[str, int]", "Return a dictionary mapping each character of the string "
         "to the index of its first occurrence.", lambda s: {c: s.index(c) for c in dict.fromkeys(s)},
         lambda r: (r.choice(WORDS),)),
        ("indices_by_value", NUMS, "Dict[int, List[int]]", "Return a dictionary mapping each value of the list "
         "to the indices where it occurs, in increasing order.",
         lambda v: group_by(list(range(len(v))), lambda i: v[i]), lambda r: (int_list(r, 0, 4),)),
        ("most_common_word", TEXT, "str", "Return the word that occurs most often in the sentence; the "
         "alphabetically first one on a tie.",
         lambda s: min(Counter(s.split()).items(), key=lambda kv: (-kv[1], kv[0]))[0],
         lambda r: (" ".join(word_list(r, 5)),)),
        ("dict_from_lists", (("keys", "List[str]"), ("values", "List[int]")), "Dict[str, int]", "Build a "
         "dictionary from two lists of the same length: the i-th key maps to the i-th value.",
         lambda ks, vs: dict(zip(ks, vs)), lambda r: with_numbers(r, r.sample(WORDS, r.randint(2, 5)), 0, 20)),
        ("missing_keys", MAPPING + (("keys", "List[str]"),), "List[str]", "Return the keys of the list that are "
         "not in the dictionary, in their order.", lambda m, ks: [key for key in ks if key not in m],
         lambda r: (counts(r, 9, 8), r.sample(WORDS[:8], 3))),
    ])


def grid_tasks(k: int) -> list[Task]:
    """Matrices as lists of rows: transpose, sums and extremes, diagonals, rotation, spiral order."""
    any_grid, square, n = (lambda r: (grid(r),)), (lambda r: (square_grid(r),)), (("n", "int"),)
    return tasks([
        ("transpose", GRID, "List[List[int]]", "Return the transpose of the matrix: row i of the result is "
         "column i of the input.", lambda m: [list(c) for c in zip(*m)], any_grid),
        ("row_sums", GRID, "List[int]", "Return the sum of each row of the matrix.", lambda m: [sum(row) for row in m],
         any_grid),
        ("column_sums", GRID, "List[int]", "Return the sum of each column of the matrix.",
         lambda m: [sum(c) for c in zip(*m)], any_grid),
        ("column_maxima", GRID, "List[int]", "Return the largest value of each column of the matrix.",
         lambda m: [max(c) for c in zip(*m)], any_grid),
        ("main_diagonal_sum", GRID, "int", "Return the sum of the main diagonal (top left to bottom right) of "
         "a square matrix.", lambda m: sum(m[i][i] for i in range(len(m))), square),
        ("anti_diagonal_sum", GRID, "int", "Return the sum of the anti-diagonal (top right to bottom left) of "
         "a square matrix.", lambda m: sum(m[i][len(m) - 1 - i] for i in range(len(m))), square),
        (f"count_cells_above_{k}", GRID, "int", f"Count the cells of the grid whose value is greater than {k}.",
         lambda m: sum(v > k for row in m for v in row), any_grid),
        ("flatten_grid", GRID, "List[int]", "Return the values of the grid row by row, in one flat list.",
         lambda m: [v for row in m for v in row], any_grid),
        ("rotate_clockwise", GRID, "List[List[int]]", "Return the matrix rotated 90 degrees clockwise.",
         lambda m: [list(row) for row in zip(*m[::-1])], any_grid),
        ("is_symmetric", GRID, "bool", "Return True if the square matrix is equal to its transpose.",
         lambda m: m == [list(c) for c in zip(*m)], square),
        ("spiral_order", GRID, "List[int]", "Return the values of the matrix in clockwise spiral order, starting "
         "at the top left corner.", spiral, any_grid),
        ("row_with_largest_sum", GRID, "int", "Return the index of the row with the largest sum; the first such "
         "row on a tie.", lambda m: max(range(len(m)), key=lambda i: sum(m[i])), any_grid),
        ("position_of_maximum", GRID, "Tuple[int, int]", "Return (row, column) of the largest value of the grid; "
         "the first one in reading order on a tie.",
         lambda m: max(((i, j) for i, row in enumerate(m) for j in range(len(row))), key=lambda p: m[p[0]][p[1]]),
         any_grid),
        ("border_sum", GRID, "int", "Return the sum of the cells on the border of the grid (first and last row, "
         "first and last column), each cell counted once.",
         lambda m: sum(map(sum, m)) - sum(sum(row[1:-1]) for row in m[1:-1]), any_grid),
        (f"scale_grid_by_{k}", GRID, "List[List[int]]", f"Return a new grid with every value multiplied by {k}.",
         lambda m: [[v * k for v in row] for row in m], any_grid),
        ("sort_each_row", GRID, "List[List[int]]", "Return a new grid with each row sorted in increasing order.",
         lambda m: [sorted(row) for row in m], any_grid),
        ("add_grids", (("first", "List[List[int]]"), ("second", "List[List[int]]")), "List[List[int]]",
         "Add two grids of the same shape cell by cell.",
         lambda a, b: [[x + y for x, y in zip(ra, rb)] for ra, rb in zip(a, b)],
         lambda r: (first := grid(r), grid(r, len(first), len(first[0])))),
        ("identity_matrix", n, "List[List[int]]", "Return the n by n identity matrix: ones on the main diagonal, "
         "zeros elsewhere.", lambda size: [[int(i == j) for j in range(size)] for i in range(size)],
         lambda r: (r.randint(1, 4),)),
        ("multiplication_table", n, "List[List[int]]", "Return the n by n multiplication table: the value in row "
         "i and column j, counting from 1, is i * j.",
         lambda size: [[i * j for j in range(1, size + 1)] for i in range(1, size + 1)], lambda r: (r.randint(1, 4),)),
    ])


def pair_tasks(k: int) -> list[Task]:
    """Tuples in and out: pairs of results, index pairs, zipped lists, points."""
    some, few_points = (lambda r: (int_list(r),)), (lambda r: ([point(r) for _ in range(r.randint(2, 5))],))
    word_number_pairs = lambda r: ([(w, r.randint(0, 9)) for w in word_list(r)],)  # noqa: E731
    return tasks([
        ("min_and_max", NUMS, "Tuple[int, int]", "Return the smallest and the largest element as a tuple "
         "(smallest, largest).", lambda v: (min(v), max(v)), some),
        ("split_even_odd", NUMS, "Tuple[List[int], List[int]]", "Return a tuple of two lists: the even elements "
         "and the odd ones, each in their original order.",
         lambda v: ([x for x in v if x % 2 == 0], [x for x in v if x % 2]), some),
        (f"pairs_summing_to_{k}", NUMS, "List[Tuple[int, int]]", f"Return every pair of indices (i, j) with i < j "
         f"whose elements add up to {k}, ordered by i and then by j.",
         lambda v: [(i, j) for i in range(len(v)) for j in range(i + 1, len(v)) if v[i] + v[j] == k],
         lambda r: (int_list(r, -3, 10),)),
        ("zip_pairs", (("left", "List[int]"), ("right", "List[str]")), "List[Tuple[int, str]]", "Pair up the i-th "
         "elements of the two lists as tuples, stopping at the end of the shorter list.",
         lambda a, b: list(zip(a, b)), lambda r: (int_list(r, 0, 9), word_list(r))),
        ("closest_neighbours_index", NUMS, "int", "Return the index i for which the elements at i and i + 1 are "
         "closest in value; the first such i on a tie.",
         lambda v: min(range(len(v) - 1), key=lambda i: abs(v[i + 1] - v[i])), some),
        ("unzip_pairs", (("pairs", "List[Tuple[str, int]]"),), "Tuple[List[str], List[int]]", "Split a list of "
         "(word, number) pairs into a tuple of two lists: the words and the numbers.",
         lambda ps: ([p[0] for p in ps], [p[1] for p in ps]), word_number_pairs),
        (f"count_and_sum_above_{k}", NUMS, "Tuple[int, int]", f"Return a tuple of how many elements are greater "
         f"than {k} and their sum.", lambda v: (sum(x > k for x in v), sum(x for x in v if x > k)), some),
        (f"partition_around_{k}", NUMS, "Tuple[List[int], List[int]]", f"Return a tuple of two lists: the "
         f"elements smaller than {k} and the others, each in their original order.",
         lambda v: ([x for x in v if x < k], [x for x in v if x >= k]), lambda r: (int_list(r, -5, 15),)),
        ("pair_with_largest_sum", (("pairs", "List[Tuple[int, int]]"),), "Tuple[int, int]", "Return the pair "
         "whose two items have the largest sum; the first such pair on a tie.", lambda ps: max(ps, key=sum),
         few_points),
        ("indices_of_min_and_max", NUMS, "Tuple[int, int]", "Return a tuple of the index of the smallest element "
         "and the index of the largest; the first occurrence on a tie.",
         lambda v: (v.index(min(v)), v.index(max(v))), lambda r: (int_list(r, 0, 9),)),
        (f"divmod_by_{k}", (("n", "int"),), "Tuple[int, int]", f"Return the quotient and the remainder of n "
         f"divided by {k}, as a tuple.", lambda n: divmod(n, k), lambda r: (r.randint(0, 100),)),
        ("manhattan_distance", XY, "int", "Return the Manhattan distance between the points a and b: the sum of "
         "the absolute differences of their coordinates.", lambda a, b: abs(a[0] - b[0]) + abs(a[1] - b[1]),
         lambda r: (point(r), point(r))),
        ("closest_to_origin", POINTS, "Tuple[int, int]", "Return the point closest to the origin (0, 0); the "
         "first such point on a tie.", lambda ps: min(ps, key=lambda p: p[0] ** 2 + p[1] ** 2), few_points),
        ("points_in_first_quadrant", POINTS, "int", "Count the points whose two coordinates are both strictly "
         "positive.", lambda ps: sum(x > 0 and y > 0 for x, y in ps), few_points),
    ])


def float_tasks(k: int) -> list[Task]:
    """Means, medians, rounding, shares and distances, every result rounded so the examples are exact."""
    floats, places = (("numbers", "List[float]"),), 2 + k % 2
    some_floats, positive = (lambda r: (float_list(r),)), (lambda r: (int_list(r, 1, 20),))
    return tasks([
        ("mean_rounded", floats, "float", "Return the mean of the numbers, rounded to 2 decimal places.",
         lambda v: round(sum(v) / len(v), 2), some_floats),
        ("median_word_length", WORDS_ARG, "float", "Return the median length of the words: the middle length "
         "once sorted, or the mean of the two middle ones for an even count.",
         lambda ws: float(statistics.median(len(w) for w in ws)), lambda r: (word_list(r),)),
        (f"round_to_{places}_decimals", floats, "List[float]", f"Return every number rounded to {places} digits "
         f"after the decimal point, as round(x, {places}) does.", lambda v: [round(x, places) for x in v],
         lambda r: (float_list(r, 4),)),
        ("shares_of_total", NUMS, "List[float]", "Return each element divided by the sum of all elements, "
         "rounded to 2 decimal places. The elements are positive.", lambda v: [round(x / sum(v), 2) for x in v],
         positive),
        ("euclidean_distance", XY, "float", "Return the straight-line distance between the points a and b, "
         "rounded to 2 decimal places.", lambda a, b: round(math.dist(a, b), 2), lambda r: (point(r), point(r))),
        ("percent_change", (("old", "int"), ("new", "int")), "float", "Return the change from old to new as a "
         "percentage of old, rounded to 1 decimal place; old is never 0.",
         lambda old, new: round((new - old) / old * 100, 1), lambda r: (r.randint(1, 200), r.randint(0, 300))),
        ("mean_of_positives", floats, "float", "Return the mean of the strictly positive numbers, rounded to 2 "
         "decimal places, or 0.0 if there are none.",
         lambda v: round(sum(x for x in v if x > 0) / max(1, sum(x > 0 for x in v)), 2), some_floats),
        ("to_fahrenheit", (("celsius", "List[int]"),), "List[float]", "Convert each temperature from Celsius to "
         "Fahrenheit (multiply by 9 / 5, then add 32), rounded to 1 decimal place.",
         lambda v: [round(c * 9 / 5 + 32, 1) for c in v], lambda r: (int_list(r, -10, 40),)),
        ("weighted_mean", (("values", "List[int]"), ("weights", "List[int]")), "float", "Return the mean of the "
         "values weighted by the weights (the lists have the same length and the weights are positive), rounded "
         "to 2 decimal places.", lambda v, w: round(sum(a * b for a, b in zip(v, w)) / sum(w), 2),
         lambda r: with_numbers(r, int_list(r, 0, 20))),
        ("population_std_dev", NUMS, "float", "Return the population standard deviation of the numbers (the "
         "square root of the mean squared distance to their mean), rounded to 2 decimal places.",
         lambda v: round(statistics.pstdev(v), 2), positive),
        ("running_mean", NUMS, "List[float]", "Return the running means: element i is the mean of the first "
         "i + 1 elements, rounded to 2 decimal places.",
         lambda v: [round(sum(v[: i + 1]) / (i + 1), 2) for i in range(len(v))], positive),
        ("floor_and_ceiling", (("x", "float"),), "Tuple[int, int]", "Return a tuple of the largest integer not "
         "above x and the smallest integer not below x.", lambda x: (math.floor(x), math.ceil(x)),
         lambda r: (r.randint(-500, 500) / 10,)),
    ])


def text_tasks(k: int) -> list[Task]:
    """A second set of string tasks: word questions, case conversions, anagrams, brackets, interleaving."""
    phrase, word = (lambda r: (sentence(r),)), (lambda r: (r.choice(WORDS),))
    two_words = lambda r: (r.choice(WORDS), r.choice(WORDS))  # noqa: E731
    return tasks([
        ("camel_to_snake", TEXT, "str", "Convert a camelCase name to snake_case.",
         lambda s: re.sub("([A-Z])", r"_\1", s).lower(),
         lambda r: ("".join(w if i == 0 else w.title() for i, w in enumerate(r.sample(WORDS, r.randint(2, 3)))),)),
        ("number_of_words", TEXT, "int", "Return how many words the sentence has.", lambda s: len(s.split()), phrase),
        ("shortest_word", TEXT, "str", "Return the shortest word of the sentence; the first one if several are "
         "equally short.", lambda s: min(s.split(), key=len), phrase),
        ("is_anagram", TWO_STRINGS, "bool", "Return True if the two words are made of the same letters, each "
         "used as many times.", lambda a, b: sorted(a) == sorted(b),
         lambda r: word_and(r, lambda w: "".join(r.sample(w, len(w))))),
        ("least_common_letter", TEXT, "str", "Return the letter that occurs least often in the string, ignoring "
         "spaces; the alphabetically first one on a tie.",
         lambda s: min(Counter(s.replace(" ", "")).items(), key=lambda kv: (kv[1], kv[0]))[0], phrase),
        ("initials", TEXT, "str", "Return the first letter of every word in upper case, each followed by a dot.",
         lambda s: "".join(w[0].upper() + "." for w in s.split()), phrase),
        ("remove_digits", TEXT, "str", "Return the string without its digits.",
         lambda s: "".join(c for c in s if not c.isdigit()),
         lambda r: ("".join(c + str(r.randint(0, 9)) if r.random() < 0.3 else c for c in "".join(two_words(r))),)),
        ("brackets_balanced", TEXT, "bool", "The string holds only the brackets ( ) [ ] { }. Return True if "
         "every opening bracket is closed by one of the same kind, in the right order.", brackets_balanced,
         lambda r: (bracket_string(r),)),
        ("count_doubled_letters", TEXT, "int", "Count the positions where a character is the same as the next "
         "one.", lambda s: sum(a == b for a, b in zip(s, s[1:])), lambda r: ("".join(two_words(r)),)),
        ("interleave", TWO_STRINGS, "str", "Alternate the characters of the two strings, starting with the "
         "first; when one runs out, append the rest of the other.",
         lambda a, b: "".join(x + y for x, y in zip_longest(a, b, fillvalue="")), two_words),
        ("reverse_each_word", TEXT, "str", "Reverse the letters of every word of the sentence, keeping the words "
         "in their order.", lambda s: " ".join(w[::-1] for w in s.split()), phrase),
        ("word_with_most_vowels", TEXT, "str", "Return the word of the sentence with the most vowels (a, e, i, o, "
         "u); the first such word on a tie.", lambda s: max(s.split(), key=lambda w: sum(c in "aeiou" for c in w)),
         phrase),
        ("count_capitalized_words", TEXT, "int", "Count the words of the sentence that start with an upper-case "
         "letter.", lambda s: sum(w[0].isupper() for w in s.split()), lambda r: (capitalized_sometimes(r),)),
        (f"pad_left_to_{k}", TEXT, "str", f"Pad the word on the left with '*' characters to a length of {k}; a "
         "word at least that long stays as it is.", lambda s: s.rjust(k, "*"), word),
        (f"truncate_words_to_{k}", TEXT, "str", f"Cut every word of the sentence to its first {k} letters.",
         lambda s: " ".join(w[:k] for w in s.split()), phrase),
        ("vowel_positions", TEXT, "List[int]", "Return the indices of the vowels (a, e, i, o, u) of the string.",
         lambda s: [i for i, c in enumerate(s) if c in "aeiou"], word),
        ("sorted_unique_words", TEXT, "List[str]", "Return the distinct words of the sentence in alphabetical "
         "order.", lambda s: sorted(set(s.split())), lambda r: (" ".join(word_list(r, 6)),)),
        ("to_kebab_case", TEXT, "str", "Return the words of the sentence in lower case, joined by hyphens.",
         lambda s: "-".join(s.lower().split()), lambda r: (capitalized_sometimes(r),)),
        ("is_rotation", TWO_STRINGS, "bool", "Return True if the second string is the first one rotated: some "
         "characters (possibly none) moved from its front to its back.",
         lambda a, b: len(a) == len(b) and b in a + a,
         lambda r: word_and(r, lambda w: (w * 2)[r.randrange(len(w)):][: len(w)])),
        ("common_prefix", TWO_STRINGS, "str", "Return the longest string that both strings start with.",
         lambda a, b: os.path.commonprefix([a, b]),
         lambda r: word_and(r, lambda w: w[: r.randint(1, len(w))] + r.choice(WORDS))),
        ("is_subsequence", (("whole", "str"), ("part", "str")), "bool", "Return True if the characters of part "
         "appear in whole in the same order, not necessarily next to each other.", is_subsequence,
         lambda r: word_and(r, lambda w: "".join(c for c in w if r.random() < 0.6))),
        ("reverse_vowels", TEXT, "str", "Reverse the order of the vowels (a, e, i, o, u) in the string; the "
         "other characters stay where they are.", reverse_vowels, phrase),
        ("is_palindrome_ignoring_spaces", TEXT, "bool", "Return True if the sentence reads the same forwards and "
         "backwards once its spaces are removed.", lambda s: s.replace(" ", "") == s.replace(" ", "")[::-1],
         lambda r: ((p := sentence(r)) + (" " + p.replace(" ", "")[::-1] if r.random() < 0.5 else ""),)),
    ])


def ordering_tasks(k: int) -> list[Task]:
    """Sorting with keys, ranks, and closed intervals (start, end)."""
    spans = lambda r: (intervals(r),)  # noqa: E731
    return tasks([
        ("sort_by_absolute_value", NUMS, "List[int]", "Sort the list by absolute value; elements with equal "
         "absolute values keep their order.", lambda v: sorted(v, key=abs), lambda r: (int_list(r, -20, 20),)),
        ("sort_by_last_digit", NUMS, "List[int]", "Sort the non-negative numbers by their last digit; numbers "
         "with equal last digits keep their order.", lambda v: sorted(v, key=lambda x: x % 10),
         lambda r: (int_list(r, 0, 99),)),
        ("sort_by_length_then_alphabet", WORDS_ARG, "List[str]", "Sort the words by length, and words of equal "
         "length alphabetically.", lambda ws: sorted(ws, key=lambda w: (len(w), w)), lambda r: (word_list(r),)),
        ("merge_overlapping", SPANS, "List[Tuple[int, int]]", "Merge the closed intervals (start, end) that "
         "overlap or touch, and return the result sorted by start.", merge_intervals, spans),
        ("covered_length", SPANS, "int", "Return the total length of the number line covered by the closed "
         "intervals (start, end), counting overlaps once.", lambda s: sum(b - a for a, b in merge_intervals(s)), spans),
        ("sort_by_frequency", NUMS, "List[int]", "Sort the list so that more frequent values come first, and "
         "equally frequent values in increasing order.", lambda v: sorted(v, key=lambda x: (-v.count(x), x)),
         lambda r: (int_list(r, 0, 5),)),
        (f"smallest_{k}", NUMS, "List[int]", f"Return the {k} smallest elements in increasing order. The list has "
         f"at least {k} elements.", lambda v: sorted(v)[:k],
         lambda r: ([r.randint(0, 50) for _ in range(r.randint(k, k + 3))],)),
        ("dense_ranks", NUMS, "List[int]", "Replace every element by its rank: 1 for the smallest value, 2 for the "
         "next distinct value and so on; equal values share a rank.",
         lambda v: [sorted(set(v)).index(x) + 1 for x in v], lambda r: (int_list(r, 0, 9),)),
        (f"intervals_containing_{k}", SPANS, "int", f"Count the closed intervals (start, end) that contain {k}.",
         lambda s: sum(a <= k <= b for a, b in s), spans),
        ("longest_interval", SPANS, "Tuple[int, int]", "Return the longest closed interval (start, end); the "
         "first such interval on a tie.", lambda s: max(s, key=lambda ab: ab[1] - ab[0]), spans),
        ("sort_pairs_by_second", (("pairs", "List[Tuple[str, int]]"),), "List[Tuple[str, int]]", "Sort the "
         "(word, number) pairs by number; pairs with equal numbers keep their order.",
         lambda ps: sorted(ps, key=lambda p: p[1]), lambda r: ([(w, r.randint(0, 5)) for w in word_list(r)],)),
        (f"sort_by_distance_to_{k}", NUMS, "List[int]", f"Sort the list by distance to {k}; elements equally far "
         f"from {k} keep their order.", lambda v: sorted(v, key=lambda x: abs(x - k)),
         lambda r: (int_list(r, -5, 15),)),
    ])


def puzzle_tasks(k: int) -> list[Task]:
    """Small stack, two-pointer and greedy exercises."""
    some, small, coins = (lambda r: (int_list(r),)), (lambda r: (int_list(r, 0, 3),)), (1, k, k + 3)
    return tasks([
        ("cancel_adjacent_pairs", TEXT, "str", "Repeatedly remove two equal neighbouring characters until no "
         "two neighbours are equal, and return what is left.", cancel_adjacent_pairs,
         lambda r: ("".join(r.choice("abc") for _ in range(r.randint(4, 9))),)),
        ("next_greater", NUMS, "List[int]", "For every element, return the first later element that is larger, "
         "or -1 if there is none.", lambda v: [next((y for y in v[i + 1:] if y > x), -1) for i, x in enumerate(v)],
         lambda r: (int_list(r, 0, 20),)),
        ("max_subarray_sum", NUMS, "int", "Return the largest sum of a non-empty run of consecutive elements.",
         lambda v: max(sum(v[i:j]) for i in range(len(v)) for j in range(i + 1, len(v) + 1)), some),
        (f"max_window_sum_{k}", NUMS, "int", f"Return the largest sum of {k} consecutive elements. The list has at "
         f"least {k} elements.", lambda v: max(sum(v[i: i + k]) for i in range(len(v) - k + 1)),
         lambda r: ([r.randint(-10, 20) for _ in range(r.randint(k, k + 4))],)),
        ("longest_equal_run", NUMS, "int", "Return the length of the longest run of equal consecutive elements.",
         lambda v: max(len(list(run)) for _, run in groupby(v)), small),
        ("fewest_coins", (("amount", "int"),), "int", f"Return the fewest coins worth 1, {k} and {k + 3} that add "
         "up to amount.", lambda amount: fewest_coins(amount, coins), lambda r: (r.randint(1, 30),)),
        ("best_profit", (("prices", "List[int]"),), "int", "Given prices over days, return the largest profit of "
         "buying on one day and selling on a later one, or 0 if no sale gains.",
         lambda v: max([0] + [b - a for i, a in enumerate(v) for b in v[i + 1:]]), lambda r: (int_list(r, 1, 30),)),
        ("move_zeros_to_end", NUMS, "List[int]", "Move every zero to the end of the list, keeping the order of "
         "the other elements.", lambda v: [x for x in v if x != 0] + [0] * v.count(0), small),
        ("leaders", NUMS, "List[int]", "Return the elements that are greater than every element after them, in "
         "order (the last element always is).", lambda v: [x for i, x in enumerate(v) if all(x > y for y in v[i + 1:])],
         some),
        ("count_inversions", NUMS, "int", "Count the pairs of positions i < j whose elements are out of order "
         "(the one at i is greater).", lambda v: sum(v[i] > v[j] for i in range(len(v)) for j in range(i + 1, len(v))),
         lambda r: (int_list(r, 0, 9),)),
        ("summarize_ranges", NUMS, "List[str]", "The list is sorted and has no duplicates. Describe it as ranges: "
         "a run of consecutive integers from a to b becomes 'a-b', a lone integer a becomes 'a'.", summarize_ranges,
         lambda r: (sorted(set(int_list(r, 0, 15))),)),
        ("missing_number", NUMS, "int", "The list holds every integer from 0 to its length except one, in any "
         "order. Return the missing one.", lambda v: len(v) * (len(v) + 1) // 2 - sum(v),
         lambda r: (r.sample(range((n := r.randint(3, 8)) + 1), n),)),
        ("steps_to_zero", (("n", "int"),), "int", "Return how many steps reach 0 from n, where a step halves an "
         "even number and subtracts 1 from an odd one.", steps_to_zero, lambda r: (r.randint(0, 200),)),
        ("can_reach_end", (("jumps", "List[int]"),), "bool", "Each element is the longest jump forward allowed "
         "from its index. Starting at index 0, return True if the last index can be reached.",
         lambda v: all(max(j + x for j, x in enumerate(v[:i])) >= i for i in range(1, len(v))), small),
        ("collapse_runs", NUMS, "List[int]", "Replace every run of equal consecutive elements by one element.",
         lambda v: [x for i, x in enumerate(v) if i == 0 or v[i - 1] != x], small),
    ])


def extra_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (mapping_tasks(k) + grid_tasks(k) + pair_tasks(k) + float_tasks(k) + text_tasks(k) + ordering_tasks(k)
            + puzzle_tasks(k))
