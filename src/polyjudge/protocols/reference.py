"""Reference-based variants of the error-annotation protocols (``mqm``, ``tsa``, ``gemba-esa``).

With the protocol option ``with_reference=true`` (``--with-reference`` on the
command line) the judge also sees a human reference translation. Three things
follow from it, kept here so the three protocols agree:

* every item must carry ``ref``: :func:`require_reference` raises an
  :class:`InputError` naming the file, line and field ``ref`` of the first item
  without one (before anything is sent);
* the run signature gains ``ref:NAME`` (:func:`reference_signature`); with the
  option off it is unchanged, so reference-free runs keep their signatures;
* the mt-metrics-eval metric name gains the ``-NAME`` suffix mt-metrics-eval
  gives reference-based metrics (``polyjudge-mqm-refA``,
  :func:`mtme_metric_name`), which
  :func:`polyjudge.metaeval.readers.metric_refs` reads back as the reference used.

A protocol composes this support from two parts: the option fields
(:func:`with_reference_field`, :func:`ref_name_field`, declared where its
options dataclass wants them, so each protocol keeps its option order) and a
:class:`ReferenceUse` built from them, which the base class reads for the
mt-metrics-eval name (:attr:`polyjudge.protocols.base.JudgeProtocol.mtme_name`).

The reference reaches the prompt only as a template variable, so like every
other text from the data it can never add, end or reorder chat messages
(see :mod:`polyjudge.protocols.templates`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.protocols.options import option

DEFAULT_REF_NAME = "refA"
# A reference name must survive mt-metrics-eval's NAME-REF.LEVEL.score file names.
_REF_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def with_reference_field() -> Any:
    """The ``with_reference`` option field (``with_reference: bool = with_reference_field()``): one
    default and one help text for every protocol that has it."""
    return field(default=False, metadata=option(
        "show the item's reference translation ('ref') to the judge; every item needs one"))


def ref_name_field() -> Any:
    """The ``ref_name`` option field (``ref_name: str = ref_name_field()``); check it with
    :func:`check_ref_name` in the options' ``__post_init__``."""
    return field(default=DEFAULT_REF_NAME, metadata=option(
        "the reference's name in mt-metrics-eval terms (refA, refB, ...), used in the metric "
        "name and signature when with_reference is on"))


class ReferenceSettings(Protocol):
    """Options holding the two reference fields."""

    @property
    def with_reference(self) -> bool: ...

    @property
    def ref_name(self) -> str: ...


def check_ref_name(name: str) -> None:
    """A name usable as the ``-REF`` part of an mt-metrics-eval file name (InputError otherwise)."""
    if not _REF_NAME.match(name) or name == "src":
        raise InputError(f"ref_name must be letters, digits or '_' (and not 'src'), got {name!r}",
                         field="ref_name")


def _origin(item: Item) -> tuple[str | None, int | None]:
    """(path, line) from an item's ``origin`` (``file.jsonl:12`` or ``line 12``)."""
    origin = item.origin
    if not origin:
        return None, None
    if origin.startswith("line ") and origin[5:].isdigit():
        return None, int(origin[5:])
    head, sep, tail = origin.rpartition(":")
    if sep and tail.isdigit():
        return head, int(tail)
    return origin, None


def require_reference(item: Item) -> str:
    """The item's reference; an item without one (missing or blank) is an InputError."""
    if item.ref is None or not item.ref.strip():
        path, line = _origin(item)
        what = "is empty" if item.ref is not None else "is missing"
        raise InputError(f"with_reference needs a reference translation for every item, and 'ref' {what}",
                         path=path, line=line, field="ref")
    return item.ref


def reference_signature(on: bool, ref_name: str) -> dict[str, str]:
    """The signature part of a reference-based run (nothing when the option is off)."""
    return {"ref": ref_name} if on else {}


def mtme_metric_name(protocol_name: str, on: bool, ref_name: str) -> str:
    """The mt-metrics-eval metric name of a run: ``polyjudge-PROTOCOL-REF`` for a reference-based
    run, ``polyjudge-PROTOCOL-src`` for a reference-free one (mt-metrics-eval reads the part after
    the last dash as the reference used: a bare ``polyjudge-mqm`` would be metric ``polyjudge``
    with an unknown reference ``mqm``)."""
    base = f"polyjudge-{protocol_name}"
    return f"{base}-{ref_name}" if on else f"{base}-src"


def check_template_uses_reference(template: Any, *names: str) -> None:
    """A replacement template must print the reference (one of ``names``), or the
    option would silently change nothing but the signature."""
    if not any(template.uses(n) for n in names):
        shown = " or ".join(f"'{n}'" for n in names)
        raise InputError(f"with_reference is on, but the template never uses {shown}, so the judge "
                         "would not see the reference", path=template.origin, field="with_reference")


@dataclass(frozen=True, slots=True)
class ReferenceUse:
    """Whether a protocol shows the judge a reference, and under which name (off by default:
    what every protocol without the reference fields has)."""

    on: bool = False
    name: str = DEFAULT_REF_NAME

    @classmethod
    def of(cls, settings: ReferenceSettings) -> ReferenceUse:
        return cls(settings.with_reference, settings.ref_name)

    def signature(self) -> dict[str, str]:
        """``{"ref": NAME}`` when on, else nothing (reference-free signatures stay as they were)."""
        return reference_signature(self.on, self.name)

    def metric_name(self, protocol_name: str) -> str:
        """The mt-metrics-eval metric name of a run of ``protocol_name``."""
        return mtme_metric_name(protocol_name, self.on, self.name)

    def for_prompt(self, item: Item) -> str | None:
        """The item's reference when on (a missing one is an InputError), else None."""
        return require_reference(item) if self.on else None

    def check_template(self, template: Any, *names: str) -> None:
        """When on, a replacement template must print the reference (one of ``names``)."""
        if self.on:
            check_template_uses_reference(template, *names)


__all__ = ["DEFAULT_REF_NAME", "ReferenceSettings", "ReferenceUse", "check_ref_name",
           "check_template_uses_reference", "mtme_metric_name", "ref_name_field", "reference_signature",
           "require_reference", "with_reference_field"]
