"""Hostile file contents for the fuzz suite, and the checks every reader and command must pass.

A hostile file is random bytes, or a valid file damaged by one to three of:
truncation, a byte that is not UTF-8, a byte-order mark, CRLF or bare CR line
ends, a 2 MB line or cell, a line replaced by JSON of some other type, a
line dropped or repeated, tabs and commas swapped, Unicode line separators.
A hostile JSON document is a valid one with a value somewhere replaced by
one of another type (or replaced altogether).

The contract (issue 13): a reader returns or raises ``InputError`` with a
one-line message; a command exits 0 (the input happened to be valid) or 2
with exactly one ``polyjudge: error:`` line (or a click usage error), and
never prints a traceback. Anything else escapes the test and fails it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from polyjudge.cli.main import main
from polyjudge.data.errors import MAX_MESSAGE, InputError

# Generated cases per test, and the exit codes commands gave, printed at the end of the session
# (see conftest.py).
CASES: Counter[str] = Counter()
EXITS: Counter[int] = Counter()

HUGE = 2_000_000
BOM = b"\xef\xbb\xbf"
BAD_BYTES = (b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\x00", b"\xf4\x90\x80\x80")
ODD_TEXT = ("\u2028", "\x85", "\x0b", "\x1c", "\ufeff", "\t", '"', "<v>", "</v>", "\\", "{", "[")


def fuzz_settings(max_examples: int) -> settings:
    """Deterministic (the suite must not flicker), no deadline (file IO), few examples.

    For a deeper search set ``POLYJUDGE_FUZZ_SCALE`` (multiplies the examples) and
    ``POLYJUDGE_FUZZ_RANDOM=1`` (a fresh random search each run).
    """
    scale = float(os.environ.get("POLYJUDGE_FUZZ_SCALE", "1"))
    return settings(max_examples=max(1, int(max_examples * scale)), deadline=None,
                    derandomize=os.environ.get("POLYJUDGE_FUZZ_RANDOM") != "1", database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def count(test: str) -> None:
    CASES[test] += 1


# --------------------------------------------------------------------------- strategies

def json_values() -> st.SearchStrategy[Any]:
    """Any JSON value, including the awkward ones (huge integers, NaN, infinities, deep lists)."""
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.just(10**400), st.just(-(10**30)),
                       st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                       st.sampled_from(["", "0", "nan", "inf", "1e400", "A", "major", "ok"]))
    nested = st.recursive(leaves, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                          max_leaves=12)
    return st.one_of(nested, st.just([[[[[[[[[[[]]]]]]]]]]]))


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@st.composite
def damaged(draw: st.DrawFn, valid: bytes) -> bytes:
    """``valid`` with one to three kinds of damage."""
    data = valid
    for op in draw(st.lists(st.sampled_from(_OPS), min_size=1, max_size=3)):
        data = op(draw, data)
    return data


def _truncate(draw: st.DrawFn, data: bytes) -> bytes:
    return data[:draw(st.integers(0, max(len(data) - 1, 0)))]


def _bad_byte(draw: st.DrawFn, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    return data[:at] + draw(st.sampled_from(BAD_BYTES)) + data[at:]


def _bom(draw: st.DrawFn, data: bytes) -> bytes:
    return BOM + data


def _crlf(draw: st.DrawFn, data: bytes) -> bytes:
    return data.replace(b"\n", draw(st.sampled_from([b"\r\n", b"\r", b"\n\n", b"\r\r\n"])))


def _huge(draw: st.DrawFn, data: bytes) -> bytes:
    piece = draw(st.sampled_from([b"x", b"\t", b'"', b"{", b"\xc3\xa9", b" ", b"<v>"])) * (HUGE // 2)
    at = draw(st.integers(0, len(data)))
    if draw(st.booleans()):  # a whole line
        return data[:at] + b"\n" + piece + b"\n" + data[at:]
    return data[:at] + piece + data[at:]  # inside a cell


def _json_line(draw: st.DrawFn, data: bytes) -> bytes:
    lines = _lines(data)
    k = draw(st.integers(0, len(lines) - 1))
    lines[k] = json.dumps(draw(json_values())).encode()
    return b"\n".join(lines)


def _drop_or_repeat(draw: st.DrawFn, data: bytes) -> bytes:
    lines = _lines(data)
    k = draw(st.integers(0, len(lines) - 1))
    if draw(st.booleans()):
        del lines[k]
    else:
        lines.insert(k, lines[k])
    return b"\n".join(lines)


def _separators(draw: st.DrawFn, data: bytes) -> bytes:
    if draw(st.booleans()):
        return data.replace(b"\t", b",") if draw(st.booleans()) else data.replace(b",", b"\t")
    at = draw(st.integers(0, len(data)))
    return data[:at] + draw(st.sampled_from(ODD_TEXT)).encode() + data[at:]


def _cells(draw: st.DrawFn, data: bytes) -> bytes:
    """One cell (between tabs or commas) replaced by awkward text."""
    lines = _lines(data)
    k = draw(st.integers(0, len(lines) - 1))
    sep = b"\t" if b"\t" in lines[k] else b","
    cells = lines[k].split(sep)
    j = draw(st.integers(0, len(cells) - 1))
    cells[j] = draw(st.sampled_from([b"", b"-1", b"nan", b"inf", b"1e999", b"9" * 5000, b"None", b"No-error",
                                     b"\xc2\xa0", "\u00b2".encode(), b"<v>", b"</v>x<v>", b"0.5", b"A"]))
    lines[k] = sep.join(cells)
    return b"\n".join(lines)


_OPS: tuple[Callable[[st.DrawFn, bytes], bytes], ...] = (
    _truncate, _bad_byte, _bom, _crlf, _huge, _json_line, _drop_or_repeat, _separators, _cells)


def hostile(valid: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes or a damaged ``valid`` file (damage far more often: it gets past the first line)."""
    return st.one_of(st.binary(max_size=200), damaged(valid), damaged(valid), damaged(valid))


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def json_damaged(draw: st.DrawFn, valid: Any) -> Any:
    """``valid`` (parsed JSON) with one value somewhere replaced by a value of any type."""
    doc = json.loads(json.dumps(valid))
    path = draw(st.sampled_from(_paths(doc)))
    if not path:
        return draw(json_values())
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = draw(json_values())
    return doc


def hostile_json(valid: Any) -> st.SearchStrategy[bytes]:
    """A JSON file: the valid document with a value of the wrong type, or hostile bytes."""
    as_text = st.builds(lambda d: json.dumps(d).encode(), json_damaged(valid))
    return st.one_of(as_text, as_text, hostile(json.dumps(valid, indent=1).encode()))


# --------------------------------------------------------------------------- checks

def check_reader(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Call a reader: it returns, or raises InputError with a one-line, bounded message."""
    try:
        return fn(*args, **kw)
    except InputError as exc:
        message = str(exc)
        assert len(message.splitlines()) == 1, message[:300]
        assert len(exc.reason) <= MAX_MESSAGE and len(message) < MAX_MESSAGE + 400, message[:300]
        return None


def run_cli(argv: Sequence[str | Path]) -> tuple[int, str, str]:
    """Run ``polyjudge ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
    return int(code or 0), out.getvalue(), err.getvalue()


def check_cli(argv: Sequence[str | Path], allowed: frozenset[int] = frozenset({0, 2})) -> int:
    """Run a command and check the contract: an allowed exit code, no traceback, and for a
    non-zero code exactly one ``polyjudge: error:`` line (or a click usage error)."""
    code, _, err = run_cli(argv)
    EXITS[code] += 1
    assert "Traceback" not in err, err[-3000:]
    assert code in allowed, f"exit {code}: {err[-2000:]}"
    errors = [ln for ln in err.splitlines() if ln.startswith("polyjudge: error:")]
    if code == 0:
        assert not errors, err[-2000:]
        return code
    usage = code == 2 and any(ln.startswith("Error:") for ln in err.splitlines())
    assert len(errors) == 1 or (usage and not errors), err[-2000:]
    assert all(len(ln) < MAX_MESSAGE + 400 and "\r" not in ln for ln in errors), errors[0][:300]
    return code


def fresh_dir(root: Path, name: str = "case") -> Path:
    """An empty directory for one example (examples reuse one temporary root)."""
    d = root / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d
