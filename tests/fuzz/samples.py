"""Small valid files of every format the fuzz suite damages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RUN_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run-0.1.0"


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return ("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n").encode()


ITEMS_JSONL = _jsonl([
    {"src": "Hello world.", "tgt": "Hallo Welt.", "ref": "Hallo, Welt.", "src_lang": "en", "tgt_lang": "de",
     "doc_id": "d1", "seg_id": "1", "system": "A", "note": "x"},
    {"src": "Good night.", "tgt": "Gute Nacht.", "src_lang": "en", "tgt_lang": "de", "doc_id": "d1",
     "seg_id": 2, "system": "A"},
    {"src": "Hello world.", "tgt": "Hallo Erde.", "src_lang": "en", "tgt_lang": "de", "doc_id": "d1",
     "seg_id": "1", "system": "B"},
])
ITEMS_TSV = (b"src\ttgt\tref\tsrc_lang\ttgt_lang\tdoc_id\tseg_id\tsystem\n"
             b"Hello world.\tHallo Welt.\tHallo, Welt.\ten\tde\td1\t1\tA\n"
             b"Good \"night\".\tGute Nacht.\t\ten\tde\td1\t2\tA\n"
             b"Hello world.\tHallo Erde.\t\ten\tde\td1\t1\tB\n")
ITEMS_CSV = (b"src,tgt,ref,src_lang,tgt_lang,doc_id,seg_id,system\n"
             b"\"Hello, world.\",Hallo Welt.,,en,de,d1,1,A\n"
             b"\"Good \"\"night\"\".\",Gute Nacht.,,en,de,d1,2,A\n"
             b"Hello world.,\"Hallo\nErde.\",,en,de,d1,1,B\n")
MQM_TSV = (b"system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment\n"
           b"A\ttalk.1\t1\t1\tr1\tHello world.\tHallo <v>Welt</v>.\tAccuracy/Mistranslation\tMajor\t\n"
           b"A\ttalk.1\t1\t1\tr1\tHello world.\t<v>Hallo</v> Welt.\tFluency/Punctuation\tMinor\tcomma\n"
           b"A\ttalk.1\t2\t2\tr1\tGood night.\tGute Nacht.\tNo-error\tNo-error\t\n"
           b"B\ttalk.1\t1\t1\tr2\t<v>Hello</v> world.\tWelt.\tAccuracy/Omission\tCritical\t\n"
           b"B\ttalk.1\t2\t2\tr2\tGood night.\tGute <v>Nacht.\tStyle/Awkward\tMinor\n")
PARALLEL_SRC = b"Hello world.\nGood night.\n"
PARALLEL_TGT = b"Hallo Welt.\nGute Nacht.\n"

TASK = {"name": "toxicity", "instruction": "Rate the toxicity.",
        "options": [{"label": "Very toxic", "description": "hateful"}, "Toxic", "Not toxic"],
        "response_sets": [["Very toxic"], ["Toxic"], ["Not toxic"], ["Very toxic", "Toxic"], "BC"],
        "letters": ["A", "B", "C"]}
TASK_TOML = (b'name = "toxicity"\noptions = ["Very toxic", "Toxic", "Not toxic"]\n'
             b'response_sets = "singletons"\n')
RATINGS_JSONL = _jsonl([{"item": f"i{i}", "forced_choice": ["A", "B", "C"][: 1 + i % 3],
                         "response_sets": ["AB", "C"], "fc_counts": [1, 0, 2],
                         "rs_counts": [0, 1, 0, 1, 1]} for i in range(6)])
RATINGS_TSV = b"item\tprotocol\tanswer\n" + b"".join(
    f"i{i}\tfc\t{'ABC'[i % 3]}\ni{i}\trs\t{['AB', 'BC', 'C'][i % 3]}\n".encode() for i in range(6))
REVERSE_MATRIX = [[1, 0, 0], [0, 1, 0], [0, 0, 0.8], [0, 0, 0], [0, 0, 0.2]]

AGREEMENT_TSV = b"item_id\tlanguage\ttask\tmetric\trater\tkind\trating\n" + b"".join(
    f"q{i}\tde\tqa\tLA\th{r}\thuman\t{(i + r) % 3}\n".encode() for i in range(6) for r in range(3)) + b"".join(
    f"q{i}\tde\tqa\tLA\tgpt\tjudge\t{i % 3}\n".encode() for i in range(6))

METAEVAL_OUTPUT = {
    "task": "wmt24", "permutations": 0,
    "language_pairs": {"en-de": {"Good": {"sys_spa": 0.9, "sys_pearson": 0.8, "seg_pearson": 0.5,
                                          "seg_acc_t": 0.6},
                                 "Bad": {"sys_spa": 0.5, "sys_pearson": 0.1, "seg_pearson": 0.2,
                                         "seg_acc_t": 0.4}}},
    "ranking": [{"metric": m, "rank": r, "cluster": r, "average": a,
                 "columns": [{"lp": "en-de", "level": "seg", "statistic": "acc_t", "value": a, "rank": r,
                              "cluster": r}]} for m, r, a in (("Good", 1, 0.7), ("Bad", 2, 0.3))]}
CONSISTENCY_OUTPUT = {
    "reference": "en",
    "rows": [{"judge": "m", "task": "qa", "criterion": "correct", "subset": s, "fleiss_kappa": 0.3,
              "n_complete": 10, "accuracy": 0.8, "languages": ["en", "de", "sw", "te"],
              "per_language": {lang: {"cohen_vs_ref": k} for lang, k in
                               (("en", 1.0), ("de", 0.5), ("sw", 0.2), ("te", None))}}
             for s in ("all", "gold")]}
VALIDATION_OUTPUT = {
    "task": "toxicity", "option": "Toxic", "k": 1, "n_items": 40, "judges": ["good", "bad"],
    "rows": [{"beta": b, "tau": 0.5, "definition": d, "selected": sel, "consistency": 0.8, "abs_bias": 0.1,
              "consistency_loss": -0.05, "bias_excess": 0.02}
             for b in (0.0, 0.2) for d, sel in (("hit_rate (h/h)", "good"), ("[best consistency]", "good"),
                                                ("MSE (srs/srs)", "bad"))],
    "per_judge": {f"beta={b},tau=0.5": {"good": {"consistency": 0.8, "bias": -0.1, "hit_rate (h/h)": 0.7},
                                        "bad": {"consistency": 0.4, "bias": 0.3, "hit_rate (h/h)": 0.2}}
                  for b in ("0", "0.2")},
    "human_prevalence": {"beta=0": 0.3}, "failures": {"good": 0, "bad": 2}}

XQUAD = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "Some context.", "qas": [
    {"id": f"q{i}", "question": f"Question {i}?", "answers": [{"text": f"answer {i}", "answer_start": 0}]}
    for i in range(3)]}]}]}
MGSM = b"One plus one?\t2\nTwo plus two?\t4\nThree plus three?\t6\n"

SPAN_GOLD_JSONL = _jsonl([
    {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de", "hypothesis": "0123456789",
     "spans": [{"start": 0, "end": 4, "severity": "major"}]},
    {"system": "A", "doc_id": "d", "seg_id": "2", "lp": "en-de", "hypothesis": "abcdef", "spans": []}])
SPAN_PRED_JSONL = _jsonl([
    {"system": "A", "doc_id": "d", "seg_id": "1", "lp": "en-de", "spans": [{"start": 0, "end": 2,
                                                                           "severity": "major"}]},
    {"system": "A", "doc_id": "d", "seg_id": "2", "lp": "en-de", "spans": []}])

SCORES_TSV = b"system\tseg_id\tscore\n" + b"".join(
    f"S{s}\t{i}\t{(s * 7 + i * 3) % 10 / 10}\n".encode() for s in range(4) for i in range(6))
METRIC_FOR_MQM = b"system\tseg_id\tscore\nA\t1\t0.2\nA\t2\t0.9\nB\t1\t0.1\nB\t2\t0.5\n"
METRIC_TSV = b"system\tseg_id\tscore\n" + b"".join(
    f"S{s}\t{i}\t{(s * 5 + i) % 10 / 10}\n".encode() for s in range(4) for i in range(6))


def run_files() -> dict[str, bytes]:
    """The fixture run directory (written by polyjudge 0.1.0), file name -> bytes."""
    return {str(p.relative_to(RUN_FIXTURE)): p.read_bytes() for p in sorted(RUN_FIXTURE.rglob("*")) if p.is_file()}
