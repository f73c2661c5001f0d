"""The README's code blocks run as one story, as the pages of the site do (skipped blocks say why)."""

from __future__ import annotations

from tests.docs.conftest import README


def test_readme_runs(story) -> None:
    story(README)
