"""Prompts that share a long value (a whole document): encoded, hashed and compared once per value.

With document context every segment's prompt holds the whole document: a
10,000-segment document makes 10,000 prompts of about a megabyte each.
Encoding, hashing and comparing each of them in full is quadratic work
(gigabytes), although they differ only in a few hundred bytes. A message
rendered from a template keeps its pieces (:attr:`Message.parts`); a piece of
at least :data:`LONG` characters is a *long piece*, and the same long piece
(the same string object, shared by the document's prompts) is encoded once:

* :func:`hash_canonical` gives the very bytes' SHA-256 that hashing the
  canonical JSON does (stored keys stay valid), with the hash state after
  the JSON up to and including a long piece kept and copied for the next
  prompt that starts the same way;
* :class:`Blob` is a prompt's bytes as short runs and long pieces, so a
  prompt's size and the prefix it shares with the previous one (for the
  provider's prompt cache) take time in the short runs only.

Messages without long pieces take the plain path everywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring  # json.dumps' own (C) escaping
from typing import Any

from polyjudge.data.chat import Message

# A piece of at least this many characters is encoded and hashed once, however many prompts hold it.
LONG = 1 << 15
# Long pieces (and hash states) remembered: a document's prompts come one after another.
_REMEMBERED = 8


@dataclass(frozen=True, slots=True, eq=False)
class LongPiece:
    """A long piece of text, encoded once: UTF-8 for sizes and blobs, JSON-escaped UTF-8 for hashes."""

    text: str
    utf8: bytes
    escaped: bytes


class _Pieces:
    """The long pieces met lately, by identity (each entry keeps its string alive, so ids stay valid)."""

    def __init__(self) -> None:
        self._recent: list[LongPiece] = []

    def get(self, text: str) -> LongPiece:
        for piece in self._recent:
            if piece.text is text:
                return piece
        escaped = _escaped(text).encode("utf-8")
        piece = LongPiece(text, text.encode("utf-8", "surrogatepass"), escaped)
        self._recent = [piece, *self._recent[:_REMEMBERED - 1]]
        return piece


_PIECES = _Pieces()


def has_long_piece(messages: Sequence[Message]) -> bool:
    """Whether any message was joined from a long piece (the shared-document case)."""
    for m in messages:
        if len(m.content) >= LONG and m.parts is not None and any(len(p) >= LONG for p in m.parts):
            return True
    return False


def _runs(message: Message) -> list[str | LongPiece]:
    """A message's pieces with the short ones joined: text runs between long pieces."""
    out: list[str | LongPiece] = []
    short: list[str] = []
    for part in message.parts or (message.content,):
        if len(part) >= LONG:
            out.append("".join(short))
            short = []
            out.append(_PIECES.get(part))
        else:
            short.append(part)
    out.append("".join(short))
    return out


class _HashStates:
    """SHA-256 states after a JSON prefix and a long piece, kept for the next prompt with the same start."""

    def __init__(self) -> None:
        self._recent: list[tuple[bytes, LongPiece, Any]] = []

    def after(self, head: bytes, piece: LongPiece) -> Any:
        for known_head, known_piece, state in self._recent:
            if known_piece is piece and known_head == head:
                return state.copy()
        state = hashlib.sha256(head)
        state.update(piece.escaped)
        self._recent = [(head, piece, state), *self._recent[:_REMEMBERED - 1]]
        return state.copy()


_STATES = _HashStates()
def message_json(role: str, content: str) -> str:
    """One message as the canonical JSON writes it (keys sorted, no spaces, ensure_ascii=False)."""
    return f'{{"content":{encode_basestring(content)},"role":{encode_basestring(role)}}}'


def hash_canonical(head: str, tail: str, messages: Sequence[Message]) -> str:
    """SHA-256 of ``head + messages as a JSON array + tail`` in UTF-8: the canonical JSON of a
    request whose other fields give ``head`` and ``tail`` (see ``plan.prompt_hash``)."""
    chunks: list[bytes | LongPiece] = []
    opening = head + "["
    for k, message in enumerate(messages):
        chunks.append((opening + ("," if k else "") + '{"content":"').encode("utf-8"))
        opening = ""
        for run in _runs(message):  # message text is escaped as JSON escapes it, piece by piece
            chunks.append(run if isinstance(run, LongPiece) else _escaped(run).encode("utf-8"))
        chunks.append(f'","role":{encode_basestring(message.role)}}}'.encode())
    chunks.append((opening + "]" + tail).encode("utf-8"))
    return _hash_chunks(chunks)


def _hash_chunks(chunks: list[bytes | LongPiece]) -> str:
    """SHA-256 of byte runs and long pieces (their JSON-escaped bytes), in order; the state after the
    first long piece comes from :data:`_STATES` when a prompt before started the same way."""
    state: Any = None
    head: list[bytes] = []
    for chunk in chunks:
        if not isinstance(chunk, LongPiece):
            head.append(chunk)
            continue
        if state is None:
            state = _STATES.after(b"".join(head), chunk)
        else:
            state.update(b"".join(head))
            state.update(chunk.escaped)
        head = []
    if state is None:
        return hashlib.sha256(b"".join(head)).hexdigest()
    state.update(b"".join(head))
    return str(state.hexdigest())


def _escaped(text: str) -> str:
    """``text`` as it appears inside a JSON string written with ensure_ascii=False."""
    return str(encode_basestring(text))[1:-1]


@dataclass(frozen=True, slots=True)
class Blob:
    """A prompt's bytes (roles and contents, as the prefix count reads them) as short runs and long pieces."""

    runs: tuple[bytes | LongPiece, ...]

    def __len__(self) -> int:
        return sum(len(r.utf8) if isinstance(r, LongPiece) else len(r) for r in self.runs)

    def flat(self, start: int = 0) -> bytes:
        """The bytes from run ``start`` on (the slow path of a prefix that ends oddly)."""
        return b"".join(r.utf8 if isinstance(r, LongPiece) else r for r in self.runs[start:])


def blob_of(messages: Sequence[Message]) -> Blob:
    """``b"\\x00".join(role + b"\\x01" + content)`` of ``messages``, as runs and long pieces."""
    runs: list[bytes | LongPiece] = []
    short = b""
    for k, m in enumerate(messages):
        short += (b"\x00" if k else b"") + m.role.encode() + b"\x01"
        for run in _runs(m):
            if isinstance(run, LongPiece):
                runs.append(short)
                runs.append(run)
                short = b""
            else:
                short += run.encode("utf-8", "surrogatepass")
    runs.append(short)
    return Blob(tuple(runs))


def prompt_bytes(messages: Sequence[Message]) -> int:
    """UTF-8 bytes of the messages' contents (a long piece is encoded once, however many prompts hold it)."""
    if not has_long_piece(messages):
        return sum(len(m.content.encode("utf-8", "surrogatepass")) for m in messages)
    total = 0
    for m in messages:
        for run in _runs(m):
            total += len(run.utf8) if isinstance(run, LongPiece) else len(run.encode("utf-8", "surrogatepass"))
    return total


def common_prefix(a: Blob, b: Blob, compare: Callable[[bytes, bytes], int]) -> int:
    """Length of the common prefix of two blobs: a long piece both hold at the same place counts
    without being compared; ``compare(x, y)`` measures the common prefix of two byte strings."""
    total = 0
    for k, (x, y) in enumerate(zip(a.runs, b.runs)):
        if isinstance(x, LongPiece) and x is y:
            total += len(x.utf8)
            continue
        if isinstance(x, bytes) and isinstance(y, bytes):
            shared = compare(x, y)
            total += shared
            if shared == len(x) == len(y):
                continue
            if shared < min(len(x), len(y)):
                return total
        else:  # a long piece against something else: compare the bytes from here on
            return total + compare(a.flat(k), b.flat(k))
        return total + compare(a.flat(k)[shared:], b.flat(k)[shared:])
    return total


__all__ = ["LONG", "Blob", "LongPiece", "blob_of", "common_prefix", "has_long_piece", "hash_canonical", "message_json",
           "prompt_bytes"]
