"""The protocol registry: lookups, listing order, unknown names, protocols registered elsewhere."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols import (
    PROTOCOLS,
    JudgeProtocol,
    ProtocolOptions,
    UnknownNameError,
    available_protocols,
    get_protocol,
    option,
    register_protocol,
)
from polyjudge.protocols.mqm import GembaMQM
from polyjudge.protocols.tsa import DirectIndex, GembaSpans, TaggedSpanAnnotation


def _builtins() -> list[str]:
    """The protocols registered by the package's own modules (discovered, never a hand list)."""
    modules = set(PROTOCOLS.builtin_modules())
    return [name for name, cls in PROTOCOLS.items() if cls.__module__ in modules]


BUILTINS = _builtins()


def test_discovery_finds_every_protocol_class_of_the_package():
    import importlib
    import inspect

    found = set()
    for module in PROTOCOLS.builtin_modules():
        for _, cls in inspect.getmembers(importlib.import_module(module), inspect.isclass):
            if (issubclass(cls, JudgeProtocol) and cls.__module__ == module and not inspect.isabstract(cls)
                    and isinstance(cls.__dict__.get("name"), str)):
                found.add(cls.name)
    assert found and found <= set(BUILTINS)
    assert all(m.startswith("polyjudge.protocols.") for m in PROTOCOLS.builtin_modules())


def test_every_builtin_is_registered_under_its_class_name():
    assert len(BUILTINS) == len(set(BUILTINS)) >= 2
    for name in BUILTINS:
        cls = PROTOCOLS.get(name)
        assert issubclass(cls, JudgeProtocol) and cls.name == name
    assert PROTOCOLS.get("mqm") is GembaMQM
    assert isinstance(get_protocol("mqm"), GembaMQM)


def _order_key(name: str) -> str:
    return PROTOCOLS.get(name).__module__


def test_listing_order_in_a_fresh_interpreter():
    code = ("from polyjudge.protocols import available_protocols as a, PROTOCOLS as P\n"
            "print(','.join(a())); print(','.join(P.describe()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    listed = out.split()[0].split(",")
    assert out.split() == [",".join(listed)] * 2
    builtins = [n for n in listed if n in BUILTINS]
    assert builtins == BUILTINS and set(BUILTINS) <= set(listed)
    assert [_order_key(n) for n in builtins] == sorted(_order_key(n) for n in builtins)  # module-name order


def test_listing_order_does_not_depend_on_import_order():
    outs = set()
    for first in ("rubric", "tsa", "da"):
        code = (f"import polyjudge.protocols.{first}\n"
                "from polyjudge.protocols import available_protocols\nprint(','.join(available_protocols()))")
        outs.add(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.strip())
    assert outs == {",".join(BUILTINS)}


def test_unknown_name_is_a_key_error_listing_the_valid_names():
    with pytest.raises(UnknownNameError) as exc:
        get_protocol("gemba-mqm")
    assert isinstance(exc.value, KeyError)
    assert str(exc.value).startswith("unknown protocol 'gemba-mqm'; available: ")
    assert all(name in str(exc.value) for name in BUILTINS)
    assert exc.value.args[0] == str(exc.value)  # what the CLI prints


def test_help_summaries_are_one_short_line():
    desc = PROTOCOLS.describe()
    for name in BUILTINS:
        assert desc[name] and len(desc[name]) <= 85, name
    assert desc["mqm"].startswith("GEMBA-MQM V2")
    assert len(PROTOCOLS.help_text().splitlines()) >= len(BUILTINS)


def test_only_span_protocols_produce_spans():
    spans = {name for name in BUILTINS if PROTOCOLS.get(name).produces_spans}
    assert spans == {"tsa", "gemba-spans", "direct-index", "gemba-esa", "contrastive-esa"}
    assert TaggedSpanAnnotation.produces_spans and GembaSpans.produces_spans and DirectIndex.produces_spans


@dataclass(frozen=True, slots=True)
class EchoOptions:
    label: str = field(default="echo", metadata=option("text of every score's label", signature="label"))
    points: float = field(default=1.0, metadata=option("score of every answer"))


@pytest.fixture()
def scratch_registry(monkeypatch):
    """Registrations made by a test are dropped afterwards."""
    PROTOCOLS.names()  # load the built-ins first, so the copy holds them
    monkeypatch.setattr(PROTOCOLS, "_entries", dict(PROTOCOLS._entries))
    return PROTOCOLS


def test_a_protocol_registered_elsewhere_is_found_by_name(scratch_registry):
    @register_protocol()
    class Echo(JudgeProtocol):
        """Test protocol: every answer scores the same."""

        name = "test-echo"
        options_type = EchoOptions
        settings: EchoOptions

        def messages(self, item: Item, context: DocumentContext) -> list[Any]:
            return []

        def parse(self, text: str, item: Item) -> dict[str, str]:
            return {"text": text}

        def score(self, annotation: Any, item: Item) -> float:
            return self.settings.points

    p = get_protocol("test-echo", ProtocolOptions(extra={"label": "x", "points": 3}))
    assert isinstance(p, Echo) and p.score({}, Item(src="a", tgt="b")) == 3.0
    assert p.signature_fields() == {"label": "x"}
    assert available_protocols()[-1] == "test-echo"  # after the built-ins
    assert scratch_registry.describe()["test-echo"] == "Test protocol: every answer scores the same."
    assert Echo.option_help() == [("label", "str", "text of every score's label (default: echo)"),
                                  ("points", "float", "score of every answer (default: 1.0)")]
    with pytest.raises(InputError, match="valid options: label, points"):
        get_protocol("test-echo", ProtocolOptions(extra={"lable": "x"}))


def test_a_builtin_name_resolves_without_importing_every_protocol_module():
    # A lookup imports only the modules that can hold the name (the one named after it, then those whose
    # source quotes it); listing still imports them all, and every built-in resolves in a fresh interpreter.
    code = ("import sys\nfrom polyjudge.protocols.registry import PROTOCOLS, get_protocol\n"
            "assert 'da' in PROTOCOLS and get_protocol('da').name == 'da'\n"
            "assert PROTOCOLS.get('gemba-esa').__module__ == 'polyjudge.protocols.esa'\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith('polyjudge.protocols.'))))\n"
            "print(','.join(PROTOCOLS.names()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    loaded = set(out[0].split(","))
    assert {"polyjudge.protocols.da", "polyjudge.protocols.esa"} <= loaded
    assert not {"polyjudge.protocols.mqm", "polyjudge.protocols.rubric", "polyjudge.protocols.pairwise"} & loaded
    assert out[1] == ",".join(BUILTINS)
    for name in BUILTINS:
        check = (f"from polyjudge.protocols.registry import PROTOCOLS as P\nc = P.get({name!r})\n"
                 f"assert not P._loaded and c.name == {name!r}, (P._loaded, c)")
        subprocess.run([sys.executable, "-c", check], check=True)


def test_a_name_no_module_quotes_still_falls_back_to_every_module(scratch_registry):
    with pytest.raises(UnknownNameError, match="available: .*da"):
        get_protocol("no-such-protocol-anywhere")
