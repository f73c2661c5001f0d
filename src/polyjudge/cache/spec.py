"""The cache group of a judging's specification: the machine's shared response cache and ``--record``."""

from __future__ import annotations

from dataclasses import dataclass

from polyjudge.data.errors import InputError
from polyjudge.data.settings import default
from polyjudge.data.shapes import normalise_fields


@dataclass(frozen=True, slots=True)
class CacheSpec:
    """``use``: read the shared response cache before sending and fill it with every answer; ``path``
    its folder (None: ``POLYJUDGE_CACHE``, else the user cache folder). ``record`` appends every
    request and answer to this JSONL file (for the replay backend); a recording run sends
    every request, so it reads no cached answer."""

    use: bool = default("use_cache")
    path: str | None = default("cache_path")
    record: str | None = default("record")

    def __post_init__(self) -> None:
        normalise_fields(self)
        if not self.use and self.path:
            raise InputError("give either a cache path or no cache, not both", field="cache", setting=True)

    @property
    def read(self) -> bool:
        """Whether cached answers may be taken instead of sending."""
        return not self.record


__all__ = ["CacheSpec"]
