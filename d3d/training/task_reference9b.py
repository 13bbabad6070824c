"""The ninth task families' reference solutions and example generators: modular arithmetic to signals.

The second half of what `task_families9.py` builds on (the first half, relations to figurate numbers,
is in `task_reference9.py`): its last five families (arithmetic modulo m, packing items into bins and
knapsacks, binary heaps stored in lists, linked lists given by each node's successor, sampled and
two-level signals), with the argument shapes they share (SIZES, HEAP, LINKS, BITS, SAMPLES), the
reference solutions too long for a lambda (inverse_mod, crt, multiplicative_order, first_fit, best_fit,
knapsack, sift_up, pop_min, build_heap, walk, cycle_entry, schmitt, debounce, manchester_decode ...)
and the seeded example generators (moduli, sizes_and_capacity, heap, linked_list, bit_runs ...: each
takes the `random.Random` the task draws from and only draws from it). The module knows nothing about
tasks, rendering or files, so the task files drawn through it regenerate byte for byte. Nothing here
runs on its own: `python -m d3d.training.task_prompts --families ninth` draws tasks built on it.
"""

from __future__ import annotations

import math
import random
from itertools import combinations

from d3d.training.task_families import is_prime

SIZES = (("sizes", "List[int]"), ("capacity", "int"))
WEIGHTS = (("weights", "List[int]"),)
HEAP = (("heap", "List[int]"),)
LINKS = (("next_node", "List[int]"), ("head", "int"))
BITS = (("bits", "List[int]"),)
SAMPLES = (("samples", "List[int]"),)
PRIMES = tuple(p for p in range(2, 32) if is_prime(p))


# modular arithmetic


def inverse_mod(a: int, m: int) -> int:
    return next((x for x in range(m) if a * x % m == 1 % m), -1)


def coprime_moduli(r: random.Random) -> tuple[list[int], list[int]]:
    moduli = r.choice(((3, 5), (4, 7), (5, 6), (3, 8), (2, 9), (3, 4, 5), (2, 5, 7), (7, 9)))
    return [r.randrange(m) for m in moduli], list(moduli)


def crt(remainders: list[int], moduli: list[int]) -> int:
    return next(x for x in range(math.prod(moduli)) if all(x % m == a for a, m in zip(remainders, moduli)))


def multiplicative_order(a: int, m: int) -> int:
    if math.gcd(a, m) != 1:
        return -1
    return next(e for e in range(1, m + 1) if pow(a, e, m) == 1 % m)


def primitive_roots(p: int) -> list[int]:
    return [g for g in range(1, p) if len({pow(g, e, p) for e in range(1, p)}) == p - 1]


def legendre(a: int, p: int) -> int:
    if a % p == 0:
        return 0
    return 1 if any(x * x % p == a % p for x in range(1, p)) else -1


def discrete_log(base: int, target: int, modulus: int) -> int:
    return next((e for e in range(modulus) if pow(base, e, modulus) == target % modulus), -1)


def log_question(r: random.Random) -> tuple[int, int, int]:
    modulus = r.randint(5, 19)
    base = r.randint(2, modulus - 1)
    target = pow(base, r.randint(0, modulus - 2), modulus) if r.random() < 0.6 else r.randrange(modulus)
    return base, target, modulus


def totient(n: int) -> int:
    return sum(math.gcd(i, n) == 1 for i in range(1, n + 1))


# packing


def sizes_and_capacity(r: random.Random) -> tuple[list[int], int]:
    capacity = r.randint(6, 12)
    return [r.randint(1, capacity) for _ in range(r.randint(3, 8))], capacity


def first_fit(sizes: list[int], capacity: int) -> list[list[int]]:
    bins: list[list[int]] = []
    for size in sizes:
        spot = next((b for b in bins if sum(b) + size <= capacity), None)
        if spot is None:
            bins.append([size])
        else:
            spot.append(size)
    return bins


def best_fit(sizes: list[int], capacity: int) -> list[list[int]]:
    bins: list[list[int]] = []
    for size in sizes:
        fits = [b for b in bins if sum(b) + size <= capacity]
        if fits:
            min(fits, key=lambda b: capacity - sum(b)).append(size)  # min keeps the first on a tie
        else:
            bins.append([size])
    return bins


def next_fit_count(sizes: list[int], capacity: int) -> int:
    count, room = 0, 0
    for size in sizes:
        if size > room:
            count, room = count + 1, capacity
        room -= size
    return count


def knapsack(items: list[tuple[int, int]], capacity: int) -> int:
    best = [0] * (capacity + 1)
    for weight, value in items:
        for room in range(capacity, weight - 1, -1):
            best[room] = max(best[room], best[room - weight] + value)
    return best[capacity]


def knapsack_items(r: random.Random) -> tuple[list[tuple[int, int]], int]:
    return [(r.randint(1, 8), r.randint(1, 20)) for _ in range(r.randint(2, 5))], r.randint(4, 15)


def subset_totals(values: list[int]) -> list[int]:
    """The total of every non-empty choice of positions, with repeats."""
    return [sum(c) for size in range(1, len(values) + 1) for c in combinations(values, size)]


def values_and_target(r: random.Random) -> tuple[list[int], int]:
    values = [r.randint(1, 12) for _ in range(r.randint(3, 6))]
    target = sum(r.sample(values, r.randint(1, len(values)))) if r.random() < 0.4 else r.randint(1, 50)
    return values, target


def can_split(values: list[int]) -> bool:
    total = sum(values)
    return total % 2 == 0 and (total == 0 or total // 2 in subset_totals(values))


def split_or_not(r: random.Random) -> tuple[list[int]]:
    left = [r.randint(1, 9) for _ in range(r.randint(1, 3))]
    right = [r.randint(1, 9) for _ in range(r.randint(1, 3))]
    if r.random() < 0.4 and sum(left) != sum(right):
        (left if sum(left) < sum(right) else right).append(abs(sum(left) - sum(right)))
    values = left + right
    r.shuffle(values)
    return (values,)


def most_items(weights: list[int], limit: int) -> int:
    total = count = 0
    for w in sorted(weights):
        if total + w > limit:
            break
        total, count = total + w, count + 1
    return count


def best_load(weights: list[int], limit: int) -> int:
    return max((t for t in subset_totals(weights) if t <= limit), default=0)


# heaps


def sift_up(heap: list[int], value: int) -> tuple[list[int], int]:
    """The heap with value pushed, and the number of swaps that took."""
    out, i, swaps = heap + [value], len(heap), 0
    while i and out[(i - 1) // 2] > out[i]:
        out[(i - 1) // 2], out[i] = out[i], out[(i - 1) // 2]
        i, swaps = (i - 1) // 2, swaps + 1
    return out, swaps


def sift_down(heap: list[int], i: int, arity: int = 2) -> None:
    """Move heap[i] down in place, swapping it with its smallest child (the first on a tie) while that is smaller."""
    while True:
        children = range(arity * i + 1, min(arity * i + arity + 1, len(heap)))
        if not children:
            return
        child = min(children, key=lambda c: heap[c])
        if heap[child] >= heap[i]:
            return
        heap[i], heap[child] = heap[child], heap[i]
        i = child


def build_heap(values: list[int], arity: int = 2) -> list[int]:
    heap = list(values)
    for i in range((len(heap) - 2) // arity, -1, -1):
        sift_down(heap, i, arity)
    return heap


def pop_min(heap: list[int]) -> list[int]:
    out = heap[:-1]
    if out:
        out[0] = heap[-1]
        sift_down(out, 0)
    return out


def is_heap(values: list[int], arity: int = 2) -> bool:
    return all(values[(i - 1) // arity] <= values[i] for i in range(1, len(values)))


def heap(r: random.Random, low: int = 3, high: int = 9) -> list[int]:
    return build_heap([r.randint(1, 30) for _ in range(r.randint(low, high))])


def heap_or_not(r: random.Random, arity: int = 2) -> tuple[list[int]]:
    values = [r.randint(1, 30) for _ in range(r.randint(4, 8))]
    return (build_heap(values, arity) if r.random() < 0.45 else values,)


def heap_and_value(r: random.Random) -> tuple[list[int], int]:
    return heap(r), r.randint(1, 30)


def levels(values: list[int]) -> list[list[int]]:
    return [values[2 ** d - 1: 2 ** (d + 1) - 1] for d in range(len(values).bit_length())]


def running_medians(values: list[int]) -> list[float]:
    out = []
    for i in range(1, len(values) + 1):
        seen = sorted(values[:i])
        out.append(float(seen[i // 2]) if i % 2 else (seen[i // 2 - 1] + seen[i // 2]) / 2)
    return out


def pops(heap_values: list[int], times: int) -> list[int]:
    for _ in range(times):
        heap_values = pop_min(heap_values)
    return heap_values


# linked lists


def linked_list(r: random.Random, low: int = 1, high: int = 6, loop: float = 0.0) -> tuple[list[int], int]:
    """next_node for nodes 0 .. n-1 and a head: a chain of low to high nodes from head, ending in -1 or, with
    probability `loop`, pointing back into itself; nodes off the chain point anywhere."""
    length = r.randint(low, high)
    n = length + r.randint(0, 2)
    chain = r.sample(range(n), length)
    links = [r.choice([-1] + chain) for _ in range(n)]
    for a, b in zip(chain, chain[1:]):
        links[a] = b
    links[chain[-1]] = r.choice(chain) if r.random() < loop else -1
    return links, chain[0]


def walk(links: list[int], head: int) -> list[int]:
    """The nodes from head on, stopping at -1 or before a node already met."""
    out, seen, node = [], set(), head
    while node != -1 and node not in seen:
        out.append(node)
        seen.add(node)
        node = links[node]
    return out


def cycle_entry(links: list[int], head: int) -> int:
    path = walk(links, head)
    return links[path[-1]] if path and links[path[-1]] != -1 else -1


def cycle_length(links: list[int], head: int) -> int:
    path = walk(links, head)
    entry = cycle_entry(links, head)
    return len(path) - path.index(entry) if entry != -1 else 0


def reverse_links(links: list[int], head: int) -> list[int]:
    out = list(links)
    before = -1
    for node in walk(links, head):
        out[node], before = before, node
    return out


def step(links: list[int], head: int, times: int) -> int:
    node = head
    for _ in range(times):
        if node == -1:
            return -1
        node = links[node]
    return node


def from_end(links: list[int], head: int, place: int) -> int:
    path = walk(links, head)
    return path[-place] if place <= len(path) else -1


def unlink(links: list[int], head: int, node: int) -> list[int]:
    out = list(links)
    path = walk(links, head)
    out[path[path.index(node) - 1]] = links[node]
    out[node] = -1
    return out


def list_and_node(r: random.Random) -> tuple[list[int], int, int]:
    links, head = linked_list(r, 2, 6)
    return links, head, r.choice(walk(links, head)[1:])


# signals


def bit_runs(r: random.Random, longest: int = 3, low: int = 4, high: int = 10) -> list[int]:
    """0s and 1s in runs of 1 to `longest`, low to high of them."""
    bits: list[int] = []
    level = r.randint(0, 1)
    target = r.randint(low, high)
    while len(bits) < target:
        bits += [level] * r.randint(1, longest)
        level = 1 - level
    return bits[:target]


def crossings(samples: list[int]) -> list[int]:
    return [i for i in range(1, len(samples)) if samples[i - 1] * samples[i] < 0]


def schmitt(samples: list[int], low: int, high: int) -> list[int]:
    out, state = [], 0
    for s in samples:
        state = 1 if s >= high else 0 if s <= low else state
        out.append(state)
    return out


def schmitt_question(r: random.Random) -> tuple[list[int], int, int]:
    low = r.randint(2, 4)
    return [r.randint(0, 10) for _ in range(r.randint(4, 9))], low, low + r.randint(2, 4)


def debounce(bits: list[int], hold: int) -> list[int]:
    out: list[int] = []
    for i, b in enumerate(bits):
        steady = i >= hold - 1 and len(set(bits[i - hold + 1: i + 1])) == 1
        out.append(b if not out or steady else out[-1])
    return out


def peak_hold(samples: list[int], decay: int) -> list[int]:
    out, level = [], 0
    for s in samples:
        level = max(abs(s), level - decay)
        out.append(level)
    return out


def manchester(bits: list[int]) -> str:
    return "".join("10" if b else "01" for b in bits)


def manchester_decode(code: str) -> list[int]:
    pairs = [code[i: i + 2] for i in range(0, len(code), 2)]
    return [int(p == "10") for p in pairs] if all(p in ("10", "01") for p in pairs) else []


def manchester_code(r: random.Random) -> tuple[str]:
    code = manchester([r.randint(0, 1) for _ in range(r.randint(1, 5))])
    if r.random() < 0.3:
        i = r.randrange(len(code))
        code = code[:i] + ("1" if code[i] == "0" else "0") + code[i + 1:]
    return (code,)


def nrzi(bits: list[int]) -> list[int]:
    out, level = [], 0
    for b in bits:
        level ^= b
        out.append(level)
    return out


def nrzi_decode(levels_in: list[int]) -> list[int]:
    return [int(x != before) for x, before in zip(levels_in, [0] + levels_in)]
