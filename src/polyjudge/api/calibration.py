"""Agreement of judges with human ratings (Hada et al.) from Python: statistics per
language, task, metric and judge, and the class distribution by human agreement.

The judges' ratings come from the ratings file itself (``kind=judge`` rows), from
judge run directories (``runs``: each judge's final per-item score, matched to
the human ratings by the item's ``item_id`` field, else its ``seg_id``), or both.
Hada et al. compare categories on the humans' own scale (0/1, 0-2); judge scores
off that scale (a 0-100 DA score) need ``bins`` to become categories.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.shapes import normalise_fields
from polyjudge.data.textio import short
from polyjudge.metaeval.ratings.calibration import Bins, CalibrationRow, DistributionCell, JudgeSource, RatingRow
from polyjudge.rundir.ownership import OwnedDir, claim_study
from polyjudge.studies.tables import aligned, data_frame

RATING_FORMATS = ("jsonl", "tsv", "csv")
POOL_KEYS = ("language", "task", "metric")


@dataclass(frozen=True, slots=True)
class AgreementConfig:
    """A long ratings table (one rating per line: item_id, language, task, metric,
    rater, kind=human|judge, rating); ``pool`` lists keys the class distribution
    is pooled over."""

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    ratings: str | Path
    input_format: str | None = None  # default: from the extension (anything else is TSV)
    pool: tuple[str, ...] = ()
    runs: tuple[str | Path, ...] = ()  # judge run directories (their judges join the file's)
    # the languages (pairs, as the ratings' language column names them: zh-en) to evaluate, each on its own;
    # () every one; a value the ratings do not hold is an InputError naming those they hold
    lps: tuple[str, ...] = ()
    metric: str | None = None  # the human metric the runs' judges rated (when items have several)
    bins: tuple[float, ...] = ()  # edges that put continuous judge scores into the human classes
    bin_labels: tuple[float, ...] = ()  # the class of each bin (default 0, 1, ..., len(bins))


@dataclass
class AgreementResult:
    input: str
    n_ratings: int
    rows: list[CalibrationRow]
    distribution: list[DistributionCell]
    sources: list[JudgeSource] = field(default_factory=list)  # judges read from run directories
    bins: Bins | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``agreement.json`` document."""
        return {"input": self.input, "n_ratings": self.n_ratings, "rows": [r.to_dict() for r in self.rows],
                "class_distribution": [c.__dict__ for c in self.distribution],
                "runs": [asdict(s) for s in self.sources],
                "bins": None if self.bins is None else {"edges": list(self.bins.edges),
                                                        "labels": list(self.bins.classes)}}

    def sources_tsv(self) -> str:
        """One line per judge read from a run directory: how its items matched the ratings."""
        cols = list(JudgeSource.__dataclass_fields__)
        lines = ["\t".join(cols)] + ["\t".join(str(getattr(s, c)) for c in cols) for s in self.sources]
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)

    def rows_tsv(self) -> str:
        from polyjudge.metaeval.ratings.calibration import rows_tsv
        return rows_tsv(self.rows)

    def distribution_tsv(self) -> str:
        from polyjudge.metaeval.ratings.calibration import distribution_tsv
        return distribution_tsv(self.distribution)

    def to_tsv(self) -> str:
        return self.rows_tsv() + "\n" + self.distribution_tsv()

    def to_text(self) -> str:
        from polyjudge.metaeval.ratings.calibration import rows_text
        text = rows_text(self.rows)
        if self.sources:
            text += "\njudges read from run directories:\n" + aligned(self.sources_tsv())
        return (text + "\n" + "class distribution (human agreement x human majority x judge score):\n"
                + self.distribution_tsv())

    def write(self, out_dir: str | Path) -> None:
        """``agreement.tsv``, ``distribution.tsv`` and ``agreement.json``."""
        owned = claim_agreement_dir(out_dir)
        owned.write_text("agreement.tsv", self.rows_tsv())
        owned.write_text("distribution.tsv", self.distribution_tsv())
        owned.write_text("agreement.json", self.to_json())
        if self.sources:
            owned.write_text("runs.tsv", self.sources_tsv())

    def to_pandas(self, table: str = "agreement") -> Any:
        """``agreement`` (one row per language x task x metric x judge) or ``distribution``."""
        if table == "agreement":
            return data_frame([asdict(r) for r in self.rows], list(CalibrationRow.__dataclass_fields__))
        if table == "distribution":
            return data_frame([asdict(c) for c in self.distribution], list(DistributionCell.__dataclass_fields__))
        raise InputError(f"unknown table {table!r} (agreement, distribution)", field="table")


AGREEMENT_TABLES = ("agreement.tsv", "distribution.tsv", "agreement.json", "runs.tsv")


def claim_agreement_dir(out_dir: str | Path) -> OwnedDir:
    """The agreement command's ``--out`` folder: new, empty or its own (the user's files are refused)."""
    return claim_study(out_dir, "agreement", AGREEMENT_TABLES, "agreement.json", create=True)


def select_languages(ratings: list[RatingRow], lps: tuple[str, ...], *, path: str) -> list[RatingRow]:
    """The ratings of the languages (pairs) ``lps`` (all when empty); a language the ratings do not hold
    is an InputError naming those they hold (meta-eval's ``--lp``). Ratings that name no language are
    labelled by the one pair given."""
    if not lps:
        return ratings
    present = sorted({r.language for r in ratings if r.language})
    if not present:  # ratings that name no language are one comparison, labelled by the one pair (as meta-eval)
        if len(lps) > 1:
            raise InputError(f"{len(lps)} language pairs given, but the ratings name no language "
                             "(their language column is empty)", path=path, field="lp")
        return [replace(r, language=lps[0]) for r in ratings]
    missing = [lp for lp in dict.fromkeys(lps) if lp not in present]
    if missing:
        raise InputError(f"language pair {', '.join(short(m) for m in missing)} is not in the ratings "
                         f"(they hold {', '.join(present)})", path=path, field="lp")
    chosen = set(lps)
    return [r for r in ratings if r.language in chosen]


def agreement(config: AgreementConfig) -> AgreementResult:
    """Agreement statistics of every judge with the humans, and the class distribution."""
    from polyjudge.metaeval.ratings.calibration import calibrate, class_distribution, read_ratings, run_dir_ratings

    if config.input_format is not None and config.input_format not in RATING_FORMATS:
        raise InputError(f"unknown input format {config.input_format!r} (jsonl, tsv, csv)", field="input-format")
    bad = [p for p in config.pool if p not in POOL_KEYS]
    if bad:
        raise InputError(f"cannot pool over {bad[0]!r} (language, task, metric)", field="pool")
    if (config.bins or config.bin_labels) and not config.runs:
        raise InputError("bins apply to judges read from run directories; none given", field="bins")
    if config.bin_labels and not config.bins:
        raise InputError("bin labels without bin edges", field="bin-labels")
    bins = Bins(tuple(config.bins), tuple(config.bin_labels)) if config.bins else None
    from polyjudge.api.annotate import campaign_or_file

    ratings = read_ratings(campaign_or_file(config.ratings, kind="ratings"), config.input_format)  # a campaign too
    sources: list[JudgeSource] = []
    if config.runs:
        from_runs, sources = run_dir_ratings(config.runs, ratings, metric=config.metric, bins=bins)
        in_file = {r.rater for r in ratings if r.kind == "judge"}
        clash = sorted({s.rater for s in sources} & in_file)
        if clash:
            raise InputError(f"judge {clash[0]!r} is both in the ratings file and in a run directory",
                             path=str(config.ratings), field="rater")
        ratings = ratings + from_runs
    elif config.metric is not None:
        raise InputError("--metric applies to judges read from run directories; none given", field="metric")
    ratings = select_languages(ratings, config.lps, path=str(config.ratings))
    rows = calibrate(ratings)
    cells = class_distribution(ratings, by_language="language" not in config.pool,
                               by_task="task" not in config.pool, by_metric="metric" not in config.pool)
    return AgreementResult(str(config.ratings), len(ratings), rows, cells, sources, bins)


__all__ = ["AgreementConfig", "AgreementResult", "agreement"]
