"""The ``mqm`` answer schema: echoed input fields and the per-severity cap, so that a
published prompt (whose answer repeats source and target) runs unchanged."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.protocols import ProtocolOptions, get_protocol
from polyjudge.protocols.mqm import ECHO_KEYS, ERROR_TYPES, GembaMQM
from tests.helpers.openai_server import ScriptedServer

ITEM = Item(src="The museum opens at nine.", tgt="Das Museum öffnet um neun.", src_lang="en", tgt_lang="de")
ERR = {"type": "accuracy/mistranslation", "desc": "wrong"}


def _mqm(tmp_path=None, **extra) -> GembaMQM:
    template = None
    if tmp_path is not None:
        template = tmp_path / "published.jinja"
        template.write_text("<|system|>\nAnnotate errors; repeat the input fields.\n<|user|>\n{{ segment_json }}\n")
    p = get_protocol("mqm", ProtocolOptions(template=None if template is None else str(template), extra=extra))
    assert isinstance(p, GembaMQM)
    return p


def echoed(n_critical: int) -> dict:
    return {"source_language": "English", "source": ITEM.src, "target_language": "German", "target": ITEM.tgt,
            "errors": {"critical": [ERR] * n_critical, "major": [], "minor": []}}


def test_builtin_prompt_keeps_its_schema_byte_for_byte():
    # the schema as written before the options existed: stored requests keep their hash
    severity = {"type": "array", "items": {
        "type": "object", "properties": {"type": {"type": "string", "enum": list(ERROR_TYPES)},
                                         "desc": {"type": "string", "maxLength": 240}},
        "required": ["type", "desc"], "additionalProperties": False}, "maxItems": 8}
    before = {"type": "object", "properties": {"errors": {
        "type": "object", "properties": {s: severity for s in ("critical", "major", "minor")},
        "required": ["critical", "major", "minor"], "additionalProperties": False}},
        "required": ["errors"], "additionalProperties": False}
    p = _mqm()
    assert json.dumps(p.output_schema(ITEM)) == json.dumps(before)
    assert not p.echo_allowed
    assert p.signature_fields() == {"weights": "25/5/1/p0.1/nt25/n0", "context": "doc"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(echoed(1), p.output_schema(ITEM))


def test_replacement_prompt_allows_echoed_fields(tmp_path):
    p = _mqm(tmp_path)
    schema = p.output_schema(ITEM)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(schema["properties"]) == [*ECHO_KEYS, "errors"] and schema["required"] == ["errors"]
    jsonschema.validate(echoed(2), schema)
    jsonschema.validate({"errors": {"critical": [], "major": [], "minor": []}}, schema)  # echo stays optional
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(echoed(2) | {"comment": "x"}, schema)
    assert p.signature_fields()["schema_echo"] == "yes"
    assert p.parse(json.dumps(echoed(2)), ITEM)["errors"]["critical"] == [ERR, ERR]
    # explicit choices win over the template rule
    assert not _mqm(tmp_path, echo_fields="forbid").echo_allowed
    assert _mqm(echo_fields="allow").echo_allowed


def test_error_cap_is_an_option(tmp_path):
    assert _mqm().output_schema(ITEM)["properties"]["errors"]["properties"]["major"]["maxItems"] == 8
    p = _mqm(max_errors_per_severity=12)
    assert p.output_schema(ITEM)["properties"]["errors"]["properties"]["major"]["maxItems"] == 12
    assert p.signature_fields()["schema_cap"] == "12"
    free = _mqm(max_errors_per_severity=0)
    assert "maxItems" not in free.output_schema(ITEM)["properties"]["errors"]["properties"]["critical"]
    assert free.signature_fields()["schema_cap"] == "none"
    jsonschema.validate({"errors": {"critical": [ERR] * 30, "major": [], "minor": []}}, free.output_schema(ITEM))
    for bad in ({"max_errors_per_severity": -1}, {"echo_fields": "sometimes"}, {"max_errors_per_severity": "x"}):
        with pytest.raises(InputError):
            _mqm(**bad)


def test_published_style_prompt_end_to_end(tmp_path, monkeypatch):
    """A replacement prompt whose answers echo the input and list 10 critical errors is judged as given."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    inp = tmp_path / "items.jsonl"
    inp.write_text(json.dumps({"src": ITEM.src, "tgt": ITEM.tgt, "src_lang": "en", "tgt_lang": "de",
                               "system": "S", "seg_id": "1"}) + "\n")
    template = tmp_path / "published.jinja"
    template.write_text("<|system|>\nAnnotate errors; repeat the input fields.\n<|user|>\n{{ segment_json }}\n")
    out = tmp_path / "run"
    with ScriptedServer(lambda body: json.dumps(echoed(10))) as srv:
        res = CliRunner().invoke(cli, [
            "judge", str(inp), "--out", str(out), "--protocol", "mqm", "--runs", "1", "--prompt-template",
            str(template), "--protocol-option", "max_errors_per_severity=0", "--backend", "openai", "--model", "m",
            "--base-url", srv.base_url, "-q"])
        body = srv.requests[0]
    assert res.exit_code == 0, res.output + str(res.exception)
    schema = body["response_format"]["json_schema"]["schema"]
    assert "source" in schema["properties"] and "maxItems" not in json.dumps(schema)
    row = json.loads((out / "judgments.jsonl").read_text().splitlines()[0])
    assert row["status"] == "ok" and row["score"] == -250.0
