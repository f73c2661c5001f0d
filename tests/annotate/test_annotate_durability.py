"""Many annotators at once, and a server killed with SIGKILL: nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import aiohttp

from polyjudge.api.annotate import campaign_status, export_campaign
from tests.annotate.campaign_helpers import auth, make, serve

N_ANNOTATORS = 20


async def _annotate_queue(session: aiohttp.ClientSession, base: str, token: str, acked: list[tuple[str, int]],
                          rounds: int) -> None:
    """Post every item of the queue, ``rounds`` times over (edits), recording each acknowledged version."""
    async with session.get(f"{base}/api/campaign", headers=auth(token)) as r:
        total = (await r.json())["progress"]["total"]
    for _ in range(rounds):
        for p in range(total):
            async with session.get(f"{base}/api/items/{p}", headers=auth(token)) as r:
                item = await r.json()
            body = {"item_id": item["item_id"], "score": (p * 7 + len(acked)) % 101}
            async with session.post(f"{base}/api/annotations", json=body, headers=auth(token)) as r:
                assert r.status == 200, await r.text()
                acked.append((item["item_id"], (await r.json())["version"]))


async def _everyone(base: str, tokens: dict[str, str], rounds: int) -> dict[str, list[tuple[str, int]]]:
    acked: dict[str, list[tuple[str, int]]] = {n: [] for n in tokens}
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(_annotate_queue(session, base, t, acked[n], rounds) for n, t in tokens.items()))
    return acked


def test_twenty_annotators_at_once_all_saved(tmp_path):
    folder, tokens = make(tmp_path, "da", str(N_ANNOTATORS), per_item=2, n=60)
    s = serve(folder, N_ANNOTATORS)
    try:
        start = time.perf_counter()
        acked = asyncio.run(_everyone(s.base, s.tokens, rounds=1))
        elapsed = time.perf_counter() - start
    finally:
        s.stop()
    assert sum(map(len, acked.values())) == 120  # 60 items x 2 annotators
    status = campaign_status(folder)
    assert [(p.done, p.total, p.versions) for p in status.progress] == [(6, 6, 6)] * N_ANNOTATORS
    assert len(export_campaign(folder, "ratings").splitlines()) == 121
    print(f"20 annotators, 120 annotations (each a GET and a POST): {elapsed:.2f} s")


def test_kill_9_mid_campaign_loses_nothing_acknowledged(tmp_path):
    folder, tokens = make(tmp_path, "esa", str(N_ANNOTATORS), per_item=1, n=40)
    s = serve(folder, N_ANNOTATORS)
    acked: dict[str, list[tuple[str, int]]] = {n: [] for n in tokens}

    async def until_killed() -> None:
        async with aiohttp.ClientSession() as session:
            tasks = [asyncio.create_task(_esa(session, s.base, s.tokens[n], acked[n])) for n in tokens]
            await asyncio.sleep(1.0)
            os.kill(s.proc.pid, signal.SIGKILL)  # mid-campaign: requests in flight
            await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(until_killed())
    s.proc.wait(10)
    assert s.proc.returncode == -signal.SIGKILL
    n_acked = sum(map(len, acked.values()))
    assert n_acked > 0
    again = serve(folder, N_ANNOTATORS)  # the lock died with the process: serving again works
    try:
        for name, token in again.tokens.items():
            got = asyncio.run(_annotations(again.base, token))
            newest = {}
            for item_id, version in acked[name]:
                newest[item_id] = max(version, newest.get(item_id, 0))
            for item_id, version in newest.items():
                assert got[item_id] >= version, (name, item_id)
    finally:
        again.stop()
    print(f"kill -9 after 1 s: {n_acked} acknowledged annotations, all present after restart")


async def _esa(session: aiohttp.ClientSession, base: str, token: str, acked: list[tuple[str, int]]) -> None:
    body = {"spans": [{"start": 0, "end": 4, "severity": "minor"}], "score": 50}
    try:
        while True:
            for p in range(2):
                async with session.get(f"{base}/api/items/{p}", headers=auth(token)) as r:
                    item_id = (await r.json())["item_id"]
                async with session.post(f"{base}/api/annotations", json={**body, "item_id": item_id},
                                        headers=auth(token)) as r:
                    version = (await r.json())["version"]
                acked.append((item_id, version))  # recorded only once the server said 200
    except (aiohttp.ClientError, json.JSONDecodeError, KeyError):
        return


async def _annotations(base: str, token: str) -> dict[str, int]:
    async with aiohttp.ClientSession() as session, session.get(f"{base}/api/annotations",
                                                                headers=auth(token)) as r:
        return {a["item_id"]: a["version"] for a in (await r.json())["annotations"]}


def test_ctrl_c_stops_cleanly_the_lock_is_free_and_no_token_was_logged(tmp_path):
    folder, tokens = make(tmp_path, "da", "ana,ben")
    s = serve(folder, 2)
    good, wrong = s.tokens["ana"], "wrong-" + s.tokens["ben"][6:]

    async def traffic() -> None:
        async with aiohttp.ClientSession() as session:
            for token in (good, wrong):
                async with session.get(f"{s.base}/api/next", headers=auth(token)) as r:
                    await r.read()
            async with session.get(f"{s.base}/a/{wrong}") as r:
                assert r.status == 403
            origin = f"http://localhost:{s.base.rsplit(':', 1)[1]}"
            async with session.post(f"{s.base}/api/annotations", json={"item_id": "sys0:doc0:0", "score": 5},
                                    headers={**auth(good), "Origin": origin}) as r:
                assert r.status == 200  # the page may be opened as localhost too

    asyncio.run(traffic())
    s.proc.send_signal(signal.SIGINT)
    out, err = s.proc.communicate(timeout=20)
    assert s.proc.returncode == 0 and "stopped" in err and "Traceback" not in err
    assert all(t not in err for t in (good, wrong, s.tokens["ben"]))  # the server's log names no token
    again = serve(folder, 2)  # the lock went with the process
    again.stop()
    assert campaign_status(folder).progress[0].done == 1
