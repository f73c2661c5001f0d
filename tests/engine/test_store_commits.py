"""polyjudge.engine.store: the write path of answers (deferred commits and their waiters, what a row holds)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from polyjudge.data.chat import GenerateResult, Usage
from polyjudge.engine.store import AnswerKey, Store, served_json


def _answer(i: int) -> tuple[AnswerKey, GenerateResult]:
    return (AnswerKey(f"k{i}", f"p{i}", "j", 0),
            GenerateResult(f'{{"score": {i}}}', "stop", Usage(60, 5), 0.1, model="m", system_fingerprint="fp"))


def _done_keys(path) -> set[str]:
    db = sqlite3.connect(path)  # another connection: sees only what is committed
    try:
        return {k for (k,) in db.execute("SELECT key FROM responses WHERE status='done'")}
    finally:
        db.close()


def test_waiters_return_once_the_turns_answers_are_committed_and_one_cancelled_waiter_leaves_the_others(tmp_path):
    """Answers written in one turn of the loop are committed together at its end; each task waiting for
    that commit returns after it, with the rows on disk, and a waiter cancelled on the way (Ctrl-C) neither
    stops the commit nor fails the other waiters."""
    path = tmp_path / "store.sqlite"
    store = Store(path)
    seen: dict[str, set[str]] = {}

    async def worker(i: int) -> None:
        store.put_result(*_answer(i), 1)
        await store.committed()
        seen[f"k{i}"] = _done_keys(path)

    async def main() -> None:
        with store.deferring():
            tasks = [asyncio.create_task(worker(i)) for i in range(4)]
            await asyncio.sleep(0)  # every worker has written and waits
            assert _done_keys(path) == set()
            tasks[1].cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            assert isinstance(results[1], asyncio.CancelledError)
            assert results[0] is results[2] is results[3] is None
            await store.committed()  # nothing open: returns at once

    asyncio.run(main())
    store.close()
    assert seen == {k: {"k0", "k1", "k2", "k3"} for k in ("k0", "k2", "k3")}
    assert _done_keys(path) == {"k0", "k1", "k2", "k3"}


class _FailingCommit:
    """The store's connection, except that COMMIT fails (a full disk)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, *args: object) -> object:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


def test_a_failed_commit_fails_every_waiter_and_the_flush(tmp_path):
    """A commit that fails is rolled back, and every task waiting for it gets its error (none sends again
    believing its answer kept); the store's flush raises it once more (the run stops on it)."""
    path = tmp_path / "store.sqlite"
    store = Store(path)
    real = store._db
    store._db = _FailingCommit(real)  # type: ignore[assignment]

    async def worker(i: int) -> None:
        store.put_result(*_answer(i), 1)
        await store.committed()

    async def main() -> list[BaseException | None]:
        store._deferring = True  # as deferring() does, without its flush on exit
        try:
            return await asyncio.gather(*(worker(i) for i in range(3)), return_exceptions=True)
        finally:
            store._deferring = False

    results = asyncio.run(main())
    assert [type(r) for r in results] == [sqlite3.OperationalError] * 3
    assert not real.in_transaction
    store._db = real
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        store.flush()
    store.flush()  # raised once
    store.close()
    assert _done_keys(path) == set()


@pytest.mark.parametrize("model, fingerprint", [
    ("m", None), ("m", "fp_1"), ("gpt-4o-2024-08-06", "fp_ünïcode ✓"), ("é\u2028\"\\", "\x00"), ("", ""),
    (None, "fp"), (7, None), ("m", 5), ("m", ["x"]),
])
def test_served_is_stored_as_json_dumps_wrote_it(model, fingerprint):
    """The served model and fingerprint a row keeps are json.dumps' text of the pair (written once per
    pair now): the same bytes for every pair a server can send, None when no model is named."""
    result = GenerateResult("t", "stop", Usage(), 0.1, model=model, system_fingerprint=fingerprint)
    expected = json.dumps([model, fingerprint], ensure_ascii=False) if isinstance(model, str) else None
    assert served_json(result) == expected
    assert served_json(result) == expected  # a second time, from what was kept

