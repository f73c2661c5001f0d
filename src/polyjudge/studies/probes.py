"""Robustness probes of one judge (Hada et al., 2024) as a typed config, one call and a typed result.

* ``sensitivity``: judge every item as is and with a share of the candidate's
  words (grapheme clusters in scripts written without spaces: Japanese,
  Chinese, Thai, Lao, Khmer, Burmese) shuffled; count how often the score
  drops. Items with nothing to move are counted apart, never as "unchanged".
* ``repeat``: N runs at temperature 0; share of items where every run agrees.
* ``temperature``: judge at several temperatures; mean, sd and failures each,
  and with a human ratings file (``human``) the agreement with the humans at
  each temperature (Hada et al., Figure 23): percentage agreement with the
  human majority, Cohen's kappa, Krippendorff's alpha, per language, task and metric.

Each condition is its own run directory under the output folder
(``original``/``perturbed``, ``repeat``, ``T0.5``...), so re-running resumes.
The statistics are the pure functions of :mod:`polyjudge.studies.perturb`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.data.shapes import normalise_fields
from polyjudge.engine.errors import FailureRateExceeded
from polyjudge.engine.result import RunResult
from polyjudge.engine.session import as_spec, judge
from polyjudge.engine.spec import JudgingSpec
from polyjudge.metaeval.ratings.calibration import CalibrationRow, JudgeSource
from polyjudge.studies.perturb import RepeatRow, SensitivityRow, TemperatureRow
from polyjudge.studies.tables import aligned, data_frame

PROBE_KINDS = ("sensitivity", "repeat", "temperature")
ProbeRow = SensitivityRow | RepeatRow | TemperatureRow


@dataclass(frozen=True, slots=True)
class ProbeConfig:
    """Which probe, on which judge (one: ``judge.judges`` must name a single judge).

    ``input_format``, ``src_lang``, ``tgt_lang`` and ``limit`` apply when the
    items are read from a file.
    """

    def __post_init__(self) -> None:
        object.__setattr__(self, "judge", as_spec(self.judge))  # the flat JudgeConfig shorthand is taken too
        normalise_fields(self)  # Python shapes; TypeError names a field

    kind: str
    judge: JudgingSpec = field(default_factory=JudgingSpec)
    fraction: float = 0.1  # sensitivity: share of the candidate's words to shuffle
    probe_seed: int = 0  # sensitivity: shuffle seed
    repeats: int = 5  # repeat: runs at temperature 0
    temperatures: tuple[float, ...] = (0.0, 0.5, 1.0)  # temperature: the temperatures
    input_format: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    limit: int | None = None
    human: str | Path | None = None  # temperature: a ratings file to measure agreement with
    human_format: str | None = None  # its format (jsonl, tsv, csv; default from the extension)
    metric: str | None = None  # the human metric the judge rates (items rated on several)
    bins: tuple[float, ...] = ()  # edges putting continuous judge scores into the human classes
    bin_labels: tuple[float, ...] = ()

    def replace(self, **changes: Any) -> ProbeConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def check(self) -> None:
        """Raise InputError for a value the probe cannot run with."""
        if self.kind not in PROBE_KINDS:
            raise InputError(f"unknown probe {self.kind!r} (choose from {', '.join(PROBE_KINDS)})", field="kind")
        if len(self.judge.judges.judges) > 1:
            raise InputError("probe takes one judge; run it once per judge", field="judge")
        if not 0.0 <= self.fraction <= 1.0:
            raise InputError(f"fraction must be in [0, 1], got {self.fraction}", field="fraction")
        if self.repeats < 2:
            raise InputError(f"repeats must be at least 2, got {self.repeats}", field="repeats")
        if not self.temperatures:
            raise InputError("no temperature given", field="temperatures")
        if self.limit is not None and self.limit < 1:
            raise InputError(f"limit must be at least 1, got {self.limit}", field="limit")
        if self.human is not None and self.kind != "temperature":
            raise InputError("a human ratings file is used by the temperature probe only", field="human")
        if (self.bins or self.bin_labels or self.metric is not None) and self.human is None:
            raise InputError("--bins, --bin-labels and --metric need a human ratings file (--human)", field="human")
        if self.bin_labels and not self.bins:
            raise InputError("bin labels without bin edges", field="bin-labels")
        if self.bins:
            from polyjudge.metaeval.ratings.calibration import Bins
            Bins(tuple(self.bins), tuple(self.bin_labels))  # raises for edges that do not increase


@dataclass
class ProbeResult:
    """The probe's table (one row per group, and per temperature) and its failures."""

    config: ProbeConfig
    input: str | None  # the input file, when the items came from one
    n_items: int
    rows: list[ProbeRow]
    failures: dict[str, dict[str, int]]  # condition -> failure reason -> count
    # temperature with a ratings file: agreement with the humans, one row per
    # temperature (the ``judge`` column, e.g. ``T0.5``) x language x task x metric
    agreement: list[CalibrationRow] = field(default_factory=list)
    matches: list[JudgeSource] = field(default_factory=list)

    def table_tsv(self) -> str:
        """The probe's own table (``probe.tsv``)."""
        from polyjudge.studies.perturb import records_tsv
        return records_tsv(self.rows)

    def agreement_tsv(self) -> str:
        """Agreement with the humans per temperature (``agreement.tsv``); empty without ratings."""
        if not self.agreement:
            return ""
        from polyjudge.metaeval.ratings.calibration import rows_tsv
        return rows_tsv(self.agreement).replace("judge", "temperature", 1)

    def to_tsv(self) -> str:
        """The probe table, then (temperature with ratings) the agreement table after a blank line."""
        text = self.table_tsv()
        if self.agreement:
            text += "\n" + self.agreement_tsv()
        return text

    def to_text(self) -> str:
        text = aligned(self.table_tsv())
        if self.agreement:
            from polyjudge.metaeval.ratings.calibration import rows_text
            text += "\nagreement with the human ratings per temperature:\n" + rows_text(self.agreement)
        return text

    def to_dict(self) -> dict[str, Any]:
        """The ``probe.json`` document."""
        c = self.config
        return {"kind": c.kind, "input": self.input, "n_items": self.n_items, "fraction": c.fraction,
                "probe_seed": c.probe_seed, "repeats": c.repeats, "failures": self.failures,
                "rows": [r.__dict__ for r in self.rows],
                "human": None if c.human is None else str(c.human),
                "agreement": [r.to_dict() for r in self.agreement],
                "matches": [asdict(m) for m in self.matches]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False, default=str)

    def write(self, out_dir: str | Path) -> None:
        """``probe.tsv`` (the table) and ``probe.json`` (table, settings and failures)."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / "probe.tsv").write_text(self.table_tsv(), encoding="utf-8")
        (d / "probe.json").write_text(self.to_json(), encoding="utf-8")
        if self.agreement:
            (d / "agreement.tsv").write_text(self.agreement_tsv(), encoding="utf-8")

    def to_pandas(self, table: str = "probe") -> Any:
        """``probe`` (the probe's table) or ``agreement`` (temperature with ratings)."""
        if table == "agreement":
            return data_frame([asdict(r) for r in self.agreement], list(CalibrationRow.__dataclass_fields__))
        if table != "probe":
            raise InputError(f"unknown table {table!r} (probe, agreement)", field="table")
        recs = [asdict(r) for r in self.rows]
        return data_frame(recs, list(recs[0]) if recs else [])


def _first_judge_scores(result: RunResult) -> list[float | None]:
    return result.segment_scores(result.judges[0])


def _items(items: Sequence[Item] | str | Path, config: ProbeConfig) -> list[Item]:
    if isinstance(items, str | Path):
        from polyjudge.data.readers import read_items
        got = read_items(items, fmt=config.input_format, src_lang=config.src_lang, tgt_lang=config.tgt_lang)
    else:
        got = list(items)
    return got[:config.limit] if config.limit is not None else got


def _humans(config: ProbeConfig) -> list[Any] | None:
    """The ratings file's rows (``None`` without one)."""
    if config.human is None:
        return None
    from polyjudge.metaeval.ratings.calibration import read_ratings
    if config.human_format is not None and config.human_format not in ("jsonl", "tsv", "csv"):
        raise InputError(f"unknown ratings format {config.human_format!r} (jsonl, tsv, csv)", field="human-format")
    return read_ratings(config.human, config.human_format)


def _agreement(items: Sequence[Item], scores: dict[float, Sequence[float | None]], humans: list[Any],
               config: ProbeConfig) -> tuple[list[CalibrationRow], list[JudgeSource]]:
    """Each temperature as one judge (``T0.5``) against the human ratings; the
    file's own judge rows are left out (the table is about the temperatures)."""
    from polyjudge.metaeval.ratings.calibration import Bins, calibrate, item_key, judge_ratings

    bins = Bins(tuple(config.bins), tuple(config.bin_labels)) if config.bins else None
    human_rows = [r for r in humans if r.kind == "human"]
    keys = [item_key(it, i) for i, it in enumerate(items)]
    judge_rows: list[Any] = []
    matches: list[JudgeSource] = []
    for t in sorted(scores):
        got, src = judge_ratings(keys, scores[t], rater=f"T{t:g}", source=f"T{t:g}", judge=f"T{t:g}",
                                 humans=human_rows, metric=config.metric, bins=bins)
        judge_rows += got
        matches.append(src)
    rows = calibrate(human_rows + judge_rows)
    order = {f"T{t:g}": k for k, t in enumerate(sorted(scores))}
    rows.sort(key=lambda r: (order.get(r.judge, len(order)), r.language, r.task, r.metric))
    return rows, matches


def _generation(spec: JudgingSpec, **changes: Any) -> JudgingSpec:
    """``spec`` with some fields of its generation group changed (a condition's runs or temperature)."""
    return spec.replace(generation=dataclasses.replace(spec.generation, **changes))


def _judged(items: Sequence[Item], spec: JudgingSpec, out: Path | None) -> RunResult:
    """One condition's judging. Answers that could not be read (unparseable, truncated) are what a
    probe measures, reported per condition in its table: only failed and refused requests over
    ``max_failure_rate`` stop it (exit 3)."""
    try:
        return judge(items, spec, out=out)
    except FailureRateExceeded as exc:
        if exc.kinds["request"] + exc.kinds["refused"] > exc.limit * exc.total:
            raise
        return exc.result


def run_probe(items: Sequence[Item] | str | Path, config: ProbeConfig,
              out: str | Path | None = None) -> ProbeResult:
    """Probe the judge on ``items`` (a list or an input file); with ``out``, keep one
    run directory per condition there and write ``probe.tsv``/``probe.json``."""
    from polyjudge.studies.perturb import perturb_items, repeat_table, sensitivity_table, temperature_table

    config.check()
    todo = _items(items, config)
    groups = [it.tgt_lang or "" for it in todo]
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)

    def condition(name: str) -> Path | None:
        return out_dir / name if out_dir is not None else None

    failures: dict[str, dict[str, int]] = {}
    rows: list[ProbeRow]
    agreement: list[CalibrationRow] = []
    matches: list[JudgeSource] = []
    if config.kind == "sensitivity":
        base = _judged(todo, config.judge, condition("original"))
        perturbed = perturb_items(todo, config.fraction, config.probe_seed)
        pert = _judged(perturbed, config.judge, condition("perturbed"))
        failures = {"original": base.failures(), "perturbed": pert.failures()}
        changed = [bool(it.extra["perturb_changed"]) for it in perturbed]
        rows = list(sensitivity_table(_first_judge_scores(base), _first_judge_scores(pert), groups, changed))
    elif config.kind == "repeat":
        res = _judged(todo, _generation(config.judge, runs=config.repeats, temperature=0.0), condition("repeat"))
        failures = {"repeat": res.failures()}
        rows = list(repeat_table(res.run_matrix(res.judges[0]), groups))
    else:
        humans = _humans(config)  # read before judging: a bad file costs no requests
        scores: dict[float, Sequence[float | None]] = {}
        for t in config.temperatures:
            res = _judged(todo, _generation(config.judge, temperature=t), condition(f"T{t:g}"))
            scores[t] = _first_judge_scores(res)
            failures[f"T{t:g}"] = res.failures()
        rows = list(temperature_table(scores, groups))
        if humans is not None:
            agreement, matches = _agreement(todo, scores, humans, config)
    result = ProbeResult(config, str(items) if isinstance(items, str | Path) else None, len(todo), rows, failures,
                         agreement, matches)
    if out_dir is not None:
        result.write(out_dir)
    return result


__all__ = ["PROBE_KINDS", "ProbeConfig", "ProbeResult", "ProbeRow", "run_probe"]
