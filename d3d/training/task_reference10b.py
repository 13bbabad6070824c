"""The tenth task families' reference solutions and example generators: codecs to wildcards.

The second half of what `task_families10.py` builds on (the first half, linear algebra to generators,
is in `task_reference10.py`): its last five families (binary-to-text codecs and Unicode encodings,
signalling and phonetic alphabets, classic puzzles, impartial games, wildcard and pattern matching),
with the argument shapes and tables they share (HEAPS, GRID, MORSE, NATO, KEYPAD, KEYBOARD_ROWS,
SOUNDEX ...), the reference solutions too long for a lambda (hex_dump, quoted_printable, utf16_units,
soundex, multitap, slide_left, line_flips, count_queens, knight_distance, grundy_values, moore_wins,
first_total, wythoff_cold, class_match, expand_braces ...) and the seeded example generators (mixed_text,
code_points, magic_or_not, latin_or_not, sudoku_grid, heaps_or_losing, glob_question ...: each takes
the `random.Random` the task draws from and only draws from it). The module knows nothing about
tasks, rendering or files, so the task files drawn through it regenerate byte for byte. Nothing here
runs on its own: `python -m d3d.training.task_prompts --families tenth` draws tasks built on it.
"""

from __future__ import annotations

import random
import re
from functools import reduce
from itertools import product
from operator import xor

from d3d.training.task_families import WORDS, sentence
from d3d.training.task_reference5 import KNIGHT_JUMPS

HEAPS = (("heaps", "List[int]"),)
GRID = (("grid", "List[List[int]]"),)
MORSE = dict(zip("abcdefghijklmnopqrstuvwxyz", (
    ".-", "-...", "-.-.", "-..", ".", "..-.", "--.", "....", "..", ".---", "-.-", ".-..", "--", "-.", "---", ".--.",
    "--.-", ".-.", "...", "-", "..-", "...-", ".--", "-..-", "-.--", "--..")))
NATO = ("Alfa", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliett", "Kilo", "Lima",
        "Mike", "November", "Oscar", "Papa", "Quebec", "Romeo", "Sierra", "Tango", "Uniform", "Victor", "Whiskey",
        "Xray", "Yankee", "Zulu")
KEYPAD = ("abc", "def", "ghi", "jkl", "mno", "pqrs", "tuv", "wxyz")  # on the keys 2 to 9
KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
SOUNDEX = {c: str(d) for d, letters in enumerate(("bfpv", "cgjkqsxz", "dt", "l", "mn", "r"), 1) for c in letters}
SURNAMES = ("Robert", "Rupert", "Rubin", "Ashcraft", "Tymczak", "Pfister", "Honeyman", "Lee", "Washington",
            "Jackson", "Gutierrez", "Lloyd", "Schmidt", "Burroughs", "Ellery", "Kant", "Knuth", "Ladd", "Lukasiewicz")
T9_WORDS = ("home", "good", "gone", "hood", "hoof", "book", "cool", "kiss", "lips", "cat", "act", "bat", "tree",
            "used", "vase")
ACCENTED = ("café", "naïve", "über", "señor", "déjà", "a=b", "x=1", "crème")
LO_SHU = [[2, 7, 6], [9, 5, 1], [4, 3, 8]]
DURER = [[16, 3, 2, 13], [5, 10, 11, 8], [9, 6, 7, 12], [4, 15, 14, 1]]
SHIDOKU = [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]
FILE_NAMES = ("data.csv", "notes.txt", "report1.csv", "report2.txt", "image.png", "main.py", "test_main.py",
              "readme.md", "data2.csv", "photo.jpg", "setup.py", "log.txt")


# codecs


def mixed_text(r: random.Random) -> str:
    """A few words, now and then one with an accent or an '=' sign."""
    return " ".join(r.choice(ACCENTED) if r.random() < 0.3 else r.choice(WORDS) for _ in range(r.randint(1, 4)))


def hex_dump(text: str, width: int) -> list[str]:
    data = text.encode()
    return [f"{i:04x}: " + " ".join(f"{b:02x}" for b in data[i: i + width]) for i in range(0, len(data), width)]


def quoted_printable(text: str) -> str:
    return "".join(chr(b) if 33 <= b <= 126 and b != 61 or b == 32 else f"={b:02X}" for b in text.encode())


def code_points(r: random.Random) -> list[int]:
    """1 to 4 code points from ASCII letters, Latin-1, Greek, CJK, the euro sign and emoji."""
    ranges = ((65, 122), (192, 255), (913, 969), (19968, 20000), (8364, 8364), (128512, 128591))
    return [r.randint(*r.choice(ranges)) for _ in range(r.randint(1, 4))]


def utf16_units(point: int) -> list[int]:
    if point < 0x10000:
        return [point]
    point -= 0x10000
    return [0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF)]


# alphabets


def morse(text: str) -> str:
    return " / ".join(" ".join(MORSE[c] for c in word) for word in text.split())


def morse_units(text: str) -> int:
    """Dots 1, dashes 3, gaps of 1 inside a letter, 3 between letters and 7 between words."""
    words = [[MORSE[c] for c in word] for word in text.split()]
    letter = lambda code: sum(1 if s == "." else 3 for s in code) + len(code) - 1  # noqa: E731
    return sum(sum(map(letter, w)) + 3 * (len(w) - 1) for w in words) + 7 * (len(words) - 1)


def soundex(name: str) -> str:
    name = name.lower()
    out, last = name[0].upper(), SOUNDEX.get(name[0], "")
    for c in name[1:]:
        code = SOUNDEX.get(c, "")
        if code and code != last:
            out += code
        if c not in "hw":  # h and w do not separate two equal codes; vowels do
            last = code
    return (out + "000")[:4]


def key_of(c: str) -> str:
    return str(next(i for i, letters in enumerate(KEYPAD, 2) if c in letters))


def multitap(word: str) -> str:
    out = ""
    for c in word:
        key = key_of(c)
        presses = key * (KEYPAD[int(key) - 2].index(c) + 1)
        out += (" " if out and out[-1] == key else "") + presses
    return out


def keyboard_shift(text: str, places: int) -> str:
    rows = {c: row for row in KEYBOARD_ROWS for c in row}
    return "".join(rows[c][(rows[c].index(c) + places) % len(rows[c])] if c in rows else c for c in text)


def t9_question(r: random.Random) -> tuple[str, list[str]]:
    words = r.sample(T9_WORDS, r.randint(3, 6))
    word = r.choice(words) if r.random() < 0.7 else r.choice(T9_WORDS)
    return "".join(key_of(c) for c in word), words


# puzzles


def lines_of(grid: list[list[int]]) -> list[list[int]]:
    """Rows, columns and the two diagonals of a square grid."""
    n = len(grid)
    return grid + [list(col) for col in zip(*grid)] + [[grid[i][i] for i in range(n)],
                                                        [grid[i][n - 1 - i] for i in range(n)]]


def turned(r: random.Random, grid: list[list[int]]) -> list[list[int]]:
    """The grid rotated a quarter turn 0 to 3 times and mirrored half of the time."""
    for _ in range(r.randint(0, 3)):
        grid = [list(row) for row in zip(*grid[::-1])]
    return [row[::-1] for row in grid] if r.random() < 0.5 else grid


def nudged(r: random.Random, grid: list[list[int]], values: range) -> list[list[int]]:
    """The grid with one cell changed to another value from `values`."""
    grid = [list(row) for row in grid]
    i, j = r.randrange(len(grid)), r.randrange(len(grid[0]))
    grid[i][j] = r.choice([v for v in values if v != grid[i][j]])
    return grid


def magic_or_not(r: random.Random) -> tuple[list[list[int]]]:
    square = turned(r, r.choice((LO_SHU, LO_SHU, DURER)))
    scale, shift = r.randint(1, 2), r.randint(0, 3)
    square = [[scale * x + shift for x in row] for row in square]
    return (nudged(r, square, range(1, 20)) if r.random() < 0.5 else square,)


def latin_or_not(r: random.Random) -> tuple[list[list[int]]]:
    n = r.randint(2, 4)
    rows, cols, symbols = r.sample(range(n), n), r.sample(range(n), n), r.sample(range(1, n + 1), n)
    square = [[symbols[(rows[i] + cols[j]) % n] for j in range(n)] for i in range(n)]
    return (nudged(r, square, range(1, n + 1)) if r.random() < 0.5 else square,)


def sudoku_consistent(grid: list[list[int]]) -> bool:
    boxes = [[grid[i][j] for i in range(a, a + 2) for j in range(b, b + 2)] for a in (0, 2) for b in (0, 2)]
    groups = grid + [list(col) for col in zip(*grid)] + boxes
    return all(len([x for x in g if x]) == len({x for x in g if x}) for g in groups)


def sudoku_grid(r: random.Random) -> tuple[list[list[int]]]:
    """A solved 4 x 4 sudoku with its digits renamed, 6 to 10 cells emptied, one of them refilled half of the time."""
    digits = r.sample(range(1, 5), 4)
    grid = [[digits[x - 1] for x in row] for row in turned(r, SHIDOKU)]
    empty = r.sample([(i, j) for i in range(4) for j in range(4)], r.randint(6, 10))
    for i, j in empty:
        grid[i][j] = 0
    if r.random() < 0.5:  # a digit its row already has
        i, j = r.choice(empty)
        grid[i][j] = r.choice([x for x in grid[i] if x] or [1])
    return (grid,)


def hanoi(n: int, source: str, target: str) -> list[tuple[str, str]]:
    if n == 0:
        return []
    spare = next(p for p in "ABC" if p not in (source, target))
    return hanoi(n - 1, source, spare) + [(source, target)] + hanoi(n - 1, spare, target)


def slide_left(row: list[int]) -> list[int]:
    tiles, out, i = [x for x in row if x], [], 0
    while i < len(tiles):
        merged = i + 1 < len(tiles) and tiles[i] == tiles[i + 1]
        out.append(tiles[i] * (2 if merged else 1))
        i += 2 if merged else 1
    return out + [0] * (len(row) - len(out))


def line_flips(line: str, index: int, player: str) -> int:
    other, total = "W" if player == "B" else "B", 0
    for step in (-1, 1):
        i = index + step
        while 0 <= i < len(line) and line[i] == other:
            i += step
        if 0 <= i < len(line) and line[i] == player:
            total += abs(i - index) - 1
    return total


def reversi_question(r: random.Random) -> tuple[str, int, str]:
    """A row with an empty square at index, often followed one way by a run of the other colour and a player's stone."""
    line, player = [r.choice("BW.") for _ in range(r.randint(5, 8))], r.choice("BW")
    index = r.randrange(len(line))
    line[index] = "."
    if r.random() < 0.6:
        step, run = r.choice((-1, 1)), r.randint(1, 3)
        for i in range(index + step, index + step * (run + 2), step):
            if 0 <= i < len(line):
                line[i] = ("W" if player == "B" else "B") if i != index + step * (run + 1) else player
    return "".join(line), index, player


def count_queens(n: int, placed: tuple[int, ...] = ()) -> int:
    """Placements of n queens on an n x n board, none attacking another, row by row."""
    if len(placed) == n:
        return 1
    row = len(placed)
    return sum(count_queens(n, placed + (col,)) for col in range(n)
               if all(col != c and abs(col - c) != row - i for i, c in enumerate(placed)))


def knight_distance(start: tuple[int, int], goal: tuple[int, int]) -> int:
    steps, frontier, seen = 0, [start], {start}
    while goal not in frontier:
        frontier = [(a + da, b + db) for a, b in frontier for da, db in KNIGHT_JUMPS
                    if 0 <= a + da < 8 and 0 <= b + db < 8 and (a + da, b + db) not in seen]
        seen.update(frontier)
        steps += 1
    return steps


def lights_out(grid: list[list[int]], row: int, col: int) -> list[list[int]]:
    near = {(row, col), (row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)}
    return [[1 - x if (i, j) in near else x for j, x in enumerate(cells)] for i, cells in enumerate(grid)]


def lights_question(r: random.Random) -> tuple[list[list[int]], int, int]:
    rows, cols = r.randint(2, 4), r.randint(3, 4)
    return [[r.randint(0, 1) for _ in range(cols)] for _ in range(rows)], r.randrange(rows), r.randrange(cols)


# impartial games


def nim_move(heaps: list[int]) -> tuple[int, int] | None:
    total = reduce(xor, heaps, 0)
    return next(((i, h ^ total) for i, h in enumerate(heaps) if h ^ total < h), None)


def heaps_or_losing(r: random.Random, low: int = 2, high: int = 4, most: int = 9) -> list[int]:
    """low to high heaps of 1 to `most`, their xor made 0 (when that keeps the last heap positive) half of the time."""
    heaps = [r.randint(1, most) for _ in range(r.randint(low, high))]
    rest = reduce(xor, heaps[:-1], 0)
    if r.random() < 0.5 and rest:
        heaps[-1] = rest
    return heaps


def misere_wins(heaps: list[int]) -> bool:
    if all(h <= 1 for h in heaps):
        return sum(heaps) % 2 == 0
    return reduce(xor, heaps, 0) != 0


def grundy_values(n: int, moves: list[int]) -> list[int]:
    values: list[int] = []
    for i in range(n + 1):
        reachable = {values[i - m] for m in moves if m <= i}
        values.append(next(g for g in range(len(moves) + 1) if g not in reachable))
    return values


def wythoff_cold(a: int, b: int) -> bool:
    """(a, b) is a losing Wythoff position: the m-th pair is (mex of the earlier numbers, that plus m)."""
    a, b = min(a, b), max(a, b)
    used, m, low = set(), 0, 0
    while True:
        while low in used:
            low += 1
        if low >= a:
            return low == a and b == a + m
        used |= {low, low + m}
        m += 1


def wythoff_question(r: random.Random) -> tuple[int, int]:
    if r.random() < 0.5:
        return r.randint(0, 20), r.randint(0, 20)
    cold = [(a, b) for a in range(21) for b in range(a, 34) if wythoff_cold(a, b)]
    pair = r.choice(cold)
    return pair if r.random() < 0.5 else pair[::-1]


def staircase_question(r: random.Random) -> tuple[list[int]]:
    """Coins on 2 to 5 steps, those on steps 1, 3, 5 ... made to xor to 0 half of the time."""
    steps = [r.randint(0, 6) for _ in range(r.randint(2, 5))]
    if r.random() < 0.5:
        steps[0] = reduce(xor, steps[2::2], 0)
    return (steps,)


def moore_wins(heaps: list[int], most: int) -> bool:
    return any(sum(h >> bit & 1 for h in heaps) % (most + 1) for bit in range(max(heaps).bit_length()))


def moore_question(r: random.Random, most: int) -> tuple[list[int]]:
    """most + 1 to most + 3 heaps below 16, every binary digit's count a multiple of most + 1 half of the time."""
    size = r.randint(most + 1, most + 3)
    if r.random() < 0.5:
        return ([r.randint(1, 15) for _ in range(size)],)
    heaps = [0] * size
    for bit in range(4):
        for i in r.sample(range(size), (most + 1) * r.randint(0, size // (most + 1))):
            heaps[i] |= 1 << bit
    return (heaps,)


def first_total(coins: list[int]) -> int:
    """Both players take a coin from either end, each making their own total as large as they can."""
    n = len(coins)
    lead = [[0] * (n + 1) for _ in range(n + 1)]  # lead[i][j]: the mover's best margin on coins[i:j]
    for size in range(1, n + 1):
        for i in range(n - size + 1):
            j = i + size
            lead[i][j] = max(coins[i] - lead[i + 1][j], coins[j - 1] - lead[i][j - 1])
    return (sum(coins) + lead[0][n]) // 2


def square_game_wins(n: int) -> bool:
    wins = [False]
    for i in range(1, n + 1):
        wins.append(any(not wins[i - s * s] for s in range(1, int(i ** 0.5) + 1)))
    return wins[n]


def square_question(r: random.Random) -> tuple[int]:
    """A pile of 1 to 40, a losing one 40% of the time."""
    return (r.choice([n for n in range(1, 41) if not square_game_wins(n)]) if r.random() < 0.4 else r.randint(1, 40),)


# wildcards


def glob_match(pattern: str, text: str) -> bool:
    """'?' matches one character and '*' any run of them, the whole text."""
    ok = [True] + [False] * len(text)
    for p in pattern:
        row = [ok[0] and p == "*"]
        for j, c in enumerate(text, 1):
            row.append((ok[j] or row[j - 1]) if p == "*" else ok[j - 1] and p in ("?", c))
        ok = row
    return ok[-1]


def masked(r: random.Random, text: str) -> str:
    """text with a few characters turned into '?' and one stretch into '*'."""
    chars = [c if r.random() < 0.75 else "?" for c in text]
    i = r.randrange(len(chars))
    return "".join(chars[:i] + ["*"] + chars[i + r.randint(0, 3):])


def glob_question(r: random.Random) -> tuple[str, str]:
    text = r.choice(WORDS)
    return masked(r, text if r.random() < 0.6 else r.choice(WORDS)), text


def star_pattern(r: random.Random) -> str:
    """A regular expression of letters a, b and '.', some followed by '*'."""
    return "".join(r.choice("aab.") + ("*" if r.random() < 0.4 else "") for _ in range(r.randint(1, 4)))


def regex_question(r: random.Random) -> tuple[str, str]:
    pattern = star_pattern(r)
    if r.random() < 0.5:
        return pattern, "".join(r.choice("ab") for _ in range(r.randint(0, 5)))
    text = re.sub(r"(.)\*", lambda m: m.group(1) * r.randint(0, 2), pattern)
    return pattern, text.replace(".", r.choice("ab"))


def is_bijection(first: list[str] | str, second: list[str] | str) -> bool:
    return len(first) == len(second) and len(set(first)) == len(set(second)) == len(set(zip(first, second)))


def word_pattern_question(r: random.Random) -> tuple[str, str]:
    pattern = "".join(r.choice("abc") for _ in range(r.randint(2, 5)))
    names = dict(zip("abc", r.sample(WORDS, 3)))
    words = [names[c] for c in pattern]
    if r.random() < 0.5:
        words[r.randrange(len(words))] = r.choice(WORDS)
    return pattern, " ".join(words)


def isomorphic_question(r: random.Random) -> tuple[str, str]:
    first = "".join(r.choice("abcd") for _ in range(r.randint(2, 6)))
    letters = dict(zip("abcd", r.sample("wxyz", 4)))
    second = [letters[c] for c in first]
    if r.random() < 0.55:
        i = r.randrange(len(second))
        second[i] = r.choice([c for c in "wxyz" if c != second[i]])
    return first, "".join(second)


def class_tokens(pattern: str) -> list[str]:
    return re.findall(r"\[[^\]]*\]|.", pattern)


def class_letters(token: str) -> str:
    if not token.startswith("["):
        return token
    return re.sub(r"(\w)-(\w)", lambda m: "".join(map(chr, range(ord(m[1]), ord(m[2]) + 1))), token[1:-1])


def class_match(pattern: str, text: str) -> bool:
    tokens = class_tokens(pattern)
    return len(tokens) == len(text) and all(c in class_letters(t) for t, c in zip(tokens, text))


def class_question(r: random.Random) -> tuple[str, str]:
    """A word and a pattern made from it (or from another word) with a few letters turned into classes,
    mostly classes that hold the letter."""
    text = r.choice(WORDS)
    classes = ("[aeiou]", "[a-f]", "[m-s]", "[xyz]", "[b-d]", "[pt]", "[g-l]", "[r-z]")
    pattern = ""
    for c in text if r.random() < 0.7 else r.choice(WORDS):
        fitting = [cl for cl in classes if c in class_letters(cl)]
        if r.random() < 0.4:
            c = r.choice(fitting if fitting and r.random() < 0.8 else classes)
        pattern += c
    return pattern, text


def window_starts(pattern: str, text: str) -> list[int]:
    return [i for i in range(len(text) - len(pattern) + 1)
            if all(p in ("?", c) for p, c in zip(pattern, text[i: i + len(pattern)]))]


def window_question(r: random.Random) -> tuple[str, str]:
    text = sentence(r)
    i = r.randrange(len(text) - 2)
    piece = text[i: i + r.randint(2, 3)]
    return "".join("?" if r.random() < 0.4 else c for c in piece), text


def expand_braces(pattern: str) -> list[str]:
    pieces = re.split(r"\{([^}]*)\}", pattern)  # literal, options, literal, options ...
    choices = [piece.split(",") if i % 2 else [piece] for i, piece in enumerate(pieces)]
    return ["".join(parts) for parts in product(*choices)]


def brace_pattern(r: random.Random) -> tuple[str]:
    parts = [r.choice(("", "a", "x-", "log", "img")) for _ in range(r.randint(1, 2))]
    for i in range(len(parts), 0, -1):
        options = r.sample(("1", "2", "red", "blue", "s", "m", "l", "old"), r.randint(1, 3))
        parts.insert(i, "{" + ",".join(options) + "}")
    return ("".join(parts),)
