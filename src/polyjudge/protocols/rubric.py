"""Rubric judging with named metrics (Hada et al., 2024).

Each metric has a name, an allowed scale, an **explicit polarity**
(``higher_is_better``) and two descriptions: a short one (``detail:
simple``) and a longer one with example criteria per score (``detail:
detailed``). The built-in metrics (``templates/rubric/metrics.json``) are
linguistic acceptability, output content quality and task quality (0-2),
and problematic content and hallucinations (0 = present, 1 = absent, so
higher is better for all five).

Options (:class:`RubricOptions`, given as ``-o KEY=VALUE``):

- ``metrics``: list of metric names (default: all five built-ins), or a path
  to a JSON file ``{name: {title, scale, higher_is_better, simple, values,
  [detailed, criteria]}}`` with user metrics (polarity is required).
- ``metric``: one metric name: judge only that metric (one call per metric,
  "single call"). Without it all metrics go in one call ("compound call").
  :meth:`Rubric.per_metric` builds one protocol per metric.
- ``detail``: ``simple`` (default) or ``detailed``.
- ``task``: ``generic`` (default), ``open_prompt``, ``continue_writing``,
  ``summarize`` or ``translation``; chooses the task sentence and input block.
- ``few_shot``: path to a JSONL file of examples ``{"src", "tgt", "extra"?,
  "scores": {metric: score or {"score", "justification"}}}`` shown as
  earlier turns of the chat.
- ``language``: evaluation language name, overriding the item's.
- ``score_mode``: ``sample`` (default) or ``expected``: each metric's score is
  its probability-weighted value over the metric's scale, read from the
  answer's token probabilities (:mod:`polyjudge.protocols.expected`); the
  segment score is then formed from these as below.

Item fields: ``src`` = the input given to the system (prompt, passage,
source sentence), ``tgt`` = the output judged; for ``continue_writing``
``extra["left"]`` (default ``src``) and ``extra["right"]`` (default empty).

The answer is one JSON object ``{metric: {"score", "justification"}}``;
every requested metric must be present with an allowed score, otherwise the
answer is a :class:`ParseFailure`. Annotation: ``{"metrics": {name:
{"score", "justification"}}}``. Score: for one metric, the score itself
(reflected on its scale when lower is better); for several, the mean of the
scores mapped to [0, 1] with 1 = best.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.chat import Message
from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl, read_json
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols.base import JudgeProtocol, ParseFailure, ProtocolOptions
from polyjudge.protocols.expected import Locator, ScoreMode, regex_locator, score_mode_field
from polyjudge.protocols.options import option
from polyjudge.protocols.pointwise import language_name, load_template, missing_languages
from polyjudge.protocols.registry import register_protocol
from polyjudge.protocols.templates import PromptTemplate

_TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "rubric"
DEFAULT_METRICS = ("linguistic_acceptability", "output_content_quality", "task_quality",
                   "problematic_content", "hallucinations")

TASKS = {
    "generic": "You receive the input given to a text generation system and the system's output; "
               "evaluate the output.",
    "open_prompt": "You receive a short starting prompt written by a user and the completion a "
                   "system wrote for it; evaluate the completion against the prompt.",
    "continue_writing": "You receive two passages, A and B (one of them may be empty), and a passage C "
                        "meant to bridge them smoothly; evaluate passage C.",
    "summarize": "You receive a passage and a short summary meant to capture its essence; "
                 "evaluate the summary against the passage.",
    "translation": "You receive a source text and its translation; evaluate the translation.",
}


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    title: str
    scale: tuple[int, ...]
    higher_is_better: bool
    simple: str
    values: dict[str, str]
    detailed: str = ""
    criteria: dict[str, list[str]] = field(default_factory=dict)

    def oriented(self, v: float) -> float:
        """The score on the same scale, with the best end highest."""
        return float(v) if self.higher_is_better else float(min(self.scale) + max(self.scale) - v)

    def unit(self, v: float) -> float:
        """The score mapped to [0, 1], 1 = best."""
        lo, hi = min(self.scale), max(self.scale)
        return (self.oriented(v) - lo) / (hi - lo)

    def as_template(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "scale": list(self.scale),
                "higher_is_better": self.higher_is_better, "simple": self.simple,
                "values": self.values, "detailed": self.detailed or self.simple,
                "criteria": self.criteria}


def _metric(name: str, d: Any, origin: str) -> Metric:
    if not isinstance(d, dict):
        raise InputError(f"metric '{name}' must be an object", path=origin, field=name)
    for key in ("scale", "higher_is_better", "simple", "values"):
        if key not in d:
            raise InputError(f"metric '{name}' lacks '{key}'"
                             + (" (its polarity must be stated)" if key == "higher_is_better" else ""),
                             path=origin, field=f"{name}.{key}")
    scale = d["scale"]
    if (not isinstance(scale, list) or len(scale) < 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
            or len(set(scale)) != len(scale)):
        raise InputError(f"metric '{name}': scale must list at least two distinct integers",
                         path=origin, field=f"{name}.scale")
    if not isinstance(d["higher_is_better"], bool):
        raise InputError(f"metric '{name}': higher_is_better must be true or false",
                         path=origin, field=f"{name}.higher_is_better")
    missing = [str(v) for v in scale if str(v) not in d["values"]]
    if missing:
        raise InputError(f"metric '{name}': no meaning given for score(s) {', '.join(missing)}",
                         path=origin, field=f"{name}.values")
    return Metric(name, str(d.get("title", name)), tuple(scale), d["higher_is_better"],
                  str(d["simple"]), {str(k): str(v) for k, v in d["values"].items()},
                  str(d.get("detailed", "")), {str(k): list(v) for k, v in d.get("criteria", {}).items()})


def load_metrics(path: str | Path) -> dict[str, Metric]:
    """Metric definitions from a JSON file ``{name: definition}``."""
    p = Path(path)
    data = read_json(p, "metrics file")
    if not isinstance(data, dict) or not data:
        raise InputError("expected an object of metric definitions", path=str(p))
    return {name: _metric(name, d, str(p)) for name, d in data.items()}


BUILTIN_METRICS = load_metrics(_TEMPLATES / "metrics.json")


def _first_json(text: str) -> Any:
    """The first JSON object or array in the text; code fences and prose
    around it (even prose with brackets) are ignored."""
    decoder = json.JSONDecoder()
    error = "no JSON object in the answer"
    for m in list(re.finditer(r"[{\[]", text))[:64]:
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError as exc:
            error = f"invalid JSON: {exc.msg}"
            continue
        if (isinstance(obj, dict) and obj) or (
                isinstance(obj, list) and obj and all(isinstance(e, dict) for e in obj)):
            return obj
    raise ParseFailure(error)


def _key(s: str) -> str:
    return re.sub(r"[\s_\-]+", "_", s.strip().lower())


@dataclass(frozen=True, slots=True)
class RubricOptions:
    """Options of ``rubric``; ``detail`` and ``task`` are stored in lower case."""

    metrics: tuple[str, ...] | str = field(default=DEFAULT_METRICS, metadata=option(
        "metric names (a list or comma-separated), or a JSON file of metric definitions"))
    metric: str | None = field(default=None, metadata=option(
        "judge only this metric (one call per metric)"))
    detail: str = field(default="simple", metadata=option(
        "simple or detailed metric descriptions", signature="detail"))
    task: str = field(default="generic", metadata=option(
        f"task sentence and input block: {', '.join(TASKS)}", signature="task"))
    few_shot: str | None = field(default=None, metadata=option(
        "JSONL file of scored examples shown as earlier turns"))
    language: str | None = field(default=None, metadata=option(
        "evaluation language named in the prompt, instead of the item's"))
    score_mode: ScoreMode = score_mode_field()

    def __post_init__(self) -> None:
        detail, task = self.detail.lower(), self.task.lower()
        if detail not in ("simple", "detailed"):
            raise InputError("detail must be 'simple' or 'detailed'", field="detail")
        if task not in TASKS:
            raise InputError(f"unknown rubric task '{task}'; known: {', '.join(TASKS)}", field="task")
        object.__setattr__(self, "detail", detail)
        object.__setattr__(self, "task", task)


@register_protocol()
class Rubric(JudgeProtocol):
    """Named metrics with scale and polarity, one JSON answer per call (Hada et al., 2024)."""

    name = "rubric"
    options_type = RubricOptions
    settings: RubricOptions
    template: PromptTemplate
    default_runs = 1
    default_temperature = 0.0
    default_aggregator = "mean"
    max_tokens = 768

    def __init__(self, options: ProtocolOptions | None = None) -> None:
        super().__init__(options)
        spec = self.settings.metrics
        if isinstance(spec, str) and (spec.endswith(".json") or Path(spec).is_file()):
            available = load_metrics(spec)
            names = list(available)
        else:
            available = BUILTIN_METRICS
            names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
        if self.settings.metric:
            names = [self.settings.metric]
        unknown = [n for n in names if n not in available]
        if unknown or not names:
            raise InputError(f"unknown metric(s) {', '.join(unknown) or '(none)'}; known: "
                             f"{', '.join(available)}", field="metrics")
        self.metrics = [available[n] for n in names]
        self.detail = self.settings.detail
        self.task = self.settings.task
        self.language_override = self.settings.language
        self.examples = self._load_examples(self.settings.few_shot)
        self.template = load_template(self.options.template, "rubric/rubric.jinja")

    @classmethod
    def per_metric(cls, options: ProtocolOptions | None = None) -> list[Rubric]:
        """One protocol per metric ("single call"): run each as its own judging run."""
        base = cls(options)
        opts = options or ProtocolOptions()
        return [cls(ProtocolOptions(opts.template, opts.use_context,
                                    {**opts.extra, "metric": m.name,
                                     "metrics": opts.extra.get("metrics", list(DEFAULT_METRICS))}))
                for m in base.metrics]

    @property
    def mode(self) -> str:
        return "single" if len(self.metrics) == 1 else "compound"

    def signature_prefix(self) -> dict[str, str]:
        return {"metrics": "+".join(m.name for m in self.metrics)}

    def signature_suffix(self) -> dict[str, str]:
        return {"shots": str(len(self.examples))}

    # -- prompt -------------------------------------------------------------
    def _load_examples(self, path: str | None) -> list[dict[str, Any]]:
        if not path:
            return []
        p = Path(path)
        if not p.is_file():
            raise InputError("few-shot file not found", path=str(p))
        out = []
        for n, ex in iter_jsonl(p):
            if "src" not in ex or "tgt" not in ex or "scores" not in ex:
                raise InputError("a few-shot example needs src, tgt and scores", path=str(p), line=n)
            answer = {}
            for m in self.metrics:
                s = ex["scores"].get(m.name)
                if s is None:
                    raise InputError(f"example lacks a score for '{m.name}'", path=str(p), line=n,
                                     field="scores")
                s = s if isinstance(s, dict) else {"score": s, "justification": ""}
                if s.get("score") not in m.scale:
                    raise InputError(f"score {s.get('score')!r} not on the scale of '{m.name}'",
                                     path=str(p), line=n, field="scores")
                answer[m.name] = {"score": s["score"], "justification": s.get("justification", "")}
            item = Item(src=ex["src"], tgt=ex["tgt"], src_lang=ex.get("src_lang"),
                        tgt_lang=ex.get("tgt_lang"), extra=ex.get("extra", {}))
            out.append({"item": item, "answer": json.dumps(answer, ensure_ascii=False)})
        return out

    def input_block(self, item: Item) -> str:
        lang = self._language(item)
        if self.task == "open_prompt":
            return f"Starting prompt:\n{item.src}\n\nCompletion:\n{item.tgt}"
        if self.task == "continue_writing":
            left = item.extra.get("left", item.src)
            right = item.extra.get("right", "")
            return f"Passage A:\n{left}\n\nPassage B:\n{right}\n\nPassage C (to evaluate):\n{item.tgt}"
        if self.task == "summarize":
            return f"Passage:\n{item.src}\n\nSummary:\n{item.tgt}"
        if self.task == "translation":
            return (f"Source ({language_name(item.src_lang)}):\n{item.src}\n\n"
                    f"Translation ({lang}):\n{item.tgt}")
        return f"Input:\n{item.src}\n\nOutput:\n{item.tgt}"

    def missing_languages(self, item: Item) -> tuple[str, ...]:
        return missing_languages(self.task, self.language_override, item)

    def _language(self, item: Item) -> str:
        return self.language_override or language_name(
            item.tgt_lang or item.src_lang or item.extra.get("language"))

    def messages(self, item: Item, context: DocumentContext) -> list[Message]:
        # An item's extra fields are variables too, but never replace the protocol's own.
        variables: dict[str, Any] = {k: v for k, v in item.extra.items() if k.isidentifier()}
        variables.update(
            src=item.src, tgt=item.tgt, ref=item.ref, extra=item.extra,
            language=self._language(item), source_language=language_name(item.src_lang),
            task=self.task, task_description=TASKS[self.task], detailed=self.detail == "detailed",
            metrics=[m.as_template() for m in self.metrics], input_block=self.input_block(item),
            examples=[{"input_block": self.input_block(e["item"]), "answer": e["answer"]}
                      for e in self.examples])
        return self.template.render(**variables)

    def output_schema(self, item: Item) -> dict[str, Any] | None:
        props = {m.name: {"type": "object",
                          "properties": {"score": {"type": "integer", "enum": list(m.scale)},
                                         "justification": {"type": "string"}},
                          "required": ["score", "justification"]} for m in self.metrics}
        return {"type": "object", "properties": props, "required": [m.name for m in self.metrics]}

    # -- answer -------------------------------------------------------------
    def parse(self, text: str, item: Item) -> dict[str, Any]:
        obj = _first_json(text)
        if isinstance(obj, dict) and isinstance(obj.get("metrics"), (dict, list)):
            obj = obj["metrics"]
        if isinstance(obj, list):  # [{"name": ..., "score": ...}, ...]
            obj = {str(e.get("name", e.get("metric", ""))): e for e in obj if isinstance(e, dict)}
        if not isinstance(obj, dict):
            raise ParseFailure("the answer is not a JSON object of metrics")
        found = {_key(k): v for k, v in obj.items()}
        single_flat = len(self.metrics) == 1 and "score" in obj and self.metrics[0].name not in obj
        out: dict[str, dict[str, Any]] = {}
        for m in self.metrics:
            entry = obj if single_flat else found.get(_key(m.name), found.get(_key(m.title)))
            if entry is None:
                raise ParseFailure(f"no score for metric '{m.name}'")
            if isinstance(entry, dict):
                raw, just = entry.get("score"), entry.get("justification")
            else:
                raw, just = entry, None
            if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
                raw = int(raw)
            if isinstance(raw, float) and raw.is_integer():
                raw = int(raw)
            if isinstance(raw, bool) or not isinstance(raw, int) or raw not in m.scale:
                raise ParseFailure(f"score {raw!r} for '{m.name}' is not one of "
                                   f"{', '.join(map(str, m.scale))}")
            out[m.name] = {"score": raw, "justification": None if just is None else str(just)}
        return {"metrics": out}

    def score(self, annotation: Any, item: Item) -> float | None:
        got = annotation.get("metrics") if isinstance(annotation, dict) else None
        if not got:
            return None
        values: dict[str, float] = {}
        for m in self.metrics:
            if m.name not in got:
                continue
            v = self.expected_value(annotation, m.name) if self.score_mode == "expected" else got[m.name]["score"]
            if v is not None:
                values[m.name] = float(v)
        if len(self.metrics) == 1:
            m = self.metrics[0]
            return m.oriented(values[m.name]) if m.name in values else None
        vals = [m.unit(values[m.name]) for m in self.metrics if m.name in values]
        return sum(vals) / len(vals) if vals else None

    def score_targets(self, annotation: Any, item: Item) -> dict[str, tuple[Locator, Collection[int]]]:
        """Each metric's score: the ``"score"`` after the metric's key (or the flat one of a single metric)."""
        out: dict[str, tuple[Locator, Collection[int]]] = {}
        for m in self.metrics:
            keys = "|".join(re.escape(k) for k in dict.fromkeys((m.name, m.title)))
            out[m.name] = (regex_locator(r'(?<!\\)"(?:' + keys + r')"\s*:\s*\{.*?(?<!\\)"score"\s*:\s*"?(?P<n>\d)',
                                         r'(?<!\\)"(?:' + keys + r')"\s*:\s*"?(?P<n>\d)',
                                         r'(?<!\\)"score"\s*:\s*"?(?P<n>\d)'), m.scale)
        return out
