"""The sixth task families' reference solutions and example generators: checks to queues.

`task_families6.py` builds its tasks from what is here and in `task_reference6b.py`, as
`task_families5.py` does from `task_reference5.py`. This module serves its first five families
(check digits, voting, string similarity, tiny interpreters, queues and caches): the argument shapes
they share (DIGITS, VOTES, BALLOTS, PROGRAM, REQUESTS), the reference solutions too long for a lambda
(luhn_total, isbn10_check, iban_check_digits, runoff_winner, condorcet_winner, dhondt, largest_remainder,
edit_distance, common_subsequence, longest_shared_substring, register_machine, accumulator_at_loop,
run_forth, deadfish, evaluate_prefix, expand_repeats, lru_misses, teller_finish_times, printer_order ...)
and the seeded example generators (luhn_number, isbn10_sometimes, iban_sometimes, ranked_ballots,
one_edit_sometimes, counting_program, jump_program, forth_line, prefix_expression, assignments,
repeat_code, bus_stops ...: each takes the `random.Random` the task draws from and only draws from it).
The module knows nothing about tasks, rendering or files, so the task files drawn through it
regenerate byte for byte. Nothing here runs on its own: `python -m d3d.training.task_prompts --families
sixth` draws tasks built on it.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, OrderedDict, deque
from fractions import Fraction

from d3d.training.task_families import WORDS
from d3d.training.task_reference4 import OPERATIONS

DIGITS = (("digits", "str"),)
VOTES = (("votes", "List[str]"),)
BALLOTS = (("ballots", "List[List[str]]"),)
PROGRAM = (("program", "List[str]"),)
REQUESTS = (("requests", "List[int]"),)
CANDIDATES = ("Ada", "Ben", "Cleo", "Dev", "Eva")
PARTIES = ("Blue", "Gold", "Green", "Red")
COUNTRIES = ("DE", "FR", "GB", "NL", "ES", "IT")
SIMILAR = ("kitten", "sitting", "mitten", "smitten", "fitting", "sitter", "bitter", "batter", "butter", "better",
           "letter", "litter", "flaw", "lawn", "law", "claw")


def digit_string(r: random.Random, low: int, high: int) -> str:
    return "".join(str(r.randint(0, 9)) for _ in range(r.randint(low, high)))


def spoiled(r: random.Random, code: str, alphabet: str = "0123456789") -> str:
    """`code` with one character replaced or two neighbours swapped (perhaps by chance no change)."""
    i = r.randrange(len(code) - 1)
    if r.random() < 0.5:
        return code[:i] + code[i + 1] + code[i] + code[i + 2:]
    return code[:i] + r.choice(alphabet) + code[i + 1:]


def luhn_total(digits: str) -> int:
    """The Luhn sum: every second digit from the right doubled, 9 taken off a double above 9."""
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total


def luhn_number(r: random.Random) -> str:
    """A string of digits that passes the Luhn check half of the time."""
    payload = digit_string(r, 5, 11)
    valid = payload + str((10 - luhn_total(payload + "0") % 10) % 10)
    return valid if r.random() < 0.5 else spoiled(r, valid)


def isbn10_check(first_nine: str) -> str:
    rest = (11 - sum((10 - i) * int(c) for i, c in enumerate(first_nine)) % 11) % 11
    return "X" if rest == 10 else str(rest)


def isbn10_is_valid(isbn: str) -> bool:
    return sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(isbn)) % 11 == 0


def isbn10_sometimes(r: random.Random) -> str:
    first_nine = digit_string(r, 9, 9)
    valid = first_nine + isbn10_check(first_nine)
    return valid if r.random() < 0.5 else spoiled(r, valid[:9]) + valid[9]


def isbn13_check_digit(first_twelve: str) -> int:
    return (10 - sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(first_twelve)) % 10) % 10


def as_number(code: str) -> int:
    """Letters become their place in the alphabet plus 9 (A is 10, Z is 35), digits stay."""
    return int("".join(str(int(c, 36)) for c in code))


def iban_checksum_ok(code: str) -> bool:
    return as_number(code[4:] + code[:4]) % 97 == 1


def iban_sometimes(r: random.Random) -> str:
    """A country code, two check digits and an account part, the check digits right half of the time."""
    country = r.choice(COUNTRIES)
    account = "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(r.randint(0, 4))) + digit_string(r, 6, 10)
    check = f"{98 - as_number(account + country + '00') % 97:02d}"
    return country + (check + account if r.random() < 0.5 else spoiled(r, check + account))


def mod11_check_character(digits: str) -> str:
    rest = 11 - sum((i + 2) * int(c) for i, c in enumerate(reversed(digits))) % 11
    return {11: "0", 10: "X"}.get(rest, str(rest))


def fletcher_pair(values: list[int], modulus: int) -> tuple[int, int]:
    first = second = 0
    for value in values:
        first = (first + value) % modulus
        second = (second + first) % modulus
    return first, second


def plurality(votes: list[str]) -> str:
    return min(Counter(votes).items(), key=lambda cv: (-cv[1], cv[0]))[0]


def lopsided_votes(r: random.Random) -> list[str]:
    """3 to 9 votes among 2 or 3 candidates, one of them often a favourite."""
    names = r.sample(CANDIDATES, r.randint(2, 3))
    weights = [r.choice((1, 1, 4)) for _ in names]
    return r.choices(names, weights, k=r.randint(3, 9))


def ranked_ballots(r: random.Random) -> list[list[str]]:
    """3 to 7 ballots, each ranking the same 3 or 4 candidates; ballots often repeat one another."""
    names = r.sample(CANDIDATES, r.randint(3, 4))
    favourites = [r.sample(names, len(names)) for _ in range(2)]
    return [list(r.choice(favourites)) if r.random() < 0.5 else r.sample(names, len(names))
            for _ in range(r.randint(3, 7))]


def borda_scores(ballots: list[list[str]]) -> dict[str, int]:
    scores: Counter = Counter()
    for ballot in ballots:
        for place, name in enumerate(ballot):
            scores[name] += len(ballot) - 1 - place
    return dict(sorted(scores.items()))


def runoff_winner(ballots: list[list[str]]) -> str:
    remaining = sorted({name for ballot in ballots for name in ballot})
    while True:
        firsts = Counter(next(name for name in ballot if name in remaining) for ballot in ballots)
        leader = min(remaining, key=lambda name: (-firsts[name], name))
        if 2 * firsts[leader] > len(ballots) or len(remaining) == 1:
            return leader
        remaining.remove(min(remaining, key=lambda name: (firsts[name], name)))


def prefers(ballots: list[list[str]], first: str, second: str) -> int:
    return sum(ballot.index(first) < ballot.index(second) for ballot in ballots)


def condorcet_winner(ballots: list[list[str]]) -> str:
    names = sorted({name for ballot in ballots for name in ballot})
    return next((a for a in names if all(prefers(ballots, a, b) > prefers(ballots, b, a) for b in names if b != a)),
                "")


def approval_ballots(r: random.Random) -> list[list[str]]:
    names = r.sample(CANDIDATES, r.randint(3, 4))
    return [sorted(r.sample(names, r.randint(1, len(names) - 1))) for _ in range(r.randint(2, 5))]


def party_votes(r: random.Random) -> dict[str, int]:
    """2 to 4 parties' votes, in tens so that quotients now and then tie."""
    return {party: 10 * r.randint(1, 12) for party in sorted(r.sample(PARTIES, r.randint(2, 4)))}


def dhondt(votes: dict[str, int], seats: int) -> dict[str, int]:
    won = dict.fromkeys(sorted(votes), 0)
    for _ in range(seats):
        won[min(won, key=lambda party: -Fraction(votes[party], won[party] + 1))] += 1
    return won


def largest_remainder(votes: dict[str, int], seats: int) -> dict[str, int]:
    total = sum(votes.values())
    won = {party: votes[party] * seats // total for party in sorted(votes)}
    by_remainder = sorted(won, key=lambda party: (-(votes[party] * seats % total), party))
    for party in by_remainder[: seats - sum(won.values())]:
        won[party] += 1
    return won


def edit_distance(first: str, second: str) -> int:
    row = list(range(len(second) + 1))
    for i, a in enumerate(first, 1):
        previous, row[0] = row[0], i
        for j, b in enumerate(second, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (a != b))
    return row[-1]


def common_subsequence(first: str, second: str) -> int:
    row = [0] * (len(second) + 1)
    for a in first:
        previous = 0
        for j, b in enumerate(second, 1):
            previous, row[j] = row[j], previous + 1 if a == b else max(row[j], row[j - 1])
    return row[-1]


def longest_shared_substring(first: str, second: str) -> str:
    best = ""
    for i in range(len(first)):
        for j in range(i + len(best) + 1, len(first) + 1):
            if first[i:j] not in second:
                break
            best = first[i:j]
    return best


def similar_pair(r: random.Random) -> tuple[str, str]:
    return r.choice(SIMILAR), r.choice(SIMILAR + WORDS)


def mutated(r: random.Random, word: str, edits: int) -> str:
    """`word` after `edits` random substitutions, insertions or deletions of letters."""
    for _ in range(edits):
        i, letter = r.randrange(len(word)), r.choice("aeiost")
        word = r.choice((word[:i] + letter + word[i + 1:], word[:i] + letter + word[i:],
                         word[:i] + word[i + 1:] if len(word) > 2 else word))
    return word


def one_edit_sometimes(r: random.Random) -> tuple[str, str]:
    """A word and the word after one edit (half of the time), no edit or two edits."""
    word = r.choice(SIMILAR)
    return word, r.choice((mutated(r, word, 1), mutated(r, word, 1), word, mutated(r, word, 2)))


def same_length_pair(r: random.Random) -> tuple[str, str]:
    word = r.choice(SIMILAR + WORDS)
    other = list(word)
    for i in r.sample(range(len(word)), r.randint(0, min(3, len(word)))):
        other[i] = r.choice("aeiost")
    return word, "".join(other)


def one_swap_apart(first: str, second: str) -> bool:
    diff = [i for i, (a, b) in enumerate(zip(first, second)) if a != b]
    return len(first) == len(second) and len(diff) == 2 and (first[diff[0]], first[diff[1]]) == (second[diff[1]],
                                                                                                    second[diff[0]])


def swapped_sometimes(r: random.Random) -> tuple[str, str]:
    word = r.choice(SIMILAR + WORDS)
    i, j = sorted(r.sample(range(len(word)), 2))
    swapped = word[:i] + word[j] + word[i + 1: j] + word[i] + word[j + 1:]
    return word, r.choice((swapped, swapped, mutated(r, word, 1), word[::-1]))


def bigram_dice(first: str, second: str) -> float:
    a, b = (Counter(w[i: i + 2] for i in range(len(w) - 1)) for w in (first, second))
    return round(2 * sum((a & b).values()) / (sum(a.values()) + sum(b.values())), 2)


def approximate_matches(pattern: str, text: str, most: int) -> list[int]:
    return [i for i in range(len(text) - len(pattern) + 1)
            if sum(a != b for a, b in zip(pattern, text[i:])) <= most]


def register_machine(program: list[str]) -> dict[str, int]:
    registers = {line.split()[1]: 0 for line in program}
    pc = 0
    while 0 <= pc < len(program):
        op, name, *offset = program[pc].split()
        if op == "jnz" and registers[name]:
            pc += int(offset[0])
            continue
        registers[name] += {"inc": 1, "dec": -1}.get(op, 0)
        pc += 1
    return dict(sorted(registers.items()))


def counting_program(r: random.Random) -> list[str]:
    """Some 'inc a', then perhaps a loop that counts a down to 0 while it changes other registers."""
    program = ["inc a"] * r.randint(1, 4)
    body = r.choice((["inc b"], ["inc b", "inc b"], ["inc b", "inc c"], ["dec b"], ["inc c", "inc c", "inc c"]))
    if r.random() < 0.8:
        program += ["dec a", *body, f"jnz a -{len(body) + 1}"]
    return program + r.choice(([], ["inc c"], ["dec a"], ["inc b"]))


def accumulator_at_loop(program: list[str]) -> int:
    accumulator, pc, seen = 0, 0, set()
    while 0 <= pc < len(program) and pc not in seen:
        seen.add(pc)
        op, amount = program[pc].split()
        accumulator += int(amount) if op == "acc" else 0
        pc += int(amount) if op == "jmp" else 1
    return accumulator


def jump_program(r: random.Random) -> list[str]:
    lines = []
    for _ in range(r.randint(3, 7)):
        op = r.choice(("acc", "acc", "jmp", "nop"))
        amount = r.randint(-9, 9) if op == "acc" else r.choice((-3, -2, -1, 1, 2, 3))
        lines.append(f"{op} {amount:+d}")
    return lines


def run_forth(line: str) -> list[int]:
    stack: list[int] = []
    for token in line.split():
        if token in OPERATIONS:
            b, a = stack.pop(), stack.pop()
            stack.append(OPERATIONS[token](a, b))
        elif token == "dup":
            stack.append(stack[-1])
        elif token == "drop":
            stack.pop()
        elif token == "swap":
            stack[-2:] = stack[:-3:-1]
        elif token == "over":
            stack.append(stack[-2])
        else:
            stack.append(int(token))
    return stack


def forth_line(r: random.Random) -> str:
    """Numbers and words that never take more from the stack than it holds."""
    tokens, depth = [], 0
    for _ in range(r.randint(3, 8)):
        choices = ["num", "num"] + ["dup", "drop"] * (depth >= 1) + ["swap", "over", "+", "-", "*"] * (depth >= 2)
        token = r.choice(choices)
        token = str(r.randint(1, 9)) if token == "num" else token
        depth += {"drop": -1, "swap": 0, "+": -1, "-": -1, "*": -1}.get(token, 1)
        tokens.append(token)
    return " ".join(tokens)


def deadfish(code: str) -> list[int]:
    value, out = 0, []
    for c in code:
        value = {"i": value + 1, "d": value - 1, "s": value * value}.get(c, value)
        value = 0 if value in (-1, 256) else value
        if c == "o":
            out.append(value)
    return out


def tape_cells(code: str, size: int) -> list[int]:
    cells, head = [0] * size, 0
    for c in code:
        if c in "lr":
            head = (head + (1 if c == "r" else -1)) % size
        else:
            cells[head] += 1 if c == "+" else -1
    return cells


def evaluate_prefix(expression: str) -> int:
    tokens = expression.split()

    def value(i: int) -> tuple[int, int]:
        if tokens[i] in OPERATIONS:
            a, j = value(i + 1)
            b, k = value(j)
            return OPERATIONS[tokens[i]](a, b), k
        return int(tokens[i]), i + 1

    return value(0)[0]


def prefix_expression(r: random.Random, depth: int = 3) -> str:
    if depth == 0 or r.random() < 0.3:
        return str(r.randint(0, 9))
    return f"{r.choice('+-*')} {prefix_expression(r, depth - 1)} {prefix_expression(r, depth - 1)}"


def run_assignments(statements: list[str]) -> dict[str, int]:
    values: dict[str, int] = {}
    for statement in statements:
        name, _, *expression = statement.split()
        operands = [values[t] if t.isalpha() else int(t) for t in expression[::2]]
        values[name] = OPERATIONS[expression[1]](*operands) if len(operands) == 2 else operands[0]
    return dict(sorted(values.items()))


def assignments(r: random.Random) -> list[str]:
    """'x = 3' first, then statements whose operands are numbers or names already set."""
    statements, known = [f"{r.choice('xyz')} = {r.randint(1, 9)}"], []
    known.append(statements[0][0])
    for _ in range(r.randint(1, 4)):
        operand = lambda: r.choice(known + [str(r.randint(1, 9))])  # noqa: E731
        expression = operand() if r.random() < 0.25 else f"{operand()} {r.choice('+-*')} {operand()}"
        name = r.choice("xyz")
        statements.append(f"{name} = {expression}")
        known.append(name)
    return statements


def left_to_right(expression: str) -> int:
    tokens = expression.split()
    value = int(tokens[0])
    for op, number in zip(tokens[1::2], tokens[2::2]):
        value = OPERATIONS[op](value, int(number))
    return value


def expand_repeats(code: str) -> str:
    stack: list[tuple[str, int]] = []
    text, count = "", 0
    for c in code:
        if c.isdigit():
            count = 10 * count + int(c)
        elif c == "[":
            stack.append((text, count))
            text, count = "", 0
        elif c == "]":
            before, times = stack.pop()
            text = before + text * times
        else:
            text += c
    return text


def repeat_code(r: random.Random, depth: int = 2) -> str:
    parts = []
    for _ in range(r.randint(1, 3)):
        if depth and r.random() < 0.5:
            parts.append(f"{r.randint(1, 3)}[{repeat_code(r, depth - 1)}]")
        else:
            parts.append("".join(r.choice("abc") for _ in range(r.randint(1, 2))))
    return "".join(parts)


def final_state(transitions: dict[str, dict[str, str]], start: str, inputs: str) -> str:
    state = start
    for symbol in inputs:
        state = transitions[state].get(symbol, state)
    return state


def machine(r: random.Random) -> tuple[dict[str, dict[str, str]], str, str]:
    states = ["idle", "busy", "done"][: r.randint(2, 3)]
    transitions = {s: {x: r.choice(states) for x in r.sample("xy", r.randint(1, 2))} for s in states}
    return transitions, r.choice(states), "".join(r.choice("xy") for _ in range(r.randint(1, 5)))


def lru_misses(requests: list[int], size: int) -> int:
    cache: OrderedDict = OrderedDict()
    misses = 0
    for item in requests:
        if item in cache:
            cache.move_to_end(item)
            continue
        misses += 1
        cache[item] = True
        if len(cache) > size:
            cache.popitem(last=False)
    return misses


def fifo_misses(requests: list[int], size: int) -> int:
    cache: deque = deque()
    misses = 0
    for item in requests:
        if item not in cache:
            misses += 1
            cache.append(item)
            if len(cache) > size:
                cache.popleft()
    return misses


def counter_waits(arrivals: list[int], durations: list[int]) -> list[int]:
    free, waits = 0, []
    for arrival, duration in zip(arrivals, durations):
        start = max(arrival, free)
        waits.append(start - arrival)
        free = start + duration
    return waits


def arrivals_and_durations(r: random.Random) -> tuple[list[int], list[int]]:
    n, t = r.randint(1, 5), 0
    arrivals = []
    for _ in range(n):
        t += r.randint(0, 4)
        arrivals.append(t)
    return arrivals, [r.randint(1, 5) for _ in range(n)]


def teller_finish_times(durations: list[int], tellers: int) -> list[int]:
    free = [(0, i) for i in range(tellers)]
    finish = []
    for duration in durations:
        at, teller = heapq.heappop(free)
        finish.append(at + duration)
        heapq.heappush(free, (at + duration, teller))
    return finish


def seconds_until_served(tickets: list[int], position: int) -> int:
    wanted = tickets[position]
    return sum(min(t, wanted if i <= position else wanted - 1) for i, t in enumerate(tickets))


def printer_order(jobs: list[tuple[str, int]]) -> list[str]:
    queue, printed = deque(jobs), []
    while queue:
        job = queue.popleft()
        if any(priority > job[1] for _, priority in queue):
            queue.append(job)
        else:
            printed.append(job[0])
    return printed


def bus_stops(r: random.Random, capacity: int = 0) -> list[tuple[int, int]]:
    """(off, on) at 1 to 5 stops, nobody getting off who is not on board (a full bus counts as `capacity`)."""
    stops, on_board = [], 0
    for _ in range(r.randint(1, 5)):
        off = r.randint(0, on_board)
        on = r.randint(0, max(6, capacity))
        stops.append((off, on))
        on_board -= off
        on_board = min(on_board + on, capacity) if capacity else on_board + on
    return stops


def left_behind(stops: list[tuple[int, int]], capacity: int) -> int:
    on_board = missed = 0
    for off, waiting in stops:
        on_board -= off
        boarding = min(waiting, capacity - on_board)
        on_board, missed = on_board + boarding, missed + waiting - boarding
    return missed


def parking_spots(events: list[str]) -> list[int]:
    parked: dict[str, int] = {}
    spots = []
    for car in events:
        if car in parked:
            del parked[car]
            continue
        spot = next(s for s in range(1, len(events) + 2) if s not in parked.values())
        parked[car] = spot
        spots.append(spot)
    return spots


def sweep_order(start: int, requests: list[int]) -> list[int]:
    return sorted(f for f in requests if f >= start) + sorted((f for f in requests if f < start), reverse=True)
