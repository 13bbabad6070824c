"""A fifth set of programming-task families for `task_prompts.py`: shapes the first four sets lack.

The four earlier sets hold about 660 function names, and new functions teach the drafter more than new
renderings of old ones (docs/training.md). This module adds eight more families, 98 tasks for each k (203 names):

    records    CSV rows under a header, records as dictionaries, {placeholder} templates, query strings
    multisets  intersections and differences that keep repeats, letters to spell a word, Jaccard fractions
    geometry   integer points and boxes: Chebyshev distance, bounding boxes, collinearity, overlap areas
    graphs     edge lists and adjacency dictionaries: degrees, reachability, components, topological order
    games      bowling, darts, tic-tac-toe, rock-paper-scissors, dice totals, card hands, knight moves
    ledgers    lists of tuples as accounts and stock: refused overdrafts, FIFO lots, restocking, transfers
    bits       Gray code, bit reversal within a width, bit flips between numbers, rotations of a byte
    layout     word wrap, full justification, title case with small words, numeronyms, boxes, columns

The rules are task_families4.py's: reference solutions compute the examples, example inputs make them
informative, results print exactly, constants vary with k (2 to 7), no name is a HumanEval entry point
or an earlier catalogue's (for any k), no description shares a 13-word n-gram with a HumanEval prompt.
Near misses were turned around: a doubled polygon area and turn directions (not triangle areas or right
angles), bit flips between two numbers (not xor of binary strings), query strings whose keys repeat
(not the third set's "key=value;..."). A name with the constant k ends with it, so holding a function
out holds it out under every k. Reference solutions, generators and argument shapes are in
`task_reference5.py`. `task_prompts` imports `fifth_tasks(k)` (`--families fifth`) and its docstring gives
the commands that drew data/task_dev5_prompts.jsonl and data/task_prompts8.jsonl from it.
"""

from __future__ import annotations

import math
import operator
import re
from collections import Counter
from fractions import Fraction
from functools import reduce
from itertools import combinations

from d3d.training.task_families import (MAPPING, NUMS, TEXT, WORDS, WORDS_ARG, XY, Task, capitalized_sometimes, counts,
                                        point, sentence, tasks)
from d3d.training.task_reference3 import MIXED_WORDS, N, TWO_LISTS, sometimes
from d3d.training.task_reference5 import (ANAGRAMS, BOX, CARDS, EDGES, FIELDS, GRAPH, LINES, LOTS, MOVES, PEOPLE,
                                          PLACEHOLDERS, RECORDS, ROWS, SMALL_WORDS, TILE_VALUES, acyclic_graph,
                                          binary_palindrome, bowling_game, bowling_score, boxed, card_total,
                                          chain_graph, collinear_sometimes, components, csv_rows, cyclic_sometimes,
                                          dice_ways, directed_graph, fifo_take, fitting_words, five_dice,
                                          fixed_width_line, from_gray, group_anagrams, grown, header_lookup,
                                          header_request, hop_counts, in_columns, inner_box_sometimes, justify,
                                          knight_targets, lots_and_quantity, near_boxes, neighbour_pair, neighbours,
                                          nodes_and_edges, parse_query, played_board, point_and_box, poker_dice_hand,
                                          polygon, query_string, refuse_overdrafts, restock_days, rock_paper_scissors,
                                          small_multiset, spelling, stock_records, template, tic_tac_toe_winner,
                                          topological_order, transfer_balances, turn, two_coloured, undirected_edges,
                                          wrap_words)

PLACEHOLDER = re.compile(r"\{(\w+)\}")


def record_tasks(k: int) -> list[Task]:
    """Strings and dictionaries as records: CSV rows under a header, templates, query strings, header lines."""
    return tasks([
        ("column_of_rows", ROWS + (("index", "int"),), "List[str]", "Each row is a line of fields separated by "
         "commas. Return the field at position index (counting from 0) of every row, in order.",
         lambda rs, i: [row.split(",")[i] for row in rs],
         lambda r: (rs := csv_rows(r), r.randrange(len(rs[0].split(","))))),
        ("sum_named_column", ROWS + (("column", "str"),), "int", "The first row is a header of comma-separated "
         "column names and every later row holds the values of one entry. Return the sum of the integers in the "
         "named column.", lambda rs, c: sum(int(row.split(",")[rs[0].split(",").index(c)]) for row in rs[1:]),
         lambda r: (rs := csv_rows(r), r.choice(rs[0].split(",")[1:]))),
        ("rows_to_records", ROWS, "List[Dict[str, str]]", "The first row names the comma-separated columns. Return "
         "one dictionary for each later row, from each column name to that row's field, fields kept as strings.",
         lambda rs: [dict(zip(rs[0].split(","), row.split(","))) for row in rs[1:]], lambda r: (csv_rows(r),)),
        ("fill_template", (("template", "str"), ("values", "Dict[str, str]")), "str", "Replace every placeholder "
         "of the template, a name in curly braces such as {name}, by its value in the dictionary; a placeholder "
         "whose name has no value stays as it is.", lambda t, vs: PLACEHOLDER.sub(lambda m: vs.get(m[1], m[0]), t),
         lambda r: (template(r), {p: r.choice(WORDS) for p in r.sample(PLACEHOLDERS, r.randint(1, 4))})),
        ("template_fields", (("template", "str"),), "List[str]", "Return the names that appear in curly braces in "
         "the template, such as name in {name}, in order of first appearance and each once.",
         lambda t: list(dict.fromkeys(PLACEHOLDER.findall(t))), lambda r: (template(r),)),
        ("parse_query_string", (("query", "str"),), "Dict[str, List[str]]", "The query holds 'key=value' parts "
         "joined by '&', and a key may come back. Return a dictionary from each key, in order of first "
         "appearance, to the list of its values in order.", parse_query, lambda r: (query_string(r),)),
        ("record_to_line", (("record", "Dict[str, int]"),), "str", "Write the record as 'key=value' parts joined by "
         "', ', the keys in alphabetical order.", lambda d: ", ".join(f"{key}={d[key]}" for key in sorted(d)),
         lambda r: (counts(r, 9),)),
        ("header_lookup", LINES + (("name", "str"),), "str", "Each line is 'Name: value'. Return the value of the "
         "first line whose name matches the given name, upper and lower case counting as equal, or an empty "
         "string if no line does.", header_lookup, header_request),
        (f"split_fixed_width_{k}", (("line", "str"),), "List[str]", f"The line is made of fields exactly {k} "
         "characters wide, each padded with spaces on the right. Return the fields in order, without their "
         "padding.", lambda s: [s[i: i + k].rstrip() for i in range(0, len(s), k)],
         lambda r: (fixed_width_line(r, k),)),
        ("field_maxima", RECORDS, "Dict[str, int]", "Return a dictionary from every field that some record has to "
         "its largest value among the records that have it, fields in alphabetical order.",
         lambda rs: {f: max(rec[f] for rec in rs if f in rec) for f in sorted({f for rec in rs for f in rec})},
         lambda r: ([{f: r.randint(0, 9) for f in r.sample(FIELDS, r.randint(1, 3))}
                     for _ in range(r.randint(2, 4))],)),
        (f"records_with_qty_above_{k}", RECORDS, "List[int]", f"Every record has the fields 'id' and 'qty'. Return "
         f"the ids of the records whose qty is greater than {k}, in their order.",
         lambda rs: [rec["id"] for rec in rs if rec["qty"] > k], lambda r: (stock_records(r, 2 * k + 2),)),
        ("sort_records_by_field", RECORDS + (("field", "str"),), "List[Dict[str, int]]", "Every record has the "
         "field. Return the records sorted by its value, smallest first; records with equal values keep their "
         "order.", lambda rs, f: sorted(rs, key=lambda rec: rec[f]),
         lambda r: (stock_records(r, 5), r.choice(("id", "qty", "price")))),
    ])


def multiset_tasks(k: int) -> list[Task]:
    """Lists and words as multisets: values counted with their repeats, spelling from letters, Jaccard."""
    two = lambda r: (small_multiset(r), small_multiset(r))  # noqa: E731
    jaccard = lambda a, b: Fraction(len(set(a) & set(b)), len(set(a) | set(b)))  # noqa: E731
    return tasks([
        ("multiset_intersection", TWO_LISTS, "List[int]", "Return, in increasing order, the values the two lists "
         "share, each as many times as it occurs in the list where it occurs fewer times.",
         lambda a, b: sorted((Counter(a) & Counter(b)).elements()), two),
        ("multiset_difference", TWO_LISTS, "List[int]", "Take from left one copy of a value for every copy of it "
         "in right, and return what is left of left in increasing order.",
         lambda a, b: sorted((Counter(a) - Counter(b)).elements()), two),
        ("multiset_union", TWO_LISTS, "List[int]", "Return, in increasing order, every value of either list, each "
         "as many times as it occurs in the list where it occurs more often.",
         lambda a, b: sorted((Counter(a) | Counter(b)).elements()), two),
        ("unmatched_copies", TWO_LISTS, "List[int]", "Pair off equal values between the two lists, one copy from "
         "each side at a time, and return the copies left without a partner, in increasing order.",
         lambda a, b: sorted(((Counter(a) - Counter(b)) + (Counter(b) - Counter(a))).elements()), two),
        ("multiset_contains", (("whole", "List[int]"), ("part", "List[int]")), "bool", "Return True if every value "
         "occurs in whole at least as many times as it occurs in part.", lambda w, p: not Counter(p) - Counter(w),
         lambda r: (w := small_multiset(r), sometimes(r, r.sample(w, r.randint(1, len(w))), small_multiset(r)))),
        ("can_spell_from", (("word", "str"), ("letters", "str")), "bool", "Return True if the word can be spelled "
         "with the given letters, each letter used at most once.", lambda w, ls: not Counter(w) - Counter(ls),
         spelling),
        ("letters_still_needed", (("word", "str"), ("letters", "str")), "str", "Return, in alphabetical order and "
         "with repeats, the letters that must be added to the given ones to spell the word, each letter used once.",
         lambda w, ls: "".join(sorted((Counter(w) - Counter(ls)).elements())), spelling),
        ("jaccard_fraction", TWO_LISTS, "str", "Return the number of distinct values in both lists over the number "
         "of distinct values in either, as a fraction 'numerator/denominator' in lowest terms (so '1/1' for "
         "equal sets).", lambda a, b: f"{jaccard(a, b).numerator}/{jaccard(a, b).denominator}", two),
        ("group_anagrams", WORDS_ARG, "List[List[str]]", "Group the words that are made of the same letters: "
         "return the groups in order of their first word, each with its words in order, repeats kept.",
         group_anagrams, lambda r: ([r.choice(ANAGRAMS) for _ in range(r.randint(2, 6))],)),
        ("shared_letter_count", (("first", "str"), ("second", "str")), "int", "Return how many letters the two "
         "words have in common, a repeated letter counting as often as it appears in both.",
         lambda a, b: sum((Counter(a) & Counter(b)).values()), lambda r: (r.choice(WORDS), r.choice(WORDS))),
        (f"cap_copies_at_{k}", NUMS, "List[int]", f"Return the list with every value kept at most {k} times: its "
         f"first {k} copies stay in place and any later copy is dropped.",
         lambda v: [x for i, x in enumerate(v) if v[:i].count(x) < k],
         lambda r: ([r.randint(0, 2) for _ in range(r.randint(k, 2 * k + 3))],)),
        (f"copies_short_of_{k}", NUMS, "Dict[int, int]", f"Return a dictionary from each distinct value, in "
         f"increasing order, to how many more copies it needs to occur {k} times (0 when it already does).",
         lambda v: {x: max(0, k - c) for x, c in sorted(Counter(v).items())},
         lambda r: ([r.randint(0, 3) for _ in range(r.randint(2, k + 4))],)),
    ])


def geometry_tasks(k: int) -> list[Task]:
    """Integer points and axis-parallel boxes (x1, y1, x2, y2): distances, boxes, lines, areas, lattice counts."""
    pts = lambda r: ([point(r) for _ in range(r.randint(2, 5))],)  # noqa: E731
    boxes = (("first", BOX), ("second", BOX))
    return tasks([
        ("chebyshev_distance", XY, "int", "Return the Chebyshev distance between the points a and b: the larger of "
         "the absolute differences of their x and of their y coordinates.",
         lambda a, b: max(abs(a[0] - b[0]), abs(a[1] - b[1])), lambda r: (point(r), point(r))),
        ("bounding_box", (("points", "List[Tuple[int, int]]"),), BOX, "Return the smallest box with sides parallel "
         "to the axes that holds every point, as (min x, min y, max x, max y).",
         lambda ps: (min(x for x, _ in ps), min(y for _, y in ps), max(x for x, _ in ps), max(y for _, y in ps)), pts),
        ("are_collinear", (("points", "List[Tuple[int, int]]"),), "bool", "Return True if one straight line passes "
         "through all the points.", lambda ps: all((b[0] - a[0]) * (c[1] - a[1]) == (b[1] - a[1]) * (c[0] - a[0])
                                                   for a, b, c in combinations(ps, 3)),
         lambda r: (collinear_sometimes(r),)),
        ("box_overlap_area", boxes, "int", "Each box is (x1, y1, x2, y2) with x1 < x2 and y1 < y2, its sides "
         "parallel to the axes. Return the area of the region the two boxes share (0 when they do not overlap).",
         lambda a, b: max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(0, min(a[3], b[3]) - max(a[1], b[1])),
         near_boxes),
        ("box_inside_box", (("outer", BOX), ("inner", BOX)), "bool", "Both boxes are (x1, y1, x2, y2) with "
         "x1 < x2 and y1 < y2. Return True if inner lies entirely within outer, touching its border allowed.",
         lambda o, i: o[0] <= i[0] and o[1] <= i[1] and i[2] <= o[2] and i[3] <= o[3], inner_box_sometimes),
        ("point_in_box", (("point", "Tuple[int, int]"), ("box", BOX)), "bool", "The box is (x1, y1, x2, y2) with "
         "x1 < x2 and y1 < y2. Return True if the point (x, y) lies inside it or on its border.",
         lambda p, b: b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3], point_and_box),
        ("lattice_points_on_segment", XY, "int", "Return how many points with integer coordinates lie on the "
         "straight segment from a to b, both ends included.",
         lambda a, b: math.gcd(abs(a[0] - b[0]), abs(a[1] - b[1])) + 1,
         lambda r: (a := point(r), r.choice((point(r), (a[0] + 3 * r.randint(-2, 2), a[1] + 2 * r.randint(-3, 3)))))),
        ("lattice_points_in_disc", (("radius", "int"),), "int", "Return how many points (x, y) with integer "
         "coordinates satisfy x * x + y * y <= radius * radius.",
         lambda rad: sum(x * x + y * y <= rad * rad for x in range(-rad, rad + 1) for y in range(-rad, rad + 1)),
         lambda r: (r.randint(0, 7),)),
        ("twice_polygon_area", (("points", "List[Tuple[int, int]]"),), "int", "The points are the corners of a "
         "polygon, in order around it. Return twice its area, which is always a whole number for integer corners.",
         lambda ps: abs(sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(ps, ps[1:] + ps[:1]))),
         lambda r: (polygon(r),)),
        ("turn_direction", (("a", "Tuple[int, int]"), ("b", "Tuple[int, int]"), ("c", "Tuple[int, int]")), "str",
         "Walking from a to b and then on to c, return 'left' if the path turns left (counterclockwise) at b, "
         "'right' if it turns right and 'straight' if the three points lie on one line.", turn,
         lambda r: (a := point(r), b := point(r), r.choice((point(r), point(r), (2 * b[0] - a[0], 2 * b[1] - a[1]))))),
        (f"points_within_distance_{k}", (("points", "List[Tuple[int, int]]"),), "int", f"Count the points whose "
         f"Manhattan distance from the origin, |x| + |y|, is at most {k}.",
         lambda ps: sum(abs(x) + abs(y) <= k for x, y in ps),
         lambda r: ([(r.randint(-k - 1, k + 1), r.randint(-k - 1, k + 1)) for _ in range(r.randint(2, 5))],)),
        (f"grid_cells_of_size_{k}", (("points", "List[Tuple[int, int]]"),), "List[Tuple[int, int]]", f"The plane "
         f"is cut into square cells {k} units wide, the cell (0, 0) covering 0 <= x < {k} and 0 <= y < {k}. Return "
         "the cell (column, row) of every point, in order, counting cells left and below the origin as negative.",
         lambda ps: [(x // k, y // k) for x, y in ps], pts),
    ])


def graph_tasks(k: int) -> list[Task]:
    """Small graphs: undirected edge lists and directed adjacency dictionaries whose keys are all the nodes."""
    edges, graph = (lambda r: (undirected_edges(r),)), (lambda r: (directed_graph(r),))
    nodes_edges = (("nodes", "List[str]"),) + EDGES
    return tasks([
        ("degree_counts", EDGES, "Dict[str, int]", "Each edge (u, v) joins two nodes both ways. Return a dictionary "
         "from every node to how many edges touch it, nodes in alphabetical order.",
         lambda es: dict(sorted(Counter(n for e in es for n in e).items())), edges),
        ("adjacency_from_edges", EDGES, "Dict[str, List[str]]", "Each edge (u, v) joins two nodes both ways. Return "
         "a dictionary from every node, in alphabetical order, to the alphabetical list of nodes joined to it.",
         lambda es: {n: sorted(near) for n, near in sorted(neighbours(es).items())}, edges),
        ("reachable_from", GRAPH + (("start", "str"),), "List[str]", "The graph maps every node to the nodes its "
         "one-way edges lead to. Return, in alphabetical order, the nodes reachable from start, start included.",
         lambda g, s: sorted(hop_counts(g, s)), lambda r: (g := directed_graph(r), r.choice(sorted(g)))),
        ("hop_distance", GRAPH + (("start", "str"), ("goal", "str")), "int", "The graph maps every node to the "
         "nodes its one-way edges lead to. Return the fewest edges on a path from start to goal, or -1 if there is "
         "no path.", lambda g, s, t: hop_counts(g, s).get(t, -1),
         lambda r: (g := directed_graph(r), *r.sample(sorted(g), 2))),
        ("topological_order", GRAPH, "List[str]", "The graph maps every node to the nodes its one-way edges lead "
         "to, and has no cycle. Return the nodes so that every edge goes from an earlier to a later one, taking "
         "the alphabetically first node whenever several could come next.", topological_order,
         lambda r: (acyclic_graph(r),)),
        ("has_directed_cycle", GRAPH, "bool", "The graph maps every node to the nodes its one-way edges lead to. "
         "Return True if following edges can bring you back to a node you started from.",
         lambda g: len(topological_order(g)) < len(g), lambda r: (cyclic_sometimes(r),)),
        ("nodes_without_incoming", GRAPH, "List[str]", "The graph maps every node to the nodes its one-way edges "
         "lead to. Return, in alphabetical order, the nodes no edge leads to.",
         lambda g: sorted(n for n in g if not any(n in targets for targets in g.values())), graph),
        ("count_components", nodes_edges, "int", "Each edge (u, v) joins two of the nodes both ways. Return into "
         "how many separate groups the edges link the nodes; a node with no edge is a group of its own.",
         components, nodes_and_edges),
        ("redundant_edge_count", nodes_edges, "int", "Each edge (u, v) joins two of the nodes both ways, and no "
         "edge repeats. Return how many edges could be removed while every two nodes joined by some path stay "
         "joined.", lambda ns, es: len(es) - len(ns) + components(ns, es), nodes_and_edges),
        ("is_two_colourable", EDGES, "bool", "Each edge (u, v) joins two nodes. Return True if the nodes can be "
         "painted in two colours so that every edge joins nodes of different colours.", two_coloured, edges),
        ("leaf_nodes", EDGES, "List[str]", "Each edge (u, v) joins two nodes both ways. Return, in alphabetical "
         "order, the nodes that exactly one edge touches.",
         lambda es: sorted(n for n, c in Counter(n for e in es for n in e).items() if c == 1), edges),
        ("common_neighbours", EDGES + (("first", "str"), ("second", "str")), "List[str]", "Each edge (u, v) joins two "
         "nodes both ways. Return, in alphabetical order, the nodes joined by an edge to both first and second.",
         lambda es, a, b: sorted(neighbours(es)[a] & neighbours(es)[b]), neighbour_pair),
        (f"neighbourhood_of_radius_{k}", GRAPH + (("start", "str"),), "List[str]", f"The graph maps every node to "
         f"the nodes its one-way edges lead to. Return, in alphabetical order, the nodes that a path of at most {k} "
         "edges leads to from start, start included.",
         lambda g, s: sorted(n for n, hops in hop_counts(g, s).items() if hops <= k),
         lambda r: (g := chain_graph(r, k + r.randint(1, 3)), r.choice(sorted(g)[:2]))),
    ])


def game_tasks(k: int) -> list[Task]:
    """Scoring games: bowling, darts, tic-tac-toe, rock-paper-scissors, dice, cards, chess knights, leagues."""
    target, results = k + 1, (lambda r: ("".join(r.choice("WWDL") for _ in range(r.randint(1, 8))),))
    return tasks([
        ("bowling_score", (("rolls", "List[int]"),), "int", "The rolls are the pins knocked down, roll by roll, in a "
         "whole game of ten-pin bowling (ten frames). A strike scores 10 plus the next two rolls, a spare 10 plus "
         "the next roll, and the tenth frame takes the bonus rolls it earns; return the total score.", bowling_score,
         lambda r: (bowling_game(r),)),
        ("dart_points", (("x", "int"), ("y", "int")), "int", "A dart lands at (x, y) on a board centred on the "
         "origin. Return 10 if it lies within distance 1 of the centre, 5 within distance 5, 1 within distance 10 "
         "and 0 otherwise, a dart on a circle counting as inside it.",
         lambda x, y: next((p for limit, p in ((1, 10), (25, 5), (100, 1)) if x * x + y * y <= limit), 0),
         lambda r: (r.randint(-9, 9), r.randint(-9, 9)) if r.random() < 0.85 else (r.randint(-1, 1), 0)),
        ("tic_tac_toe_winner", (("board", "List[str]"),), "str", "The board is three strings of three characters, "
         "each 'X', 'O' or '.' for an empty square. Return the player with three marks along a row, a column or a "
         "diagonal, or '' if neither has.", tic_tac_toe_winner, lambda r: (played_board(r),)),
        ("rock_paper_scissors_tally", (("rounds", "List[Tuple[str, str]]"),), "Tuple[int, int, int]", "Each round "
         "is the two players' moves, 'rock', 'paper' or 'scissors'; rock beats scissors, scissors beat paper and "
         "paper beats rock. Return (rounds the first player won, rounds the second won, draws).",
         rock_paper_scissors, lambda r: ([(r.choice(MOVES), r.choice(MOVES)) for _ in range(r.randint(1, 5))],)),
        (f"dice_sum_ways_{k}", (("total", "int"),), "int", f"Return in how many ways {k} six-sided dice, told apart "
         "from each other, can show faces that add up to total.", lambda t: dice_ways(t, k),
         lambda r: (r.randint(k - 1, 6 * k + 1),)),
        ("letter_tile_score", (("word", "str"),), "int", "Add up the letter values of the lower-case word: a, e, i, "
         "o, u, l, n, s, t, r are worth 1; d, g 2; b, c, m, p 3; f, h, v, w, y 4; k 5; j, x 8; q, z 10.",
         lambda w: sum(TILE_VALUES[c] for c in w), lambda r: (r.choice(WORDS + ("quiz", "jazz", "box", "kiwi")),)),
        ("card_hand_total", (("cards", "List[str]"),), "int", "The cards are '2' to '10', 'J', 'Q', 'K' and 'A'. "
         "Number cards count their number, J, Q and K count 10 and an ace 11, but aces count 1 instead, one at a "
         "time, while the total is over 21. Return the total.", card_total,
         lambda r: ([r.choice(CARDS) for _ in range(r.randint(2, 4))],)),
        ("poker_dice_hand", (("dice", "List[int]"),), "str", "Name the throw of five dice: 'five of a kind', 'four "
         "of a kind', 'full house' (three and two), 'straight' (five faces in a row), 'three of a kind', 'two "
         "pairs', 'one pair' or 'nothing'.", poker_dice_hand, lambda r: (five_dice(r),)),
        (f"race_to_{target}", (("rallies", "str"),), "str", f"Each character 'A' or 'B' names the player who won a "
         f"point. Return the player who first reaches {target} points, or '' if nobody has.",
         lambda s: next((p for i, p in enumerate(s) if s[: i + 1].count(p) == target), ""),
         lambda r: ("".join(r.choice("AB") for _ in range(r.randint(target - 1, 2 * target))),)),
        ("knight_targets", (("square", "str"),), "List[str]", "The square of a chessboard is a file letter a to h "
         "and a rank 1 to 8, such as 'b1'. Return, sorted, the squares a knight standing there can jump to.",
         knight_targets, lambda r: (f"{r.choice('abcdefgh')}{r.randint(1, 8)}",)),
        ("league_points", (("results", "str"),), "int", "Each character is a match result: 'W' a win worth 3 "
         "points, 'D' a draw worth 1 and 'L' a loss worth nothing. Return the points earned.",
         lambda s: 3 * s.count("W") + s.count("D"), results),
        ("longest_winning_streak", (("results", "str"),), "int", "Each character is a match result, 'W', 'D' or "
         "'L'. Return the length of the longest run of consecutive wins.",
         lambda s: max(map(len, re.findall("W*", s))), results),
    ])


def ledger_tasks(k: int) -> list[Task]:
    """Accounts and stock as lists of tuples: refused withdrawals, FIFO lots, restocking, transfers, orders."""
    lots, purchases = lots_and_quantity, (("purchases", "List[Tuple[int, int]]"),)
    return tasks([
        ("balances_refusing_overdrafts", (("start", "int"), ("amounts", "List[int]")), "List[int]", "An account "
         "holds start and takes each amount in turn, a negative one being a withdrawal; a withdrawal that would "
         "take it below 0 is refused. Return the balance after each amount.", refuse_overdrafts,
         lambda r: (r.randint(0, 10), [r.randint(-12, 8) for _ in range(r.randint(1, 6))])),
        ("fifo_cost", LOTS + (("quantity", "int"),), "int", "The lots are (units, unit price), oldest first. Units "
         "are taken from the oldest lot first; return what quantity units cost. There are enough units.",
         lambda ls, q: fifo_take(ls, q)[0], lots),
        ("fifo_remaining_lots", LOTS + (("quantity", "int"),), "List[Tuple[int, int]]", "The lots are (units, unit "
         "price), oldest first. Take quantity units, from the oldest lot first, and return the lots left, with "
         "empty ones dropped.", lambda ls, q: fifo_take(ls, q)[1], lots),
        (f"restock_days_below_{k}", (("start", "int"), ("sales", "List[int]")), "List[int]", f"A shop holds start "
         f"units and sells what it can of each day's sales. Whenever the stock ends a day below {k}, it is filled "
         "back up to start overnight; return the days (from 1) on which that happens.",
         lambda s, v: restock_days(s, v, k),
         lambda r: (r.randint(k + 1, 3 * k + 3), [r.randint(0, k + 2) for _ in range(r.randint(2, 7))])),
        ("balances_after_transfers", (("transfers", "List[Tuple[str, str, int]]"),), "Dict[str, int]", "Everyone "
         "starts with 0, and each transfer (payer, payee, amount) moves amount from payer to payee. Return a "
         "dictionary from every name, in alphabetical order, to where it ends.", transfer_balances,
         lambda r: ([(*r.sample(PEOPLE[:4], 2), r.randint(1, 20)) for _ in range(r.randint(1, 4))],)),
        ("average_unit_cost", purchases, "float", "Each purchase is (units, unit price). Return the total paid "
         "divided by the total units bought, rounded to 2 decimal places.",
         lambda ps: round(sum(u * p for u, p in ps) / sum(u for u, _ in ps), 2),
         lambda r: ([(r.randint(1, 9), r.randint(1, 20)) for _ in range(r.randint(1, 4))],)),
        (f"split_bill_among_{k}", (("cents", "int"),), "List[int]", f"Share a bill of cents among {k} people as "
         "evenly as whole cents allow, the larger shares first, and return the shares.",
         lambda c: [c // k + (i < c % k) for i in range(k)], lambda r: (r.randint(0, 1000),)),
        (f"yearly_growth_percent_{k}", (("amount", "int"), ("years", "int")), "int", f"Each year an amount grows by "
         f"{k} percent of itself, rounded down to a whole number before it is added. Return the amount after "
         "the given years.", lambda a, y: grown(a, y, k), lambda r: (r.randint(10, 2000), r.randint(0, 6))),
        ("monthly_totals", (("entries", "List[Tuple[str, int]]"),), "Dict[str, int]", "Each entry is (date as "
         "'YYYY-MM-DD', amount). Return a dictionary from each month 'YYYY-MM' to the sum of its amounts, months "
         "in order.", lambda es: {m: sum(a for d, a in es if d[:7] == m) for m in sorted({d[:7] for d, _ in es})},
         lambda r: ([(f"2024-{r.randint(1, 3):02d}-{r.randint(1, 28):02d}", r.randint(-5, 30))
                     for _ in range(r.randint(1, 5))],)),
        ("order_fill_quantities", (("stock", "int"), ("orders", "List[int]")), "List[int]", "Orders are served in "
         "turn from the stock, each getting what it asks for or, when too little is left, all that remains. Return "
         "how much each order gets.",
         lambda stock, orders: [min(o, max(0, stock - sum(orders[:i]))) for i, o in enumerate(orders)],
         lambda r: (r.randint(0, 20), [r.randint(1, 9) for _ in range(r.randint(1, 5))])),
        ("items_below_minimum", MAPPING + (("minimums", "Dict[str, int]"),), "List[str]", "The mapping gives the "
         "units in stock of each item, and minimums the fewest allowed. Return, in alphabetical order, the items "
         "of minimums whose stock is below it, a missing item having none.",
         lambda m, mins: sorted(item for item, low in mins.items() if m.get(item, 0) < low),
         lambda r: (counts(r, 9, 8), counts(r, 9, 8))),
        (f"bulk_price_free_every_{k}", (("quantity", "int"), ("price", "int")), "int", f"Every {k}th unit bought "
         "is free. Return what quantity units cost at the given unit price.",
         lambda q, p: (q - q // k) * p, lambda r: (r.randint(0, 20), r.randint(1, 9))),
    ])


def bit_tasks(k: int) -> list[Task]:
    """Integers as bits: Gray code, reversal within a width, flips, parity, set positions, byte rotation."""
    wide, width = (lambda r: (r.randint(0, 300),)), k + 2
    ones = lambda n: bin(n).count("1")  # noqa: E731
    return tasks([
        ("to_gray_code", N, "int", "Return the Gray code of n: the number whose binary digits are those of n, each "
         "combined by exclusive or with the digit to its left.", lambda n: n ^ (n >> 1), wide),
        ("from_gray_code", N, "int", "n is a Gray code, in which each binary digit of a number was combined by "
         "exclusive or with the digit to its left. Return the number it encodes.", from_gray, wide),
        (f"reverse_bits_width_{width}", N, "int", f"Write n, which is below 2 ** {width}, as exactly {width} binary "
         "digits with leading zeros, reverse them and return the number they now form.",
         lambda n: int(f"{n:0{width}b}"[::-1], 2), lambda r: (r.randrange(2 ** width),)),
        ("bit_flips_between", (("a", "int"), ("b", "int")), "int", "Return how many binary digits must be flipped "
         "to turn the non-negative a into the non-negative b.", lambda a, b: ones(a ^ b),
         lambda r: (r.randint(0, 64), r.randint(0, 64))),
        ("popcount_parity", N, "int", "Return 1 if the binary form of n has an odd number of ones, and 0 if it has "
         "an even number.", lambda n: ones(n) % 2, wide),
        ("set_bit_positions", N, "List[int]", "Return the positions of the ones in the binary form of n, in "
         "increasing order, the lowest digit being position 0.",
         lambda n: [i for i in range(n.bit_length()) if n >> i & 1], wide),
        ("lowest_one_bit", N, "int", "Return the value of the lowest binary digit of n that is 1 (for 12, binary "
         "1100, that is 4), or 0 when n is 0.", lambda n: n & -n, lambda r: (r.choice((0, r.randint(1, 300))),)),
        (f"flip_bit_{k}", N, "int", f"Return n with its binary digit of value 2 ** {k} flipped: set when it was "
         "clear, cleared when it was set.", lambda n: n ^ (1 << k), wide),
        (f"rotate_byte_left_{k}", N, "int", f"n fits in 8 bits. Rotate its 8 binary digits {k} places to the left, "
         f"the {k} highest coming back in at the low end, and return the result.",
         lambda n: (n << k | n >> (8 - k)) & 255, lambda r: (r.randint(0, 255),)),
        ("next_with_same_popcount", N, "int", "Return the smallest number greater than the positive n whose "
         "binary form has as many ones as the binary form of n.",
         lambda n: next(m for m in range(n + 1, 4 * n + 2) if ones(m) == ones(n)), lambda r: (r.randint(1, 200),)),
        ("bitwise_and_of_range", (("low", "int"), ("high", "int")), "int", "Return the bitwise and of every "
         "integer from low to high, both included (low <= high).",
         lambda lo, hi: reduce(operator.and_, range(lo, hi + 1)),
         lambda r: (lo := r.randint(0, 60), lo + r.randint(0, 6))),
        ("longest_run_of_ones", N, "int", "Return the length of the longest run of consecutive ones in the binary "
         "form of n.", lambda n: max(map(len, bin(n)[2:].split("0"))), wide),
        ("is_binary_palindrome", N, "bool", "Return True if the binary form of n, without leading zeros, reads the "
         "same in both directions.", lambda n: bin(n)[2:] == bin(n)[:1:-1],
         lambda r: (r.choice((binary_palindrome(r), r.randint(0, 300))),)),
    ])


def layout_tasks(k: int) -> list[Task]:
    """Text laid out in lines: wrapping, justifying, title case, numeronyms, indents, boxes, columns, names."""
    wrap, fit, short = 2 * k + 6, 3 * k + 12, k + 8
    lines = lambda r: ([" ".join(r.sample(WORDS, r.randint(1, 3))) for _ in range(r.randint(1, 4))],)  # noqa: E731
    return tasks([
        (f"wrap_words_to_{wrap}", TEXT, "List[str]", f"Break the text into lines of at most {wrap} characters, "
         "filling each line with as many words as fit, one space between them; a longer word gets a line of its "
         "own.", lambda s: wrap_words(s, wrap),
         lambda r: (" ".join(r.choice(WORDS) for _ in range(r.randint(2, k + 3))),)),
        (f"justify_to_{fit}", WORDS_ARG, "str", f"Lay the words out on one line exactly {fit} characters long by "
         "widening the gaps between them as evenly as possible, the leftmost gaps one space wider when the spaces "
         "do not share out evenly. A single word is padded with spaces on the right.",
         lambda ws: justify(ws, fit), lambda r: (fitting_words(r, fit),)),
        ("title_case_minor_words", TEXT, "str", "Capitalise the first letter of every word of the lower-case text, "
         f"except the short words {', '.join(SMALL_WORDS)}, which stay in lower case unless they come first.",
         lambda s: " ".join(w.capitalize() if i == 0 or w not in SMALL_WORDS else w for i, w in enumerate(s.split())),
         lambda r: (" ".join(r.choice(WORDS) if r.random() < 0.55 else r.choice(SMALL_WORDS)
                             for _ in range(r.randint(2, 6))),)),
        ("numeronym_words", TEXT, "str", "Shorten every word longer than 3 letters to its first letter, the number "
         "of letters between its first and last, and its last letter ('python' becomes 'p4n'); shorter words stay.",
         lambda s: " ".join(w[0] + str(len(w) - 2) + w[-1] if len(w) > 3 else w for w in s.split()),
         lambda r: (" ".join(r.choice(MIXED_WORDS + WORDS) for _ in range(r.randint(1, 5))),)),
        ("right_align_lines", LINES, "List[str]", "Pad every line with spaces on the left to the length of the "
         "longest line, and return the lines.", lambda ls: [line.rjust(max(map(len, ls))) for line in ls], lines),
        ("box_lines", LINES, "List[str]", "Frame the lines in a box of '*': a top and a bottom row of '*', and each "
         "line padded on the right to the longest one, written between '* ' and ' *'.", boxed, lines),
        (f"indent_by_{k}", LINES, "List[str]", f"Return the lines with {k} spaces added at the start of each one "
         "that is not empty; empty lines stay empty.", lambda ls: [" " * k + line if line else line for line in ls],
         lambda r: ([r.choice(("", " ".join(r.sample(WORDS, 2)), r.choice(WORDS))) for _ in range(r.randint(1, 4))],)),
        (f"shorten_to_{short}", TEXT, "str", f"Return the text as it is if it has at most {short} characters, and "
         f"otherwise its first {short - 3} characters followed by '...'.",
         lambda s: s if len(s) <= short else s[: short - 3] + "...", lambda r: (sentence(r),)),
        (f"words_in_columns_{k}", WORDS_ARG, "List[str]", f"Lay the words out in rows of {k}, in order, each word "
         "padded on the right to the length of the longest word and one space between columns. Return the rows "
         "with their trailing spaces removed.", lambda ws: in_columns(ws, k),
         lambda r: ([r.choice(MIXED_WORDS) for _ in range(r.randint(2, k + 3))],)),
        ("collapse_spaces", TEXT, "str", "Return the text with every run of spaces made a single space and the "
         "spaces at its start and end removed.", lambda s: " ".join(s.split()),
         lambda r: (" " * r.randint(0, 2) + "".join(w + " " * r.randint(1, 3) for w in sentence(r).split()),)),
        ("to_sentence_case", TEXT, "str", "The text is sentences joined by '. '. Return it with the first letter "
         "of each sentence in upper case and every other letter in lower case.",
         lambda s: ". ".join(p[:1].upper() + p[1:].lower() for p in s.split(". ")),
         lambda r: (". ".join(capitalized_sometimes(r) for _ in range(r.randint(1, 3))),)),
        ("surname_first", (("full_name", "str"),), "str", "The name is given names followed by a surname. Return "
         "the surname, a comma and a space, then the initials of the given names, each followed by a dot and "
         "separated by spaces: 'Ada King Lovelace' becomes 'Lovelace, A. K.'.",
         lambda s: f"{s.split()[-1]}, " + " ".join(w[0] + "." for w in s.split()[:-1]),
         lambda r: (" ".join(w.title() for w in r.sample(WORDS, r.randint(2, 4))),)),
    ])


def fifth_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (record_tasks(k) + multiset_tasks(k) + geometry_tasks(k) + graph_tasks(k) + game_tasks(k)
            + ledger_tasks(k) + bit_tasks(k) + layout_tasks(k))
