"""The report's section on a human annotation campaign: progress, agreement among annotators and with the judge.

It reads the campaign's status as ``polyjudge annotate status --format json`` prints it (the API
hands it over for ``report --annotation CAMPAIGN``).
"""

from __future__ import annotations

from typing import Any

from polyjudge.report.blocks import Table
from polyjudge.report.format import number


def _rows(obj: dict[str, Any], key: str) -> list[dict[str, Any]]:
    rows = obj.get(key)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def annotation_blocks(obj: Any) -> list[Any]:
    """Tables of one campaign status: progress, agreement among annotators, agreement with the judge."""
    if not isinstance(obj, dict):
        return []
    name, scheme = str(obj.get("name", "")), str(obj.get("scheme", ""))
    blocks: list[Any] = [Table(["annotator", "done", "of", "versions saved"],
                               [[str(p.get("annotator", "")), p.get("done", 0), p.get("total", 0),
                                 p.get("versions", 0)] for p in _rows(obj, "progress")],
                               f"Campaign {name} ({scheme}): annotations per annotator (edits are versions).")]
    among = [[f"Krippendorff's alpha ({obj.get('alpha_level', '')})", number(obj.get("alpha")),
              obj.get("alpha_items", 0)]]
    among += [[f"span F1 {p.get('first')} vs {p.get('second')}", number(p.get("f1")), p.get("items", 0)]
              for p in _rows(obj, "span_f1")]
    blocks.append(Table(["agreement among annotators", "value", "items"], among,
                        "Alpha over the items with two or more annotations; character-level span F1 "
                        "between every pair of annotators on the items both annotated."))
    judge = _rows(obj, "judge")
    if judge:
        blocks.append(Table(["annotators vs the judge", "Pearson", "Kendall tau", "items"],
                            [[str(j.get("who", "")), number(j.get("pearson")), number(j.get("kendall")),
                              j.get("items", 0)] for j in judge],
                            "Each annotator's values (and the item means) against the judge's scores."))
    ppi = obj.get("ppi")
    if isinstance(ppi, dict):
        blocks.append(Table(["estimate of the mean human score", "value", "interval"], [
            ["PPI++ (people + judge)", number(ppi.get("estimate")),
             f"[{number(ppi.get('lower'))}, {number(ppi.get('upper'))}]"],
            ["people alone", number(ppi.get("human_only")),
             f"[{number(ppi.get('human_only_lower'))}, {number(ppi.get('human_only_upper'))}]"]],
            f"{ppi.get('n_labelled')} items annotated, {ppi.get('n_judged')} judged only; "
            f"{number(float(ppi.get('confidence', 0.9)) * 100)} % intervals."))
    return blocks


__all__ = ["annotation_blocks"]
