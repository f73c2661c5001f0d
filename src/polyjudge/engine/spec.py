"""One run, specified: what the engine needs to judge, resolved from the user's configuration.

:class:`~polyjudge.engine.session.JudgeConfig` is what users hold (strings,
judge specs, flags); :class:`RunSpec` is what it resolves to (a protocol
instance, built backends, a price table, limits), so the engine takes one
typed, frozen value instead of a long list of keywords and a new setting is
added in one place.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.engine.batches import BatchOptions
from polyjudge.engine.pricing import ModelPrice
from polyjudge.engine.runner import RetryPolicy
from polyjudge.protocols.base import JudgeProtocol

if TYPE_CHECKING:
    from polyjudge.backends.base import Backend
    from polyjudge.backends.batch import BatchClient
    from polyjudge.engine.executor import Executor


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything one judging run (or its ``--dry-run`` estimate) depends on.

    ``None`` for ``runs``, ``temperature`` and ``aggregator`` means the
    protocol's published default (see :meth:`resolved_runs` and siblings).
    ``store_path`` None keeps answers in memory; ``outputs`` is the run
    directory the result will be written to (its outputs may then be reused).
    ``context_sizes`` (judge -> tokens) add to the known model contexts for the
    oversized-prompt warnings; ``free_judges`` cost nothing. ``samples_per_request``
    (per judge when a mapping) asks for that many choices per request.
    ``batch_clients`` (one per judge) send through Batch APIs; ``batch_export``
    writes the batch input file instead and ``batch_import`` loads an output file.
    ``executor`` None is the local one. ``cache_path``: the folder of the machine's shared response
    cache (None: none), read before sending unless ``cache_read`` is False (``--record``, which must
    send to record) and filled with every answer received.
    """

    protocol: JudgeProtocol
    backends: Sequence[Backend]
    runs: int | None = None
    temperature: float | None = None
    aggregator: str | None = None
    min_runs: int = 1
    seed: int = 0
    reasoning_effort: str | None = None
    concurrency: int = 16
    retry: RetryPolicy = RetryPolicy()
    progress: bool = False
    samples_per_request: int | Mapping[str, int] = 1
    max_cost: float | None = None
    rpm: float | None = None
    tpm: float | None = None
    prices: Mapping[str, ModelPrice | Any] | None = None
    judge_info: Sequence[Mapping[str, Any]] | None = None
    # judge -> its request form's token ("" or absent: the default form; backends.form.request_form)
    request_forms: Mapping[str, str] | None = None
    context_sizes: Mapping[str, int] | None = None
    free_judges: Collection[str] = ()
    store_path: Path | str | None = None
    outputs: Path | None = None
    dry_run: bool = False
    batch_clients: Sequence[BatchClient] | None = None
    batch_options: BatchOptions = BatchOptions()
    batch_export: Path | str | None = None
    batch_import: Path | str | None = None
    executor: Executor | None = None
    cache_path: Path | None = None
    cache_read: bool = True

    @property
    def judges(self) -> list[str]:
        """The judges' model names, in the order given."""
        return [b.model for b in self.backends]

    def resolved_runs(self) -> int:
        return self.protocol.default_runs if self.runs is None else self.runs

    def resolved_temperature(self) -> float:
        return self.protocol.default_temperature if self.temperature is None else self.temperature

    def resolved_aggregator(self) -> str:
        return self.aggregator or self.protocol.default_aggregator

    @property
    def goes_by_batch(self) -> bool:
        """Every task is planned at once and sent, exported or imported through the Batch API path."""
        return self.batch_import is not None or self.batch_export is not None or self.batch_clients is not None


__all__ = ["RunSpec"]
