"""polyjudge.metaeval: agreement of judges and metrics with human scores.

Python API (plain numpy arrays and dataclasses, notebook friendly):
``matrices.ScoreMatrix``, ``readers.read_scores``, ``stats`` (pearson, spearman,
kendall, acc23, tie_calibration, pairwise_accuracy, soft_pairwise_accuracy),
``significance`` (permutation tests, bootstrap CIs, clusters),
``statistics`` (the ``STATISTICS`` registry that ranking tasks name; add one
with ``register_statistic``) and ``tasks.evaluate`` (WMT23/WMT24 presets, or
explicit ``tasks``, and ranking tables); ``variants`` turns a run directory into
one metric per run aggregator and per single run (GEMBA-MQM V2 Tables 2–4).
"""
