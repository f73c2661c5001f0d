"""The blocks a report section is made of: tables, figures, paragraphs, key/value lists.

Plain data, rendered by the HTML template with autoescaping. They live apart from
:mod:`polyjudge.report.sections` so the study renderers (:mod:`~polyjudge.report.pairwise`,
:mod:`~polyjudge.report.simulation`) build them without importing the sections that list them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup


@dataclass(slots=True)
class Cell:
    """A table cell with a CSS class (``loss``, ``best``, ``bad``) and an optional tooltip."""

    text: str
    cls: str = ""
    title: str = ""


@dataclass(slots=True)
class Table:
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""
    kind: str = "table"


@dataclass(slots=True)
class Figure:
    name: str  # file stem for --plots-dir
    svg: Markup
    caption: str = ""
    kind: str = "figure"


@dataclass(slots=True)
class Para:
    text: str
    kind: str = "para"


@dataclass(slots=True)
class KeyValues:
    items: list[tuple[str, str]]
    kind: str = "kv"


@dataclass(slots=True)
class SpanBrowser:
    data_id: str  # id of the <script type="application/json"> holding the rows
    kind: str = "spans"


@dataclass(slots=True)
class Section:
    id: str
    title: str
    blocks: list[Any] = field(default_factory=list)
    run: str | None = None


__all__ = ["Cell", "Figure", "KeyValues", "Para", "Section", "SpanBrowser", "Table"]
