"""The judging settings, declared once (``polyjudge.data.settings``): the command line builds its judge
flags from them, a study file its ``[[judging]]`` keys, ``JudgeConfig`` its fields; and the other keys of a
study file's tables (``polyjudge.data.study_keys``: ``TableKey``), from which ``polyjudge meta-eval`` and
``polyjudge report`` build their flags. Light to import."""

from __future__ import annotations

from polyjudge.data import settings as _declared
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
    old_keys,
    python_keywords,
)
from polyjudge.data.study_keys import TABLE_KEYS, TableKey, table_key


def judging_settings() -> tuple[Setting, ...]:
    """Every declared judging setting, in ``polyjudge judge --help`` order: its name (the Python keyword of
    ``JudgeConfig`` and the study key; ``--name`` the flag), group, kind, default, bounds, help and whether it
    is part of a run's identity."""
    return _declared.SETTINGS


__all__ = ["GROUPS", "SETTINGS", "TABLE_KEYS", "Setting", "TableKey", "by_name", "command_line", "default", "get",
           "identity_names", "judging_settings", "of_group", "old_keys", "python_keywords",
           "table_key"]
