"""Test modules: each basename once in the whole suite.

The suite runs in pytest's default import mode with no ``__init__.py`` in its folders, where two test
modules of one basename (``tests/cli/test_errors.py`` and ``tests/data/test_errors.py``) stop the
collection of the whole run with an error. A test written in one package's folder only meets the other
in a full run, so this fails first, naming both.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_basename_is_used_once():
    found: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        found[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: sorted(paths) for name, paths in found.items() if len(paths) > 1}
    assert clashes == {}
