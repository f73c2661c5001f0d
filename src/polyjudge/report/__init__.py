"""Run directories -> one self-contained HTML report (inline CSS, SVG and script)."""

from polyjudge.report.html import render, write_report
from polyjudge.report.load import RunData, load_run

__all__ = ["RunData", "load_run", "render", "write_report"]
