"""The keys of a study file's tables that are not judging settings, declared once: the input keys of a
``[[judging]]`` table (``polyjudge judge``'s input flags), the ``[[meta_eval]]`` keys (``polyjudge meta-eval``'s
flags) and the ``[report]`` keys (``polyjudge report``'s flags).

A :class:`TableKey` is a study key (``--key-name`` the flag, dashes as underscores), the keyword its command
parses it into (``dest``), its kind, default, bounds, choices and help. ``polyjudge.api`` reads a study file
with these declarations alone (no click); the command line builds the meta-eval and report flags from them
(``cli.specs.declared``), so a flag and its study key cannot part. The judging settings themselves are
:mod:`polyjudge.data.settings`'. Light to import (no click, no registry is read until a choice is asked for).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.data import limits

KEY_KINDS = ("int", "float", "text", "flag", "choice", "file", "folder", "path")


@dataclass(frozen=True, slots=True)
class TableKey:
    """One key of a study table and the flag of its command.

    ``choices``: a tuple, or ``"module:attr"`` naming a collection (or a function returning one) read when
    first asked for (a registry's names: ``more`` are added after them); ``exists``: a path key names a file
    or folder that must exist (relative to the study file); ``decls``: the flag's spellings when
    there are more than its long flag (``-k``, ``--k``, ``--permutations``)."""

    key: str
    kind: str
    default: Any = None
    help: str = ""
    dest: str | None = None
    many: bool = False
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | str | None = None
    more: tuple[str, ...] = ()
    exists: bool = False
    metavar: str | None = None
    show_default: bool = False
    decls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KEY_KINDS:
            raise ValueError(f"study key {self.key!r}: unknown kind {self.kind!r}")

    @property
    def name(self) -> str:
        """The keyword the command parses it into (and the config keyword it fills)."""
        return self.dest or self.key

    @property
    def long_flag(self) -> str:
        return "--" + self.key.replace("_", "-")

    @property
    def command_default(self) -> Any:
        """What the command passes when the flag is not given."""
        return () if self.many else bool(self.default) if self.kind == "flag" else self.default

    @property
    def flags(self) -> tuple[str, ...]:
        """The flag's spellings (the first long one is the study key)."""
        return self.decls or (self.long_flag,)

    def choice_source(self) -> Sequence[str]:
        """The values a choice key takes: a tuple, or the named collection itself (read when iterated, so a
        plugin's names count), or what the named function returns now, ``more`` after them."""
        if not isinstance(self.choices, str):
            return tuple(self.choices or ())
        module, _, attr = self.choices.partition(":")
        found = getattr(importlib.import_module(module), attr)
        found = found() if callable(found) else found
        return [*found, *self.more] if self.more else found

    def choice_list(self) -> tuple[str, ...]:
        """The values a choice key takes (a registry's names read now)."""
        return tuple(self.choice_source())


def _k(key: str, kind: str, default: Any = None, help: str = "", **more: Any) -> TableKey:
    return TableKey(key, kind, default, help, **more)


_SHOWN = {"show_default": True}
_FORMATS = "polyjudge.api.formats:SCORE_FORMATS"

# A [[judging]] table's input keys (beside the declared settings), in ``polyjudge judge --help`` order.
JUDGING_INPUT: tuple[TableKey, ...] = (
    _k("input_format", "choice", None, "Input format (default: from the extension or what INPUT is: an "
       "mt-metrics-eval folder, hf:NAME; WMT MQM and WMT25 task-1 TSVs are detected).",
       choices="polyjudge.api.registries:input_formats"),
    _k("src_lang", "text", None, "Source language code for items that lack one."),
    _k("tgt_lang", "text", None, "Target language code for items that lack one."),
    _k("columns", "text", help="Which column holds which field in a CSV/TSV/JSONL/parquet/hf input, e.g. "
       "--columns tgt=mt,ref=reference; lp=COLUMN holds a language pair (en-de) split into source and target "
       "language. Fields: src, tgt, ref, src_lang, tgt_lang, doc_id, seg_id, system, lp.", many=True,
       metavar="FIELD=COLUMN,..."),
    _k("lp", "text", None, "Language pair (e.g. en-de): the one read from an mt-metrics-eval test set, and the "
       "languages of items that do not name theirs.", metavar="SRC-TGT"),
    _k("systems", "text", help="Judge only these systems (of a test set: human references such as refA included).",
       many=True, metavar="NAME,..."),
    _k("exclude_systems", "text", help="Leave these systems out.", many=True, metavar="NAME,..."),
    _k("ref", "text", None, "The test set's reference to use (refA, refB, ...; default: its standard one).",
       metavar="NAME"),
    _k("language_names", "text", help="Name language codes that are no BCP 47 tag, to judge them anyway (an "
       "unknown code is refused): --language-names ge=Georgian-variant; prompts call the language so.", many=True,
       metavar="CODE=NAME,..."),
    _k("limit", "int", None, "Judge only the first N items.", low=1),
)

# A [[meta_eval]] table's keys (``polyjudge meta-eval``'s flags but RUN, --mtme, --human, --format, --out).
META_EVAL: tuple[TableKey, ...] = (
    _k("lp", "text", help="Language pair(s) to evaluate, repeatable: with --mtme every one given; otherwise pairs "
       "the inputs name (a run's items, an lp or src_lang/tgt_lang column; default: each of them, one table per "
       "pair), or the label of inputs that name none.", dest="lps", many=True),
    _k("pool_lps", "flag", False, "Evaluate the selected language pairs (default: all) as one, named "
       "'pooled: A+B' (without --mtme)."),
    _k("human_name", "text", None, "With --mtme: the human scores to compare with (default: the test set's "
       "standard gold at the level, from mt-metrics-eval's meta information).", metavar="NAME"),
    _k("with_stored_metrics", "flag", False, "With --mtme and RUN: also rank every metric stored in the test set's "
       "metric-scores/ (the metrics-task submissions) in the same table."),
    _k("human_format", "choice", "auto", "Format of --human (auto: from the extension, .csv/.tsv/.jsonl, or "
       "content).", choices=_FORMATS, **_SHOWN),
    _k("metric", "text", help="Metric scores or polyjudge run directory; repeat for several. System scores only "
       "(a .sys.score file, a systems table, the output directory of `polyjudge pairwise`) get system-level "
       "statistics, segment ones shown as n/a.", dest="metric_specs", many=True, metavar="[NAME=]PATH"),
    _k("metric_format", "choice", "auto", "Format of every --metric file (auto: from the extension or content).",
       choices=_FORMATS, **_SHOWN),
    _k("human_lower_better", "flag", False, "Negate human scores (e.g. raw MQM error points)."),
    _k("lower_better", "text", help="Negate this metric's scores (e.g. an error count); repeatable.", many=True,
       metavar="NAME"),
    _k("exclude_system", "text", help="Leave a system out (e.g. the reference used by reference-based metrics).",
       dest="exclude", many=True, metavar="SYSTEM"),
    _k("include_refs", "flag", False, "With --mtme, keep human reference systems used by the metrics (default: "
       "drop systems named like a reference, ref*)."),
    _k("task", "choice", "wmt24", "Ranking table preset.", choices="polyjudge.api.metaeval:task_presets",
       more=("none",), **_SHOWN),
    _k("level", "choice", "seg", "Level of the score files read (system scores are derived unless mt-metrics-eval "
       ".sys.score files exist).", choices=("seg",), **_SHOWN),
    _k("k", "int", 1000, "Permutation draws per significance test (0 = none).", low=0,
       decls=("-k", "--k", "--permutations"), **_SHOWN),
    _k("seed", "int", 0, "Seed of the permutation draws (the same seed gives the same p-values).", low=0,
       high=limits.MAX_SEED, **_SHOWN),
    _k("alpha", "float", 0.05, "p-value threshold for significance clusters.", low=0.0, high=1.0, **_SHOWN),
    _k("missing_metric", "choice", "error", "A metric lacks a score where humans have one: stop, or skip those "
       "cells (system scores of both sides are then means over the cells the metric scored).",
       choices=("error", "drop"), **_SHOWN),
    _k("item_key", "choice", "auto", "How segments are matched across files: seg_id, doc_id + seg_id, or auto "
       "(doc_id + seg_id when seg_ids repeat across documents).", choices=("auto", "seg", "doc-seg"), **_SHOWN),
    _k("aggregators", "text", None, "Rank every run aggregator of run-directory metrics as a metric of its own, "
       "named NAME@AGG: 'all' (every aggregator the run stored) or names such as rrwa,mean-2s,geo,max (one not "
       "stored is computed from the single runs).", metavar="all|NAME,..."),
    _k("single_runs", "flag", False, "Rank every single run of run-directory metrics as a metric of its own, named "
       "NAME@run1, NAME@run2, ... (GEMBA-MQM V2 Tables 2-4). A run that failed on some items has no score there: "
       "add --missing-metric drop to compare over the items each one scored."),
)

# The [report] table's keys (``polyjudge report``'s flags but RUN_DIR and --out).
REPORT: tuple[TableKey, ...] = (
    _k("metaeval", "file", None, "Output of `polyjudge meta-eval --format json`.", exists=True),
    _k("consistency", "path", None, "study.json of `polyjudge consistency`, or its --out folder.", exists=True),
    _k("validation", "file", None, "Output of `polyjudge validate --format json`.", exists=True),
    _k("simulation", "file", None, "Output of `polyjudge simulate --format json`.", exists=True),
    _k("pairwise", "file", None, "pairwise.json of `polyjudge pairwise`.", exists=True),
    _k("span_ranking", "file", None, "Output of `polyjudge span-f1 --rank ... --format json`: span metrics ranked "
       "under each span-F1 variant, changes against the official WMT25 scorer marked.", exists=True),
    _k("annotation", "path", None, "An annotation campaign folder (`polyjudge annotate`), or the file "
       "`annotate status --format json` wrote: progress and agreement.", exists=True),
    _k("plots_dir", "folder", None, "Also write every plot as a standalone SVG file here (for papers)."),
    _k("title", "text", None, "Page title (default: the run names)."),
    _k("bootstrap", "int", 1000, "Bootstrap resamples for the system-ranking confidence intervals.", dest="n_boot",
       low=100, **_SHOWN),
)

TABLE_KEYS: dict[str, tuple[TableKey, ...]] = {"judging": JUDGING_INPUT, "meta_eval": META_EVAL, "report": REPORT}


def table_key(table: str, key: str) -> TableKey:
    return next(k for k in TABLE_KEYS[table] if k.key == key)


def keys_of(table: str, names: Sequence[str] | None = None) -> tuple[TableKey, ...]:
    return tuple(k for k in TABLE_KEYS[table] if names is None or k.key in names)


__all__ = ["JUDGING_INPUT", "KEY_KINDS", "META_EVAL", "REPORT", "TABLE_KEYS", "TableKey", "keys_of", "table_key"]
