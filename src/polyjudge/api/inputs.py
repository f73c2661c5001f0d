"""Reading what is judged, as the field keeps it: one frozen :class:`InputSpec` in, items out.

``judge`` and ``score`` read their input through here, so a file, an
mt-metrics-eval test-set folder, a WMT25 task-1 TSV, parquet or a Hugging Face
dataset all take the same options (``--columns``, ``--lp``, ``--systems``,
``--exclude-systems``, ``--ref``)::

    from polyjudge.api import InputSpec, read_input
    items = read_input(InputSpec("mt-metrics-eval-v2/wmt23", lp="en-de", exclude_systems=("synthetic_ref",)))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from polyjudge.data.columns import parse_columns, split_pair
from polyjudge.data.errors import InputError
from polyjudge.data.languages import check_code, check_item_codes, declare_languages, parse_language_names
from polyjudge.data.readers import ItemDefaults, read_items, read_parallel
from polyjudge.data.records import Item
from polyjudge.data.spec import InputSpec
from polyjudge.data.testsets import MTME, TestSetInfo, TestSetSelection, origin_testset
from polyjudge.engine.spec import JudgingSpec

_TRUE = (True, "true", "yes", "on", 1)


def _languages(spec: InputSpec) -> tuple[str | None, str | None]:
    """The input's languages, every code checked (an unknown one is an InputError with the nearest codes)."""
    names = parse_language_names(spec.language_names)
    for name in ("src_lang", "tgt_lang"):
        check_code(getattr(spec, name), declared=names, field=name, setting=True)
    if spec.lp is None:
        return spec.src_lang, spec.tgt_lang
    src, tgt = split_pair(spec.lp, path=None, line=None, field="lp")
    for code in (src, tgt):
        check_code(code, shown=spec.lp, declared=names, field="lp", setting=True)
    return spec.src_lang or src, spec.tgt_lang or tgt


def item_defaults(spec: InputSpec) -> ItemDefaults:
    """The readers' view of ``spec`` (languages, column mapping, test-set selection)."""
    src_lang, tgt_lang = _languages(spec)
    selection = TestSetSelection(lp=spec.lp, systems=spec.systems, exclude_systems=spec.exclude_systems,
                                 ref=spec.ref, with_reference=spec.with_reference)
    return ItemDefaults(src_lang=src_lang, tgt_lang=tgt_lang, columns=parse_columns(spec.columns),
                        testset=selection)


def read_input(spec: InputSpec) -> list[Item]:
    """The items of ``spec.path`` (InputError naming file, line and field when it cannot be read)."""
    if spec.path is None:
        raise InputError("no input given", field="path", setting=True)
    if spec.ref is not None and not spec.ref.replace("_", "").isalnum():
        raise InputError(f"reference names are letters, digits or '_', got {spec.ref!r}", field="ref", setting=True)
    items = read_items(spec.path, fmt=spec.fmt, how=item_defaults(spec))
    names = parse_language_names(spec.language_names)
    check_item_codes(items, names)  # the file's own codes, before anything is sent
    declare_languages(names)
    info = origin_testset(items)
    if info is None or info.format != MTME:  # an mt-metrics-eval folder was chosen from as it was read
        if spec.ref is not None:
            raise InputError("names a reference of an mt-metrics-eval test set; this input is not one "
                             "(its items carry their own 'ref')", path=spec.path, field="ref", setting=True)
        items = _choose_systems(items, spec)
    return items[:spec.limit] if spec.limit is not None else items


def _choose_systems(items: list[Item], spec: InputSpec) -> list[Item]:
    """``--systems``/``--exclude-systems`` on an input that is not a test-set folder: filter its items."""
    if not spec.systems and not spec.exclude_systems:
        return items
    found = list(dict.fromkeys(it.system for it in items if it.system is not None))
    for name, flag in [*((n, "systems") for n in spec.systems), *((n, "exclude_systems")
                                                                   for n in spec.exclude_systems)]:
        if name not in found:
            raise InputError(f"no system '{name}' in the input (systems: {', '.join(found)[:300]})",
                             path=spec.path, field=flag, setting=True)
    kept = [it for it in items if (not spec.systems or it.system in spec.systems)
            and it.system not in spec.exclude_systems]
    if not kept:
        raise InputError("no item left after systems/exclude_systems", path=spec.path, field="systems",
                         setting=True)
    return kept


def uses_reference(spec: JudgingSpec) -> bool:
    """Whether the judge is shown the reference (``--with-reference`` or the protocol option)."""
    return spec.protocol.with_reference


def with_testset_reference(spec: JudgingSpec, items: Sequence[Item]) -> JudgingSpec:
    """``spec`` whose reference name (``ref_name``, in the metric name and signature) is the
    test-set reference the items carry, when the judge sees it; a contradicting ``ref_name`` is refused."""
    info = origin_testset(items)
    if not uses_reference(spec) or info is None or info.format != MTME or info.ref is None:
        return spec
    given = spec.protocol.options.get("ref_name")
    if given is not None and given != info.ref:
        named = "ref" if spec.data.ref is not None else "the test set's standard reference"
        raise InputError(f"protocol option ref_name={given} contradicts {named} ({info.ref})", field="ref_name")
    options = {**spec.protocol.options, "ref_name": info.ref}
    return spec.replace(protocol=dataclasses.replace(spec.protocol, options=options))


def read_systems(sources: str, translations: Sequence[str], references: str | None, *,
                 src_lang: str, tgt_lang: str) -> list[Item]:
    """Line-aligned files as comet-score reads them: one system per translation file, named by its stem."""
    names: dict[str, str] = {}
    items: list[Item] = []
    for path in translations:
        stem = Path(path).stem
        if stem in names:
            raise InputError(f"two translation files name the same system '{stem}' ({names[stem]} and {path}); "
                             "rename one", path=path, field="-t/--translations")
        names[stem] = path
        items += read_parallel(sources, path, references, system=stem, src_lang=src_lang, tgt_lang=tgt_lang)
    return items


__all__ = ["InputSpec", "TestSetInfo", "item_defaults", "read_input", "read_systems", "origin_testset",
           "uses_reference", "with_testset_reference"]
