"""A judge's settled request form, remembered across runs in the machine's shared response cache.

While the form of a judge's requests is unsettled (a model that may reject
``max_tokens`` or a JSON schema), its backend sends the first request alone
and holds the others until the server answers it (``backends/adaptation.py``).
That hold costs each run up to half a second at its start. Once a server has
settled the form, the cache keeps how (what the backend changed, ``{}`` when
the server took the requests as asked), under the judge's scope (backend and
endpoint), its name and its request form's token: a later run of the same
judge against the same server adopts it and holds nothing. A judge asked for
another request form (``?structured=none``, ``?reasoning``: another token,
other keys) learns its own form anew; what a server teaches never changes
the form's token, so the keys of a run stay what they were (issue 34).

Should the server have changed since (another model behind the same URL), a
rejected request is still adapted and resent, and the new lesson replaces the
remembered one at the end of the run.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from polyjudge.backends.base import Backend
from polyjudge.backends.build import adaptations_of, adopt_form_of, form_settled_of
from polyjudge.engine.caching import CacheUse

log = logging.getLogger("polyjudge")


@dataclass(frozen=True, slots=True)
class FormMemory:
    """At a run's start: the judges whose form was unsettled (``learning``) and the forms adopted for
    some of them from the cache (judge -> changes)."""

    learning: frozenset[str] = frozenset()
    adopted: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def adopt_remembered_forms(use: CacheUse | None, backends: Sequence[Backend],
                           forms: Mapping[str, str] | None) -> FormMemory:
    """Have each unsettled judge's backend write its requests as the server settled them in an earlier
    run of the same request form (``forms``: judge -> token). Nothing is adopted when the run may not
    read the cache (``--record``), but what the run learns is kept."""
    if use is None:
        return FormMemory()
    learning = frozenset(b.model for b in backends if b.model in use.scopes and not form_settled_of(b))
    adopted: dict[str, dict[str, str]] = {}
    if not use.read:
        return FormMemory(learning)
    try:
        for backend in backends:
            judge = backend.model
            if judge not in learning:
                continue
            settled = use.cache.settled_form(use.scopes[judge], judge, (forms or {}).get(judge, ""))
            if settled is not None:
                adopt_form_of(backend, settled)
                adopted[judge] = settled
    except sqlite3.Error as exc:
        log.debug("the shared response cache's settled request forms could not be read (%s)", exc)
    return FormMemory(learning, adopted)


def keep_settled_forms(use: CacheUse | None, backends: Sequence[Backend], forms: Mapping[str, str] | None,
                       memory: FormMemory) -> None:
    """Remember how the server settled the requests of each judge whose form was unsettled at the start,
    for the later runs of the same form (one adopted and unchanged is not written again)."""
    if use is None or not memory.learning:
        return
    try:
        for backend in backends:
            judge = backend.model
            if judge not in memory.learning or not form_settled_of(backend):
                continue
            changes = adaptations_of(backend)
            if memory.adopted.get(judge) != changes:
                use.cache.put_settled_form(use.scopes[judge], judge, (forms or {}).get(judge, ""), changes)
    except sqlite3.Error as exc:
        log.warning("the shared response cache %s could not keep the judges' settled request forms (%s)",
                    use.cache.path, exc)


__all__ = ["FormMemory", "adopt_remembered_forms", "keep_settled_forms"]
