"""Candidate translations per source: the input of ``polyjudge rerank``.

Two layouts, both UTF-8 (read through :mod:`polyjudge.data.textio`):

* JSONL, one source per line: ``{"src": ..., "candidates": ["...", "..."]}``;
* JSONL or TSV (a header row), one candidate per line or row: ``src`` and ``tgt``.
  Rows with the same ``doc_id`` + ``seg_id`` (or, without ``seg_id``, the same
  source text) are one source's candidates, in the order they come.

Optional fields in either layout: ``ref`` (a human reference, for the held-out
chrF), ``src_lang``, ``tgt_lang``, ``doc_id``, ``seg_id``. Candidates keep their
input order: it is how ties are broken and which candidate is the baseline.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError

OPTIONAL = ("ref", "src_lang", "tgt_lang", "doc_id", "seg_id")


@dataclass(frozen=True, slots=True)
class SourceCandidates:
    """One source and its candidate translations, in input order (duplicates kept: in MBR a
    repeated candidate is a repeated sample of the model's distribution)."""

    src: str
    candidates: tuple[str, ...]
    ref: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    doc_id: str | None = None
    seg_id: str | None = None
    origin: str | None = None  # "file:line" of its first line, for messages

    @property
    def distinct(self) -> tuple[str, ...]:
        """The distinct candidate texts, first occurrence order (each is judged once)."""
        return tuple(dict.fromkeys(self.candidates))


def _text(row: dict[str, Any], name: str, path: str, line: int, *, required: bool) -> str | None:
    value = row.get(name)
    if value is None:
        if required:
            raise InputError(f"'{name}' is missing", path=path, line=line, field=name)
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and name in ("doc_id", "seg_id"):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"'{name}' must be text", path=path, line=line, field=name)
    if required and not value.strip():
        raise InputError(f"'{name}' is empty", path=path, line=line, field=name)
    return value


def _optional(row: dict[str, Any], path: str, line: int) -> dict[str, str | None]:
    return {name: _text(row, name, path, line, required=False) or None for name in OPTIONAL}


def _one_source(row: dict[str, Any], path: str, line: int) -> SourceCandidates:
    given = row["candidates"]
    if not isinstance(given, list) or not given:
        raise InputError("'candidates' must be a non-empty list of texts", path=path, line=line, field="candidates")
    cands = []
    for k, c in enumerate(given, 1):
        if not isinstance(c, str) or not c.strip():
            raise InputError(f"candidate {k} must be a non-empty text", path=path, line=line, field="candidates")
        cands.append(c)
    src = _text(row, "src", path, line, required=True)
    assert src is not None
    return SourceCandidates(src, tuple(cands), origin=f"{path}:{line}", **_optional(row, path, line))


def _grouped(rows: Iterator[tuple[int, dict[str, Any]]], path: str) -> list[SourceCandidates]:
    """One candidate per row, grouped by (doc_id, seg_id), else by the source text."""
    groups: dict[tuple[Any, ...], SourceCandidates] = {}
    for line, row in rows:
        src = _text(row, "src", path, line, required=True)
        tgt = _text(row, "tgt", path, line, required=True)
        assert src is not None and tgt is not None
        extra = _optional(row, path, line)
        key: tuple[Any, ...] = ("id", extra["doc_id"], extra["seg_id"]) if extra["seg_id"] is not None \
            else ("src", extra["doc_id"], src)
        found = groups.get(key)
        if found is None:
            groups[key] = SourceCandidates(src, (tgt,), origin=f"{path}:{line}", **extra)
            continue
        if found.src != src:
            raise InputError(f"the source differs from that of line {found.origin} (same doc_id and seg_id)",
                             path=path, line=line, field="src")
        if extra["ref"] is not None and found.ref is not None and extra["ref"] != found.ref:
            raise InputError("the reference differs from that of the source's first row", path=path, line=line,
                             field="ref")
        groups[key] = replace(found, candidates=(*found.candidates, tgt), ref=found.ref or extra["ref"])
    return list(groups.values())


def _jsonl(path: Path) -> list[SourceCandidates]:
    from polyjudge.data.readers import iter_jsonl

    rows = list(iter_jsonl(path, user_text=True))
    per_source = [r for _, r in rows if "candidates" in r]
    if per_source and len(per_source) != len(rows):
        line = next(n for n, r in rows if "candidates" not in r)
        raise InputError("mixes lines with 'candidates' and lines without: use one layout", path=str(path),
                         line=line, field="candidates")
    if per_source:
        return [_one_source(r, str(path), n) for n, r in rows]
    return _grouped(iter(rows), str(path))


def _tsv(path: Path) -> list[SourceCandidates]:
    from polyjudge.data.readers import iter_delimited

    rows = iter_delimited(path, "\t")
    first = next(rows, None)
    if first is None:
        raise InputError("empty file (a header row with 'src' and 'tgt' is needed)", path=str(path), line=1)
    header = [h.strip() for h in first[1]]
    for name in ("src", "tgt"):
        if name not in header:
            raise InputError(f"header has no '{name}' column (found: {', '.join(header)})", path=str(path),
                             line=first[0], field=name)

    def cells() -> Iterator[tuple[int, dict[str, Any]]]:
        for line, row in rows:
            if not row or row == [""]:
                continue
            if len(row) != len(header):
                raise InputError(f"expected {len(header)} columns, found {len(row)}", path=str(path), line=line)
            yield line, dict(zip(header, row))

    return _grouped(cells(), str(path))


def read_candidates(path: str | Path, *, src_lang: str | None = None,
                    tgt_lang: str | None = None) -> list[SourceCandidates]:
    """The sources and candidates of ``path`` (``.jsonl`` or ``.tsv``; see the module docstring);
    ``src_lang``/``tgt_lang`` are given to sources without theirs."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found" if not p.exists() else "not a file", path=str(p))
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        found = _jsonl(p)
    elif suffix in (".tsv", ".txt"):
        found = _tsv(p)
    else:
        raise InputError("candidates are read from .jsonl or .tsv files", path=str(p))
    if not found:
        raise InputError("no candidates in file", path=str(p))
    return with_languages(found, src_lang, tgt_lang)


def with_languages(sources: Sequence[SourceCandidates], src_lang: str | None,
                   tgt_lang: str | None) -> list[SourceCandidates]:
    """``sources`` with the given languages filled in where they have none."""
    return [replace(s, src_lang=s.src_lang or src_lang, tgt_lang=s.tgt_lang or tgt_lang) for s in sources]


def from_lists(sources: Sequence[str], candidates: Sequence[Sequence[str]], *,
               references: Sequence[str] | None = None) -> list[SourceCandidates]:
    """Sources and their candidate lists given in code (the Python API's form)."""
    if len(sources) != len(candidates):
        raise InputError(f"{len(sources)} sources but {len(candidates)} candidate lists", field="candidates")
    if references is not None and len(references) != len(sources):
        raise InputError(f"{len(sources)} sources but {len(references)} references", field="references")
    out = []
    for k, (src, cands) in enumerate(zip(sources, candidates)):
        if isinstance(cands, str) or not cands or not all(isinstance(c, str) and c.strip() for c in cands):
            raise InputError(f"source {k + 1}: candidates must be a non-empty list of non-empty texts",
                             field="candidates")
        out.append(SourceCandidates(src, tuple(cands), ref=references[k] if references is not None else None,
                                    seg_id=str(k + 1), origin=f"source {k + 1}"))
    return out


__all__ = ["SourceCandidates", "from_lists", "read_candidates", "with_languages"]
