"""Reading a study's JSON document back with checks: one class for every typed result reader.

The meta-evaluation, validation and pairwise results are written as JSON and read back into typed rows
(the report renders those). A file edited by hand or written by another version may hold anything, so
each value is checked where it is read, and the first mismatch is one :class:`InputError` naming the
file, the place in the JSON (``ranking[0].columns[1].rank``) and the shape the file should have.
"""

from __future__ import annotations

from typing import Any

from polyjudge.data.errors import InputError
from polyjudge.data.readers import json_type, plain

Number = float | int | None


class JsonDoc:
    """Checks one parsed document while it is read (``expected``: the shape named in every message)."""

    def __init__(self, path: str, expected: str) -> None:
        self.path, self.expected = path, expected

    def fail(self, where: str, detail: str) -> InputError:
        return InputError(f"{plain(where, 160)}: {detail}; expected {self.expected}", path=self.path)

    def obj(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, f"must be an object, got {json_type(v)}")
        return v

    def objects(self, v: Any, where: str, *, optional: bool = False) -> list[dict[str, Any]]:
        """A list of objects (when ``optional``, absent or null is empty)."""
        if v is None and optional:
            return []
        if not isinstance(v, list):
            raise self.fail(where, f"must be a list, got {json_type(v)}")
        return [self.obj(x, f"{where}[{i}]") for i, x in enumerate(v)]

    def number(self, v: Any, where: str) -> Number:
        """A JSON number that fits a float, or null (kept as written, so it writes back the same)."""
        if v is None:
            return None
        ok = isinstance(v, int | float) and not isinstance(v, bool)
        if ok and isinstance(v, int):
            try:
                float(v)
            except OverflowError:
                ok = False
        if not ok:
            raise self.fail(where, f"must be a number or null, got {json_type(v)}")
        return v  # type: ignore[no-any-return]

    def texts(self, v: Any, where: str) -> tuple[str, ...]:
        """A list of values read as strings (absent: empty)."""
        if v is None:
            return ()
        if not isinstance(v, list):
            raise self.fail(where, f"must be a list, got {json_type(v)}")
        return tuple(str(x) for x in v)


__all__ = ["JsonDoc", "Number"]
