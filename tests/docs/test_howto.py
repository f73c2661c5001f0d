"""Every how-to guide of docs/how-to runs from start to end, one page one story, against the scripted servers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.docs.conftest import HOWTOS, page_params


@pytest.mark.parametrize("page", page_params(HOWTOS))
def test_howto_runs(page: Path, story: Callable[[Path], object]) -> None:
    story(page)
