"""Studies: experiments that judge several conditions and compare them.

Each study is a typed config, one function that judges every condition
through :func:`polyjudge.engine.session.judge` (one run directory per
condition, so re-running resumes) and a typed result that writes the study's
tables (``write``) and hands them to pandas (``to_pandas``).

* :mod:`polyjudge.studies.consistency`: cross-language consistency (Fu & Liu, 2025).
* :mod:`polyjudge.studies.probes`: robustness probes of a judge (Hada et al., 2024); the
  perturbations and probe tables themselves are pure functions in :mod:`polyjudge.studies.perturb`.

Studies sit beside the engine: they use engine, metaeval, ratings, data and protocols,
never the CLI or the API.
"""

from __future__ import annotations

from polyjudge.registry import lazy_members

# Loaded on first use: importing one study (or the span scorer's tables) should not load scipy.
_HOMES = {
    "ConditionSummary": "consistency", "ConsistencyConfig": "consistency", "ConsistencyResult": "consistency",
    "FactorTables": "consistency", "factor_tables": "consistency", "run_consistency": "consistency",
    "PROBE_KINDS": "probes", "ProbeConfig": "probes", "ProbeResult": "probes", "run_probe": "probes",
}


__getattr__, __dir__ = lazy_members(__name__, {name: f"{__name__}.{home}" for name, home in _HOMES.items()})


__all__ = sorted(_HOMES)
