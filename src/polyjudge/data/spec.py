"""The data group of a judging's specification: what is judged and how it is read.

:class:`InputSpec` is frozen and import-light (the command line builds it before
anything heavy is loaded); ``polyjudge.api.inputs.read_input`` reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from polyjudge.data.shapes import normalise_fields


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One input and how to read it.

    ``path`` (None: the items are given in code, and only the languages apply to
    those that carry none) is a file, a folder (mt-metrics-eval test set, parquet files) or
    ``hf:NAME[:CONFIG][:SPLIT]``; ``fmt`` a registered input format (default:
    detected). ``lp`` (``en-de``) picks a test set's language pair and gives
    items without languages theirs (``src_lang``/``tgt_lang`` win over it).
    ``columns`` is ``--columns`` as given (``tgt=mt,ref=reference``). Every language code (of ``lp``,
    ``src_lang``, ``tgt_lang`` and of the items) must be a BCP 47 tag; ``language_names`` (``ge=Georgian
    variant``, comma-separated or several) names codes that are not, which prompts then call by that name.
    ``systems``/``exclude_systems`` choose a test set's systems; ``ref`` names
    its reference (default: the standard one); ``with_reference`` leaves that
    reference out of the judged systems. ``limit`` keeps the first N items.
    """

    def __post_init__(self) -> None:
        normalise_fields(self)  # Python shapes; TypeError names a field

    path: str | None = None
    fmt: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    lp: str | None = None
    columns: str | Sequence[str] | None = None
    systems: tuple[str, ...] = ()
    exclude_systems: tuple[str, ...] = ()
    ref: str | None = None
    with_reference: bool = False
    limit: int | None = None
    language_names: str | Sequence[str] | None = None


# Deprecated: a second name of InputSpec (the data group of a judging); kept for one release.
DataSpec = InputSpec

__all__ = ["DataSpec", "InputSpec"]
