"""A tenth set of programming-task families for `task_prompts.py`: shapes the first nine sets lack.

The nine earlier sets hold about 1,730 function names (986 base names), and the ninth set's training
functions have been asked about 8,000 ways, so the data needs new functions rather than new renderings
(docs/training.md). This module adds ten more families, 100 tasks for each k (180 names across k):

    linear       integer matrices: determinants, powers, Kronecker, cross and outer products, rank, solving
    networks     weighted edge lists: Dijkstra, spanning trees, widest and counted routes, flows, Euler trails
    partitions   integer partitions, distinct and binary parts, conjugates, Durfee squares, Stirling, Bell
    hashing      djb2, FNV-1a, Java and polynomial hashes, linear and quadratic probing, rings, resizing
    generators   linear congruential, middle-square, LFSR, xorshift, Park-Miller, Blum Blum Shub, shuffles
    codecs       Base64 and Base32, hex dumps, UTF-8 bytes and counts, UTF-16 surrogates, quoted-printable
    alphabets    Morse code and its timing, NATO spelling, Soundex, T9 and multi-tap keypads, keyboard shifts
    recreations  magic and Latin squares, a 4 x 4 sudoku, Hanoi, 2048, Reversi, the 8-puzzle, Lights Out
    nim          Nim and misere Nim, Grundy values, take-away, Wythoff, staircase and Moore's Nim, coin rows
    wildcards    glob patterns, '.' and '*' expressions, word patterns, isomorphic strings, classes, braces

The rules are task_families9.py's: reference solutions compute the examples, example inputs make them
informative, results print exactly, constants vary with k (2 to 7), no name is a HumanEval entry point
or an earlier catalogue's (for any k, and none shares an earlier base name once the constant is taken
off), no description shares a 13-word n-gram with a HumanEval prompt, and a name with the constant k
(or a number made from it) ends with it, so holding a function out holds it out under every k. Near
misses of the earlier sets were turned around: weighted routes, spanning trees and flows (not the fifth
set's hop counts, reachability and components), partitions, Stirling and Bell numbers (not the third
set's binomials and change counts), hash functions and tables (not the sixth set's check digits or
HumanEval's MD5 digest), Base64 and quoted-printable (not the sixth set's percent-encoding and varints),
keyboard-row shifts (not the eighth set's one-row words), Lights Out on a grid and a knight's fewest
moves (not the third set's light switches or the fifth set's knight targets), queen placements counted
(not the seventh set's check of one), Nim positions (not the fifth set's scored games). Reference solutions,
generators and argument shapes are in `task_reference10.py` (linear algebra to generators) and
`task_reference10b.py` (codecs to wildcards). `task_prompts` imports `tenth_tasks(k)` (`--families
tenth`) and its docstring gives the commands that drew data/task_dev10_prompts.jsonl and
data/task_prompts13.jsonl.
"""

from __future__ import annotations

import base64
import random
import re
from functools import reduce
from operator import xor

from d3d.training.task_families import TEXT, WORDS, Task, tasks
from d3d.training.task_reference3 import N
from d3d.training.task_reference10 import (FLIGHTS, KEYS_AND_SIZE, MATRIX, PARTITION, ROUTE, TWO_VECTORS, WEIGHTED,
                                           back_substitute, bbs_question, blocky_partition, blum_blum_shub,
                                           capacity_after, cheapest_within, conjugate, count_partitions,
                                           count_shortest_paths, cramer, cross, derangements, determinant,
                                           distinct_words, djb2, fisher_yates, flights_question, fnv1a,
                                           has_euler_trail, has_negative_cycle, integer_partitions, integer_system,
                                           is_orthogonal, java_hash, kronecker, lcg_cycle_length, lcg_terms, lfsr,
                                           lfsr_question, linear_probing, low_rank_matrix, matrix_power, max_flow,
                                           middle_square, orthogonal_or_not, park_miller, partition, pick_question,
                                           pipes, polynomial_hash, probing_keys, probing_question, quadratic_probing,
                                           rank, ring_owners, route_question, shortest_distances, shuffle_question,
                                           signed_graph, spanning_weight, square_matrix, stirling2, sum_collisions,
                                           tied_routes, trail_or_not, upper_system, weighted_graph, weighted_pick,
                                           widest_path, xorshift32)
from d3d.training.task_reference10b import (FILE_NAMES, GRID, HEAPS, KEYPAD, MORSE, NATO, SURNAMES, brace_pattern,
                                            class_match, class_question, code_points, count_queens, expand_braces,
                                            first_total, glob_match, glob_question, grundy_values, hanoi,
                                            heaps_or_losing, hex_dump, is_bijection, isomorphic_question, key_of,
                                            keyboard_shift, knight_distance, latin_or_not, lights_out, lights_question,
                                            line_flips, lines_of, magic_or_not, misere_wins, mixed_text,
                                            moore_question, moore_wins, morse, morse_units, multitap, nim_move,
                                            quoted_printable, regex_question, reversi_question, slide_left, soundex,
                                            square_game_wins, square_question, staircase_question, sudoku_consistent,
                                            sudoku_grid, t9_question, utf16_units, window_question, window_starts,
                                            word_pattern_question, wythoff_cold, wythoff_question)

UNDIRECTED = "Each edge (a, b, w) joins nodes a and b, both ways, at cost w > 0; the nodes are 0 .. n-1."
DIRECTED = "Each edge (a, b, w) leads one way, from node a to node b, at cost w > 0; the nodes are 0 .. n-1."
NIM = "Two players take turns removing any positive number of stones from one heap"
GLOB = "In the pattern '?' matches any one character and '*' any run of characters, even none"


def phrase(r: random.Random, most: int = 3) -> str:
    """1 to `most` different words of WORDS, one space apart."""
    return " ".join(r.sample(WORDS, r.randint(1, most)))


def linear_tasks(k: int) -> list[Task]:
    """Small integer matrices and vectors as linear algebra."""
    two_matrices = (("left", "List[List[int]]"), ("right", "List[List[int]]"))
    vectors = lambda r: tuple([r.randint(-5, 5) for _ in range(r.randint(1, 4))] for _ in range(2))  # noqa: E731
    return tasks([
        ("matrix_determinant", MATRIX, "int", "The matrix is square. Return its determinant.", determinant,
         lambda r: (square_matrix(r),)),
        (f"matrix_power_{k}", MATRIX, "List[List[int]]", f"The matrix is square. Return the matrix to the power {k}: "
         f"the product of {k} copies of it.", lambda m: matrix_power(m, k), lambda r: (square_matrix(r, 2, 2),)),
        ("kronecker_product", two_matrices, "List[List[int]]", "Return the Kronecker product of the matrices: "
         "every entry x of left replaced by the block x * right, the blocks laid out as the entries of left are.",
         kronecker, lambda r: (square_matrix(r, r.randint(1, 2), 3), square_matrix(r, 2, 3))),
        ("cross_product", TWO_VECTORS, "List[int]", "u and v have three entries each. Return their cross product, "
         "the vector at right angles to both whose length is the area of the parallelogram they span.", cross,
         lambda r: ([r.randint(-4, 4) for _ in range(3)], [r.randint(-4, 4) for _ in range(3)])),
        ("outer_product", TWO_VECTORS, "List[List[int]]", "Return the matrix whose entry in row i and column j is "
         "u[i] * v[j].", lambda u, v: [[a * b for b in v] for a in u], vectors),
        ("solve_two_equations", (("coefficients", "List[List[int]]"), ("rhs", "List[int]")), "Tuple[int, int]",
         "The equations coefficients[0][0] * x + coefficients[0][1] * y = rhs[0] and coefficients[1][0] * x + "
         "coefficients[1][1] * y = rhs[1] have exactly one solution, in integers. Return (x, y).", cramer,
         integer_system),
        ("matrix_rank", MATRIX, "int", "Return the rank of the matrix: the largest number of its rows that are "
         "linearly independent.", rank, low_rank_matrix),
        ("is_orthogonal_matrix", MATRIX, "bool", "The matrix is square. Return True if the matrix times its "
         "transpose is the identity matrix.", is_orthogonal, orthogonal_or_not),
        ("solve_upper_triangular", (("upper", "List[List[int]]"), ("rhs", "List[int]")), "List[int]", "upper is "
         "square, with zeros below its diagonal and none on it, and upper times some list of integers x gives "
         "rhs. Return x, solving from the last equation up.", back_substitute, upper_system),
        ("characteristic_coefficients", MATRIX, "List[int]", "The matrix is 2 x 2. Return the coefficients "
         "[1, b, c] of its characteristic polynomial t * t + b * t + c: b is minus the sum of its diagonal and c "
         "its determinant.", lambda m: [1, -(m[0][0] + m[1][1]), determinant(m)],
         lambda r: (square_matrix(r, 2, 6),)),
    ])


def network_tasks(k: int) -> list[Task]:
    """Weighted graphs as lists of edges (a, b, w) on the nodes 0 .. n-1."""
    budget = 3 * k + 2  # 8 .. 23
    start = WEIGHTED + (("start", "int"),)
    from_somewhere = lambda r: ((g := weighted_graph(r))[0], g[1], r.randrange(g[1]))  # noqa: E731
    return tasks([
        ("shortest_distances_from", start, "List[int]", f"{UNDIRECTED} Return every node's smallest total cost "
         "from start, -1 for a node that cannot be reached.", shortest_distances, from_somewhere),
        ("minimum_spanning_weight", WEIGHTED, "int", f"{UNDIRECTED} Return the smallest total cost of edges that "
         "connect all the nodes, or -1 if no choice of the edges does.", spanning_weight, weighted_graph),
        (f"nodes_within_cost_{budget}", start, "List[int]", f"{UNDIRECTED} Return, in increasing order, the nodes "
         f"whose cheapest route from start costs at most {budget}, start included.",
         lambda e, n, s: [i for i, d in enumerate(shortest_distances(e, n, s)) if 0 <= d <= budget],
         from_somewhere),
        ("distance_table", WEIGHTED, "List[List[int]]", f"{DIRECTED} Return the table whose row i and column j "
         "hold the cheapest cost from i to j: 0 from a node to itself and -1 where j cannot be reached.",
         lambda e, n: [shortest_distances(e, n, s, True) for s in range(n)],
         lambda r: weighted_graph(r, 2, 4, directed=True)),
        ("widest_route_width", ROUTE, "int", "Each edge (a, b, w) joins nodes a and b, both ways, and carries at "
         "most w; the nodes are 0 .. n-1. A route carries as much as its narrowest edge. Return the most a route "
         "from start to goal can carry, or 0 if goal cannot be reached.", widest_path, route_question),
        ("count_cheapest_routes", ROUTE, "int", f"{UNDIRECTED} Return how many different routes from start to goal "
         "have the smallest total cost (0 if goal cannot be reached).", count_shortest_paths,
         tied_routes),
        ("has_negative_cycle", WEIGHTED, "bool", "Each edge (a, b, w) leads from node a to node b at cost w, which "
         "may be negative; the nodes are 0 .. n-1. Return True if some round trip along the edges costs less "
         "than 0 in total.", has_negative_cycle, signed_graph),
        ("has_euler_trail", (("edges", "List[Tuple[int, int]]"),), "bool", "Each pair joins two nodes, and there is "
         "at least one. Return True if a single walk, starting and ending anywhere, can use every edge exactly "
         "once.", has_euler_trail, trail_or_not),
        (f"cheapest_route_hops_{k}", FLIGHTS, "int", f"Each flight (a, b, price) goes from city a to city b. Return "
         f"the lowest total price of getting from start to goal with at most {k} flights, or -1 if that cannot "
         "be done.", lambda f, s, g: cheapest_within(f, s, g, k), lambda r: flights_question(r, k)),
        ("max_flow_value", WEIGHTED, "int", "Each edge (a, b, w) is a pipe from node a to node b that carries at "
         "most w; the nodes are 0 .. n-1. Return the most that can flow from node 0 to node n - 1.", max_flow,
         pipes),
    ])


def partition_tasks(k: int) -> list[Task]:
    """Ways to split a number, or a set, into parts."""
    upto = lambda r: (r.randint(1, 30),)  # noqa: E731
    parts = "The parts are positive and in non-increasing order."
    return tasks([
        ("integer_partitions", N, "List[List[int]]", "Return every way to write n as a sum of positive integers, "
         "order ignored: each as the list of its parts from largest to smallest, the lists in decreasing order "
         "([n] first).", integer_partitions, lambda r: (r.randint(1, 6),)),
        ("distinct_part_partitions", N, "int", "Return in how many ways n can be written as a sum of different "
         "positive integers, order ignored (n alone counts).", lambda n: count_partitions(n, range(1, n + 1), True),
         upto),
        (f"partitions_into_exactly_{k}", N, "int", f"Return in how many ways n can be written as a sum of exactly "
         f"{k} positive integers, order ignored.", lambda n: count_partitions(n - k, range(1, k + 1)) if n >= k else 0,
         lambda r: (r.randint(max(1, k - 2), k + 12),)),
        (f"partitions_with_parts_from_{k}", N, "int", f"Return in how many ways n can be written as a sum of "
         f"integers that are each {k} or more, order ignored.", lambda n: count_partitions(n, range(k, n + 1)), upto),
        ("conjugate_partition", PARTITION, "List[int]", f"{parts} Return the conjugate partition: its part i "
         "(counting from 0) is how many of the parts are greater than i.", conjugate, lambda r: (partition(r),)),
        ("durfee_square_size", PARTITION, "int", f"{parts} Return the largest d such that at least d of the parts "
         "are d or more.", lambda ps: sum(p > i for i, p in enumerate(ps)), lambda r: (blocky_partition(r),)),
        ("stirling_set_partitions", (("n", "int"), ("blocks", "int")), "int", "Return in how many ways n different "
         "items can be split into exactly blocks non-empty groups, with neither the groups nor the items in a "
         "group ordered.", stirling2, lambda r: (n := r.randint(1, 8), r.randint(1, n))),
        ("bell_number", N, "int", "Return in how many ways n different items can be split into non-empty groups, "
         "order ignored (1 for n = 0).", lambda n: sum(stirling2(n, b) for b in range(n + 1)),
         lambda r: (r.randint(0, 9),)),
        ("count_derangements", N, "int", "Return in how many orders n letters can go back into their n envelopes "
         "with no letter in its own envelope (1 for n = 0).", derangements, lambda r: (r.randint(0, 10),)),
        ("binary_partitions", N, "int", "Return in how many ways n can be written as a sum of powers of two (1, 2, "
         "4, 8 ...), repeats allowed and order ignored.",
         lambda n: count_partitions(n, [2 ** i for i in range(n.bit_length())]), upto),
    ])


def hash_tasks(k: int) -> list[Task]:
    """Hash functions of strings, and hash tables with open addressing."""
    base, size, m = 2 * k + 27, k + 5, 2 * k + 3  # 31 .. 41, 7 .. 12, 7 .. 17
    words = lambda r: (r.choice(WORDS) + r.choice(("", "", r.choice(WORDS))),)  # noqa: E731
    each = "Start from {0} and, for every character, multiply by {1} and add its character code"
    return tasks([
        ("djb2_hash", TEXT, "int", each.format(5381, 33) + ", keeping the remainder divided by 2 ** 32. Return the "
         "result.", djb2, words),
        ("fnv1a_hash", TEXT, "int", "Return the 32-bit FNV-1a hash of the text's UTF-8 bytes: start from "
         "2166136261 and, for every byte, take the exclusive or with it, then multiply by 16777619, keeping the "
         "remainder divided by 2 ** 32.", fnv1a, words),
        ("java_string_hash", TEXT, "int", each.format(0, 31) + ", wrapping around as a signed 32-bit integer does "
         "(from -2 ** 31 to 2 ** 31 - 1). Return the result.", java_hash, words),
        (f"polynomial_hash_base_{base}", TEXT, "int", each.format(0, base) + ", keeping the remainder divided by "
         "1000003. Return the result.", lambda t: polynomial_hash(t, base), words),
        (f"linear_probing_table_{size}", (("keys", "List[int]"),), "List[int]", f"Put the keys, in order, into a "
         f"table of {size} slots: a key goes to slot key % {size} or, if that is taken, to the next free slot "
         "after it, wrapping from the last slot to slot 0. Return the table, -1 for an empty slot.",
         lambda ks: linear_probing(ks, size)[0], lambda r: (probing_keys(r, size),)),
        ("linear_probe_counts", KEYS_AND_SIZE, "List[int]", "Put the keys, in order, into a table of size slots: a "
         "key tries slot key % size, then the next ones, wrapping around, until one is free. Return how many "
         "slots each key tried.", lambda ks, s: linear_probing(ks, s)[1], probing_question),
        ("quadratic_probing_table", KEYS_AND_SIZE, "List[int]", "size is a prime, and the keys fill fewer than half "
         "of the slots. Put them, in order, into a table of size slots: a key takes the first free slot among "
         "(key + i * i) % size for i = 0, 1, 2 ... Return the table, -1 for an empty slot.", quadratic_probing,
         lambda r: probing_question(r, True)),
        ("consistent_hash_owners", (("nodes", "List[int]"), ("keys", "List[int]")), "List[int]", "Nodes and keys "
         "sit at positions 0 to 99 on a ring. A key belongs to the first node at its position or after it, going "
         "up and wrapping from 99 to 0. Return each key's node.", ring_owners,
         lambda r: (r.sample(range(100), r.randint(2, 4)), [r.randint(0, 99) for _ in range(r.randint(1, 4))])),
        ("capacity_after_inserts", (("inserts", "int"), ("capacity", "int")), "int", "A hash table starts with the "
         "given capacity and doubles it whenever an insertion leaves it more than three quarters full. Return its "
         "capacity after that many insertions.", capacity_after,
         lambda r: (r.randint(0, 60), r.choice((2, 4, 8, 16)))),
        (f"character_sum_collisions_{m}", (("words", "List[str]"),), "List[Tuple[int, int]]", f"Hash every word to "
         f"the sum of its character codes modulo {m}. Return, in order, the index pairs (i, j) with i < j whose "
         "words get the same hash.", lambda ws: sum_collisions(ws, m), distinct_words),
    ])


def generator_tasks(k: int) -> list[Task]:
    """Pseudo-random generators and what is built on their draws."""
    m = 2 * k + 6  # 10 .. 20
    seed = (("seed", "int"),)
    return tasks([
        ("lcg_terms", seed + (("multiplier", "int"), ("increment", "int"), ("modulus", "int"), ("count", "int")),
         "List[int]", "A linear congruential generator replaces x by (multiplier * x + increment) % modulus. "
         "Starting from x = seed, return its next count values.", lcg_terms,
         lambda r: (r.randint(0, 20), r.randint(2, 13), r.randint(0, 9), r.randint(10, 64), r.randint(3, 6))),
        (f"lcg_cycle_length_mod_{m}", (("multiplier", "int"), ("increment", "int"), ("seed", "int")), "int",
         f"Starting from seed, replace x again and again by (multiplier * x + increment) % {m}. The values end up "
         "going round a cycle; return how many values the cycle has.",
         lambda a, c, s: lcg_cycle_length(a, c, s, m), lambda r: (r.randint(1, m - 1), r.randint(0, m - 1),
                                                                   r.randint(0, m - 1))),
        (f"middle_square_terms_{k}", seed, "List[int]", f"The seed has four digits. {k} times over, square the "
         f"number, write the square with eight digits (zeros in front) and keep the middle four as the next "
         f"number. Return those {k} numbers.", lambda s: middle_square(s, k), lambda r: (r.randint(1000, 9999),)),
        ("lfsr_output_bits", (("state", "List[int]"), ("taps", "List[int]"), ("count", "int")), "List[int]", "A "
         "shift register holds the bits of state. At each of count steps, output its last bit, then move every "
         "bit one place towards the end and put in front the exclusive or of the bits that were at the indices in "
         "taps. Return the output bits.", lfsr, lfsr_question),
        ("xorshift32_step", (("x", "int"),), "int", "Apply one xorshift step to the 32-bit number x: x ^= x << 13, "
         "then x ^= x >> 17, then x ^= x << 5, keeping only the lowest 32 bits after each left shift. Return the "
         "new x.", xorshift32, lambda r: (r.randint(1, 100000),)),
        (f"park_miller_terms_{k}", seed, "List[int]", f"Return the next {k} values of the Park-Miller generator from "
         "seed: each is 16807 times the one before, modulo 2147483647.", lambda s: park_miller(s, k),
         lambda r: (r.randint(1, 1000),)),
        ("blum_blum_shub_bits", seed + (("modulus", "int"), ("count", "int")), "List[int]", "count times over, "
         "replace seed by seed * seed % modulus and output its lowest bit. Return the bits.", blum_blum_shub,
         bbs_question),
        ("fisher_yates_with_draws", (("items", "List[str]"), ("draws", "List[int]")), "List[str]", "Shuffle a copy "
         "of the items the Fisher-Yates way with the given draws: for i from the last index down to 1, swap the "
         "items at i and at the next draw (a number from 0 to i). Return the shuffled list.", fisher_yates,
         shuffle_question),
        ("von_neumann_extract", (("bits", "List[int]"),), "List[int]", "Read the bits in pairs, dropping a last "
         "odd one. The pair 0, 1 gives 0, the pair 1, 0 gives 1, and two equal bits give nothing. Return the bits "
         "given.", lambda b: [x for x, y in zip(b[::2], b[1::2]) if x != y],
         lambda r: ([r.randint(0, 1) for _ in range(r.randint(2, 12))],)),
        ("weighted_pick_index", (("weights", "List[int]"), ("draw", "int")), "int", "The weights are positive and "
         "draw is from 0 to their sum minus 1. Lay stretches as long as the weights end to end from 0, and return "
         "the index of the weight whose stretch holds draw.", weighted_pick, pick_question),
    ])


def codec_tasks(k: int) -> list[Task]:
    """Binary-to-text codecs and the encodings of Unicode text."""
    width, line = k + 4, 4 * k  # 6 .. 11 bytes a row, 8 .. 28 characters a line
    texts = lambda r: (mixed_text(r),)  # noqa: E731
    b64 = lambda t: base64.b64encode(t.encode()).decode()  # noqa: E731
    return tasks([
        ("base64_encode_text", TEXT, "str", "Encode the text's UTF-8 bytes in Base64 (the letters A-Z and a-z, the "
         "digits, '+' and '/', with '=' padding) and return the result.", b64, texts),
        ("base64_decode_text", (("code", "str"),), "str", "The code is the Base64 encoding, with '=' padding, of "
         "some UTF-8 text. Return the text.", lambda c: base64.b64decode(c).decode(), lambda r: (b64(mixed_text(r)),)),
        ("base32_encode_text", TEXT, "str", "Encode the text's UTF-8 bytes in Base32 (the letters A-Z and the digits "
         "2-7, with '=' padding) and return the result.", lambda t: base64.b32encode(t.encode()).decode(), texts),
        (f"hex_dump_rows_{width}", TEXT, "List[str]", f"Return one line for every {width} bytes of the text's UTF-8 "
         "encoding: the offset of its first byte as four lower-case hexadecimal digits, then ': ', then the bytes "
         "as two-digit lower-case hexadecimal numbers separated by spaces.", lambda t: hex_dump(t, width), texts),
        ("utf8_bytes_of", (("code_points", "List[int]"),), "List[int]", "Return the UTF-8 bytes, as numbers from 0 "
         "to 255, of the characters with these code points, in order.",
         lambda ps: list("".join(map(chr, ps)).encode()), lambda r: (code_points(r),)),
        ("utf8_character_count", (("data", "List[int]"),), "int", "The numbers are the bytes of some UTF-8 text. "
         "Return how many characters it holds, that is how many of the bytes do not start with the bits 10.",
         lambda d: sum(b >> 6 != 2 for b in d), lambda r: (list("".join(map(chr, code_points(r))).encode()),)),
        ("utf16_code_units", (("code_point", "int"),), "List[int]", "Return the UTF-16 code units of the character "
         "with this code point: the code point itself below 65536, and otherwise the surrogate pair "
         "55296 + (c >> 10), 56320 + (c & 1023), where c is the code point minus 65536.", utf16_units,
         lambda r: (code_points(r)[0],)),
        ("quoted_printable_encode", TEXT, "str", "Encode the text's UTF-8 bytes as quoted-printable: spaces and the "
         "bytes from 33 to 126 other than '=' stay as they are, and every other byte becomes '=' followed by two "
         "upper-case hexadecimal digits.", quoted_printable, texts),
        ("hex_to_text", (("digits", "str"),), "str", "The string holds two lower-case hexadecimal digits for every "
         "byte of some UTF-8 text. Return the text.", lambda h: bytes.fromhex(h).decode(),
         lambda r: (mixed_text(r).encode().hex(),)),
        (f"base64_lines_of_{line}", TEXT, "List[str]", f"Encode the text's UTF-8 bytes in Base64, with '=' padding, "
         f"and split the result into lines of {line} characters, the last one possibly shorter.",
         lambda t: re.findall(f".{{1,{line}}}", b64(t)), lambda r: (phrase(r, 4),)),
    ])


def alphabet_tasks(k: int) -> list[Task]:
    """Signalling and phonetic alphabets: Morse, NATO, Soundex, phone keypads and keyboards."""
    letters = {code: c for c, code in MORSE.items()}
    words = lambda r: (phrase(r),)  # noqa: E731
    keys = ", ".join(f"{i} {ls}" for i, ls in enumerate(KEYPAD, 2))
    return tasks([
        ("morse_encode", TEXT, "str", "The text is lower-case words one space apart. Write every letter in "
         "International Morse code, the letters of a word separated by a space and the words by ' / '.", morse,
         words),
        ("morse_decode", (("code", "str"),), "str", "The code is International Morse code, its letters separated by "
         "a space and its words by ' / '. Return the lower-case text, its words one space apart.",
         lambda c: " ".join("".join(letters[x] for x in w.split()) for w in c.split(" / ")),
         lambda r: (morse(phrase(r)),)),
        ("morse_duration_units", TEXT, "int", "The text is lower-case words one space apart, sent in International "
         "Morse code. A dot lasts 1 unit and a dash 3; the gap inside a letter is 1 unit, between letters 3 and "
         "between words 7. Return how many units the whole message lasts.", morse_units, words),
        ("nato_spelling", (("word", "str"),), "List[str]", "Return the NATO phonetic alphabet's code word for every "
         "letter of the lower-case word, in order: Alfa, Bravo, Charlie, Delta, Echo ... Zulu (with Juliett and "
         "Xray spelled so).", lambda w: [NATO[ord(c) - 97] for c in w], lambda r: (r.choice(WORDS),)),
        ("soundex_code", (("name", "str"),), "str", "Return the American Soundex code of the name: its first letter "
         "in upper case, then digits for the letters after it (b f p v 1, c g j k q s x z 2, d t 3, l 4, m n 5, "
         "r 6), a letter with the same digit as the letter before it (or as the one before an h or w) giving "
         "none, vowels and y giving none, cut or padded with zeros to four characters.", soundex,
         lambda r: (r.choice(SURNAMES),)),
        ("t9_digits", (("word", "str"),), "str", f"Return the phone keypad digits that type the lower-case word, a "
         f"digit per letter ({keys}).", lambda w: "".join(key_of(c) for c in w), lambda r: (r.choice(WORDS),)),
        ("t9_candidates", (("digits", "str"), ("words", "List[str]")), "List[str]", f"On a phone keypad ({keys}) "
         "every letter is typed by its key's digit. Return, in order, the lower-case words typed by exactly these "
         "digits.", lambda d, ws: [w for w in ws if "".join(key_of(c) for c in w) == d], t9_question),
        ("multitap_keys", (("word", "str"),), "str", f"Type the lower-case word on an old phone keypad ({keys}): "
         "each letter is its key's digit pressed as many times as the letter's place on the key, with a space "
         "between two letters on the same key. Return the presses as a string.", multitap,
         lambda r: (r.choice(WORDS),)),
        (f"keyboard_shift_right_{k}", TEXT, "str", f"On a QWERTY keyboard the letter rows are qwertyuiop, asdfghjkl "
         f"and zxcvbnm. Replace every lower-case letter by the letter {k} places to its right in its row, "
         "wrapping round to the row's start; other characters stay.", lambda t: keyboard_shift(t, k), words),
        ("vanity_number_digits", (("number", "str"),), "str", f"Phone numbers are sometimes written with letters. "
         f"Replace every letter, in either case, by its keypad digit ({keys}) and keep the other characters.",
         lambda s: "".join(key_of(c.lower()) if c.isalpha() else c for c in s),
         lambda r: (f"1-800-{r.choice(WORDS).upper()}" if r.random() < 0.6 else f"{r.randint(200, 999)}-"
                    f"{r.choice(WORDS)[:4].upper()}",)),
    ])


def recreation_tasks(k: int) -> list[Task]:
    """Classic puzzles and board games on small grids and rows."""
    return tasks([
        ("is_magic_square", GRID, "bool", "The grid is square. Return True if all its rows, all its columns and both "
         "its diagonals have the same sum.", lambda g: len({sum(line) for line in lines_of(g)}) == 1, magic_or_not),
        ("is_latin_square", GRID, "bool", "The grid has n rows of n numbers. Return True if every row and every "
         "column holds each of the numbers 1 to n exactly once.",
         lambda g: all(sorted(line) == list(range(1, len(g) + 1)) for line in g + [list(c) for c in zip(*g)]),
         latin_or_not),
        ("mini_sudoku_is_consistent", GRID, "bool", "The grid is a 4 x 4 sudoku, 0 for an empty cell, made of four "
         "2 x 2 boxes. Return True if no digit appears twice in a row, a column or a box.", sudoku_consistent,
         sudoku_grid),
        ("tower_of_hanoi_moves", (("n", "int"), ("source", "str"), ("target", "str")), "List[Tuple[str, str]]", "The "
         "pegs are 'A', 'B' and 'C', and n disks sit on source, smaller ones on larger. Return the fewest moves, "
         "each (from peg, to peg), that bring them all to target without ever putting a disk on a smaller one.",
         hanoi, lambda r: (r.randint(1, 3), *r.sample("ABC", 2))),
        ("slide_tiles_left", (("row", "List[int]"),), "List[int]", "Slide the row left as in the game 2048: the "
         "tiles other than 0 move to the front in order, two equal neighbours merge into their sum (from the left, "
         "each tile at most once), and zeros fill the end.", slide_left,
         lambda r: ([r.choice((0, 0, 2, 2, 4, 8)) for _ in range(4)],)),
        ("reversi_line_flips", (("line", "str"), ("index", "int"), ("player", "str")), "int", "The line is one row "
         "of a Reversi board: 'B' and 'W' are stones and '.' an empty square. If player ('B' or 'W') puts a stone "
         "on the empty square at index, return how many stones of the other colour are flipped: those in an "
         "unbroken run, in either direction, that ends at one of player's stones.", line_flips, reversi_question),
        ("eight_puzzle_solvable", (("tiles", "List[int]"),), "bool", "The tiles are the numbers 0 to 8 of a 3 x 3 "
         "sliding puzzle, read row by row, with 0 the gap. Return True if sliding tiles into the gap can bring "
         "them to the order 1, 2, 3, 4, 5, 6, 7, 8, 0.",
         lambda t: sum(a > b for i, a in enumerate(t) for b in t[i + 1:] if a and b) % 2 == 0,
         lambda r: (r.sample(range(9), 9),)),
        ("lights_out_press", GRID + (("row", "int"), ("col", "int")), "List[List[int]]", "The grid holds lights, 1 "
         "on and 0 off. Pressing the light at (row, col) switches it and its neighbours above, below, left and "
         "right. Return the grid after the press.", lights_out, lights_question),
        ("count_queen_placements", N, "int", "Return in how many ways n queens can stand on an n x n chessboard with "
         "no two in the same row, column or diagonal.", count_queens, lambda r: (r.randint(1, 8),)),
        ("fewest_knight_moves", (("start", "Tuple[int, int]"), ("goal", "Tuple[int, int]")), "int", "The squares of "
         "an 8 x 8 chessboard are (row, column) from (0, 0) to (7, 7). Return the fewest moves a knight needs to "
         "go from start to goal.", knight_distance,
         lambda r: ((r.randrange(8), r.randrange(8)), (r.randrange(8), r.randrange(8)))),
    ])


def nim_tasks(k: int) -> list[Task]:
    """Impartial games: whoever cannot move loses (or, in misere play, wins)."""
    wins = "Return True if the player to move can force a win."
    return tasks([
        ("nim_first_player_wins", HEAPS, "bool", f"{NIM}, and whoever takes the last stone wins. {wins}",
         lambda h: reduce(xor, h, 0) != 0, lambda r: (heaps_or_losing(r),)),
        ("nim_winning_move", HEAPS, "Optional[Tuple[int, int]]", f"{NIM}, and whoever takes the last stone wins. "
         "Return (heap index, size to leave) for a winning move from the first heap that has one, or None if every "
         "move loses.", nim_move, lambda r: (heaps_or_losing(r),)),
        ("misere_nim_first_player_wins", HEAPS, "bool", f"{NIM}, and whoever takes the last stone loses. {wins}",
         misere_wins, lambda r: (heaps_or_losing(r, 2, 5, r.choice((1, 1, 3, 7))),)),
        ("grundy_values", (("n", "int"), ("moves", "List[int]")), "List[int]", "A move takes m stones from a pile "
         "for some m in moves. Return the Grundy values of piles of 0 to n stones: the smallest number 0, 1, 2 ... "
         "that is not the value of a pile one move away (0 when there is no move).", grundy_values,
         lambda r: (r.randint(4, 10), sorted(r.sample(range(1, 6), r.randint(1, 3))))),
        (f"take_away_winner_{k}", N, "str", f"Two players take turns taking 1 to {k} stones from a pile of n, and "
         "whoever takes the last stone wins. Return 'first' if the player who moves first can force a win, and "
         "'second' otherwise.", lambda n: "first" if n % (k + 1) else "second",
         lambda r: (r.randint(1, 30) if r.random() < 0.6 else (k + 1) * r.randint(1, 4),)),
        ("wythoff_losing_position", (("a", "int"), ("b", "int")), "bool", "In Wythoff's game a move takes any "
         "number of stones from one pile, or the same number from both, and whoever takes the last stone wins. "
         "Return True if the player to move from piles of a and b stones loses however they play.", wythoff_cold,
         wythoff_question),
        ("staircase_nim_first_player_wins", (("steps", "List[int]"),), "bool", "steps[i] coins lie on step i + 1 of "
         "a staircase. A move takes any positive number of coins from one step down to the step below (from step "
         f"1 off the staircase), and whoever makes the last move wins. {wins}",
         lambda s: reduce(xor, s[::2], 0) != 0, staircase_question),
        (f"moore_nim_wins_{k}", HEAPS, "bool", f"A move takes stones from at least one and at most {k} heaps, any "
         f"positive number from each, and whoever takes the last stone wins. {wins}", lambda h: moore_wins(h, k),
         lambda r: moore_question(r, k)),
        ("coins_from_ends_first_total", (("coins", "List[int]"),), "int", "Two players take turns taking the first "
         "or the last coin of the row, each playing to make their own total as large as possible. Return the "
         "total of the player who moves first.", first_total,
         lambda r: ([r.randint(1, 9) for _ in range(r.randint(1, 6))],)),
        ("square_removal_wins", N, "bool", "Two players take turns removing a square number of stones (1, 4, 9 ...) "
         f"from a pile of n, and whoever takes the last stone wins. {wins}", square_game_wins,
         square_question),
    ])


def wildcard_tasks(k: int) -> list[Task]:
    """Glob patterns, small regular expressions and patterns of repeated letters."""
    pattern_text = (("pattern", "str"), ("text", "str"))
    code = lambda w: [list(dict.fromkeys(w)).index(c) for c in w]  # noqa: E731
    globs = ("*.csv", "*.txt", "report?.*", "*main*", "data*", "?????.*", "*.py", "test_*", "*o*.?x?")
    return tasks([
        ("glob_match", pattern_text, "bool", f"{GLOB}; other characters match themselves. Return True if the "
         "pattern matches the whole text.", glob_match, glob_question),
        ("glob_filter", (("pattern", "str"), ("names", "List[str]")), "List[str]", f"{GLOB}; other characters match "
         "themselves. Return, in order, the names the pattern matches in full.",
         lambda p, ns: [n for n in ns if glob_match(p, n)],
         lambda r: (r.choice(globs), r.sample(FILE_NAMES, r.randint(3, 6)))),
        ("regex_star_match", pattern_text, "bool", "The pattern holds letters, '.' for any one character, and '*' "
         "after a letter or '.' for any number of it, even none. Return True if the pattern matches the whole "
         "text.", lambda p, t: re.fullmatch(p, t) is not None, regex_question),
        ("follows_word_pattern", (("pattern", "str"), ("sentence", "str")), "bool", "Return True if the words of the "
         "sentence follow the pattern: as many words as letters, and two words equal exactly where their letters "
         "are.", lambda p, s: is_bijection(p, s.split()), word_pattern_question),
        ("are_isomorphic_strings", (("first", "str"), ("second", "str")), "bool", "Return True if second can be made "
         "from first by replacing letters, every copy of a letter by the same letter and different letters by "
         "different ones.", is_bijection, isomorphic_question),
        ("character_class_match", (("pattern", "str"), ("word", "str")), "bool", "In the pattern a letter matches "
         "itself, and a class in square brackets such as [aeiou] or [a-f] matches any one letter it lists (a-f "
         "standing for a to f). Return True if the pattern matches the whole word.", class_match, class_question),
        ("wildcard_window_starts", pattern_text, "List[int]", "In the pattern '?' matches any one character and any "
         "other character itself. Return, in increasing order, every index where a stretch of the text as long as "
         "the pattern starts that the pattern matches.", window_starts, window_question),
        ("letter_pattern_code", (("word", "str"),), "List[int]", "Number the word's different letters 0, 1, 2 ... in "
         "the order they first appear, and return the number of each letter of the word.", code,
         lambda r: (r.choice(WORDS),)),
        ("expand_braces", (("pattern", "str"),), "List[str]", "Every group in braces, like {red,blue}, lists options "
         "separated by commas. Return every string made by choosing one option of each group, the first group's "
         "options changing slowest and each group's in the order given.", expand_braces, brace_pattern),
        ("same_letter_pattern_words", (("word", "str"), ("candidates", "List[str]")), "List[str]", "Return, in "
         "order, the candidates with the word's pattern of repeats: as long as it, with two letters equal exactly "
         "where the word's are.", lambda w, cs: [c for c in cs if code(c) == code(w)],
         lambda r: (r.choice(WORDS), r.sample(WORDS + ("deed", "peep", "refer", "hello", "sassy"), r.randint(4, 7)))),
    ])


def tenth_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (linear_tasks(k) + network_tasks(k) + partition_tasks(k) + hash_tasks(k) + generator_tasks(k)
            + codec_tasks(k) + alphabet_tasks(k) + recreation_tasks(k) + nim_tasks(k) + wildcard_tasks(k))
