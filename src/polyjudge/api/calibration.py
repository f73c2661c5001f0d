"""Agreement of judges with human ratings (Hada et al.) from Python: statistics per
language, task, metric and judge, and the class distribution by human agreement."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.metaeval.calibration import CalibrationRow, DistributionCell
from polyjudge.studies.tables import data_frame

RATING_FORMATS = ("jsonl", "tsv", "csv")
POOL_KEYS = ("language", "task", "metric")


@dataclass(frozen=True, slots=True)
class AgreementConfig:
    """A long ratings table (one rating per line: item_id, language, task, metric,
    rater, kind=human|judge, rating); ``pool`` lists keys the class distribution
    is pooled over."""

    ratings: str | Path
    input_format: str | None = None  # default: from the extension (anything else is TSV)
    pool: tuple[str, ...] = ()


@dataclass
class AgreementResult:
    input: str
    n_ratings: int
    rows: list[CalibrationRow]
    distribution: list[DistributionCell]

    def to_dict(self) -> dict[str, Any]:
        """The ``agreement.json`` document."""
        return {"input": self.input, "n_ratings": self.n_ratings, "rows": [r.to_dict() for r in self.rows],
                "class_distribution": [c.__dict__ for c in self.distribution]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)

    def rows_tsv(self) -> str:
        from polyjudge.metaeval.calibration import rows_tsv
        return rows_tsv(self.rows)

    def distribution_tsv(self) -> str:
        from polyjudge.metaeval.calibration import distribution_tsv
        return distribution_tsv(self.distribution)

    def to_tsv(self) -> str:
        return self.rows_tsv() + "\n" + self.distribution_tsv()

    def to_text(self) -> str:
        from polyjudge.metaeval.calibration import rows_text
        return (rows_text(self.rows) + "\n" + "class distribution (human agreement x human majority x judge score):\n"
                + self.distribution_tsv())

    def write(self, out_dir: str | Path) -> None:
        """``agreement.tsv``, ``distribution.tsv`` and ``agreement.json``."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / "agreement.tsv").write_text(self.rows_tsv(), encoding="utf-8")
        (d / "distribution.tsv").write_text(self.distribution_tsv(), encoding="utf-8")
        (d / "agreement.json").write_text(self.to_json(), encoding="utf-8")

    def to_pandas(self, table: str = "agreement") -> Any:
        """``agreement`` (one row per language x task x metric x judge) or ``distribution``."""
        if table == "agreement":
            return data_frame([asdict(r) for r in self.rows], list(CalibrationRow.__dataclass_fields__))
        if table == "distribution":
            return data_frame([asdict(c) for c in self.distribution], list(DistributionCell.__dataclass_fields__))
        raise InputError(f"unknown table {table!r} (agreement, distribution)", field="table")


def agreement(config: AgreementConfig) -> AgreementResult:
    """Agreement statistics of every judge with the humans, and the class distribution."""
    from polyjudge.metaeval.calibration import calibrate, class_distribution, read_ratings

    if config.input_format is not None and config.input_format not in RATING_FORMATS:
        raise InputError(f"unknown input format {config.input_format!r} (jsonl, tsv, csv)", field="input-format")
    bad = [p for p in config.pool if p not in POOL_KEYS]
    if bad:
        raise InputError(f"cannot pool over {bad[0]!r} (language, task, metric)", field="pool")
    ratings = read_ratings(config.ratings, config.input_format)
    rows = calibrate(ratings)
    cells = class_distribution(ratings, by_language="language" not in config.pool,
                               by_task="task" not in config.pool, by_metric="metric" not in config.pool)
    return AgreementResult(str(config.ratings), len(ratings), rows, cells)


__all__ = ["AgreementConfig", "AgreementResult", "agreement"]
