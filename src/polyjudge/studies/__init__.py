"""Studies: experiments that judge several conditions and compare them.

Each study is a typed config, one function that judges every condition
through :func:`polyjudge.engine.session.judge` (one run directory per
condition, so re-running resumes) and a typed result that writes the study's
tables (``write``) and hands them to pandas (``to_pandas``).

* :mod:`polyjudge.studies.consistency`: cross-language consistency (Fu & Liu, 2025).
* :mod:`polyjudge.studies.probes`: robustness probes of a judge (Hada et al., 2024).

Studies sit beside the engine: they use engine, metaeval, data and protocols,
never the CLI or the API.
"""

from polyjudge.studies.consistency import ConditionSummary, ConsistencyConfig, ConsistencyResult, run_consistency
from polyjudge.studies.probes import PROBE_KINDS, ProbeConfig, ProbeResult, run_probe

__all__ = ["PROBE_KINDS", "ConditionSummary", "ConsistencyConfig", "ConsistencyResult", "ProbeConfig",
           "ProbeResult", "run_consistency", "run_probe"]
