"""Locating error spans in the original translation.

Three answer formats are supported (the ablation of the TSA paper):

* numbered inline tags (:func:`extract_tagged_spans`): error *k* is the text
  between ``<vk>`` and ``</vk>``, matched by number, never by position;
* the erroneous text itself (:func:`locate_text_spans`);
* start/end character offsets (:func:`validate_index_spans`).

Every result is in code-point offsets of the *original* translation. When the
model's untagged text differs from the translation, the two are aligned
character by character and spans are projected back through the alignment;
a poor alignment fails the judgment instead of letting offsets drift.
Everything unusual is reported as a *problem* string; problems that leave an
error without a location are *fatal* unless the caller keeps such errors.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_right
from dataclasses import dataclass, field

TAG_RE = re.compile(r"<(/?)v(\d{1,4})>")
# Enumerating parses of an answer whose translation contains tag-like text is
# exponential in the number of such tokens; past this we fall back to alignment.
_MAX_PARSES = 256


@dataclass(frozen=True, slots=True)
class Located:
    """A located (or unlocatable) span for error ``index``; offsets end-exclusive."""

    index: int
    start: int | None
    end: int | None


@dataclass(slots=True)
class Extraction:
    """Spans by error index plus everything noticed on the way."""

    spans: list[Located]
    problems: list[str] = field(default_factory=list)
    # Problems that leave some error without a location, or make offsets unreliable.
    fatal: list[str] = field(default_factory=list)
    exact: bool = True  # untagged text equals the translation
    similarity: float = 1.0  # alignment quality when not exact
    aligned: bool = True  # False when the alignment was too poor to project spans


@dataclass(frozen=True, slots=True)
class _Tag:
    number: int
    closing: bool
    pos: int  # offset in the untagged text
    raw: str


# --------------------------------------------------------------------------- tokenising
def _tokenise(annotated: str) -> list[tuple[str, str]]:
    """Split into ("text", s) and ("tag", s) pieces."""
    pieces: list[tuple[str, str]] = []
    pos = 0
    for m in TAG_RE.finditer(annotated):
        if m.start() > pos:
            pieces.append(("text", annotated[pos:m.start()]))
        pieces.append(("tag", m.group(0)))
        pos = m.end()
    if pos < len(annotated):
        pieces.append(("text", annotated[pos:]))
    return pieces


def _strip(pieces: list[tuple[str, str]], literal: set[int]) -> tuple[str, list[_Tag]]:
    """Untagged text and the tags (pieces in ``literal`` are kept as text)."""
    out: list[str] = []
    tags: list[_Tag] = []
    n = 0
    for i, (kind, s) in enumerate(pieces):
        if kind == "text" or i in literal:
            out.append(s)
            n += len(s)
        else:
            m = TAG_RE.fullmatch(s)
            assert m is not None
            tags.append(_Tag(int(m.group(2)), m.group(1) == "/", n, s))
    return "".join(out), tags


def _exact_parses(pieces: list[tuple[str, str]], translation: str) -> list[set[int]]:
    """Every choice of literal tag-like pieces that reproduces the translation exactly.

    Needed only when the translation itself contains text like ``<v0>``.
    Depth-first, trying "it is a tag" before "it is text", capped.
    """
    results: list[set[int]] = []
    chosen: list[int] = []

    def walk(k: int, j: int) -> None:
        if len(results) >= _MAX_PARSES:
            return
        if k == len(pieces):
            if j == len(translation):
                results.append(set(chosen))
            return
        kind, s = pieces[k]
        if kind == "text":
            if translation.startswith(s, j):
                walk(k + 1, j + len(s))
            return
        walk(k + 1, j)  # a tag
        if translation.startswith(s, j):  # literal text of the translation
            chosen.append(k)
            walk(k + 1, j + len(s))
            chosen.pop()

    walk(0, 0)
    return results


# --------------------------------------------------------------------------- tag structure
def _pair_tags(tags: list[_Tag], n_errors: int) -> tuple[dict[int, tuple[int, int]], list[str], list[str]]:
    """Spans by tag number from the tag sequence; problems and fatal problems."""
    problems: list[str] = []
    fatal: list[str] = []
    opens: dict[int, list[int]] = {}
    closes: dict[int, list[int]] = {}
    open_stack: list[int] = []
    order: list[int] = []
    for t in tags:
        if not t.closing:
            if open_stack:
                problems.append(f"tag <v{t.number}> opened inside <v{open_stack[-1]}> (nested tags)")
            opens.setdefault(t.number, []).append(t.pos)
            open_stack.append(t.number)
            if t.number not in order:
                order.append(t.number)
        else:
            closes.setdefault(t.number, []).append(t.pos)
            if t.number in open_stack:
                if open_stack[-1] != t.number:
                    problems.append(f"tag </v{t.number}> closes across <v{open_stack[-1]}> "
                                    "(overlapping tags)")
                open_stack.remove(t.number)
            else:
                problems.append(f"closing tag </v{t.number}> without an opening tag")
    numbers = sorted(set(opens) | set(closes))
    if order != sorted(order):
        problems.append("tag numbers out of order: " + " ".join(f"v{n}" for n in order))
    if numbers:
        skipped = sorted(set(range(max(numbers) + 1)) - set(numbers))
        if skipped:
            problems.append("tag numbers skipped: " + ", ".join(f"v{n}" for n in skipped))
    spans: dict[int, tuple[int, int]] = {}
    for num in numbers:
        o, c = opens.get(num, []), closes.get(num, [])
        bad: str | None = None
        if len(o) > 1 or len(c) > 1:
            bad = f"tag <v{num}> used {max(len(o), len(c))} times (duplicate number)"
        elif not o:
            bad = None if num in spans else f"tag <v{num}> has a closing tag only"
        elif not c:
            bad = f"tag <v{num}> is never closed"
        elif c[0] < o[0]:
            bad = f"tag </v{num}> comes before <v{num}>"
        if bad is not None:
            (fatal if num < n_errors else problems).append(bad)
            continue
        spans[num] = (o[0], c[0])
    for num in sorted(spans):
        if num >= n_errors:
            problems.append(f"tag <v{num}> has no matching error (only {n_errors} errors)")
    for k in range(n_errors):
        if k not in spans and k not in opens and k not in closes:
            fatal.append(f"error {k} has no tag <v{k}>")
    return {k: v for k, v in spans.items() if k < n_errors}, problems, fatal


# --------------------------------------------------------------------------- alignment
class Alignment:
    """Character alignment of a model's text to the original translation.

    Maps boundaries (0..len) of the model text to translation boundaries:
    inside an equal block offsets move one for one; a start inside a changed
    block moves to the block's start and an end to the block's end, so a span
    touching changed text is widened, never shifted onto other text.
    """

    def __init__(self, text: str, translation: str) -> None:
        sm = difflib.SequenceMatcher(None, text, translation, autojunk=False)
        self.ops = sm.get_opcodes()
        matched = sum(i2 - i1 for tag, i1, i2, _, _ in self.ops if tag == "equal")
        denom = max(len(text), len(translation))
        self.similarity = matched / denom if denom else 1.0
        self._i1 = [op[1] for op in self.ops]
        self.text_len, self.trans_len = len(text), len(translation)

    def _op_for(self, p: int, start: bool) -> tuple[str, int, int, int, int] | None:
        # the op with i1 <= p < i2 (start) / i1 < p <= i2 (end), skipping pure insertions
        k = bisect_right(self._i1, p if start else p - 1) - 1
        while 0 <= k < len(self.ops):
            op = self.ops[k]
            if op[1] == op[2]:  # insertion in the translation: no model text
                k += 1 if start else -1
                continue
            return op
        return None

    def start(self, p: int) -> int:
        op = self._op_for(p, True)
        if op is None or p >= op[2]:
            return self.trans_len
        tag, i1, _, j1, _ = op
        return j1 + (p - i1) if tag == "equal" else j1

    def end(self, p: int) -> int:
        op = self._op_for(p, False)
        if op is None:
            return 0
        tag, i1, _, j1, j2 = op
        return j1 + (p - i1) if tag == "equal" else j2

    def point(self, p: int) -> int:
        """An insertion point (omission tag): its position before the next character."""
        return self.start(p)

    def exactly_aligned(self, s: int, e: int) -> bool:
        """True when every character of [s, e) lies in an equal block."""
        for tag, i1, i2, _, _ in self.ops:
            if i2 <= s or i1 >= e:
                continue
            if tag != "equal":
                return False
        return True


# --------------------------------------------------------------------------- tagged spans
def extract_tagged_spans(annotated: str, translation: str, n_errors: int, *,
                         min_similarity: float = 0.9) -> Extraction:
    """Spans of errors ``0..n_errors-1`` from ``<vk>``-tagged text, in translation offsets."""
    pieces = _tokenise(annotated)
    problems: list[str] = []
    literal: set[int] = set()
    if TAG_RE.search(translation):
        parses = _exact_parses(pieces, translation)
        if parses:
            # fewest structural problems wins; DFS order prefers tags over literals
            scored: list[tuple[int, int, int, set[int]]] = []
            for lit in parses:
                _, tags = _strip(pieces, lit)
                _, p, f = _pair_tags(tags, n_errors)
                scored.append((len(f), len(p), len(scored), lit))
            literal = min(scored)[3]
            if len(parses) > 1:
                problems.append(f"translation contains tag-like text; {len(parses)} readings, "
                                "chose the best-formed")
        else:
            # text changed as well: keep as literal the tag-like pieces the alignment matches
            literal = _literal_by_alignment(pieces, translation)
            problems.append("translation contains tag-like text; literal tags chosen by alignment")
    untagged, tags = _strip(pieces, literal)
    by_number, tag_problems, fatal = _pair_tags(tags, n_errors)
    problems.extend(tag_problems)
    result = Extraction(spans=[], problems=problems, fatal=fatal)
    if untagged == translation:
        for k in range(n_errors):
            s_e = by_number.get(k)
            result.spans.append(Located(k, *s_e) if s_e else Located(k, None, None))
        return result
    al = Alignment(untagged, translation)
    result.exact, result.similarity = False, al.similarity
    if al.similarity < min_similarity:
        result.aligned = False
        result.fatal.append(f"untagged text differs from the translation (similarity "
                            f"{al.similarity:.2f} < {min_similarity:.2f}); spans cannot be "
                            "projected reliably")
    else:
        result.problems.append(f"untagged text differs from the translation; spans projected "
                               f"by alignment (similarity {al.similarity:.3f})")
    for k in range(n_errors):
        s_e = by_number.get(k)
        if s_e is None:
            result.spans.append(Located(k, None, None))
            continue
        result.spans.append(_project(k, s_e[0], s_e[1], al, result))
    return result


def _project(k: int, s: int, e: int, al: Alignment, result: Extraction) -> Located:
    if s == e:
        p = al.point(s)
        return Located(k, p, p)
    ps, pe = al.start(s), al.end(e)
    if pe <= ps:
        result.fatal.append(f"span of error {k} covers only text that is not in the translation")
        return Located(k, None, None)
    if not al.exactly_aligned(s, e):
        result.problems.append(f"span of error {k} touches changed text; widened to "
                               f"[{ps}, {pe})")
    return Located(k, ps, pe)


def _literal_by_alignment(pieces: list[tuple[str, str]], translation: str) -> set[int]:
    text = "".join(s for _, s in pieces)
    sm = difflib.SequenceMatcher(None, text, translation, autojunk=False)
    covered = [False] * len(text)
    for a, _, size in sm.get_matching_blocks():
        for i in range(a, a + size):
            covered[i] = True
    literal: set[int] = set()
    pos = 0
    for i, (kind, s) in enumerate(pieces):
        if kind == "tag" and all(covered[pos:pos + len(s)]):
            literal.add(i)
        pos += len(s)
    return literal


# --------------------------------------------------------------------------- text spans
def _norm_index(text: str) -> tuple[str, list[int]]:
    """Case-folded text with runs of whitespace collapsed, plus a map back to offsets."""
    out: list[str] = []
    back: list[int] = []
    prev_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if prev_space:
                continue
            prev_space = True
            out.append(" ")
        else:
            prev_space = False
            out.append(ch.lower())
        back.append(i)
    back.append(len(text))
    return "".join(out), back


def locate_text_spans(texts: list[str | None], translation: str) -> Extraction:
    """Locate each error's quoted text in the translation (the GEMBA answer format).

    Exact occurrences first; repeated quotes of the same text take successive
    occurrences. Text found more than once is reported as ambiguous; text found
    only after case/whitespace normalisation is reported; text not found at
    all is fatal. An empty or missing text is an omission without location.
    """
    result = Extraction(spans=[])
    used: dict[str, int] = {}
    norm_t, back = _norm_index(translation)
    for k, text in enumerate(texts):
        if text is None or text == "":
            result.spans.append(Located(k, None, None))
            continue
        occ = [m.start() for m in re.finditer(f"(?={re.escape(text)})", translation)]
        if occ:
            nth = used.get(text, 0)
            used[text] = nth + 1
            if len(occ) > 1:
                result.problems.append(f"error {k}: text {text!r} occurs {len(occ)} times; "
                                       f"took occurrence {min(nth, len(occ) - 1) + 1}")
            if nth >= len(occ):
                result.problems.append(f"error {k}: text {text!r} quoted more often than it occurs")
            s = occ[min(nth, len(occ) - 1)]
            result.spans.append(Located(k, s, s + len(text)))
            continue
        norm_q, _ = _norm_index(text.strip())
        i = norm_t.find(norm_q) if norm_q else -1
        if i >= 0:
            result.problems.append(f"error {k}: text {text!r} found only after case/whitespace "
                                   "normalisation")
            result.spans.append(Located(k, back[i], back[i + len(norm_q) - 1] + 1))
            continue
        result.fatal.append(f"error {k}: text {text!r} does not occur in the translation")
        result.spans.append(Located(k, None, None))
    return result


# --------------------------------------------------------------------------- index spans
def validate_index_spans(bounds: list[tuple[object, object]], translation: str) -> Extraction:
    """Check model-given (start, end) offsets against the translation's length."""
    result = Extraction(spans=[])
    n = len(translation)
    for k, (s, e) in enumerate(bounds):
        if not (isinstance(s, int) and isinstance(e, int)) or isinstance(s, bool) or isinstance(e, bool):
            result.fatal.append(f"error {k}: offsets must be integers, got {s!r}, {e!r}")
            result.spans.append(Located(k, None, None))
        elif not 0 <= s <= e <= n:
            result.fatal.append(f"error {k}: offsets [{s}, {e}) outside the translation "
                                f"(length {n}) or reversed")
            result.spans.append(Located(k, None, None))
        else:
            result.spans.append(Located(k, s, e))
    return result


def tag_translation(translation: str, spans: list[tuple[int, int]]) -> str:
    """Insert ``<vk>``/``</vk>`` for spans k = 0.. (nested or overlapping allowed).

    Used to render few-shot answers and in tests; closing tags sort before
    opening tags at the same offset so adjacent spans do not nest.
    """
    events: list[tuple[int, int, int, str]] = []
    for k, (s, e) in enumerate(spans):
        if s == e:  # omission: one empty pair, after spans closing here
            events.append((s, 1, k, f"<v{k}></v{k}>"))
        else:
            events.append((s, 2, k, f"<v{k}>"))
            events.append((e, 0, -k, f"</v{k}>"))
    events.sort()
    out: list[str] = []
    pos = 0
    for off, _, _, tag in events:
        out.append(translation[pos:off])
        out.append(tag)
        pos = off
    out.append(translation[pos:])
    return "".join(out)
