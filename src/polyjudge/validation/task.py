"""Rating tasks (options O, admissible response sets Q, answer letters).

Defined in :mod:`polyjudge.protocols.elicitation` because the elicitation
protocols need them and protocols sit below validation; re-exported here.
"""

from polyjudge.protocols.elicitation import RatingTask, all_subsets, load_task

__all__ = ["RatingTask", "all_subsets", "load_task"]
