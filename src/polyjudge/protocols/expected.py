"""Expected scores from token log-probabilities (``score_mode=expected``).

One answer is asked for with the top-k alternatives of every generated token.
Where the answer writes its score, the alternatives say which other numbers
the judge was ready to write and how likely each was; the expected score is
the probability-weighted mean over the *valid* scores (the scale's
integers), renormalised over their mass. It is continuous and almost never
tied, from a single request (G-Eval reads its 1-5 score this way).

Numbers can take several tokens ("100" as "100", "10"+"0" or "1"+"0"+"0"),
so the distribution is a tree walked from the token where the score starts:

* At that position every alternative is read. Its text must continue the
  answer as the generated token did (the same characters before the score;
  whitespace in front of the number may differ). An alternative made of
  digits followed by something else (``"8,"``, ``"5}"``) ends the number; a
  token without digits ends it too (``}``, ``,``, a space, a newline or the
  end of the answer), except at the first position, where it is no number
  at all (*invalid* mass when it is text such as ``"`` or ``N``, *unread*
  when it is only whitespace, since the number may still follow).
* An alternative made of digits only may go on. If it is the token the
  answer generated, the next position's alternatives are its real
  continuation and the walk goes on there.
* An alternative whose digits no valid score extends (``90`` on 0-100,
  ``4`` on 1-5) ends there: it is read exactly.
* **The approximation.** Any other digit alternative (``9`` where the answer
  went on with ``8``, ``5``) may go on, and what the judge would have written
  next is not in the data. Its continuation is taken from the positions the
  answer did generate (their alternatives stand in for the unobserved ones),
  only completions that are valid scores are kept, and the branch's
  probability is spread over them in proportion; a branch with no valid
  completion is invalid mass. With "1","0","0" generated and ``9`` as an
  alternative at the first position, ``9`` becomes 90 or 95 in the
  proportions of the digits seen after "1", never 900. A position stands in
  only where the answer's own number could still go on there: after a
  generated "0" (or "100" on 0-100) nothing tells how ``5`` would have gone
  on, and such a branch is *unread* mass (neither valid nor invalid), as is
  ``10`` after "85" (10 or 100?). The share of the valid mass whose digits
  came partly from stand-in positions is reported as ``approximated``; it is
  0 for tokenizers that write every score as one token.
* Alternatives at positions *before* the score's first token (e.g. a
  ``" 8"`` competing with the ``" "`` the answer wrote) are not read, and
  fractional parts are not read (the number ends at a ``.``).

What is recorded (``annotation["expected"]``): the expected score, the
distribution over valid scores (renormalised), the valid, invalid and unread
mass (unread: the top-k tail and whitespace at the first position), the
approximated share and the number the answer itself wrote. An answer
without log-probabilities, or without the score among its tokens, or with
no probability on any valid score, is a :class:`ParseFailure`, never a score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from polyjudge.data.chat import TokenLogprob
from polyjudge.protocols.answers import ParseFailure
from polyjudge.protocols.options import option

ScoreMode = Literal["sample", "expected"]
SCORE_MODES: tuple[str, ...] = ("sample", "expected")
# Top alternatives asked for per answer token (OpenAI's maximum; vLLM's default cap).
TOP_LOGPROBS = 20
NO_LOGPROBS = ("no token log-probabilities with the answer (the server returned none): "
               "score_mode=expected needs a server that returns logprobs")

# Finds where the score starts in the answer's token text: the offset of its first digit.
Locator = Callable[[str], "int | None"]

_DIGITS = re.compile(r"\d*")


def score_mode_help() -> str:
    """The ``--help`` line of the ``score_mode`` option (the same in every protocol that has it)."""
    return ("sample: the score the answer writes; expected: the probability-weighted score over the "
            "valid score tokens of one answer (needs log-probabilities from the judge)")


def score_mode_field(note: str = "") -> Any:
    """The ``score_mode`` option field (``score_mode: ScoreMode = score_mode_field()``), the same default
    and help in every protocol that supports expected scores; ``note`` is added to the help (a limit)."""
    return field(default="sample", metadata=option(score_mode_help() + note))


@dataclass(frozen=True, slots=True)
class ScoreDistribution:
    """The judge's distribution over valid scores at the position where it wrote its score."""

    probabilities: tuple[tuple[int, float], ...]  # (score, probability renormalised over valid mass)
    valid_mass: float  # probability of all valid scores, out of 1
    invalid_mass: float  # probability of continuations that are not valid scores
    approximated: float  # share of the valid mass reached through an unobserved continuation
    sampled: int | None  # the number the answer itself wrote (None when it is not a valid score)

    @property
    def expected(self) -> float:
        return math.fsum(v * p for v, p in self.probabilities)

    @property
    def unread_mass(self) -> float:
        return max(0.0, 1.0 - self.valid_mass - self.invalid_mass)

    def to_json(self) -> dict[str, Any]:
        return {"score": self.expected, "sampled": self.sampled,
                "distribution": [[v, p] for v, p in self.probabilities],
                "valid_mass": self.valid_mass, "invalid_mass": self.invalid_mass,
                "unread_mass": self.unread_mass, "approximated": self.approximated}


def regex_locator(*patterns: str, last: bool = False) -> Locator:
    """A locator trying ``patterns`` in order; each has a group ``n`` at the score's first digit.

    With ``last`` the last match of a pattern counts, else the first.
    """
    compiled = [re.compile(p, re.DOTALL | re.IGNORECASE) for p in patterns]

    def locate(text: str) -> int | None:
        for rx in compiled:
            found = list(rx.finditer(text))
            if found:
                return (found[-1] if last else found[0]).start("n")
        return None

    return locate


def json_key_locator(key: str) -> Locator:
    """The number after ``"key":`` (an unescaped key, so never one quoted inside a string)."""
    return regex_locator(r'(?<!\\)"' + re.escape(key) + r'"\s*:\s*"?(?P<n>\d)')


def _alternatives(tok: TokenLogprob) -> list[tuple[str, float]]:
    """Alternatives with probabilities (tokens that print the same are summed; the generated one is
    added when the server left it out of the top list)."""
    probs: dict[str, float] = {}
    for text, lp in tok.top:
        probs[text] = probs.get(text, 0.0) + math.exp(lp)
    if tok.token not in probs:
        probs[tok.token] = math.exp(tok.logprob)
    return list(probs.items())


def _valid_number(digits: str, valid: Collection[int]) -> int | None:
    if not digits or (len(digits) > 1 and digits[0] == "0"):
        return None
    value = int(digits)
    return value if value in valid else None


class _Walk:
    """The tree walk over number continuations (see the module docstring)."""

    def __init__(self, tokens: Sequence[TokenLogprob], valid: Collection[int], generated: dict[int, str]) -> None:
        self.tokens, self.valid = tokens, valid
        texts = [str(v) for v in valid if v >= 0]
        self.max_digits = max(len(t) for t in texts)
        # Digit strings that a valid score extends (so a number written so far may go on).
        self.open = {t[:n] for t in texts for n in range(1, len(t))}
        # The digits the answer had written before each position of its number.
        self.generated = generated
        self.mass: dict[int, float] = {}
        self.approx: dict[int, float] = {}
        self.invalid = 0.0

    def leaves(self, j: int, prefix: str) -> tuple[list[tuple[str, float]], float]:
        """Completions (digit strings, probability) of ``prefix`` read from position ``j`` on, with
        the generated answer's alternatives standing in for the unobserved ones; and the probability
        left unknown because the answer there cannot stand in (its own number could not go on)."""
        if prefix not in self.open or j >= len(self.tokens):
            return [(prefix, 1.0)], 0.0  # nothing valid extends it, or the answer ended: it ends here
        if self.generated.get(j) not in self.open:
            return [], 1.0
        out: list[tuple[str, float]] = []
        unknown = 0.0
        for text, p in _alternatives(self.tokens[j]):
            digits = _DIGITS.match(text)
            d = digits.group() if digits else ""
            if not d or len(d) < len(text):
                out.append((prefix + d, p))
            elif len(prefix + d) <= self.max_digits:
                sub, u = self.leaves(j + 1, prefix + d)
                out += [(s, p * q) for s, q in sub]
                unknown += p * u
        return out, unknown

    def add(self, digits: str, p: float, approximated: bool) -> None:
        value = _valid_number(digits, self.valid)
        if value is None:
            self.invalid += p
            return
        self.mass[value] = self.mass.get(value, 0.0) + p
        if approximated:
            self.approx[value] = self.approx.get(value, 0.0) + p

    def branch(self, j: int, prefix: str, p: float) -> None:
        """An unobserved continuation of ``prefix`` with probability ``p``, completed from position ``j``."""
        found, unknown = self.leaves(j, prefix)
        done = [(s, q) for s, q in found if _valid_number(s, self.valid) is not None]
        total = math.fsum(q for _, q in done) + unknown
        if total <= 0.0:
            self.invalid += p
            return
        for s, q in done:  # digits read from stand-in positions make it an approximation
            self.add(s, p * q / total, approximated=s != prefix)
        # what stays unknown is unread mass: neither valid nor invalid

    def follow(self, j: int, prefix: str, p: float, body: Callable[[str], str | None] | None = None) -> None:
        """Position ``j`` of the generated answer, reached with probability ``p`` after ``prefix``."""
        if j >= len(self.tokens):  # the answer ended right after the number
            self.add(prefix, p, approximated=False)
            return
        generated = self.tokens[j].token
        generated_body = body(generated) if body else generated
        for text, q in _alternatives(self.tokens[j]):
            rest = body(text) if body else text
            if rest is None:  # does not continue the answer as the generated token did
                self.invalid += p * q
                continue
            d = (_DIGITS.match(rest) or _DIGITS.match("")).group()  # type: ignore[union-attr]
            if not d:
                if prefix:
                    self.add(prefix, p * q, approximated=False)
                elif rest.strip():
                    self.invalid += p * q
                # whitespace before a number that may still follow: unread
            elif len(d) < len(rest):
                self.add(prefix + d, p * q, approximated=False)
            elif len(prefix + d) > self.max_digits:
                self.invalid += p * q
            elif text == generated and rest == generated_body:
                self.follow(j + 1, prefix + d, p * q)
            else:
                self.branch(j + 1, prefix + d, p * q)


def _first_body(generated: str, offset: int) -> Callable[[str], str | None]:
    """At the score's first token: an alternative's text after what the generated token had before
    the score (whitespace in front of the number may differ), or None when it does not continue so."""
    before = generated[:offset].strip()

    def body(text: str) -> str | None:
        if text.startswith(generated[:offset]):
            return text[offset:]
        stripped = text.lstrip()
        if stripped.startswith(before):
            return stripped[len(before):].lstrip() if before else stripped
        return None

    return body


def score_distribution(logprobs: Sequence[TokenLogprob], locate: Locator, valid: Collection[int], *,
                       answer: str = "") -> ScoreDistribution:
    """The distribution over ``valid`` scores where ``locate`` finds the score in the answer's tokens.

    ``answer`` (the parsed text) narrows the search to it when the tokens hold more (e.g. thinking).
    Raises :class:`ParseFailure` without log-probabilities, when the score is not among the tokens,
    or when no valid score has any probability.
    """
    if not logprobs:
        raise ParseFailure(NO_LOGPROBS)
    joined = "".join(t.token for t in logprobs)
    start = joined.find(answer) if answer else -1
    start = max(start, 0)
    found = locate(joined[start:])
    if found is None:
        raise ParseFailure("the score was not found among the answer's tokens")
    at = start + found
    ends, pos = [], 0
    for t in logprobs:
        pos += len(t.token)
        ends.append(pos)
    k = next(i for i, e in enumerate(ends) if e > at)
    offset = at - (ends[k] - len(logprobs[k].token))
    first = _first_body(logprobs[k].token, offset)
    generated: dict[int, str] = {}
    written = ""
    for m in range(k, len(logprobs)):  # the digits of the answer's own number before each position
        generated[m] = written
        text = (first(logprobs[m].token) or "") if m == k else logprobs[m].token
        if not text or not text.isdigit() or not text.isascii():
            break
        written += text
    walk = _Walk(logprobs, valid, generated)
    walk.follow(k, "", 1.0, first)
    valid_mass = math.fsum(walk.mass.values())
    if valid_mass <= 0.0:
        raise ParseFailure("no probability on any valid score where the answer writes its score")
    digits = (_DIGITS.match(joined, at) or _DIGITS.match("")).group()  # type: ignore[union-attr]
    probabilities = tuple((v, walk.mass[v] / valid_mass) for v in sorted(walk.mass))
    return ScoreDistribution(probabilities, valid_mass, walk.invalid,
                             math.fsum(walk.approx.values()) / valid_mass, _valid_number(digits, valid))


__all__ = ["NO_LOGPROBS", "SCORE_MODES", "TOP_LOGPROBS", "Locator", "ScoreDistribution", "ScoreMode",
           "json_key_locator", "regex_locator", "score_distribution", "score_mode_field", "score_mode_help"]
