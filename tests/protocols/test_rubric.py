"""Rubric protocol: metrics with scales and polarity, simple/detailed,
single vs compound calls, few-shot turns, strict JSON parsing."""

from __future__ import annotations

import json

import jsonschema
import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols import ParseFailure, ProtocolOptions, get_protocol
from polyjudge.protocols.rubric import BUILTIN_METRICS, DEFAULT_METRICS, Rubric

CTX = DocumentContext(None, ("x",), 0)
ITEM = Item(src="Summarise the passage.", tgt="Le texte parle de la pluie.", src_lang="fr",
            tgt_lang="fr")


def make(**extra) -> Rubric:
    return get_protocol("rubric", ProtocolOptions(extra=extra))


def answer(**scores) -> str:
    return json.dumps({k: {"score": v, "justification": f"why {k}"} for k, v in scores.items()})


def test_builtin_metrics_scales_and_polarity():
    assert list(BUILTIN_METRICS) == list(DEFAULT_METRICS)
    for name in ("linguistic_acceptability", "output_content_quality", "task_quality"):
        assert BUILTIN_METRICS[name].scale == (0, 1, 2)
    for name in ("problematic_content", "hallucinations"):
        m = BUILTIN_METRICS[name]
        assert m.scale == (0, 1) and m.higher_is_better
        assert "PRESENT" in m.values["0"] and "ABSENT" in m.values["1"]


def test_compound_prompt_lists_every_metric_with_polarity():
    p = make()
    assert p.mode == "compound" and len(p.metrics) == 5
    system, user = p.messages(ITEM, CTX)
    assert system.role == "system" and "written in French" in system.content
    for m in DEFAULT_METRICS:
        assert f"- {m} (" in system.content
    assert system.content.count("higher is better") == 5
    assert "Allowed scores: 0, 1, 2" in system.content and "Allowed scores: 0, 1;" in system.content
    assert user.content == "Input:\nSummarise the passage.\n\nOutput:\nLe texte parle de la pluie."


def test_simple_versus_detailed_descriptions():
    simple = make(metric="hallucinations").messages(ITEM, CTX)[0].content
    detailed = make(metric="hallucinations", detail="detailed").messages(ITEM, CTX)[0].content
    m = BUILTIN_METRICS["hallucinations"]
    assert m.simple in simple and m.detailed not in simple and "for example" not in simple
    assert m.detailed in detailed and m.criteria["0"][0] in detailed
    assert "task_quality" not in simple  # one metric per call
    assert make().template_hash == make(detail="detailed").template_hash  # same file, other branch
    assert make().signature_fields()["detail"] == "simple"


def test_per_metric_builds_single_call_protocols():
    ps = Rubric.per_metric(ProtocolOptions(extra={"metrics": ["task_quality", "hallucinations"]}))
    assert [p.mode for p in ps] == ["single", "single"]
    assert [p.metrics[0].name for p in ps] == ["task_quality", "hallucinations"]
    assert len(Rubric.per_metric()) == 5


def test_parse_compound_and_score():
    p = make()
    text = "Here you go:\n```json\n" + answer(linguistic_acceptability=2, output_content_quality=1,
                                               task_quality="2", problematic_content=1,
                                               hallucinations=0) + "\n```"
    ann = p.parse(text, ITEM)
    assert ann["metrics"]["task_quality"] == {"score": 2, "justification": "why task_quality"}
    # unit scores: 1, 0.5, 1, 1, 0 -> mean 0.7
    assert p.score(ann, ITEM) == pytest.approx(0.7)


def test_parse_is_tolerant_of_layout():
    p = make(metrics=["task_quality", "hallucinations"])
    lst = json.dumps([{"name": "Task Quality", "score": 1}, {"name": "hallucinations", "score": 1.0}])
    assert p.parse(lst, ITEM)["metrics"]["task_quality"]["score"] == 1
    wrapped = json.dumps({"metrics": {"task-quality": 0, "Hallucinations": {"score": 1}}})
    assert p.parse(wrapped, ITEM)["metrics"]["task_quality"]["score"] == 0
    single = make(metric="task_quality")
    assert single.parse('{"score": 2, "justification": "ok"}', ITEM)["metrics"]["task_quality"]["score"] == 2
    assert single.score(single.parse(answer(task_quality=1), ITEM), ITEM) == 1.0


@pytest.mark.parametrize("text", [
    "Task quality is 2 and no hallucinations.",              # no JSON
    '{"task_quality": {"score": 2}',                          # broken JSON
    answer(task_quality=2),                                   # a metric missing
    answer(task_quality=3, hallucinations=1),                 # off the scale
    answer(task_quality=2, hallucinations=0.5),               # not a whole score
    answer(task_quality=True, hallucinations=1),              # bool is not a score
    answer(task_quality="high", hallucinations=1),
])
def test_parse_is_strict_about_scores(text):
    with pytest.raises(ParseFailure):
        make(metrics=["task_quality", "hallucinations"]).parse(text, ITEM)


def test_output_schema_accepts_valid_and_rejects_off_scale():
    p = make(metrics=["task_quality", "hallucinations"])
    schema = p.output_schema(ITEM)
    jsonschema.validate(json.loads(answer(task_quality=2, hallucinations=0)), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(answer(task_quality=2, hallucinations=2)), schema)


def test_user_metrics_need_explicit_polarity(tmp_path):
    good = {"fluency_errors": {"scale": [0, 1, 2, 3], "higher_is_better": False,
                               "simple": "How many fluency errors (3 = three or more)?",
                               "values": {"0": "none", "1": "one", "2": "two", "3": "three or more"}}}
    f = tmp_path / "m.json"
    f.write_text(json.dumps(good))
    p = make(metrics=str(f))
    system = p.messages(ITEM, CTX)[0].content
    assert "lower is better" in system
    ann = p.parse(answer(fluency_errors=3), ITEM)
    assert p.score(ann, ITEM) == 0.0  # reflected: the most errors is the worst
    assert p.score(p.parse(answer(fluency_errors=0), ITEM), ITEM) == 3.0
    del good["fluency_errors"]["higher_is_better"]
    f.write_text(json.dumps(good))
    with pytest.raises(InputError, match="polarity"):
        make(metrics=str(f))


def test_bad_options():
    with pytest.raises(InputError):
        make(metrics=["fluency"])
    with pytest.raises(InputError):
        make(detail="verbose")
    with pytest.raises(InputError):
        make(task="poetry")


def test_few_shot_examples_become_turns(tmp_path):
    shots = tmp_path / "shots.jsonl"
    shots.write_text(json.dumps({"src": "Say hi.", "tgt": "Bonjour !", "tgt_lang": "fr",
                                 "scores": {"task_quality": {"score": 2, "justification": "did it"}}})
                     + "\n" + json.dumps({"src": "Say bye.", "tgt": "Merci.", "scores": {"task_quality": 0}})
                     + "\n")
    p = make(metric="task_quality", few_shot=str(shots))
    msgs = p.messages(ITEM, CTX)
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "Say hi." in msgs[1].content and json.loads(msgs[2].content)["task_quality"]["score"] == 2
    assert msgs[-1].content.endswith("Le texte parle de la pluie.")
    assert p.signature_fields()["shots"] == "2"
    shots.write_text(json.dumps({"src": "a", "tgt": "b", "scores": {"task_quality": 7}}) + "\n")
    with pytest.raises(InputError) as e:
        make(metric="task_quality", few_shot=str(shots))
    assert e.value.line == 1


def test_task_input_blocks():
    item = Item(src="Left.", tgt="Middle.", tgt_lang="de", extra={"right": "Right."})
    user = make(task="continue_writing").messages(item, CTX)[-1].content
    assert user == "Passage A:\nLeft.\n\nPassage B:\nRight.\n\nPassage C (to evaluate):\nMiddle."
    tr = Item(src="Hello", tgt="Hallo", src_lang="en", tgt_lang="de")
    assert "Source (English):\nHello" in make(task="translation").messages(tr, CTX)[-1].content


def test_json_after_bracketed_prose():
    p = make(metric="hallucinations")
    text = "Scores [see below, 1 of 1] [1]:\n" + answer(hallucinations=1)
    assert p.parse(text, ITEM)["metrics"]["hallucinations"]["score"] == 1
