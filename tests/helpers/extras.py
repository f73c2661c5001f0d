"""Tests that need one of polyjudge's extras (pyproject's optional dependencies) beyond the README's install.

The README installs ``.[model,test]``; a test that needs more carries ``@pytest.mark.needs_extra("ray")``
(or a module's ``pytestmark``) and skips without it, naming the extra and its install command (the root
conftest does the skipping). ``pytest -m needs_extra`` runs exactly these tests: ``.ci/run`` does so once
it has installed the extras, after the README's own test command.

A documentation block declares its extra with ``<!-- docs-test: needs EXTRA (why) -->`` on the line before
its fence (``tests/docs/blocks.py``): its page runs up to that block, then skips naming the extra.
"""

from __future__ import annotations

import importlib.util

import pytest

# extra -> the modules whose absence means it is not installed (what its tests import)
EXTRAS: dict[str, tuple[str, ...]] = {
    "ray": ("ray",),
    "datasets": ("datasets", "pyarrow"),
    "pandas": ("pandas",),
    "docs": ("mkdocs", "material", "mkdocstrings_handlers", "mkdocs_jupyter"),
    "lint": ("ruff", "mypy"),
}
MARKER = "needs_extra"


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed (empty: the extra is there)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r} (known: {', '.join(EXTRAS)})")
    return [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]


def skip_reason(extra: str) -> str | None:
    """Why a test needing ``extra`` skips here, naming it and its install; None when it is installed."""
    absent = missing(extra)
    if not absent:
        return None
    return f"needs the {extra} extra ({', '.join(absent)} not installed): pip install -e '.[{extra}]'"


def needs_extra(*extras: str, partial: bool = False) -> pytest.MarkDecorator:
    """The marker of a test that needs ``extras``; ``partial``: the test skips by itself, at the point where
    it needs one (a documentation page runs the blocks before)."""
    for extra in extras:
        missing(extra)  # an unknown name fails at import, not as a silent skip
    return getattr(pytest.mark, MARKER)(*extras, partial=partial)


def skip_if_missing(item: pytest.Item) -> None:
    """Skip ``item`` (the root conftest's ``pytest_runtest_setup``) when an extra its marks name is missing."""
    for mark in item.iter_markers(MARKER):
        if mark.kwargs.get("partial"):
            continue  # the test skips by itself where it needs the extra
        for extra in mark.args:
            reason = skip_reason(extra)
            if reason is not None:
                pytest.skip(reason)


__all__ = ["EXTRAS", "MARKER", "missing", "needs_extra", "skip_if_missing", "skip_reason"]
