"""Test sets read where the field keeps them: mt-metrics-eval directories and WMT25 task-1 TSVs.

mt-metrics-eval keeps one folder per test set (``wmt23``) with ``sources/LP.txt``,
``references/LP.NAME.txt``, ``system-outputs/LP/SYSTEM.txt`` (human references
copied in as systems, e.g. ``refA``) and ``documents/LP.docs`` (``DOMAIN DOCNAME``
per source line; documents are contiguous blocks). Every file is line-aligned
with the source; ``[No translation supplied]`` marks a missing output. Newer
test sets keep JSONL instead of text (``sources/LP.jsonl`` with ``source``,
references with ``target``, system outputs with ``hypothesis``), read the same way.

Conventions of the items read here (the exporter writes them back from these):

* ``seg_id`` is the 1-based line number in the test set's files (segment
  ``k`` is line ``k`` of ``sources/LP.txt``), ``system`` the file's stem and
  ``doc_id`` the document name; ``extra["domain"]`` is the document's domain.
* Items come system by system (systems sorted by name), segments in file
  order, as mt-metrics-eval's score files list them.
* ``extra["testset"]`` of every item is one :class:`TestSetInfo` (as JSON):
  the test set's root, name and language pair, the judged systems in order,
  the segment count and the reference used, so a run's items alone say how to
  write every segment of every system back in the test set's order.

The WMT25 task-1 TSV is a table with fixed columns; its keys map onto the
item's fields (``segment_id`` -> ``seg_id``, ``system_id`` -> ``system``,
``source_lang``/``target_lang`` -> the languages, verbatim) and ``set_id``,
``domain_name`` and ``method`` stay in ``extra`` (:func:`wmt25_keys` gives them
back in the file's column order).
"""

from __future__ import annotations

import errno
import json
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.fields import check_id, check_text
from polyjudge.data.records import Item

TESTSET_KEY = "testset"
DOMAIN_KEY = "domain"
NO_TRANSLATION_KEY = "no_translation"  # the system gave no output for this segment (judged as empty)
NO_TRANSLATION = "[No translation supplied]"
MTME = "mtme"
WMT25 = "wmt25"

WMT25_COLUMNS = ("doc_id", "segment_id", "source_lang", "target_lang", "set_id", "system_id", "source_segment",
                 "hypothesis_segment", "reference_segment", "domain_name", "method")
# The task-1 columns as polyjudge's fields (field -> column); the rest stay in extra.
WMT25_FIELDS = (("seg_id", "segment_id"), ("src_lang", "source_lang"), ("tgt_lang", "target_lang"),
                ("system", "system_id"), ("src", "source_segment"), ("tgt", "hypothesis_segment"),
                ("ref", "reference_segment"))
# The keys a WMT25 submission repeats for every segment, in the task's column order.
WMT25_KEYS = ("doc_id", "segment_id", "source_lang", "target_lang", "set_id", "system_id", "domain_name", "method")

# Standard references (mt-metrics-eval's meta information, in our own table): test set -> default,
# and the language pairs whose standard reference differs.
_STD_REF_DEFAULT = {"wmt19": "ref", "wmt20": "ref", "wmt21.news": "refA", "wmt21.tedtalks": "refA",
                    "wmt21.flores": "refA", "wmt22": "refA", "wmt23": "refA", "wmt23.sent": "refA",
                    "wmt24": "refA", "wmt24pp": "posteditA", "wmt25": "refA"}
_STD_REF_EXCEPTIONS = {("wmt24", "en-de"): "refB", ("wmt23", "he-en"): "refB", ("wmt23", "en-he"): "refB",
                       ("wmt22", "cs-en"): "refB", ("wmt22", "en-cs"): "refB", ("wmt21.news", "en-de"): "refC",
                       ("wmt21.news", "zh-en"): "refB", ("wmt21.tedtalks", "zh-en"): "refB",
                       ("wmt24pp", "en-de_DE"): "posteditB", ("wmt24pp", "en-is_IS"): "refA"}


@dataclass(frozen=True, slots=True)
class TestSetSelection:
    """What to read from a test set: ``--lp``, ``--systems``, ``--exclude-systems``, the reference.

    ``ref`` names the reference (``--ref``); ``None`` means the test set's
    standard one. Items get their ``ref`` whenever the test set has that
    reference; ``with_reference`` (the judge sees it) also leaves the reference
    itself out of the judged systems, as mt-metrics-eval scores a reference-based
    metric on every system but the reference it used.
    """

    __test__ = False  # not a pytest class, despite its name

    lp: str | None = None
    systems: tuple[str, ...] = ()
    exclude_systems: tuple[str, ...] = ()
    ref: str | None = None
    with_reference: bool = False


@dataclass(frozen=True, slots=True)
class TestSetInfo:
    """Where a run's items came from, for writing every segment of every system back in order.

    ``format`` is ``mtme`` or ``wmt25``; ``root`` the test set's folder (mtme)
    or file (wmt25); ``name`` the test set (``wmt23``); ``systems`` the judged
    systems in order; ``n_segments`` the segments per system; ``ref`` the
    reference given to the items (``None``: none); ``documents``/``domains``
    whether the items carry them. Kept as ``extra["testset"]`` of every item.
    """

    __test__ = False

    format: str
    root: str
    name: str
    lp: str | None
    systems: tuple[str, ...] = ()
    n_segments: int = 0
    ref: str | None = None
    documents: bool = False
    domains: bool = False
    all_systems: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "root": self.root, "name": self.name, "lp": self.lp,
                "systems": list(self.systems), "all_systems": list(self.all_systems),
                "n_segments": self.n_segments, "ref": self.ref, "documents": self.documents,
                "domains": self.domains}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TestSetInfo:
        """The record as :meth:`to_json` wrote it (InputError when it is not one)."""
        try:
            return cls(format=str(d["format"]), root=str(d["root"]), name=str(d["name"]),
                       lp=None if d.get("lp") is None else str(d["lp"]),
                       systems=tuple(str(s) for s in d.get("systems", ())),
                       n_segments=int(d.get("n_segments", 0)),
                       ref=None if d.get("ref") is None else str(d["ref"]),
                       documents=bool(d.get("documents")), domains=bool(d.get("domains")),
                       all_systems=tuple(str(s) for s in d.get("all_systems", ())))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not a test-set record: {textio.short(str(exc))}", field=TESTSET_KEY) from None


def origin_testset(items: Sequence[Item]) -> TestSetInfo | None:
    """The test set the items were read from (the first item's record), or ``None``."""
    for it in items[:1]:
        record = it.extra.get(TESTSET_KEY)
        if isinstance(record, Mapping):
            return TestSetInfo.from_json(record)
    return None


def wmt25_keys(item: Item) -> dict[str, str]:
    """An item read from a WMT25 task-1 TSV: its keys under the task's column names, in order."""
    values = {"doc_id": item.doc_id, "segment_id": item.seg_id, "source_lang": item.src_lang,
              "target_lang": item.tgt_lang, "system_id": item.system}
    return {key: str(values[key] if key in values else item.extra.get(key, "") or "") for key in WMT25_KEYS}


def standard_reference(name: str, lp: str) -> str | None:
    """The reference mt-metrics-eval calls standard for test set ``name`` and pair ``lp``, if known."""
    return _STD_REF_EXCEPTIONS.get((name, lp), _STD_REF_DEFAULT.get(name))


def is_mtme_dir(path: Path) -> bool:
    """A folder in mt-metrics-eval's layout (it has ``sources/`` and ``system-outputs/``)."""
    return path.is_dir() and (path / "sources").is_dir() and (path / "system-outputs").is_dir()


# The text field of each kind of mt-metrics-eval JSONL file.
_JSONL_FIELDS = {"source": "source", "reference": "target", "translation": "hypothesis"}
_SUFFIXES = (".txt", ".jsonl")


def _regular_file(path: Path) -> Path:
    """``path`` if it is a regular file (through a symlink); anything else is refused before it is
    opened: a dangling link or a loop cannot be read, a folder is not a file, a pipe would hang."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        why = "a symlink loop" if exc.errno == errno.ELOOP else "a dangling symlink" if path.is_symlink() \
            else exc.strerror or "cannot be read"
        raise InputError(f"cannot be read ({why}); give a file", path=str(path)) from None
    if not stat.S_ISREG(mode):
        raise InputError("is not a regular file (a folder, pipe or device); give a file", path=str(path))
    return path


def _with_suffixes(folder: Path, pattern: str) -> list[Path]:
    """Files ``pattern.txt`` and ``pattern.jsonl`` in ``folder``, by name; one name with both
    suffixes is refused (neither would be chosen silently)."""
    found = sorted(p for suffix in _SUFFIXES for p in folder.glob(pattern + suffix))
    seen: dict[str, Path] = {}
    for path in found:
        other = seen.setdefault(path.with_suffix("").name, path)
        if other is not path:
            raise InputError(f"both {other.name} and {path.name} are present; keep one", path=str(folder))
    return found


def _language_pairs(root: Path) -> list[str]:
    return sorted({p.name.rsplit(".", 1)[0] for p in _with_suffixes(root / "sources", "*")})


def _source_file(root: Path, lp: str) -> Path:
    # _choose_lp saw it among the pairs (a broken link too: it is refused when read)
    return next(p for p in (root / "sources" / f"{lp}{s}" for s in _SUFFIXES) if p.is_symlink() or p.exists())


def _choose_lp(root: Path, lp: str | None) -> str:
    pairs = _language_pairs(root)
    if lp is None:
        if len(pairs) == 1:
            return pairs[0]
        raise InputError(f"name the language pair to read ({', '.join(pairs) or 'none in sources/'})",
                         path=str(root), field="lp", setting=True)
    if lp not in pairs:
        raise InputError(f"no sources/{lp}.txt or .jsonl (language pairs: {', '.join(pairs) or 'none'})",
                         path=str(root), field="lp", setting=True)
    return lp


def _jsonl_texts(path: Path, what: str) -> list[str]:
    """The ``source``/``target``/``hypothesis`` field of every line of an mt-metrics-eval JSONL file."""
    name = _JSONL_FIELDS[what]
    texts = []
    for n, line in textio.iter_lines(path):
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise InputError("invalid JSON", path=str(path), line=n) from None
        value = row.get(name) if isinstance(row, dict) else None
        if not isinstance(value, str):
            raise InputError(f"expected a string '{name}' field, got {value!r}", path=str(path), line=n, field=name)
        texts.append(value)
    return texts


def _read_segments(path: Path, n: int | None, what: str) -> list[str | None]:
    """A line-aligned file; ``None`` for mt-metrics-eval's no-translation marker."""
    _regular_file(path)
    lines = _jsonl_texts(path, what) if path.suffix == ".jsonl" else textio.read_lines(path)
    if n is not None and len(lines) != n:
        raise InputError(f"{what} has {len(lines)} lines but the source has {n}", path=str(path),
                         line=min(len(lines), n) + 1)
    out: list[str | None] = []
    for k, text in enumerate(lines, start=1):
        check_text(text, path=str(path), line=k, field=what)
        text = text.rstrip()  # as mt-metrics-eval reads its files
        out.append(None if text == NO_TRANSLATION else text)
    return out


def _documents(root: Path, lp: str, n: int) -> tuple[list[str], list[str]] | None:
    """(domain, document) per segment from ``documents/LP.docs``, or None when there is no such file."""
    path = root / "documents" / f"{lp}.docs"
    if not path.is_file():
        return None
    domains, docs = [], []
    for k, line in enumerate(textio.read_lines(path), start=1):
        parts = line.split()
        if len(parts) != 2:
            raise InputError(f"expected 'DOMAIN DOCNAME', got {textio.short(line)!r}", path=str(path), line=k,
                             field="documents")
        check_id(parts[1], path=str(path), line=k, field="doc_id")
        domains.append(parts[0])
        docs.append(parts[1])
    if len(docs) != n:
        raise InputError(f"has {len(docs)} lines but the source has {n}", path=str(path), line=min(len(docs), n) + 1)
    separate = root / "domains" / f"{lp}.domains"  # one domain per source line, where a test set has it
    if separate.is_file():
        domains = [d or "" for d in _read_segments(separate, n, "domain")]
    return domains, docs


def _references(root: Path, lp: str) -> dict[str, Path]:
    out = {}
    for path in _with_suffixes(root / "references", f"{lp}.*"):
        out[path.name[len(lp) + 1:].rsplit(".", 1)[0]] = path
    return out


def _systems(root: Path, lp: str) -> dict[str, Path]:
    folder = root / "system-outputs" / lp
    if not folder.is_dir():
        raise InputError(f"no system-outputs/{lp}/ folder", path=str(root), field="lp", setting=True)
    found = {p.stem: p for p in _with_suffixes(folder, "*")}
    if not found:
        raise InputError("no system outputs (SYSTEM.txt or SYSTEM.jsonl files)", path=str(folder))
    return found


def _pick_reference(root: Path, lp: str, refs: Mapping[str, Path], wanted: TestSetSelection) -> str | None:
    """The reference to use: ``--ref``, else the standard one, else the only one; None without any."""
    if wanted.ref is not None:
        if wanted.ref not in refs:
            raise InputError(f"no reference '{wanted.ref}' (references: {', '.join(refs) or 'none'})",
                             path=str(root / "references"), field="ref", setting=True)
        return wanted.ref
    standard = standard_reference(root.name, lp)
    if standard in refs:
        return standard
    if len(refs) == 1:
        return next(iter(refs))
    if wanted.with_reference:
        raise InputError(f"no standard reference known for {root.name} {lp}: name one with ref "
                         f"({', '.join(refs) or 'no references/ files'})", path=str(root), field="ref", setting=True)
    return None


def _pick_systems(found: Sequence[str], wanted: TestSetSelection, ref: str | None, root: Path) -> tuple[str, ...]:
    for name in (*wanted.systems, *wanted.exclude_systems):
        if name not in found:
            raise InputError(f"no system '{name}' (systems: {textio.short(', '.join(found))})", path=str(root),
                             field="systems" if name in wanted.systems else "exclude_systems", setting=True)
    chosen = [s for s in found if (not wanted.systems or s in wanted.systems) and s not in wanted.exclude_systems]
    if wanted.with_reference and ref is not None:
        chosen = [s for s in chosen if s != ref]
    if not chosen:
        raise InputError("no system left to judge after systems/exclude_systems", path=str(root),
                         field="systems", setting=True)
    return tuple(chosen)


def read_mtme(root: Path, wanted: TestSetSelection) -> list[Item]:
    """Every segment of every chosen system of one language pair of an mt-metrics-eval test set."""
    root = Path(root).resolve()
    if not is_mtme_dir(root):
        raise InputError("not an mt-metrics-eval test-set folder (it needs sources/ and system-outputs/)",
                         path=str(root))
    lp = _choose_lp(root, wanted.lp)
    src_path = _source_file(root, lp)
    sources = _read_segments(src_path, None, "source")
    n = len(sources)
    docs = _documents(root, lp, n)
    refs = _references(root, lp)
    ref_name = _pick_reference(root, lp, refs, wanted)
    ref_lines = _read_segments(refs[ref_name], n, "reference") if ref_name is not None else None
    outputs = _systems(root, lp)
    for name in outputs:
        check_id(name, path=str(outputs[name]), line=None, field="system")
    systems = _pick_systems(list(outputs), wanted, ref_name, root)
    info = TestSetInfo(format=MTME, root=str(root), name=root.name, lp=lp, systems=systems, n_segments=n,
                       ref=ref_name, documents=docs is not None, domains=docs is not None,
                       all_systems=tuple(outputs)).to_json()
    src_lang, _, tgt_lang = lp.partition("-")
    items = []
    for system in systems:
        hyps = _read_segments(outputs[system], n, "translation")
        for k in range(n):
            extra: dict[str, Any] = {TESTSET_KEY: info}
            if docs is not None:
                extra[DOMAIN_KEY] = docs[0][k]
            if hyps[k] is None:
                extra[NO_TRANSLATION_KEY] = True
            items.append(Item(src=sources[k] or "", tgt=hyps[k] or "",
                              ref=ref_lines[k] if ref_lines is not None else None, src_lang=src_lang or None,
                              tgt_lang=tgt_lang or None, doc_id=docs[1][k] if docs is not None else None,
                              seg_id=str(k + 1), system=system, extra=extra,
                              origin=f"{outputs[system]}:{k + 1}"))
    return items


__all__ = ["DOMAIN_KEY", "MTME", "NO_TRANSLATION", "NO_TRANSLATION_KEY", "TESTSET_KEY", "WMT25", "WMT25_COLUMNS",
           "WMT25_FIELDS", "WMT25_KEYS", "TestSetInfo", "TestSetSelection", "is_mtme_dir", "read_mtme",
           "standard_reference", "origin_testset", "wmt25_keys"]
