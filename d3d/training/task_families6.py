"""A sixth set of programming-task families for `task_prompts.py`: shapes the first five sets lack.

The five earlier sets hold about 1,040 function names, and the fifth set's training functions have been
asked about 7,900 ways, so the data needs new functions rather than new renderings (docs/training.md).
This module adds ten more families, 104 tasks for each k (186 names across k):

    checks      check digits and checksums: Luhn, ISBN-10 and ISBN-13, IBAN's mod 97, parity, Fletcher sums
    voting      plurality, absolute majority, instant runoff, Borda counts, Condorcet, approval, seat shares
    similarity  Hamming and edit distances, insert-delete distance, common subsequences and substrings
    machines    register and accumulator programs, a Forth line, deadfish, a tape, prefix notation, automata
    queues      LRU and FIFO caches, waits at a counter, tellers, ticket lines, printer priorities, buses
    standings   league tables with tie-breaks, goal differences, tennis calls, medal tables, lead changes
    units       SI and binary prefixes, durations, feet and inches, recipe scaling, numbers in words
    encodings   move-to-front, Burrows-Wheeler, zigzag and varint, spreadsheet columns, Elias gamma, bits
    parsers     quoted CSV fields, INI sections, long options, versions, dotted paths, formulas, dice
    timetables  clock hand angles, ISO weeks, working days, departures, Easter, weekdays of a month, offsets

The rules are task_families5.py's: reference solutions compute the examples, example inputs make them
informative, results print exactly, constants vary with k (2 to 7), no name is a HumanEval entry point
or an earlier catalogue's (for any k), no description shares a 13-word n-gram with a HumanEval prompt,
and a name with the constant k (or a number made from it) ends with it, so holding a function out
holds it out under every k. Near misses of the earlier sets were turned around: a cache's misses (not
a queue's commands), an elevator's sweep order (not the floors it travels), prefix notation (not
postfix), SI prefixes and mixed numbers (not thousands separators or percentages), ISO weeks and
working days (not weekdays after n days). Reference solutions, generators and argument shapes are in
`task_reference6.py` (check digits to queues) and `task_reference6b.py` (standings to timetables).
`task_prompts` imports `sixth_tasks(k)` (`--families sixth`) and its docstring gives the commands that
drew data/task_dev6_prompts.jsonl and data/task_prompts9.jsonl from it.
"""

from __future__ import annotations

import datetime
import re
from collections import Counter

from d3d.training.task_families import NUMS, TEXT, TWO_STRINGS, WORDS, Task, tasks
from d3d.training.task_reference3 import N
from d3d.training.task_reference4 import DATE, time_string
from d3d.training.task_reference6 import (BALLOTS, DIGITS, PROGRAM, REQUESTS, SIMILAR, VOTES, accumulator_at_loop,
                                          approval_ballots, approximate_matches, arrivals_and_durations, assignments,
                                          bigram_dice, borda_scores, bus_stops, common_subsequence, condorcet_winner,
                                          counter_waits, counting_program, deadfish, dhondt, digit_string,
                                          edit_distance, evaluate_prefix, expand_repeats, fifo_misses, final_state,
                                          fletcher_pair, forth_line, iban_checksum_ok, iban_sometimes, isbn10_is_valid,
                                          isbn10_sometimes, isbn13_check_digit, jump_program, largest_remainder,
                                          left_behind, left_to_right, longest_shared_substring, lopsided_votes,
                                          lru_misses, luhn_number, luhn_total, machine, mod11_check_character,
                                          one_edit_sometimes, one_swap_apart, parking_spots, party_votes, plurality,
                                          prefers, prefix_expression, printer_order, ranked_ballots, register_machine,
                                          repeat_code, run_assignments, run_forth, runoff_winner, same_length_pair,
                                          seconds_until_served, similar_pair, swapped_sometimes, sweep_order,
                                          tape_cells, teller_finish_times)
from d3d.training.task_reference6b import (DAY_TEXT, RESULTS, SPOONS, TEAMS, WEEKDAY_NAMES, as_date, batting_average,
                                           binary_units, burrows_wheeler, business_days_later, column_index,
                                           column_label, column_number, compact_duration, compare_versions,
                                           convert_offset, coordinate_text, count_atoms, date_span, date_text,
                                           departures, dice_notation, dice_range, duration_text, easter_sunday, formula,
                                           from_si_prefix, hand_angle, hits_and_at_bats, ini_lines, lead_changes,
                                           long_options, lookup_dotted, match_results, mixed_number, move_to_front,
                                           nested_path, next_departure, nth_weekday, number_in_words, option_args,
                                           percent_encode, priced_text, quoted_csv_line, read_ini, running_scores,
                                           seconds_spread, si_prefixed, si_text, significant, split_quoted_csv,
                                           spread_size, standings, team_rows, tennis_call, tennis_points, url_text,
                                           varint_decode, varint_encode, version_pair, weekdays_in_span, wide_number,
                                           year_edge_date, zeckendorf)


def check_tasks(k: int) -> list[Task]:
    """Check digits and checksums: Luhn, ISBN-10 and -13, IBAN's mod 97, weighted sums, parity, Fletcher."""
    weighted, fletcher = k + 7, 2 * k + 9
    return tasks([
        ("luhn_is_valid", (("number", "str"),), "bool", "The string holds decimal digits. Starting from the "
         "rightmost digit, double every second digit (taking 9 off any result above 9) and add up all the "
         "digits; return True if the total is a multiple of 10.", lambda s: luhn_total(s) % 10 == 0,
         lambda r: (luhn_number(r),)),
        ("luhn_check_digit", (("payload", "str"),), "int", "Return the digit that, appended to the right of the "
         "string of digits, makes it pass the Luhn check: counting from the new last digit, every second digit "
         "is doubled (9 taken off a result above 9) and all digits must add up to a multiple of 10.",
         lambda s: (10 - luhn_total(s + "0") % 10) % 10, lambda r: (digit_string(r, 4, 10),)),
        ("isbn10_is_valid", (("isbn", "str"),), "bool", "The code is ten characters: nine digits and a last "
         "character that is a digit or 'X' standing for 10. Multiply the characters by 10, 9, ..., 1 from the "
         "left and return True if the products add up to a multiple of 11.", isbn10_is_valid,
         lambda r: (isbn10_sometimes(r),)),
        ("isbn13_check_digit", (("first_twelve", "str"),), "int", "Given the first twelve digits of an ISBN-13, "
         "multiply them alternately by 1 and 3 starting with 1, add the products and return the digit that "
         "brings the total up to the next multiple of 10 (0 if it already is one).", isbn13_check_digit,
         lambda r: (r.choice(("978", "979")) + digit_string(r, 9, 9),)),
        ("iban_checksum_ok", (("code", "str"),), "bool", "Move the first four characters of the account code to "
         "its end, replace every capital letter by its place in the alphabet plus 9 (A is 10, Z is 35) and read "
         "the digits as one number. Return True if that number leaves remainder 1 when divided by 97.",
         iban_checksum_ok, lambda r: (iban_sometimes(r),)),
        (f"position_weighted_check_{weighted}", DIGITS, "int", "Multiply each digit of the string by its position, "
         f"counting from 1 at the left, add the products and return the total modulo {weighted}.",
         lambda s: sum(i * int(c) for i, c in enumerate(s, 1)) % weighted, lambda r: (digit_string(r, 2, 8),)),
        ("append_even_parity", (("bits", "str"),), "str", "The string is made of '0' and '1'. Append '1' if it "
         "holds an odd number of ones and '0' otherwise, so that the result has an even number of ones.",
         lambda s: s + str(s.count("1") % 2), lambda r: ("".join(r.choice("01") for _ in range(r.randint(1, 9))),)),
        ("twos_complement_checksum", (("data", "List[int]"),), "int", "The values are bytes (0 to 255). Return the "
         "byte that, added to them, makes their sum a multiple of 256.", lambda v: -sum(v) % 256,
         lambda r: ([r.randint(0, 255) for _ in range(r.randint(1, 6))],)),
        (f"fletcher_pair_mod_{fletcher}", (("data", "List[int]"),), "Tuple[int, int]", "Keep two sums, both "
         f"starting at 0: for each value in turn, add it to the first sum and then the first sum to the second, "
         f"both taken modulo {fletcher}. Return (first sum, second sum).", lambda v: fletcher_pair(v, fletcher),
         lambda r: ([r.randint(0, 20) for _ in range(r.randint(1, 5))],)),
        ("mod11_check_character", DIGITS, "str", "Multiply the digits by 2, 3, 4, ... starting from the rightmost "
         "one and add the products. The check character is 11 minus the remainder of that sum divided by 11, "
         "written '0' when it is 11 and 'X' when it is 10. Return it.", mod11_check_character,
         lambda r: (digit_string(r, 3, 8),)),
    ])


def voting_tasks(k: int) -> list[Task]:
    """Elections: single votes, ranked ballots (every ballot ranks the same candidates), approvals, seats."""
    ballots = lambda r: (ranked_ballots(r),)  # noqa: E731
    return tasks([
        ("plurality_winner", VOTES, "str", "Each vote names one candidate. Return the candidate with the most votes, "
         "the alphabetically first one on a tie.", plurality, lambda r: (lopsided_votes(r),)),
        ("majority_candidate", VOTES, "str", "Each vote names one candidate. Return the candidate named by more "
         "than half of the votes, or an empty string if there is none.",
         lambda v: next((c for c, n in Counter(v).items() if 2 * n > len(v)), ""), lambda r: (lopsided_votes(r),)),
        ("first_preference_tally", BALLOTS, "Dict[str, int]", "Each ballot ranks candidates, most preferred first. "
         "Return a dictionary from every candidate on the ballots, in alphabetical order, to the number of "
         "ballots that rank it first.",
         lambda bs: {c: sum(b[0] == c for b in bs) for c in sorted({c for b in bs for c in b})}, ballots),
        ("borda_scores", BALLOTS, "Dict[str, int]", "Each ballot ranks the same candidates, most preferred first; "
         "a ballot ranking n candidates gives n - 1 points to its first, n - 2 to its second and so on down to 0. "
         "Return the points of every candidate, in alphabetical order.", borda_scores, ballots),
        ("runoff_winner", BALLOTS, "str", "Each ballot ranks the same candidates, most preferred first. Count "
         "every ballot for its highest-ranked candidate still in the race; while nobody has more than half of "
         "the ballots, drop the candidate with the fewest (the alphabetically first one on a tie) and count "
         "again. Return the winner.", runoff_winner, ballots),
        ("condorcet_winner", BALLOTS, "str", "Each ballot ranks the same candidates, most preferred first. Return "
         "the candidate that more ballots rank above each other candidate than below it, taking the candidates "
         "two at a time, or an empty string if no candidate beats all the others so.", condorcet_winner, ballots),
        ("ballots_preferring", BALLOTS + (("first", "str"), ("second", "str")), "int", "Each ballot ranks the same "
         "candidates, most preferred first. Return how many ballots rank first above second.", prefers,
         lambda r: (bs := ranked_ballots(r), *r.sample(bs[0], 2))),
        ("approval_winner", BALLOTS, "str", "Each ballot lists the candidates its voter approves of. Return the "
         "candidate approved by the most ballots, the alphabetically first one on a tie.",
         lambda bs: plurality([c for b in bs for c in b]), lambda r: (approval_ballots(r),)),
        (f"dhondt_seats_{k}", (("votes", "Dict[str, int]"),), "Dict[str, int]", f"Hand out {k} seats one at a "
         "time, each to the party whose votes divided by one more than the seats it already has is largest (the "
         "alphabetically first one on a tie). Return the seats of every party, in alphabetical order.",
         lambda v: dhondt(v, k), lambda r: (party_votes(r),)),
        (f"largest_remainder_seats_{k}", (("votes", "Dict[str, int]"),), "Dict[str, int]", f"Share {k} seats among "
         f"the parties: each first gets the whole part of its votes times {k} divided by the total votes, and the "
         "seats left over go one each to the parties with the largest remainders of that division (the "
         "alphabetically first on a tie). Return the seats of every party, in alphabetical order.",
         lambda v: largest_remainder(v, k), lambda r: (party_votes(r),)),
    ])


def similarity_tasks(k: int) -> list[Task]:
    """How alike two strings are: Hamming, edit and insert-delete distances, shared pieces, near matches."""
    near, within = (k + 1) // 2, k // 2
    return tasks([
        ("hamming_distance", TWO_STRINGS, "int", "The two strings are equally long. Return at how many positions "
         "their characters differ.", lambda a, b: sum(x != y for x, y in zip(a, b)), same_length_pair),
        ("edit_distance", TWO_STRINGS, "int", "Return the fewest single-character insertions, deletions and "
         "replacements that turn first into second.", edit_distance, similar_pair),
        ("insert_delete_distance", TWO_STRINGS, "int", "Return the fewest single-character insertions and deletions "
         "(no replacements) that turn first into second.",
         lambda a, b: len(a) + len(b) - 2 * common_subsequence(a, b), similar_pair),
        ("common_subsequence_length", TWO_STRINGS, "int", "Return the length of the longest string that can be "
         "made from either string by deleting some of its characters, keeping the rest in order.",
         common_subsequence, similar_pair),
        ("longest_shared_substring", TWO_STRINGS, "str", "Return the longest run of consecutive characters found in "
         "both strings; of equally long ones, the one that starts first in first. Return '' if they share no "
         "character.", longest_shared_substring, similar_pair),
        ("one_edit_apart", TWO_STRINGS, "bool", "Return True if exactly one insertion, deletion or replacement of "
         "a single character turns first into second (equal strings are zero edits apart).",
         lambda a, b: edit_distance(a, b) == 1, one_edit_sometimes),
        ("one_swap_apart", TWO_STRINGS, "bool", "Return True if the strings are equally long and differ at exactly "
         "two positions, and swapping the characters of first at those two positions gives second.",
         one_swap_apart, swapped_sometimes),
        ("nearest_by_edits", (("word", "str"), ("candidates", "List[str]")), "str", "Return the candidate that the "
         "fewest single-character insertions, deletions and replacements turn into the word; the earliest in the "
         "list on a tie.", lambda w, cs: min(cs, key=lambda c: edit_distance(c, w)),
         lambda r: (r.choice(SIMILAR), r.sample(SIMILAR, r.randint(2, 4)))),
        ("bigram_dice_score", TWO_STRINGS, "float", "Take the pairs of adjacent letters of each word ('night' has "
         "'ni', 'ig', 'gh', 'ht'), repeats counted. Return twice the number of pairs they share over the number of "
         "pairs of both words together, rounded to 2 decimal places. Both words have at least two letters.",
         bigram_dice, lambda r: (r.choice(SIMILAR + WORDS[:8]), r.choice(SIMILAR + WORDS[:8]))),
        (f"approximate_matches_{near}", (("pattern", "str"), ("text", "str")), "List[int]", "Return every index "
         f"of the text at which the pattern lies with at most {near} of its characters different from the text "
         "under them, in increasing order.", lambda p, t: approximate_matches(p, t, near),
         lambda r: ("".join(r.choice("ab") for _ in range(near + 2)),
                    "".join(r.choice("abc") for _ in range(r.randint(near + 3, near + 9))))),
        (f"words_within_edits_{within}", (("word", "str"), ("candidates", "List[str]")), "List[str]", "Return, in "
         f"their order, the candidates that at most {within} single-character insertions, deletions and "
         "replacements turn into the word.", lambda w, cs: [c for c in cs if edit_distance(c, w) <= within],
         lambda r: (r.choice(SIMILAR), r.sample(SIMILAR, r.randint(2, 5)))),
    ])


def machine_tasks(k: int) -> list[Task]:
    """Tiny interpreters: registers, an accumulator, a stack, deadfish, a tape, notations, automata."""
    return tasks([
        ("register_machine", PROGRAM, "Dict[str, int]", "Every register starts at 0 and the program runs from its "
         "first line: 'inc x' adds 1 to register x, 'dec x' takes 1 away, and 'jnz x n' jumps n lines (n may be "
         "negative) when x is not 0 and goes on to the next line otherwise. When it leaves the program, return "
         "every register the program names, in alphabetical order, with its value.", register_machine,
         lambda r: (counting_program(r),)),
        ("accumulator_at_loop", PROGRAM, "int", "Each line is 'acc n' (add n to the accumulator, which starts at "
         "0), 'jmp n' (jump n lines) or 'nop n' (do nothing), with n written with its sign. Run from the first "
         "line and return the accumulator just before some line would run a second time, or when a jump leaves "
         "the program.", accumulator_at_loop, lambda r: (jump_program(r),)),
        ("run_forth_line", (("line", "str"),), "List[int]", "Run the words of the line, separated by spaces, on an "
         "empty stack: a number is pushed; '+', '-' and '*' pop two numbers and push the one below combined with "
         "the top; 'dup' copies the top, 'drop' removes it, 'swap' exchanges the top two and 'over' pushes a copy "
         "of the second. Return the stack, bottom first.", run_forth, lambda r: (forth_line(r),)),
        ("deadfish_output", (("code", "str"),), "List[int]", "A value starts at 0. Run the commands: 'i' adds 1, "
         "'d' subtracts 1, 's' squares it and 'o' outputs it; whenever the value becomes -1 or 256 it is set to 0. "
         "Return the outputs in order.", deadfish,
         lambda r: ("".join(r.choice("iiidso") for _ in range(r.randint(4, 12))) + "o",)),
        (f"tape_cells_{k}", (("code", "str"),), "List[int]", f"A tape of {k} cells holds 0s and a head stands on the "
         "first. 'r' moves the head one cell right and 'l' one cell left, wrapping around the ends; '+' adds 1 to "
         "the cell under the head and '-' subtracts 1. Return the cells after the code.",
         lambda s: tape_cells(s, k), lambda r: ("".join(r.choice("++-lrr") for _ in range(r.randint(3, 12))),)),
        ("evaluate_prefix_expression", (("expression", "str"),), "int", "The expression is in prefix notation, "
         "tokens separated by spaces: an operator '+', '-' or '*' comes before its two operands, which are "
         "whole numbers or smaller expressions. Return its value.", evaluate_prefix,
         lambda r: (prefix_expression(r),)),
        ("run_assignments", (("statements", "List[str]"),), "Dict[str, int]", "Each statement is 'name = a' or "
         "'name = a op b', where a and b are whole numbers or names set before and op is '+', '-' or '*'. Run "
         "them in order and return every name's final value, in alphabetical order.", run_assignments,
         lambda r: (assignments(r),)),
        ("evaluate_left_to_right", (("expression", "str"),), "int", "The expression is whole numbers and the "
         "operators '+', '-' and '*', separated by spaces. Apply the operators strictly from left to right, "
         "ignoring the usual precedence, and return the result.", left_to_right,
         lambda r: (f"{r.randint(1, 9)} " + " ".join(f"{r.choice('+-*')} {r.randint(1, 9)}"
                                                     for _ in range(r.randint(1, 3))),)),
        ("expand_bracket_repeats", (("code", "str"),), "str", "A number followed by a part in square brackets "
         "stands for that part written the number of times, and parts may nest: '2[ab]c' is 'ababc' and "
         "'2[a3[b]]' is 'abbbabbb'. Return the code written out.", expand_repeats, lambda r: (repeat_code(r),)),
        ("final_state", (("transitions", "Dict[str, Dict[str, str]]"), ("start", "str"), ("inputs", "str")), "str",
         "The transitions map each state to a dictionary from an input symbol to the next state; a symbol the "
         "state has no entry for leaves it where it is. Return the state reached from start after reading every "
         "symbol of inputs in turn.", final_state, machine),
    ])


def queue_tasks(k: int) -> list[Task]:
    """Queues and caches: cache misses, waiting at a counter, tellers, ticket lines, printers, buses, parking."""
    tellers, capacity = k // 2 + 1, k + 3
    requests = lambda r: ([r.randint(1, k + 2) for _ in range(r.randint(k, k + 8))],)  # noqa: E731
    return tasks([
        (f"lru_misses_{k}", REQUESTS, "int", f"A cache holds at most {k} items and starts empty. For each request, "
         "an item not in the cache is a miss and is added; when the cache is then too full, the item used least "
         "recently is dropped. Return the number of misses.", lambda v: lru_misses(v, k), requests),
        (f"fifo_cache_misses_{k}", REQUESTS, "int", f"A cache holds at most {k} items and starts empty. For each "
         "request, an item not in the cache is a miss and is added; when the cache is then too full, the item "
         "that was added earliest is dropped, however recently it was used. Return the number of misses.",
         lambda v: fifo_misses(v, k), requests),
        ("counter_wait_times", (("arrivals", "List[int]"), ("durations", "List[int]")), "List[int]", "Customers "
         "reach a single counter at the given times, in order, and customer i needs durations[i] minutes. Each is "
         "served as soon as the counter is free, in order of arrival. Return how long each one waits before being "
         "served.", counter_waits, arrivals_and_durations),
        (f"finish_with_tellers_{tellers}", (("durations", "List[int]"),), "List[int]", f"{tellers} tellers are free "
         "at time 0, and customers are served in order, each by the teller that becomes free first (the "
         "lowest-numbered one on a tie) for the customer's duration. Return the time each customer leaves.",
         lambda v: teller_finish_times(v, tellers), lambda r: ([r.randint(1, 9) for _ in range(r.randint(1, 7))],)),
        ("seconds_until_served", (("tickets", "List[int]"), ("position", "int")), "int", "People stand in line and "
         "person i wants tickets[i] tickets. Each second the person at the front buys one ticket and, if they "
         "still want more, goes to the back of the line. Return how many seconds pass until the person who "
         "started at index position has all their tickets.", seconds_until_served,
         lambda r: (ts := [r.randint(1, 5) for _ in range(r.randint(1, 5))], r.randrange(len(ts)))),
        ("printer_queue_order", (("jobs", "List[Tuple[str, int]]"),), "List[str]", "Each job is (name, priority), "
         "queued in order. The job at the front is printed if no waiting job has a higher priority, and is moved "
         "to the back otherwise. Return the names in the order they are printed.", printer_order,
         lambda r: ([(name, r.randint(1, 4)) for name in r.sample(("a", "b", "c", "d", "e"), r.randint(2, 5))],)),
        ("peak_passengers", (("stops", "List[Tuple[int, int]]"),), "int", "A bus starts empty, and at each stop "
         "(off, on) first off people get off and then on people get on. Return the most people on board after "
         "any stop.", lambda ss: max([0] + [sum(b - a for a, b in ss[: i + 1]) for i in range(len(ss))]),
         lambda r: (bus_stops(r),)),
        (f"riders_left_behind_{capacity}", (("stops", "List[Tuple[int, int]]"),), "int", f"A bus holds at most "
         f"{capacity} people and starts empty. At each stop (off, waiting), off people get off, then as many of "
         "the waiting people get on as there is room for. Return how many waiting people were left at the stops in "
         "all.", lambda ss: left_behind(ss, capacity), lambda r: (bus_stops(r, capacity),)),
        ("assign_parking_spots", (("events", "List[str]"),), "List[int]", "Each event names a car. A car that is "
         "not parked arrives and takes the lowest-numbered free spot, counting from 1; a car that is parked "
         "leaves and frees its spot. Return the spot taken at each arrival, in order.", parking_spots,
         lambda r: ([r.choice(("ab1", "cd2", "ef3", "gh4")) for _ in range(r.randint(2, 8))],)),
        ("elevator_sweep_order", (("start", "int"), ("requests", "List[int]")), "List[int]", "An elevator at floor "
         "start is going up. It serves every requested floor at or above start, lowest first, then turns and "
         "serves the requested floors below start, highest first. Return the floors in the order served.",
         sweep_order, lambda r: (r.randint(0, 9), r.sample(range(12), r.randint(1, 5)))),
    ])


def standings_tasks(k: int) -> list[Task]:
    """Sports tables: results 'Home 2-1 Away', league order with tie-breaks, tennis, medals, golf, leads."""
    results = lambda r: (match_results(r),)  # noqa: E731
    return tasks([
        ("league_standings", RESULTS, "List[str]", "Each result is 'Home g-h Away': the home team scored g goals and "
         "the away team h. A win earns 3 points and a draw 1. Return the teams ordered by points, then goal "
         "difference (scored minus conceded), then goals scored, all highest first, then by name.", standings,
         results),
        ("points_from_scores", RESULTS, "Dict[str, int]", "Each result is 'Home g-h Away', with the goals of the "
         "home and of the away team. A win earns 3 points, a draw 1 and a loss 0. Return the points of every team, "
         "in alphabetical order.", lambda rs: {t: row[0] for t, row in team_rows(rs).items()}, results),
        ("goal_differences", RESULTS, "Dict[str, int]", "Each result is 'Home g-h Away', with the goals of the home "
         "and of the away team. Return every team's goals scored minus goals conceded, teams in alphabetical "
         "order.", lambda rs: {t: row[1] - row[2] for t, row in team_rows(rs).items()}, results),
        ("tennis_game_call", (("points", "str"),), "str", "Each character names the player, 'A' or 'B', who won a "
         "point of one tennis game. Return the call: 'game A' once a player has at least 4 points and 2 more than "
         "the other, else 'deuce' or 'advantage A' once both have 3 or more, else the two scores as 'love', '15', "
         "'30' or '40', A's first, such as '30-15'.", tennis_call, lambda r: (tennis_points(r),)),
        ("medal_table", (("medals", "Dict[str, Tuple[int, int, int]]"),), "List[str]", "The medals map each country "
         "to its (gold, silver, bronze) counts. Return the countries ordered by golds, then silvers, then bronzes, "
         "most first, and by name on a full tie.", lambda m: sorted(m, key=lambda c: ([-x for x in m[c]], c)),
         lambda r: ({c: tuple(r.randint(0, 3) for _ in range(3)) for c in r.sample(TEAMS, r.randint(2, 4))},)),
        ("score_to_par", (("strokes", "List[int]"), ("pars", "List[int]")), "str", "Compare a round of golf with "
         "the course: return the total strokes minus the total par as 'E' when they are equal, with a '+' sign "
         "when over par (such as '+3') and a '-' sign when under.",
         lambda s, p: "E" if sum(s) == sum(p) else f"{sum(s) - sum(p):+d}",
         lambda r: (ps := [r.randint(3, 5) for _ in range(r.randint(2, 6))], [p + r.randint(-1, 1) for p in ps])),
        ("lead_changes", (("scores", "List[Tuple[int, int]]"),), "int", "The scores are (home, away) after each "
         "score of a game, in order. Return how often the lead passed from one team to the other: a tie leaves "
         "the last leader in place, and the first team to lead is not a change.", lead_changes,
         lambda r: (running_scores(r),)),
        ("finishing_order", (("lap_times", "Dict[str, List[int]]"),), "List[str]", "Each driver's list holds the "
         "seconds of each lap. Return the drivers ordered by total time, fastest first, by name on a tie.",
         lambda d: sorted(d, key=lambda n: (sum(d[n]), n)),
         lambda r: ({n: [r.randint(60, 64) for _ in range(3)] for n in r.sample(TEAMS, r.randint(2, 4))},)),
        ("batting_average_text", (("hits", "int"), ("at_bats", "int")), "str", "Return hits divided by at_bats "
         "rounded to three decimal places, halves rounded up, and written without a leading zero: '.333', or "
         "'1.000' when every at bat was a hit. at_bats is at least 1.", batting_average,
         hits_and_at_bats),
        (f"teams_near_leader_{k}", (("points", "Dict[str, int]"),), "List[str]", f"Return the teams whose points "
         f"are at most {k} fewer than the most any team has, most points first and by name on a tie.",
         lambda p: sorted((t for t in p if p[t] >= max(p.values()) - k), key=lambda t: (-p[t], t)),
         lambda r: ({t: r.randint(0, 3 * k) for t in r.sample(TEAMS, r.randint(2, 5))},)),
    ])


def unit_tasks(k: int) -> list[Task]:
    """Units and number words: SI and binary prefixes, durations, feet, spoons, recipes, significant digits."""
    return tasks([
        ("with_si_prefix", (("value", "int"),), "str", "Write the non-negative integer with the largest of the "
         "prefixes 'k' (1000), 'M' (a million) and 'G' (a billion) that is not above it, keeping one decimal place "
         "cut off (not rounded) and leaving out a '.0': 1500 is '1.5k', 2000 is '2k'. Below 1000 it is written "
         "as it is.", si_prefixed, lambda r: (spread_size(r),)),
        ("from_si_prefix", TEXT, "int", "The text is a number, perhaps with one decimal place, followed by an "
         "optional 'k' (thousand), 'M' (million) or 'G' (billion). Return the whole number it stands for: "
         "'2.5k' is 2500.", from_si_prefix, lambda r: (si_text(r),)),
        ("bytes_to_binary_units", (("size", "int"),), "str", "Write a size in bytes as 'n B' below 1024, and "
         "otherwise in the largest of 'KiB' (1024 bytes), 'MiB' (1024 KiB) and 'GiB' (1024 MiB) that is not above "
         "it, with one decimal place cut off (not rounded), such as '1.5 KiB'.", binary_units,
         lambda r: (spread_size(r),)),
        ("duration_to_seconds", TEXT, "int", "The text is a duration made of a number followed by 'h', 'm' or 's', "
         "each unit at most once and in that order, such as '1h30m' or '45s'. Return it in seconds.",
         lambda s: sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"(\d+)([hms])", s)),
         lambda r: (duration_text(r),)),
        ("compact_duration", (("seconds", "int"),), "str", "Write the seconds as days, hours, minutes and seconds "
         "such as '1d 2h 5s': each non-zero part as a number and its letter 'd', 'h', 'm' or 's', separated by "
         "spaces, and '0s' for 0.", compact_duration,
         lambda r: (seconds_spread(r),)),
        ("centimetres_to_feet_and_inches", (("centimetres", "int"),), "Tuple[int, int]", "Convert a length in "
         "centimetres to whole inches, rounded to the nearest inch (an inch is 2.54 cm, halves rounded up), and "
         "return it as (feet, inches) with 12 inches to the foot.",
         lambda cm: divmod((200 * cm + 254) // 508, 12), lambda r: (r.randint(1, 220),)),
        ("scale_recipe", (("grams", "Dict[str, int]"), ("serves", "int"), ("wanted", "int")), "Dict[str, int]",
         "The recipe gives the grams of each ingredient for serves people. Return the grams for wanted people, "
         "each rounded down to a whole gram, ingredients in the recipe's order.",
         lambda g, s, w: {i: a * w // s for i, a in g.items()},
         lambda r: ({i: 10 * r.randint(1, 30) for i in r.sample(("flour", "sugar", "butter", "milk", "eggs"),
                                                                 r.randint(1, 3))}, r.randint(1, 6), r.randint(1, 8))),
        ("total_teaspoons", (("quantities", "List[Tuple[int, str]]"),), "int", "Each quantity is (amount, unit), "
         "the unit 'tsp', 'tbsp' (3 teaspoons) or 'cup' (48 teaspoons). Return the total in teaspoons.",
         lambda qs: sum(a * SPOONS[u] for a, u in qs),
         lambda r: ([(r.randint(1, 4), r.choice(tuple(SPOONS))) for _ in range(r.randint(1, 4))],)),
        (f"keep_significant_digits_{k}", N, "int", f"Round the positive integer n to {k} significant digits, halves "
         f"rounded up: the digits after the first {k} become 0. A number of at most {k} digits stays as it is.",
         lambda n: significant(n, k), lambda r: (r.randint(1, 10 ** r.randint(k - 1, k + 3)),)),
        ("number_in_words", N, "str", "Write n, from 0 to 999, in English words: 'seven', 'nineteen', 'forty-two' "
         "(tens and ones joined by a hyphen), 'three hundred' and 'three hundred and five'.", number_in_words,
         lambda r: (r.choice((r.randint(0, 20), r.randint(21, 99), r.randint(100, 999), 100 * r.randint(1, 9))),)),
        (f"mixed_number_over_{k}", N, "str", f"Return n divided by {k} as a mixed number in lowest terms: a whole "
         "number such as '3', a proper fraction such as '2/3', or both separated by a space such as '4 1/2'.",
         lambda n: mixed_number(n, k), lambda r: (r.randint(0, 6 * k),)),
    ])


def encoding_tasks(k: int) -> list[Task]:
    """Encodings: move-to-front, Burrows-Wheeler, zigzag, varints, spreadsheet columns, gamma codes, bits."""
    width = k + 2
    return tasks([
        ("move_to_front_codes", (("word", "str"),), "List[int]", "Start from the list of the 26 lower-case letters "
         "in alphabetical order. For each letter of the word, output its index in the list and then move it to "
         "the front of the list. Return the outputs.", move_to_front, lambda r: (r.choice(WORDS + SIMILAR),)),
        ("burrows_wheeler_last_column", (("word", "str"),), "str", "Append '$' to the word, write down every "
         "rotation of the result, sort the rotations and return the string made of their last characters, in "
         "sorted order.", burrows_wheeler, lambda r: (r.choice(WORDS + SIMILAR),)),
        ("zigzag_signed_to_unsigned", N, "int", "Map the integers 0, -1, 1, -2, 2, ... to 0, 1, 2, 3, 4, ... in "
         "that order and return where n goes.", lambda n: 2 * n if n >= 0 else -2 * n - 1,
         lambda r: (r.randint(-50, 50),)),
        ("varint_encode", N, "List[int]", "Encode the non-negative n in groups of 7 bits, lowest group first, one "
         "byte for each group: every byte but the last also has its value-128 bit set. Return the bytes.",
         varint_encode, lambda r: (wide_number(r),)),
        ("varint_decode", (("data", "List[int]"),), "int", "The bytes hold a number in groups of 7 bits, lowest "
         "group first: the low 7 bits of each byte are a group, and the value-128 bit is set on every byte but the "
         "last. Return the number.", varint_decode, lambda r: (varint_encode(wide_number(r)),)),
        ("spreadsheet_column_label", N, "str", "Return the label of spreadsheet column n, counting from 1: 'A' to "
         "'Z', then 'AA', 'AB' and so on up to 'ZZ', then 'AAA'.", column_label,
         lambda r: (column_index(r),)),
        ("spreadsheet_column_number", (("label", "str"),), "int", "A spreadsheet labels its columns 'A' to 'Z', "
         "then 'AA', 'AB' and so on. Return the number of the column with the given label, counting from 1.",
         column_number, lambda r: (column_label(column_index(r)),)),
        ("elias_gamma_code", N, "str", "Return the Elias gamma code of the positive n: its binary digits, preceded "
         "by one '0' fewer than there are digits.", lambda n: "0" * (n.bit_length() - 1) + bin(n)[2:],
         lambda r: (r.randint(1, 100),)),
        ("percent_encode", TEXT, "str", "Keep letters, digits and the characters '-', '_', '.' and '~' as they are, "
         "and write every other character as '%' followed by its character code in two upper-case hexadecimal "
         "digits (a space becomes '%20').", percent_encode, lambda r: (url_text(r),)),
        (f"pack_into_bits_{width}", NUMS, "str", f"Every number is from 0 to {2 ** width - 1}. Write each as exactly "
         f"{width} binary digits, with leading zeros, and return them joined into one string.",
         lambda v: "".join(f"{x:0{width}b}" for x in v),
         lambda r: ([r.randrange(2 ** width) for _ in range(r.randint(1, 4))],)),
        (f"unpack_bits_{width}", (("bits", "str"),), "List[int]", f"The string of '0' and '1' is made of groups of "
         f"{width} binary digits. Return the number each group stands for, in order.",
         lambda s: [int(s[i: i + width], 2) for i in range(0, len(s), width)],
         lambda r: ("".join(r.choice("01") for _ in range(width * r.randint(1, 3))),)),
        ("zeckendorf_terms", N, "List[int]", "Write the positive n as a sum of distinct numbers of the sequence 1, 2, "
         "3, 5, 8, 13, ... (each the sum of the two before it) by taking the largest one that fits again and "
         "again. Return the terms, largest first.", zeckendorf, lambda r: (r.randint(1, 200),)),
    ])


def parser_tasks(k: int) -> list[Task]:
    """Small parsers: quoted CSV, INI sections, long options, versions, dotted paths, money, formulas, dice."""
    return tasks([
        ("split_quoted_csv", (("line", "str"),), "List[str]", "Split the line into its comma-separated fields. A "
         "field may be wrapped in double quotes, and then commas inside it do not split it; return the fields "
         "without those quotes.", split_quoted_csv, lambda r: (quoted_csv_line(r),)),
        ("read_ini_sections", (("lines", "List[str]"),), "Dict[str, Dict[str, str]]", "A line '[name]' starts a "
         "section and a line 'key = value' sets a key of the latest section (spaces around the key and the value "
         "are dropped); empty lines and lines starting with ';' are skipped. Return every section, in order, as a "
         "dictionary of its keys.", read_ini, lambda r: (ini_lines(r),)),
        ("parse_long_options", (("args", "List[str]"),), "Dict[str, str]", "An argument '--name=value' sets the "
         "option name to value and '--name' alone sets it to 'true'; other arguments are skipped and a later "
         "setting wins. Return the options in order of first appearance.", long_options,
         lambda r: (option_args(r),)),
        ("compare_version_strings", TWO_STRINGS, "int", "Versions are whole numbers joined by dots, compared part by "
         "part from the left, a missing part counting as 0 (so '1.2' equals '1.2.0'). Return -1 if first is the "
         "older, 1 if it is the newer and 0 if they are equal.", compare_versions, version_pair),
        ("lookup_dotted_path", (("data", "dict"), ("path", "str")), "int", "The data is nested dictionaries with "
         "whole numbers at the bottom. Follow the keys of path, separated by dots, down from the top and return "
         "the number reached, or -1 if a key is missing or the path does not end at a number.", lookup_dotted,
         nested_path),
        ("total_cents_in_text", TEXT, "int", "The text mentions prices such as '$3' or '$12.50'. Return their sum "
         "in cents.", lambda s: sum(100 * int(d) + int(c or 0) for d, c in re.findall(
             r"\$(\d+)(?:\.(\d\d))?", s)),
         lambda r: (priced_text(r),)),
        ("count_atoms", (("formula", "str"),), "Dict[str, int]", "A chemical formula is element symbols (a capital "
         "letter, perhaps followed by a small one), each followed by an optional count. Return how many atoms of "
         "each element it holds, elements in order of first appearance.", count_atoms, lambda r: (formula(r),)),
        ("dice_notation_range", (("notation", "str"),), "Tuple[int, int]", "Dice are written 'NdS' for N dice of "
         "S sides (N may be left out for 1), perhaps followed by '+M' or '-M' added to the total. Return the "
         "smallest and the largest total the throw can give.", dice_range, lambda r: (dice_notation(r),)),
        ("read_coordinate_pairs", TEXT, "List[Tuple[int, int]]", "The text holds points written '(x,y)' or "
         "'(x, y)' with whole, perhaps negative, coordinates. Return them as tuples, in order.",
         lambda s: [(int(x), int(y)) for x, y in re.findall(r"\((-?\d+),\s*(-?\d+)\)", s)],
         lambda r: (coordinate_text(r),)),
        (f"log_messages_from_level_{k}", (("lines", "List[str]"),), "List[str]", "Each line is '[n] message' with n "
         f"a severity from 1 to 9. Return the messages, without their tags, of the lines whose severity is at "
         f"least {k}, in order.", lambda ls: [line[4:] for line in ls if int(line[1]) >= k],
         lambda r: ([f"[{r.randint(1, 9)}] {r.choice(WORDS)} {r.choice(WORDS)}" for _ in range(r.randint(1, 5))],)),
    ])


def timetable_tasks(k: int) -> list[Task]:
    """Clocks and calendars: hand angles, ISO weeks, working days, departures, Easter, nth weekdays, offsets."""
    return tasks([
        ("angle_between_hands", (("hour", "int"), ("minute", "int")), "float", "Return the smaller angle, in "
         "degrees, between the hour and the minute hand of an analogue clock showing hour:minute (hour from 0 to "
         "23). The hour hand moves on smoothly as the minutes pass.", hand_angle,
         lambda r: (r.randint(0, 23), r.choice((0, 15, 30, r.randint(0, 59))))),
        ("iso_week_of", DATE, "int", "Return the ISO week number of the date: weeks start on Monday, and week 1 is "
         "the week that holds the year's first Thursday.",
         lambda d, m, y: datetime.date(y, m, d).isocalendar()[1],
         year_edge_date),
        ("weekdays_in_span", (("start", "str"), ("end", "str")), "int", "Both dates are 'YYYY-MM-DD' and start is "
         "not after end. Return how many days from start to end, both included, fall on Monday to Friday.",
         weekdays_in_span, date_span),
        (f"business_days_later_{k}", DAY_TEXT, "str", f"Return, as 'YYYY-MM-DD', the date {k} working days "
         "(Monday to Friday) after the given 'YYYY-MM-DD' date, Saturdays and Sundays not counted.",
         lambda d: business_days_later(d, k), lambda r: (date_text(r),)),
        ("next_departure", (("departures", "List[str]"), ("now", "str")), "str", "The departures are 'HH:MM' times "
         "in increasing order, the same every day. Return the first departure at or after now, or the first one "
         "of the next day if none is left today.", next_departure, departures),
        ("months_with_friday_13th", (("year", "int"),), "List[int]", "Return the months (1 to 12) of the year whose "
         "13th day is a Friday.", lambda y: [m for m in range(1, 13) if datetime.date(y, m, 13).weekday() == 4],
         lambda r: (r.randint(1990, 2040),)),
        ("easter_sunday", (("year", "int"),), "Tuple[int, int]", "Return (month, day) of Easter Sunday in the year, "
         "by the Gregorian rule: the first Sunday after the ecclesiastical full moon on or after 21 March.",
         easter_sunday, lambda r: (r.randint(1900, 2100),)),
        ("nth_weekday_date", (("year", "int"), ("month", "int"), ("weekday", "str"), ("nth", "int")), "int",
         "The weekday is an English name from 'Monday' to 'Sunday' and nth is 1 to 4. Return the day of the month "
         "on which the month's nth such weekday falls (for the third Monday, nth is 3).", nth_weekday,
         lambda r: (r.randint(2000, 2030), r.randint(1, 12), r.choice(WEEKDAY_NAMES), r.randint(1, 4))),
        ("convert_between_offsets", (("time", "str"), ("source", "int"), ("target", "int")), "str", "The time "
         "'HH:MM' is read on a clock set to UTC plus source hours. Return, as 'HH:MM', what a clock set to UTC "
         "plus target hours shows at that moment, wrapping around midnight.", convert_offset,
         lambda r: (time_string(r), r.randint(-8, 9), r.randint(-8, 9))),
        ("date_from_epoch_days", (("days", "int"),), "str", "Return, as 'YYYY-MM-DD', the date that many days after "
         "1 January 1970.", lambda n: (as_date("1970-01-01") + datetime.timedelta(n)).isoformat(),
         lambda r: (r.choice((r.randint(0, 400), r.randint(0, 25000))),)),
    ])


def sixth_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (check_tasks(k) + voting_tasks(k) + similarity_tasks(k) + machine_tasks(k) + queue_tasks(k)
            + standings_tasks(k) + unit_tasks(k) + encoding_tasks(k) + parser_tasks(k) + timetable_tasks(k))

