"""The report's "Settled by judging in rounds" section: what a run judged ``--until-settled`` recorded in its
manifest (``settled``): how much of the test set it judged against a full run, each system's interval of
the full test set's score, rank group and units judged (a retired system's stop where it was settled against
every other), the pairs settled and the pairs left open, shown as ties.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polyjudge.report.blocks import KeyValues, Para, Section, Table
from polyjudge.report.format import interval, number, percent

__all__ = ["settled_section"]


def settled_section(settled: Mapping[str, Any], run_name: str, slug: str) -> Section | None:
    """The section of a run judged in rounds, or None for any other run."""
    if not settled:
        return None
    calls, full = int(settled.get("calls", 0)), int(settled.get("calls_full", 0))
    facts = [("judged", f"{settled.get('units_judged')} of {settled.get('units_total')} {settled.get('unit')}s "
                        f"in {settled.get('rounds')} round(s)"),
             ("calls", f"{calls:,} of a full run's {full:,} ({percent(calls / full) if full else 'n/a'})"),
             ("stopped by", str(settled.get("stopped", ""))),
             ("settled at", f"{settled.get('alpha')} for all pairs and looks together"),
             ("method", str(settled.get("method_text", settled.get("method", ""))))]
    unit = settled.get("unit", "segment")
    systems = [[s.get("group"), s.get("system"), number(s.get("score")), interval(s.get("low"), s.get("high")),
                s.get("units", settled.get("units_judged"))]
               for s in sorted(settled.get("systems", ()), key=lambda s: (s.get("group") or 0))]
    pairs = [[p.get("better"), ">", p.get("worse"), interval(p.get("low"), p.get("high"))]
             for p in settled.get("settled", ())]
    pairs += [[p.get("a"), "=", p.get("b"), interval(p.get("low"), p.get("high"))] for p in settled.get("open", ())]
    blocks: list[Any] = [
        KeyValues(facts),
        Para("Systems in one group are not all settled apart; a pair marked '=' is open (a tie: its order is not "
             "known), never an order. Intervals hold for the full test set's scores. A system settled against "
             f"every other one is retired: later rounds no longer judge it, so its score and interval are from "
             f"the {unit}s it was judged on."),
        Table(["group", "system", "score", "interval of the full data's score", f"{unit}s judged"], systems),
        Table(["system", "", "system", "interval of the full data's difference"], pairs)]
    return Section(f"settled-{slug}", "Settled by judging in rounds", blocks, run_name)
