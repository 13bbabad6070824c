"""A ninth set of programming-task families for `task_prompts.py`: shapes the first eight sets lack.

The eight earlier sets hold about 1,550 function names (886 base names), and the eighth set's training
functions have been asked about 8,000 ways, so the data needs new functions rather than new renderings
(docs/training.md). This module adds ten more families, 100 tasks for each k (184 names across k):

    relations    lists of pairs: reflexive, symmetric, antisymmetric, transitive, closures, powers, classes
    logic        formulas over p, q, r: values, truth tables, minterms, tautologies, CNF clauses, gates
    sparse       vectors {index: value} and matrices {(row, column): value}: dot, sums, transposes, grids
    stringology  one string's structure: prefix and Z functions, borders, periods, Lyndon words, squares
    figurate     polygonal, centered, pentagonal, pronic, tetrahedral, pyramidal, octahedral, star numbers
    modular      inverses, Chinese remainders, residues, orders, primitive roots, Legendre, discrete logs
    packing      first-, next- and best-fit bins, knapsacks, subset sums, equal splits, loads under a limit
    heaps        binary heaps in lists: checks, pushes, pops, Floyd's build, k-ary heaps, levels, medians
    linked       linked lists as each node's successor: walks, cycles, reversal, middles, unlinking
    signals      rising edges, zero crossings, Schmitt triggers, debouncing, holds, Manchester and NRZI codes

The rules are task_families8.py's: reference solutions compute the examples, example inputs make them
informative, results print exactly, constants vary with k (2 to 7), no name is a HumanEval entry point
or an earlier catalogue's (for any k, and none shares an earlier base name once the constant is taken
off), no description shares a 13-word n-gram with a HumanEval prompt, and a name with the constant k
(or a number made from it) ends with it, so holding a function out holds it out under every k. Near
misses of the earlier sets were turned around: equivalence classes of a relation (not the fifth set's
count of graph components), pentagonal, pronic and centered numbers (not the seventh set's triangular
root), a heap's pops and pushes (not the eighth set's sorting traces), linked lists by successor (not
the eighth set's trees by parent or permutation cycles), Manchester and NRZI line codes (not the sixth
set's varints or Elias codes), bin packing and knapsacks (not the second set's fewest coins). Reference
solutions, generators and argument shapes are in `task_reference9.py` (relations to figurate numbers)
and `task_reference9b.py` (modular arithmetic to signals). `task_prompts` imports `ninth_tasks(k)`
(`--families ninth`) and its docstring gives the commands that drew data/task_dev9_prompts.jsonl and
data/task_prompts12.jsonl.
"""

from __future__ import annotations

import math
import random

from d3d.training.task_families import Task, int_list, tasks
from d3d.training.task_reference3 import N
from d3d.training.task_reference9 import (CLAUSES, FORMULA, MATRIX, RELATION, TWO_VECTORS, VECTOR, WORD,
                                          add_sparse, antisymmetric_or_not, centered_polygonal, clause_true,
                                          clauses, clauses_and_assignment, compose, equivalence_classes, formula,
                                          functional_or_not, has_square, is_lyndon, is_pentagonal, is_transitive,
                                          least_rotation, longest_repeat, lyndon_factorization, lyndon_or_not,
                                          matrix_and_shape, matrix_and_vector, pentagonal_or_not, period_or_not,
                                          periodic_word, polygonal, prefix_function, pronic_or_not, pure_literals,
                                          relation, relation_and_size, relation_on_set, relation_power,
                                          smallest_period, sparse_matrix, sparse_row_sums, sparse_vector,
                                          square_or_not, symmetric_or_not, tautology_or_not, times_vector,
                                          transitive_closure, transitive_or_not, triangular_between, truth_value,
                                          truth_values, two_vectors, vector_and_length, word, z_function)
from d3d.training.task_reference9b import (BITS, HEAP, LINKS, PRIMES, SAMPLES, SIZES, WEIGHTS, best_fit, best_load,
                                           bit_runs, build_heap, can_split, coprime_moduli, crossings, crt,
                                           cycle_entry, cycle_length, debounce, discrete_log, first_fit, from_end,
                                           heap, heap_and_value, heap_or_not, inverse_mod, is_heap, knapsack,
                                           knapsack_items, legendre, levels, linked_list, list_and_node,
                                           log_question, manchester, manchester_code, manchester_decode,
                                           most_items, multiplicative_order, next_fit_count, nrzi, nrzi_decode,
                                           peak_hold, pop_min, pops, primitive_roots, reverse_links,
                                           running_medians, schmitt, schmitt_question, sift_up, sizes_and_capacity,
                                           split_or_not, step, subset_totals, totient, unlink, values_and_target,
                                           walk)

PAIRS_ON = RELATION + (("n", "int"),)


def polygonal_formula(sides: int) -> str:
    """The s-gonal number's formula as a reader would write it: (n * n + n) / 2 for 3, 3 * n * n - n ... / 2."""
    square = "n * n" if sides == 3 else f"{sides - 2} * n * n"
    linear = {-1: " + n", 0: "", 1: " - n"}.get(sides - 4, f" - {sides - 4} * n")
    return f"({square}{linear}) / 2"


def threshold_inputs(r: random.Random, k: int) -> list[bool]:
    """max(0, k - 2) to k + 1 True values among up to 3 False ones, shuffled ([False] if that leaves none)."""
    inputs = [True] * r.randint(max(0, k - 2), k + 1) + [False] * r.randint(0, 3)
    r.shuffle(inputs)
    return inputs or [False]


def relation_tasks(k: int) -> list[Task]:
    """Binary relations as sorted lists of pairs (a, b), read as "a is related to b"."""
    return tasks([
        ("is_reflexive_on", PAIRS_ON, "bool", "The pairs are a relation on the numbers 0 .. n-1. Return True if "
         "every one of those numbers is related to itself, that is every (i, i) is among the pairs.",
         lambda ps, n: all((i, i) in ps for i in range(n)), relation_on_set),
        ("is_symmetric_relation", RELATION, "bool", "Return True if the relation goes both ways: for every pair "
         "(a, b) the pair (b, a) is there too.", lambda ps: all((b, a) in ps for a, b in ps), symmetric_or_not),
        ("is_antisymmetric_relation", RELATION, "bool", "Return True if no two different numbers are related "
         "both ways, that is (a, b) and (b, a) are never both there when a != b.",
         lambda ps: not any((b, a) in ps for a, b in ps if a != b), antisymmetric_or_not),
        ("is_transitive_relation", RELATION, "bool", "Return True if the relation is transitive: whenever (a, b) "
         "and (b, c) are pairs, (a, c) is a pair as well.", is_transitive, transitive_or_not),
        ("transitive_closure_pairs", RELATION, "List[Tuple[int, int]]", "Return, sorted and once each, the pairs "
         "of the smallest transitive relation holding these pairs: (a, c) belongs whenever some chain of pairs "
         "leads from a to c.", transitive_closure, lambda r: (relation(r, 0, 1, 4),)),
        ("inverse_relation", RELATION, "List[Tuple[int, int]]", "Return the relation turned around: (b, a) for "
         "every pair (a, b), sorted.", lambda ps: sorted((b, a) for a, b in ps), lambda r: (relation(r),)),
        ("compose_relations", (("first", "List[Tuple[int, int]]"), ("second", "List[Tuple[int, int]]")),
         "List[Tuple[int, int]]", "Return, sorted and once each, the pairs (a, c) for which some b has (a, b) in "
         "first and (b, c) in second.", compose, lambda r: (relation(r, 3), relation(r, 3))),
        ("equivalence_classes_of", PAIRS_ON, "List[List[int]]", "Treat every pair as saying its two numbers are "
         "equivalent, and equivalence as reflexive, symmetric and transitive. Return the classes of the numbers "
         "0 .. n-1, each sorted, ordered by their smallest members.", equivalence_classes, relation_and_size),
        ("is_functional_relation", RELATION, "bool", "Return True if the relation is a function: no first number "
         "appears in two pairs with different second numbers.",
         lambda ps: len({a for a, _ in ps}) == len(set(ps)), functional_or_not),
        (f"relation_power_{k}", RELATION, "List[Tuple[int, int]]", f"Compose the relation with itself {k} times "
         f"over: return, sorted and once each, the pairs (a, b) joined by a chain of exactly {k} pairs, each "
         "starting where the one before ends.", lambda ps: relation_power(ps, k),
         lambda r: (relation(r, 0, 2, 6),)),
    ])


def logic_tasks(k: int) -> list[Task]:
    """Boolean formulas over p, q and r, clauses in conjunctive normal form, and gates."""
    formulas = lambda r: (formula(r),)  # noqa: E731
    rows = ("(p, q, r) = (False, False, False), (False, False, True), (False, True, False) and so on to "
            "(True, True, True)")
    return tasks([
        ("evaluate_formula", FORMULA + (("true_variables", "str"),), "bool", "The formula uses the variables p, q "
         "and r, the words 'not', 'and', 'or' and parentheses, with Python's precedence. The variables whose "
         "letters are in true_variables are True and the others False. Return the formula's value.", truth_value,
         lambda r: (formula(r), "".join(v for v in "pqr" if r.random() < 0.5))),
        ("truth_table_column", FORMULA, "str", "The formula uses p, q and r with 'not', 'and', 'or' and "
         f"parentheses, as in Python. Return its values for {rows}, as a string of '1' for True and '0' for "
         "False.", lambda f: "".join("1" if v else "0" for v in truth_values(f)), formulas),
        ("count_satisfying_assignments", FORMULA, "int", "The formula uses p, q and r with 'not', 'and', 'or' and "
         "parentheses, as in Python. Return for how many of the 8 ways to make each variable True or False "
         "the formula is True.", lambda f: sum(truth_values(f)), formulas),
        ("minterms_of_formula", FORMULA, "List[int]", "The formula uses p, q and r with 'not', 'and', 'or' and "
         "parentheses, as in Python. Number each way to set the variables by 4 * p + 2 * q + r (True as 1, "
         "False as 0) and return, in increasing order, the numbers of those making the formula True.",
         lambda f: [i for i, v in enumerate(truth_values(f)) if v], formulas),
        ("is_tautology_formula", FORMULA, "bool", "The formula uses p, q and r with 'not', 'and', 'or' and "
         "parentheses, as in Python. Return True if it is True however the variables are set.",
         lambda f: all(truth_values(f)), tautology_or_not),
        ("cnf_is_satisfied", CLAUSES + (("assignment", "List[bool]"),), "bool", "Each clause is a list of "
         "literals: i stands for variable i and -i for its negation, variables counted from 1, and "
         "assignment[i - 1] is the value of variable i. Return True if every clause has a true literal.",
         lambda cs, a: all(clause_true(c, a) for c in cs), clauses_and_assignment),
        ("unsatisfied_clause_indices", CLAUSES + (("assignment", "List[bool]"),), "List[int]", "A literal i "
         "means variable i is True and -i that it is False (variables counted from 1, variable i's value in "
         "assignment[i - 1]). Return the indices of the clauses none of whose literals holds.",
         lambda cs, a: [i for i, c in enumerate(cs) if not clause_true(c, a)], clauses_and_assignment),
        ("pure_literals", CLAUSES, "List[int]", "Literals are i for variable i and -i for its negation. Return, "
         "once each and ordered by variable, the literals whose negation appears in no clause.", pure_literals,
         lambda r: (clauses(r, r.randint(2, 4)),)),
        (f"threshold_gate_{k}", (("inputs", "List[bool]"),), "bool", f"Return True if at least {k} of the inputs "
         "are True.", lambda xs: sum(xs) >= k,
         lambda r: (threshold_inputs(r, k),)),
        ("full_adder_bits", (("a", "int"), ("b", "int"), ("carry_in", "int")), "Tuple[int, int]", "The inputs "
         "are bits (0 or 1). Add them as a full adder does and return (sum bit, carry bit).",
         lambda a, b, c: ((a + b + c) % 2, (a + b + c) // 2), lambda r: (r.randint(0, 1), r.randint(0, 1),
                                                                          r.randint(0, 1))),
    ])


def sparse_tasks(k: int) -> list[Task]:
    """Sparse vectors {index: value} and matrices {(row, column): value}: a missing entry is 0."""
    vectors = lambda r: (sparse_vector(r, 8),)  # noqa: E731
    return tasks([
        ("sparse_dot_product", TWO_VECTORS, "int", "Each dictionary maps an index to a value, and an index that "
         "is missing holds 0. Return the dot product of the two vectors.",
         lambda a, b: sum(v * b.get(i, 0) for i, v in a.items()), two_vectors),
        ("add_sparse_vectors", TWO_VECTORS, "Dict[int, int]", "Each dictionary maps an index to a value (missing "
         "indices hold 0). Return their sum in the same form, by increasing index, leaving out the entries "
         "that come to 0.", add_sparse, two_vectors),
        ("sparse_to_dense", VECTOR + (("length", "int"),), "List[int]", "The dictionary maps indices below "
         "length to values; the other indices hold 0. Return the vector as a list of length values.",
         lambda v, n: [v.get(i, 0) for i in range(n)], vector_and_length),
        ("dense_to_sparse", (("values", "List[int]"),), "Dict[int, int]", "Return a dictionary mapping the index "
         "of every value that is not 0 to that value, by increasing index.",
         lambda vs: {i: v for i, v in enumerate(vs) if v},
         lambda r: ([r.choice((0, 0, r.randint(-5, 9))) for _ in range(r.randint(3, 7))],)),
        (f"scale_sparse_by_{k}", VECTOR, "Dict[int, int]", f"The dictionary maps indices to values. Return it "
         f"with every value multiplied by {k}.", lambda v: {i: x * k for i, x in v.items()}, vectors),
        (f"sparse_drop_below_{k}", VECTOR, "Dict[int, int]", "The dictionary maps indices to values. Return it "
         f"without the entries whose absolute value is less than {k}.",
         lambda v: {i: x for i, x in v.items() if abs(x) >= k}, vectors),
        ("transpose_sparse_matrix", MATRIX, "Dict[Tuple[int, int], int]", "The dictionary maps (row, column) to "
         "the values that are not 0. Return the transposed matrix in the same form, ordered by (row, column).",
         lambda m: dict(sorted(((c, r_), v) for (r_, c), v in m.items())), lambda r: (sparse_matrix(r, 3, 4),)),
        ("sparse_matrix_times_vector", MATRIX + (("vector", "List[int]"),), "List[int]", "The square matrix has "
         "as many rows and columns as the vector has entries; the dictionary maps (row, column) to its values "
         "that are not 0. Return the product of the matrix and the vector as a list.", times_vector,
         matrix_and_vector),
        ("sparse_matrix_row_sums", MATRIX, "Dict[int, int]", "The dictionary maps (row, column) to a matrix's "
         "values that are not 0. Return, for every row holding one of them, by increasing row, the sum of its "
         "values.", sparse_row_sums, lambda r: (sparse_matrix(r),)),
        ("sparse_matrix_to_grid", MATRIX + (("rows", "int"), ("cols", "int")), "List[List[int]]", "The dictionary "
         "maps (row, column) to values; every other cell holds 0. Return the rows x cols matrix as a list of "
         "rows.", lambda m, h, w: [[m.get((i, j), 0) for j in range(w)] for i in range(h)], matrix_and_shape),
    ])


def stringology_tasks(k: int) -> list[Task]:
    """The structure of a single string: borders, periods, rotations, factors and repeats."""
    words = lambda r: (word(r, 2, 9),)  # noqa: E731
    period = k - 1 if k < 5 else k - 2  # 1, 2, 3, 3, 4, 5
    return tasks([
        ("prefix_function_values", WORD, "List[int]", "Return, for every position i, the length of the longest "
         "prefix of word[:i + 1] that is also a suffix of it without being all of it.", prefix_function, words),
        ("z_function_values", WORD, "List[int]", "Return, for every position i, how many characters from "
         "position i on agree with the start of the word (the whole length at position 0).", z_function, words),
        ("longest_proper_border", WORD, "str", "Return the longest string that is both a prefix and a suffix of "
         "the word but shorter than the word (an empty string if there is none).",
         lambda w: w[: prefix_function(w)[-1]] if w else "", lambda r: (periodic_word(r),)),
        ("smallest_period", WORD, "int", "The word is not empty. Return the smallest p >= 1 such that every "
         "character equals the one p places after it, wherever there is one (the length itself if no smaller p "
         "works).", smallest_period, lambda r: (periodic_word(r),)),
        ("least_rotation", WORD, "str", "A rotation moves some characters from the front of the word to its "
         "back. Return the rotation that comes first in alphabetical order.", least_rotation,
         lambda r: (word(r, 2, 7, "abc"),)),
        ("is_lyndon_word", WORD, "bool", "Return True if the word is not empty and comes strictly before each "
         "of its other rotations (characters moved from the front to the back) in alphabetical order.",
         is_lyndon, lyndon_or_not),
        ("lyndon_factorization", WORD, "List[str]", "Split the word into pieces, each strictly before all its "
         "other rotations in alphabetical order, with no piece coming alphabetically before the next one. "
         "Return the pieces in order.", lyndon_factorization, lambda r: (word(r, 1, 8, "ab"),)),
        ("longest_repeated_substring", WORD, "str", "Return the longest substring that occurs at two or more "
         "positions of the word (overlapping allowed), the one starting first on a tie, or an empty string if "
         "no character repeats.", longest_repeat, lambda r: (word(r, 2, 9, "abcd"),)),
        (f"has_doubled_block_of_{k}", WORD, "bool", f"Return True if some {k} consecutive characters are directly "
         f"followed by the same {k} characters again.", lambda w: has_square(w, k), lambda r: square_or_not(r, k)),
        (f"has_period_{period}", WORD, "bool", f"Return True if every character of the word equals the one "
         f"{period} places after it, wherever the word has one.",
         lambda w: all(w[i] == w[i + period] for i in range(len(w) - period)), lambda r: period_or_not(r, period)),
    ])


def figurate_tasks(k: int) -> list[Task]:
    """Numbers that count dots in regular shapes."""
    sides = k + 1  # 3 .. 8
    small = lambda r: (r.randint(1, 12),)  # noqa: E731
    return tasks([
        (f"polygonal_number_{sides}", N, "int", f"Return the n-th {sides}-sided polygonal number: "
         f"{polygonal_formula(sides)}, so 1 for n = 1 and 0 for n = 0.",
         lambda n: polygonal(sides, n), lambda r: (r.randint(0, 12),)),
        (f"centered_polygonal_number_{sides}", N, "int", f"Return the n-th centered {sides}-sided number "
         f"(n >= 1): one dot in the middle and rings of {sides}, {2 * sides}, {3 * sides} ... dots around it, "
         "n - 1 rings in all.", lambda n: centered_polygonal(sides, n), small),
        ("is_pentagonal_number", N, "bool", "Return True if n is m * (3 * m - 1) / 2 for some whole m >= 1 "
         "(1, 5, 12, 22, 35 ...).", is_pentagonal, pentagonal_or_not),
        ("is_pronic_number", N, "bool", "Return True if n is the product of two consecutive whole numbers "
         "m * (m + 1) with m >= 0 (0, 2, 6, 12, 20 ...).",
         lambda n: any(m * (m + 1) == n for m in range(n + 1)), pronic_or_not),
        ("tetrahedral_number", N, "int", "Return the number of balls in a triangular pyramid with n layers: the "
         "sum of the first n triangular numbers 1, 3, 6, 10 ...", lambda n: n * (n + 1) * (n + 2) // 6,
         lambda r: (r.randint(0, 12),)),
        ("square_pyramidal_number", N, "int", "Return the number of balls in a square-based pyramid with n "
         "layers: 1 + 4 + 9 + ... + n * n.", lambda n: n * (n + 1) * (2 * n + 1) // 6, lambda r: (r.randint(0, 12),)),
        ("octahedral_number", N, "int", "Return the n-th octahedral number, n * (2 * n * n + 1) / 3: two square "
         "pyramids of n and n - 1 layers put base to base.", lambda n: n * (2 * n * n + 1) // 3,
         lambda r: (r.randint(0, 12),)),
        ("star_number", N, "int", "Return the n-th star number (n >= 1), the dots of a six-pointed star: "
         "6 * n * (n - 1) + 1, so 1, 13, 37 ...", lambda n: 6 * n * (n - 1) + 1, small),
        ("pentatope_number", N, "int", "Return the n-th pentatope number, the sum of the first n tetrahedral "
         "numbers 1, 4, 10, 20 ...: n * (n + 1) * (n + 2) * (n + 3) / 24.", lambda n: math.comb(n + 3, 4),
         lambda r: (r.randint(0, 12),)),
        ("triangular_numbers_in_range", (("low", "int"), ("high", "int")), "List[int]", "Return, in increasing "
         "order, the triangular numbers 0, 1, 3, 6, 10 ... that lie from low to high, both included.",
         triangular_between, lambda r: (low := r.randint(0, 40), low + r.randint(0, 30))),
    ])


def modular_tasks(k: int) -> list[Task]:
    """Arithmetic with remainders."""
    return tasks([
        ("modular_inverse", (("a", "int"), ("m", "int")), "int", "Return the x from 0 to m - 1 with a * x "
         "leaving remainder 1 when divided by m, or -1 if there is no such x.", inverse_mod,
         lambda r: (r.randint(1, 30), r.randint(2, 26))),
        ("chinese_remainder", (("remainders", "List[int]"), ("moduli", "List[int]")), "int", "No two of the moduli "
         "have a common factor above 1. Return the smallest x >= 0 that leaves remainders[i] when divided by "
         "moduli[i], for every i.", crt, coprime_moduli),
        ("quadratic_residues", (("m", "int"),), "List[int]", "Return, in increasing order and once each, the "
         "remainders that x * x leaves when divided by m, for x from 0 to m - 1.",
         lambda m: sorted({x * x % m for x in range(m)}), lambda r: (r.randint(2, 20),)),
        ("multiplicative_order", (("a", "int"), ("m", "int")), "int", "Return the smallest e >= 1 for which a "
         "to the power e leaves remainder 1 when divided by m, or -1 if a and m have a common factor above 1.",
         multiplicative_order, lambda r: (r.randint(1, 20), r.randint(2, 20))),
        ("primitive_roots", (("p", "int"),), "List[int]", "p is prime. Return, in increasing order, the g from 1 "
         "to p - 1 whose powers g, g ** 2 ... g ** (p - 1) leave p - 1 different remainders when divided by p.",
         primitive_roots, lambda r: (r.choice(PRIMES),)),
        ("solve_linear_congruence", (("a", "int"), ("b", "int"), ("m", "int")), "List[int]", "Return, in "
         "increasing order, every x from 0 to m - 1 for which a * x and b leave the same remainder when divided "
         "by m.", lambda a, b, m: [x for x in range(m) if (a * x - b) % m == 0],
         lambda r: (r.randint(1, 12), r.randint(0, 12), r.randint(2, 12))),
        ("euler_totient", N, "int", "Return how many of the numbers 1 .. n have no common factor above 1 with n.",
         totient, lambda r: (r.randint(1, 60),)),
        ("legendre_symbol", (("a", "int"), ("p", "int")), "int", "p is an odd prime. Return 0 if p divides a, 1 "
         "if a leaves the same remainder as some square x * x when divided by p, and -1 otherwise.", legendre,
         lambda r: (r.randint(0, 30), r.choice(PRIMES[1:8]))),
        ("discrete_logarithm", (("base", "int"), ("target", "int"), ("modulus", "int")), "int", "Return the "
         "smallest e >= 0 for which base to the power e leaves the same remainder as target when divided by "
         "modulus, or -1 if there is none.", discrete_log, log_question),
        (f"count_residues_mod_{k}", (("numbers", "List[int]"),), "List[int]", f"Return a list of {k} counts: "
         f"entry i is how many of the numbers leave remainder i when divided by {k}, taking remainders from 0 "
         f"to {k - 1} (so -1 leaves {k - 1}).", lambda xs: [sum(x % k == i for x in xs) for i in range(k)],
         lambda r: (int_list(r, -10, 30),)),
    ])


def packing_tasks(k: int) -> list[Task]:
    """Items of whole sizes packed into bins and knapsacks."""
    most, load = 5 * k, 3 * k + 7  # 10 .. 35 and 13 .. 28
    return tasks([
        ("first_fit_bins", SIZES, "List[List[int]]", "Every size is at most capacity. Put each item, in order, "
         "into the first bin with room left for it, opening a new bin when none has. Return the bins' contents.",
         first_fit, sizes_and_capacity),
        ("next_fit_bin_count", SIZES, "int", "Every size is at most capacity. Keep one bin open: put each item, "
         "in order, into it if it fits, and otherwise close it and open a new one. Return how many bins were "
         "used.", next_fit_count, sizes_and_capacity),
        ("best_fit_bins", SIZES, "List[List[int]]", "Every size is at most capacity. Put each item, in order, "
         "into the bin that it fits with the least room to spare (the first such bin on a tie), opening a new "
         "bin when none has room. Return the bins' contents.", best_fit, sizes_and_capacity),
        ("first_fit_decreasing_count", SIZES, "int", "Every size is at most capacity. Sort the items from largest "
         "to smallest, put each into the first bin with room left for it (a new bin if none), and return how "
         "many bins are used.", lambda s, c: len(first_fit(sorted(s, reverse=True), c)), sizes_and_capacity),
        ("knapsack_best_value", (("items", "List[Tuple[int, int]]"), ("capacity", "int")), "int", "Each item is "
         "(weight, value) and can be taken once. Return the largest total value of items whose total weight is "
         "at most capacity.", knapsack, knapsack_items),
        ("subset_sum_exists", (("values", "List[int]"), ("target", "int")), "bool", "The values are positive. "
         "Return True if some of them (each used at most once, at least one) add up to target.",
         lambda vs, t: t in subset_totals(vs), values_and_target),
        ("can_split_into_equal_sums", (("values", "List[int]"),), "bool", "Return True if the values can be "
         "shared out into two groups with equal totals, every value going into exactly one group.", can_split,
         split_or_not),
        ("count_subsets_summing_to", (("values", "List[int]"), ("target", "int")), "int", "Return how many "
         "non-empty choices of positions in the list have values adding up to target (equal values at different "
         "positions count as different choices).", lambda vs, t: subset_totals(vs).count(t), values_and_target),
        (f"most_items_under_{most}", WEIGHTS, "int", f"Return the largest number of the items whose weights add "
         f"up to at most {most}.", lambda ws: most_items(ws, most),
         lambda r: ([r.randint(1, 3 * k + 3) for _ in range(r.randint(3, 8))],)),
        (f"best_load_up_to_{load}", WEIGHTS, "int", f"Return the largest total of some of the weights (each used "
         f"at most once) that is at most {load}, or 0 if every weight is above it.", lambda ws: best_load(ws, load),
         lambda r: ([r.randint(2, load - 2) for _ in range(r.randint(2, 5))],)),
    ])


def heap_tasks(k: int) -> list[Task]:
    """Binary min-heaps kept in lists: the children of index i are at 2 * i + 1 and 2 * i + 2."""
    heaps = lambda r: (heap(r),)  # noqa: E731
    return tasks([
        ("is_min_heap", (("values", "List[int]"),), "bool", "The children of index i are at 2 * i + 1 and "
         "2 * i + 2. Return True if no value is smaller than the value at its parent's index.", is_heap,
         heap_or_not),
        ("min_heap_push", HEAP + (("value", "int"),), "List[int]", "The list is a min-heap (the children of i at "
         "2 * i + 1 and 2 * i + 2, none smaller than its parent). Append value and swap it with its parent while "
         "the parent is larger. Return the new list.", lambda h, v: sift_up(h, v)[0], heap_and_value),
        ("min_heap_pop", HEAP, "List[int]", "The list is a non-empty min-heap (children of i at 2 * i + 1 and "
         "2 * i + 2). Remove its first value: move the last value to the front, then swap it with its smaller "
         "child (the left one on a tie) while that child is smaller. Return the list.", pop_min, heaps),
        ("build_min_heap", (("values", "List[int]"),), "List[int]", "Turn the list into a min-heap (children of i "
         "at 2 * i + 1 and 2 * i + 2) bottom-up: for every index from the last one with a child down to 0, move "
         "its value down by swapping it with its smaller child (the left one on a tie) while that child is "
         "smaller. Return the list.", build_heap, lambda r: ([r.randint(1, 30) for _ in range(r.randint(3, 8))],)),
        (f"is_min_heap_of_arity_{k}", (("values", "List[int]"),), "bool", f"In a heap where every index has {k} "
         f"children, those of index i are at {k} * i + 1 to {k} * i + {k}. Return True if no value is smaller than "
         "the value at its parent's index.", lambda v: is_heap(v, k),
         lambda r: heap_or_not(r, k)),
        ("heap_levels", HEAP, "List[List[int]]", "The list holds a binary heap: index 0 is level 0 and the "
         "children of index i, at 2 * i + 1 and 2 * i + 2, are one level further down. Return the values of "
         "every level, in order.", levels, lambda r: ([r.randint(1, 30) for _ in range(r.randint(1, 10))],)),
        ("sift_up_swaps", HEAP + (("value", "int"),), "int", "The list is a min-heap (children of i at 2 * i + 1 "
         "and 2 * i + 2). Append value and swap it with its parent while the parent is larger. Return how many "
         "swaps that takes.", lambda h, v: sift_up(h, v)[1], heap_and_value),
        ("heap_leaf_values", HEAP, "List[int]", "The list holds a binary heap, the children of index i at "
         "2 * i + 1 and 2 * i + 2. Return, in order, the values at indices that have no children.",
         lambda h: h[len(h) // 2:], lambda r: ([r.randint(1, 30) for _ in range(r.randint(1, 9))],)),
        ("running_medians", (("values", "List[int]"),), "List[float]", "Return, after each value, the median of "
         "the values so far as a float: the middle one of them sorted, or the mean of the two middle ones.",
         running_medians, lambda r: ([r.randint(0, 20) for _ in range(r.randint(2, 6))],)),
        (f"heap_after_pops_{k}", HEAP, "List[int]", f"The list is a min-heap (children of i at 2 * i + 1 and "
         f"2 * i + 2). Remove its first value {k} times, each time moving the last value to the front and "
         "swapping it with its smaller child (the left one on a tie) while that child is smaller. Return the "
         "list.", lambda h: pops(h, k), lambda r: (heap(r, k + 1, k + 5),)),
    ])


def linked_tasks(k: int) -> list[Task]:
    """Linked lists over nodes 0 .. n-1 given by each node's successor, -1 for none."""
    chains = lambda r: linked_list(r, 1, 6)  # noqa: E731
    loops = lambda r: linked_list(r, 1, 6, 0.5)  # noqa: E731
    return tasks([
        ("walk_from_head", LINKS, "List[int]", "next_node[i] is the node after node i, or -1 if none follows. "
         "The list starting at head ends. Return its nodes in order, head first.", walk, chains),
        ("has_cycle_from", LINKS, "bool", "next_node[i] is the node after node i, or -1 if none follows. Return "
         "True if following the nodes from head never reaches -1.", lambda ls, h: cycle_entry(ls, h) != -1, loops),
        ("cycle_length_from", LINKS, "int", "next_node[i] is the node after node i, or -1 if none follows. If "
         "following the nodes from head runs into a loop, return how many nodes the loop has; otherwise 0.",
         cycle_length, loops),
        ("cycle_entry_node", LINKS, "int", "next_node[i] is the node after node i, or -1 if none follows. Return "
         "the first node met twice when following the nodes from head, or -1 if the list ends.", cycle_entry,
         loops),
        ("reverse_linked_links", LINKS, "List[int]", "next_node[i] is the node after node i, or -1 if none "
         "follows, and the list from head ends. Reverse that list: each of its nodes points to the node before "
         "it and head to -1; nodes not on it keep their links. Return the new next_node.", reverse_links, chains),
        ("middle_of_linked_list", LINKS, "int", "next_node[i] is the node after node i, or -1 if none follows, "
         "and the list from head ends. Return the node at position length // 2 of it, counting head as 0.",
         lambda ls, h: walk(ls, h)[len(walk(ls, h)) // 2], chains),
        (f"node_after_steps_{k}", LINKS, "int", f"next_node[i] is the node after node i, or -1 if none follows. "
         f"Return the node reached by moving {k} times from head to the next node, or -1 if the list ends first.",
         lambda ls, h: step(ls, h, k), lambda r: linked_list(r, max(1, k - 2), k + 3, 0.3)),
        (f"node_from_end_{k}", LINKS, "int", f"next_node[i] is the node after node i, or -1 if none follows, and the "
         f"list from head ends. Return its node {k} places from the end (the last node is place 1), or -1 if "
         "it is shorter.", lambda ls, h: from_end(ls, h, k), lambda r: linked_list(r, max(1, k - 2), k + 4)),
        ("unlink_node", LINKS + (("node", "int"),), "List[int]", "next_node[i] is the node after node i, or -1 "
         "if none follows; node is on the list from head but is not head. Take it out: the node before it now "
         "points to the node after it, and node itself to -1. Return the new next_node.", unlink, list_and_node),
        ("nodes_not_reached", LINKS, "List[int]", "next_node[i] is the node after node i, or -1 if none follows. "
         "Return, in increasing order, the nodes never met when following the nodes from head.",
         lambda ls, h: sorted(set(range(len(ls))) - set(walk(ls, h))), loops),
    ])


def signal_tasks(k: int) -> list[Task]:
    """Two-level signals (lists of 0 and 1) and sampled ones (lists of integers)."""
    bits = lambda r: (bit_runs(r),)  # noqa: E731
    return tasks([
        ("rising_edges", BITS, "List[int]", "Return the indices i at which the signal goes from 0 (at i - 1) to "
         "1 (at i).", lambda b: [i for i in range(1, len(b)) if b[i - 1] == 0 and b[i] == 1], bits),
        ("zero_crossing_indices", SAMPLES, "List[int]", "Return the indices i at which the sample has the "
         "opposite sign to the one before it: one negative and the other positive (0 has no sign).", crossings,
         lambda r: ([r.randint(-5, 5) for _ in range(r.randint(3, 8))],)),
        ("schmitt_trigger_output", SAMPLES + (("low", "int"), ("high", "int")), "List[int]", "The output starts "
         "at 0, turns 1 at a sample of high or more and back to 0 at a sample of low or less, and otherwise "
         "stays as it was. Return the output after each sample.", schmitt, schmitt_question),
        (f"debounce_bits_{k}", BITS, "List[int]", f"The output starts as the first bit. After that, it takes the "
         f"value of the current bit when the last {k} bits, the current one included, are all equal, and "
         "otherwise keeps its value. Return the output for every bit.", lambda b: debounce(b, k),
         lambda r: (bit_runs(r, k + 2, k + 3, k + 9),)),
        (f"hold_every_{k}", SAMPLES, "List[int]", f"Sample and hold: keep the samples at indices 0, {k}, {2 * k} "
         f"... and repeat each one until the next kept sample. Return the held signal, as long as the input.",
         lambda s: [s[i - i % k] for i in range(len(s))],
         lambda r: ([r.randint(0, 9) for _ in range(r.randint(k + 1, k + 5))],)),
        ("peak_hold_envelope", SAMPLES + (("decay", "int"),), "List[int]", "The level starts at 0. At every "
         "sample it becomes the larger of the sample's absolute value and the level minus decay. Return the "
         "level after each sample.", peak_hold,
         lambda r: ([r.randint(-9, 9) for _ in range(r.randint(3, 7))], r.randint(1, 3))),
        ("manchester_encode", BITS, "str", "Write every 1 as '10' and every 0 as '01' and return the string.",
         manchester, lambda r: ([r.randint(0, 1) for _ in range(r.randint(1, 6))],)),
        ("manchester_decode", (("code", "str"),), "List[int]", "The string has even length. Read it two "
         "characters at a time, '10' as 1 and '01' as 0, and return the bits; an empty list if a pair is '00' "
         "or '11'.", manchester_decode, manchester_code),
        ("nrzi_encode", BITS, "List[int]", "The level starts at 0. For every bit, flip the level for a 1 and "
         "keep it for a 0, and return the level after each bit.", nrzi, bits),
        ("nrzi_decode", (("levels", "List[int]"),), "List[int]", "The levels were written starting from 0, "
         "flipping for every 1 and keeping the level for every 0. Return the bits: 1 where a level differs from "
         "the one before it (0 before the first) and 0 otherwise.", nrzi_decode, lambda r: (bit_runs(r),)),
    ])


def ninth_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (relation_tasks(k) + logic_tasks(k) + sparse_tasks(k) + stringology_tasks(k) + figurate_tasks(k)
            + modular_tasks(k) + packing_tasks(k) + heap_tasks(k) + linked_tasks(k) + signal_tasks(k))
