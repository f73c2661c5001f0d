"""The demo ends by saying what it wrote and what to run next (issue 26, item 6), and every "next" line names
files that exist: the human scores ship with the example (issue 37, item 5; tests/docs/test_demo_next.py runs them)."""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path

from polyjudge.cli.judge_cmd import DEMO_HUMAN, DEMO_ITEMS, _demo_next_steps

EXAMPLES = Path(str(resources.files("polyjudge").joinpath("examples")))


def test_next_steps_name_the_outputs_and_runnable_commands():
    text = _demo_next_steps("my demo", Path("/opt/my examples"))
    assert "written to my demo/" in text and "segments.tsv" in text and "mtme/" in text
    assert "polyjudge report 'my demo' -o demo-report.html" in text  # a folder with a space stays one argument
    assert "polyjudge meta-eval --human '/opt/my examples/demo_ende_human.tsv' --metric 'my demo'" in text
    assert "HUMAN_SCORES" not in text and "ITEMS.jsonl" not in text  # no placeholder left to fill in
    assert "--dry-run" in text  # a real judge starts with what it would cost


def test_the_human_scores_cover_every_demo_item():
    items = [json.loads(line) for line in (EXAMPLES / DEMO_ITEMS).read_text(encoding="utf-8").splitlines()]
    with open(EXAMPLES / DEMO_HUMAN, encoding="utf-8", newline="") as fh:
        human = {(r["system"], r["doc_id"], r["seg_id"]): float(r["score"]) for r in csv.DictReader(fh, delimiter="\t")}
    assert sorted(human) == sorted((i["system"], i["doc_id"], i["seg_id"]) for i in items)
    assert len({i["system"] for i in items}) >= 3  # system pairs to rank, items scored for 3 systems (seg_kendall_item)
    assert (EXAMPLES / "README.md").is_file() and (EXAMPLES / "LICENSE-wmt-mqm").is_file()  # source and license
