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
import re
import stat
from collections.abc import Collection, Mapping, Sequence
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


# The human scores mt-metrics-eval calls standard ("gold") per test set and level, and the systems it
# leaves out as outliers by default: facts from its meta information (meta_info.py), in our own table.
# A test set maps every level to one name unless a level is given; (test set, lp) entries override.
_SEG_SYS = ("seg", "doc", "domain", "sys")
_STD_GOLD: dict[str, dict[str, str]] = {
    "wmt19": {"sys": "wmt-z", "seg": "wmt-raw"},
    "wmt20": {"sys": "wmt-z", "doc": "wmt-raw", "seg": "wmt-raw"},
    **{name: {"sys": "wmt-z", "seg": "wmt-raw"} for name in ("wmt21.news", "wmt21.tedtalks", "wmt21.flores")},
    "wmt22": {lv: "wmt-appraise" for lv in _SEG_SYS},
    "wmt23": {lv: "da-sqm" for lv in _SEG_SYS},
    "wmt23.sent": {lv: "mqm" for lv in _SEG_SYS},
    "wmt24": {lv: "esa" for lv in _SEG_SYS},
    "wmt25": {lv: "esa-human1" for lv in _SEG_SYS},
}
_MQM = {lv: "mqm" for lv in _SEG_SYS}
_STD_GOLD_LP: dict[tuple[str, str], dict[str, str]] = {
    **{("wmt21.news", lp): _MQM for lp in ("en-de", "en-ru", "zh-en")},
    **{("wmt21.tedtalks", lp): _MQM for lp in ("en-de", "en-ru", "zh-en")},
    **{("wmt22", lp): _MQM for lp in ("en-de", "en-ru", "zh-en")},
    **{("wmt22", lp): {lv: "wmt" for lv in _SEG_SYS} for lp in ("cs-en", "de-en", "ja-en", "ru-en", "uk-en")},
    **{("wmt22", lp): {} for lp in ("de-fr", "fr-de", "ru-sah")},
    **{("wmt23", lp): _MQM for lp in ("en-de", "he-en", "zh-en")},
    **{("wmt23", lp): {} for lp in ("en-he", "en-ru", "en-uk", "ru-en", "uk-en")},
    **{("wmt24", lp): _MQM for lp in ("en-de", "en-es", "ja-zh")},
    **{("wmt25", lp): _MQM for lp in ("ja-zh_CN", "en-ko_KR")},
}
_OUTLIERS: dict[tuple[str, str], frozenset[str]] = {
    ("wmt22", "en-de"): frozenset({"M2M100_1.2B-B4"}),
    ("wmt23", "en-de"): frozenset({"synthetic_ref"}),
    ("wmt23", "zh-en"): frozenset({"synthetic_ref"}),
    **{("wmt24", lp): frozenset({"MSLC"}) for lp in ("en-de", "en-es", "ja-zh")},
}


@dataclass(frozen=True, slots=True)
class TestSetSelection:
    """What to read from a test set: ``--lp``, ``--systems``, ``--exclude-systems``, the reference.

    The one selection of a test set: judging reads the items it chooses
    (:meth:`TestSet.items`), meta-evaluation the systems it compares
    (:meth:`TestSet.compared_systems`).
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
    # meta-evaluation: keep the human translations, the references the metrics used and the outlier
    # systems, which mt-metrics-eval leaves out of correlations by default (TestSet.compared_systems)
    include_refs: bool = False


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


LEVELS = ("seg", "doc", "domain", "sys")
"""The levels of mt-metrics-eval's score files (``NAME.LEVEL.score``)."""


def score_file_name(name: str, level: str) -> str:
    """``NAME.LEVEL.score``: a metric's file in ``metric-scores/LP/`` (and a run's ``mtme/`` folder)."""
    return f"{name}.{level}.score"


def _score_files(folder: Path, prefix: str) -> dict[str, dict[str, Path]]:
    """``PREFIX NAME.LEVEL.score`` files of ``folder``: name -> level -> file (nothing when no folder)."""
    found: dict[str, dict[str, Path]] = {}
    pattern = re.compile(rf"^{re.escape(prefix)}(.+)\.({'|'.join(LEVELS)})\.score$")
    if folder.is_dir():
        for f in sorted(folder.iterdir()):
            match = pattern.match(f.name)
            if match:
                found.setdefault(match.group(1), {})[match.group(2)] = f
    return found


@dataclass(frozen=True, slots=True)
class TestSet:
    """One language pair of an mt-metrics-eval test set, as mt-metrics-eval's ``EvalSet(name, lp)``.

    The one owner of the layout: where the sources, references, system outputs, documents
    and domains are, the human scores (``human-scores/LP.NAME.LEVEL.score``) and the metric
    scores (``metric-scores/LP/NAME-REF.LEVEL.score``) per level, and what mt-metrics-eval's
    meta information says of it (standard reference and gold, outlier systems). ``items``
    reads its segments as a :class:`TestSetSelection` chooses the systems and the reference.
    """

    __test__ = False  # not a pytest class, despite its name

    root: Path
    lp: str

    @classmethod
    def open(cls, root: str | Path, lp: str | None = None) -> TestSet:
        """The pair ``lp`` of the test-set folder ``root`` (``None``: its only pair); a folder that is not
        one, or a pair it does not hold, is an InputError naming the pairs it holds."""
        folder = Path(root).resolve()
        if not is_mtme_dir(folder):
            raise InputError("not an mt-metrics-eval test-set folder (it needs sources/ and system-outputs/)",
                             path=str(folder))
        pairs = cls.language_pairs(folder)
        if lp is None:
            if len(pairs) == 1:
                return cls(folder, pairs[0])
            raise InputError(f"name the language pair to read ({', '.join(pairs) or 'none in sources/'})",
                             path=str(folder), field="lp", setting=True)
        if lp not in pairs:
            raise InputError(f"no sources/{lp}.txt or .jsonl (language pairs: {', '.join(pairs) or 'none'})",
                             path=str(folder), field="lp", setting=True)
        return cls(folder, lp)

    @staticmethod
    def language_pairs(root: str | Path) -> list[str]:
        """The pairs of a test set: one per ``sources/LP.txt`` (or ``.jsonl``)."""
        return sorted({p.name.rsplit(".", 1)[0] for p in _with_suffixes(Path(root) / "sources", "*")})

    @staticmethod
    def scored_pairs(root: str | Path) -> list[str]:
        """The pairs with human scores (``human-scores/LP.NAME.LEVEL.score``), sorted."""
        pattern = re.compile(rf"^(.+?-[^.]+)\.[^/]+\.({'|'.join(LEVELS)})\.score$")
        folder = Path(root) / "human-scores"
        return sorted({m.group(1) for f in folder.iterdir() if (m := pattern.match(f.name))}) if folder.is_dir() \
            else []

    @property
    def name(self) -> str:
        """The test set's name (its folder's: ``wmt23``), which its meta information is kept under."""
        return Path(self.root).resolve().name

    # ---------------------------------------------------------------- where things are

    @property
    def source_file(self) -> Path:
        """``sources/LP.txt`` or ``.jsonl`` (a broken link too: it is refused when read)."""
        folder = self.root / "sources"
        return next((p for p in (folder / f"{self.lp}{s}" for s in _SUFFIXES) if p.is_symlink() or p.exists()),
                    folder / f"{self.lp}.txt")

    def reference_files(self) -> dict[str, Path]:
        """Reference name -> ``references/LP.NAME.txt`` (or ``.jsonl``)."""
        return {p.name[len(self.lp) + 1:].rsplit(".", 1)[0]: p
                for p in _with_suffixes(self.root / "references", f"{self.lp}.*")}

    def human_systems(self) -> set[str]:
        """The human translations (the names of its references), which mt-metrics-eval also keeps as
        systems and leaves out of correlations by default."""
        return {p.name[len(self.lp) + 1:].split(".")[0] for p in (self.root / "references").glob(f"{self.lp}.*.*")}

    def system_files(self) -> dict[str, Path]:
        """System -> ``system-outputs/LP/SYSTEM.txt`` (or ``.jsonl``); none is an InputError."""
        folder = self.root / "system-outputs" / self.lp
        if not folder.is_dir():
            raise InputError(f"no system-outputs/{self.lp}/ folder", path=str(self.root), field="lp", setting=True)
        found = {p.stem: p for p in _with_suffixes(folder, "*")}
        if not found:
            raise InputError("no system outputs (SYSTEM.txt or SYSTEM.jsonl files)", path=str(folder))
        return found

    @property
    def documents_file(self) -> Path:
        return self.root / "documents" / f"{self.lp}.docs"

    @property
    def domains_file(self) -> Path:
        return self.root / "domains" / f"{self.lp}.domains"

    def human_score_files(self) -> dict[str, dict[str, Path]]:
        """Human score name -> level -> ``human-scores/LP.NAME.LEVEL.score``."""
        return _score_files(self.root / "human-scores", f"{self.lp}.")

    @property
    def metric_scores_dir(self) -> Path:
        return self.root / "metric-scores" / self.lp

    def metric_score_files(self) -> dict[str, dict[str, Path]]:
        """Metric name (``NAME-REF``) -> level -> ``metric-scores/LP/NAME-REF.LEVEL.score``."""
        return _score_files(self.metric_scores_dir, "")

    def segment_count(self) -> int:
        """The number of segments: lines of the source file (InputError when there is none)."""
        for suffix in _SUFFIXES:
            src = self.root / "sources" / f"{self.lp}{suffix}"
            if src.is_file():
                with src.open("rb") as fh:
                    return sum(1 for _ in fh)
        raise InputError(f"no sources/{self.lp}.txt: a run is laid onto the test set's segments, so its sources "
                         "are needed", path=str(self.root), field="--mtme")

    # ---------------------------------------------------------------- meta information

    def standard_reference(self) -> str | None:
        return standard_reference(self.name, self.lp)

    def standard_gold(self, level: str) -> str | None:
        """The human score name mt-metrics-eval takes as gold at ``level`` (None: unknown)."""
        return _STD_GOLD_LP.get((self.name, self.lp), _STD_GOLD.get(self.name, {})).get(level)

    def outlier_systems(self) -> frozenset[str]:
        """Systems mt-metrics-eval leaves out by default (its outliers)."""
        return _OUTLIERS.get((self.name, self.lp), frozenset())

    # ---------------------------------------------------------------- reading

    def documents(self, n: int) -> tuple[list[str], list[str]] | None:
        """(domain, document) per segment from ``documents/LP.docs``, or None when there is no such file."""
        path = self.documents_file
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
            raise InputError(f"has {len(docs)} lines but the source has {n}", path=str(path),
                             line=min(len(docs), n) + 1)
        if self.domains_file.is_file():  # one domain per source line, where a test set has it
            domains = [d or "" for d in _read_segments(self.domains_file, n, "domain")]
        return domains, docs

    def reference(self, wanted: TestSetSelection, refs: Mapping[str, Path] | None = None) -> str | None:
        """The reference to use: ``wanted.ref``, else the standard one, else the only one; None without any."""
        refs = self.reference_files() if refs is None else refs
        if wanted.ref is not None:
            if wanted.ref not in refs:
                raise InputError(f"no reference '{wanted.ref}' (references: {', '.join(refs) or 'none'})",
                                 path=str(self.root / "references"), field="ref", setting=True)
            return wanted.ref
        standard = self.standard_reference()
        if standard in refs:
            return standard
        if len(refs) == 1:
            return next(iter(refs))
        if wanted.with_reference:
            raise InputError(f"no standard reference known for {self.name} {self.lp}: name one with ref "
                             f"({', '.join(refs) or 'no references/ files'})", path=str(self.root), field="ref",
                             setting=True)
        return None

    def systems(self, wanted: TestSetSelection, found: Sequence[str], ref: str | None) -> tuple[str, ...]:
        """The systems of ``found`` that ``wanted`` chooses (the reference left out when the judge sees it)."""
        for name in (*wanted.systems, *wanted.exclude_systems):
            if name not in found:
                raise InputError(f"no system '{name}' (systems: {textio.short(', '.join(found))})",
                                 path=str(self.root), field="systems" if name in wanted.systems else
                                 "exclude_systems", setting=True)
        chosen = [s for s in found if (not wanted.systems or s in wanted.systems) and s not in wanted.exclude_systems]
        if wanted.with_reference and ref is not None:
            chosen = [s for s in chosen if s != ref]
        if not chosen:
            raise InputError("no system left to judge after systems/exclude_systems", path=str(self.root),
                             field="systems", setting=True)
        return tuple(chosen)

    def compared_systems(self, wanted: TestSetSelection, systems: Sequence[str],
                         refs_used: Collection[str] = ()) -> tuple[str, ...]:
        """The systems of ``systems`` (those with human scores) that meta-evaluation compares: the chosen
        ones (``wanted.systems``, none of ``wanted.exclude_systems``), without the human translations,
        the references the metrics used (``refs_used``), systems named ``ref*`` and the outliers unless
        ``wanted.include_refs``, as mt-metrics-eval leaves them out."""
        drop = set(wanted.exclude_systems)
        if wanted.systems:
            drop |= {s for s in systems if s not in wanted.systems}
        if not wanted.include_refs:
            hidden = set(refs_used) | self.human_systems() | self.outlier_systems()
            drop |= {s for s in systems if s in hidden or s.startswith("ref")}
        return tuple(s for s in systems if s not in drop)

    def items(self, wanted: TestSetSelection) -> list[Item]:
        """Every segment of every chosen system (see the module's conventions)."""
        sources = _read_segments(self.source_file, None, "source")
        n = len(sources)
        docs = self.documents(n)
        refs = self.reference_files()
        ref_name = self.reference(wanted, refs)
        ref_lines = _read_segments(refs[ref_name], n, "reference") if ref_name is not None else None
        outputs = self.system_files()
        for name in outputs:
            check_id(name, path=str(outputs[name]), line=None, field="system")
        systems = self.systems(wanted, list(outputs), ref_name)
        info = TestSetInfo(format=MTME, root=str(self.root), name=self.name, lp=self.lp, systems=systems,
                           n_segments=n, ref=ref_name, documents=docs is not None, domains=docs is not None,
                           all_systems=tuple(outputs)).to_json()
        src_lang, _, tgt_lang = self.lp.partition("-")
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


def read_mtme(root: Path, wanted: TestSetSelection) -> list[Item]:
    """Every segment of every chosen system of one language pair of an mt-metrics-eval test set."""
    return TestSet.open(root, wanted.lp).items(wanted)


__all__ = ["DOMAIN_KEY", "LEVELS", "MTME", "NO_TRANSLATION", "NO_TRANSLATION_KEY", "TESTSET_KEY", "WMT25",
           "WMT25_COLUMNS", "WMT25_FIELDS", "WMT25_KEYS", "TestSet", "TestSetInfo", "TestSetSelection", "is_mtme_dir",
           "origin_testset", "read_mtme", "score_file_name", "standard_reference", "wmt25_keys"]
