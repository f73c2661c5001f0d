"""Input errors that say exactly where the problem is."""

from __future__ import annotations

# Longest message kept: a value quoted from a huge line never floods the terminal.
MAX_MESSAGE = 500


class InputError(ValueError):
    """Bad user input: names the file, the line (1-based) and the field.

    The CLI turns this into a one-line message and exit code 2.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        message = " ".join(message.split("\n"))
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        self.path, self.line, self.field, self.reason = path, line, field, message
        where = []
        if path is not None:
            where.append(f"{path}:{line}" if line is not None else str(path))
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
