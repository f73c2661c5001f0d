"""Expected scores from token log-probabilities, checked against hand-computed trees."""

import math

import pytest

from polyjudge.data.chat import TokenLogprob
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.protocols import get_protocol
from polyjudge.protocols.base import ParseFailure, ProtocolOptions
from polyjudge.protocols.expected import json_key_locator, score_distribution

ITEM = Item("The cat sleeps.", "Die Katze schläft.", src_lang="en", tgt_lang="de")
SCORE = json_key_locator("score")


def tok(token: str, *alts: tuple[str, float]) -> TokenLogprob:
    """A generated token with its alternatives given as probabilities (the generated one among them)."""
    probs = dict(alts) or {token: 1.0}
    return TokenLogprob(token, math.log(probs[token]), tuple((t, math.log(p)) for t, p in probs.items()))


def dist(d):
    return {v: round(p, 9) for v, p in d.probabilities}


def test_single_token_scores_are_weighted_over_the_valid_mass():
    lp = [tok('{"'), tok("score"), tok('":'), tok(" "),
          tok("80", ("80", .6), ("90", .3), ("70", .05), ("N", .05)), tok("}")]
    d = score_distribution(lp, SCORE, range(101))
    # (80*.6 + 90*.3 + 70*.05) / .95, by hand
    assert d.expected == pytest.approx(78.5 / .95)
    assert d.valid_mass == pytest.approx(.95) and d.invalid_mass == pytest.approx(.05)
    assert d.sampled == 80 and d.approximated == 0.0
    assert dist(d) == {70: round(.05 / .95, 9), 80: round(.6 / .95, 9), 90: round(.3 / .95, 9)}


def test_one_hundred_written_digit_by_digit():
    # "1","0","0" generated; '9' and '8' are alternatives of the first digit, '5' of the second.
    lp = [tok('{"score": '), tok("1", ("1", .5), ("9", .4), ("8", .1)), tok("0", ("0", .9), ("5", .1)),
          tok("0", ("0", .8), ("}", .2)), tok("}")]
    d = score_distribution(lp, SCORE, range(101))
    # Hand-computed tree: observed 100 = .5*.9*.8, 10 = .5*.9*.2; '15' (nothing valid extends it)
    # = .5*.1; '9' completed from the second position, where the answer's "1" could still go on:
    # 90 (.9) and 95 (.1) of .4; '8' likewise: 80 .09, 85 .01.
    want = {100: .36, 10: .09, 15: .05, 90: .36, 95: .04, 80: .09, 85: .01}
    assert dist(d) == {v: round(p, 9) for v, p in sorted(want.items())}
    assert d.valid_mass == pytest.approx(1.0) and d.invalid_mass == pytest.approx(0.0)
    assert d.expected == pytest.approx(81.9)
    assert d.approximated == pytest.approx(.5) and d.sampled == 100


def test_one_hundred_split_as_one_and_double_zero():
    lp = [tok('{"score":'), tok(" 1", (" 1", .7), (" 9", .3)), tok("00", ("00", .6), ("0", .4)), tok("}")]
    d = score_distribution(lp, SCORE, range(101))
    # 100 = .7*.6; '9'+'00' = 900 is no score, '9'+'0' = 90 ends there (nothing valid extends 90) and
    # takes the whole .3; '1'+'0' might be 10 or 100: after "100" nothing stands in, so it is unread.
    assert dist(d) == {90: round(.3 / .72, 9), 100: round(.42 / .72, 9)}
    assert d.expected == pytest.approx((90 * .3 + 100 * .42) / .72)
    assert (d.valid_mass, d.invalid_mass, d.unread_mass) == pytest.approx((.72, 0.0, .28))


def test_after_a_generated_zero_nothing_stands_in_for_other_first_digits():
    lp = [tok('{"score": '), tok("0", ("0", .5), ("5", .3), ("100", .2)), tok("}", ("}", .9), ("0", .1))]
    d = score_distribution(lp, SCORE, range(101))
    # '0' ends as 0 (.5; '00' is not a number: invalid); '100' is read exactly; how '5' would go on
    # (5, 50-59) is unknown, since after '0' the answer could not go on: unread.
    assert dist(d) == {0: round(.45 / .65, 9), 100: round(.2 / .65, 9)}
    assert (d.valid_mass, d.invalid_mass, d.unread_mass) == pytest.approx((.65, .05, .3))


def test_a_score_split_across_tokens_with_a_leading_space_merged_into_the_first_digit():
    lp = [tok('{"score":'), tok(" 8", (" 8", .5), ("9", .2), (' "', .1), (" ", .2)),
          tok("5", ("5", .6), ("0", .4)), tok("}")]
    d = score_distribution(lp, SCORE, range(101))
    # 85 = .5*.6 observed; 80 = .5*.4 (its '}' follows); '9' -> 95 .6 / 90 .4 of .2;
    # ' "' (a quoted string) is invalid; a bare space may still be followed by a number: unread.
    assert dist(d) == {80: round(.2 / .7, 9), 85: round(.3 / .7, 9), 90: round(.08 / .7, 9),
                       95: round(.12 / .7, 9)}
    assert d.expected == pytest.approx((85 * .3 + 80 * .2 + 95 * .12 + 90 * .08) / .7)
    assert (d.valid_mass, d.invalid_mass, d.unread_mass) == pytest.approx((.7, .1, .2))


def test_leading_zeros_and_out_of_scale_numbers_are_invalid():
    lp = [tok("Score: "), tok("4", ("4", .5), ("6", .3), ("0", .2)), tok("\n")]
    d = score_distribution(lp, lambda t: t.index("4"), range(1, 6))
    assert dist(d) == {4: 1.0} and d.invalid_mass == pytest.approx(.5)


def test_no_logprobs_or_no_valid_mass_is_a_failure():
    with pytest.raises(ParseFailure, match="no token log-probabilities"):
        score_distribution((), SCORE, range(101))
    with pytest.raises(ParseFailure, match="not found"):
        score_distribution([tok("hello")], SCORE, range(101))
    with pytest.raises(ParseFailure, match="no probability on any valid score"):
        score_distribution([tok('{"score": '), tok("7", ("7", .5), ("x", .5))], SCORE, range(1, 6))


def protocol(name, **extra):
    return get_protocol(name, ProtocolOptions(extra=extra))


def test_da_expected_mode_records_the_distribution_and_scores_with_it():
    da = protocol("da", score_mode="expected")
    assert da.top_logprobs == 20 and da.signature_fields()["scores"] == "expected"
    assert "scores" not in protocol("da").signature_fields() and protocol("da").top_logprobs == 0
    lp = [tok('{"score": '), tok("80", ("80", .75), ("60", .25)), tok("}")]
    ann = da.parse_answer('{"score": 80}', ITEM, lp)
    assert ann["score"] == 80.0 and ann["expected"]["score"]["distribution"] == [[60, .25], [80, .75]]
    assert da.score(ann, ITEM) == pytest.approx(75.0)
    assert protocol("da").score(ann, ITEM) == 80.0  # sample mode ignores the distribution
    with pytest.raises(ParseFailure, match="no token log-probabilities"):
        da.parse_answer('{"score": 80}', ITEM, ())
    # a bare number
    ann = da.parse_answer("Score: 7", ITEM, [tok("Score:"), tok(" 7", (" 7", .5), (" 9", .5))])
    assert da.score(ann, ITEM) == pytest.approx(8.0)


def test_pointwise_grade_expected_mode():
    pw = protocol("pointwise", scale="grade", score_mode="expected")
    text = "<justification>Fine.</justification>\n<grade>4</grade>"
    lp = [tok("<justification>Fine.</justification>\n<grade>"), tok("4", ("4", .5), ("5", .25), ("3", .25)),
          tok("</grade>")]
    ann = pw.parse_answer(text, ITEM, lp)
    assert pw.score(ann, ITEM) == pytest.approx(4.0) and ann["verdict"] == 4
    lp = [lp[0], tok("4", ("4", .5), ("5", .5)), lp[2]]
    assert pw.score(pw.parse_answer(text, ITEM, lp), ITEM) == pytest.approx(4.5)
    with pytest.raises(InputError, match="scale=grade"):
        protocol("pointwise", score_mode="expected")
    with pytest.raises(InputError, match="score_mode"):
        protocol("da", score_mode="mean")


def test_rubric_expected_mode_reads_each_metric_at_its_own_key():
    rb = protocol("rubric", metrics=["task_quality", "hallucinations"], score_mode="expected")
    text = ('{"task_quality": {"score": 2, "justification": "ok {\\"score\\": 0}"}, '
            '"hallucinations": {"score": 1, "justification": "none"}}')
    lp = [tok('{"task_quality": {"score": '), tok("2", ("2", .5), ("1", .5)),
          tok(', "justification": "ok {\\"score\\": 0}"}, "hallucinations": {"score": '),
          tok("1", ("1", .8), ("0", .2)), tok(', "justification": "none"}}')]
    ann = rb.parse_answer(text, ITEM, lp)
    assert ann["expected"]["task_quality"]["score"] == pytest.approx(1.5)
    assert ann["expected"]["hallucinations"]["score"] == pytest.approx(.8)
    # mean over metrics of the [0, 1] unit scores: (1.5/2 + .8/1) / 2
    assert rb.score(ann, ITEM) == pytest.approx((.75 + .8) / 2)


def test_esa_expected_mode_reads_the_top_level_score():
    esa = protocol("gemba-esa", score_mode="expected")
    item = Item("The cat sleeps.", "Die Katze schlaeft.", src_lang="en", tgt_lang="de")
    text = '{"errors": [{"span": "schlaeft", "severity": "minor"}], "score": 70}'
    lp = [tok('{"errors": [{"span": "schlaeft", "severity": "minor"}], "score": '),
          tok("70", ("70", .5), ("90", .5)), tok("}")]
    ann = esa.parse_answer(text, item, lp)
    assert esa.score(ann, item) == pytest.approx(80.0) and ann["spans"][0]["text"] == "schlaeft"
