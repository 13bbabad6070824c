"""A third set of programming-task families for `task_prompts.py`: shapes the first two sets lack.

Five task files (34,000 prompts) were drawn from about 450 function names, so every function recurs
dozens of times: the drafter learns those families but gains little on HumanEval, which needs more
distinct tasks rather than more renderings of the same ones. This module adds eight families, about
110 tasks (over 200 names across k):

    divisors    gcd and lcm of a list, prime factors, perfect numbers, palindromic numbers, bases, Roman numerals
    parsing     "key=value;..." strings, numbers in text, colour codes, times, e-mail shapes, camelCase words
    membership  common values in order, symmetric difference, first repeat, subsets, gaps in a range
    nesting     flatten to any depth, nesting depth, pieces of given sizes, window maxima and means
    simulation  stack and queue commands, robot moves, balances, backspaces, light switches, Josephus
    predicates  mountain, arithmetic or geometric progression, zigzag, k equal in a row, alternating signs
    formatting  zero padding, thousands separators, ordinals, clock times, table rows, English lists
    counting    combinations, power sets, binomials, Pascal rows, stair climbs, grid paths, change

The rules are task_families.py's: a reference solution computes each docstring's examples, example
inputs make them informative, results print exactly, constants vary with k (2 to 7). None is a
HumanEval problem: no name is a HumanEval entry point, no description shares a 13-word n-gram with a
HumanEval prompt, and near misses (factorize, int_to_mini_roman, remove_duplicates, below_zero ...)
were left out or turned around (distinct prime factors, Roman to integer, lowest balance ...). No
name repeats one of the earlier catalogues', for any k. The reference solutions and example
generators too long for a lambda, and the shared argument shapes, live in `task_reference3.py`;
this module holds the family builders. It knows nothing about rendering or files: `task_prompts`
imports `third_tasks(k)` (`--families third`, or `every` for all three sets).

    python -m d3d.training.task_prompts --out data/task_prompts6.jsonl --count 8000 --seed 6 --families third \
        --id-prefix task6- --skip-texts data/task_prompts.jsonl ...
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from itertools import accumulate, combinations, count, groupby, permutations, zip_longest

from d3d.training.task_families import (NUMS, TEXT, WORDS, WORDS_ARG, Task, counts, int_list, is_prime, sentence, tasks,
                                        word_list)
from d3d.training.task_reference3 import (DIGIT_NAMES, MIXED_WORDS, N, NESTED, TWO_LISTS, apply_orders, balanced_halves,
                                          broken_sometimes, change_ways, clock, divisor_kind, expand_ranges, flatten,
                                          in_base, is_mountain, is_zigzag, josephus, looks_like_email,
                                          mountain_sometimes, nested_list, nesting_depth, ordinal, piece_sizes,
                                          proper_divisors, robot_position, roman_to_int, run_commands, run_counter,
                                          runs, sometimes, stair_climbs, to_roman, typed_text, with_repeats)


def divisor_tasks(k: int) -> list[Task]:
    """Number theory and digits: divisors, primes, palindromic and Armstrong numbers, bases, Roman numerals."""
    wide, small = (lambda r: (r.randint(1, 9999),)), (lambda r: (r.randint(1, 60),))
    return tasks([
        ("gcd_of_list", NUMS, "int", "Return the greatest common divisor of all the positive integers in the list.",
         lambda v: math.gcd(*v), lambda r: ([r.randint(1, 6) * r.randint(1, 15) for _ in range(r.randint(2, 5))],)),
        ("lcm_of_list", NUMS, "int", "Return the least common multiple of all the positive integers in the list.",
         lambda v: math.lcm(*v), lambda r: ([r.randint(1, 12) for _ in range(r.randint(2, 4))],)),
        ("distinct_prime_factors", N, "List[int]", "Return the distinct primes that divide n, in increasing "
         "order, each listed once.", lambda n: [p for p in range(2, n + 1) if n % p == 0 and is_prime(p)],
         lambda r: (r.randint(2, 300),)),
        ("proper_divisors", N, "List[int]", "Return the positive divisors of n that are smaller than n, in "
         "increasing order.", proper_divisors, small),
        ("is_perfect_number", N, "bool", "Return True if n is equal to the sum of its divisors smaller than "
         "itself, as 6 = 1 + 2 + 3 is.", lambda n: sum(proper_divisors(n)) == n,
         lambda r: (r.choice((6, 28, 496, r.randint(1, 500))),)),
        ("divisor_sum_kind", N, "str", "Add up the divisors of n that are smaller than n. Return 'perfect' if "
         "the sum equals n, 'abundant' if it is larger and 'deficient' if it is smaller.", divisor_kind,
         lambda r: (r.choice((6, 28, r.randint(1, 100), r.randint(1, 100))),)),
        ("digit_product", N, "int", "Return the product of all the decimal digits of n.",
         lambda n: math.prod(map(int, str(n))), wide),
        (f"count_digit_{k}", N, "int", f"Return how many times the digit {k} occurs in the decimal form of n.",
         lambda n: str(n).count(str(k)), lambda r: (int("".join(r.choice(f"{k}{k}0159") for _ in range(5))),)),
        ("is_palindromic_number", N, "bool", "Return True if the decimal digits of n read the same from left "
         "to right and from right to left.", lambda n: str(n) == str(n)[::-1],
         lambda r: (int((d := str(r.randint(1, 999))) + d[::-1][r.randint(0, 1):]) if r.random() < 0.5
                    else r.randint(0, 9999),)),
        ("next_palindromic_number", N, "int", "Return the smallest integer greater than n whose decimal digits "
         "read the same in both directions.", lambda n: next(m for m in count(n + 1) if str(m) == str(m)[::-1]),
         lambda r: (r.randint(0, 2000),)),
        (f"from_base_{k}", (("digits", "str"),), "int", f"The string holds the digits of a number written in "
         f"base {k}. Return the number as an integer.", lambda s: int(s, k),
         lambda r: (in_base(r.randint(0, 400), k),)),
        ("roman_to_int", (("numeral", "str"),), "int", "Convert a Roman numeral (letters I, V, X, L, C, D and M, "
         "where a smaller value written before a larger one is subtracted, as in IV or XC) to an integer.",
         roman_to_int, lambda r: (to_roman(r.randint(1, 3999)),)),
        ("is_armstrong_number", N, "bool", "Return True if n equals the sum of its digits, each raised to the "
         "power of how many digits n has (153 = 1**3 + 5**3 + 3**3).",
         lambda n: n == sum(int(d) ** len(str(n)) for d in str(n)),
         lambda r: (r.choice((153, 370, 371, 407, 1634, 8208, r.randint(10, 9999), r.randint(10, 9999))),)),
        ("factorial_trailing_zeros", N, "int", "Return how many zeros the decimal form of the factorial of n "
         "ends with.", lambda n: sum(n // 5 ** e for e in range(1, 4)), lambda r: (r.randint(0, 120),)),
        ("longest_binary_gap", N, "int", "Return the length of the longest run of zeros with a one on both "
         "sides in the binary form of n, or 0 if there is none.",
         lambda n: max(map(len, bin(n)[2:].strip("0").split("1"))), lambda r: (r.randint(1, 600),)),
        ("are_coprime", (("a", "int"), ("b", "int")), "bool", "Return True if a and b have no common divisor "
         "greater than 1.", lambda a, b: math.gcd(a, b) == 1, lambda r: (r.randint(2, 40), r.randint(2, 40))),
    ])


def parsing_tasks(k: int) -> list[Task]:
    """Reading and checking strings: key=value lists, numbers in text, simple formats, name splitting."""
    numbers_text = lambda r: (" ".join(r.choice((w, str(r.randint(0, 120)), w + str(r.randint(1, 9))))  # noqa: E731
                                        for w in word_list(r)),)
    hex_digits = "0123456789abcdefABCDEF"
    return tasks([
        ("parse_key_values", TEXT, "Dict[str, int]", "The string holds entries 'key=value' separated by "
         "semicolons, every value an integer. Return them as a dictionary, in the order they appear.",
         lambda s: {key: int(v) for key, v in (p.split("=") for p in s.split(";"))},
         lambda r: (";".join(f"{w}={r.randint(0, 99)}" for w in r.sample(WORDS, r.randint(1, 4))),)),
        ("numbers_in_text", TEXT, "List[int]", "Return the whole numbers written in the text (each maximal run "
         "of digits is one number), in order.", lambda s: [int(m) for m in re.findall(r"\d+", s)], numbers_text),
        ("sum_numbers_in_text", TEXT, "int", "Return the sum of the whole numbers that appear in the text, "
         "where each maximal run of digits is one number.", lambda s: sum(map(int, re.findall(r"\d+", s))),
         numbers_text),
        ("is_hex_colour", TEXT, "bool", "Return True if the string is a colour code: '#' followed by exactly "
         "six hexadecimal digits (0-9, a-f or A-F).", lambda s: re.fullmatch("#[0-9a-fA-F]{6}", s) is not None,
         lambda r: (broken_sometimes(r, "#" + "".join(r.choice(hex_digits) for _ in range(6)), "g0#"),)),
        ("is_valid_time_24h", TEXT, "bool", "Return True if the string is a time 'HH:MM' on a 24-hour clock: "
         "two digits of hours from 00 to 23, a colon, two digits of minutes from 00 to 59.",
         lambda s: re.fullmatch("([01][0-9]|2[0-3]):[0-5][0-9]", s) is not None,
         lambda r: (r.choice(("{:02d}:{:02d}", "{:02d}:{:02d}", "{}:{:02d}")).format(r.randint(0, 29),
                                                                                    r.randint(0, 69)),)),
        ("looks_like_email", TEXT, "bool", "Return True if the string has the shape of an e-mail address: "
         "exactly one '@', at least one character before it, and after it a part that contains a dot but does "
         "not start or end with one.", looks_like_email,
         lambda r: (r.choice(("{}@{}.com", "{}@{}.org", "{}{}.com", "{}@@{}.net", "@{}{}.com", "{}@{}", "{}@.{}",
                              "{}@{}.")).format(r.choice(WORDS), r.choice(WORDS)),)),
        ("count_words_starting_with_vowel", TEXT, "int", "Count the words of the sentence whose first letter "
         "is a vowel (a, e, i, o or u).", lambda s: sum(w[0] in "aeiou" for w in s.split()),
         lambda r: (sentence(r),)),
        (f"count_words_of_length_{k}", TEXT, "int", f"Count the words of the sentence that have exactly {k} "
         "letters.", lambda s: sum(len(w) == k for w in s.split()),
         lambda r: (" ".join(r.choice(MIXED_WORDS) for _ in range(r.randint(2, 7))),)),
        ("count_words_with_double_letter", TEXT, "int", "Count the words of the sentence in which some letter "
         "appears twice in a row.", lambda s: sum(any(a == b for a, b in zip(w, w[1:])) for w in s.split()),
         lambda r: (sentence(r),)),
        ("camel_case_words", TEXT, "List[str]", "Split a camelCase or PascalCase name into its words, each in "
         "lower case.", lambda s: [w.lower() for w in re.findall("[A-Z]?[a-z]+", s)],
         lambda r: ("".join(w if i == 0 and r.random() < 0.5 else w.title()
                            for i, w in enumerate(r.sample(WORDS, r.randint(1, 4)))),)),
        ("snake_to_title", TEXT, "str", "Turn a snake_case name into words separated by spaces, each starting "
         "with a capital letter: 'hello_world' becomes 'Hello World'.",
         lambda s: " ".join(w.title() for w in s.split("_")),
         lambda r: ("_".join(r.choice(WORDS) for _ in range(r.randint(1, 4))),)),
        ("expand_run_length", TEXT, "str", "Decode a run-length string in which every letter is followed by "
         "how many times it repeats (one digit from 1 to 9): 'a3b1' becomes 'aaab'.",
         lambda s: "".join(c * int(n) for c, n in re.findall("([a-z])([0-9])", s)),
         lambda r: ("".join(r.choice("abcxyz") + str(r.randint(1, 5)) for _ in range(r.randint(1, 4))),)),
        ("expand_number_ranges", TEXT, "List[int]", "The string lists numbers and ranges separated by commas, "
         "such as '1-3,5'. Return every number it covers, in order: '1-3,5' gives [1, 2, 3, 5].", expand_ranges,
         lambda r: (",".join(str(a) if r.random() < 0.4 else f"{a}-{a + r.randint(1, 3)}"
                             for a in sorted(r.sample(range(0, 30, 5), r.randint(1, 3)))),)),
        (f"mask_all_but_last_{k}", TEXT, "str", f"Replace every character of the string except the last {k} by "
         f"'#'; a string of at most {k} characters stays as it is.", lambda s: "#" * (len(s) - k) + s[-k:],
         lambda r: ("".join(str(r.randint(0, 9)) for _ in range(r.randint(2, 11))),)),
    ])


def membership_tasks(k: int) -> list[Task]:
    """Sets inside lists: shared, missing and repeated values, kept in order or sorted."""
    two, some = (lambda r: (int_list(r, 0, 9), int_list(r, 0, 9))), (lambda r: (int_list(r, 0, 12),))
    return tasks([
        ("common_in_order", TWO_LISTS, "List[int]", "Return the values of left that also occur in right, in the "
         "order of left, each value once.", lambda a, b: [x for x in dict.fromkeys(a) if x in b], two),
        ("symmetric_difference_sorted", TWO_LISTS, "List[int]", "Return the values that occur in exactly one of "
         "the two lists, in increasing order and without repeats.", lambda a, b: sorted(set(a) ^ set(b)), two),
        ("first_repeated_value", NUMS, "Optional[int]", "Reading the list from the start, return the first "
         "element whose value already appeared before it, or None if all elements are different.",
         lambda v: next((x for i, x in enumerate(v) if x in v[:i]), None), some),
        ("is_subset", (("part", "List[int]"), ("whole", "List[int]")), "bool", "Return True if every value of "
         "part also occurs in whole.", lambda p, w: all(x in w for x in p),
         lambda r: (sometimes(r, r.sample(w := int_list(r, 0, 12), 2), int_list(r, 0, 12)[:3]), w)),
        ("missing_from_range", NUMS, "List[int]", "Return the integers between the smallest and the largest "
         "element of the list that the list does not contain, in increasing order.",
         lambda v: sorted(set(range(min(v), max(v) + 1)) - set(v)), lambda r: (int_list(r, 0, 15),)),
        ("duplicated_values", NUMS, "List[int]", "Return the values that occur more than once in the list, in "
         "increasing order, each listed once.", lambda v: sorted(x for x, c in Counter(v).items() if c > 1), some),
        (f"values_seen_{k}_times", NUMS, "List[int]", f"Return the values that occur exactly {k} times in the "
         "list, in increasing order.", lambda v: sorted(x for x, c in Counter(v).items() if c == k),
         lambda r: (with_repeats(r, k),)),
        ("all_distinct", NUMS, "bool", "Return True if no value occurs twice in the list.",
         lambda v: len(set(v)) == len(v), some),
        ("difference_in_order", TWO_LISTS, "List[int]", "Return the elements of left that do not occur in "
         "right, in their order, repeats kept.", lambda a, b: [x for x in a if x not in b], two),
        ("count_shared_values", TWO_LISTS, "int", "Return how many different values occur in both lists.",
         lambda a, b: len(set(a) & set(b)), two),
        ("union_in_order", TWO_LISTS, "List[int]", "Return every value of the two lists once, in the order of "
         "its first appearance, reading left before right.", lambda a, b: list(dict.fromkeys(a + b)), two),
        (f"has_pair_differing_by_{k}", NUMS, "bool", f"Return True if two elements at different positions of "
         f"the list differ by exactly {k}.", lambda v: any(abs(x - y) == k for i, x in enumerate(v) for y in v[i + 1:]),
         lambda r: ([r.randint(0, 30) for _ in range(r.randint(2, 5))],)),
        ("shared_letters", (("first", "str"), ("second", "str")), "str", "Return the letters that occur in both "
         "words, in alphabetical order, each once.", lambda a, b: "".join(sorted(set(a) & set(b))),
         lambda r: (r.choice(WORDS), r.choice(WORDS))),
        ("missing_letters", TEXT, "str", "Return the lower-case letters of the alphabet that do not occur in "
         "the sentence, in alphabetical order.", lambda s: "".join(c for c in string.ascii_lowercase if c not in s),
         lambda r: (sentence(r),)),
    ])


def nesting_tasks(k: int) -> list[Task]:
    """Nested lists, lists of lists, pieces and sliding windows."""
    nested, lists_arg = (lambda r: (nested_list(r),)), (("lists", "List[List[int]]"),)
    window = lambda r: ([r.randint(-5, 20) for _ in range(r.randint(k, k + 4))],)  # noqa: E731
    lists = lambda r: ([int_list(r, 0, 9)[:r.randint(0, 4)] for _ in range(r.randint(2, 4))],)  # noqa: E731
    two = lambda r: (int_list(r, 0, 9), int_list(r, 0, 9)[:r.randint(1, 6)])  # noqa: E731
    return tasks([
        ("flatten_nested", NESTED, "List[int]", "The list holds integers and lists, nested to any depth. Return "
         "all the integers in one flat list, in the order they appear.", flatten, nested),
        ("nesting_depth", NESTED, "int", "Return how deeply the list is nested: 1 for a list with no lists "
         "inside, and one more for every level of lists within lists.", nesting_depth, nested),
        ("nested_sum", NESTED, "int", "Return the sum of all the integers in the list, at any depth of nesting.",
         lambda v: sum(flatten(v)), nested),
        (f"count_nested_above_{k}", NESTED, "int", f"Count the integers greater than {k} in the list, at any "
         "depth of nesting.", lambda v: sum(x > k for x in flatten(v)), nested),
        ("split_by_sizes", NUMS + (("sizes", "List[int]"),), "List[List[int]]", "Cut the list into consecutive "
         "pieces whose lengths are given by sizes, in order; the sizes add up to the length of the list.",
         lambda v, s: [v[a - b: a] for a, b in zip(accumulate(s), s)],
         lambda r: (v := int_list(r, 0, 20), piece_sizes(r, len(v)))),
        (f"window_maxima_{k}", NUMS, "List[int]", f"Return the largest element of every window of {k} "
         "consecutive elements, from left to right.", lambda v: [max(v[i: i + k]) for i in range(len(v) - k + 1)],
         window),
        (f"window_means_{k}", NUMS, "List[float]", f"Return the mean of every window of {k} consecutive "
         "elements, rounded to 1 decimal place.",
         lambda v: [round(sum(v[i: i + k]) / k, 1) for i in range(len(v) - k + 1)], window),
        ("longest_sublist", lists_arg, "List[int]", "Return the longest of the inner lists; the first one if "
         "several are equally long.", lambda ls: max(ls, key=len), lists),
        (f"sublists_containing_{k}", lists_arg, "int", f"Count the inner lists that contain the value {k}.",
         lambda ls: sum(k in inner for inner in ls), lists),
        ("neighbour_products", NUMS, "List[int]", "Return the product of every two neighbouring elements, from "
         "left to right.", lambda v: [a * b for a, b in zip(v, v[1:])], lambda r: (int_list(r, -5, 9),)),
        ("second_differences", NUMS, "List[int]", "Take the differences between neighbouring elements, then the "
         "differences between neighbouring differences, and return those.",
         lambda v: [c - 2 * b + a for a, b, c in zip(v, v[1:], v[2:])], lambda r: (int_list(r, -5, 20),)),
        ("interleave_lists", TWO_LISTS, "List[int]", "Take elements from the two lists in turns, starting with "
         "left; when one list runs out, append the rest of the other.",
         lambda a, b: [x for pair in zip_longest(a, b) for x in pair if x is not None], two),
        ("pair_off", NUMS, "List[Tuple[int, int]]", "Group the elements two by two (first with second, third "
         "with fourth ...) as tuples; a last element without a partner is dropped.",
         lambda v: list(zip(v[::2], v[1::2])), lambda r: (int_list(r, 0, 20),)),
        ("add_elementwise", TWO_LISTS, "List[int]", "Add the two lists position by position; where one list is "
         "longer, its extra elements are kept unchanged.",
         lambda a, b: [x + y for x, y in zip_longest(a, b, fillvalue=0)], two),
    ])


def simulation_tasks(k: int) -> list[Task]:
    """Replaying operations: stack and queue commands, moves, balances, switches, typing, a circle game."""
    amounts = lambda r: ([r.randint(-2 * k, 6 * k) for _ in range(r.randint(2, 8))],)  # noqa: E731
    commands = (("commands", "List[str]"),)
    return tasks([
        ("run_stack_commands", commands, "List[int]", "Start with an empty stack and apply the commands in "
         "order: 'push x' puts the integer x on top, 'pop' removes the top value (and does nothing on an empty "
         "stack). Return the stack from bottom to top.", lambda cs: run_commands(cs, False),
         lambda r: ([f"push {r.randint(0, 9)}" if r.random() < 0.6 else "pop" for _ in range(r.randint(2, 7))],)),
        ("run_queue_commands", commands, "List[int]", "Start with an empty queue and apply the commands in "
         "order: 'enqueue x' adds the integer x at the back, 'dequeue' removes the front value (and does nothing "
         "on an empty queue). Return the queue from front to back.", lambda cs: run_commands(cs, True),
         lambda r: ([f"enqueue {r.randint(0, 9)}" if r.random() < 0.6 else "dequeue"
                     for _ in range(r.randint(2, 7))],)),
        ("robot_position", (("moves", "str"),), "Tuple[int, int]", "A robot starts at (0, 0). Each move 'U' "
         "adds 1 to y, 'D' takes 1 from y, 'R' adds 1 to x and 'L' takes 1 from x. Return where the robot ends, "
         "as (x, y).", robot_position, lambda r: ("".join(r.choice("UDLR") for _ in range(r.randint(1, 8))),)),
        ("robot_returns_home", (("moves", "str"),), "bool", "A robot starts at (0, 0) and moves one step up, "
         "down, right or left for each letter 'U', 'D', 'R' or 'L'. Return True if it ends where it started.",
         lambda m: robot_position(m) == (0, 0),
         lambda r: ("".join(r.sample(m := "".join(r.choice(("UD", "LR")) for _ in range(r.randint(1, 3)))
                                    + r.choice(("", "", "U", "R", "LL")), len(m))),)),
        (f"days_to_save_{10 * k}", (("amounts", "List[int]"),), "int", f"Starting from 0, add one amount a day, "
         f"in order. Return after how many days the total first reaches at least {10 * k}, or -1 if it never "
         "does.", lambda v: next((i + 1 for i, t in enumerate(accumulate(v)) if t >= 10 * k), -1), amounts),
        ("lowest_balance", (("amounts", "List[int]"),), "int", "An account starts at 0 and the amounts are added "
         "to it in order (negative ones are withdrawals). Return the lowest value the account ever holds, "
         "counting the starting 0.", lambda v: min([0, *accumulate(v)]), amounts),
        ("count_switches", (("states", "List[str]"),), "int", "Each element is 'on' or 'off'. Count how many "
         "times the state differs from the one before it.", lambda v: sum(a != b for a, b in zip(v, v[1:])),
         lambda r: ([r.choice(("on", "off")) for _ in range(r.randint(1, 7))],)),
        ("toggle_lights", (("lights", "List[bool]"), ("presses", "List[int]")), "List[bool]", "Each press "
         "flips the light at that index between on (True) and off (False). Return the lights after all the "
         "presses.", lambda ls, ps: [on != (ps.count(i) % 2 == 1) for i, on in enumerate(ls)],
         lambda r: (ls := [r.random() < 0.5 for _ in range(r.randint(1, 4))],
                    [r.randrange(len(ls)) for _ in range(r.randint(0, 4))])),
        ("elevator_travel", (("floors", "List[int]"),), "int", "An elevator starts on floor 0 and stops at the "
         "floors of the list, in order. Return how many floors it travels in all, up and down.",
         lambda v: sum(abs(b - a) for a, b in zip([0] + v, v)), lambda r: (int_list(r, -2, 12),)),
        ("apply_orders", (("stock", "Dict[str, int]"), ("orders", "List[Tuple[str, int]]")), "Dict[str, int]",
         "Each order (item, amount) adds amount to the stock of item; a negative amount takes it away. An item "
         "not yet in stock starts at 0 and goes at the end. Return the stock after all the orders.",
         apply_orders,
         lambda r: (counts(r, 9, 8), [(r.choice(WORDS[:8]), r.randint(-5, 5)) for _ in range(r.randint(1, 3))])),
        ("run_counter", (("operations", "List[str]"),), "int", "A counter starts at 0. Apply the operations in "
         "order: 'inc' adds 1, 'dec' takes 1 away and 'double' doubles it. Return its final value.", run_counter,
         lambda r: ([r.choice(("inc", "inc", "dec", "double")) for _ in range(r.randint(1, 7))],)),
        ("type_with_backspaces", (("keys", "str"),), "str", "Type the characters of the string in order, where "
         "'#' is a backspace that deletes the last character typed, if there is one. Return the typed text.",
         typed_text, lambda r: ("".join(r.choice("abcde##") for _ in range(r.randint(3, 9))),)),
        (f"josephus_every_{k}", N, "int", f"n people stand in a circle, numbered 1 to n. Counting round the "
         f"circle from person 1, every {k}-th person counted leaves the circle. Return the number of the last "
         "person left.", lambda n: josephus(n, k), lambda r: (r.randint(1, 12),)),
    ])


def predicate_tasks(k: int) -> list[Task]:
    """Yes/no questions about a whole sequence: shapes, progressions, runs, alternation, balance."""
    return tasks([
        ("is_mountain", NUMS, "bool", "Return True if the list strictly rises to a single highest element and "
         "then strictly falls, with at least one element before and one after the top.", is_mountain,
         lambda r: (mountain_sometimes(r),)),
        ("is_arithmetic_progression", NUMS, "bool", "Return True if the differences between neighbouring "
         "elements are all the same.", lambda v: len({b - a for a, b in zip(v, v[1:])}) <= 1,
         lambda r: (sometimes(r, list(range(r.randint(-5, 5), 40, r.randint(1, 7)))[:r.randint(3, 6)],
                              int_list(r, 0, 9)),)),
        ("is_geometric_progression", NUMS, "bool", "The elements are positive. Return True if every element "
         "after the first is the one before it multiplied by the same ratio.",
         lambda v: all(b * v[0] == a * v[1] for a, b in zip(v, v[1:])),
         lambda r: (sometimes(r, [a * q ** i for a, q in [(r.randint(1, 5), r.randint(1, 3))]
                                    for i in range(r.randint(3, 5))], int_list(r, 1, 30)),)),
        (f"has_{k}_equal_in_a_row", NUMS, "bool", f"Return True if some value occurs at least {k} times in a "
         "row in the list.", lambda v: any(len(list(run)) >= k for _, run in groupby(v)),
         lambda r: (runs(r, k),)),
        ("alternates_parity", NUMS, "bool", "Return True if even and odd elements take turns all along the "
         "list.", lambda v: all((a - b) % 2 for a, b in zip(v, v[1:])),
         lambda r: (sometimes(r, [2 * r.randint(0, 9) + (i + p) % 2 for p in [r.randint(0, 1)]
                                    for i in range(r.randint(2, 6))], int_list(r, 0, 20)),)),
        ("is_strictly_decreasing", NUMS, "bool", "Return True if every element is smaller than the one before "
         "it.", lambda v: all(a > b for a, b in zip(v, v[1:])),
         lambda r: (sometimes(r, sorted(set(int_list(r, 0, 30)), reverse=True), int_list(r, 0, 30)),)),
        ("is_permutation_of_range", NUMS, "bool", "Return True if the list holds every integer from 1 to its "
         "length exactly once, in any order.", lambda v: sorted(v) == list(range(1, len(v) + 1)),
         lambda r: (sometimes(r, r.sample(p := list(range(1, r.randint(3, 8))), len(p)),
                              r.sample(range(1, 8), r.randint(2, 7))),)),
        (f"neighbours_within_{k}", NUMS, "bool", f"Return True if every two neighbouring elements differ by at "
         f"most {k}.", lambda v: all(abs(b - a) <= k for a, b in zip(v, v[1:])),
         lambda r: (list(accumulate(r.randint(-k - 2, k + 1) for _ in range(r.randint(2, 6)))),)),
        ("signs_alternate", NUMS, "bool", "Return True if the elements take turns being strictly positive and "
         "strictly negative.", lambda v: all(a * b < 0 for a, b in zip(v, v[1:])),
         lambda r: (sometimes(r, [r.randint(1, 9) * (-1) ** i for i in range(r.randint(2, 6))], int_list(r, -9, 9)),)),
        ("is_zigzag", NUMS, "bool", "Return True if the list goes up and down in turns: no two neighbours are "
         "equal, and every step changes direction from the step before.", is_zigzag,
         lambda r: (sometimes(r, list(accumulate(r.randint(1, 5) * (-1) ** i for i in range(r.randint(2, 6)))),
                              int_list(r, 0, 9)),)),
        ("has_majority_value", NUMS, "bool", "Return True if some value fills more than half of the positions "
         "of the list.", lambda v: any(2 * c > len(v) for c in Counter(v).values()),
         lambda r: (with_repeats(r, r.randint(3, 5)),)),
        (f"total_is_multiple_of_{k}", NUMS, "bool", f"Return True if the sum of the list is divisible by {k}.",
         lambda v: sum(v) % k == 0, lambda r: ((v := int_list(r, 0, 20)) + [-sum(v) % k] * (r.random() < 0.4),)),
        ("halves_have_equal_sums", NUMS, "bool", "Return True if the first half of the list adds up to the "
         "same as the second half; with an odd length the middle element belongs to neither.",
         lambda v: sum(v[: len(v) // 2]) == sum(v[(len(v) + 1) // 2:]),
         lambda r: (sometimes(r, balanced_halves(r), int_list(r, 0, 9)),)),
    ])


def formatting_tasks(k: int) -> list[Task]:
    """Numbers and text laid out: padding, separators, ordinals, clock times, table rows, English lists."""
    width, wide = k + 2, 2 * k + 3
    return tasks([
        (f"zero_pad_to_{k}_digits", NUMS, "List[str]", f"Return every non-negative number as a string with "
         f"zeros added on the left up to {k} digits; longer numbers stay as they are.",
         lambda v: [str(x).zfill(k) for x in v],
         lambda r: ([r.randint(0, 10 ** r.randint(1, k + 1)) for _ in range(r.randint(2, 5))],)),
        ("with_thousands_separators", N, "str", "Return n written with a comma between every group of three "
         "digits, counting from the right: 1234567 becomes '1,234,567'.", lambda n: f"{n:,}",
         lambda r: (r.randint(0, 10 ** r.randint(2, 9)),)),
        ("to_ordinal", N, "str", "Return n followed by its English ordinal suffix: 1st, 2nd, 3rd, 4th, 11th, "
         "12th, 13th, 21st, 22nd and so on.", ordinal, lambda r: (r.randint(0, 130),)),
        ("seconds_to_clock", (("seconds", "int"),), "str", "Write a number of seconds as 'H:MM:SS': the hours, "
         "then the minutes and the seconds as two digits each.", clock, lambda r: (r.randint(0, 40000),)),
        ("clock_to_seconds", (("duration", "str"),), "int", "The string is a duration 'H:MM:SS' (hours, minutes, "
         "seconds). Return how many seconds it lasts.",
         lambda s: sum(int(p) * 60 ** i for i, p in enumerate(reversed(s.split(":")))),
         lambda r: (clock(r.randint(0, 40000)),)),
        (f"table_row_width_{width}", (("cells", "List[str]"),), "str", f"Return the cells joined by ' | ', each "
         f"cut to its first {width} characters or padded with spaces on the right to exactly {width}.",
         lambda cs: " | ".join(c[:width].ljust(width) for c in cs), lambda r: (word_list(r)[:4],)),
        ("cents_to_dollars", (("cents", "int"),), "str", "Write an amount given in cents as dollars: a '$', the "
         "whole dollars, a dot and two digits of cents, so 1234 becomes '$12.34'.",
         lambda c: f"${c // 100}.{c % 100:02d}", lambda r: (r.randint(0, 10 ** r.randint(1, 6)),)),
        ("percent_string", (("part", "int"), ("whole", "int")), "str", "Return part as a percentage of whole "
         "(which is positive), rounded to a whole number as round() does, followed by '%'.",
         lambda p, w: f"{round(p / w * 100)}%", lambda r: (r.randint(0, w := r.randint(1, 200)), w)),
        ("english_list", WORDS_ARG, "str", "Join the words as English does: one word alone, two joined by "
         "' and ', more separated by ', ' except the last two, which are joined by ' and '.",
         lambda ws: " and ".join([", ".join(ws[:-1]), ws[-1]] if len(ws) > 1 else ws),
         lambda r: (r.sample(WORDS, r.randint(1, 4)),)),
        (f"center_in_width_{wide}", TEXT, "str", f"Center the word in a field {wide} characters wide, filled "
         f"with '-' on both sides, as str.center({wide}, '-') does.", lambda s: s.center(wide, "-"),
         lambda r: (r.choice(WORDS),)),
        ("spell_digits", N, "str", "Return the English names of the decimal digits of n, separated by spaces: "
         "305 becomes 'three zero five'.", lambda n: " ".join(DIGIT_NAMES[int(d)] for d in str(n)),
         lambda r: (r.randint(0, 99999),)),
        ("hours_and_minutes", (("minutes", "int"),), "str", "Write a number of minutes as hours and minutes, "
         "such as '2h 5m' for 125, leaving out the hours when there are none ('45m').",
         lambda m: f"{m // 60}h {m % 60}m" if m >= 60 else f"{m}m", lambda r: (r.randint(0, 600),)),
        ("iso_date", (("day", "int"), ("month", "int"), ("year", "int")), "str", "Return the date as "
         "'YYYY-MM-DD', with the month and the day written as two digits each.",
         lambda d, m, y: f"{y:04d}-{m:02d}-{d:02d}",
         lambda r: (r.randint(1, 28), r.randint(1, 12), r.randint(1900, 2099))),
    ])


def counting_tasks(k: int) -> list[Task]:
    """Small combinatorics: choosing, arranging, Pascal's triangle, climbing stairs, paths and change."""
    size, longest, coins = 2 + k % 2, 2 + k % 2, (1, 2, k + 3)
    n_and_r = (("n", "int"), ("r", "int"))
    return tasks([
        (f"combinations_of_{size}", NUMS, "List[List[int]]", f"Return every way to choose {size} elements of "
         f"the list, each as a list keeping the elements' order, ordered by the positions of the elements chosen.",
         lambda v: [list(c) for c in combinations(v, size)],
         lambda r: ([r.randint(0, 9) for _ in range(r.randint(size, size + 2))],)),
        ("power_set", NUMS, "List[List[int]]", "Return every subset of the list as a list keeping the elements' "
         "order: the empty one first, then by size, and subsets of one size by the positions of their elements.",
         lambda v: [list(c) for n in range(len(v) + 1) for c in combinations(v, n)],
         lambda r: ([r.randint(0, 9) for _ in range(r.randint(1, 3))],)),
        ("count_arrangements", n_and_r, "int", "Return in how many orders r of n different items can be lined "
         "up, n! / (n - r)!, or 0 when r is greater than n.", math.perm,
         lambda r: (r.randint(0, 10), r.randint(0, 6))),
        ("binomial_coefficient", n_and_r, "int", "Return how many ways there are to pick r items out of n "
         "different ones when the order does not matter, or 0 when r is greater than n.", math.comb,
         lambda r: (r.randint(0, 12), r.randint(0, 6))),
        ("pascal_row", N, "List[int]", "Return row n of Pascal's triangle, counting the top row [1] as row 0.",
         lambda n: [math.comb(n, i) for i in range(n + 1)], lambda r: (r.randint(0, 8),)),
        (f"stair_climbs_max_step_{longest}", N, "int", f"Return in how many ways a staircase of n steps can be "
         f"climbed taking from 1 to {longest} steps at a time.", lambda n: stair_climbs(n, longest),
         lambda r: (r.randint(1, 12),)),
        ("distinct_permutations", TEXT, "List[str]", "Return every different ordering of the characters of the "
         "string, in alphabetical order.", lambda s: sorted({"".join(p) for p in permutations(s)}),
         lambda r: ("".join(r.choice("abc") for _ in range(r.randint(1, 4))),)),
        ("grid_paths", (("rows", "int"), ("cols", "int")), "int", "Return how many paths lead from the top left "
         "to the bottom right cell of a grid with the given rows and columns, moving only right or down.",
         lambda a, b: math.comb(a + b - 2, a - 1), lambda r: (r.randint(1, 6), r.randint(1, 6))),
        ("nth_catalan", N, "int", "Return the n-th Catalan number; the sequence begins 1, 1, 2, 5, 14, 42 for n "
         "from 0.", lambda n: math.comb(2 * n, n) // (n + 1), lambda r: (r.randint(0, 12),)),
        ("count_change_ways", (("amount", "int"),), "int", f"Return how many different collections of coins "
         f"worth 1, 2 and {k + 3} add up to amount (the order of the coins does not matter).",
         lambda a: change_ways(a, coins), lambda r: (r.randint(0, 25),)),
        ("factorial", N, "int", "Return the product of the integers from 1 to n (1 when n is 0).",
         math.factorial, lambda r: (r.randint(0, 12),)),
        ("cartesian_pairs", (("left", "List[int]"), ("right", "List[str]")), "List[Tuple[int, str]]",
         "Return every pair (x, y) with x from left and y from right, all pairs of the first x before those of "
         "the second and so on.", lambda a, b: [(x, y) for x in a for y in b],
         lambda r: ([r.randint(0, 9) for _ in range(r.randint(1, 3))], r.sample(WORDS, r.randint(1, 3)))),
        (f"subarrays_summing_to_{k}", NUMS, "int", f"Count the runs of one or more consecutive elements whose "
         f"sum is {k}.", lambda v: sum(sum(v[i:j]) == k for i in range(len(v)) for j in range(i + 1, len(v) + 1)),
         lambda r: (int_list(r, -3, 6),)),
    ])


def third_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (divisor_tasks(k) + parsing_tasks(k) + membership_tasks(k) + nesting_tasks(k) + simulation_tasks(k)
            + predicate_tasks(k) + formatting_tasks(k) + counting_tasks(k))
