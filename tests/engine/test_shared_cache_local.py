"""Issue 43: the embedded judge's answers are kept in the shared response cache like any other judge's,
under its weights' SHA-256 and the settings that change its answers."""

import json
import shutil
import time

import pytest

from polyjudge.backends.base import ANSWERS_IDENTITY
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.engine.caching import judge_scope, scopes_of
from tests.backends.test_llamacpp import smollm2_path
from tests.helpers.cli import cli


def _info(path, n_ctx=2048):
    pytest.importorskip("xllamacpp")
    from polyjudge.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend.deferred(JudgeSpec("llamacpp", str(path)), BackendSettings(n_ctx=n_ctx))


def test_the_scope_changes_with_the_weights_and_the_settings_not_the_name(tmp_path):
    original = smollm2_path()
    info = _info(original)
    assert f"sha256:{_sha256(original)}" in info[ANSWERS_IDENTITY]
    other = tmp_path / "elsewhere" / original.name  # another GGUF of the same name (one byte more)
    other.parent.mkdir()
    shutil.copyfile(original, other)
    with open(other, "ab") as fh:
        fh.write(b"\0")
    changed = _info(other)
    assert changed["model"] == info["model"]  # the same judge name, so the same request keys
    assert judge_scope(changed) != judge_scope(info)  # ... but never the same cache entries
    assert judge_scope(_info(original, n_ctx=4096)) != judge_scope(info)
    assert judge_scope(_info(original)) == judge_scope(info)
    # a free judge is served when it says what its answers depend on; a replay file never is
    assert scopes_of(["m", "r"], [info, {"backend": "replay"}], free={"m", "r"}) == {"m": judge_scope(info)}


def _sha256(path):
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_second_folder_sends_nothing_to_the_embedded_model(tmp_path, capsys):
    pytest.importorskip("xllamacpp")
    model = smollm2_path()
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src": f"The cat sleeps {i}.", "tgt": f"Die Katze schläft {i}.",
                                       "seg_id": str(i), "system": "s"}) + "\n" for i in range(2)), encoding="utf-8")
    args = ["judge", inp, "--judge", f"llamacpp:{model}", "--lp", "en-de", "--n-ctx", "2048", "-q",
            "--cache", tmp_path / "cache", "--max-failure-rate", "1"]  # a tiny model: answers may not parse
    started = time.monotonic()
    assert cli(*args, "-o", tmp_path / "first") == 0
    first_s = time.monotonic() - started
    assert "sent now: 2, from store: 0, from cache: 0" in capsys.readouterr().err
    started = time.monotonic()
    assert cli(*args, "-o", tmp_path / "second") == 0
    second_s = time.monotonic() - started
    assert "sent now: 0, from store: 0, from cache: 2" in capsys.readouterr().err  # today: sent now: 2
    print(f"first folder {first_s:.1f}s, second folder {second_s:.1f}s")
    rows = [(tmp_path / d / "judgments.jsonl").read_text(encoding="utf-8").splitlines() for d in ("first", "second")]
    assert [json.loads(x)["raw_text"] for x in rows[0]] == [json.loads(x)["raw_text"] for x in rows[1]]
    assert (tmp_path / "first" / "segments.tsv").read_bytes() == (tmp_path / "second" / "segments.tsv").read_bytes()
