"""Robustness probes of one judge (Hada et al., 2024) as a typed config, one call and a typed result.

* ``sensitivity``: judge every item as is and with a share of the candidate's
  words shuffled; count how often the score drops.
* ``repeat``: N runs at temperature 0; share of items where every run agrees.
* ``temperature``: judge at several temperatures; mean, sd and failures each.

Each condition is its own run directory under the output folder
(``original``/``perturbed``, ``repeat``, ``T0.5``...), so re-running resumes.
The statistics are the pure functions of :mod:`polyjudge.metaeval.probes`.
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
from polyjudge.engine.result import RunResult
from polyjudge.engine.session import JudgeConfig, judge
from polyjudge.metaeval.probes import RepeatRow, SensitivityRow, TemperatureRow
from polyjudge.studies.tables import aligned, data_frame

PROBE_KINDS = ("sensitivity", "repeat", "temperature")
ProbeRow = SensitivityRow | RepeatRow | TemperatureRow


@dataclass(frozen=True, slots=True)
class ProbeConfig:
    """Which probe, on which judge (one: ``judge.judges`` must name a single judge).

    ``input_format``, ``src_lang``, ``tgt_lang`` and ``limit`` apply when the
    items are read from a file.
    """

    kind: str
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    fraction: float = 0.1  # sensitivity: share of the candidate's words to shuffle
    probe_seed: int = 0  # sensitivity: shuffle seed
    repeats: int = 5  # repeat: runs at temperature 0
    temperatures: tuple[float, ...] = (0.0, 0.5, 1.0)  # temperature: the temperatures
    input_format: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    limit: int | None = None

    def replace(self, **changes: Any) -> ProbeConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def check(self) -> None:
        """Raise InputError for a value the probe cannot run with."""
        if self.kind not in PROBE_KINDS:
            raise InputError(f"unknown probe {self.kind!r} (choose from {', '.join(PROBE_KINDS)})", field="kind")
        if len(self.judge.judges) > 1:
            raise InputError("probe takes one judge; run it once per judge", field="judge")
        if not 0.0 <= self.fraction <= 1.0:
            raise InputError(f"fraction must be in [0, 1], got {self.fraction}", field="fraction")
        if self.repeats < 2:
            raise InputError(f"repeats must be at least 2, got {self.repeats}", field="repeats")
        if not self.temperatures:
            raise InputError("no temperature given", field="temperatures")
        if self.limit is not None and self.limit < 1:
            raise InputError(f"limit must be at least 1, got {self.limit}", field="limit")


@dataclass
class ProbeResult:
    """The probe's table (one row per group, and per temperature) and its failures."""

    config: ProbeConfig
    input: str | None  # the input file, when the items came from one
    n_items: int
    rows: list[ProbeRow]
    failures: dict[str, dict[str, int]]  # condition -> failure reason -> count

    def to_tsv(self) -> str:
        from polyjudge.metaeval.probes import records_tsv
        return records_tsv(self.rows)

    def to_text(self) -> str:
        return aligned(self.to_tsv())

    def to_dict(self) -> dict[str, Any]:
        """The ``probe.json`` document."""
        c = self.config
        return {"kind": c.kind, "input": self.input, "n_items": self.n_items, "fraction": c.fraction,
                "probe_seed": c.probe_seed, "repeats": c.repeats, "failures": self.failures,
                "rows": [r.__dict__ for r in self.rows]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False, default=str)

    def write(self, out_dir: str | Path) -> None:
        """``probe.tsv`` (the table) and ``probe.json`` (table, settings and failures)."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / "probe.tsv").write_text(self.to_tsv(), encoding="utf-8")
        (d / "probe.json").write_text(self.to_json(), encoding="utf-8")

    def to_pandas(self) -> Any:
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


def run_probe(items: Sequence[Item] | str | Path, config: ProbeConfig,
              out: str | Path | None = None) -> ProbeResult:
    """Probe the judge on ``items`` (a list or an input file); with ``out``, keep one
    run directory per condition there and write ``probe.tsv``/``probe.json``."""
    from polyjudge.metaeval.probes import perturb_items, repeat_table, sensitivity_table, temperature_table

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
    if config.kind == "sensitivity":
        base = judge(todo, config.judge, out=condition("original"))
        pert = judge(perturb_items(todo, config.fraction, config.probe_seed), config.judge,
                     out=condition("perturbed"))
        failures = {"original": base.failures(), "perturbed": pert.failures()}
        rows = list(sensitivity_table(_first_judge_scores(base), _first_judge_scores(pert), groups))
    elif config.kind == "repeat":
        res = judge(todo, config.judge.replace(runs=config.repeats, temperature=0.0), out=condition("repeat"))
        failures = {"repeat": res.failures()}
        rows = list(repeat_table(res.run_matrix(res.judges[0]), groups))
    else:
        scores: dict[float, Sequence[float | None]] = {}
        for t in config.temperatures:
            res = judge(todo, config.judge.replace(temperature=t), out=condition(f"T{t:g}"))
            scores[t] = _first_judge_scores(res)
            failures[f"T{t:g}"] = res.failures()
        rows = list(temperature_table(scores, groups))
    result = ProbeResult(config, str(items) if isinstance(items, str | Path) else None, len(todo), rows, failures)
    if out_dir is not None:
        result.write(out_dir)
    return result


__all__ = ["PROBE_KINDS", "ProbeConfig", "ProbeResult", "ProbeRow", "run_probe"]
