"""The outputs of a run are what they were before the engine was made faster (issue 35): every file of
a run directory, written by ``judge`` from the scripted server's answers, has the sha256 it had with the
code before that work (polyjudge at commit 6b09eb6, computed there with this very file).

Only what differs between two sendings of the same answers is left out: the server's URL (its port),
each answer's latency, the store, and the manifest's times, paths and package versions (the counts,
tokens, cost and template hash it records are kept)."""

import hashlib
import json
from pathlib import Path

import pytest

from polyjudge.api import JudgeConfig, judge
from polyjudge.data.records import Item
from tests.engine.helpers import FAST_RETRY, score_of
from tests.helpers.openai_server import Reply, ScriptedServer

SKIPPED = {"store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "store.sqlite-journal", ".polyjudge-owned.json",
           "manifest.json"}
MANIFEST_KEPT = ("counts", "tokens", "tokens_by_judge", "cost_usd", "failures", "template_hash", "protocol")


def documents():
    return [Item(src=f"source {d}.{s} ünïcode «x»", tgt=f"{system} translation {d}.{s} 😀", src_lang="en",
                 tgt_lang="de", doc_id=f"doc{d}", seg_id=str(s), system=system)
            for system in ("A", "B") for d in range(3) for s in range(4)]


def answer(body):
    """A deterministic judge: DA scores and MQM errors that vary with the item and the run, a refusal now
    and then and an answer that is not JSON (a recorded failure, never a score)."""
    score = score_of(body)
    if score % 23 == 0:
        return Reply(content="I cannot judge this.")
    if "errors" in json.dumps(body.get("response_format") or {}) or "MQM" in body["messages"][0]["content"]:
        severities = ("minor", "major", "critical")
        errors = {s: [] for s in severities}
        for k in range(score % 4):
            errors[severities[(score + k) % 3]].append({"type": "accuracy/mistranslation", "desc": f"word {k}"})
        return Reply(content=json.dumps({"errors": errors}))
    return Reply(content=json.dumps({"score": score}))


def digest(run_dir: Path, url: str) -> dict[str, str]:
    out = {}
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file() and p.name not in SKIPPED):
        text = path.read_text(encoding="utf-8").replace(url, "URL")
        if path.name == "judgments.jsonl":
            rows = [json.loads(line) for line in text.splitlines()]
            text = "\n".join(json.dumps({k: v for k, v in r.items() if k != "latency_s"}, sort_keys=True,
                                        ensure_ascii=False) for r in rows)
        out[str(path.relative_to(run_dir))] = hashlib.sha256(text.encode()).hexdigest()
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8").replace(url, "URL"))
    kept = json.dumps({k: manifest.get(k) for k in MANIFEST_KEPT}, sort_keys=True)
    out["manifest.json (counts, tokens, cost, template)"] = hashlib.sha256(kept.encode()).hexdigest()
    return out


PINNED = {  # computed with the code before issue 35's work (commit 6b09eb6), by this file
    "da": {
        "aggregates.tsv":
            "7bf5b9cda87655bef5040cb32c6d69cea5e6343bf0a8a59a37f84331ab1e67b0",
        "items.jsonl":
            "fc0e229d0d839c59953794fbc617afc9114db49128678be0d73f4575bdeff168",
        "judgments.jsonl":
            "047e9b26d4e3e7dc40b72319e5128f618dfcd8e6816c91275b91d3c38922057a",
        "manifest.json (counts, tokens, cost, template)":
            "c33a138b241ded7aeb6ab943cc3035de45da3c17db29f16bc1813a72f5d85125",
        "mtme/polyjudge-da-src.doc.score":
            "9049afc2cacaba6f4334cd9d374b47b0c3cecaa31a3473bbea1aecf16b006eba",
        "mtme/polyjudge-da-src.seg.score":
            "2bbdbbbc51d592fe475c12c487dfbd71d955694da6dfd000f55b3231cfa1181a",
        "mtme/polyjudge-da-src.sys.score":
            "ddee1be65e417c611739a61e49363680c3befdf7fafb642d4fefe73e6d13e6f3",
        "segments.tsv":
            "d73b85bdc5fe4b973ba1ee8b8fc5653c051099ed3e25916af4da2a424c9d6814",
        "systems.tsv":
            "28fab49cdf5b6466abdaee3dcb3236b17c41515fc9af554b65bbeb41bfc031d9",
    },
    "mqm": {
        "aggregates.tsv":
            "63c677ed86115af3114c96feadbc141f78931fffe957889964767bd06c9fd2f2",
        "items.jsonl":
            "fc0e229d0d839c59953794fbc617afc9114db49128678be0d73f4575bdeff168",
        "judgments.jsonl":
            "0e4fcd996cbc41cd0f425bb89efa1ac66a232a720e9ce81b791a8e4998155f7b",
        "manifest.json (counts, tokens, cost, template)":
            "5f0b06a8861c5187dc8a883819f5f5fe6cd9e6aa56c108c67cc4a60d42c9ed04",
        "mtme/polyjudge-mqm-src.doc.score":
            "72a9f0b5fcea5dbc9e873bfeecbdc057ffa374da0e41c39f566a6f8ea44cbbef",
        "mtme/polyjudge-mqm-src.seg.score":
            "e78ab9efc70d0db6e348c7e6c0d2cc168dd4e795e671d4156d87475bb2f84dba",
        "mtme/polyjudge-mqm-src.sys.score":
            "a5804b6907e7b2a6372a9e095741417f4d47137654a899f483cf51ac79798a54",
        "segments.tsv":
            "8b2a312056552aa0d18b7ad5f857779ad04c94b5e459bdd5574f535ec4a2bb1a",
        "systems.tsv":
            "22aae65f39b47d622626271691516c053b775c93d8bc38afe7c3d50da406591d",
    },
}


@pytest.mark.parametrize("protocol", ["da", "mqm"])
def test_every_output_file_is_what_it_was(tmp_path, protocol):
    with ScriptedServer(answer) as srv:
        judge(documents(), JudgeConfig(protocol=protocol, runs=3, concurrency=4, retry=FAST_RETRY,
                                       judges=(f"openai:m@{srv.base_url}",)), out=tmp_path / "run")
        got = digest(tmp_path / "run", srv.base_url)
    print(json.dumps({protocol: got}, indent=1, sort_keys=True))
    assert got == PINNED[protocol]
