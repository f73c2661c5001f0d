"""Named judging setups of the papers behind polyjudge's protocols, for ``polyjudge.load(NAME)``.

A preset is a set of :class:`~polyjudge.api.Judge` keywords (the judging settings of a study file's
``[[judging]]`` table), nothing more: ``polyjudge.load("gemba-mqm-v2", judge="openai:MODEL@URL")`` is
``polyjudge.Judge(**preset, judge=...)``. Each says where its values come from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from polyjudge.data.errors import InputError


@dataclass(frozen=True, slots=True)
class JudgePreset:
    """One named setup: its ``settings`` (Judge keywords) and the ``source`` they follow."""

    name: str
    summary: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""


PRESETS: tuple[JudgePreset, ...] = (
    JudgePreset(
        "gemba-mqm-v2", "GEMBA-MQM V2: MQM error lists from GPT-4.1-mini, ten runs at T=0.4 merged by RRWA",
        {"protocol": "mqm", "judge": "openai:gpt-4.1-mini", "runs": 10, "temperature": 0.4, "aggregator": "rrwa",
         "use_context": True},
        "Junczys-Dowmunt, WMT 2025 (GEMBA-MQM V2: Ten Judgments Are Better Than One): GPT-4.1-mini, temperature "
        "0.4, ten runs, reciprocal-rank weighted average, full source document as context"),
    JudgePreset(
        "gemba-esa", "GEMBA-ESA: error spans with severities, then a 0-100 score, one greedy run",
        {"protocol": "gemba-esa", "judge": "openai:gpt-4.1-mini", "runs": 1, "temperature": 0.0},
        "Kocmi et al., WMT 2024 (GEMBA-ESA): one answer per segment; the judge is a choice of ours (the paper's "
        "GPT-4 line is retired): give judge= to change it"),
    JudgePreset(
        "tsa", "Tagged Span Annotation with o3 (span-level error detection)",
        {"protocol": "tsa", "judge": "openai:o3", "runs": 1},
        "Yeom et al., WMT 2025 (Tagged Span Annotation): the reasoning model o3 with the API's default decoding"),
    JudgePreset(
        "tsa-gpt-4.1", "Tagged Span Annotation with GPT-4.1 at temperature 0.2",
        {"protocol": "tsa", "judge": "openai:gpt-4.1", "runs": 1, "temperature": 0.2},
        "Yeom et al., WMT 2025: their non-reasoning setting, GPT-4.1 at a lower temperature of 0.2"),
)


def judge_presets() -> dict[str, JudgePreset]:
    """Every named setup ``polyjudge.load`` takes, by name."""
    return {p.name: p for p in PRESETS}


def preset(name: str) -> JudgePreset:
    """The setup ``name`` (an InputError listing the names for another)."""
    found = judge_presets().get(name)
    if found is None:
        raise InputError(f"no preset {name!r}; presets: {', '.join(judge_presets())}", field="name", setting=True)
    return found


__all__ = ["PRESETS", "JudgePreset", "judge_presets", "preset"]
