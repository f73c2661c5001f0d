"""The identity of a request is the request: a judge option that changes what is written changes the keys.

Before: re-running into the same -o with ``?structured=none`` took the earlier schema-constrained answers from
the store and sent nothing (the keys were made of the judge's name and the prompt only), and another run
directory got them from the shared cache. Now a resume whose requests changed form is refused naming the
change, another run directory sends again, and a form learned from the server (adaptation) still resumes.
"""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.backends.form import _written, request_form
from polyjudge.backends.registry import BackendSettings, JudgeSpec, backend_class
from polyjudge.data.records import Item
from polyjudge.engine.plan import Plan
from polyjudge.protocols import get_protocol
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, ScriptedServer

# Every judge option of the HTTP backends, with values to try (key_env and per_server write nothing).
OPTIONS = {
    "openai": {"structured": ["auto", "json_schema", "none"], "reasoning": ["true", "false"],
               "key_env": ["OTHER_KEY"], "per_server": ["3"]},
    "anthropic": {"structured": ["auto", "tool", "json_schema", "none"],
                  "version": ["2023-06-01", "2024-10-22"], "key_env": ["OTHER_KEY"], "per_server": ["3"]},
}


def _keys(spec, judge="m"):
    form = request_form(spec, BackendSettings())
    item = Item(src="a source", tgt="a translation", system="S", seg_id="1", src_lang="en", tgt_lang="de")
    plan = Plan([item], get_protocol("da"), [judge], runs=2, temperature=0.0, seed=0, forms={judge: form.token})
    return plan.keys_of(0)


def _written_by(spec):
    one = JudgeSpec(spec.backend, spec.model, spec.base_url, spec.options)
    return _written(backend_class(spec.backend).from_spec(one, BackendSettings()))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(OPTIONS)).flatmap(
    lambda b: st.tuples(st.just(b), st.sampled_from(sorted(OPTIONS[b]))).flatmap(
        lambda bo: st.tuples(st.just(bo[0]), st.just(bo[1]), st.sampled_from(OPTIONS[bo[0]][bo[1]])))))
def test_each_option_changes_the_key_exactly_when_it_changes_the_request(case):
    backend, option, value = case
    url = "http://127.0.0.1:9/v1"
    plain = JudgeSpec(backend, "m", url)
    with_option = JudgeSpec(backend, "m", url, ((option, value),))
    body_changed = _written_by(plain) != _written_by(with_option)
    assert (_keys(plain) != _keys(with_option)) == body_changed, (backend, option, value)


def test_the_default_form_keeps_the_keys_runs_were_made_with():
    plain = JudgeSpec("openai", "m", "http://127.0.0.1:9/v1")
    item = Item(src="a source", tgt="a translation", system="S", seg_id="1", src_lang="en", tgt_lang="de")
    old = Plan([item], get_protocol("da"), ["m"], runs=2, temperature=0.0, seed=0).keys_of(0)
    assert _keys(plain) == old
    # key_env is a credential's place, not part of the request
    assert _keys(JudgeSpec("openai", "m", "http://127.0.0.1:9/v1", (("key_env", "X"),))) == old


def write_items(path, n=4):
    path.write_text("".join(json.dumps({"src": f"source {i}", "tgt": f"translation {i}", "system": "S",
                                        "seg_id": str(i), "src_lang": "en", "tgt_lang": "de"}) + "\n"
                            for i in range(n)))
    return path


def answer(body):
    # a schema-constrained request gets JSON; a bare one gets a bare number (as a real model may)
    return json.dumps({"score": 70}) if "response_format" in body else "85"


def test_resume_with_structured_none_is_refused_naming_the_change(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    with ScriptedServer(answer) as srv:
        base = ["judge", inp, "-o", tmp_path / "run", "-q", "--no-cache"]
        assert cli(*base, "--judge", f"openai:m@{srv.base_url}") == 0
        sent = len(srv.requests)
        capsys.readouterr()
        assert cli(*base, "--judge", f"openai:m?structured=none@{srv.base_url}") == 2
        err = capsys.readouterr().err
        assert len(srv.requests) == sent  # nothing sent, nothing taken from the store
    assert "structured: (default) → none" in err and "--restart" in err, err
    assert err.count("\n") == 1, err


def test_another_form_is_not_answered_from_the_shared_cache(tmp_path, capsys):
    inp = write_items(tmp_path / "in.jsonl")
    cache = tmp_path / "cache"
    with ScriptedServer(answer) as srv:
        assert cli("judge", inp, "-o", tmp_path / "a", "-q", "--cache", cache,
                   "--judge", f"openai:m@{srv.base_url}") == 0
        sent = len(srv.requests)
        assert cli("judge", inp, "-o", tmp_path / "b", "-q", "--cache", cache,
                   "--judge", f"openai:m?structured=none@{srv.base_url}") == 0
        assert len(srv.requests) == 2 * sent
        assert all("response_format" not in b for b in srv.requests[sent:])
    scores = [json.loads(line)["score"] for line in (tmp_path / "b" / "judgments.jsonl").read_text().splitlines()]
    assert set(scores) == {85}


def test_a_form_learned_from_the_server_still_resumes(tmp_path, capsys):
    """A server without structured output teaches the judge to leave the schema out: not a user change."""
    inp = write_items(tmp_path / "in.jsonl")

    def no_schema(body):
        if "response_format" in body:
            return Reply(status=400, raw_body='{"error": {"message": "unknown field response_format"}}')
        return json.dumps({"score": 60})

    with ScriptedServer(no_schema) as srv:
        args = ["judge", inp, "-o", tmp_path / "run", "-q", "--no-cache", "--judge", f"openai:m@{srv.base_url}"]
        assert cli(*args) == 0
        assert "adaptations" in json.loads((tmp_path / "run" / "manifest.json").read_text())["judges"][0]
        sent = len(srv.requests)
        assert cli(*args) == 0
        assert len(srv.requests) == sent
