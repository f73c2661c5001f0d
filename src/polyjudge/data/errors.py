"""Input errors that say exactly where the problem is."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: names the file, the line (1-based) and the field.

    The CLI turns this into a one-line message and exit code 2.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field, self.reason = path, line, field, message
        where = []
        if path is not None:
            where.append(f"{path}:{line}" if line is not None else str(path))
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
