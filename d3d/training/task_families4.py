"""A fourth set of programming-task families for `task_prompts.py`: shapes the first three sets lack.

The three earlier sets hold about 660 function names, and more renderings of the same functions teach the
drafter little (docs/training.md). This module adds eight more families, 96 tasks for each k (172 names
across k):

    ranges     closed intervals: overlap of two, gaps, deepest overlap, insertion, disjoint choice, clamping
    matrices   counterclockwise turns, mirrors, snake order, islands, Toeplitz, products, lucky numbers
    tallies    (name, amount) totals, keys by value, changed keys, ranking by score then name, star bars
    ciphers    Atbash, Vigenere, rail fence, pig latin, run pairs and count-prefixed runs, block reversal
    calendar   leap years, days in a month, day of the year, the next date, clock times, weekdays, ages
    history    bracket depth, undo, browser history, postfix expressions, Unix paths, asteroids, round robin
    digits     largest and smallest rearrangement, Harshad and automorphic numbers, persistence, digit lists
    windows    local maxima and minima, window minima and spreads, directions, balance index, lag differences

The rules are task_families3.py's: reference solutions compute the examples, example inputs make them
informative, results print exactly, constants vary with k (2 to 7), no name is a HumanEval entry point
or an earlier catalogue's (for any k), no description shares a 13-word n-gram with a HumanEval prompt.
Near misses were turned around: the depth after each character (not the deepest per group), the overlap
itself (not whether its length is prime), Atbash and Vigenere (not shifts), window minima (not rolling
maxima). The reference solutions and example generators too long for a lambda, and the shared
argument shapes, live in `task_reference4.py` (the few shared with the third set in `task_reference3.py`);
this module holds the family builders. It knows nothing about rendering or files: `task_prompts`
imports `fourth_tasks(k)` (`--families fourth`). Its held-out prompts (data/task_dev4_prompts.jsonl)
and the seventh task file (data/task_prompts7.jsonl, without the held-out functions) are drawn from
it; task_prompts.py's docstring gives both commands.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from itertools import combinations

from d3d.training.task_families import (GRID, MAPPING, NUMS, SPANS, TEXT, WORDS, WORDS_ARG, Task,
                                        capitalized_sometimes, counts, grid, group_by, int_list, intervals,
                                        merge_intervals, sentence, square_grid, tasks, word_list)
from d3d.training.task_reference3 import N, TWO_LISTS, balanced_halves, sometimes
from d3d.training.task_reference4 import (ACTIONS, COMMANDS, DATE, PAIRS, SPAN_PAIR, WEEKDAYS, a_date, amounts_by_name,
                                          balanced_brackets, browse, changed_sometimes, depths, direction_changes,
                                          evaluate_postfix, hhmm, is_leap, islands, minutes_of, month_days,
                                          most_disjoint, next_day, number_with_zeros, overlap, persistence,
                                          postfix_tokens, push_pop, rail_fence, repeated_letters, round_robin,
                                          runs_of, simplify_path, smallest_from_digits, squares_chain_reaches_one,
                                          stack_states, surviving_asteroids, time_string, toeplitz)


def range_tasks(k: int) -> list[Task]:
    """Closed intervals (start, end) of integers: overlaps, gaps, depth, insertion, choice, clamping."""
    spans = lambda r: (intervals(r),)  # noqa: E731
    return tasks([
        ("overlap_of_two_ranges", SPAN_PAIR, "Optional[Tuple[int, int]]", "Return the closed interval (start, "
         "end) that the two closed intervals have in common, or None if they share no point.", overlap,
         lambda r: tuple(intervals(r)[:2])),
        ("gaps_between_ranges", SPANS, "List[Tuple[int, int]]", "Return the runs of integers between the lowest "
         "start and the highest end that no closed interval (start, end) covers, each as (first, last), in "
         "increasing order.",
         lambda s: [(a[1] + 1, b[0] - 1) for a, b in zip(merge_intervals(s), merge_intervals(s)[1:])
                    if b[0] - a[1] > 1], spans),
        ("max_overlap_depth", SPANS, "int", "Return the largest number of the closed intervals (start, end) that "
         "all contain one same point.", lambda s: max(sum(a <= x <= b for a, b in s) for x, _ in s), spans),
        ("count_overlapping_pairs", SPANS, "int", "Count the pairs of closed intervals (start, end) that have at "
         "least one point in common.", lambda s: sum(overlap(p, q) is not None for p, q in combinations(s, 2)),
         spans),
        ("insert_and_merge", SPANS + (("new", "Tuple[int, int]"),), "List[Tuple[int, int]]", "The closed "
         "intervals (start, end) are sorted and disjoint. Add the new one and return the list, still sorted, with "
         "every two intervals that now share a point merged into one.", lambda s, new: merge_intervals(s + [new]),
         lambda r: (merge_intervals(intervals(r)), intervals(r)[0])),
        ("count_uncontained_ranges", SPANS, "int", "Ignoring repeats of the same interval, count the closed "
         "intervals (start, end) that do not lie inside another one.",
         lambda s: sum(not any(o != t and o[0] <= t[0] and t[1] <= o[1] for o in set(s)) for t in set(s)), spans),
        ("max_disjoint_ranges", SPANS, "int", "Return the largest number of the closed intervals (start, end) "
         "that can be picked with no two of them sharing a point.", most_disjoint, spans),
        (f"widen_ranges_by_{k}", SPANS, "List[Tuple[int, int]]", f"Return every closed interval (start, end) "
         f"widened by {k} on both sides, as (start - {k}, end + {k}).",
         lambda s: [(a - k, b + k) for a, b in s], spans),
        (f"ranges_of_length_{k}_or_more", SPANS, "List[Tuple[int, int]]", f"Return, in order, the closed "
         f"intervals (start, end) whose length end - start is at least {k}.",
         lambda s: [(a, b) for a, b in s if b - a >= k],
         lambda r: ([(a, a + r.randint(0, 2 * k)) for a in r.sample(range(20), r.randint(2, 5))],)),
        ("clamp_to_range", NUMS + (("low", "int"), ("high", "int")), "List[int]", "Return the numbers with every "
         "one below low raised to low and every one above high lowered to high; low is at most high.",
         lambda v, lo, hi: [min(max(x, lo), hi) for x in v],
         lambda r: (int_list(r), lo := r.randint(-5, 15), lo + r.randint(0, 20))),
        ("sort_ranges_by_length", SPANS, "List[Tuple[int, int]]", "Sort the closed intervals (start, end) by "
         "length (end - start), shortest first, and intervals of equal length by start.",
         lambda s: sorted(s, key=lambda ab: (ab[1] - ab[0], ab[0])), spans),
    ])


def matrix_tasks(k: int) -> list[Task]:
    """Lists of rows: turns and mirrors, reading orders, neighbours, islands, diagonals, products."""
    any_grid, square, limit = (lambda r: (grid(r),)), (lambda r: (square_grid(r),)), 3 * k
    return tasks([
        ("rotate_counterclockwise", GRID, "List[List[int]]", "Return the matrix turned 90 degrees "
         "counterclockwise.", lambda m: [list(row) for row in zip(*m)][::-1], any_grid),
        ("mirror_left_right", GRID, "List[List[int]]", "Return the grid as seen in a mirror beside it: every "
         "row reversed.", lambda m: [row[::-1] for row in m], any_grid),
        ("snake_order", GRID, "List[int]", "Read the grid row by row, the first row left to right, the second "
         "right to left, and so on in turns, and return the values in that order.",
         lambda m: [x for i, row in enumerate(m) for x in (row[::-1] if i % 2 else row)], any_grid),
        ("diagonal_difference", GRID, "int", "Return the absolute difference between the sums of the two "
         "diagonals of a square matrix.", lambda m: abs(sum(m[i][i] - m[i][-1 - i] for i in range(len(m)))), square),
        ("lucky_numbers", GRID, "List[int]", "Return, in reading order, the values that are the smallest of "
         "their row and at the same time the largest of their column.",
         lambda m: [x for row in m for j, x in enumerate(row) if x == min(row) == max(r[j] for r in m)], any_grid),
        ("neighbour_sum", GRID + (("row", "int"), ("col", "int")), "int", "Return the sum of the cells just "
         "above, below, left and right of the cell at (row, col), leaving out those outside the grid.",
         lambda m, i, j: sum(m[a][b] for a, b in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1))
                             if 0 <= a < len(m) and 0 <= b < len(m[0])),
         lambda r: (g := grid(r), r.randrange(len(g)), r.randrange(len(g[0])))),
        ("count_islands", GRID, "int", "The grid holds 0s and 1s. Return how many groups of 1s it has, where "
         "1s next to each other up, down, left or right belong to the same group.", islands,
         lambda r: ([[int(x < 4) for x in row] for row in grid(r, r.randint(2, 5), r.randint(2, 5))],)),
        ("is_toeplitz", GRID, "bool", "Return True if each diagonal from top left to bottom right holds a single "
         "value.", lambda m: all(m[i][j] == m[i - 1][j - 1] for i in range(1, len(m)) for j in range(1, len(m[0]))),
         lambda r: (sometimes(r, toeplitz(r), grid(r)),)),
        ("upper_triangle_sum", GRID, "int", "Return the sum of the cells of a square matrix that lie on or "
         "above its main diagonal.", lambda m: sum(x for i, row in enumerate(m) for x in row[i:]), square),
        ("multiply_matrices", (("first", "List[List[int]]"), ("second", "List[List[int]]")), "List[List[int]]",
         "Return the matrix product of first and second; first has as many columns as second has rows.",
         lambda a, b: [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a],
         lambda r: (a := grid(r), grid(r, len(a[0])))),
        (f"rows_with_sum_over_{limit}", GRID, "List[int]", f"Return the indices of the rows whose values add up "
         f"to more than {limit}.", lambda m: [i for i, row in enumerate(m) if sum(row) > limit], any_grid),
        ("sort_rows_by_sum", GRID, "List[List[int]]", "Return the rows sorted by their sums, smallest first; "
         "rows with equal sums keep their order.", lambda m: sorted(m, key=sum), any_grid),
    ])


def tally_tasks(k: int) -> list[Task]:
    """Dictionaries built by aggregating and inverting, and rankings that break ties by a second key."""
    pairs = lambda r: ([(r.choice(WORDS[:5]), r.randint(1, 9)) for _ in range(r.randint(2, 6))],)  # noqa: E731
    small = lambda r: (counts(r, 4),)  # noqa: E731
    return tasks([
        ("totals_by_name", PAIRS, "Dict[str, int]", "Each pair is (name, amount). Return a dictionary from "
         "every name to the sum of its amounts, names in the order they first appear.",
         lambda ps: {name: sum(v) for name, v in amounts_by_name(ps).items()}, pairs),
        ("mean_amount_by_name", PAIRS, "Dict[str, float]", "Each pair is (name, amount). Return a dictionary "
         "from every name to the mean of its amounts rounded to 1 decimal place, names in order of first "
         "appearance.", lambda ps: {name: round(sum(v) / len(v), 1) for name, v in amounts_by_name(ps).items()},
         pairs),
        ("keys_by_value", MAPPING, "Dict[int, List[str]]", "Return a dictionary from each value of the mapping "
         "to the list of keys that have it, values in order of first appearance and keys in their order.",
         lambda m: group_by(list(m), m.get), small),
        ("count_by_last_letter", WORDS_ARG, "Dict[str, int]", "Return a dictionary from each last letter of the "
         "words to how many words end with it, letters in the order they first appear.",
         lambda ws: dict(Counter(w[-1] for w in ws)), lambda r: (word_list(r),)),
        ("merge_keep_larger", (("first", "Dict[str, int]"), ("second", "Dict[str, int]")), "Dict[str, int]",
         "Merge two dictionaries into a new one, the keys of first and then the new keys of second; a key in "
         "both keeps the larger of its two values.",
         lambda a, b: {**a, **{key: max(v, a.get(key, v)) for key, v in b.items()}}, 
         lambda r: (counts(r, 9, 8), counts(r, 9, 8))),
        ("changed_keys", (("before", "Dict[str, int]"), ("after", "Dict[str, int]")), "List[str]", "Return, in "
         "alphabetical order, the keys whose value differs between the two dictionaries; a key missing from "
         "one of them counts as changed.", lambda a, b: sorted(key for key in a | b if a.get(key) != b.get(key)),
         changed_sometimes),
        (f"keys_with_value_{k}", MAPPING, "List[str]", f"Return the keys whose value is exactly {k}, in their "
         "order.", lambda m: [key for key, v in m.items() if v == k], lambda r: (counts(r, k + 2),)),
        ("top_keys", MAPPING + (("count", "int"),), "List[str]", "Return count keys: those with the largest "
         "values, largest first, keys with equal values in alphabetical order.",
         lambda m, c: sorted(m, key=lambda key: (-m[key], key))[:c], lambda r: (counts(r, 5), r.randint(1, 3))),
        ("rank_by_score_then_name", MAPPING, "List[str]", "The dictionary maps names to scores. Return the "
         "names by score, highest first, and names with equal scores in alphabetical order.",
         lambda m: sorted(m, key=lambda key: (-m[key], key)), small),
        ("competition_ranks", NUMS, "List[int]", "Rank every score in the list: the highest ranks 1, equal "
         "scores share a rank and the next rank skips the places they took (9, 7, 7, 5 rank 1, 2, 2, 4).",
         lambda v: [1 + sum(y > x for y in v) for x in v], lambda r: (int_list(r, 0, 9),)),
        ("star_bars", MAPPING, "List[str]", "Return one line for each key, in order: the key, a colon, a space "
         "and as many '*' as its value, such as 'apple: ***'.",
         lambda m: [f"{key}: {'*' * v}" for key, v in m.items()], lambda r: (counts(r, 6),)),
        ("sort_by_vowels_then_alphabet", WORDS_ARG, "List[str]", "Sort the words by how many vowels (a, e, i, "
         "o, u) they hold, fewest first, and words with as many vowels alphabetically.",
         lambda ws: sorted(ws, key=lambda w: (sum(c in "aeiou" for c in w), w)), lambda r: (word_list(r),)),
    ])


def cipher_tasks(k: int) -> list[Task]:
    """Letter codes and compression: mirror and keyed alphabets, zigzags, pig latin, runs, blocks, digits."""
    rails, word2 = 2 + k % 2, (lambda r: (r.choice(WORDS) + r.choice(WORDS),))
    return tasks([
        ("atbash", TEXT, "str", "Replace every lower-case letter by its mirror in the alphabet (a by z, b by y "
         "and so on); other characters stay as they are.",
         lambda s: "".join(chr(219 - ord(c)) if c.islower() else c for c in s), lambda r: (capitalized_sometimes(r),)),
        ("vigenere_encode", (("text", "str"), ("key", "str")), "str", "Move each letter of the lower-case text "
         "forward in the alphabet by the place (a = 0, b = 1 ...) of the key letter under it, wrapping from z "
         "to a, the key repeated as often as needed.",
         lambda s, key: "".join(chr((ord(c) + ord(key[i % len(key)]) - 194) % 26 + 97) for i, c in enumerate(s)),
         lambda r: (r.choice(WORDS), r.choice(("key", "abc", "lemon", "b", "zz")))),
        ("run_length_pairs", TEXT, "List[Tuple[str, int]]", "Return the runs of repeated characters of the "
         "string as (character, length) pairs, in order.", runs_of, lambda r: (repeated_letters(r),)),
        ("compress_runs", TEXT, "str", "Write each run of one repeated character as the character followed by "
         "the length of the run, leaving the length out for runs of one: 'aaabcc' becomes 'a3bc2'.",
         lambda s: "".join(c + str(n) * (n > 1) for c, n in runs_of(s)), lambda r: (repeated_letters(r),)),
        ("expand_count_prefixed", TEXT, "str", "Decode a string in which each letter comes after the number of "
         "times it repeats: '2a3b' becomes 'aabbb' and '10c' ten c's.",
         lambda s: "".join(c * int(n) for n, c in re.findall("([0-9]+)([a-z])", s)),
         lambda r: ("".join(f"{r.randint(1, 11)}{r.choice('abcxyz')}" for _ in range(r.randint(1, 3))),)),
        (f"rail_fence_{rails}", TEXT, "str", f"Write the characters of the string in a zigzag over {rails} rows "
         "(down from the first row to the last, then back up, and so on) and return the rows read one after "
         "the other.", lambda s: rail_fence(s, rails), word2),
        (f"reverse_blocks_of_{k}", TEXT, "str", f"Reverse the characters within each block of {k} consecutive "
         "characters; the last block may be shorter.",
         lambda s: "".join(s[i: i + k][::-1] for i in range(0, len(s), k)), word2),
        ("alphabet_positions", TEXT, "List[int]", "Return the place in the alphabet (a = 1, b = 2, up to z = 26) "
         "of every letter of the lower-case string, skipping other characters.",
         lambda s: [ord(c) - 96 for c in s if c.islower()], lambda r: (sentence(r)[:14],)),
        ("letters_from_positions", (("positions", "List[int]"),), "str", "Turn each number from 1 to 26 into the "
         "letter at that place in the alphabet (1 is 'a') and return the letters joined.",
         lambda v: "".join(chr(96 + p) for p in v), lambda r: ([r.randint(1, 26) for _ in range(r.randint(1, 6))],)),
        ("pig_latin", TEXT, "str", "Turn every word of the sentence into pig latin: a word that starts with a "
         "vowel gets 'way' added, any other word has its first letter moved to its end followed by 'ay'.",
         lambda s: " ".join(w + "way" if w[0] in "aeiou" else w[1:] + w[0] + "ay" for w in s.split()),
         lambda r: (sentence(r),)),
        (f"rotate_digits_by_{k}", TEXT, "str", f"Replace every digit of the string by the digit {k} places "
         "further on, wrapping from 9 back to 0; other characters stay as they are.",
         lambda s: "".join(str((int(c) + k) % 10) if c.isdigit() else c for c in s),
         lambda r: ("".join(r.choice(string.digits + "-") for _ in range(r.randint(3, 9))),)),
        ("riffle_halves", TEXT, "str", "Cut the string into a first and a second half (the first one character "
         "longer for an odd length) and take characters from the halves in turns, starting with the first.",
         lambda s: "".join(s[i // 2 + i % 2 * ((len(s) + 1) // 2)] for i in range(len(s))),
         lambda r: (r.choice(WORDS),)),
    ])


def calendar_tasks(k: int) -> list[Task]:
    """Dates and clock times in integers and 'HH:MM' strings: leap years, month lengths, weekdays, ages."""
    year, later = (("year", "int"),), 8 * k - 1  # 15 to 55 days: a different weekday shift for every k
    years = lambda r: (r.choice((r.randint(1800, 2100), 4 * r.randint(450, 525),  # noqa: E731
                                 100 * r.randint(17, 24))),)
    return tasks([
        ("is_leap_year", year, "bool", "Return True if the year is a leap year of the Gregorian calendar: "
         "divisible by 4, except the years divisible by 100 but not by 400.", is_leap, years),
        ("days_in_month", (("month", "int"),) + year, "int", "Return how many days the month (1 for January up "
         "to 12 for December) has in the year, February having 29 in leap years.", month_days,
         lambda r: (r.choice((2, 2, r.randint(1, 12))), *years(r))),
        ("day_of_year", DATE, "int", "Return which day of its year the date is, January 1 being day 1, leap "
         "years taken into account.", lambda d, m, y: sum(month_days(i, y) for i in range(1, m)) + d, a_date),
        ("next_day", DATE, "Tuple[int, int, int]", "Return the date of the day after, as (day, month, year).",
         next_day, a_date),
        ("minutes_to_time_of_day", (("minutes", "int"),), "str", "The number counts minutes since a midnight and "
         "may run past one day. Return the time the clock then shows, as 'HH:MM' on a 24-hour clock.", hhmm,
         lambda r: (r.randint(0, 4000),)),
        ("add_minutes", (("time", "str"), ("minutes", "int")), "str", "The time is 'HH:MM' on a 24-hour clock. "
         "Return the time, written the same way, that many minutes later, going past midnight when needed.",
         lambda t, m: hhmm(minutes_of(t) + m), lambda r: (time_string(r), r.randint(0, 1500))),
        ("minutes_until", (("start", "str"), ("end", "str")), "int", "Both times are 'HH:MM' on a 24-hour clock. "
         "Return how many minutes pass from start until the clock next shows end (0 when they are equal).",
         lambda a, b: (minutes_of(b) - minutes_of(a)) % 1440, lambda r: (time_string(r), time_string(r))),
        ("to_12_hour_clock", (("time", "str"),), "str", "Write a 24-hour time 'HH:MM' on a 12-hour clock as "
         "'H:MM AM' or 'H:MM PM', where midnight is '12:00 AM' and noon is '12:00 PM'.",
         lambda t: f"{(int(t[:2]) - 1) % 12 + 1}:{t[3:]} {'AM' if int(t[:2]) < 12 else 'PM'}",
         lambda r: (r.choice((time_string(r), time_string(r), "00:00", "12:00", "12:30")),)),
        ("count_leap_years", (("first", "int"), ("last", "int")), "int", "Return how many leap years of the "
         "Gregorian calendar there are from first to last, both included.",
         lambda a, b: sum(map(is_leap, range(a, b + 1))),
         lambda r: (a := r.randint(1850, 2050), a + r.randint(0, 120))),
        (f"weekday_after_{later}_days", (("day", "str"),), "str", f"The day is an English weekday name, from "
         f"'Monday' to 'Sunday'. Return the weekday it will be {later} days later.",
         lambda d: WEEKDAYS[(WEEKDAYS.index(d) + later) % 7], lambda r: (r.choice(WEEKDAYS),)),
        ("split_duration", (("seconds", "int"),), "Tuple[int, int, int, int]", "Return a number of seconds as "
         "(days, hours, minutes, seconds), with fewer than 24 hours, 60 minutes and 60 seconds.",
         lambda t: (t // 86400, t // 3600 % 24, t // 60 % 60, t % 60),
         lambda r: (r.randint(0, 10 ** r.randint(2, 6)),)),
        ("age_on_date", (("born", "Tuple[int, int, int]"), ("today", "Tuple[int, int, int]")), "int", "Both dates "
         "are (year, month, day), and today comes after born. Return the age in whole years, on today, of "
         "someone born on born.", lambda b, t: t[0] - b[0] - ((t[1], t[2]) < (b[1], b[2])),
         lambda r: ((y := r.randint(1940, 2010), r.randint(1, 12), r.randint(1, 28)),
                    (y + r.randint(1, 40), r.randint(1, 12), r.randint(1, 28)))),
    ])


def history_tasks(k: int) -> list[Task]:
    """Stacks, queues and undo: bracket depth, editors, browser history, postfix, paths, collisions, turns."""
    brackets = lambda r: ("".join(r.choice("()") for _ in range(r.randint(2, 10))),)  # noqa: E731
    return tasks([
        ("running_bracket_depth", TEXT, "List[int]", "The string holds '(' and ')'. Starting from 0, each '(' "
         "adds 1 to a depth and each ')' takes 1 away; return the depth after every character.",
         depths, brackets),
        ("brackets_to_add", TEXT, "int", "The string holds '(' and ')'. Return the fewest brackets that must be "
         "inserted to give every bracket a partner.",
         lambda s: 2 * -min(0, *depths(s)) + depths(s)[-1], brackets),
        ("strip_outer_brackets", TEXT, "str", "The string of '(' and ')' is balanced. Cut it into its shortest "
         "balanced pieces, remove the outermost pair of each piece and return what is left.",
         lambda s: "".join(c for c, before, after in zip(s, [0, *depths(s)], depths(s)) if before and after),
         lambda r: (balanced_brackets(r),)),
        ("edit_with_undo", ACTIONS, "str", "A text starts empty. Each action is 'type w', which adds the word w "
         "at its end, or 'undo', which removes what the latest 'type' not yet undone added (nothing when none "
         "is left). Return the text.", lambda acts: "".join(stack_states(acts, "type ")[-1]),
         lambda r: ([r.choice((f"type {r.choice(WORDS[:6])}", "type a", "undo")) for _ in range(r.randint(1, 6))],)),
        ("browser_history", ACTIONS, "str", "A browser opens on 'home'. Each action is 'visit p' (go to page p, "
         "forgetting any pages ahead), 'back' (one page back, if there is one) or 'forward' (one page ahead "
         "again, if there is one). Return the page it ends on.", browse,
         lambda r: ([r.choice((f"visit {r.choice(WORDS[:6])}", "back", "forward")) for _ in range(r.randint(1, 6))],)),
        ("evaluate_postfix", (("tokens", "List[str]"),), "int", "Evaluate an expression written in postfix "
         "order: a number goes on a stack, and '+', '-' or '*' replaces the two top numbers by their result, "
         "the lower one on the left.", evaluate_postfix, lambda r: (postfix_tokens(r, r.randint(2, 4)),)),
        ("simplify_path", (("path", "str"),), "str", "Simplify an absolute Unix path: drop empty parts and '.', "
         "let '..' remove the part before it (nothing goes above the root) and join the rest with '/', after a "
         "leading '/'.", simplify_path,
         lambda r: ("/" + "/".join(r.choice(("usr", "bin", "src", "..", ".", "")) for _ in range(r.randint(1, 6))),)),
        ("days_until_warmer", (("temperatures", "List[int]"),), "List[int]", "For each day, return how many days "
         "pass until a warmer one, or 0 if none comes.",
         lambda v: [next((j - i for j in range(i + 1, len(v)) if v[j] > t), 0) for i, t in enumerate(v)],
         lambda r: (int_list(r, 10, 20),)),
        ("surviving_asteroids", (("asteroids", "List[int]"),), "List[int]", "Asteroids fly along a line at one "
         "speed, positive ones to the right and negative ones to the left. When two meet, the smaller (by "
         "absolute value) breaks, and both break when equal. Return those left, in order.", surviving_asteroids,
         lambda r: ([r.choice((-1, 1)) * r.randint(1, 9) for _ in range(r.randint(2, 6))],)),
        (f"round_robin_order_{k}", (("durations", "List[int]"),), "List[int]", f"Jobs that need the given times "
         f"wait in a queue. The front job runs for up to {k} units, then goes to the back if it needs more. "
         "Return the indices of the jobs in the order they finish.", lambda v: round_robin(v, k),
         lambda r: ([r.randint(1, 3 * k) for _ in range(r.randint(2, 5))],)),
        ("stack_minimums", COMMANDS, "List[int]", "Apply the commands 'push x' and 'pop' to an empty stack (a "
         "pop on an empty stack does nothing) and return the smallest value on the stack after each one, or -1 "
         "when the stack is empty.", lambda cs: [min(map(int, s), default=-1) for s in stack_states(cs, "push ")],
         lambda r: (push_pop(r),)),
        ("max_stack_size", COMMANDS, "int", "Apply the commands 'push x' and 'pop' to an empty stack (a pop on "
         "an empty stack does nothing) and return the largest number of values it ever holds.",
         lambda cs: max(map(len, stack_states(cs, "push "))), lambda r: (push_pop(r),)),
    ])


def digit_tasks(k: int) -> list[Task]:
    """Decimal digits moved, removed, tested and added: rearrangements, Harshad, persistence, digit lists."""
    wide, with_zeros = (lambda r: (r.randint(1, 99999),)), (lambda r: (number_with_zeros(r),))
    digits_of = lambda r: [int(c) for c in str(r.randint(0, 10 ** r.randint(1, 4)))]  # noqa: E731
    return tasks([
        ("largest_from_digits", N, "int", "Return the largest number written with exactly the decimal digits of "
         "n, in some order.", lambda n: int("".join(sorted(str(n), reverse=True))), with_zeros),
        ("smallest_from_digits", N, "int", "Return the smallest number written with exactly the decimal digits "
         "of the positive n, in some order, that does not start with 0.", smallest_from_digits, with_zeros),
        (f"remove_digit_{k}", N, "int", f"Return the number formed by the decimal digits of n other than {k}, "
         "kept in order, or 0 when no digit is left.", lambda n: int(str(n).replace(str(k), "") or 0),
         lambda r: (int("".join(r.choice(f"{k}{k}0159") for _ in range(r.randint(1, 5)))),)),
        ("is_harshad_number", N, "bool", "Return True if the positive n is divisible by the sum of its decimal "
         "digits.", lambda n: n % sum(map(int, str(n))) == 0, lambda r: (r.randint(1, 300),)),
        ("swap_first_last_digits", N, "int", "Return n with its first and last decimal digits exchanged; a "
         "leading zero that results is dropped.", lambda n: int((s := str(n))[-1] + s[1:-1] + s[0]) if n > 9 else n,
         wide),
        ("multiplicative_persistence", N, "int", "Return how many times the decimal digits of n must be "
         "multiplied together, the product replacing n each time, until one digit is left.", persistence,
         lambda r: (r.randint(0, 10 ** r.randint(1, 5)),)),
        ("digit_at_place", N + (("place", "int"),), "int", "Return the decimal digit of n at the given place, "
         "place 0 being the units, 1 the tens and so on, or 0 beyond its first digit.",
         lambda n, p: n // 10 ** p % 10, lambda r: (r.randint(0, 99999), r.randint(0, 5))),
        (f"round_to_multiple_of_{k}", N, "int", f"Return the multiple of {k} nearest to n, the larger one when n "
         "lies exactly halfway between two.", lambda n: (2 * n + k) // (2 * k) * k, lambda r: (r.randint(0, 100),)),
        ("add_digit_lists", TWO_LISTS, "List[int]", "Each list holds the decimal digits of a number, the most "
         "significant first. Return the digits of their sum in the same form.",
         lambda a, b: [int(c) for c in str(int("".join(map(str, a))) + int("".join(map(str, b))))],
         lambda r: (digits_of(r), digits_of(r))),
        ("is_automorphic", N, "bool", "Return True if the square of n ends with the decimal digits of n, as "
         "76 * 76 = 5776 does.", lambda n: str(n * n).endswith(str(n)),
         lambda r: (r.choice((5, 6, 25, 76, 376, 625)) if r.random() < 0.5 else r.randint(0, 999),)),
        ("alternating_digit_sum", N, "int", "Add the decimal digits of n with signs taking turns, the leftmost "
         "digit counted plus: 4 - 7 + 2 for 472.", lambda n: sum(int(d) * (-1) ** i for i, d in enumerate(str(n))),
         wide),
        ("squares_chain_reaches_one", N, "bool", "Replace the positive n by the sum of the squares of its decimal "
         "digits, again and again. Return True if this reaches 1, and False if it loops forever without.",
         squares_chain_reaches_one,
         lambda r: (r.choice((r.randint(1, 100), r.randint(1, 100), 10 ** r.randint(0, 3), r.choice((7, 19, 23)))),)),
    ])


def window_tasks(k: int) -> list[Task]:
    """Local structure of a list: peaks and dips, width-k windows, step directions, balances, lags."""
    some, limit = (lambda r: (int_list(r, 0, 20),)), 5 * k
    window = lambda r: ([r.randint(-5, 20) for _ in range(r.randint(k, k + 4))],)  # noqa: E731  (1 to 5 windows)
    return tasks([
        ("local_maxima_indices", NUMS, "List[int]", "Return the indices of the elements greater than both their "
         "neighbours; the first and the last element never count.",
         lambda v: [i for i in range(1, len(v) - 1) if v[i - 1] < v[i] > v[i + 1]], some),
        ("local_minima_values", NUMS, "List[int]", "Return, in order, the elements smaller than both their "
         "neighbours, leaving out the first and the last element.",
         lambda v: [v[i] for i in range(1, len(v) - 1) if v[i - 1] > v[i] < v[i + 1]], some),
        (f"window_minima_{k}", NUMS, "List[int]", f"Return the smallest element of every run of {k} consecutive "
         "elements, from left to right.", lambda v: [min(v[i: i + k]) for i in range(len(v) - k + 1)], window),
        (f"window_spreads_{k}", NUMS, "List[int]", f"For every run of {k} consecutive elements, from left to "
         "right, return its largest element minus its smallest.",
         lambda v: [max(v[i: i + k]) - min(v[i: i + k]) for i in range(len(v) - k + 1)], window),
        (f"repeat_within_{k}", NUMS, "bool", f"Return True if some value occurs twice at positions at most {k} "
         "apart.", lambda v: any(x in v[i + 1: i + k + 1] for i, x in enumerate(v)), lambda r: (int_list(r, 0, 12),)),
        ("step_directions", NUMS, "List[str]", "For each step from one element to the next, return 'up' if the "
         "value rises, 'down' if it falls and 'same' if it stays.",
         lambda v: ["up" if b > a else "down" if b < a else "same" for a, b in zip(v, v[1:])],
         lambda r: (int_list(r, 0, 4),)),
        ("count_direction_changes", NUMS, "int", "Leaving out steps between equal neighbours, count how many "
         "times the list turns from rising to falling or from falling to rising.", direction_changes,
         lambda r: (int_list(r, 0, 6),)),
        ("neighbour_averages", NUMS, "List[float]", "Replace every element by the mean of itself and its "
         "neighbours (one neighbour for the first and the last), rounded to 1 decimal place.",
         lambda v: [round(sum(w) / len(w), 1) for w in (v[max(0, i - 1): i + 2] for i in range(len(v)))], some),
        ("products_of_others", NUMS, "List[int]", "Return, for every position, the product of all the other "
         "elements of the list.", lambda v: [math.prod(v[:i] + v[i + 1:]) for i in range(len(v))],
         lambda r: (int_list(r, -3, 6)[:5],)),
        ("balance_index", NUMS, "int", "Return the first index whose left side (the elements before it) adds up "
         "to the same as its right side (the elements after it), or -1 if there is none.",
         lambda v: next((i for i in range(len(v)) if sum(v[:i]) == sum(v[i + 1:])), -1),
         lambda r: (sometimes(r, balanced_halves(r), int_list(r, 0, 9)),)),
        (f"longest_stretch_within_{limit}", NUMS, "int", f"The elements are non-negative. Return the length of "
         f"the longest run of consecutive elements that adds up to at most {limit}.",
         lambda v: max(j - i for i in range(len(v) + 1) for j in range(i, len(v) + 1) if sum(v[i:j]) <= limit),
         lambda r: ([r.randint(0, 3 * k) for _ in range(r.randint(3, 8))],)),
        (f"lag_{k}_differences", NUMS, "List[int]", f"Return, for every position i with an element {k} places "
         "further on, that element minus the one at i.", lambda v: [b - a for a, b in zip(v, v[k:])], window),
        ("count_plateaus", NUMS, "int", "Count the runs of two or more equal consecutive elements.",
         lambda v: sum(n > 1 for _, n in runs_of(v)), lambda r: (int_list(r, 0, 3),)),
    ])


def fourth_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (range_tasks(k) + matrix_tasks(k) + tally_tasks(k) + cipher_tasks(k) + calendar_tasks(k)
            + history_tasks(k) + digit_tasks(k) + window_tasks(k))
