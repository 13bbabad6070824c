"""The fifth task families' reference solutions and example generators, and their argument shapes.

`task_families5.py` builds its tasks from what is here, as `task_families4.py` does from
`task_reference4.py`: the argument shapes several families share (ROWS, RECORDS, BOX, EDGES, GRAPH,
LOTS, LINES), the tables some solutions read (letter tile values, the short words a title leaves in
lower case, the moves of rock-paper-scissors), the reference solutions too long for a lambda
(parse_query, components, topological_order, bowling_score, tic_tac_toe_winner, poker_dice_hand,
fifo_take, wrap_words, justify ...) and the seeded example generators (csv_rows, template, polygon,
directed_graph, acyclic_graph, chain_graph, bowling_game, played_board, fitting_words ...: each takes
the `random.Random` the task draws from and only draws from it). The module knows nothing about tasks,
rendering or files, so the task files drawn through it regenerate byte for byte. Nothing here runs on
its own: `python -m d3d.training.task_prompts --families fifth` draws tasks built on it.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter, deque
from itertools import combinations

from d3d.training.task_families import WORDS, point
from d3d.training.task_reference3 import MIXED_WORDS

ROWS = (("rows", "List[str]"),)
RECORDS = (("records", "List[Dict[str, int]]"),)
BOX = "Tuple[int, int, int, int]"
EDGES = (("edges", "List[Tuple[str, str]]"),)
GRAPH = (("graph", "Dict[str, List[str]]"),)
LOTS = (("lots", "List[Tuple[int, int]]"),)
LINES = (("lines", "List[str]"),)
NODES = "abcdefghij"
KNIGHT_JUMPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))  # a knight's eight moves
FIELDS = ("qty", "price", "age", "score", "year")
PLACEHOLDERS = ("name", "item", "day", "city")
HEADERS = ("Host", "Accept", "Server", "Date")
QUERY_KEYS = ("page", "tag", "q", "sort")
TILE_VALUES = {**dict.fromkeys("aeioulnstr", 1), **dict.fromkeys("dg", 2), **dict.fromkeys("bcmp", 3),
               **dict.fromkeys("fhvwy", 4), "k": 5, "j": 8, "x": 8, "q": 10, "z": 10}
SMALL_WORDS = ("a", "an", "the", "and", "or", "of", "in", "on", "to", "at")
MOVES = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
CARDS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
ANAGRAMS = ("listen", "silent", "enlist", "notes", "stone", "onset", "act", "cat", "dog", "god", "stop", "pots")
PEOPLE = ("ann", "bob", "cyd", "dee", "eve")
THREES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def csv_rows(r: random.Random) -> list[str]:
    """A header 'name,...' with 1 to 3 numeric columns, then 1 to 4 rows of a word and small integers."""
    header = ["name", *r.sample(FIELDS, r.randint(1, 3))]
    rows = [[r.choice(WORDS), *(str(r.randint(0, 50)) for _ in header[1:])] for _ in range(r.randint(1, 4))]
    return [",".join(row) for row in [header, *rows]]


def stock_records(r: random.Random, most: int = 12) -> list[dict[str, int]]:
    """2 to 4 records {'id', 'qty', 'price'} with distinct ids."""
    ids = r.sample(range(1, 20), r.randint(2, 4))
    return [{"id": i, "qty": r.randint(0, most), "price": r.randint(1, 9)} for i in ids]


def template(r: random.Random) -> str:
    """Words and {placeholders} in some order, a placeholder now and then twice."""
    parts = [r.choice(WORDS) for _ in range(r.randint(1, 3))]
    parts += [f"{{{name}}}" for name in r.choices(PLACEHOLDERS, k=r.randint(1, 3))]
    r.shuffle(parts)
    return " ".join(parts)


def parse_query(query: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for part in query.split("&"):
        key, _, value = part.partition("=")
        values.setdefault(key, []).append(value)
    return values


def query_string(r: random.Random) -> str:
    return "&".join(f"{r.choice(QUERY_KEYS)}={r.choice((r.choice(WORDS), str(r.randint(1, 9))))}"
                    for _ in range(r.randint(1, 4)))


def header_lookup(lines: list[str], name: str) -> str:
    fields = (line.partition(": ") for line in lines)
    return next((value for key, _, value in fields if key.lower() == name.lower()), "")


def header_request(r: random.Random) -> tuple[list[str], str]:
    """'Name: value' lines and a name to look up: one of theirs in another case, or perhaps a missing one."""
    lines = [f"{h}: {r.choice(WORDS)}" for h in r.sample(HEADERS, r.randint(1, 3))]
    return lines, r.choice((lines[0].split(":")[0].lower(), lines[-1].split(":")[0].upper(), r.choice(HEADERS)))


def fixed_width_line(r: random.Random, width: int) -> str:
    return "".join(w[:width].ljust(width) for w in r.sample(MIXED_WORDS, r.randint(1, 4)))


def small_multiset(r: random.Random) -> list[int]:
    return [r.randint(0, 4) for _ in range(r.randint(1, 6))]


def spelling(r: random.Random) -> tuple[str, str]:
    """A word and shuffled letters: its own, perhaps short of its first, with two more from another word."""
    word = r.choice(WORDS)
    letters = word[r.randint(0, 1):] + r.choice(WORDS)[:2]
    return word, "".join(r.sample(letters, len(letters)))


def group_anagrams(words: list[str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault("".join(sorted(word)), []).append(word)
    return list(groups.values())


def box(r: random.Random) -> tuple[int, int, int, int]:
    """A rectangle (x1, y1, x2, y2) with x1 < x2 and y1 < y2."""
    x, y = r.randint(0, 6), r.randint(0, 6)
    return (x, y, x + r.randint(1, 5), y + r.randint(1, 5))


def inner_box_sometimes(r: random.Random) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    outer = box(r)
    x1, y1, x2, y2 = outer
    return outer, r.choice((box(r), (x1 + r.randint(0, 1), y1, x2, y2 - r.randint(0, 1))))


def collinear_sometimes(r: random.Random) -> list[tuple[int, int]]:
    """3 or 4 points, half of the time on one line."""
    if r.random() < 0.5:
        (x, y), (dx, dy) = point(r), r.choice(((1, 0), (0, 1), (1, 1), (1, -1), (2, 1), (1, 3)))
        return [(x + t * dx, y + t * dy) for t in r.sample(range(-3, 4), r.randint(3, 4))]
    return [point(r) for _ in range(r.randint(3, 4))]


def polygon(r: random.Random) -> list[tuple[int, int]]:
    """3 to 6 distinct corners in order of their angle around their centre, so the outline never crosses itself."""
    corners = list(dict.fromkeys(point(r) for _ in range(r.randint(3, 6))))
    while len(corners) < 3:
        corners = list(dict.fromkeys(corners + [point(r)]))
    cx, cy = sum(x for x, _ in corners) / len(corners), sum(y for _, y in corners) / len(corners)
    return sorted(corners, key=lambda p: math.atan2(p[1] - cy, p[0] - cx))


def turn(a: tuple[int, int], b: tuple[int, int], c: tuple[int, int]) -> str:
    cross = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0])
    return "left" if cross > 0 else "right" if cross < 0 else "straight"


def neighbours(edges: list[tuple[str, str]]) -> dict[str, set[str]]:
    """Each node of the undirected edges and the nodes it shares an edge with."""
    near: dict[str, set[str]] = {}
    for a, b in edges:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    return near


def components(nodes: list[str], edges: list[tuple[str, str]]) -> int:
    near, left, count = neighbours(edges), set(nodes), 0
    while left:
        count, todo = count + 1, [left.pop()]
        while todo:
            reached = near.get(todo.pop(), set()) & left
            left -= reached
            todo += reached
    return count


def two_coloured(edges: list[tuple[str, str]]) -> bool:
    """Whether one of the ways to paint the nodes in two colours (all tried) gives every edge both colours."""
    colour = lambda node, paint: paint >> NODES.index(node) & 1  # noqa: E731
    return any(all(colour(a, paint) != colour(b, paint) for a, b in edges) for paint in range(2 ** len(NODES)))


def undirected_edges(r: random.Random) -> list[tuple[str, str]]:
    """1 to 6 distinct edges among 3 to 6 nodes, each written either way round."""
    pairs = list(combinations(NODES[: r.randint(3, 6)], 2))
    return [(a, b) if r.random() < 0.5 else (b, a) for a, b in r.sample(pairs, r.randint(1, min(6, len(pairs))))]


def nodes_and_edges(r: random.Random) -> tuple[list[str], list[tuple[str, str]]]:
    nodes = list(NODES[: r.randint(2, 6)])
    return nodes, r.sample(pairs := list(combinations(nodes, 2)), r.randint(1, min(len(nodes) + 2, len(pairs))))


def directed_graph(r: random.Random) -> dict[str, list[str]]:
    """3 to 6 nodes, each pointing at 0 to 2 others."""
    nodes = NODES[: r.randint(3, 6)]
    return {n: sorted(r.sample([m for m in nodes if m != n], r.randint(0, 2))) for n in nodes}


def acyclic_graph(r: random.Random) -> dict[str, list[str]]:
    """3 to 6 nodes in a hidden order, each pointing at 0 to 2 nodes later in it."""
    order = list(NODES[: r.randint(3, 6)])
    r.shuffle(order)
    return dict(sorted((n, sorted(r.sample(order[i + 1:], min(len(order) - i - 1, r.randint(0, 2)))))
                       for i, n in enumerate(order)))


def cyclic_sometimes(r: random.Random) -> dict[str, list[str]]:
    """An acyclic graph, half of the time with one edge u -> v joined by v -> u, which closes a cycle."""
    graph = acyclic_graph(r)
    edges = [(u, v) for u, targets in graph.items() for v in targets]
    if edges and r.random() < 0.5:
        u, v = r.choice(edges)
        graph[v] = sorted(graph[v] + [u])
    return graph


def neighbour_pair(r: random.Random) -> tuple[list[tuple[str, str]], str, str]:
    """Edges and two of their nodes, half of the time two that share a neighbour."""
    edges = undirected_edges(r)
    near = neighbours(edges)
    hubs = [n for n in sorted(near) if len(near[n]) > 1]
    if hubs and r.random() < 0.5:
        return (edges, *r.sample(sorted(near[r.choice(hubs)]), 2))
    return (edges, *r.sample(sorted(near), 2))


def point_and_box(r: random.Random) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """A box and a point, half of the time one inside it or on its border."""
    x1, y1, x2, y2 = outer = box(r)
    inside = (r.randint(x1, x2), r.randint(y1, y2))
    return r.choice((inside, (r.randint(0, 12), r.randint(0, 12)))), outer


def near_boxes(r: random.Random) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """A box and another one moved a little from it (they often overlap)."""
    first, (dx, dy) = box(r), (r.randint(-2, 3), r.randint(-2, 3))
    return first, (first[0] + dx, first[1] + dy, first[0] + dx + r.randint(1, 5), first[1] + dy + r.randint(1, 5))


def chain_graph(r: random.Random, size: int) -> dict[str, list[str]]:
    """`size` nodes, each usually pointing at the next one and now and then at one further on."""
    nodes, graph = NODES[:size], {}
    for i, n in enumerate(nodes):
        ahead = {nodes[i + 1]} if i + 1 < size and r.random() < 0.85 else set()
        graph[n] = sorted(ahead | ({nodes[r.randint(i + 2, size - 1)]} if i + 2 < size and r.random() < 0.3 else set()))
    return graph


def hop_counts(graph: dict[str, list[str]], start: str) -> dict[str, int]:
    """The fewest edges from start to every node it reaches (start itself at 0)."""
    hops, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        for other in graph.get(node, []):
            if other not in hops:
                hops[other] = hops[node] + 1
                queue.append(other)
    return hops


def topological_order(graph: dict[str, list[str]]) -> list[str]:
    """Kahn's order, the alphabetically first free node each time; nodes on a cycle never come free."""
    waiting = Counter(m for targets in graph.values() for m in targets)
    free = [n for n in graph if not waiting[n]]
    heapq.heapify(free)
    order = []
    while free:
        node = heapq.heappop(free)
        order.append(node)
        for other in graph[node]:
            waiting[other] -= 1
            if not waiting[other]:
                heapq.heappush(free, other)
    return order


def bowling_game(r: random.Random) -> list[int]:
    """The rolls of a whole game of ten frames, with strikes and spares now and then."""
    rolls: list[int] = []
    for frame in range(10):
        first = 10 if r.random() < 0.25 else r.randint(0, 9)
        second = 0 if first == 10 else 10 - first if r.random() < 0.3 else r.randint(0, 9 - first)
        rolls += [first] if first == 10 else [first, second]
        if frame == 9 and first == 10:
            bonus = r.randint(0, 10)
            rolls += [bonus, r.randint(0, 10 if bonus == 10 else 10 - bonus)]
        elif frame == 9 and first + second == 10:
            rolls.append(r.randint(0, 10))
    return rolls


def bowling_score(rolls: list[int]) -> int:
    score, i = 0, 0
    for _ in range(10):
        if rolls[i] == 10:
            score, i = score + 10 + rolls[i + 1] + rolls[i + 2], i + 1
        elif rolls[i] + rolls[i + 1] == 10:
            score, i = score + 10 + rolls[i + 2], i + 2
        else:
            score, i = score + rolls[i] + rolls[i + 1], i + 2
    return score


def tic_tac_toe_winner(board: list[str]) -> str:
    cells = "".join(board)
    return next((cells[a] for a, b, c in THREES if cells[a] != "." and cells[a] == cells[b] == cells[c]), "")


def played_board(r: random.Random) -> list[str]:
    """A board after 5 to 9 turns of X and O in turns, stopped at the first three in a row."""
    cells, player = ["."] * 9, "X"
    for square in r.sample(range(9), r.randint(5, 9)):
        cells[square] = player
        if tic_tac_toe_winner(["".join(cells)]):
            break
        player = "O" if player == "X" else "X"
    return ["".join(cells[i: i + 3]) for i in (0, 3, 6)]


def rock_paper_scissors(rounds: list[tuple[str, str]]) -> tuple[int, int, int]:
    first = sum(BEATS[a] == b for a, b in rounds)
    second = sum(BEATS[b] == a for a, b in rounds)
    return (first, second, len(rounds) - first - second)


def dice_ways(total: int, dice: int) -> int:
    ways = {0: 1}  # sum so far -> in how many ways
    for _ in range(dice):
        ways = {t: sum(ways.get(t - face, 0) for face in range(1, 7)) for t in range(max(ways) + 7)}
    return ways.get(total, 0)


def card_total(cards: list[str]) -> int:
    total = sum(11 if c == "A" else 10 if c in ("J", "Q", "K") else int(c) for c in cards)
    aces = cards.count("A")
    while total > 21 and aces:
        total, aces = total - 10, aces - 1
    return total


def poker_dice_hand(dice: list[int]) -> str:
    shape = sorted(Counter(dice).values(), reverse=True)
    if sorted(dice) in ([1, 2, 3, 4, 5], [2, 3, 4, 5, 6]):
        return "straight"
    names = {(5,): "five of a kind", (4, 1): "four of a kind", (3, 2): "full house", (3, 1, 1): "three of a kind",
             (2, 2, 1): "two pairs", (2, 1, 1, 1): "one pair"}
    return names.get(tuple(shape), "nothing")


def five_dice(r: random.Random) -> list[int]:
    faces = r.choice((range(1, 7), r.sample(range(1, 7), r.randint(1, 3)), range(r.randint(1, 2), 7)))
    return [r.choice(faces) for _ in range(5)] if r.random() < 0.8 else r.sample(range(1, 7), 5)


def knight_targets(square: str) -> list[str]:
    file, rank = "abcdefgh".index(square[0]), int(square[1])
    return sorted(f"{'abcdefgh'[file + a]}{rank + b}" for a, b in KNIGHT_JUMPS
                  if 0 <= file + a < 8 and 1 <= rank + b <= 8)


def refuse_overdrafts(start: int, amounts: list[int]) -> list[int]:
    balance, balances = start, []
    for amount in amounts:
        balance += amount if balance + amount >= 0 else 0
        balances.append(balance)
    return balances


def fifo_take(lots: list[tuple[int, int]], quantity: int) -> tuple[int, list[tuple[int, int]]]:
    """The cost of taking `quantity` units from the oldest lots (units, unit price) first, and the lots left."""
    cost, left = 0, []
    for units, price in lots:
        used = min(units, quantity)
        quantity, cost = quantity - used, cost + used * price
        if units > used:
            left.append((units - used, price))
    return cost, left


def lots_and_quantity(r: random.Random) -> tuple[list[tuple[int, int]], int]:
    lots = [(r.randint(1, 5), r.randint(1, 9)) for _ in range(r.randint(1, 4))]
    return lots, r.randint(0, sum(units for units, _ in lots))


def restock_days(start: int, sales: list[int], low: int) -> list[int]:
    stock, days = start, []
    for day, sold in enumerate(sales, 1):
        stock = max(0, stock - sold)
        if stock < low:
            days, stock = days + [day], start
    return days


def transfer_balances(transfers: list[tuple[str, str, int]]) -> dict[str, int]:
    balances: Counter = Counter()
    for payer, payee, amount in transfers:
        balances[payer] -= amount
        balances[payee] += amount
    return dict(sorted((name, balances[name]) for name in {n for t in transfers for n in t[:2]}))


def grown(amount: int, years: int, percent: int) -> int:
    for _ in range(years):
        amount += amount * percent // 100
    return amount


def wrap_words(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def justify(words: list[str], width: int) -> str:
    if len(words) == 1:
        return words[0].ljust(width)
    share, extra = divmod(width - sum(map(len, words)), len(words) - 1)
    return "".join(w + " " * (share + (i < extra)) for i, w in enumerate(words[:-1])) + words[-1]


def fitting_words(r: random.Random, width: int) -> list[str]:
    """1 to 5 words that fit in `width` characters with one space between each two."""
    words = [r.choice(WORDS)]
    while len(words) < r.randint(1, 5) and len(" ".join(words)) + 1 + len(w := r.choice(WORDS)) <= width:
        words.append(w)
    return words


def boxed(lines: list[str]) -> list[str]:
    width = max(map(len, lines))
    return ["*" * (width + 4), *(f"* {line.ljust(width)} *" for line in lines), "*" * (width + 4)]


def in_columns(words: list[str], columns: int) -> list[str]:
    width = max(map(len, words))
    return [" ".join(w.ljust(width) for w in words[i: i + columns]).rstrip() for i in range(0, len(words), columns)]


def from_gray(code: int) -> int:
    number = 0
    while code:
        number, code = number ^ code, code >> 1
    return number


def binary_palindrome(r: random.Random) -> int:
    """A number whose binary digits read the same both ways: some digits, then them mirrored."""
    digits = bin(r.randint(1, 31))[2:]
    return int(digits + digits[::-1][r.randint(0, 1):], 2)
