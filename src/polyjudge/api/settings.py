"""The judging settings, declared once (``polyjudge.data.settings``): the command line builds its judge
flags from them, a study file its ``[[judging]]`` keys, ``JudgeConfig`` its fields. Light to import."""

from __future__ import annotations

from polyjudge.data.settings import (
    GROUPS,
    SETTINGS,
    Setting,
    by_name,
    command_line,
    default,
    get,
    identity_names,
    of_group,
    python_keywords,
)

__all__ = ["GROUPS", "SETTINGS", "Setting", "by_name", "command_line", "default", "get", "identity_names",
           "of_group", "python_keywords"]
