"""``polyjudge.data.errors``: one message for a value outside its choices, in every API config that checks one."""

import pytest

from polyjudge.api import CompareFormatsConfig, SpanF1Config
from polyjudge.api.metaeval import MetaEvalConfig, meta_eval
from polyjudge.data.errors import InputError, check_choices


def test_the_first_value_outside_its_choices_is_named_with_the_choices():
    check_choices(("raters", "all", ("first", "all")))  # allowed: nothing raised
    with pytest.raises(InputError) as exc:
        check_choices(("raters", "all", ("first", "all")), ("missing", "maybe", ("empty", "skip")),
                      ("level", "nope", ("seg",)))
    assert exc.value.field == "missing"
    assert str(exc.value) == "field 'missing': unknown missing 'maybe' (choose from empty, skip)"


@pytest.mark.parametrize(("check", "field"), [
    (lambda: SpanF1Config(gold="g", pred="p", pred_format="xml").check(), "pred-format"),
    # raters also takes a rater's name (span-f1 --raters NAME), so its fixed choices are checked elsewhere
    (lambda: CompareFormatsConfig(runs=("r",), gold="g", missing="maybe").check(), "missing"),
    (lambda: meta_eval(MetaEvalConfig(human="h.tsv", metric_format="xls")), "metric-format"),
])
def test_api_configs_refuse_a_value_outside_the_choices_before_reading_anything(check, field, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)  # none of the named files exists: the choice is refused first
    with pytest.raises(InputError, match=r"unknown .* \(choose from ") as exc:
        check()
    assert exc.value.field == field
