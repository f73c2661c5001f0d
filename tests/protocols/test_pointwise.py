"""Pointwise protocol: prompts per task, tolerant format / strict verdict parsing."""

from __future__ import annotations

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.records import DocumentContext, Item
from polyjudge.protocols import ParseFailure, ProtocolOptions, get_protocol
from polyjudge.protocols.pointwise import Pointwise, language_name, parse_verdict

CTX = DocumentContext(None, ("x",), 0)


def make(task: str = "translation", scale: str = "binary", **kw) -> Pointwise:
    return get_protocol("pointwise", ProtocolOptions(extra={"task": task, "scale": scale, **kw}))


def qa_item(lang: str = "de") -> Item:
    return Item(src="Wer war es?", tgt="Bob", src_lang=lang, tgt_lang=lang,
                extra={"context": "Bob hat es getan.", "gold_label": "correct"})


@pytest.mark.parametrize("task,needle", [
    ("qa", "Passage: Bob hat es getan."), ("math", "Problem: Wer war es?"),
    ("translation", "Source (German): Wer war es?"), ("summarization", "Document: Wer war es?"),
    ("dialogue", "Conversation so far:\nWer war es?"),
])
@pytest.mark.parametrize("scale", ["binary", "grade"])
def test_every_task_renders_language_and_input(task, needle, scale):
    msgs = make(task, scale).messages(qa_item(), CTX)
    assert [m.role for m in msgs] == ["system", "user"]
    assert "German" in msgs[0].content  # the evaluation language is named in English
    assert needle in msgs[1].content
    assert msgs[1].content.rstrip().endswith("Bob")
    if scale == "binary":
        assert "<verdict>correct</verdict>" in msgs[0].content and "<grade>" not in msgs[0].content
    else:
        assert "<grade>" in msgs[0].content and "1 to 5" in msgs[0].content


def test_task_aliases_and_bad_options():
    assert make("xquad").task == "qa" and make("mgsm").task == "math" and make("mt").task == "translation"
    with pytest.raises(InputError):
        make("poetry")
    with pytest.raises(InputError):
        make(scale="likert")


def test_qa_needs_context():
    item = Item(src="q", tgt="a", tgt_lang="en")
    with pytest.raises(InputError, match="context"):
        make("qa").messages(item, CTX)


def test_extra_fields_feed_the_template():
    item = Item(src="ignored", tgt="Fine, thanks.", tgt_lang="it",
                extra={"history": ["A: Ciao!", "B: Come stai?"]})
    user = make("dialogue").messages(item, CTX)[1].content
    assert "A: Ciao!\nB: Come stai?" in user and "ignored" not in user


def test_user_template(tmp_path):
    tpl = tmp_path / "t.jinja"
    tpl.write_text("<|user|>\n{{ language }}|{{ question }}|{{ tgt }}|{{ gold_label }}|{{ scale }}\n")
    p = get_protocol("pointwise", ProtocolOptions(template=str(tpl), extra={"task": "qa"}))
    msgs = p.messages(qa_item("ja"), CTX)
    assert [(m.role, m.content) for m in msgs] == [("user", "Japanese|Wer war es?|Bob|correct|binary")]
    assert p.template_hash != make("qa").template_hash


def test_language_names():
    assert language_name("sw") == "Swahili" and language_name("pt-BR") == "Brazilian Portuguese"
    # one table for the project (polyjudge.data.languages): a script subtag it knows is named
    assert language_name("zh_Hans") == "Simplified Chinese" and language_name("xx") == "xx"
    assert language_name("zh-Latn") == "Chinese"  # unknown subtag: the base language
    assert language_name(None) == "the language of the text"
    p = make(language="Klingon")
    assert "Klingon" in p.messages(qa_item(), CTX)[0].content


@pytest.mark.parametrize("text,expected", [
    ("<justification>It matches.</justification>\n<verdict>correct</verdict>", "correct"),
    ("<result><justification>no</justification><answer>Incorrect</answer></result>", "incorrect"),
    ("**Verdict:** *Correct*.", "correct"),
    ("Justification: The number is off by two.\nVerdict: incorrect", "incorrect"),
    ('```json\n{"justification": "fine", "verdict": "correct"}\n```', "correct"),
    ("correct", "correct"),
    ("  INCORRECT. ", "incorrect"),
    ("Verdict: not correct", "incorrect"),
    # the verdict-named field wins over an 'Answer:' line that restates the answer
    ("Answer: 18 eggs are sold.\nVerdict: correct", "correct"),
])
def test_binary_parsing_tolerates_format(text, expected):
    p = make()
    ann = p.parse(text, qa_item())
    assert ann["verdict"] == expected
    assert p.score(ann, qa_item()) == (1.0 if expected == "correct" else 0.0)


@pytest.mark.parametrize("text", [
    "",
    "The answer looks fine to me overall, I would accept it.",
    "<verdict>partially correct</verdict>",
    "<verdict>correct</verdict> ... on reflection <verdict>incorrect</verdict>",
    "Verdict: yes",
    '{"verdict": true}',
])
def test_binary_parsing_is_strict_about_the_verdict(text):
    with pytest.raises(ParseFailure):
        make().parse(text, qa_item())


@pytest.mark.parametrize("text,grade", [
    ("<justification>good</justification><grade>5</grade>", 5),
    ("Grade: 4/5", 4), ("Grade: **3 out of 5**", 3), ("<answer>[2]</answer>", 2),
    ('{"justification": "x", "grade": 1}', 1), ("4", 4), ("Score: 5.0", 5),
])
def test_grade_parsing(text, grade):
    p = make(scale="grade")
    ann = p.parse(text, qa_item())
    assert ann["verdict"] == grade and p.score(ann, qa_item()) == float(grade)


@pytest.mark.parametrize("text", ["<grade>0</grade>", "<grade>6</grade>", "Grade: 4.5",
                                  "Grade: 3-4", "<grade>4</grade><grade>5</grade>",
                                  "I'd say it's good."])
def test_grade_parsing_is_strict(text):
    with pytest.raises(ParseFailure):
        make(scale="grade").parse(text, qa_item())


def test_justification_is_kept():
    assert parse_verdict("<justification> Off by one. </justification><grade>2</grade>",
                         "grade") == (2, "Off by one.")
    assert parse_verdict("Reason: wrong span\nVerdict: incorrect", "binary") == ("incorrect", "wrong span")
