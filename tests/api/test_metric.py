"""polyjudge.Judge, the judge as a metric object (issue 45), against the scripted OpenAI-compatible server.

Every score is what the server was scripted to answer, in the rows' order; a scripted unparsable answer is
None; a second call is answered by the shared response cache (the server sees no new request); the spending
cap holds; Ctrl-C keeps what was answered; nothing is written unless ``out=`` names a run directory."""

from __future__ import annotations

import _thread
import asyncio
import dataclasses
import json
import os
import re
import threading
import time

import pytest

import polyjudge
from polyjudge.api import BudgetExceeded, InputError, Judge, JudgeConfig, ModelPrice
from tests.helpers.extras import needs_extra
from tests.helpers.openai_server import Reply, ScriptedServer

N = 12
BROKEN = 5  # the row whose answer the server scripts as prose no score can be read from


def scripted(i: int) -> float:
    """The score the server answers for row ``i``."""
    return float((i * 37) % 101)


def responder(body):
    i = int(re.search(r"hyp-(\d+)", body["messages"][-1]["content"]).group(1))
    return "I would rather not say." if i == BROKEN else json.dumps({"score": scripted(i)})


def rows(n=N):
    return [{"src": f"Quelle Nummer {i}", "mt": f"hyp-{i} translation", "lp": "de-en", "system": "AB"[i % 2],
             "seg_id": i} for i in range(n)]


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedServer(responder) as srv:
        yield srv


def make_judge(srv, **settings):
    settings.setdefault("progress", False)
    return Judge(protocol="da", judge=f"openai:m@{srv.base_url}", **settings)


def asked(requests) -> set[int]:
    """The rows the requests ask about."""
    return {int(re.search(r"hyp-(\d+)", b["messages"][-1]["content"]).group(1)) for b in requests}


def expected(n=N):
    return [None if i == BROKEN else scripted(i) for i in range(n)]


def test_predict_gives_the_scripted_scores_in_order_and_none_for_an_unparsable_answer(server):
    pred = make_judge(server).predict(rows())
    assert pred.scores == expected() and pred["scores"] == pred.scores
    assert pred.metadata.status == ["failed" if i == BROKEN else "ok" for i in range(N)]
    scored = [s for s in expected() if s is not None]
    assert pred.system_score == pytest.approx(sum(scored) / len(scored))
    for system in "AB":
        mine = [s for i, s in enumerate(expected()) if "AB"[i % 2] == system and s is not None]
        assert pred.systems[system] == pytest.approx(sum(mine) / len(mine))
    assert pred.signature.startswith("da|judge:m|") and pred.metadata.error_spans is None
    assert set(pred) == {"scores", "system_score", "systems", "metadata", "signature", "cost"}
    assert len(server.requests) == N


def test_rows_are_judged_in_their_order_whatever_the_answer_order(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    def slow_first(body):  # early rows answer last
        i = int(re.search(r"hyp-(\d+)", body["messages"][-1]["content"]).group(1))
        return Reply(json.dumps({"score": scripted(i)}), delay_s=0.02 * (N - i))

    with ScriptedServer(slow_first) as srv:
        pred = make_judge(srv, concurrency=N).predict(rows())
    assert pred.scores == [scripted(i) for i in range(N)]


def test_a_second_call_is_answered_by_the_shared_cache(server):
    judge = make_judge(server)
    first = judge.predict(rows())
    sent = len(server.requests)
    again = make_judge(server).predict(rows())  # a new object: the cache is the machine's, not the object's
    assert len(server.requests) == sent and again.scores == first.scores and again.cost == 0.0


def test_predict_inside_a_running_event_loop_and_apredict(server):
    judge = make_judge(server)

    async def in_a_notebook():
        assert asyncio.get_running_loop() is not None
        ticks = 0

        async def other_work():  # the loop stays free while apredict waits
            nonlocal ticks
            for _ in range(5):
                ticks += 1
                await asyncio.sleep(0.001)

        synced = judge.predict(rows())
        awaited, _ = await asyncio.gather(judge.apredict(rows()), other_work())
        return synced, awaited, ticks

    synced, awaited, ticks = asyncio.run(in_a_notebook())
    assert synced.scores == awaited.scores == expected() and ticks == 5


def test_nothing_is_written_without_out_and_out_resumes(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    judge = make_judge(server, use_cache=False)
    judge.predict(rows())
    assert os.listdir(tmp_path) == []
    run_dir = tmp_path / "runs" / "da"
    judge.predict(rows(), out=run_dir)
    sent = len(server.requests)
    assert (run_dir / "segments.tsv").is_file() and (run_dir / "manifest.json").is_file()
    resumed = judge.predict(rows(), out=run_dir)  # no cache: the run directory's store answers
    assert len(server.requests) == sent and resumed.scores == expected()


def test_the_spending_cap_holds(server):
    price = ModelPrice(1000.0, 1000.0)  # USD per million tokens: a few cents per request here
    judge = make_judge(server, prices={"m": price}, max_cost=1.0, concurrency=1)
    with pytest.raises(BudgetExceeded) as exc:
        judge.predict(rows())
    sent = len(server.completed)
    assert 0 < sent < N
    billed = sum((sum(len(m["content"].split()) for m in b["messages"]) + len(responder(b).split())) * 1000.0 / 1e6
                 for b in server.completed)
    assert billed <= 1.0 and exc.value.spent == pytest.approx(billed)
    partial = exc.value.prediction
    assert partial.scores[:sent] == expected()[:sent] and partial.scores[sent:] == [None] * (N - sent)
    assert partial.metadata.status[sent:] == ["pending"] * (N - sent)


def test_estimate_counts_what_the_cache_answers(server):
    judge = make_judge(server)
    before = judge.estimate(rows())
    assert before.requests_to_send == N and len(server.requests) == 0
    judge.predict(rows())
    after = judge.estimate(rows())
    assert after.requests_to_send == 0 and after.from_shared_cache == N


def test_ctrl_c_keeps_the_answers_so_far(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    answered = threading.Event()

    def slow(body):
        if len(srv.completed) >= 3:
            answered.set()
        return Reply(responder(body), delay_s=0.05)

    with ScriptedServer(slow) as srv:
        judge = make_judge(srv, concurrency=1)
        threading.Thread(target=lambda: (answered.wait(10), _thread.interrupt_main()), daemon=True).start()
        with pytest.raises(KeyboardInterrupt) as exc:
            judge.predict(rows())
        assert isinstance(exc.value, polyjudge.PredictionInterrupted)
        assert "shared response cache" in str(exc.value)
        status = exc.value.prediction.metadata.status
        kept = {i for i, st in enumerate(status) if st != "pending"}  # answered (row 5's answer is unreadable)
        assert 3 <= len(kept) < N and [exc.value.prediction.scores[i] for i in sorted(kept)] == [
            expected()[i] for i in sorted(kept)]
        before = len(srv.requests)
        pred = judge.predict(rows())
        # the rest only: what was answered before Ctrl-C is not asked again
        assert asked(srv.requests[before:]) == set(range(N)) - kept and pred.scores == expected()


def test_corpus_score_and_compute_take_the_field_shapes(server):
    judge = make_judge(server)
    srcs, hyps = [r["src"] for r in rows()], [r["mt"] for r in rows()]
    score = judge.corpus_score(hyps, [[f"ref {i}" for i in range(N)]], sources=srcs, lp="de-en")
    scored = [s for s in expected() if s is not None]
    assert score.score == pytest.approx(sum(scored) / len(scored)) and score.signature == judge.get_signature()
    assert str(score) == f"da = {score.score:.2f}" and score.signature in score.format(signature=True)
    out = judge.compute(predictions=hyps, references=[f"ref {i}" for i in range(N)], sources=srcs, lp="de-en")
    assert out == {"mean_score": pytest.approx(score.score), "scores": expected()}
    with pytest.raises(InputError, match="reference streams"):
        judge.corpus_score(hyps, [hyps, hyps], sources=srcs, lp="de-en")
    with pytest.raises(InputError, match="differ in length"):
        judge.compute(predictions=hyps[:3], sources=srcs, lp="de-en")


def test_signature_before_and_after_a_prediction(server):
    judge = make_judge(server)
    planned = judge.get_signature()
    assert planned == judge.predict(rows()).signature == judge.get_signature()


@needs_extra("pandas")
def test_dataframe_in_and_out(server):
    import pandas as pd

    frame = pd.DataFrame(rows())
    pred = make_judge(server).predict(frame)
    assert pred.scores == expected()
    table = pred.to_pandas()
    assert list(table["mt"]) == list(frame["mt"]) and table["score"].isna().tolist() == [
        i == BROKEN for i in range(N)]
    assert list(table["seg_id"]) == [str(i) for i in range(N)]


@needs_extra("datasets")
def test_a_hugging_face_dataset(server):
    from datasets import Dataset

    pred = make_judge(server).predict(Dataset.from_list(rows()))
    assert pred.scores == expected()


def test_error_spans_of_a_span_protocol(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    def esa(body):
        return json.dumps({"errors": [{"span": "translation", "severity": "major"}], "score": 61})

    with ScriptedServer(esa) as srv:
        pred = Judge(protocol="gemba-esa", judge=f"openai:m@{srv.base_url}", progress=False).predict(rows(2))
    assert pred.scores == [61.0, 61.0]
    spans = pred.metadata.error_spans
    assert [(s["text"], s["severity"]) for s in spans[0]] == [("translation", "major")]
    assert rows(2)[0]["mt"][spans[0][0]["start"]:spans[0][0]["end"]] == "translation"


def test_progress_bar_and_its_silence(server, capsys):
    make_judge(server, progress=True).predict(rows(3))
    assert "judging" in capsys.readouterr().err
    make_judge(server, progress=True).predict(rows(3), progress=False)
    make_judge(server, quiet=True).predict(rows(3))
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- keywords


def test_every_judging_key_is_a_judge_keyword_with_the_same_default(tmp_path):
    """The keywords are the study file's [[judging]] keys, read from their declarations: each with its
    declared default, and a Judge given none judges as a [[judging]] table that gives none."""
    from polyjudge.api import parse_study
    from polyjudge.api.study_file import table_keys
    from polyjudge.data.settings import SETTINGS
    from polyjudge.data.study_keys import JUDGING_INPUT

    keys = table_keys("judging")
    defaults = Judge.defaults()
    declared = {s.study_key: s.default for s in SETTINGS if s.on_command_line} | {
        k.key: k.default for k in JUDGING_INPUT}
    assert set(keys) == set(declared) and set(defaults) == set(declared) | {"progress"}
    for key, default in declared.items():
        assert defaults[key] == default, key
    import inspect

    shown = inspect.signature(Judge).parameters
    assert {name: p.default for name, p in shown.items()} == defaults
    study = parse_study(str(tmp_path / "s.toml"), '[[judging]]\nname = "a"\ninput = "x.jsonl"\n', progress=False)
    table = study.judgings[0].spec
    assert Judge().spec == table.replace(data=dataclasses.replace(table.data, path=None))


def test_a_keyword_set_like_a_study_key_means_the_same(tmp_path):
    from polyjudge.api import parse_study

    text = ('[[judging]]\nname = "a"\ninput = "x.jsonl"\nprotocol = "mqm"\njudge = ["openai:m@http://h:1/v1"]\n'
            'runs = 3\ntemperature = 0.7\nprotocol_options = ["classic=true"]\nmax_cost = 2.5\nuse_cache = false\n')
    table = parse_study(str(tmp_path / "s.toml"), text, progress=False).judgings[0].spec
    judge = Judge(protocol="mqm", judge="openai:m@http://h:1/v1", runs=3, temperature=0.7,
                  protocol_options={"classic": True}, max_cost=2.5, use_cache=False)
    assert judge.spec == table.replace(data=dataclasses.replace(table.data, path=None))


def test_an_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="'temprature'.*did you mean 'temperature'"):
        Judge(temprature=0.3)
    with pytest.raises(TypeError, match="'aggregate'.*'aggregator'"):  # an earlier release's key
        Judge(aggregate="mean")


@pytest.mark.parametrize(("settings", "keyword"), [
    ({"runs": 0}, "runs"), ({"temperature": "warm"}, "temperature"), ({"protocol": "no-such"}, "protocol"),
    ({"max_cost": -1}, "max_cost"), ({"judge": "nobackend:x"}, "judge"), ({"concurrency": 2.5}, "concurrency"),
    ({"protocol": "da", "protocol_options": {"no_such_option": 1}}, None),
])
def test_a_bad_value_is_an_input_error_naming_the_keyword(settings, keyword):
    with pytest.raises(InputError) as exc:
        judge = Judge(**settings)
        judge.get_signature()  # protocol options are checked against the protocol when it is built
    if keyword is not None:
        assert exc.value.field == keyword and str(exc.value).count("field") == 1


def test_a_row_without_mt_names_the_row_and_the_key(server):
    data = rows(3)
    del data[1]["mt"]
    with pytest.raises(InputError, match="has no 'mt'") as exc:
        make_judge(server).predict(data)
    assert exc.value.path == "row 1" and exc.value.field == "mt" and not server.requests


def test_languages_from_the_call_and_rows(server):
    data = [{k: v for k, v in r.items() if k != "lp"} for r in rows(2)]
    with pytest.raises(InputError):
        make_judge(server).predict(data)  # no language anywhere
    assert make_judge(server).predict(data, lp="de-en").scores == expected(2)
    assert make_judge(server, src_lang="de", tgt_lang="en").predict(data).scores == expected(2)


def test_file_selection_keys_are_refused_for_rows_in_memory(server):
    with pytest.raises(InputError, match="choose the rows yourself") as exc:
        make_judge(server, limit=2).predict(rows())
    assert exc.value.field == "limit"


def test_load_a_preset():
    from polyjudge.api import judge_presets

    judge = polyjudge.load("gemba-mqm-v2")
    assert judge.get_signature().startswith("mqm|judge:gpt-4.1-mini|") and "|runs:10|agg:rrwa|T:0.4|" in \
        judge.get_signature()
    assert polyjudge.load("gemba-esa", judge="openai:other").spec.judges.judges[0].model == "other"
    assert {"gemba-mqm-v2", "gemba-esa", "tsa"} <= set(judge_presets())
    with pytest.raises(InputError, match="presets: gemba-mqm-v2"):
        polyjudge.load("gemba-mqm-v9")


# --------------------------------------------------------------------------- the rough edges


def test_missing_key_names_the_setting_not_the_flag(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = Judge(judge="openai:gpt-4o-mini", progress=False)
    with pytest.raises(InputError) as exc:
        judge.predict(rows(1))
    assert exc.value.field == "api_key_env" and "--api-key-env" not in str(exc.value)
    assert "OPENAI_API_KEY" in str(exc.value)
    with pytest.raises(InputError) as exc:
        polyjudge.judge(rows(1), JudgeConfig(judges="openai:gpt-4o-mini"))
    assert "--api-key-env" not in str(exc.value) and exc.value.field == "api_key_env"
    from polyjudge.cli.main import main

    (tmp_path / "in.jsonl").write_text(json.dumps({"src": "a", "tgt": "b", "src_lang": "de", "tgt_lang": "en"}) + "\n")
    with pytest.raises(SystemExit) as ended:
        main(["judge", str(tmp_path / "in.jsonl"), "--judge", "openai:gpt-4o-mini", "-o", str(tmp_path / "r"), "-q"])
    assert ended.value.code == 2
    err = capsys.readouterr().err  # the command line names its flag, and nothing in the line is masked
    assert "field '--api-key-env': OPENAI_API_KEY is empty or not set: https://api.openai.com/v1 needs" in err


def test_a_key_given_where_its_variable_belongs_is_not_echoed(monkeypatch):
    key = "sk-proj-" + "Ab3" * 12
    with pytest.raises(InputError) as exc:
        Judge(judge="openai:gpt-4o-mini", api_key_env=key, progress=False).predict(rows(1))
    assert key not in str(exc.value) and exc.value.field in ("api_key_env", "judge")


def test_judge_takes_dicts_and_one_judge_as_text(server):
    run = polyjudge.judge(rows(3), JudgeConfig(judges=f"openai:m@{server.base_url}", protocol="da"))
    assert run.segment_scores() == expected(3)
    assert polyjudge.api.Item is polyjudge.Item


def test_polyjudge_exports_the_metric_names():
    for name in ("Judge", "load", "Prediction", "CorpusScore", "Item"):
        assert name in polyjudge.api.__all__ and getattr(polyjudge, name) is getattr(polyjudge.api, name)


def test_a_long_wait_keeps_the_loop_responsive(server):
    """apredict polls the worker: other tasks of the loop run while it judges."""
    judge = make_judge(server)

    async def main():
        started = time.monotonic()
        task = asyncio.create_task(judge.apredict(rows()))
        beats = 0
        while not task.done():
            beats += 1
            await asyncio.sleep(0.005)
        return await task, beats, time.monotonic() - started

    pred, beats, _ = asyncio.run(main())
    assert pred.scores == expected() and beats > 1


def test_a_cancelled_apredict_stops_sending_and_keeps_its_answers(monkeypatch):
    """A kernel interrupt of an ``await`` cell cancels its task: sending stops, what arrived is kept."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    def slow(body):
        return Reply(responder(body), delay_s=0.05)

    with ScriptedServer(slow) as srv:
        judge = make_judge(srv, concurrency=1)

        async def main():
            task = asyncio.create_task(judge.apredict(rows()))
            while len(srv.completed) < 3:
                await asyncio.sleep(0.005)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        before = len(srv.requests)
        assert 3 <= before < N
        time.sleep(0.2)
        assert len(srv.requests) == before  # nothing is sent once it stopped
        pred = judge.predict(rows())
        again = asked(srv.requests[before:])  # the rows not answered before the cancel, each once
        # one request in flight (concurrency 1): the third answer was being received, two at least were kept
        assert len(again) == len(srv.requests) - before and set(range(before, N)) <= again and len(again) <= N - 2
        assert pred.scores == expected()


def test_an_input_file_is_read_with_the_judges_input_settings(server, tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"src": r["src"], "tgt": r["mt"], "system": r["system"]}) + "\n"
                            for r in rows()), encoding="utf-8")
    pred = make_judge(server, lp="de-en", limit=4).predict(path)
    assert pred.scores == expected(4)


def test_the_repr_masks_credentials():
    judge = Judge(judge="openai:m@https://user:s3cretpassw0rd@example.org/v1", progress=False)
    assert "s3cretpassw0rd" not in repr(judge) and "openai:m" in repr(judge)


def test_judge_and_estimate_work_inside_a_running_event_loop(server):
    """The issue's first symptom: polyjudge.judge in a notebook cell (a running loop) raised RuntimeError."""
    config = JudgeConfig(judges=f"openai:m@{server.base_url}", protocol="da")

    async def in_a_cell():
        return polyjudge.estimate(rows(3), config), polyjudge.judge(rows(3), config)

    plan, run = asyncio.run(in_a_cell())
    assert plan.requests_to_send == 3 and run.segment_scores() == expected(3)
