"""The demo ends by saying what it wrote and what to run next (issue 26, item 6)."""

from __future__ import annotations

from polyjudge.cli.judge_cmd import _demo_next_steps


def test_next_steps_name_the_outputs_and_runnable_commands():
    text = _demo_next_steps("my demo")
    assert "written to my demo/" in text and "segments.tsv" in text and "mtme/" in text
    assert "polyjudge report 'my demo' -o demo-report.html" in text  # a folder with a space stays one argument
    assert "polyjudge meta-eval --human HUMAN_SCORES --metric 'my demo'" in text
    assert "--dry-run" in text  # a real judge starts with what it would cost
