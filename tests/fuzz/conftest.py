"""Print how many cases the fuzz suite generated (issue 13 asks for the number)."""

from __future__ import annotations

from typing import Any

from tests.fuzz.hostile import CASES, EXITS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if CASES:
        terminalreporter.section("fuzz cases")
        for name, n in sorted(CASES.items()):
            terminalreporter.write_line(f"{name}: {n}")
        terminalreporter.write_line(f"total generated cases: {sum(CASES.values())}")
    if EXITS:
        codes = ", ".join(f"exit {code}: {n}" for code, n in sorted(EXITS.items()))
        terminalreporter.write_line(f"commands run: {sum(EXITS.values())} ({codes})")
