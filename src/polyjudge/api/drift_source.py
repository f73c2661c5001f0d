"""What a drift check compares against: a sample of a run directory's stored answers, or an anchor set.

A :class:`DriftSource` holds the judging (judges, protocol, generation settings) and the sampled
:class:`StoredPair` rows: an item, the exact request that was sent (seed included) and the answer
stored for it. It is read from a run directory (items rendered again with the run's protocol: an
item whose prompt hash has a stored answer is a candidate) or from an anchor file saved by
``polyjudge drift --anchor RUN --save NAME`` (``anchors_dir``: beside the shared response cache).
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item

ANCHOR_VERSION = 1
ANCHOR_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True, slots=True)
class StoredPair:
    """One sampled request and the answer stored for it."""

    judge: str
    item: Item
    request: GenerateRequest
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: str | None = None  # as the store keeps them (engine.store.logprob_json)
    served_model: str | None = None
    fingerprint: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "item": self.item.to_dict(), "request": _request_json(self.request),
                "text": self.text, "finish_reason": self.finish_reason, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "logprobs": self.logprobs,
                "served_model": self.served_model, "system_fingerprint": self.fingerprint}


@dataclass(frozen=True, slots=True)
class DriftSource:
    """The judging of a run or anchor and its sampled stored answers."""

    name: str
    kind: str  # "run" or "anchor"
    protocol: dict[str, Any]  # name, options, prompt_template, use_context
    judges: tuple[str, ...]  # judge spec strings as the run recorded them
    judge_settings: dict[str, Any]  # api_key_env, timeout
    pairs: tuple[StoredPair, ...]
    system_scores: dict[str, float] = field(default_factory=dict)
    candidates: int = 0  # stored answers the sample was drawn from

    def to_json(self) -> dict[str, Any]:
        return {"anchor_version": ANCHOR_VERSION, "name": self.name, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "protocol": self.protocol, "judges": list(self.judges), "judge_settings": self.judge_settings,
                "system_scores": self.system_scores, "candidates": self.candidates,
                "pairs": [p.to_json() for p in self.pairs]}


def _request_json(request: GenerateRequest) -> dict[str, Any]:
    return request.canonical() | {"seed": request.seed}


def _request_of(d: dict[str, Any]) -> GenerateRequest:
    messages = tuple(Message(m["role"], m["content"]) for m in d["messages"])
    return GenerateRequest(messages=messages, temperature=float(d.get("temperature", 0.0)),
                           max_tokens=int(d.get("max_tokens", 512)), seed=d.get("seed"),
                           json_schema=d.get("json_schema"), top_logprobs=int(d.get("top_logprobs", 0)),
                           reasoning_effort=d.get("reasoning_effort"))


def _item_of(d: dict[str, Any]) -> Item:
    from polyjudge.data.records import CORE_FIELDS

    core = {k: (None if d.get(k) is None else str(d[k])) for k in CORE_FIELDS}
    extra = {k: v for k, v in d.items() if k not in CORE_FIELDS}
    return Item(src=core.pop("src") or "", tgt=core.pop("tgt") or "", **core, extra=extra)


# ------------------------------------------------------------------------------------------- anchors

def anchors_dir(cache: str | Path | None = None) -> Path:
    """Where anchor sets are kept: ``anchors/`` in the shared cache folder ``cache`` (``--cache``) when given,
    else ``POLYJUDGE_ANCHORS``, else ``anchors/`` in the default shared cache folder (cache.location)."""
    import os

    from polyjudge.cache.location import cache_dir

    given = os.environ.get("POLYJUDGE_ANCHORS")
    if given and not cache:
        return Path(given).expanduser()
    return cache_dir(cache) / "anchors"


def anchor_path(name: str, cache: str | Path | None = None) -> Path:
    if not ANCHOR_NAME.fullmatch(name):  # fullmatch: "$" alone lets a trailing newline through
        raise InputError(f"anchor name {name!r}: use letters, digits, '.', '_' and '-' (at most 64)", field="save")
    return anchors_dir(cache) / f"{name}.json"


def save_anchor(source: DriftSource, name: str, cache: str | Path | None = None) -> Path:
    """Write ``source`` as the anchor set ``name`` (replacing one of that name) and return its file."""
    from polyjudge.rundir.ownership import atomic_write

    path = anchor_path(name, cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps(source.to_json() | {"name": name}, ensure_ascii=False, indent=1) + "\n"
    atomic_write(path, [body])
    return path


def load_anchor(name: str, cache: str | Path | None = None) -> DriftSource:
    path = anchor_path(name, cache)
    if not path.is_file():
        raise InputError(f"no run directory and no anchor set named '{name}' (anchors are kept in "
                         f"{path.parent}; save one with polyjudge drift --anchor RUN --save {name})", path=name)
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        pairs = tuple(StoredPair(str(p["judge"]), _item_of(p["item"]), _request_of(p["request"]), str(p["text"]),
                                 str(p["finish_reason"]), int(p["prompt_tokens"]), int(p["completion_tokens"]),
                                 p.get("logprobs"), p.get("served_model"), p.get("system_fingerprint"))
                      for p in d["pairs"])
        return DriftSource(name, "anchor", dict(d["protocol"]), tuple(d["judges"]), dict(d["judge_settings"]),
                           pairs, {str(k): float(v) for k, v in d.get("system_scores", {}).items()},
                           int(d.get("candidates", len(pairs))))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"damaged anchor set: {exc}", path=str(path)) from None


# ------------------------------------------------------------------------------------------- runs

def _judging_of(run: Any) -> tuple[dict[str, Any], tuple[str, ...], dict[str, Any], dict[str, Any]]:
    """(protocol, judge specs, judge settings, generation) a run's manifest recorded."""
    spec = run.manifest.unknown.get("spec") or {}
    judges = spec.get("judges") or {}
    protocol = spec.get("protocol") or {"name": run.manifest.protocol,
                                        "options": run.manifest.config.protocol_options,
                                        "prompt_template": run.manifest.config.prompt_template,
                                        "use_context": run.manifest.config.use_context}
    specs = tuple(judges.get("judges") or ())
    if not specs:
        raise InputError("the run's manifest records no judge specification (judged by polyjudge before 0.2); "
                         "judge it again to check it for drift", path=str(run.path))
    settings = {"api_key_env": judges.get("api_key_env", "OPENAI_API_KEY"), "timeout": judges.get("timeout", 120.0),
                "reasoning_effort": judges.get("reasoning_effort")}
    config = run.manifest.config
    generation = {"temperature": config.temperature, "seed": config.seed,
                  "language_names": (spec.get("data") or {}).get("language_names")}
    return dict(protocol), specs, settings, generation


def protocol_of(record: dict[str, Any], judges: Sequence[str]) -> Any:
    """The protocol a run recorded (``spec.protocol``), built as the run built it (its judges given, so an
    embedded judge's own defaults apply only when the run was judged by it)."""
    from polyjudge.engine.session import JudgeConfig, build_protocol

    return build_protocol(JudgeConfig(protocol=record["name"], protocol_options=record.get("options") or {},
                                      prompt_template=record.get("prompt_template"),
                                      use_context=record.get("use_context", True), judges=tuple(judges)))


def read_run_sample(path: str | Path, sample: int, seed: int) -> DriftSource:
    """``sample`` items of the run at ``path`` drawn at random (``seed``) among those with a stored answer
    of run 0, every judge's answer to each: the requests as they were sent, the answers as stored."""
    from polyjudge.engine.plan import Plan
    from polyjudge.engine.store import Store
    from polyjudge.rundir import STORE, RunDir

    run = RunDir.open(path)
    protocol_rec, specs, settings, generation = _judging_of(run)
    protocol = protocol_of(protocol_rec, specs)
    items = run.items
    plan = Plan(items, protocol, [], runs=1, temperature=generation["temperature"], seed=generation["seed"],
                reasoning_effort=settings.get("reasoning_effort"))
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    store = Store(Path(path) / STORE, readonly=True)
    try:
        pairs = _sample_pairs(plan, store, order, sample, generation["seed"])
    finally:
        store.close()
    if not pairs:
        raise InputError("no stored answer of the run matches a prompt its protocol renders now (judged with "
                         "other code or options); nothing to compare", path=str(path))
    scores = {r.system: r.score for r in run.system_rows() if r.score is not None}
    return DriftSource(str(path), "run", protocol_rec, specs, settings, tuple(pairs), scores, len(items))


def _sample_pairs(plan: Any, store: Any, order: Sequence[int], sample: int, seed: int) -> list[StoredPair]:
    """Every judge's run-0 answer to the first ``sample`` items of ``order`` that have one."""
    pairs: list[StoredPair] = []
    taken = 0
    step = max(64, sample)
    for start in range(0, len(order), step):
        chunk = order[start:start + step]
        answers = store.answers_to(list({plan.prompt_hash(i) for i in chunk}), run_index=0)
        for i in chunk:
            found = answers.get(plan.prompt_hash(i), ())
            if not found:
                continue
            request = dataclasses.replace(plan.request(i), seed=seed)
            pairs += [StoredPair(a.judge, plan.items[i], request, a.text or "", a.finish_reason or "stop",
                                 a.prompt_tokens, a.completion_tokens, a.logprobs, *a.served) for a in found]
            taken += 1
            if taken >= sample:
                return pairs
    return pairs


def read_source(target: str | Path, sample: int, seed: int, cache: str | Path | None = None) -> DriftSource:
    """A run directory's sample, or the anchor set named ``target`` when no such directory exists."""
    from polyjudge.rundir import RunDir

    if Path(target).is_dir():
        if not RunDir.is_run_dir(target):
            raise InputError("not a polyjudge run directory (no manifest.json)", path=str(target))
        return read_run_sample(target, sample, seed)
    return load_anchor(str(target), cache)


__all__ = ["DriftSource", "StoredPair", "anchor_path", "anchors_dir", "load_anchor", "protocol_of", "read_run_sample",
           "read_source", "save_anchor"]
