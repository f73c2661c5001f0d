"""One expected-score run against N sampled runs (``polyjudge variability RUN --expected RUN``).

Both are run directories of the same judge on the same items: one judged with
``--score-mode expected`` (one request per item), one with ``--runs N``. The
comparison (:func:`polyjudge.metaeval.expected.compare_expected`) gives
ties, ranking stability and, with human scores, SPA and acc-t for the expected
score, for one sampled run and for every run aggregator over the N runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from polyjudge.analysis.runs import available_run_aggregators
from polyjudge.data.errors import InputError
from polyjudge.data.shapes import normalise_fields
from polyjudge.metaeval.expected import ExpectedComparison, compare_expected
from polyjudge.metaeval.readers import read_score_table, resolve_item_key
from polyjudge.rundir import RunDir


@dataclass(frozen=True, slots=True)
class ExpectedConfig:
    """What to compare: ``sampled`` (N runs) and ``expected`` (score_mode=expected) run directories."""

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    sampled: str | Path
    expected: str | Path
    human: str | Path | None = None
    human_format: str = "auto"
    item_key: str = "auto"  # auto, seg or doc-seg (as in meta-eval)
    aggregators: Sequence[str] = field(default_factory=available_run_aggregators)


def _mode(rd: RunDir) -> str:
    return str(rd.manifest.config.protocol_options.get("score_mode", "sample"))


def compare_expected_runs(config: ExpectedConfig) -> list[ExpectedComparison]:
    """One comparison per judge found in both run directories."""
    sampled, expected = RunDir.open(config.sampled), RunDir.open(config.expected)
    if _mode(expected) != "expected":
        raise InputError("this run was not judged with --score-mode expected", path=str(config.expected))
    if _mode(sampled) == "expected":
        raise InputError("this run holds expected scores; give the sampled runs here", path=str(config.sampled))
    judges = [j for j in expected.judges if j in sampled.judges]
    if not judges:
        raise InputError(f"no judge in common (expected: {', '.join(expected.judges) or 'none'}; sampled: "
                         f"{', '.join(sampled.judges) or 'none'})", path=str(config.expected))
    human = None
    item_key = "seg"
    if config.human is not None:
        table = read_score_table(config.human, config.human_format)
        item_key = resolve_item_key([table], config.item_key)
        human = table.matrix(item_key)
    out = []
    for judge in judges:
        try:
            out.append(compare_expected(expected.run_scores(judge), sampled.run_scores(judge), config.aggregators,
                                        human=human, item_key=item_key))
        except ValueError as exc:
            raise InputError(str(exc), path=str(config.expected)) from None
    return out


__all__ = ["ExpectedConfig", "compare_expected_runs"]
