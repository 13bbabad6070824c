"""A seventh set of programming-task families for `task_prompts.py`: shapes the first six sets lack.

The six earlier sets hold about 690 function names, and the sixth set's training functions have been
asked about 8,000 ways, so the data needs new functions rather than new renderings (docs/training.md).
This module adds ten more families, 100 tasks for each k (170 names across k):

    polynomials  coefficient lists: values, sums, products, shifts, powers, text, division by x - r, roots
    fractions    (numerator, denominator) pairs: sums, products, order, Egyptian and continued fractions
    recurrences  look-and-say, Recaman, Thue-Morse, Kaprekar, Van Eck, Padovan, Stern, hailstone peaks
    boards       rows of characters: minesweeper hints, a life step, regions, mazes, queens, falling stones
    documents    nested dictionaries: dotted keys both ways, deep merges, depth, leaves, pruning, renaming
    tokens       expression tokens, word bigrams, sentences, words used once, contexts, syllables, offsets
    music        note names, semitones, major scales and triads, MIDI numbers, tempo, bars, intervals
    colours      RGB triples: hex codes, mixing, inverting, grey levels, nearest names, lightening, hue
    interest     whole cents: simple and compound interest, doubling, loans, savings, instalments, rounding
    tariffs      bands and brackets: income tax, power bills, postage, service charges, fares, phone plans

The rules are task_families6.py's: reference solutions compute the examples, example inputs make them
informative, results print exactly, constants vary with k (2 to 7), no name is a HumanEval entry point
or an earlier catalogue's (for any k), no description shares a 13-word n-gram with a HumanEval prompt,
and a name with the constant k (or a number made from it) ends with it, so holding a function out
holds it out under every k. Near misses of the earlier sets were turned around: dotted keys made from
nested dictionaries (not a dotted path looked up), the peak of a hailstone sequence (not its steps),
paths through dictionaries (not nested lists), tiered charges (not the fifth set's ledgers and stock),
polynomial coefficients (not HumanEval's derivative or zero finding). Reference solutions, generators
and argument shapes are in `task_reference7.py` (polynomials to documents) and `task_reference7b.py`
(tokens to tariffs). `task_prompts` imports `seventh_tasks(k)` (`--families seventh`) and its
docstring gives the commands that drew data/task_dev7_prompts.jsonl and data/task_prompts10.jsonl.
"""

from __future__ import annotations

from fractions import Fraction

from d3d.training.task_families import TEXT, Task, tasks
from d3d.training.task_reference3 import N
from d3d.training.task_reference7 import (BOARD, COEFFICIENTS, DOCUMENT, FRACTION_PAIR, KEYS, TWO_POLYNOMIALS,
                                          add_polynomials, board_of, cheapest_path, continued_fraction, cost_grid,
                                          deep_merge, dict_depth, divide_by_root, document, egyptian, evaluate,
                                          flatten_dotted, four_digits, fraction, from_terms, hailstone_peak,
                                          kaprekar_steps, largest_leaf_path, letter_grid, life_step, look_and_say,
                                          lowest_terms, map_leaves, maze, maze_steps, minesweeper, multiply, padovan,
                                          polynomial, polynomial_text, power, proper_fraction, prune_empty, queens,
                                          queens_safe, recaman, region_size, rename_key, repeating_decimal,
                                          scaled_fraction, settle, shifted, sign_changes, stern, summing_previous,
                                          triangular_root, two_documents, unflatten_dotted, van_eck, with_roots,
                                          word_in_grid)
from d3d.training.task_reference7b import (GRAM_WORDS, INTERVALS, NOTES, POWER_TIERS, RGB, SHORT_WORDS, TWO_RGB, banded,
                                           bigram_counts, cash_rounded, cheapest_plan, closest_colour, colour, compound,
                                           contexts, expression, hex_colour, hue, income_tax, instalments, loan_months,
                                           major_scale, midi_note, midi_to_note, most_common_gram, note_to_midi,
                                           parking_fee, plain_words, plans, postage, posterize, prose, savings_months,
                                           split_sentences, spread_amount, syllables, tokenize, transpose, volume_total,
                                           word, word_offsets, years_to_double)


def polynomial_tasks(k: int) -> list[Task]:
    """Polynomials as coefficient lists, the constant term first."""
    two = lambda r: (polynomial(r), polynomial(r))  # noqa: E731
    return tasks([
        ("polynomial_value", COEFFICIENTS + (("x", "int"),), "int", "The list holds a polynomial's coefficients, "
         "the constant term first and then those of x, x squared and so on. Return its value at x.", evaluate,
         lambda r: (polynomial(r), r.randint(-3, 3))),
        ("add_polynomials", TWO_POLYNOMIALS, "List[int]", "Each list holds a polynomial's coefficients, the "
         "constant term first. Return the coefficients of their sum in the same order, without zeros at the "
         "high end ([0] when the sum is zero).", add_polynomials, two),
        ("multiply_polynomials", TWO_POLYNOMIALS, "List[int]", "Each list holds a polynomial's coefficients, the "
         "constant term first. Return the coefficients of their product in the same order, without zeros at the "
         "high end ([0] when the product is zero).", multiply, two),
        (f"shift_polynomial_by_{k}", COEFFICIENTS, "List[int]", "The list holds the coefficients of p(x), the "
         f"constant term first. Return, in the same order, the coefficients of p(x + {k}).",
         lambda c: shifted(c, k), lambda r: (polynomial(r, 1, 3),)),
        (f"raise_polynomial_to_{k}", COEFFICIENTS, "List[int]", "The list holds a polynomial's coefficients, the "
         f"constant term first. Return, in the same order, the coefficients of the polynomial raised to the power {k}.",
         lambda c: power(c, k),
         lambda r: ([r.randint(-2, 2) for _ in range(r.randint(1, 2))] + [r.choice((1, -1))],)),
        ("polynomial_degree", COEFFICIENTS, "int", "The list holds a polynomial's coefficients, the constant term "
         "first, perhaps with zeros at the high end. Return the highest power of x with a non-zero coefficient, or "
         "-1 if every coefficient is zero.",
         lambda c: max((i for i, v in enumerate(c) if v), default=-1),
         lambda r: (polynomial(r) + [0] * r.randint(0, 2),)),
        ("polynomial_to_text", COEFFICIENTS, "str", "The list holds a polynomial's coefficients, the constant "
         "term first. Write it highest power first, such as '3x^2 - x + 4': terms with coefficient 0 left out, a "
         "coefficient of 1 or -1 shown only as its sign, x for the first power, ' + ' or ' - ' between terms "
         "and '0' when every coefficient is zero.", polynomial_text, lambda r: (polynomial(r),)),
        ("divide_by_linear_factor", COEFFICIENTS + (("root", "int"),), "Tuple[List[int], int]", "The list holds a "
         "polynomial's coefficients, the constant term first. Divide it by (x - root) and return the quotient's "
         "coefficients in the same order and the remainder.", divide_by_root,
         lambda r: (polynomial(r, 2, 4), r.randint(-3, 3))),
        ("integer_roots", COEFFICIENTS, "List[int]", "The list holds a polynomial's coefficients, the constant "
         "term first. Return, in increasing order and without repeats, the whole numbers from -10 to 10 at which "
         "it is zero.", lambda c: [x for x in range(-10, 11) if evaluate(c, x) == 0], lambda r: (with_roots(r),)),
        ("coefficient_sign_changes", COEFFICIENTS, "int", "Going through the coefficients in order and skipping "
         "zeros, return how often a coefficient has the opposite sign of the one before it.", sign_changes,
         lambda r: (polynomial(r, 2, 6),)),
    ])


def fraction_tasks(k: int) -> list[Task]:
    """Fractions as (numerator, denominator) pairs with a positive denominator, answers in lowest terms."""
    two = lambda r: (fraction(r), fraction(r))  # noqa: E731
    value = lambda f: Fraction(*f)  # noqa: E731
    pair = lambda x: (x.numerator, x.denominator)  # noqa: E731
    return tasks([
        ("add_fractions", FRACTION_PAIR, "Tuple[int, int]", "Each fraction is (numerator, denominator) with a "
         "positive denominator. Return their sum the same way, in lowest terms.",
         lambda a, b: pair(value(a) + value(b)), two),
        ("multiply_fractions", FRACTION_PAIR, "Tuple[int, int]", "Each fraction is (numerator, denominator) with "
         "a positive denominator. Return their product the same way, in lowest terms (0 is (0, 1)).",
         lambda a, b: pair(value(a) * value(b)), two),
        ("compare_fractions", FRACTION_PAIR, "int", "Each fraction is (numerator, denominator) with a positive "
         "denominator. Return -1 if the first is smaller, 1 if it is larger and 0 if they are equal.",
         lambda a, b: (value(a) > value(b)) - (value(a) < value(b)),
         lambda r: (f := fraction(r), r.choice(((2 * f[0], 2 * f[1]), fraction(r))))),
        ("reduce_fraction", (("numerator", "int"), ("denominator", "int")), "Tuple[int, int]", "The denominator is "
         "not zero but may be negative. Return the fraction in lowest terms as (numerator, denominator) with a "
         "positive denominator.", lowest_terms,
         scaled_fraction),
        ("egyptian_fraction", (("numerator", "int"), ("denominator", "int")), "List[int]", "The fraction is between "
         "0 and 1. Write it as a sum of distinct unit fractions by taking the largest unit fraction 1/d that fits "
         "again and again, and return the denominators d in order.", egyptian,
         proper_fraction),
        ("continued_fraction_terms", (("numerator", "int"), ("denominator", "int")), "List[int]", "Both numbers are "
         "positive. Return the terms of the continued fraction of numerator/denominator: the whole part, then the "
         "terms of the reciprocal of what is left, until nothing is left.", continued_fraction,
         lambda r: (r.randint(1, 60), r.randint(1, 30))),
        ("from_continued_fraction", (("terms", "List[int]"),), "Tuple[int, int]", "The terms are a continued "
         "fraction: the first plus one over (the second plus one over (the third ...)). Return its value as "
         "(numerator, denominator) in lowest terms.", from_terms,
         lambda r: ([r.randint(0, 3)] + [r.randint(1, 5) for _ in range(r.randint(0, 3))],)),
        ("decimal_with_repeating_part", (("numerator", "int"), ("denominator", "int")), "str", "The numerator is "
         "not negative and the denominator positive. Return the decimal expansion of the fraction with the "
         "repeating digits in brackets, such as '0.1(6)' for 1/6, '0.25' for 1/4 and '3' for 6/2.",
         repeating_decimal, lambda r: (r.randint(0, 30), r.randint(1, 14))),
        (f"round_fraction_to_denominator_{k}", (("fraction", "Tuple[int, int]"),), "Tuple[int, int]", "The fraction "
         f"is (numerator, denominator) with a positive denominator. Return the nearest fraction with denominator "
         f"{k}, halves rounded up, as (numerator, {k}) without reducing it.",
         lambda f: ((2 * k * f[0] + f[1]) // (2 * f[1]), k), lambda r: (fraction(r),)),
        ("total_of_fractions", (("fractions", "List[Tuple[int, int]]"),), "Tuple[int, int]", "Each fraction is "
         "(numerator, denominator) with a positive denominator. Return their total as (numerator, denominator) "
         "in lowest terms, (0, 1) for an empty list.", lambda fs: pair(sum(map(value, fs), Fraction(0))),
         lambda r: ([fraction(r, 0) for _ in range(r.randint(1, 4))],)),
    ])


def recurrence_tasks(k: int) -> list[Task]:
    """Integer sequences defined by a rule."""
    return tasks([
        ("look_and_say_next", (("digits", "str"),), "str", "Read the string of digits aloud in runs of equal "
         "digits and write down each run as its length followed by the digit: '1211' is read one 1, one 2, two "
         "1s, so the next term is '111221'. Return that next term.", look_and_say,
         lambda r: ("".join(r.choice("1123") for _ in range(r.randint(1, 7))),)),
        ("recaman_terms", N, "List[int]", "The sequence starts with 0; term i (counting from 1) is the term before "
         "minus i if that is positive and not yet in the sequence, and the term before plus i otherwise. Return "
         "its first n terms.", recaman, lambda r: (r.randint(1, 14),)),
        ("thue_morse_prefix", N, "str", "Start from '0' and repeatedly append a copy of the string with every '0' "
         "and '1' swapped. Return the first n characters.",
         lambda n: "".join(str(bin(i).count("1") % 2) for i in range(n)), lambda r: (r.randint(1, 16),)),
        ("kaprekar_steps", N, "int", "n has four digits, not all the same. Arrange its digits from largest to "
         "smallest and from smallest to largest (as a four-digit number, zeros kept) and subtract the second from "
         "the first; return how many such steps reach 6174.", kaprekar_steps, lambda r: (four_digits(r),)),
        (f"nth_term_summing_previous_{k}", N, "int", f"The first {k} terms of a sequence are 1, and every later "
         f"term is the sum of the {k} terms before it. Return term n, counting from 1.",
         lambda n: summing_previous(n, k), lambda r: (r.randint(1, k + 8),)),
        ("van_eck_terms", N, "List[int]", "The sequence starts with 0. Each next term looks at the term just "
         "written: if it appeared before, the next term is how many places back its latest earlier appearance "
         "is; otherwise it is 0. Return the first n terms.", van_eck, lambda r: (r.randint(1, 14),)),
        ("triangular_root", N, "int", "Return the m for which n is the sum 1 + 2 + ... + m, or -1 if n is no such "
         "sum (0 is the empty sum, m = 0).", triangular_root,
         lambda r: (r.choice((r.randint(0, 60), (m := r.randint(0, 12)) * (m + 1) // 2)),)),
        ("padovan_number", N, "int", "The sequence starts 1, 1, 1 (terms 0, 1 and 2) and each later term is the sum "
         "of the terms two and three places before it. Return term n.", padovan, lambda r: (r.randint(0, 20),)),
        ("stern_diatomic", N, "int", "Term 0 of the sequence is 0 and term 1 is 1; term 2i is term i, and term "
         "2i + 1 is term i plus term i + 1. Return term n.", stern, lambda r: (r.randint(0, 60),)),
        ("hailstone_peak", N, "int", "Starting from the positive n, halve an even number and replace an odd one "
         "other than 1 by three times it plus one, until 1 is reached. Return the largest number met on the way, "
         "n included.", hailstone_peak, lambda r: (r.randint(1, 40),)),
    ])


def board_tasks(k: int) -> list[Task]:
    """Board puzzles on rows of characters."""
    side = 12
    return tasks([
        ("minesweeper_hints", BOARD, "List[str]", "The rows show '*' for a mine and '.' for an empty cell. Return "
         "the rows with every empty cell replaced by the digit counting the mines among its up to eight "
         "neighbours (diagonals included); mines stay '*'.", minesweeper, lambda r: (board_of(r, "*..."),)),
        ("life_step", BOARD, "List[str]", "The rows show '#' for a live cell and '.' for a dead one; cells outside "
         "are dead. A live cell with two or three live neighbours (of eight) lives on, a dead cell with exactly "
         "three comes alive and every other cell is dead. Return the rows one generation later.", life_step,
         lambda r: (board_of(r, "#..", r.randint(3, 4), r.randint(3, 5)),)),
        ("region_size", BOARD + (("row", "int"), ("col", "int")), "int", "Return how many cells hold the same "
         "character as the cell at (row, col) and can be reached from it stepping up, down, left or right through "
         "such cells, that cell included.", region_size,
         lambda r: (b := board_of(r, "ab", r.randint(2, 4), r.randint(2, 4)), r.randrange(len(b)),
                    r.randrange(len(b[0])))),
        ("maze_steps", (("maze", "List[str]"),), "int", "The maze has one 'S' and one 'E'; '#' is a wall and every "
         "other cell is open. Return the fewest steps up, down, left or right from S to E, or -1 if E cannot be "
         "reached.", maze_steps, lambda r: (maze(r),)),
        ("cheapest_corner_path", (("costs", "List[List[int]]"),), "int", "Walk from the top-left cell to the "
         "bottom-right cell moving only right or down, paying the number in every cell entered, both corners "
         "included. Return the smallest total.", cheapest_path,
         lambda r: (cost_grid(r),)),
        ("queens_are_safe", (("queens", "List[Tuple[int, int]]"),), "bool", "Each queen is (row, column) on a "
         "chessboard. Return True if no two share a row, a column or a diagonal.", queens_safe,
         lambda r: (queens(r),)),
        (f"squares_within_king_moves_{k}", (("row", "int"), ("col", "int")), "int", f"On a {side} by {side} board "
         f"with rows and columns numbered from 0, return how many squares a king at (row, col) can reach in at "
         f"most {k} moves, its own square included.",
         lambda i, j: (min(i + k, side - 1) - max(i - k, 0) + 1) * (min(j + k, side - 1) - max(j - k, 0) + 1),
         lambda r: (r.randrange(side), r.randrange(side))),
        ("stones_fall_down", BOARD, "List[str]", "Every character other than '.' is a stone. Let each stone fall "
         "as far down its column as it can, keeping the order of the stones in the column, and return the rows.",
         settle, lambda r: (board_of(r, "..ab"),)),
        ("word_in_grid", (("grid", "List[str]"), ("word", "str")), "bool", "Return True if the word can be read in "
         "the grid along a row from left to right or along a column from top to bottom.", word_in_grid,
         letter_grid),
        ("shots_on_ships", BOARD + (("shots", "List[Tuple[int, int]]"),), "int", "The rows show 'X' for a part of a "
         "ship and '.' for water. Each shot is (row, column). Return how many different ship cells the shots "
         "hit.", lambda b, s: sum(b[i][j] == "X" for i, j in set(s)),
         lambda r: (b := board_of(r, "X..", 3, 4), [(r.randrange(3), r.randrange(4)) for _ in range(r.randint(1, 5))])),
    ])


def document_tasks(k: int) -> list[Task]:
    """Nested dictionaries with string keys and whole numbers at the bottom."""
    documents = lambda r: (document(r),)  # noqa: E731
    return tasks([
        ("flatten_to_dotted_keys", DOCUMENT, "Dict[str, int]", "Return a flat dictionary from the path of every "
         "number in the nested dictionaries, its keys joined by dots such as 'a.b.c', to the number, in the "
         "order the numbers appear.", flatten_dotted, documents),
        ("unflatten_dotted_keys", (("flat", "Dict[str, int]"),), "dict", "Every key is a path of names joined by "
         "dots. Return the nested dictionaries that hold each number under its path, keys in order of first "
         "appearance.", unflatten_dotted, lambda r: (flatten_dotted(document(r)),)),
        ("deep_merge", (("base", "dict"), ("override", "dict")), "dict", "Return base with override laid over "
         "it: where both hold a dictionary under the same key they are merged the same way, and otherwise the "
         "value of override wins. New keys come after base's keys.", deep_merge, two_documents),
        ("dictionary_depth", DOCUMENT, "int", "Return how many levels of dictionaries the data has: 1 when no "
         "value is a dictionary, and one more than the deepest dictionary inside otherwise.", dict_depth,
         documents),
        ("count_leaf_numbers", DOCUMENT, "int", "The values are whole numbers or dictionaries of the same kind. "
         "Return how many numbers there are at every level together.", lambda d: len(flatten_dotted(d)),
         documents),
        ("paths_to_value", DOCUMENT + (("value", "int"),), "List[str]", "Return, sorted, the paths (keys joined by "
         "dots) of every number in the nested dictionaries equal to value.",
         lambda d, v: sorted(p for p, x in flatten_dotted(d).items() if x == v),
         lambda r: (d := document(r), r.choice(list(flatten_dotted(d).values()) + [r.randint(0, 9)]))),
        ("prune_empty_dictionaries", DOCUMENT, "dict", "Return the data without the dictionaries that are empty "
         "or become empty once the empty dictionaries inside them are removed.", prune_empty,
         lambda r: (document(r, 3, empty=True),)),
        (f"add_to_every_leaf_{k}", DOCUMENT, "dict", f"Return a copy of the nested dictionaries with {k} added to "
         "every number, at every level, keys in the same order.", lambda d: map_leaves(d, lambda v: v + k),
         documents),
        ("rename_key_everywhere", DOCUMENT + (("old", "str"), ("new", "str")), "dict", "Return a copy of the "
         "nested dictionaries in which every key equal to old, at every level, is called new instead.",
         rename_key, lambda r: (document(r), r.choice(KEYS[:3]), r.choice(("z", "name", "key")))),
        ("path_of_largest_leaf", DOCUMENT, "str", "Return the path, keys joined by dots, of the largest number in "
         "the nested dictionaries, the first one in order on a tie.", largest_leaf_path, documents),
    ])


def token_tasks(k: int) -> list[Task]:
    """Tokens and text statistics."""
    return tasks([
        ("tokenize_expression", (("expression", "str"),), "List[str]", "Split the expression into tokens: runs of "
         "digits, names (a letter or '_' followed by letters, digits or '_') and every other character on its "
         "own, spaces dropped. Return them in order.", tokenize, lambda r: (expression(r),)),
        ("word_bigram_counts", TEXT, "Dict[str, int]", "Return how often each pair of neighbouring words (split on "
         "whitespace) occurs, as 'first second', in order of first appearance.", bigram_counts,
         lambda r: (plain_words(r, 4),)),
        ("split_sentences", TEXT, "List[str]", "A sentence ends with '.', '!' or '?' and the next one follows "
         "after spaces. Return the sentences in order, each with its final mark.", split_sentences,
         lambda r: (prose(r),)),
        ("words_used_once", TEXT, "List[str]", "Return the words (split on whitespace) that occur exactly once in "
         "the text, in order.", lambda s: [w for w in s.split() if s.split().count(w) == 1],
         lambda r: (plain_words(r, 6),)),
        ("distinct_word_share", TEXT, "float", "Return the number of distinct words (split on whitespace) divided "
         "by the number of words, rounded to 2 decimal places, or 0.0 for a text without words.",
         lambda s: round(len(set(s.split())) / len(s.split()), 2) if s.split() else 0.0,
         lambda r: (plain_words(r, 5),)),
        ("keyword_in_context", TEXT + (("keyword", "str"),), "List[str]", "For every word of the text (split on "
         "whitespace) equal to keyword, return that word together with the words just before and after it that "
         "exist, joined by single spaces, in order.", contexts,
         lambda r: (plain_words(r, 6), r.choice(SHORT_WORDS[:6]))),
        (f"most_common_letter_gram_{k}", TEXT, "str", f"Remove the spaces and return the most frequent run of {k} "
         "neighbouring characters, the first one to appear on a tie, or an empty string if the text is too "
         "short.", lambda s: most_common_gram(s, k),
         lambda r: (" ".join(r.choice(GRAM_WORDS) for _ in range(r.randint(1, 3))),)),
        ("count_syllables", (("word", "str"),), "int", "Count the groups of neighbouring vowels (a, e, i, o, u "
         "and y), less one for a final 'e' when there is more than one group and the word does not end in 'le' "
         "or 'ee', and at least 1.", syllables, lambda r: (word(r),)),
        ("words_per_sentence", TEXT, "List[int]", "A sentence ends with '.', '!' or '?'. Return how many words "
         "(split on whitespace) each sentence has, in order.", lambda s: [len(t.split()) for t in split_sentences(s)],
         lambda r: (prose(r),)),
        ("whole_word_offsets", TEXT + (("target", "str"),), "List[int]", "Return the index of the first character of "
         "every place where target occurs in the text as a whole word (not inside a longer word), in order.",
         word_offsets, lambda r: (plain_words(r, 6) + r.choice((" cats", " attic", "")), r.choice(("cat", "a", "on")))),
    ])


def music_tasks(k: int) -> list[Task]:
    """Notes as names C, C#, D, ... B (sharps only), MIDI numbers, beats."""
    names = lambda r: ([r.choice(NOTES) for _ in range(r.randint(1, 4))],)  # noqa: E731
    return tasks([
        ("transpose_notes", (("notes", "List[str]"), ("semitones", "int")), "List[str]", "The notes are named 'C', "
         "'C#', 'D', 'D#', 'E', 'F', 'F#', 'G', 'G#', 'A', 'A#', 'B' and then 'C' again. Move every note that many "
         "semitones up (down when negative) and return the new names.", transpose,
         lambda r: (*names(r), r.randint(-12, 12))),
        ("semitones_up_to", (("low", "str"), ("high", "str")), "int", "The note names run 'C', 'C#', 'D', 'D#', "
         "'E', 'F', 'F#', 'G', 'G#', 'A', 'A#', 'B' round an octave. Return how many semitones up from low the "
         "next high is, from 0 to 11.", lambda a, b: (NOTES.index(b) - NOTES.index(a)) % 12,
         lambda r: (r.choice(NOTES), r.choice(NOTES))),
        ("major_scale_notes", (("tonic", "str"),), "List[str]", "The twelve note names are 'C', 'C#', 'D', 'D#', "
         "'E', 'F', 'F#', 'G', 'G#', 'A', 'A#', 'B'. Return the seven notes of the major scale starting on tonic, "
         "going up by 2, 2, 1, 2, 2 and 2 semitones, written with these names.", major_scale,
         lambda r: (r.choice(NOTES),)),
        ("major_triad_notes", (("root", "str"),), "List[str]", "The twelve note names are 'C', 'C#', 'D', 'D#', "
         "'E', 'F', 'F#', 'G', 'G#', 'A', 'A#', 'B'. Return the major chord on root: root, the note 4 semitones "
         "above and the note 7 semitones above.", lambda n: [NOTES[(NOTES.index(n) + s) % 12] for s in (0, 4, 7)],
         lambda r: (r.choice(NOTES),)),
        ("note_to_midi_number", (("note", "str"),), "int", "The note is a name from 'C', 'C#', 'D' ... 'B' followed "
         "by its octave, such as 'A4'. Return its MIDI number: 'C4' is 60 and each semitone adds 1.",
         note_to_midi, lambda r: (midi_note(r),)),
        ("midi_number_to_note", N, "str", "Return the note of MIDI number n as a name from 'C', 'C#', 'D', 'D#', "
         "'E', 'F', 'F#', 'G', 'G#', 'A', 'A#', 'B' followed by its octave: 60 is 'C4' and 69 is 'A4'.",
         midi_to_note, lambda r: (r.randint(24, 96),)),
        ("beats_to_milliseconds", (("beats", "int"), ("tempo", "int")), "int", "The tempo is in beats per minute. "
         "Return how many whole milliseconds the beats last, rounded down.", lambda b, t: b * 60000 // t,
         lambda r: (r.randint(1, 16), r.choice((60, 90, 100, 120, 140, r.randint(40, 200))))),
        (f"bar_and_beat_in_{k}", (("beat", "int"),), "Tuple[int, int]", f"Music in bars of {k} beats; beats are "
         "counted from 0 across the piece. Return (bar, beat within the bar) of the beat, both counted from 1.",
         lambda b: (b // k + 1, b % k + 1), lambda r: (r.randint(0, 6 * k),)),
        ("interval_name", (("semitones", "int"),), "str", "Return the name of the interval of that many semitones, "
         "0 to 12: 'unison', 'minor second', 'major second', 'minor third', 'major third', 'perfect fourth', "
         "'tritone', 'perfect fifth', 'minor sixth', 'major sixth', 'minor seventh', 'major seventh', 'octave'.",
         lambda s: INTERVALS[s], lambda r: (r.randint(0, 12),)),
        ("note_frequency", (("semitones", "int"),), "float", "The note A4 sounds at 440 Hz and each semitone "
         "multiplies the frequency by the twelfth root of 2. Return the frequency of the note that many "
         "semitones above A4 (below when negative), rounded to 2 decimal places.",
         lambda s: round(440 * 2 ** (s / 12), 2), lambda r: (r.randint(-24, 24),)),
    ])


def colour_tasks(k: int) -> list[Task]:
    """RGB colours as (red, green, blue) triples of 0 to 255."""
    colours = lambda r: (colour(r),)  # noqa: E731
    percent, levels = 10 * k, k
    return tasks([
        ("hex_to_rgb", (("code", "str"),), "Tuple[int, int, int]", "The code is '#' followed by six hexadecimal "
         "digits, two each for red, green and blue. Return (red, green, blue) as numbers from 0 to 255.",
         lambda s: tuple(int(s[i: i + 2], 16) for i in (1, 3, 5)), lambda r: (hex_colour(colour(r)),)),
        ("rgb_to_hex", RGB, "str", "Return the colour as '#' followed by two lower-case hexadecimal digits each "
         "for red, green and blue.", hex_colour, colours),
        ("mix_colours", TWO_RGB, "Tuple[int, int, int]", "Return the colour halfway between the two: each channel "
         "the mean of the two channels, rounded down.", lambda a, b: tuple((x + y) // 2 for x, y in zip(a, b)),
         lambda r: (colour(r), colour(r))),
        ("invert_colour", RGB, "Tuple[int, int, int]", "Return the opposite colour: every channel c becomes "
         "255 - c.", lambda c: tuple(255 - x for x in c), colours),
        ("grey_level", RGB, "int", "Return the brightness of the colour as 299 times red plus 587 times green plus "
         "114 times blue, divided by 1000 and rounded down.", lambda c: (299 * c[0] + 587 * c[1] + 114 * c[2]) // 1000,
         colours),
        ("closest_basic_colour", RGB, "str", "Return which of black (0, 0, 0), white (255, 255, 255), red (255, 0, "
         "0), green (0, 128, 0), blue (0, 0, 255), yellow (255, 255, 0), grey (128, 128, 128) and orange (255, "
         "165, 0) is nearest, by the sum of squared channel differences (the first in that order on a tie).",
         closest_colour, colours),
        (f"lighten_by_percent_{percent}", RGB, "Tuple[int, int, int]", f"Move every channel {percent}% of the way "
         "up to 255: c becomes c plus (255 - c) times the percentage divided by 100, rounded down.",
         lambda c: tuple(x + (255 - x) * percent // 100 for x in c), colours),
        (f"posterize_levels_{levels}", RGB, "Tuple[int, int, int]", f"Reduce every channel to {levels} levels: c "
         f"becomes the level c times {levels} divided by 256 (rounded down), then that level times 255 divided "
         f"by {levels - 1}, rounded down.", lambda c: posterize(c, levels), colours),
        ("hue_degrees", RGB, "int", "Return the hue of the colour in degrees, from 0 to 359, rounded to the "
         "nearest degree: red is 0, green 120 and blue 240, and a grey has hue 0.", hue, colours),
        ("blend_over", TWO_RGB + (("alpha", "int"),), "Tuple[int, int, int]", "Lay the first colour over the "
         "second with an opacity of alpha percent: each channel is first times alpha plus second times (100 - "
         "alpha), divided by 100 and rounded down.",
         lambda a, b, t: tuple((x * t + y * (100 - t)) // 100 for x, y in zip(a, b)),
         lambda r: (colour(r), colour(r), r.choice((0, 25, 50, 100, r.randint(0, 100))))),
    ])


def interest_tasks(k: int) -> list[Task]:
    """Bank arithmetic in whole cents, interest rounded down to the cent whenever it is added."""
    return tasks([
        ("simple_interest_cents", (("principal", "int"), ("percent", "int"), ("years", "int")), "int", "Return the "
         "simple interest, in whole cents rounded down, on principal cents at percent a year for the years.",
         lambda p, r, y: p * r * y // 100, lambda r: (spread_amount(r), r.randint(1, 9), r.randint(1, 5))),
        (f"balance_after_years_{k}", (("principal", "int"), ("percent", "int")), "int", "Each year the account "
         f"earns percent of its balance, rounded down to a whole cent, and the interest is added. Return the "
         f"balance in cents after {k} years.", lambda p, r: compound(p, r, k),
         lambda r: (spread_amount(r), r.randint(1, 9))),
        ("years_to_double", (("percent", "int"),), "int", "An account of 10000 cents earns percent of its balance "
         "each year, rounded down to a cent and added. Return how many years pass until it holds at least 20000 "
         "cents.", years_to_double, lambda r: (r.randint(1, 30),)),
        ("months_to_repay_loan", (("principal", "int"), ("percent", "int"), ("payment", "int")), "int", "Each month "
         "the loan grows by percent of it, rounded down to a cent, and then the payment is taken off. Return how "
         "many payments clear it, or -1 if the first payment is not more than the first month's interest.",
         loan_months, lambda r: (r.randint(100, 5000), r.randint(0, 5), r.randint(1, 1000))),
        (f"interest_free_instalments_{k}", (("total", "int"),), "List[int]", f"Split the total cents into {k} "
         "payments of whole cents that differ by at most one cent, the larger ones first.",
         lambda t: instalments(t, k), lambda r: (r.randint(0, 5000),)),
        ("months_to_savings_goal", (("goal", "int"), ("deposit", "int"), ("percent", "int")), "int", "An account "
         "starts empty. Each month it earns percent of its balance, rounded down to a cent, and then the deposit "
         "is paid in. Return after how many months it first holds at least goal cents.", savings_months,
         lambda r: (r.randint(0, 20000), r.randint(500, 3000), r.randint(0, 3))),
        ("minimum_card_payment", (("balance", "int"),), "int", "A card's minimum payment is 3% of the balance in "
         "cents, rounded down, but at least 2500 cents, and never more than the balance itself. Return it.",
         lambda b: min(b, max(2500, b * 3 // 100)), lambda r: (spread_amount(r),)),
        ("daily_interest_total", (("balances", "List[int]"), ("permille", "int")), "int", "Each day's end balance "
         "in cents earns permille thousandths of it, rounded down, when it is positive, and nothing otherwise. "
         "Return the interest of all the days.", lambda bs, p: sum(b * p // 1000 for b in bs if b > 0),
         lambda r: ([r.randint(-2000, 9000) for _ in range(r.randint(1, 5))], r.randint(1, 5))),
        ("cash_rounded_total", (("prices", "List[int]"),), "int", "Add up the prices in cents and round the total "
         "to the nearest multiple of 5 cents, as cash is paid: totals ending in 1 or 2 (or 6 or 7) go down and "
         "those ending in 3 or 4 (or 8 or 9) go up.", lambda ps: cash_rounded(sum(ps)),
         lambda r: ([r.randint(1, 999) for _ in range(r.randint(1, 4))],)),
        ("interest_on_overdraft", (("balance", "int"), ("percent", "int")), "int", "A negative balance in cents is "
         "charged percent of the amount owed, rounded up to a whole cent; a balance of zero or more is charged "
         "nothing. Return the charge.", lambda b, p: -(b * p // 100) if b < 0 else 0,
         lambda r: (r.randint(-5000, 2000), r.randint(1, 19))),
    ])


def tariff_tasks(k: int) -> list[Task]:
    """Charges by bands and brackets."""
    charge, overage = 5 * k, k
    return tasks([
        ("progressive_tax_owed", (("income", "int"),), "int", "Income in dollars is taxed in brackets: nothing on "
         "the first 10000, 10% on the part from 10000 to 40000 and 20% on the part above 40000. Return the tax in "
         "whole dollars, rounded down.", income_tax, lambda r: (r.choice((r.randint(0, 12000), r.randint(0, 90000))),)),
        ("tiered_power_bill", (("units", "int"),), "int", "Electricity costs 5 cents a unit for the first 100 "
         "units, 8 cents a unit for the next 200 and 12 cents for every unit after that. Return the bill in cents.",
         lambda u: banded(u, POWER_TIERS), lambda r: (r.randint(0, 500),)),
        ("parcel_postage", (("grams", "int"),), "int", "Postage is 120 cents up to 100 grams, 250 up to 500, 400 up "
         "to 1000 and 650 up to 2000; heavier parcels are refused. Return the postage in cents, or -1 when "
         "refused.", postage, lambda r: (r.choice((r.randint(1, 2500), r.choice((100, 500, 1000, 2000)))),)),
        (f"service_charge_percent_{charge}", (("bill", "int"),), "int", f"Add a {charge}% service charge to the "
         "bill in cents, the charge rounded up to a whole cent, and return the total.",
         lambda b: b + -(-b * charge // 100), lambda r: (r.randint(0, 9999),)),
        ("parking_fee_for_stay", (("minutes", "int"),), "int", "Parking is free for stays of up to 30 minutes and "
         "otherwise costs 2 for each started hour, at most 20 a day; every full 24 hours costs 20 and the rest is "
         "charged as a stay of its own. Return the fee.", parking_fee,
         lambda r: (r.choice((r.randint(0, 90), r.randint(0, 700), r.randint(0, 4000))),)),
        ("taxi_fare_cents", (("metres", "int"),), "int", "A taxi ride costs 300 cents plus 50 cents for each "
         "started 200 metres. Return the fare in cents.", lambda m: 300 + 50 * -(-m // 200),
         lambda r: (r.randint(0, 3000),)),
        ("bracket_of_amount", (("amount", "int"), ("thresholds", "List[int]")), "int", "The thresholds are "
         "increasing; an amount below the first is in bracket 0, one from the first up to below the second in "
         "bracket 1, and so on. Return the bracket of the amount.",
         lambda a, ts: sum(a >= t for t in ts),
         lambda r: (r.randint(0, 100), sorted(r.sample(range(5, 100, 5), r.randint(1, 4))))),
        ("volume_discount_total", (("quantity", "int"), ("unit_price", "int")), "int", "Return the price in cents of "
         "the quantity of items at unit_price each, less 10% for 10 items or more and less 20% for 50 or more, "
         "rounded down to a cent.", volume_total,
         lambda r: (r.choice((r.randint(1, 9), r.randint(10, 49), r.randint(50, 120))), r.randint(1, 500))),
        (f"overage_charge_{overage}", (("used", "int"), ("included", "int")), "int", "A phone plan includes some "
         f"minutes; every minute used beyond them costs {overage} cents. Return the extra charge in cents.",
         lambda u, i: max(u - i, 0) * overage, lambda r: (r.randint(0, 600), r.choice((100, 300, 500)))),
        ("cheapest_plan", (("usage", "int"), ("plans", "Dict[str, Tuple[int, int, int]]")), "str", "Each plan is "
         "(monthly fee, units included, price of each further unit). Return the name of the plan that costs the "
         "least for the usage, the alphabetically first on a tie.", cheapest_plan, plans),
    ])


def seventh_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (polynomial_tasks(k) + fraction_tasks(k) + recurrence_tasks(k) + board_tasks(k) + document_tasks(k)
            + token_tasks(k) + music_tasks(k) + colour_tasks(k) + interest_tasks(k) + tariff_tasks(k))
