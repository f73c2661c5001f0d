"""Every command that takes a file, fed a hostile one, in this process (``polyjudge.cli.main.main``).

The contract: exit 0 when the damaged file happens to be valid, else exit 2
with exactly one ``polyjudge: error:`` line (or a click usage error), and
never a traceback. ``score`` and ``consistency`` judge valid input with a
replay judge that has no answers, so every judgment fails and exit 3 (too
many failed judgments) is allowed for them too.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import samples as S
from tests.fuzz.hostile import check_cli, count, fresh_dir, fuzz_settings, hostile, hostile_json

EXAMPLES = 50
JUDGED = frozenset({0, 2, 3})  # commands that judge valid input with a judge that always fails


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="polyjudge-fuzz-cli-") as d:
        yield Path(d)


def _files(d: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _replay(d: Path) -> str:
    (d / "recording.jsonl").write_bytes(b"")
    return f"replay:{d / 'recording.jsonl'}"


JUDGE_INPUTS = {"in.jsonl": S.ITEMS_JSONL, "in.tsv": S.ITEMS_TSV, "in.csv": S.ITEMS_CSV,
                "mqm_ted_ende.tsv": S.MQM_TSV, "annotations.tsv": S.MQM_TSV}


@pytest.mark.parametrize("name", list(JUDGE_INPUTS))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_judge_dry_run(root: Path, name: str, data: st.DataObject) -> None:
    d = fresh_dir(root)
    _files(d, {name: data.draw(hostile(JUDGE_INPUTS[name]))})
    count(f"judge --dry-run [{name}]")
    check_cli(["judge", d / name, "-o", d / "run", "--judge", _replay(d), "--dry-run", "-q"])


@fuzz_settings(EXAMPLES)
@given(which=st.sampled_from(["s.txt", "t.txt", "r.txt"]), data=st.data())
def test_score(root: Path, which: str, data: st.DataObject) -> None:
    d = fresh_dir(root)
    files = {"s.txt": S.PARALLEL_SRC, "t.txt": S.PARALLEL_TGT, "r.txt": S.PARALLEL_TGT}
    files[which] = data.draw(hostile(files[which]))
    _files(d, files)
    count("score")
    check_cli(["score", "-s", d / "s.txt", "-t", d / "t.txt", "-r", d / "r.txt", "--src-lang", "en",
               "--tgt-lang", "de", "--judge", _replay(d), "-q"], JUDGED)


@fuzz_settings(EXAMPLES)
@given(content=hostile(S.MQM_TSV))
def test_human_mqm(root: Path, content: bytes) -> None:
    d = fresh_dir(root)
    _files(d, {"mqm.tsv": content})
    count("human-mqm")
    check_cli(["human-mqm", d / "mqm.tsv", "-O", d / "out", "--quirks"])


META_EVAL = {
    "human table": ("human.tsv", {"human.tsv": S.SCORES_TSV, "metric.tsv": S.METRIC_TSV}),
    "metric table": ("metric.tsv", {"human.tsv": S.SCORES_TSV, "metric.tsv": S.METRIC_TSV}),
    "human MQM": ("human.tsv", {"human.tsv": S.MQM_TSV, "metric.tsv": S.METRIC_FOR_MQM}),
}


@pytest.mark.parametrize("case", list(META_EVAL))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_meta_eval(root: Path, case: str, data: st.DataObject) -> None:
    which, files = META_EVAL[case]
    d = fresh_dir(root)
    _files(d, {**files, which: data.draw(hostile(files[which]))})
    count(f"meta-eval [{case}]")
    check_cli(["meta-eval", "--human", d / "human.tsv", "--metric", f"m={d / 'metric.tsv'}", "-k", "0",
               "--lp", "en-de"])


SPAN_F1 = {
    "gold jsonl": ("gold.jsonl", {"gold.jsonl": S.SPAN_GOLD_JSONL, "pred.jsonl": S.SPAN_PRED_JSONL}),
    "pred jsonl": ("pred.jsonl", {"gold.jsonl": S.SPAN_GOLD_JSONL, "pred.jsonl": S.SPAN_PRED_JSONL}),
    "gold MQM": ("gold.tsv", {"gold.tsv": S.MQM_TSV, "pred.jsonl": S.SPAN_PRED_JSONL}),
}


@pytest.mark.parametrize("case", list(SPAN_F1))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_span_f1(root: Path, case: str, data: st.DataObject) -> None:
    which, files = SPAN_F1[case]
    gold, pred = sorted(files)
    d = fresh_dir(root)
    _files(d, {**files, which: data.draw(hostile(files[which]))})
    count(f"span-f1 [{case}]")
    check_cli(["span-f1", "-g", d / gold, "--pred", d / pred, "--lp", "en-de"])


RUN_FILES = S.run_files()


@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_report_on_a_damaged_run_directory(root: Path, data: st.DataObject) -> None:
    files = dict(RUN_FILES)
    name = data.draw(st.sampled_from(sorted(files)))
    files[name] = data.draw(hostile_json(json.loads(files[name])) if name.endswith(".json")
                            else hostile(files[name]))
    d = fresh_dir(root)
    _files(d / "run", files)
    count("report RUN_DIR")
    check_cli(["report", d / "run", "-o", d / "report.html", "--bootstrap", "100"])


STUDIES = {"--metaeval": S.METAEVAL_OUTPUT, "--consistency": S.CONSISTENCY_OUTPUT,
           "--validation": S.VALIDATION_OUTPUT}


@pytest.mark.parametrize("option", list(STUDIES))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_report_study_files(root: Path, option: str, data: st.DataObject) -> None:
    d = fresh_dir(root)
    _files(d, {"study.json": data.draw(hostile_json(STUDIES[option]))})
    count(f"report {option}")
    check_cli(["report", option, d / "study.json", "-o", d / "report.html"])


VALIDATE = {"task.json": json.dumps(S.TASK).encode(), "human.jsonl": S.RATINGS_JSONL, "judge.tsv": S.RATINGS_TSV,
            "reverse.json": json.dumps(S.REVERSE_MATRIX).encode()}


@pytest.mark.parametrize("which", list(VALIDATE))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_validate(root: Path, which: str, data: st.DataObject) -> None:
    files = dict(VALIDATE)
    files[which] = data.draw(hostile_json(json.loads(files[which])) if which.endswith(".json")
                             else hostile(files[which]))
    d = fresh_dir(root)
    _files(d, files)
    count(f"validate [{which}]")
    check_cli(["validate", "--task", d / "task.json", "--human", d / "human.jsonl", "--judge",
               f"j={d / 'judge.tsv'}", "--reverse-matrix", d / "reverse.json"])


@pytest.mark.parametrize("name,sep", [("ratings.tsv", b"\t"), ("ratings.csv", b",")])
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_agreement(root: Path, name: str, sep: bytes, data: st.DataObject) -> None:
    d = fresh_dir(root)
    _files(d, {name: data.draw(hostile(S.AGREEMENT_TSV.replace(b"\t", sep)))})
    count(f"agreement [{name}]")
    check_cli(["agreement", d / name])


@fuzz_settings(EXAMPLES)
@given(content=hostile(S.MGSM))
def test_consistency_data(root: Path, content: bytes) -> None:
    d = fresh_dir(root)
    _files(d, {"mgsm/mgsm_en.tsv": S.MGSM, "mgsm/mgsm_de.tsv": content})
    count("consistency --dataset mgsm")
    check_cli(["consistency", "--dataset", "mgsm", "--data-dir", d / "mgsm", "--languages", "en,de",
               "--judge", _replay(d), "-q", "-o", d / "out"], JUDGED)


# Human scores for the fixture run's segments (same system, doc_id, seg_id), so an undamaged run is valid input.
HUMAN_FOR_RUN = b"system\tdoc_id\tseg_id\tscore\n" + b"".join(
    b"\t".join(row.split(b"\t")[:3]) + f"\t{k % 7}\n".encode()
    for k, row in enumerate(RUN_FILES["segments.tsv"].splitlines()[1:]))

RUN_CONSUMERS = {
    "variability": lambda run, d: ["variability", run, "--out", d / "var.tsv"],
    "meta-eval --metric RUN": lambda run, d: ["meta-eval", "--human", d / "human.tsv", "--metric", f"judge={run}",
                                              "-k", "0", "--lp", "de-en"],
    "span-f1 --pred RUN": lambda run, d: ["span-f1", "-g", d / "gold.jsonl", "--pred", run, "--lp", "de-en"],
}


@pytest.mark.parametrize("command", list(RUN_CONSUMERS))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_commands_reading_a_damaged_run_directory(root: Path, command: str, data: st.DataObject) -> None:
    files = dict(RUN_FILES)
    for name in data.draw(st.lists(st.sampled_from(sorted(files)), min_size=1, max_size=2, unique=True)):
        files[name] = data.draw(hostile_json(json.loads(files[name])) if name.endswith(".json")
                                else hostile(files[name]))
    d = fresh_dir(root)
    _files(d / "run", files)
    _files(d, {"human.tsv": HUMAN_FOR_RUN, "gold.jsonl": S.SPAN_GOLD_JSONL})
    count(command)
    check_cli(RUN_CONSUMERS[command](d / "run", d))


@fuzz_settings(EXAMPLES)
@given(content=hostile(S.ITEMS_JSONL))
def test_probe(root: Path, content: bytes) -> None:
    d = fresh_dir(root)
    _files(d, {"in.jsonl": content})
    count("probe")
    check_cli(["probe", d / "in.jsonl", "--kind", "repeat", "--repeats", "2", "--judge", _replay(d), "-q",
               "-o", d / "out"], JUDGED)
