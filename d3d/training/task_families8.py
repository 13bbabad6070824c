"""An eighth set of programming-task families for `task_prompts.py`: shapes the first seven sets lack.

The seven earlier sets hold about 1,390 function names, and the seventh set's training functions have
been asked about 8,000 ways, so the data needs new functions rather than new renderings
(docs/training.md). This module adds ten more families, 100 tasks for each k (157 names across k):

    numerals      negative bases, balanced ternary, factoradic, bijective bases, tallies, sexagesimal, BCD
    permutations  lists of 0 .. n-1: inverses, composition, cycles, order, parity, rank, powers, involutions
    trees         parent lists: roots, depths, heights, children, leaves, subtree sizes, common ancestors
    genomes       DNA strings: reverse complements, GC share, k-mers, motifs, consensus, reading frames
    addresses     IPv4 and MAC addresses: integers, netmasks, subnets, broadcast, private ranges, hosts
    markup        HTML and Markdown: tags stripped, entities, heading levels, contents, slugs, links
    listings      lines of source code: tab stops, dedenting, comments, continuations, blank runs, indents
    wordplay      Wordle marks, bulls and cows, hangman, one-letter changes, spoonerisms, word chains
    traces        sorting algorithms step by step: bubble and cocktail passes, insertion, Lomuto, pancakes
    statistics    histograms of width k, modes, percentile ranks, trimmed means, z-scores, correlation

The rules are task_families7.py's: reference solutions compute the examples, example inputs make them
informative, results print exactly, constants vary with k (2 to 7), no name is a HumanEval entry point
or an earlier catalogue's (for any k), no description shares a 13-word n-gram with a HumanEval prompt,
and a name with the constant k (or a number made from it) ends with it, so holding a function out
holds it out under every k. Near misses of the earlier sets were turned around: negative and bijective
bases (not the third set's plain bases or the sixth's spreadsheet columns), the passes a bubble sort
needs (not the inversions it undoes), a Lomuto partition (not a stable one around k), letters found by
a Wordle guess (not a word's tile score), trees given by parents (not the fifth set's edge lists).
Reference solutions, generators and argument shapes are in `task_reference8.py` (numerals to
addresses) and `task_reference8b.py` (markup to statistics). `task_prompts` imports `eighth_tasks(k)`
(`--families eighth`) and its docstring gives the commands that drew data/task_dev8_prompts.jsonl and
data/task_prompts11.jsonl.
"""

from __future__ import annotations

import statistics

from d3d.training.task_families import TEXT, WORDS, Task, tasks
from d3d.training.task_reference3 import N
from d3d.training.task_reference8 import (ADDRESS, CIDR, COMPLEMENT, DNA, PARENTS, PERMUTATION, address,
                                          address_and_network, balanced_ternary, bijective, children_lists,
                                          cidr, coding_dna, common_ancestor, consensus, cycles, deep_parent_list, dna,
                                          factoradic, first_hosts, from_balanced_ternary, from_factoradic,
                                          from_negabinary, in_subnet, involution_or_not, is_private, kmer_counts,
                                          lexicographic_rank, longest_run, mac_address, motif_positions,
                                          negative_base, netmask, network_bounds, next_permutation, node_depth,
                                          normalize_mac, parent_list, path_to_root, permutation, permutation_order,
                                          permutation_power, reading_frame, sexagesimal, subtree_size, tally_marks,
                                          to_address, to_integer, tree_and_node, tree_and_two_nodes)
from d3d.training.task_reference8b import (FIVE, LINES, VALUES, align_fields, bisection_probes, bubble_pass,
                                           bubble_passes, bulls_and_cows, chain, chain_ok, cocktail_pass, continued,
                                           cumulative_counts, dedent, escape, four_digits, from_tiles, tiles_for_words,
                                           guessed_letters, hangman, heading_level, histogram, html, indent_changes,
                                           indented, insertion_steps, join_continued, link_text, links, lomuto,
                                           markdown, median_deviation, merge_pass, modes, odd_even_pass,
                                           one_letter_changed, one_row, paired, pancake_flips, pearson, row_words,
                                           selection_swaps, slugify, sorted_runs, source, spoonerism, squeeze_blank,
                                           standard_scores, strip_tags, table_of_contents, tag_soup, tags_nest,
                                           trimmed_mean, unescape, values, wordle)


def numeral_tasks(k: int) -> list[Task]:
    """Whole numbers written in numeral systems other than the plain positive bases."""
    base = k + 1 if k < 4 else k  # 3, 3, 4, 5, 6, 7: a negative base of 2 is negabinary, asked apart
    return tasks([
        (f"to_negative_base_{base}", N, "str", f"Return the digits of n in base -{base}: digits 0 to {base - 1}, "
         f"each place worth (-{base}) to the power of its position from the right, '0' for zero.",
         lambda n: negative_base(n, base), lambda r: (r.randint(-40, 60),)),
        ("from_negabinary", (("digits", "str"),), "int", "The string holds the digits of a number in base -2: the "
         "rightmost digit is worth 1, the next -2, then 4, -8 and so on. Return the number.", from_negabinary,
         lambda r: ("1" + "".join(r.choice("01") for _ in range(r.randint(0, 6))),)),
        ("to_balanced_ternary", N, "str", "Write n in balanced ternary: every place is worth a power of 3 and "
         "holds '+' (1), '0' (0) or '-' (-1), with no leading '0' ('0' for zero). Return the string.",
         balanced_ternary, lambda r: (r.randint(-30, 30),)),
        ("from_balanced_ternary", (("digits", "str"),), "int", "Each character is '+' for 1, '0' for 0 or '-' for "
         "-1, and the places are worth powers of 3, the rightmost 1. Return the number the string stands for.",
         from_balanced_ternary, lambda r: ("+" + "".join(r.choice("+0-") for _ in range(r.randint(0, 4))),)),
        ("to_factoradic", N, "List[int]", "Return the digits of the non-negative n in the factorial number system, "
         "most significant first: the last place is worth 0!, the one before 1!, then 2! and so on, and the "
         "digit in the place worth i! is at most i.", factoradic, lambda r: (r.randint(0, 150),)),
        ("from_factoradic", (("digits", "List[int]"),), "int", "The digits are a number in the factorial number "
         "system, most significant first: the last digit counts 0!, the one before 1!, then 2! and so on. Return "
         "the number.", from_factoradic,
         lambda r: ([r.randint(0, i) for i in range(r.randint(1, 5), -1, -1)],)),
        (f"to_bijective_base_{k}", N, "str", f"Return n (not negative) in bijective base {k}: digits 1 to {k} and no "
         f"zero digit, each place worth {k} times the one on its right; zero is the empty string.",
         lambda n: bijective(n, k), lambda r: (r.randint(0, 4 * k * k),)),
        ("tally_marks", N, "str", "Return n as tally marks: a group '||||/' for every five, separated by spaces, "
         "then the remaining strokes '|' as one last group (an empty string for zero).", tally_marks,
         lambda r: (r.randint(0, 17),)),
        ("sexagesimal_digits", N, "List[int]", "Return the digits of the non-negative n in base 60, most "
         "significant first, each digit a number from 0 to 59 ([0] for zero).", sexagesimal,
         lambda r: (r.choice((r.randint(0, 200), r.randint(0, 300000))),)),
        ("binary_coded_decimal", N, "str", "Write every decimal digit of the non-negative n as four binary digits "
         "and return the groups joined by single spaces, such as '0001 0111' for 17.",
         lambda n: " ".join(f"{int(d):04b}" for d in str(n)), lambda r: (r.randint(0, 999),)),
    ])


def permutation_tasks(k: int) -> list[Task]:
    """Permutations of 0 .. n-1 as lists: position i holds the image of i."""
    perms = lambda r: (permutation(r),)  # noqa: E731
    return tasks([
        ("inverse_permutation", PERMUTATION, "List[int]", "The list holds each of 0 .. n-1 once and sends i to "
         "perm[i]. Return the permutation that undoes it: the one sending perm[i] back to i.",
         lambda p: [p.index(i) for i in range(len(p))], perms),
        ("compose_permutations", (("first", "List[int]"), ("second", "List[int]")), "List[int]", "Both lists "
         "hold 0 .. n-1 once each. Apply first and then second: return the list whose entry i is "
         "second[first[i]].", lambda a, b: [b[i] for i in a],
         lambda r: (a := permutation(r), permutation(r, len(a), len(a)))),
        ("permutation_cycles", PERMUTATION, "List[List[int]]", "The list sends i to perm[i]. Return its cycles, "
         "each starting at its smallest number and following i, perm[i], perm[perm[i]] ..., ordered by their "
         "first numbers; a fixed point is a cycle of one.", cycles, perms),
        ("permutation_order", PERMUTATION, "int", "The list sends i to perm[i]. Return the smallest positive number "
         "of times it must be applied to bring every number back to where it started.", permutation_order,
         lambda r: (permutation(r, 2, 8),)),
        ("permutation_parity", PERMUTATION, "str", "The list holds 0 .. n-1 once each. Return 'even' if it can be "
         "sorted by an even number of swaps of two entries and 'odd' otherwise.",
         lambda p: "odd" if (len(p) - len(cycles(p))) % 2 else "even", perms),
        ("fixed_points_of_permutation", PERMUTATION, "List[int]", "Return, in increasing order, the numbers i that "
         "the permutation leaves in place (perm[i] == i).", lambda p: [i for i, x in enumerate(p) if i == x],
         lambda r: (permutation(r, 2, 4),)),
        ("next_lexicographic_arrangement", PERMUTATION, "List[int]", "Return the arrangement of the same distinct "
         "numbers that comes next in dictionary order; after the last (decreasing) one comes the first "
         "(increasing) one.", next_permutation, lambda r: (permutation(r, 2, 5),)),
        ("lexicographic_rank", PERMUTATION, "int", "Among all orders of the same distinct numbers, sorted as in a "
         "dictionary, return the position of this one, counting from 0 for the increasing order.",
         lexicographic_rank, lambda r: (permutation(r, 2, 5),)),
        (f"apply_permutation_times_{k}", PERMUTATION, "List[int]", f"The list sends i to perm[i]. Return the "
         f"permutation that sends i where {k} applications in a row send it.", lambda p: permutation_power(p, k),
         lambda r: (permutation(r, 3, 7),)),
        ("is_involution", PERMUTATION, "bool", "Return True if applying the permutation twice gives back every "
         "number, that is perm[perm[i]] == i for every i.", lambda p: all(p[x] == i for i, x in enumerate(p)),
         involution_or_not),
    ])


def tree_tasks(k: int) -> list[Task]:
    """Rooted trees on nodes 0 .. n-1 given by each node's parent, -1 for the root."""
    trees = lambda r: (parent_list(r),)  # noqa: E731
    return tasks([
        ("root_of_tree", PARENTS, "int", "parents[i] is the parent of node i, and the one root has -1. Return the "
         "root.", lambda ps: ps.index(-1), trees),
        ("depth_of_node", PARENTS + (("node", "int"),), "int", "parents[i] is the parent of node i, -1 for the "
         "root. Return how many steps up lead from node to the root.", node_depth, tree_and_node),
        ("height_from_parents", PARENTS, "int", "parents[i] is the parent of node i, -1 for the root. Return the "
         "largest number of steps from any node up to the root.",
         lambda ps: max(node_depth(ps, i) for i in range(len(ps))), trees),
        ("children_of_each_node", PARENTS, "List[List[int]]", "parents[i] is the parent of node i, -1 for the root. "
         "Return, for every node in order, the list of its children in increasing order.", children_lists, trees),
        ("leaves_from_parents", PARENTS, "List[int]", "parents[i] is the parent of node i, -1 for the root. Return, "
         "in increasing order, the nodes that are nobody's parent.",
         lambda ps: [i for i in range(len(ps)) if i not in ps], trees),
        ("size_of_subtree", PARENTS + (("node", "int"),), "int", "parents[i] is the parent of node i, -1 for the "
         "root. Return how many nodes lie in the subtree under node, node itself included.", subtree_size,
         tree_and_node),
        ("path_up_to_root", PARENTS + (("node", "int"),), "List[int]", "parents[i] is the parent of node i, -1 for "
         "the root. Return the nodes met going up from node to the root, both included.", path_to_root,
         tree_and_node),
        ("lowest_common_ancestor", PARENTS + (("a", "int"), ("b", "int")), "int", "parents[i] is the parent of "
         "node i, -1 for the root. Return the deepest node on both the path from a up to the root and the path "
         "from b up to the root (each path starts at its own node).",
         common_ancestor, tree_and_two_nodes),
        (f"nodes_at_depth_{k}", PARENTS, "List[int]", f"parents[i] is the parent of node i, -1 for the root (depth "
         f"0). Return, in increasing order, the nodes exactly {k} steps below the root.",
         lambda ps: [i for i in range(len(ps)) if node_depth(ps, i) == k],
         lambda r: (deep_parent_list(r, k),)),
        ("distance_between_nodes", PARENTS + (("a", "int"), ("b", "int")), "int", "parents[i] is the parent of "
         "node i, -1 for the root. Return the number of edges on the path between nodes a and b.",
         lambda ps, a, b: node_depth(ps, a) + node_depth(ps, b) - 2 * node_depth(ps, common_ancestor(ps, a, b)),
         tree_and_two_nodes),
    ])


def genome_tasks(k: int) -> list[Task]:
    """DNA as strings of the bases 'A', 'C', 'G' and 'T'."""
    strands = lambda r: (dna(r),)  # noqa: E731
    return tasks([
        ("reverse_complement", DNA, "str", "Pair every base with its partner ('A' with 'T', 'C' with 'G') and "
         "return the paired strand read backwards.", lambda s: "".join(COMPLEMENT[c] for c in reversed(s)), strands),
        ("gc_content_percent", DNA, "int", "Return the share of the bases that are 'G' or 'C', as a whole percent "
         "rounded down (0 for an empty string).", lambda s: 100 * sum(c in "GC" for c in s) // len(s) if s else 0,
         strands),
        ("transcribe_to_rna", DNA, "str", "Return the RNA copy of the DNA strand: the same bases with every 'T' "
         "written as 'U'.", lambda s: s.replace("T", "U"), strands),
        (f"kmer_counts_{k}", DNA, "Dict[str, int]", f"Return how often every run of {k} neighbouring bases occurs "
         "(overlaps counted), in order of first appearance.", lambda s: kmer_counts(s, k),
         lambda r: (dna(r, k, k + 6, "ACG"),)),
        ("motif_positions", DNA + (("motif", "str"),), "List[int]", "Return every index at which the motif starts "
         "in the strand, overlapping matches included, in increasing order.", motif_positions,
         lambda r: (dna(r, 6, 14, "AT"), r.choice(("AT", "TA", "AA", "ATA")))),
        ("longest_homopolymer_run", DNA, "int", "Return the length of the longest run of one base repeated, such "
         "as 3 for 'ACCCG' (0 for an empty string).", longest_run, lambda r: (dna(r, 0, 12, "AAC"),)),
        ("wallace_melting_temperature", DNA, "int", "Estimate a short strand's melting point in degrees by the "
         "Wallace rule: 2 for every 'A' or 'T' plus 4 for every 'G' or 'C'.",
         lambda s: sum(4 if c in "GC" else 2 for c in s), strands),
        ("consensus_sequence", (("reads", "List[str]"),), "str", "The reads are DNA strings of equal length. "
         "Return, place by place, the base that occurs most often there, the first of 'A', 'C', 'G', 'T' on a "
         "tie.", consensus, lambda r: ([dna(r, n, n) for n in [r.randint(3, 6)] for _ in range(r.randint(2, 4))],)),
        ("reading_frame_codons", DNA, "List[str]", "Starting at the first 'ATG', cut the strand into codons of "
         "three bases and return them up to and including the first of 'TAA', 'TAG' or 'TGA' (or up to the "
         "last full codon); an empty list if there is no 'ATG'.", reading_frame, lambda r: (coding_dna(r),)),
        ("purine_pyrimidine_pattern", DNA, "str", "Write 'R' for every purine ('A' or 'G') and 'Y' for every "
         "pyrimidine ('C' or 'T') and return the pattern.", lambda s: "".join("R" if c in "AG" else "Y" for c in s),
         strands),
    ])


def address_tasks(k: int) -> list[Task]:
    """IPv4 addresses as dotted strings, networks as 'a.b.c.d/prefix', MAC addresses."""
    return tasks([
        ("ipv4_to_integer", ADDRESS, "int", "The address is four numbers from 0 to 255 joined by dots. Return it "
         "as one 32-bit number, the first part the most significant byte.", to_integer, lambda r: (address(r),)),
        ("integer_to_ipv4", N, "str", "n is from 0 to 2**32 - 1. Return it as an address of four numbers joined by "
         "dots, the most significant byte first.", to_address,
         lambda r: (r.choice((r.randint(0, 70000), r.randint(0, 2 ** 32 - 1))),)),
        ("netmask_of_prefix", (("prefix", "int"),), "str", "Return the dotted netmask with the first prefix bits "
         "of 32 set and the others clear, such as '255.255.255.0' for 24.", netmask, lambda r: (r.randint(0, 32),)),
        ("prefix_of_netmask", (("mask", "str"),), "int", "The dotted netmask has some leading bits set and the "
         "rest clear. Return how many bits are set.",
         lambda m: sum(bin(int(p)).count("1") for p in m.split(".")), lambda r: (netmask(r.randint(0, 32)),)),
        ("address_in_network", ADDRESS + CIDR, "bool", "The network is 'a.b.c.d/p': the addresses whose first p "
         "bits match those of a.b.c.d. Return True if the address is one of them.", in_subnet,
         address_and_network),
        ("network_address", CIDR, "str", "The network is 'a.b.c.d/p'. Return its first address: a.b.c.d with all "
         "but the first p bits cleared.", lambda n: to_address(network_bounds(n)[0]), lambda r: (cidr(r),)),
        ("broadcast_address", CIDR, "str", "The network is 'a.b.c.d/p'. Return its last address: a.b.c.d with all "
         "but the first p bits set.", lambda n: to_address(network_bounds(n)[1]), lambda r: (cidr(r),)),
        ("is_private_ipv4", ADDRESS, "bool", "Return True if the address lies in one of the private ranges: "
         "10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16.", is_private, lambda r: (address(r),)),
        (f"first_hosts_{k}", CIDR, "List[str]", f"The network is 'a.b.c.d/p'. Return its first {k} host addresses "
         "in order: those after the network address and before the broadcast address (fewer if it has fewer).",
         lambda n: first_hosts(n, k), lambda r: (f"{address(r)}/{r.choice((24, 29, 30, 31, 32, r.randint(8, 30)))}",)),
        ("normalize_mac_address", (("mac", "str"),), "str", "The MAC address has twelve hexadecimal digits, "
         "grouped and separated by ':', '-' or '.' in some way. Return them in lower case as six pairs joined "
         "by ':'.", normalize_mac, lambda r: (mac_address(r),)),
    ])


def markup_tasks(k: int) -> list[Task]:
    """HTML and Markdown text."""
    return tasks([
        ("strip_html_tags", TEXT, "str", "Remove every tag, from '<' to the next '>', and return what is left.",
         strip_tags, lambda r: (html(r),)),
        ("escape_html_text", TEXT, "str", "Replace every '&' with '&amp;', then every '<' with '&lt;', every '>' "
         "with '&gt;' and every '\"' with '&quot;', and return the text.", escape,
         lambda r: (" ".join(r.choice(("a<b", "x & y", '"hi"', "c>d", "plain")) for _ in range(r.randint(1, 3))),)),
        ("unescape_html_text", TEXT, "str", "Replace '&quot;' with '\"', '&gt;' with '>', '&lt;' with '<' and then "
         "'&amp;' with '&', and return the text.", unescape,
         lambda r: (" ".join(r.choice(("a&lt;b", "x &amp; y", "&quot;hi&quot;", "c&gt;d", "plain"))
                             for _ in range(r.randint(1, 3))),)),
        ("markdown_heading_level", (("line", "str"),), "int", "A Markdown heading is 1 to 6 '#' followed by a "
         "space. Return how many '#' start the line if it is a heading, and 0 otherwise.", heading_level,
         lambda r: (r.choice(("#" * r.randint(1, 6) + " Title", "#" * r.randint(1, 7) + r.choice((" ", "")) + "Notes",
                              "plain text")),)),
        ("markdown_contents", LINES, "List[str]", "Return the titles of the Markdown heading lines (1 to 6 '#' "
         "and a space) in order, each indented by two spaces for every level below the first.",
         table_of_contents, lambda r: (markdown(r),)),
        ("slugify_title", (("title", "str"),), "str", "Return the title in lower case with every run of "
         "characters other than letters and digits turned into one '-', and none at either end.", slugify,
         lambda r: (r.choice(("  ", "")) + " ".join(r.choice(("Hello", "World!", "C++", "2nd", "Top-10", "a.b"))
                                                      for _ in range(r.randint(1, 3))),)),
        ("markdown_links", TEXT, "List[Tuple[str, str]]", "Return (text, target) for every Markdown link "
         "'[text](target)' in the text, in order.", links, lambda r: (link_text(r),)),
        ("tags_nest_properly", TEXT, "bool", "Every '<name>' opens a tag and '</name>' closes it. Return True if "
         "each closing tag matches the latest still open one and none is left open.", tags_nest,
         lambda r: (tag_soup(r),)),
        (f"markdown_heading_{k}", (("title", "str"),), "str", f"Return the title as a Markdown heading of level {k}: "
         f"{k} '#', a space and the title with spaces at its ends removed.", lambda t: "#" * k + " " + t.strip(),
         lambda r: (r.choice(("", " ")) + r.choice(WORDS).title(),)),
        ("wrap_in_tag", TEXT + (("tag", "str"),), "str", "Return the text between an opening '<tag>' and a "
         "closing '</tag>' of the given tag name, the text escaped first ('&', '<' and '>' as '&amp;', '&lt;' and "
         "'&gt;').", lambda s, t: f"<{t}>" + s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
         + f"</{t}>", lambda r: (r.choice(("a<b", "x & y", r.choice(WORDS))), r.choice(("b", "li", "p")))),
    ])


def listing_tasks(k: int) -> list[Task]:
    """Lines of source code as lists of strings."""
    stop = k + 2 if k < 4 else k  # tab stops of 4, 5, 4, 5, 6, 7 columns
    return tasks([
        (f"align_fields_to_stops_{stop}", (("fields", "List[str]"),), "str", f"Tab stops are every {stop} columns. "
         "Join the fields into one line as tabs between them would lay it out: after every field but the last, "
         "spaces up to the next tab stop (a whole stop of them when the field ends on one).",
         lambda fs: align_fields(fs, stop),
         lambda r: ([r.choice(("ab", "x", "", "long", "name", "total")) for _ in range(r.randint(1, 4))],)),
        ("remove_common_indent", LINES, "List[str]", "Remove from every line the number of leading spaces the "
         "least indented non-blank line has; blank lines become empty strings.", dedent,
         lambda r: (indented(r),)),
        ("strip_hash_comments", LINES, "List[str]", "Cut every line at its first '#' and remove the spaces left at "
         "its end; keep lines that become empty.", lambda ls: [line.split("#")[0].rstrip() for line in ls],
         lambda r: (source(r),)),
        ("join_continued_lines", LINES, "List[str]", "A line ending with '&' continues on the next, as in Fortran: "
         "drop the '&' and join the two (a last line ending with '&' only loses it). Return the joined lines.",
         join_continued, lambda r: (continued(r),)),
        ("number_the_lines", LINES, "List[str]", "Return every line prefixed by its number from 1, a colon and a "
         "space, such as '1: x = 1'.", lambda ls: [f"{i}: {line}" for i, line in enumerate(ls, 1)],
         lambda r: (source(r)[: r.randint(1, 3)],)),
        ("lines_with_trailing_space", LINES, "List[int]", "Return the numbers, counting from 1, of the lines that "
         "end with a space.", lambda ls: [i for i, line in enumerate(ls, 1) if line.endswith(" ")],
         lambda r: (source(r),)),
        ("squeeze_blank_lines", LINES, "List[str]", "A line is blank when it holds only whitespace. Return the "
         "lines with every run of blank lines cut to its first line.", squeeze_blank,
         lambda r: ([r.choice(("x = 1", "", "  ", "y()")) for _ in range(r.randint(2, 6))],)),
        ("indent_changes", LINES, "List[int]", "For every non-blank line, in order, return its number of leading "
         "spaces minus that of the non-blank line before it (minus 0 for the first).", indent_changes,
         lambda r: (source(r),)),
        ("longest_line_number", LINES, "int", "Return the number, counting from 1, of the longest line, the first "
         "on a tie, or 0 when there are no lines.",
         lambda ls: max(range(len(ls)), key=lambda i: (len(ls[i]), -i)) + 1 if ls else 0,
         lambda r: (source(r)[: r.randint(0, 4)],)),
        ("count_code_lines", LINES, "int", "Return how many lines hold code: not blank and not a comment (a line "
         "whose first character after any spaces is '#').",
         lambda ls: sum(bool(line.strip()) and not line.strip().startswith("#") for line in ls),
         lambda r: ([r.choice(("x = 1", "", "# note", "  # todo", "y()", "    z")) for _ in range(r.randint(2, 6))],)),
    ])


def wordplay_tasks(k: int) -> list[Task]:
    """Word games."""
    return tasks([
        ("wordle_marks", (("guess", "str"), ("answer", "str")), "str", "Both words have five letters. Mark every "
         "letter of the guess 'G' when the answer has it in the same place, then 'Y' when the answer has it "
         "elsewhere and not all its copies are used up by 'G' marks and earlier 'Y' marks, and '.' otherwise.",
         wordle, lambda r: (r.choice(FIVE), r.choice(FIVE))),
        ("bulls_and_cows", (("secret", "str"), ("guess", "str")), "Tuple[int, int]", "Both strings have four "
         "digits. Return (bulls, cows): bulls are places where the digits agree, cows are digits the guess shares "
         "with the secret (each copy matched once) that are in the wrong place.", bulls_and_cows,
         lambda r: (four_digits(r), four_digits(r))),
        ("hangman_display", (("word", "str"), ("guessed", "str")), "str", "Return the word with every letter not "
         "in guessed shown as '_'.", hangman, lambda r: (r.choice(WORDS), guessed_letters(r))),
        (f"hangman_is_lost_{k}", (("word", "str"), ("guesses", "str")), "bool", "The guesses are letters in the "
         f"order they were tried. Return True if more than {k} different guessed letters are not in the word.",
         lambda w, g: len(set(g) - set(w)) > k,
         lambda r: (r.choice(WORDS), "".join(r.sample("abcdefghijklmnopqrstuvwxyz", r.randint(k - 1, k + 5))))),
        ("one_letter_changed", (("first", "str"), ("second", "str")), "bool", "Return True if the words have the "
         "same length and differ in exactly one place.", one_letter_changed,
         lambda r: (w := r.choice(WORDS), r.choice((w, w[:-1] + "z", "z" + w[1:], r.choice(WORDS))))),
        ("spoonerism", (("first", "str"), ("second", "str")), "str", "Swap the leading consonants (every letter "
         "before the first of a, e, i, o, u) of the two lower-case words and return them joined by a space.",
         spoonerism, lambda r: (r.choice(WORDS), r.choice(WORDS))),
        ("words_from_one_keyboard_row", (("words", "List[str]"),), "List[str]", "Return, in order, the words whose "
         "letters all lie on one row of a QWERTY keyboard: 'qwertyuiop', 'asdfghjkl' or 'zxcvbnm'.",
         lambda ws: [w for w in ws if one_row(w)], lambda r: (row_words(r),)),
        ("is_word_chain", (("words", "List[str]"),), "bool", "Return True if every word starts with the last letter "
         "of the word before it.", chain_ok, lambda r: (chain(r),)),
        ("longest_word_from_tiles", (("words", "List[str]"), ("tiles", "str")), "str", "Each tile is one letter and "
         "can be used once. Return the longest of the words that the tiles can spell, the first on a tie, or an "
         "empty string if none can be spelled.", from_tiles,
         tiles_for_words),
        ("letters_left_to_guess", (("word", "str"), ("guessed", "str")), "List[str]", "Return, in alphabetical "
         "order and once each, the letters of the word that are not yet in guessed.",
         lambda w, g: sorted(set(w) - set(g)), lambda r: (r.choice(WORDS), guessed_letters(r))),
    ])


def trace_tasks(k: int) -> list[Task]:
    """Sorting algorithms followed step by step on lists of integers."""
    nums = lambda r: (values(r),)  # noqa: E731
    width = k - 1 if k < 4 else k - 2  # runs of 1, 2, 2, 3, 4, 5
    return tasks([
        ("bubble_sort_pass", VALUES, "List[int]", "Go once through the list from the left, swapping every two "
         "neighbours that are out of order, and return the list after that single pass.", bubble_pass, nums),
        ("bubble_passes_needed", VALUES, "int", "Repeat passes from the left that swap out-of-order neighbours "
         "until a pass swaps nothing. Return how many passes were made, that last one included.", bubble_passes,
         lambda r: (values(r, 2, 7, 9),)),
        (f"insertion_sort_steps_{k}", VALUES, "List[int]", f"Run the first {k} steps of insertion sort: step i "
         "(from 1) moves the element at index i left past every larger element before it. Return the list.",
         lambda v: insertion_steps(v, k), lambda r: (values(r, k, k + 4),)),
        ("selection_sort_swaps", VALUES, "int", "Sort by selection: for each position from the left, find the "
         "smallest value from there on (its first occurrence) and swap it into place when it differs from the "
         "value there. Return how many swaps were made.", selection_swaps, lambda r: (values(r, 2, 7, 9),)),
        ("lomuto_partition", VALUES, "List[int]", "Partition with the last element as pivot: walk the others from "
         "the left, swapping each one smaller than the pivot into the next place of a growing front part, then "
         "swap the pivot into the place after that part. Return the list.", lomuto, nums),
        (f"merge_pass_width_{width}", VALUES, "List[int]", f"The list is cut into runs of {width} from the start, and "
         "each run is sorted. Merge the first run with the second, the third with the fourth and so on into "
         "sorted runs (a last run without a partner stays as it is) and return the list.",
         lambda v: merge_pass(v, width), lambda r: (sorted_runs(r, width),)),
        ("pancake_flip_sizes", VALUES, "List[int]", "Sort by reversing the first f elements again and again: for "
         "every m from the length of the list down to 2, unless index m - 1 already holds the largest of the "
         "first m elements, reverse up to the first place holding that largest value to bring it to the front "
         "(unless it is there) and then reverse the first m elements. Return every f used, in order.",
         pancake_flips, lambda r: (values(r, 2, 5),)),
        ("cocktail_shaker_pass", VALUES, "List[int]", "Swap out-of-order neighbours once from left to right and "
         "then once from right to left, and return the list after that one round trip.", cocktail_pass, nums),
        ("bisection_probes", VALUES + (("target", "int"),), "List[int]", "The values are sorted. Search for target "
         "by halving: look at the middle index (rounded down) of the part left, stop if it holds target, and "
         "otherwise keep the half where target must be. Return the indices looked at, in order.",
         bisection_probes, lambda r: (v := sorted(values(r, 3, 9)), r.choice(v + [r.randint(0, 20)]))),
        ("odd_even_transposition_pass", VALUES, "List[int]", "Compare and swap the out-of-order pairs at indices "
         "(1, 2), (3, 4) ... and then those at (0, 1), (2, 3) ..., and return the list.", odd_even_pass, nums),
    ])


def statistic_tasks(k: int) -> list[Task]:
    """Descriptive statistics of integer data, fractions rounded to 2 decimal places."""
    data = lambda r: (values(r, 3, 8, 12),)  # noqa: E731
    width, cut = k + 1, 1 if k < 5 else 2  # bins of 3 .. 8
    return tasks([
        (f"histogram_bins_width_{width}", VALUES, "Dict[int, int]", f"Put every value (not negative) in the bin of "
         f"width {width} holding it, named by its lowest value (0, {width}, {2 * width} ...), and return the "
         "count of every bin that is not empty, by bin.", lambda v: histogram(v, width),
         lambda r: (values(r, 3, 8, 30),)),
        ("all_modes", VALUES, "List[int]", "Return, in increasing order, every value that occurs as often as the "
         "most frequent one.", modes, lambda r: (values(r, 2, 7, 5),)),
        ("percentile_rank", VALUES + (("x", "int"),), "int", "Return the percentage of the values that are below "
         "x, rounded down to a whole number.", lambda v, x: 100 * sum(y < x for y in v) // len(v),
         lambda r: (values(r, 3, 8, 12), r.randint(0, 12))),
        (f"trimmed_mean_{cut}", VALUES, "float", f"Leave out the {cut} smallest and the {cut} largest values and "
         "return the mean of the rest, rounded to 2 decimal places.", lambda v: trimmed_mean(v, cut),
         lambda r: (values(r, 2 * cut + 1, 2 * cut + 6, 20),)),
        ("population_variance", VALUES, "float", "Return the mean of the squared differences between every value "
         "and the mean of the values, rounded to 2 decimal places.", lambda v: round(statistics.pvariance(v), 2),
         data),
        ("cumulative_counts", VALUES, "List[Tuple[int, int]]", "Return (value, how many values are at most it) "
         "for every distinct value, in increasing order of value.", cumulative_counts, data),
        ("standard_scores", VALUES, "List[float]", "Return every value's distance from the mean in population "
         "standard deviations, rounded to 2 decimal places (all 0.0 when the values are all equal).",
         standard_scores, lambda r: (values(r, 2, 5, 10),)),
        ("pearson_correlation", (("xs", "List[int]"), ("ys", "List[int]")), "float", "The lists have equal "
         "lengths. Return their Pearson correlation coefficient rounded to 2 decimal places, or 0.0 if either "
         "list has all values equal.", pearson, paired),
        ("median_absolute_spread", VALUES, "float", "Return the median of the distances of the values from their "
         "median, as a float.", median_deviation, data),
        ("values_in_middle_half", VALUES, "List[int]", "Sort the values and return those left after removing the "
         "lowest quarter and the highest quarter of them (a quarter of the count, rounded down, from each end).",
         lambda v: sorted(v)[len(v) // 4: len(v) - len(v) // 4], lambda r: (values(r, 3, 9, 20),)),
    ])


def eighth_tasks(k: int) -> list[Task]:
    """Every task of this module's families, with the constant k (2 to 7 in the prompt files)."""
    return (numeral_tasks(k) + permutation_tasks(k) + tree_tasks(k) + genome_tasks(k) + address_tasks(k)
            + markup_tasks(k) + listing_tasks(k) + wordplay_tasks(k) + trace_tasks(k) + statistic_tasks(k))
