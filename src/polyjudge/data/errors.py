"""Input errors that say exactly where the problem is."""

from __future__ import annotations

from collections.abc import Callable, Sequence

# Longest message kept: a value quoted from a huge line never floods the terminal.
MAX_MESSAGE = 500
MAX_PART = 200


def _one_line(text: str, limit: int) -> str:
    """Every kind of line break (\\r, U+2028, ...) becomes a space; cut to ``limit`` characters."""
    text = " ".join(text.splitlines())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class InputError(ValueError):
    """Bad user input: names the file, the line (1-based) and the field.

    The CLI turns this into a one-line message and exit code 2.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, setting: bool = False) -> None:
        message = _one_line(message, MAX_MESSAGE)
        path = None if path is None else _one_line(str(path), MAX_PART)
        field = None if field is None else _one_line(str(field), MAX_PART)
        self.path, self.line, self.field, self.reason = path, line, field, message
        self.setting = setting  # ``field`` names a setting of the API (``lp``), not a column of a file
        where = []
        if path is not None:
            where.append(f"{path}:{line}" if line is not None else str(path))
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)

    def with_flags(self, flag: Callable[[str], str]) -> InputError:
        """This error as a front end shows it: the API setting it names (``lp``, ``exclude_systems``)
        turned into the front end's own name by ``flag`` (the command line's ``--lp``); an error about
        a file's field is returned as it is."""
        if not self.setting or self.field is None:
            return self
        return InputError(self.reason, path=self.path, line=self.line, field=flag(self.field))


def check_choices(*choices: tuple[str, object, Sequence[str]]) -> None:
    """``InputError`` for the first (flag name, value, allowed values) whose value is not allowed.

    The API is called without the CLI's click choices too, so every config checks its
    named choices the same way and says which values there are.
    """
    for name, value, allowed in choices:
        if value not in allowed:
            raise InputError(f"unknown {name} {value!r} (choose from {', '.join(allowed)})", field=name)
