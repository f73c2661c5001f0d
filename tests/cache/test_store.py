"""The cache file on its own: entries round-trip, first answer wins, secrets masked, pruning bounds it."""

import sqlite3
import time

import pytest

from polyjudge.cache import CachedAnswer, ResponseCache, parse_size, prune
from polyjudge.cache.location import cache_dir, default_cache_dir, user_cache_root
from polyjudge.data.errors import InputError


def entry(key, text="answer", **kw):
    return CachedAnswer(key=key, model="m", text=text, finish_reason="stop", **kw)


def test_entries_round_trip_by_scope_and_key(tmp_path):
    with ResponseCache(tmp_path / "c") as cache:
        a = entry("k1", "é 😀", prompt_tokens=7, completion_tokens=3, cached_prompt_tokens=2, reasoning_tokens=1,
                  latency_s=0.25, reasoning="thought", logprobs='[["a", -0.5, []]]', usage_note='{"x": 1}')
        assert cache.put_many("openai@http://a/v1", [a, entry("k2")]) == 2
        got = cache.get_many("openai@http://a/v1", ["k1", "k2", "k3"])
        assert set(got) == {"k1", "k2"}
        assert got["k1"].text == "é 😀" and got["k1"].usage_note == '{"x": 1}' and got["k1"].latency_s == 0.25
        assert (got["k1"].prompt_tokens, got["k1"].completion_tokens, got["k1"].cached_prompt_tokens,
                got["k1"].reasoning_tokens) == (7, 3, 2, 1)
        assert cache.get_many("openai@http://b/v1", ["k1"]) == {}  # another endpoint: another answer
        assert cache.has_many("openai@http://a/v1", ["k1", "k9"]) == {"k1"}


def test_the_first_answer_stays(tmp_path):
    with ResponseCache(tmp_path / "c") as cache:
        assert cache.put_many("s", [entry("k", "first")]) == 1
        assert cache.put_many("s", [entry("k", "second")]) == 0
        assert cache.get_many("s", ["k"])["k"].text == "first"


def test_many_keys_are_looked_up_in_chunks(tmp_path):
    with ResponseCache(tmp_path / "c") as cache:
        cache.put_many("s", [entry(f"k{i:05d}") for i in range(1_234)])
        assert len(cache.get_many("s", [f"k{i:05d}" for i in range(0, 2_000)])) == 1_234


def test_known_secrets_are_masked_and_nothing_else_changes(tmp_path, monkeypatch):
    secret = "zz-private-7Tq9LmX2vB8nR4kW"
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret)
    with ResponseCache(tmp_path / "c") as cache:
        cache.put_many(f"openai@http://user:{secret}@host/v1", [entry("k", f"key {secret} here; Bearer words")])
        got = cache.get_many(cache.stats().models[0].scope, ["k"])["k"]
    assert got.text == "key [REDACTED] here; Bearer words"
    raw = b"".join(p.read_bytes() for p in (tmp_path / "c").iterdir())
    assert secret.encode() not in raw


def test_a_readonly_look_at_no_cache_creates_nothing(tmp_path):
    with ResponseCache(tmp_path / "none", readonly=True) as cache:
        assert cache.get_many("s", ["k"]) == {} and cache.stats().entries == 0
    assert not (tmp_path / "none").exists()


def test_a_damaged_cache_file_is_an_input_error(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "responses.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError) as exc:
        ResponseCache(tmp_path / "c")
    assert exc.value.path.endswith("responses.sqlite") and exc.value.field == "cache"


def _age(folder, key, days):
    db = sqlite3.connect(folder / "responses.sqlite")
    db.execute("UPDATE answers SET created=? WHERE key=?", (time.time() - days * 86_400, key))
    db.commit()
    db.close()


def test_prune_older_than(tmp_path):
    folder = tmp_path / "c"
    with ResponseCache(folder) as cache:
        cache.put_many("s", [entry("old"), entry("new")])
    _age(folder, "old", 10)
    with ResponseCache(folder) as cache:
        done = prune(cache, older_than_days=5)
        assert done.removed == 1 and done.entries_left == 1
        assert set(cache.get_many("s", ["old", "new"])) == {"new"}


def test_prune_max_size_keeps_the_newest_within_the_bound(tmp_path):
    folder = tmp_path / "c"
    with ResponseCache(folder) as cache:
        for i in range(40):  # one transaction each, oldest first
            cache.put_many("s", [entry(f"k{i:02d}", "x" * 10_000)])
        _age(folder, "k00", 1)
        assert cache.file_bytes() > 400_000
        done = prune(cache, max_bytes=200_000)
        assert done.compacted and done.file_bytes <= 200_000
        assert cache.file_bytes() <= 200_000
        left = cache.get_many("s", [f"k{i:02d}" for i in range(40)])
    # The newest survive, and as many as fit: another ~10 kB entry would not.
    assert left and set(left) == {f"k{i:02d}" for i in range(40 - len(left), 40)}
    assert done.file_bytes + 2 * 10_000 > 200_000


@pytest.mark.parametrize(("text", "value"), [("1048576", 1048576), ("500M", 500_000_000), ("2GB", 2 * 10**9),
                                             ("1.5GiB", int(1.5 * 2**30)), ("64 kib", 65536), ("10k", 10_000)])
def test_sizes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "-1M", "12Q", "M", "1e9"])
def test_bad_sizes_are_input_errors(text):
    with pytest.raises(InputError):
        parse_size(text)


def test_location_env_then_platform_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYJUDGE_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine" and cache_dir(None) == tmp_path / "mine"
    assert cache_dir(tmp_path / "flag") == tmp_path / "flag"
    monkeypatch.delenv("POLYJUDGE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr("sys.platform", "linux")
    assert default_cache_dir() == tmp_path / "xdg" / "polyjudge"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as the XDG spec says
    assert user_cache_root().is_absolute()
    monkeypatch.setattr("sys.platform", "darwin")
    assert user_cache_root().parts[-2:] == ("Library", "Caches")


def test_opening_tries_again_when_sqlite_breaks_a_deadlock(tmp_path, monkeypatch):
    """Two processes creating the cache at once can both hold a shared lock and ask for the exclusive one
    the switch to WAL needs; SQLite then fails one at once with "database is locked" (no busy wait).
    That process must try again, not give up the cache (seen in CI: a judge run that could not start)."""
    import polyjudge.cache.store as store

    failures = {"left": 3}

    class Deadlocked(sqlite3.Connection):
        def execute(self, sql, *args):
            if sql.startswith("PRAGMA journal_mode") and failures["left"]:
                failures["left"] -= 1
                raise sqlite3.OperationalError("database is locked")
            return super().execute(sql, *args)

    real_connect = sqlite3.connect
    monkeypatch.setattr(store.sqlite3, "connect", lambda *a, **kw: real_connect(*a, factory=Deadlocked, **kw))
    with ResponseCache(tmp_path / "c") as cache:
        assert cache.put_many("s", [entry("k")]) == 1
    assert failures["left"] == 0
    monkeypatch.undo()
    with ResponseCache(tmp_path / "c") as cache:  # WAL mode and the schema are in place
        assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert cache.get_many("s", ["k"])["k"].text == "answer"


def test_a_damaged_file_is_not_retried(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "responses.sqlite").write_bytes(b"not a database" * 100)
    started = time.monotonic()
    with pytest.raises(InputError, match="cannot use the response cache"):
        ResponseCache(tmp_path / "c")
    assert time.monotonic() - started < 5
