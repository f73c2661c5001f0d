"""The one :class:`~polyjudge.api.JudgingSpec` of a judging's values, by the names the command line parses
them into (a declared setting's ``dest``, the input keys of ``polyjudge.data.study_keys``): what ``polyjudge
judge``'s flags and a study file's ``[[judging]]`` table both become. No click: a study file is read from Python
with it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError
from polyjudge.data.limits import DEFAULT_JUDGE

if TYPE_CHECKING:
    from polyjudge.backends.registry import JudgeSpec
    from polyjudge.backends.spec import PanelSpec
    from polyjudge.cache.spec import CacheSpec
    from polyjudge.data.spec import InputSpec
    from polyjudge.engine.spec import JudgingSpec
    from polyjudge.protocols.spec import ProtocolSpec


def _name_list(values: Sequence[str]) -> tuple[str, ...]:
    """``--systems A,B --systems C`` as (A, B, C)."""
    return tuple(dict.fromkeys(n.strip() for v in values for n in v.split(",") if n.strip()))


def parse_protocol_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values are JSON when they parse as JSON, else strings."""
    out: dict[str, Any] = {}
    for opt in pairs:
        key, sep, value = opt.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got '{opt}'", field="protocol-option")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _single_judge(params: Mapping[str, Any]) -> tuple[JudgeSpec, ...] | None:
    """The judge of ``--backend/--model/--base-url`` (None when none is given)."""
    from polyjudge.backends.registry import JudgeSpec

    backend, model, base_url = params.get("backend"), params.get("model"), params.get("base_url")
    if not (backend or model or base_url):
        return None
    return (JudgeSpec(backend or DEFAULT_JUDGE, model or None, base_url or None),)


def _declared(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The values of the declared settings among ``params`` (click's names), by group and the group's field;
    a shorthand's (group ``command``) by its name."""
    from polyjudge.api.settings import GROUPS, command_line

    out: dict[str, dict[str, Any]] = {g: {} for g in (*GROUPS, "command")}
    for s in command_line():
        if s.dest in params:
            out[s.group][s.field if s.group != "command" else s.name] = s.value_of(params[s.dest])
    return out


def _split(kind: type[Any], values: dict[str, Any], extra: dict[str, Any]) -> Any:
    """``kind`` (a group) of the values it has fields for; the others (declared settings its fields
    do not name) go to ``extra``, the spec's own mapping of them."""
    import dataclasses

    from polyjudge.api.settings import by_name

    names = {f.name for f in dataclasses.fields(kind)}
    fields = {s.field: s.name for s in by_name().values()}
    for member in [m for m in values if m not in names and "." not in m]:
        value = values.pop(member)
        if value != by_name()[fields[member]].default:
            extra[fields[member]] = value
    return kind(**{k: v for k, v in values.items() if "." not in k})


def _judges_group(params: Mapping[str, Any], given: dict[str, Any], extra: dict[str, Any]) -> PanelSpec:
    from polyjudge.backends.spec import PanelSpec

    judges, single = tuple(given.pop("judges", ()) or ()), _single_judge(params)
    if judges and single:
        raise InputError("give either --judge or --backend/--model/--base-url, not both", field="judge")
    judges = judges or single or ()
    return _split(PanelSpec, {**given, **({"judges": judges} if judges else {})}, extra)  # type: ignore[no-any-return]


def _protocol_group(params: Mapping[str, Any], given: dict[str, Any], extra: dict[str, Any]) -> ProtocolSpec:
    """--protocol, --protocol-option and their shorthands (--score-mode, --with-reference), --prompt-template
    and --no-context; a shorthand contradicting a --protocol-option is refused."""
    from polyjudge.protocols.spec import ProtocolSpec

    protocol_options = parse_protocol_options(given.pop("options", ()) or ())
    score_mode = params.get("score_mode")
    if score_mode is not None:
        if protocol_options.get("score_mode", score_mode) != score_mode:
            raise InputError(f"--score-mode {score_mode} contradicts --protocol-option "
                             f"score_mode={protocol_options['score_mode']}", field="score-mode")
        protocol_options["score_mode"] = score_mode
    if params.get("with_reference"):
        if protocol_options.get("with_reference", True) not in (True, "true", "yes", "on", 1):
            raise InputError("--with-reference contradicts --protocol-option with_reference="
                             f"{protocol_options['with_reference']}", field="with-reference")
        protocol_options["with_reference"] = True
    return _split(ProtocolSpec, {**given, "options": protocol_options}, extra)  # type: ignore[no-any-return]


def _data_group(params: Mapping[str, Any], protocol: ProtocolSpec) -> InputSpec:
    """The input's flags (those the command has; ``input_path`` None: the command reads its own)."""
    from polyjudge.data.spec import InputSpec

    return InputSpec(path=params.get("input_path"), fmt=params.get("input_format"), src_lang=params.get("src_lang"),
                     tgt_lang=params.get("tgt_lang"), lp=params.get("lp"), columns=params.get("columns") or None,
                     systems=_name_list(params.get("systems") or ()),
                     exclude_systems=_name_list(params.get("exclude_systems") or ()), ref=params.get("ref"),
                     with_reference=protocol.with_reference, limit=params.get("limit"),
                     language_names=params.get("language_names") or None)


def _cache_group(given: dict[str, Any], extra: dict[str, Any]) -> CacheSpec:
    from polyjudge.cache.spec import CacheSpec

    if not given.get("use", True) and given.get("path"):
        raise InputError("give either --cache PATH or --no-cache, not both", field="cache")
    return _split(CacheSpec, given, extra)  # type: ignore[no-any-return]


def judging_spec(params: Mapping[str, Any], *, progress: bool = True) -> JudgingSpec:
    """The one :class:`~polyjudge.api.JudgingSpec` of a judging command's parameters (click's ``dest``
    names -> values, defaults filled in as click fills them): the ``judge`` command's, a study's
    ``[[judging]]`` table's, and the judge flags of every command that judges. Each declared setting
    (``polyjudge.data.settings``) goes to its group's field of its name (a setting its group has no
    field for, to the spec's ``extra``); keys of the command's own (``fmt``, ``dry_run``) are not
    read; the input's flags are read when the command has them."""
    import sys

    from polyjudge.engine.batches import BatchOptions
    from polyjudge.engine.spec import BudgetSpec, ExecutionSpec, GenerationSpec, JudgingSpec
    from polyjudge.rundir.spec import OutputSpec

    given, extra = _declared(params), dict[str, Any]()
    protocol = _protocol_group(params, given["protocol"], extra)
    execution = given["execution"]
    execution["progress"] = progress and not given["command"].get("quiet", False) and sys.stderr.isatty()
    if "batch_options.fallback" in execution:
        execution["batch_options"] = BatchOptions(fallback=execution.pop("batch_options.fallback"))
    return JudgingSpec(
        data=_data_group(params, protocol), judges=_judges_group(params, given["judges"], extra), protocol=protocol,
        generation=_split(GenerationSpec, given["generation"], extra),
        budget=_split(BudgetSpec, given["budget"], extra), execution=_split(ExecutionSpec, execution, extra),
        cache=_cache_group(given["cache"], extra),
        output=_split(OutputSpec, {**given["output"], "out": params.get("out")}, extra), extra=extra)


__all__ = ["judging_spec", "parse_protocol_options"]
