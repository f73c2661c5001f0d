"""What a run's manifest says: the signature line, versions, judges (without credentials), counts and cost."""

from __future__ import annotations

import dataclasses
import json
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from polyjudge._version import __version__
from polyjudge.backends.base import Backend
from polyjudge.backends.build import adaptations_of
from polyjudge.data.secrets import redact, redact_url
from polyjudge.engine.collect import Usage
from polyjudge.engine.executor import Executor
from polyjudge.engine.plan import Plan
from polyjudge.engine.pricing import ModelPrice, sources_of
from polyjudge.engine.result import RunResult
from polyjudge.engine.runner import ExecStats
from polyjudge.engine.spec import JudgingSpec, RunSpec
from polyjudge.engine.store import Store
from polyjudge.protocols.base import JudgeProtocol
from polyjudge.rundir import Manifest, RunConfig

# The identity settings the signature writes in parts of its own (the protocol, judges, prompt, temperature and
# the protocol's signature fields, which hold its options and context), or leaves out (the seed, as it always
# has); every other identity setting is one ``label:value`` part, in declaration order.
_SIGNED_APART = frozenset({"protocol", "judges", "prompt_template", "temperature", "protocol_options", "use_context",
                           "seed"})
_SIGNATURE_LABELS = {"reasoning_effort": "effort"}


def signed_settings(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of the signature that name identity settings by label, from ``JudgingSpec.identity_values``."""
    return {_SIGNATURE_LABELS.get(name, name): value for name, value in identity.items()
            if name not in _SIGNED_APART}


def signature(protocol: JudgeProtocol, judges: list[str], runs: int, aggregator: str,
              temperature: float, adaptations: Mapping[str, Mapping[str, str]] | None = None,
              settings: Mapping[str, Any] | None = None, served: Mapping[str, Sequence[str]] | None = None) -> str:
    """One line that says how the numbers were made, in the style of sacrebleu.

    ``adaptations`` (judge -> what its backend changed in the requests its server
    rejected, e.g. ``max_tokens`` sent as ``max_completion_tokens``) adds one
    ``adapted:JUDGE=PARAM,...`` part per judge that adapted; none otherwise. ``settings``: the other
    identity settings (:func:`signed_settings`: the reasoning effort, a newly declared setting), one
    ``label:value`` each. ``served`` (judge -> what its server said answered, :func:`served_parts`) adds one
    ``served:JUDGE=MODEL@FINGERPRINT,...`` part per judge whose server named another model than the one
    asked for (a dated snapshot) or a ``system_fingerprint``; none otherwise, so a server that only echoes
    the model name leaves the signature as it was.
    """
    parts = [protocol.name, f"judge:{'+'.join(judges)}", f"prompt:{protocol.template_hash}",
             f"runs:{runs}", f"agg:{aggregator}", f"T:{temperature:g}"]
    parts += [f"{k}:{v}" for k, v in protocol.signature_fields().items()]
    parts += [f"{k}:{v}" for k, v in (settings or {}).items()]
    for judge in judges:
        changed = (adaptations or {}).get(judge)
        if changed:
            parts.append(f"adapted:{judge}={','.join(sorted(changed))}")
    for judge in judges:
        if (served or {}).get(judge):
            parts.append(f"served:{judge}={','.join(served[judge])}")  # type: ignore[index]
    parts.append(f"version:{__version__}")
    return "|".join(parts)


def _versions() -> dict[str, str]:
    out = {"polyjudge": __version__, "python": platform.python_version()}
    for pkg in ("aiohttp", "xllamacpp", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _clean_judge_info(info: dict[str, Any]) -> dict[str, Any]:
    """A manifest judge entry without credentials (in a base URL or anywhere else)."""
    return {k: (redact_url(v) if k == "base_url" else redact(v)) if isinstance(v, str) else v
            for k, v in info.items()}



ADAPTATIONS_META = "adaptations"
SERVED_SHOWN = 4  # served model/fingerprint pairs a signature names per judge (then "+N")


def _informative(judge: str, pairs: Mapping[tuple[str, str | None], int]) -> bool:
    """Whether a judge's servers said more than the model name asked for (a snapshot, a fingerprint)."""
    return not all(model == judge and fp is None for model, fp in pairs)


def served_parts(served: Mapping[str, Mapping[tuple[str, str | None], int]]) -> dict[str, list[str]]:
    """judge -> ``MODEL@FINGERPRINT`` of what its server said answered (:meth:`Store.served_models`), most
    answers first, for the signature: only judges whose server named a model other than the judge's own
    name or sent a fingerprint (an echo of the model asked for says nothing)."""
    out: dict[str, list[str]] = {}
    for judge, pairs in served.items():
        if not _informative(judge, pairs):
            continue
        ordered = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1] or ""))
        names = [model if fp is None else f"{model}@{fp}" for (model, fp), _ in ordered]
        out[judge] = names[:SERVED_SHOWN] + ([f"+{len(names) - SERVED_SHOWN}"] if len(names) > SERVED_SHOWN else [])
    return out


def served_changes(store: Store, started: float) -> list[str]:
    """One line per judge whose server named, for an answer received this session (stored since ``started``,
    not copied from the shared cache), a model or ``system_fingerprint`` that no earlier answer of the run came
    from (stored before, or copied from the cache this session: a re-run study's old answers): the judge it
    asks is not the one that gave the stored answers (a model updated behind its name)."""
    earlier = store.served_models(before=started)
    for judge, pairs in store.served_models(since=started, cached=True).items():
        for pair, n in pairs.items():
            earlier.setdefault(judge, {})[pair] = earlier.get(judge, {}).get(pair, 0) + n
    now = store.served_models(since=started, cached=False)
    lines = []
    for judge, pairs in sorted(now.items()):
        before = earlier.get(judge)
        new = sorted(set(pairs) - set(before or {}), key=lambda p: (p[0], p[1] or ""))
        if before and new:
            said = ", ".join(m if fp is None else f"{m} ({fp})" for m, fp in new)
            was = ", ".join(m if fp is None else f"{m} ({fp})" for m, fp in sorted(before, key=lambda p: -before[p]))
            lines.append(f"the served model changed: {judge}'s server answered this session as {said}; the "
                         f"run's earlier answers came from {was} (polyjudge drift RUN compares their answers)")
    return lines


def _with_served(info: list[dict[str, Any]], judges: Sequence[str],
                 served: Mapping[str, Mapping[tuple[str, str | None], int]]) -> list[dict[str, Any]]:
    """Manifest judge entries, each with ``served`` [{model, system_fingerprint, answers}] when its servers said
    more than the model name asked for (the rule of :func:`served_parts`)."""
    for entry, judge in zip(info, judges):
        pairs = served.get(judge)
        if pairs and _informative(judge, pairs):
            entry["served"] = [{"model": redact(m) or m, "system_fingerprint": fp, "answers": n}
                               for (m, fp), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0][0]))]
    return info


def _executor_counts(executor: Executor | None) -> dict[str, int]:
    """An executor's own manifest counts (Ray: actors and nodes lost, requests re-sent); none for the local one."""
    counts = getattr(executor, "manifest_counts", None)
    return dict(counts()) if callable(counts) else {}


def adaptations(store: Store, backends: Sequence[Backend],
                also: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, dict[str, str]]:
    """What each judge's backend changed in its requests (OpenAI reasoning models: the token field,
    temperature), in this session or an earlier one of the same run (kept in the store), and ``also``
    (what the runs whose answers came from the shared cache changed)."""
    found: dict[str, dict[str, str]] = {}
    text = store.get_meta(ADAPTATIONS_META)
    if text:
        try:
            loaded = json.loads(text)
            found = {str(j): {str(k): str(v) for k, v in a.items()} for j, a in loaded.items()}
        except (ValueError, AttributeError):
            found = {}
    before = json.dumps(found, sort_keys=True)
    for judge, changed in (also or {}).items():
        found.setdefault(judge, {}).update(changed)
    for b in backends:
        now = adaptations_of(b)
        if now:
            found.setdefault(b.model, {}).update(now)
    if not store.readonly and json.dumps(found, sort_keys=True) != before:
        store.set_meta(ADAPTATIONS_META, json.dumps(found, sort_keys=True))
    return found


def _with_adaptations(info: list[dict[str, Any]], judges: Sequence[str],
                      adapted: Mapping[str, Mapping[str, str]]) -> list[dict[str, Any]]:
    """Manifest judge entries, each with its ``adaptations`` when its backend made some."""
    for entry, judge in zip(info, judges):
        if adapted.get(judge):
            entry["adaptations"] = {k: redact(v) or v for k, v in sorted(adapted[judge].items())}
    return info


@dataclass(frozen=True, slots=True)
class Session:
    """What one judging session did, as the manifest reports it."""

    stats: ExecStats
    from_store: int
    usage: Usage
    adapted: Mapping[str, Mapping[str, str]]
    wall_s: float  # every session of the run
    session_wall_s: float
    from_cache: int = 0  # judgments answered this session from the machine's shared response cache
    # judge -> {(served model, system_fingerprint): answers}: what the servers said answered (Store.served_models)
    served: Mapping[str, Mapping[tuple[str, str | None], int]] = dataclasses.field(default_factory=dict)


def _counts(spec: RunSpec, result: RunResult, session: Session, n_items: int) -> dict[str, int]:
    stats, usage = session.stats, session.usage
    return {"items": n_items, "judgments": len(result.judgments),
            "sent_this_session": stats.done + stats.failed,
            "from_store": session.from_store, "from_cache": session.from_cache, "retries": stats.retries,
            **{f"status_{k}": v for k, v in result.status_counts().items()},
            "distinct_requests": usage.distinct_requests,
            "shared_answers": usage.shared_answers,
            "answered_by_batch": usage.answered_by_batch,
            "answered_from_cache": usage.answered_from_cache,
            "multi_sample_requests": stats.multi_sample_requests,
            **_executor_counts(spec.executor)}


def _judging(spec: RunSpec) -> JudgingSpec:
    """The judging ``spec`` was resolved from (one of its generation group when built from flat settings)."""
    return spec.spec if spec.spec is not None else JudgingSpec(generation=spec.generation)


def build_manifest(plan: Plan, spec: RunSpec, result: RunResult, session: Session,
                   table: Mapping[str, ModelPrice]) -> Manifest:
    """The manifest of ``result``, judged by ``plan`` as ``spec`` says in ``session``."""
    protocol, judges, usage = spec.protocol, plan.judges, session.usage
    runs, temperature, aggregator = plan.runs, spec.resolved_temperature(), spec.resolved_aggregator()
    info = [_clean_judge_info(dict(j)) for j in spec.judge_info] if spec.judge_info \
        else [{"model": m} for m in judges]
    return Manifest(
        signature=signature(protocol, judges, runs, aggregator, temperature, session.adapted,
                            signed_settings(_judging(spec).identity_values(protocol, judges)),
                            served_parts(session.served)),
        protocol=protocol.name,
        config=RunConfig(runs=runs, temperature=temperature, aggregator=aggregator,
                         concurrency=spec.execution.concurrency, seed=spec.generation.seed,
                         min_runs=spec.generation.min_runs, max_tokens=protocol.max_tokens,
                         use_context=protocol.options.use_context, prompt_template=protocol.options.template,
                         protocol_options=protocol.options.extra),
        template_hash=protocol.template_hash,
        judges=_with_served(_with_adaptations(info, judges, session.adapted), judges, session.served),
        versions=_versions(),
        counts=_counts(spec, result, session, len(plan.items)),
        failures={redact(k) or k: n for k, n in result.failures().items()},
        # Tokens and cost of each request once: what the provider billed, however many items it answered.
        tokens=usage.tokens,
        cost_usd=round(usage.cost, 6),
        # The prices this run was charged with, so a report never re-prices it with other defaults.
        prices={m: table[m].pair() for m in judges if m in table},
        wall_time_s=round(session.wall_s, 3),  # every session of the run (this one's is wall_time_s_session)
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        unknown={"wall_time_s_session": round(session.session_wall_s, 3), "tokens_by_judge": usage.by_judge,
                 "cost_by_judge": {k: round(v, 6) for k, v in usage.cost_by_judge.items()},
                 "usage_anomalies": usage.anomalies, "price_sources": sources_of(table, judges),
                 # Paid judges without a price: their $0 is unknown, not free (reports and `cost` say so).
                 "price_unknown": [m for m in judges if m not in table and m not in spec.free_judges],
                 # The judging's specification, group by group (judges with credentials masked, key names only).
                 **({"spec": spec.spec.record()} if spec.spec is not None else {})},
    )
