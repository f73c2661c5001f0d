"""The polyjudge command line run inside the test process, as the tests of commands call it."""

from __future__ import annotations

import pytest

from polyjudge.cli.main import main


def cli(*argv: object) -> int:
    """``polyjudge ARGV`` (each argument as text); its exit code: the command always exits, 0 included."""
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    code = exc.value.code
    assert isinstance(code, int)
    return code
