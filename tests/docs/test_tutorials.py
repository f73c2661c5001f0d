"""Every tutorial of docs/tutorials runs from start to end, one page one story, against the scripted servers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.docs.conftest import TUTORIALS, page_params


@pytest.mark.parametrize("page", page_params(TUTORIALS))
def test_tutorial_runs(page: Path, story: Callable[[Path], object]) -> None:
    story(page)
