"""Rating tasks for judge validation, re-exported from their home in the data layer.

:mod:`polyjudge.data.rating_task` holds them so that the elicitation protocols
(below validation) and validation share one definition.
"""

from polyjudge.data.rating_task import RatingTask, all_subsets, load_task

__all__ = ["RatingTask", "all_subsets", "load_task"]
