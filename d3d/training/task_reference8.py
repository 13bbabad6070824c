"""The eighth task families' reference solutions and example generators: numerals to addresses.

The first half of what `task_families8.py` builds on (the second half, markup to statistics, is in
`task_reference8b.py`): its first five families (unusual numeral systems, permutations of 0 .. n-1,
trees as parent lists, DNA strings, IPv4 addresses), with the argument shapes they share
(PERMUTATION, PARENTS, DNA, ADDRESS, CIDR), the reference solutions too long for a lambda
(negative_base, balanced_ternary, factoradic, cycles, lexicographic_rank, node_depth, common_ancestor,
consensus, reading_frame, in_subnet ...) and the seeded example generators (permutation, parent_list,
dna, address, cidr ...: each takes the `random.Random` the task draws from and only draws from it).
The module knows nothing about tasks, rendering or files, so the task files drawn through it
regenerate byte for byte. Nothing here runs on its own: `python -m d3d.training.task_prompts
--families eighth` draws tasks built on it.
"""

from __future__ import annotations

import math
import random
from collections import Counter

from d3d.training.task_families import Task  # noqa: F401  (imports run one way: this module sits below task_prompts)

PERMUTATION = (("perm", "List[int]"),)
PARENTS = (("parents", "List[int]"),)
DNA = (("dna", "str"),)
ADDRESS = (("address", "str"),)
CIDR = (("network", "str"),)
COMPLEMENT = {"A": "T", "T": "A", "C": "G", "G": "C"}
STOPS = ("TAA", "TAG", "TGA")


# numerals


def negative_base(n: int, base: int) -> str:
    """n's digits in base -base."""
    if n == 0:
        return "0"
    digits = []
    while n:
        n, d = divmod(n, -base)
        if d < 0:
            n, d = n + 1, d + base
        digits.append(str(d))
    return "".join(reversed(digits))


def from_negabinary(digits: str) -> int:
    return sum(int(d) * (-2) ** i for i, d in enumerate(reversed(digits)))


def balanced_ternary(n: int) -> str:
    if n == 0:
        return "0"
    out = []
    while n:
        d = n % 3
        if d == 2:
            out.append("-")
            n = n // 3 + 1
        else:
            out.append("+" if d == 1 else "0")
            n //= 3
    return "".join(reversed(out))


def from_balanced_ternary(digits: str) -> int:
    value = 0
    for d in digits:
        value = 3 * value + {"+": 1, "0": 0, "-": -1}[d]
    return value


def factoradic(n: int) -> list[int]:
    """n's digits in the factorial number system, the last digit (for 0!) always 0."""
    digits, radix = [], 1
    while True:
        n, d = divmod(n, radix)
        digits.append(d)
        radix += 1
        if n == 0:
            return digits[::-1]


def from_factoradic(digits: list[int]) -> int:
    return sum(d * math.factorial(i) for i, d in enumerate(reversed(digits)))


def bijective(n: int, base: int) -> str:
    """n in bijective base `base` (digits 1 .. base), '' for 0."""
    out = []
    while n > 0:
        n, d = divmod(n - 1, base)
        out.append(str(d + 1))
    return "".join(reversed(out))


def tally_marks(n: int) -> str:
    return " ".join(["||||/"] * (n // 5) + (["|" * (n % 5)] if n % 5 else []))


def sexagesimal(n: int) -> list[int]:
    digits = []
    while True:
        n, d = divmod(n, 60)
        digits.append(d)
        if n == 0:
            return digits[::-1]


# permutations


def permutation(r: random.Random, low: int = 2, high: int = 6) -> list[int]:
    perm = list(range(r.randint(low, high)))
    r.shuffle(perm)
    return perm


def cycles(perm: list[int]) -> list[list[int]]:
    """The cycles of i -> perm[i], each from its smallest element, by that element."""
    seen, out = set(), []
    for start in range(len(perm)):
        if start not in seen:
            cycle, i = [], start
            while i not in seen:
                seen.add(i)
                cycle.append(i)
                i = perm[i]
            out.append(cycle)
    return out


def permutation_order(perm: list[int]) -> int:
    return math.lcm(*(len(c) for c in cycles(perm)))


def next_permutation(perm: list[int]) -> list[int]:
    """The next arrangement in lexicographic order, or the first (sorted) after the last."""
    p = list(perm)
    i = len(p) - 2
    while i >= 0 and p[i] >= p[i + 1]:
        i -= 1
    if i < 0:
        return sorted(p)
    j = len(p) - 1
    while p[j] <= p[i]:
        j -= 1
    p[i], p[j] = p[j], p[i]
    return p[:i + 1] + p[i + 1:][::-1]


def lexicographic_rank(perm: list[int]) -> int:
    rank = 0
    for i, x in enumerate(perm):
        rank += sum(y < x for y in perm[i + 1:]) * math.factorial(len(perm) - i - 1)
    return rank


def permutation_power(perm: list[int], times: int) -> list[int]:
    out = list(range(len(perm)))
    for _ in range(times):
        out = [perm[i] for i in out]
    return out


def involution_or_not(r: random.Random) -> tuple[list[int]]:
    if r.random() < 0.5:
        return (permutation(r),)
    perm = list(range(r.randint(2, 6)))
    for a, b in zip(*[iter(r.sample(perm, len(perm)))] * 2):
        if r.random() < 0.7:
            perm[a], perm[b] = b, a
    return (perm,)


# trees


def parent_list(r: random.Random, low: int = 3, high: int = 8) -> list[int]:
    """A random tree on nodes 0 .. n-1 as each node's parent, -1 for the root."""
    order = permutation(r, low, high)
    parents = [0] * len(order)
    parents[order[0]] = -1
    for i, node in enumerate(order[1:], 1):
        parents[node] = order[r.randrange(i)]
    return parents


def deep_parent_list(r: random.Random, depth: int) -> list[int]:
    """A tree some of whose nodes often lie `depth` steps below the root: parents come from the last two added."""
    order = permutation(r, depth + 1, depth + 5)
    parents = [0] * len(order)
    parents[order[0]] = -1
    for i, node in enumerate(order[1:], 1):
        parents[node] = order[max(0, i - r.randint(1, 2))]
    return parents


def path_to_root(parents: list[int], node: int) -> list[int]:
    path = [node]
    while parents[path[-1]] != -1:
        path.append(parents[path[-1]])
    return path


def node_depth(parents: list[int], node: int) -> int:
    return len(path_to_root(parents, node)) - 1


def children_lists(parents: list[int]) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in parents]
    for node, parent in enumerate(parents):
        if parent != -1:
            out[parent].append(node)
    return out


def subtree_size(parents: list[int], node: int) -> int:
    return sum(node in path_to_root(parents, other) for other in range(len(parents)))


def common_ancestor(parents: list[int], a: int, b: int) -> int:
    above = set(path_to_root(parents, a))
    return next(x for x in path_to_root(parents, b) if x in above)


def tree_and_node(r: random.Random) -> tuple[list[int], int]:
    parents = parent_list(r)
    return parents, r.randrange(len(parents))


def tree_and_two_nodes(r: random.Random) -> tuple[list[int], int, int]:
    parents = parent_list(r)
    return parents, r.randrange(len(parents)), r.randrange(len(parents))


# DNA


def dna(r: random.Random, low: int = 4, high: int = 14, letters: str = "ACGT") -> str:
    return "".join(r.choice(letters) for _ in range(r.randint(low, high)))


def kmer_counts(seq: str, size: int) -> dict[str, int]:
    return dict(Counter(seq[i: i + size] for i in range(len(seq) - size + 1)))


def motif_positions(seq: str, motif: str) -> list[int]:
    return [i for i in range(len(seq) - len(motif) + 1) if seq[i: i + len(motif)] == motif]


def longest_run(seq: str) -> int:
    best = run = 0
    for i, c in enumerate(seq):
        run = run + 1 if i and seq[i - 1] == c else 1
        best = max(best, run)
    return best


def consensus(reads: list[str]) -> str:
    return "".join(max("ACGT", key=lambda c: column.count(c)) for column in zip(*reads))


def reading_frame(seq: str) -> list[str]:
    """The codons from the first ATG up to and including the first stop codon in frame (or the end)."""
    start = seq.find("ATG")
    if start < 0:
        return []
    out = []
    for i in range(start, len(seq) - 2, 3):
        out.append(seq[i: i + 3])
        if out[-1] in STOPS:
            break
    return out


def coding_dna(r: random.Random) -> str:
    body = "".join(r.choice(("GCA", "TTC", "ATG", "CCG", "TAA", "GGT", "TGA")) for _ in range(r.randint(1, 4)))
    return dna(r, 0, 3) + r.choice(("ATG", "ATG", "")) + body + dna(r, 0, 2)


# IPv4 addresses


def to_integer(address: str) -> int:
    value = 0
    for part in address.split("."):
        value = value * 256 + int(part)
    return value


def to_address(value: int) -> str:
    return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


def netmask(prefix: int) -> str:
    return to_address((0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF)


def network_bounds(network: str) -> tuple[int, int]:
    """The first and last address of 'a.b.c.d/p', as integers."""
    address, prefix = network.split("/")
    size = 1 << (32 - int(prefix))
    first = to_integer(address) // size * size
    return first, first + size - 1


def in_subnet(address: str, network: str) -> bool:
    first, last = network_bounds(network)
    return first <= to_integer(address) <= last


def is_private(address: str) -> bool:
    a, b = (int(x) for x in address.split(".")[:2])
    return a == 10 or (a == 172 and 16 <= b <= 31) or (a == 192 and b == 168)


def first_hosts(network: str, count: int) -> list[str]:
    first, last = network_bounds(network)
    return [to_address(v) for v in range(first + 1, min(first + 1 + count, last))]


def address(r: random.Random) -> str:
    head = r.choice(((10,), (172, r.randint(10, 35)), (192, 168), (r.randint(1, 223),)))
    return ".".join(map(str, head + tuple(r.randint(0, 255) for _ in range(4 - len(head)))))


def cidr(r: random.Random) -> str:
    return f"{address(r)}/{r.choice((8, 16, 20, 24, 26, 28, 30, r.randint(8, 30)))}"


def address_and_network(r: random.Random) -> tuple[str, str]:
    network = cidr(r)
    first, last = network_bounds(network)
    inside = to_address(r.randint(first, last))
    return r.choice((inside, address(r))), network


def mac_address(r: random.Random) -> str:
    parts = [f"{r.randrange(256):02x}" for _ in range(6)]
    if r.random() < 0.5:
        parts = [p.upper() for p in parts]
    sep = r.choice((":", "-", "."))
    if sep == ".":
        return ".".join("".join(parts[i: i + 2]) for i in (0, 2, 4))
    return sep.join(parts)


def normalize_mac(text: str) -> str:
    digits = "".join(c for c in text.lower() if c in "0123456789abcdef")
    return ":".join(digits[i: i + 2] for i in range(0, 12, 2))
