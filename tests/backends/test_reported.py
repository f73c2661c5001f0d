"""backends/reported.py: an answer's body read as json.loads reads it, the usual object without its detours."""

import json

import pytest

import polyjudge.backends.reported as reported_module
from polyjudge.backends.reported import server_json

BODIES = [b'{"a":1}', b'{"a":1}\n', b'{"a" : [1, 2 , {"b": null}] }  \r\n\t', b"{}", b'{"a":"\xed\xa0\x80"}',
          '{"a":1}\r\n', '{"a": NaN, "b": -Infinity}', b"[1]", b' {"a":1}', b"\xef\xbb\xbf{}",
          '{"a":"é"}'.encode("utf-16-le"), '{"a":"é"}'.encode("utf-16"), '{"a":1}'.encode("utf-32"),
          b'{"a":1} x', b'{"a":1}{"b":2}', b'{"a":1}\x0b', b'{"a":1}\xc2\xa0', '{"a":1}\u2028', b'{"a":', b'{"a":[1,',
          b'{"a":}', b"{", b'{"a":1', b'{"a":1,}', b'{"a":"\xff"}', b"{\x00", b"", "", b"{" * 100_000,
          b'{"a":' * 100_000 + b"1" + b"}" * 100_000]


def _outcome(read, body):
    try:
        return "value", read(body)
    except RecursionError:
        return "error", ValueError, "JSON nested too deeply to be read"
    except Exception as exc:  # noqa: BLE001 - the error's type and message are what is compared
        return "error", type(exc), str(exc)


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_server_json_reads_every_body_as_json_loads_does(body):
    got = _outcome(server_json, body)
    assert got == _outcome(json.loads, body)
    if got[0] == "error":
        assert issubclass(got[1], ValueError)  # every reader of answers catches ValueError


def test_an_answers_object_is_read_without_json_loads(monkeypatch):
    calls = []
    real = json.loads
    monkeypatch.setattr(reported_module.json, "loads", lambda *a, **k: calls.append(a) or real(*a, **k))
    body = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "{\\"score\\": 5}"}}]}\n'
    assert server_json(body)["choices"][0]["message"]["content"] == '{"score": 5}'
    assert calls == []  # no encoding sniffing, no whitespace regex: the object scanned at once
    with pytest.raises(ValueError, match="Extra data"):
        server_json(b'{"a":1} trailing')
    assert len(calls) == 1  # what is wrong is said by json.loads itself
