"""The site's other pages (home, reference, explanations) run their blocks as the tutorials do: a command
or a Python example shown anywhere in the documentation is run by a test, or skipped with a reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.docs.blocks import parse_blocks
from tests.docs.conftest import ROOT, SITE_PAGES, page_params

RUNNING = [p for p in SITE_PAGES if any(b.runs and b.kind != "file" for b in parse_blocks(p))]


def test_the_home_page_and_the_api_reference_run_something() -> None:
    assert {p.relative_to(ROOT / "docs").as_posix() for p in RUNNING} >= {"index.md", "reference/api.md"}


@pytest.mark.parametrize("page", page_params(RUNNING, [p.relative_to(ROOT / "docs").as_posix() for p in RUNNING]))
def test_site_page_runs(page: Path, story: Callable[[Path], object]) -> None:
    story(page)
