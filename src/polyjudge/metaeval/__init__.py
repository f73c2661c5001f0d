"""polyjudge.metaeval: how well judges and metrics rank like human scores (WMT statistics).

Python API (plain numpy arrays and dataclasses, notebook friendly):
``matrices.ScoreMatrix``, ``readers.read_scores``, ``stats`` (pearson, spearman,
kendall, acc23, tie_calibration, pairwise_accuracy, soft_pairwise_accuracy),
``significance`` (permutation tests, bootstrap CIs, clusters),
``statistics`` (the ``STATISTICS`` registry that ranking tasks name; add one
with ``register_statistic``) and ``tasks.evaluate`` (WMT23/WMT24 presets, or
explicit ``tasks``, and ranking tables); ``system_level`` (metrics with system
scores only), ``mtme`` (mt-metrics-eval directories); ``variants`` turns a run
directory into one metric per run aggregator and per single run (GEMBA-MQM V2
Tables 2–4); ``expected`` compares an expected-score run with sampled runs.

Span F1 and the span readers are in :mod:`polyjudge.metaeval.spans`, rating
agreement, calibration and consistency in :mod:`polyjudge.metaeval.ratings`,
paired system comparisons in :mod:`polyjudge.metaeval.systems`; these three read
only data, aggregate and rundir (validation may use them). Meta-evaluation reads
runs through :mod:`polyjudge.analysis` (run aggregation); analysis never imports
it back, and metaeval never imports validation.
"""
