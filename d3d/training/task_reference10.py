"""The tenth task families' reference solutions and example generators: linear algebra to generators.

The first half of what `task_families10.py` builds on (the second half, binary-to-text codecs to
wildcards, is in `task_reference10b.py`): its first five families (small integer matrices as linear
algebra, weighted graphs given as edge lists, partitions of integers and sets, hash functions and
hash tables, pseudo-random generators), with the argument shapes they share (MATRIX, TWO_VECTORS,
WEIGHTED, FLIGHTS, PARTITION, KEYS_AND_SIZE ...), the reference solutions too long for a lambda
(determinant, rank, shortest_distances, spanning_weight, max_flow, integer_partitions,
count_partitions, djb2, linear_probing, lcg_cycle_length, lfsr ...) and the seeded example generators
(square_matrix, weighted_graph, flights_question, partition, probing_keys, lfsr_question ...: each
takes the `random.Random` the task draws from and only draws from it). The module knows nothing about
tasks, rendering or files, so the task files drawn through it regenerate byte for byte. Nothing here
runs on its own: `python -m d3d.training.task_prompts --families tenth` draws tasks built on it.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from fractions import Fraction
from functools import reduce

from d3d.training.task_families import WORDS

MATRIX = (("matrix", "List[List[int]]"),)
TWO_VECTORS = (("u", "List[int]"), ("v", "List[int]"))
WEIGHTED = (("edges", "List[Tuple[int, int, int]]"), ("n", "int"))
ROUTE = WEIGHTED + (("start", "int"), ("goal", "int"))
FLIGHTS = (("flights", "List[Tuple[int, int, int]]"), ("start", "int"), ("goal", "int"))
PARTITION = (("parts", "List[int]"),)
KEYS_AND_SIZE = (("keys", "List[int]"), ("size", "int"))
MODULUS = 1000003  # the polynomial hash's


# linear algebra


def square_matrix(r: random.Random, size: int = 0, span: int = 4) -> list[list[int]]:
    size = size or r.randint(2, 3)
    return [[r.randint(-span, span) for _ in range(size)] for _ in range(size)]


def determinant(m: list[list[int]]) -> int:
    """Laplace expansion along the first row."""
    if len(m) == 1:
        return m[0][0]
    return sum((-1) ** j * m[0][j] * determinant([row[:j] + row[j + 1:] for row in m[1:]]) for j in range(len(m)))


def matrix_product(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    return [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]


def matrix_power(m: list[list[int]], times: int) -> list[list[int]]:
    out = [[int(i == j) for j in range(len(m))] for i in range(len(m))]
    for _ in range(times):
        out = matrix_product(out, m)
    return out


def kronecker(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    return [[x * y for x in row_a for y in row_b] for row_a in a for row_b in b]


def cross(u: list[int], v: list[int]) -> list[int]:
    return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]


def rank(m: list[list[int]]) -> int:
    """Gaussian elimination over the fractions."""
    rows, found = [[Fraction(x) for x in row] for row in m], 0
    for col in range(len(rows[0])):
        pivot = next((i for i in range(found, len(rows)) if rows[i][col]), None)
        if pivot is None:
            continue
        rows[found], rows[pivot] = rows[pivot], rows[found]
        for i in range(len(rows)):
            if i != found and rows[i][col]:
                factor = rows[i][col] / rows[found][col]
                rows[i] = [a - factor * b for a, b in zip(rows[i], rows[found])]
        found += 1
    return found


def low_rank_matrix(r: random.Random) -> tuple[list[list[int]]]:
    """A 2 or 3 x 2 to 4 matrix, a row often a multiple or sum of others, or zero."""
    rows, cols = r.randint(2, 3), r.randint(2, 4)
    m = [[r.randint(-3, 3) for _ in range(cols)] for _ in range(rows)]
    choice = r.random()
    if choice < 0.35:
        m[-1] = [x * r.choice((-2, -1, 2)) for x in m[0]]
    elif choice < 0.55 and rows == 3:
        m[2] = [a + b for a, b in zip(m[0], m[1])]
    elif choice < 0.65:
        m[-1] = [0] * cols
    return (m,)


def is_orthogonal(m: list[list[int]]) -> bool:
    return matrix_product(m, [list(col) for col in zip(*m)]) == matrix_power(m, 0)


def orthogonal_or_not(r: random.Random) -> tuple[list[list[int]]]:
    """A signed permutation matrix, with one entry changed (not just its sign) half of the time."""
    n = r.randint(2, 3)
    order = r.sample(range(n), n)
    m = [[r.choice((-1, 1)) if j == order[i] else 0 for j in range(n)] for i in range(n)]
    if r.random() < 0.5:
        i, j = r.randrange(n), r.randrange(n)
        m[i][j] = r.choice([x for x in (0, 1, -1, 2, -2) if abs(x) != abs(m[i][j])])
    return (m,)


def integer_system(r: random.Random) -> tuple[list[list[int]], list[int]]:
    """A 2 x 2 matrix with a determinant other than 0 and the right-hand side of an integer solution."""
    m = square_matrix(r, 2, 5)
    while not determinant(m):
        m = square_matrix(r, 2, 5)
    x = [r.randint(-6, 6), r.randint(-6, 6)]
    return m, [sum(a * b for a, b in zip(row, x)) for row in m]


def cramer(m: list[list[int]], rhs: list[int]) -> tuple[int, int]:
    d = determinant(m)
    return (rhs[0] * m[1][1] - m[0][1] * rhs[1]) // d, (m[0][0] * rhs[1] - rhs[0] * m[1][0]) // d


def upper_system(r: random.Random) -> tuple[list[list[int]], list[int]]:
    """An upper triangular matrix with diagonal entries of 1 or 2 either sign, and rhs of an integer solution."""
    n = r.randint(2, 4)
    x = [r.randint(-5, 5) for _ in range(n)]
    upper = [[0 if j < i else r.choice((-2, -1, 1, 2)) if j == i else r.randint(-3, 3) for j in range(n)]
             for i in range(n)]
    return upper, [sum(a * b for a, b in zip(row, x)) for row in upper]


def back_substitute(upper: list[list[int]], rhs: list[int]) -> list[int]:
    x = [0] * len(rhs)
    for i in range(len(rhs) - 1, -1, -1):
        x[i] = (rhs[i] - sum(upper[i][j] * x[j] for j in range(i + 1, len(rhs)))) // upper[i][i]
    return x


# weighted graphs


def weighted_graph(r: random.Random, low: int = 3, high: int = 6, heaviest: int = 9,
                   directed: bool = False) -> tuple[list[tuple[int, int, int]], int]:
    """Edges (a, b, weight) on nodes 0 .. n-1 (a < b unless directed), sorted; connected more often than not."""
    n = r.randint(low, high)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and (directed or a < b)]
    chosen = r.sample(pairs, r.randint(n - 1, min(2 * n, len(pairs))))
    return sorted((a, b, r.randint(1, heaviest)) for a, b in chosen), n


def route_question(r: random.Random, heaviest: int = 9) -> tuple[list[tuple[int, int, int]], int, int, int]:
    edges, n = weighted_graph(r, 3, 6, heaviest)
    start, goal = r.sample(range(n), 2)
    return edges, n, start, goal


def tied_routes(r: random.Random) -> tuple[list[tuple[int, int, int]], int, int, int]:
    """A grid of 2 or 3 x 3 nodes, row by row, most edges of weight 1 and a few left out, so that routes tie; start
    in the first row and goal in another column of the last."""
    rows, cols = r.randint(2, 3), 3
    n = rows * cols
    pairs = [(i, i + 1) for i in range(n) if i % cols < cols - 1] + [(i, i + cols) for i in range(n - cols)]
    edges = sorted((a, b, r.choice((1, 1, 1, 1, 2))) for a, b in pairs if r.random() < 0.9)
    start = r.randrange(cols)
    return edges, n, start, n - cols + r.choice([c for c in range(cols) if c != start])


def shortest_distances(edges: list[tuple[int, int, int]], n: int, start: int, directed: bool = False) -> list[int]:
    """Dijkstra: every node's distance from start, -1 for the unreachable."""
    dist, frontier = [-1] * n, [(0, start)]
    while frontier:
        d, node = heapq.heappop(frontier)
        if dist[node] != -1:
            continue
        dist[node] = d
        for a, b, w in edges:
            if a == node and dist[b] == -1:
                heapq.heappush(frontier, (d + w, b))
            if not directed and b == node and dist[a] == -1:
                heapq.heappush(frontier, (d + w, a))
    return dist


def spanning_weight(edges: list[tuple[int, int, int]], n: int) -> int:
    """Kruskal's total, or -1 if the graph is not connected."""
    label, total, joined = list(range(n)), 0, 0
    for a, b, w in sorted(edges, key=lambda e: e[2]):
        if label[a] != label[b]:
            old = label[b]
            label = [label[a] if x == old else x for x in label]
            total, joined = total + w, joined + 1
    return total if joined == n - 1 else -1


def widest_path(edges: list[tuple[int, int, int]], n: int, start: int, goal: int) -> int:
    for width in sorted({w for _, _, w in edges}, reverse=True):
        if shortest_distances([e for e in edges if e[2] >= width], n, start)[goal] != -1:
            return width
    return 0


def count_shortest_paths(edges: list[tuple[int, int, int]], n: int, start: int, goal: int) -> int:
    dist = shortest_distances(edges, n, start)
    ways = [0] * n
    ways[start] = 1
    for node in sorted((i for i in range(n) if dist[i] != -1), key=lambda i: dist[i]):
        for a, b, w in edges:
            for here, there in ((a, b), (b, a)):
                if here == node and dist[node] + w == dist[there]:
                    ways[there] += ways[node]
    return ways[goal]


def has_negative_cycle(edges: list[tuple[int, int, int]], n: int) -> bool:
    """Bellman-Ford from every node at once: a change in round n means a negative cycle."""
    dist = [0] * n
    for _ in range(n):
        changed = False
        for a, b, w in edges:
            if dist[a] + w < dist[b]:
                dist[b], changed = dist[a] + w, True
        if not changed:
            return False
    return True


def signed_graph(r: random.Random) -> tuple[list[tuple[int, int, int]], int]:
    """Directed edges with weights from -2 to 9, a two-edge cycle of negative total planted half of the time."""
    edges, n = weighted_graph(r, 3, 5, directed=True)
    weights = {(a, b): w - 3 if r.random() < 0.3 else w for a, b, w in edges}
    if r.random() < 0.5:
        a, b = r.sample(range(n), 2)
        weights[(a, b)], weights[(b, a)] = -5, r.randint(1, 4)
    return sorted((a, b, w) for (a, b), w in weights.items()), n


def has_euler_trail(edges: list[tuple[int, int]]) -> bool:
    degree = Counter(x for edge in edges for x in edge)
    reached, frontier = set(), [edges[0][0]]
    while frontier:
        node = frontier.pop()
        if node not in reached:
            reached.add(node)
            frontier += [b if a == node else a for a, b in edges if node in (a, b)]
    return reached == set(degree) and sum(d % 2 for d in degree.values()) in (0, 2)


def trail_or_not(r: random.Random) -> tuple[list[tuple[int, int]]]:
    """5 to 9 random edges on 6 nodes 70% of the time, otherwise the edges of a random trail on 4 or 5 nodes."""
    if r.random() < 0.7:
        return (sorted(r.sample([(a, b) for a in range(6) for b in range(a + 1, 6)], r.randint(5, 9))),)
    n = r.randint(4, 5)
    node, used = r.randrange(n), set()
    for _ in range(r.randint(3, 7)):
        options = [b for b in range(n) if b != node and tuple(sorted((node, b))) not in used]
        if not options:
            break
        step = r.choice(options)
        used.add(tuple(sorted((node, step))))
        node = step
    return (sorted(used),)


def cheapest_within(flights: list[tuple[int, int, int]], start: int, goal: int, hops: int) -> int:
    cost = {start: 0}
    for _ in range(hops):
        reached = dict(cost)
        for a, b, price in flights:
            if a in cost and cost[a] + price < reached.get(b, float("inf")):
                reached[b] = cost[a] + price
        cost = reached
    return cost.get(goal, -1)


def flights_question(r: random.Random, hops: int) -> tuple[list[tuple[int, int, int]], int, int]:
    """A cheap chain of about `hops` flights from start to goal, often a dearer shortcut, and a few others."""
    n = hops + 3
    chain = r.sample(range(n), r.randint(max(2, hops - 1), hops + 1) + 1)
    prices = {(a, b): r.randint(1, 3) for a, b in zip(chain, chain[1:])}
    if r.random() < 0.6:
        middle = r.choice([x for x in range(n) if x not in (chain[0], chain[-1])])
        prices[(chain[0], middle)], prices[(middle, chain[-1])] = r.randint(5, 9), r.randint(5, 9)
    for _ in range(r.randint(1, 3)):
        a, b = r.sample(range(n), 2)
        prices.setdefault((a, b), r.randint(1, 9))
    return sorted((a, b, p) for (a, b), p in prices.items()), chain[0], chain[-1]


def pipes(r: random.Random) -> tuple[list[tuple[int, int, int]], int]:
    """Pipes (a, b, capacity) on 3 to 5 nodes, most from a lower node to a higher one, so that something flows."""
    n = r.randint(3, 5)
    pairs = [(a, b) for a in range(n) for b in range(n) if a < b or (a != b and r.random() < 0.15)]
    chosen = r.sample(pairs, r.randint(n - 1, min(2 * n, len(pairs))))
    return sorted((a, b, r.randint(1, 9)) for a, b in chosen), n


def max_flow(edges: list[tuple[int, int, int]], n: int) -> int:
    """Edmonds-Karp from node 0 to node n - 1."""
    room = [[0] * n for _ in range(n)]
    for a, b, c in edges:
        room[a][b] += c
    flow = 0
    while True:
        parent, queue = {0: 0}, [0]
        for node in queue:  # the loop reads what it appends: a breadth-first search
            for nb in range(n):
                if room[node][nb] > 0 and nb not in parent:
                    parent[nb] = node
                    queue.append(nb)
        if n - 1 not in parent:
            return flow
        path, node = [], n - 1
        while node:
            path.append((parent[node], node))
            node = parent[node]
        push = min(room[a][b] for a, b in path)
        for a, b in path:
            room[a][b], room[b][a] = room[a][b] - push, room[b][a] + push
        flow += push


# partitions


def integer_partitions(n: int, largest: int = 0) -> list[list[int]]:
    """Every partition of n into parts of at most `largest` (n when 0), non-increasing, largest first part first."""
    largest = largest or n
    if n == 0:
        return [[]]
    return [[part] + rest for part in range(min(n, largest), 0, -1) for rest in integer_partitions(n - part, part)]


def count_partitions(n: int, parts: range | list[int], distinct: bool = False) -> int:
    """How many ways n is a sum of the allowed parts (each at most once when distinct), order ignored."""
    ways = [1] + [0] * n
    for p in parts:
        for total in range(n, p - 1, -1) if distinct else range(p, n + 1):
            ways[total] += ways[total - p]
    return ways[n]


def partition(r: random.Random, low: int = 1, high: int = 12) -> list[int]:
    left, parts = r.randint(low, high), []
    while left:
        parts.append(r.randint(1, min(left, parts[-1] if parts else left)))
        left -= parts[-1]
    return parts


def blocky_partition(r: random.Random) -> list[int]:
    """1 to 6 parts of 1 to 6, non-increasing, so that Durfee squares of 1 to 4 all turn up."""
    return sorted((r.randint(1, 6) for _ in range(r.randint(1, 6))), reverse=True)


def conjugate(parts: list[int]) -> list[int]:
    return [sum(p > i for p in parts) for i in range(parts[0])]


def stirling2(n: int, blocks: int) -> int:
    row = [1] + [0] * blocks  # S(0, j)
    for _ in range(n):
        row = [0] + [j * row[j] + row[j - 1] for j in range(1, blocks + 1)]
    return row[blocks]


def derangements(n: int) -> int:
    a, b = 1, 0  # D(0), D(1)
    for i in range(2, n + 1):
        a, b = b, (i - 1) * (a + b)
    return a if n == 0 else b


# hashing


def djb2(text: str) -> int:
    return reduce(lambda h, c: (h * 33 + ord(c)) % 2 ** 32, text, 5381)


def fnv1a(text: str) -> int:
    return reduce(lambda h, b: ((h ^ b) * 16777619) % 2 ** 32, text.encode(), 2166136261)


def java_hash(text: str) -> int:
    h = reduce(lambda h, c: (31 * h + ord(c)) % 2 ** 32, text, 0)
    return h - 2 ** 32 if h >= 2 ** 31 else h


def polynomial_hash(text: str, base: int) -> int:
    return reduce(lambda h, c: (h * base + ord(c)) % MODULUS, text, 0)


def linear_probing(keys: list[int], size: int) -> tuple[list[int], list[int]]:
    """The table (-1 for an empty slot) and how many slots each key looked at."""
    table, probes = [-1] * size, []
    for key in keys:
        slot, looked = key % size, 1
        while table[slot] != -1:
            slot, looked = (slot + 1) % size, looked + 1
        table[slot] = key
        probes.append(looked)
    return table, probes


def quadratic_probing(keys: list[int], size: int) -> list[int]:
    table = [-1] * size
    for key in keys:
        slot = next((s for s in ((key + i * i) % size for i in range(size)) if table[s] == -1), None)
        if slot is not None:
            table[slot] = key
    return table


def probing_keys(r: random.Random, size: int, most: int = 0) -> list[int]:
    """Distinct keys from 0 to 60 for a table of `size`, at most `most` (size - 1 when 0), often colliding."""
    return r.sample(range(61), r.randint(3, most or size - 1))


def probing_question(r: random.Random, half: bool = False) -> tuple[list[int], int]:
    """Keys and a table size; with `half`, a prime size that the keys fill less than half of."""
    size = r.choice((7, 11, 13)) if half else r.randint(5, 11)
    return probing_keys(r, size, size // 2 if half else 0), size


def ring_owners(nodes: list[int], keys: list[int]) -> list[int]:
    ring = sorted(nodes)
    return [next((p for p in ring if p >= key), ring[0]) for key in keys]


def capacity_after(inserts: int, capacity: int) -> int:
    for count in range(1, inserts + 1):
        while 4 * count > 3 * capacity:
            capacity *= 2
    return capacity


def sum_collisions(words: list[str], m: int) -> list[tuple[int, int]]:
    codes = [sum(map(ord, w)) % m for w in words]
    return [(i, j) for i in range(len(words)) for j in range(i + 1, len(words)) if codes[i] == codes[j]]


def distinct_words(r: random.Random) -> tuple[list[str]]:
    return (r.sample(WORDS, r.randint(4, 7)),)


# pseudo-random generators


def lcg_terms(seed: int, multiplier: int, increment: int, modulus: int, count: int) -> list[int]:
    out, x = [], seed
    for _ in range(count):
        x = (multiplier * x + increment) % modulus
        out.append(x)
    return out


def lcg_cycle_length(multiplier: int, increment: int, seed: int, modulus: int) -> int:
    seen, x = {}, seed % modulus
    while x not in seen:
        seen[x] = len(seen)
        x = (multiplier * x + increment) % modulus
    return len(seen) - seen[x]


def middle_square(seed: int, count: int) -> list[int]:
    out = []
    for _ in range(count):
        seed = int(f"{seed * seed:08d}"[2:6])
        out.append(seed)
    return out


def lfsr(state: list[int], taps: list[int], count: int) -> list[int]:
    out = []
    for _ in range(count):
        out.append(state[-1])
        state = [reduce(lambda a, t: a ^ state[t], taps, 0)] + state[:-1]
    return out


def lfsr_question(r: random.Random) -> tuple[list[int], list[int], int]:
    width = r.randint(3, 5)
    state = [r.randint(0, 1) for _ in range(width)]
    state[r.randrange(width)] = 1
    return state, sorted(r.sample(range(width), r.randint(1, 3))), r.randint(4, 9)


def xorshift32(x: int) -> int:
    x ^= (x << 13) % 2 ** 32
    x ^= x >> 17
    return x ^ (x << 5) % 2 ** 32


def park_miller(seed: int, count: int) -> list[int]:
    out = []
    for _ in range(count):
        seed = 16807 * seed % 2147483647
        out.append(seed)
    return out


def blum_blum_shub(seed: int, modulus: int, count: int) -> list[int]:
    out = []
    for _ in range(count):
        seed = seed * seed % modulus
        out.append(seed % 2)
    return out


def bbs_question(r: random.Random) -> tuple[int, int, int]:
    modulus = r.choice((77, 209, 253, 437, 589, 713))  # products of two primes, each 3 above a multiple of 4
    seed = r.choice([s for s in range(2, 40) if all(s % p for p in (7, 11, 19, 23, 29, 31))])
    return seed, modulus, r.randint(4, 10)


def fisher_yates(items: list[str], draws: list[int]) -> list[str]:
    out = list(items)
    for i, j in zip(range(len(out) - 1, 0, -1), draws):
        out[i], out[j] = out[j], out[i]
    return out


def shuffle_question(r: random.Random) -> tuple[list[str], list[int]]:
    n = r.randint(3, 6)
    return list("abcdef"[:n]), [r.randint(0, i) for i in range(n - 1, 0, -1)]


def weighted_pick(weights: list[int], draw: int) -> int:
    total = 0
    for i, w in enumerate(weights):
        total += w
        if draw < total:
            return i
    return len(weights) - 1


def pick_question(r: random.Random) -> tuple[list[int], int]:
    weights = [r.randint(1, 6) for _ in range(r.randint(2, 5))]
    return weights, r.randrange(sum(weights))
