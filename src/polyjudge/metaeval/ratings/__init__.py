"""polyjudge.metaeval.ratings: a judge's ratings against people's (and against itself), item by item.

A sub-package of meta-evaluation that imports none of its siblings: its users
(``polyjudge calibrate``, ``agreement``, the consistency and probe studies,
:mod:`polyjudge.validation`) compare labels, not metric rankings, and need none
of the WMT statistics:

* :mod:`~polyjudge.metaeval.ratings.agreement`: chance-corrected agreement (Cohen's and
  Fleiss' kappa, Krippendorff's alpha, percentage agreement, weighted F1);
* :mod:`~polyjudge.metaeval.ratings.calibration`: a judge against the human majority
  per language, task and metric (Hada et al., 2024);
* :mod:`~polyjudge.metaeval.ratings.consistency`: cross-language consistency of a judge
  on parallel data (Fu & Liu, 2025).

Modules are imported where used (this file loads none), so ``agreement``
alone does not pull in scipy.
"""
