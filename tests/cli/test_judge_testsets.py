"""`polyjudge judge` on test sets as the field keeps them, against the scripted OpenAI-compatible server.

Round trips: an mt-metrics-eval folder and a WMT25 task-1 TSV written from the
shared TED MQM data are judged over real HTTP; the run directory's items keep
order, documents (the prompt shows the right document), languages and keys.
"""

from __future__ import annotations

import json

import pytest

from polyjudge.api import RunDir, origin_testset
from tests.data.wmt_testsets import SYSTEMS, ted_sample, write_mtme, write_wmt25
from tests.helpers.cli import cli
from tests.helpers.extras import needs_extra
from tests.helpers.openai_server import ScriptedServer

NO_ERRORS = json.dumps({"errors": {"critical": [], "major": [], "minor": []}})


def judge_with(srv, *args):
    return cli("judge", *args, "--backend", "openai", "-m", "m", "--base-url", srv.base_url, "-q")


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture()
def sample():
    return ted_sample()


def test_mtme_test_set_round_trip_keeps_order_documents_and_languages(tmp_path, sample, capsys):
    root = write_mtme(tmp_path / "mtme", sample)
    run = tmp_path / "run"
    with ScriptedServer(lambda body: NO_ERRORS) as srv:
        assert judge_with(srv, root, "--lp", "en-de", "-p", "mqm", "--runs", "1", "--exclude-systems", "HuaweiTSC",
                          "-o", run) == 0, capsys.readouterr().err
        requests = srv.requests
    items = read_jsonl(run / "items.jsonl")
    systems = ["Facebook-AI", "Online-W", "refA"]
    assert [(it["system"], it["seg_id"], it["doc_id"]) for it in items] == \
        [(s, str(k + 1), sample.docs[k]) for s in systems for k in range(6)]
    assert all(it["src_lang"] == "en" and it["tgt_lang"] == "de" and it["domain"] == "ted" for it in items)
    assert items[0]["testset"]["systems"] == systems and items[0]["testset"]["n_segments"] == 6
    assert len(requests) == len({(it["seg_id"], it["tgt"]) for it in items})  # one request per distinct segment
    # Document context: a talk.3 segment's prompt holds the talk.3 sources and none of talk.1's.
    talk3 = [r for r in requests if sample.sources[4] in r["messages"][-1]["content"]]
    system_text = "\n".join(m["content"] for m in talk3[0]["messages"][:-1])
    assert all(s in system_text for s in sample.sources[3:]) and sample.sources[0] not in system_text
    assert '"target_language": "German"' in talk3[0]["messages"][-1]["content"]
    segments = (run / "segments.tsv").read_text(encoding="utf-8").splitlines()
    assert segments[1].split("\t")[:3] == ["Facebook-AI", "talk.1", "1"]
    # what an exporter gets back from the run directory
    info = origin_testset(RunDir(run).items)
    assert info is not None and (info.format, info.lp, info.systems, info.n_segments, info.ref) == \
        ("mtme", "en-de", tuple(systems), 6, "refA")
    assert info.all_systems == ("Facebook-AI", "HuaweiTSC", "Online-W", "refA") and info.documents


def test_with_reference_uses_the_standard_reference_and_names_it(tmp_path, sample, capsys):
    root = write_mtme(tmp_path / "mtme", sample)

    def shows_reference(requests, ref):
        """Every request shows the reference of its own segment."""
        texts = [r["messages"][-1]["content"] for r in requests]
        return all(any(sample.outputs[ref][k] in t for k, src in enumerate(sample.sources) if src in t)
                   for t in texts)

    with ScriptedServer(lambda body: NO_ERRORS) as srv:
        assert judge_with(srv, root, "--lp", "en-de", "-p", "mqm", "--runs", "1", "--with-reference",
                          "-o", tmp_path / "a") == 0
        first = list(srv.requests)
        assert judge_with(srv, root, "--lp", "en-de", "-p", "mqm", "--runs", "1", "--with-reference", "--ref", "refB",
                          "--systems", "Online-W", "-o", tmp_path / "b") == 0
        second = srv.requests[len(first):]
    assert shows_reference(first, "refA") and shows_reference(second, "refB")
    assert not shows_reference(second, "refA")
    err = capsys.readouterr().err
    assert "ref:refA" in err and "ref:refB" in err  # the signatures name the reference used
    assert {it["system"] for it in read_jsonl(tmp_path / "a" / "items.jsonl")} == set(SYSTEMS)  # refA not judged
    assert sorted(p.name for p in (tmp_path / "a" / "mtme").iterdir())[0].startswith("polyjudge-mqm-refA.")
    assert cli("judge", root, "--lp", "en-de", "-p", "mqm", "--with-reference", "--protocol-option",
               "ref_name=refC", "-o", tmp_path / "c", "--backend", "openai", "-m", "m") == 2
    assert "ref_name=refC contradicts" in capsys.readouterr().err


def test_bad_test_set_choices_exit_2_with_one_message(tmp_path, sample, capsys):
    root = write_mtme(tmp_path / "mtme", sample)
    for args, message in ((["--lp", "de-en"], "no sources/de-en.txt"),
                          (["--systems", "nope"], "no system 'nope'"),
                          (["--ref", "refZ"], "no reference 'refZ'")):
        assert cli("judge", root, *args, "-o", tmp_path / "r", "--backend", "openai", "-m", "m") == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_wmt25_task1_tsv_keeps_its_keys_through_the_run(tmp_path, sample):
    path = write_wmt25(tmp_path / "wmt25.tsv", sample)
    with ScriptedServer(lambda body: json.dumps({"score": 80})) as srv:
        assert judge_with(srv, path, "-o", tmp_path / "run") == 0
        assert all("German" in r["messages"][-1]["content"] for r in srv.requests)
    items = read_jsonl(tmp_path / "run" / "items.jsonl")
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    assert [(it["doc_id"], it["seg_id"], it["src_lang"], it["tgt_lang"], it["set_id"], it["system"],
             it["domain_name"], it["method"]) for it in items] == \
        [(r[0], r[1], r[2], r[3], r[4], r[5], r[9], r[10]) for r in rows]


def test_columns_flag_reads_the_mqm_human_evaluation_layout(tmp_path, capsys):
    path = tmp_path / "mqm.csv"
    path.write_text("lp,src,mt,ref,system\nen-de,Hello.,Hallo.,Hallo!,A\nen-de,Bye.,Tschüss.,Tschüs!,B\n",
                    encoding="utf-8")
    assert cli("judge", path, "-o", tmp_path / "r", "--backend", "openai", "-m", "m") == 2
    assert "--columns tgt=COLUMN" in capsys.readouterr().err
    assert cli("judge", path, "--columns", "tgt=hyp", "-o", tmp_path / "r", "--backend", "openai", "-m", "m") == 2
    err = capsys.readouterr().err
    assert f"{path}:1, field '--columns'" in err and "column 'hyp'" in err
    with ScriptedServer(lambda body: json.dumps({"score": 70})) as srv:
        assert judge_with(srv, path, "--columns", "tgt=mt", "-o", tmp_path / "run") == 0
    items = read_jsonl(tmp_path / "run" / "items.jsonl")
    assert [(it["tgt"], it["src_lang"], it["tgt_lang"], it["system"]) for it in items] == \
        [("Hallo.", "en", "de", "A"), ("Tschüss.", "en", "de", "B")]


def test_lp_gives_languages_to_items_without_them(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"src": "a", "tgt": "b"}) + "\n", encoding="utf-8")
    with ScriptedServer(lambda body: json.dumps({"score": 70})) as srv:
        assert judge_with(srv, path, "--lp", "en-cs_CZ", "-o", tmp_path / "run") == 0
        assert "Czech" in srv.requests[0]["messages"][-1]["content"]
    (item,) = read_jsonl(tmp_path / "run" / "items.jsonl")
    assert (item["src_lang"], item["tgt_lang"]) == ("en", "cs_CZ")


@needs_extra("datasets")
def test_hugging_face_dataset_on_disk(tmp_path):
    import datasets
    datasets.Dataset.from_dict({"lp": ["en-de"], "src": ["Hello."], "mt": ["Hallo."], "system": ["A"]}) \
        .save_to_disk(str(tmp_path / "ds"))
    with ScriptedServer(lambda body: json.dumps({"score": 90})) as srv:
        assert judge_with(srv, f"hf:{tmp_path / 'ds'}", "--columns", "tgt=mt", "-o", tmp_path / "run") == 0
    (item,) = read_jsonl(tmp_path / "run" / "items.jsonl")
    assert (item["tgt"], item["tgt_lang"]) == ("Hallo.", "de")


def test_score_takes_one_translation_file_per_system(tmp_path, capsys):
    (tmp_path / "src.txt").write_text("Hello.\nBye.\n", encoding="utf-8")
    (tmp_path / "good.txt").write_text("Hallo.\nTschüss.\n", encoding="utf-8")
    (tmp_path / "bad.txt").write_text("Brot.\nTschüss.\n", encoding="utf-8")

    def reply(body):
        return json.dumps({"score": 20 if "Brot" in body["messages"][-1]["content"] else 90})

    good, bad = str(tmp_path / "good.txt"), str(tmp_path / "bad.txt")
    with ScriptedServer(reply) as srv:
        args = ["score", "-s", tmp_path / "src.txt", "-t", good, "-t", bad, "--src-lang", "en", "--tgt-lang", "de",
                "--backend", "openai", "-m", "m", "--base-url", srv.base_url, "-q"]
        assert cli(*args, "--to-json", tmp_path / "o.json") == 0
        lines = capsys.readouterr().out.splitlines()
        assert cli(*args, "--format", "tsv") == 0
        tsv = capsys.readouterr().out.splitlines()
    assert lines == [f"{good}\tSegment 0\tscore: 90.0000", f"{good}\tSegment 1\tscore: 90.0000",
                     f"{good}\tscore: 90.0000", f"{bad}\tSegment 0\tscore: 20.0000",
                     f"{bad}\tSegment 1\tscore: 90.0000", f"{bad}\tscore: 55.0000"]
    assert tsv == ["system\tsegment\tscore", "good\t0\t90.0", "good\t1\t90.0", "bad\t0\t20.0", "bad\t1\t90.0"]
    data = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert list(data) == [good, bad] and [r["COMET"] for r in data[bad]] == [20.0, 90.0]  # comet-score's keys
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "good.txt").write_text("x\ny\n", encoding="utf-8")
    assert cli("score", "-s", tmp_path / "src.txt", "-t", good, "-t", tmp_path / "other" / "good.txt",
               "--src-lang", "en", "--tgt-lang", "de", "--backend", "openai", "-m", "m") == 2
    assert "name the same system 'good'" in capsys.readouterr().err


def test_systems_flags_filter_any_input_and_ref_needs_a_test_set(tmp_path, sample, capsys):
    path = write_wmt25(tmp_path / "wmt25.tsv", sample)
    with ScriptedServer(lambda body: json.dumps({"score": 80})) as srv:
        assert judge_with(srv, path, "--systems", "Online-W,HuaweiTSC", "--exclude-systems", "HuaweiTSC",
                          "-o", tmp_path / "run") == 0
    assert {it["system"] for it in read_jsonl(tmp_path / "run" / "items.jsonl")} == {"Online-W"}
    for args, message in ((["--systems", "nope"], "no system 'nope' in the input"),
                          (["--ref", "refA"], "names a reference of an mt-metrics-eval test set")):
        assert cli("judge", path, *args, "-o", tmp_path / "r2", "--backend", "openai", "-m", "m") == 2
        assert message in capsys.readouterr().err
