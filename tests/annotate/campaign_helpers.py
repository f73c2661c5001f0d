"""A campaign served by a real ``polyjudge annotate serve`` subprocess on 127.0.0.1, and HTTP helpers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from polyjudge.api.annotate import AnnotateConfig, init_campaign
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

N = 12
BASE = [80, 35, 60, 90, 20, 55, 70, 40, 85, 30, 65, 50]  # the judge's score of item i
SPREAD = {3: 10, 7: 25, 10: 20}  # items whose three runs disagree


HOSTILE_SRC = "<script>alert('src')</script>"
HOSTILE_TGT = "<img src=x onerror=alert(1)> {{7*7}} ${x} \u202eevil\u202c <b>bold</b>"


def write_items(path: Path, n: int = 8, *, hostile: bool = True) -> Path:
    rows = ["src\ttgt\tsrc_lang\ttgt_lang\tsystem\tdoc_id\tseg_id"]
    for i in range(n):
        src, tgt = f"Sentence number {i}.", f"Satz Nummer {i}, schön."
        if hostile and i == 2:
            src, tgt = HOSTILE_SRC, HOSTILE_TGT
        rows.append(f"{src}\t{tgt}\ten\tde\tsys{i % 2}\tdoc{i // 4}\t{i}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def make(tmp: Path, scheme: str = "mqm", annotators: str = "ana,ben", per_item: int = 1, n: int = 8,
         **kw: Any) -> tuple[Path, dict[str, str]]:
    items = write_items(tmp / "items.tsv", n)
    folder = tmp / "camp"
    tokens = init_campaign(AnnotateConfig(str(folder), str(items), scheme, annotators, per_item, **kw))
    return folder, tokens


@dataclass
class Served:
    proc: subprocess.Popen[str]
    base: str
    links: dict[str, str]

    @property
    def tokens(self) -> dict[str, str]:
        return {n: link.rsplit("/", 1)[1] for n, link in self.links.items()}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def serve(folder: Path, n_annotators: int, *extra: str) -> Served:
    """``polyjudge annotate serve FOLDER --port 0`` in a subprocess; its links once it listens."""
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", "from polyjudge.cli.main import main; main()", "annotate",
                             "serve", str(folder), "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    links = {}
    deadline = time.time() + 60
    while len(links) < n_annotators:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"server ended: {proc.stderr.read() if proc.stderr else ''}")
        name, link = line.rstrip("\n").split("\t")
        links[name] = link
        assert time.time() < deadline
    base = next(iter(links.values())).split("/a/")[0]
    return Served(proc, base, links)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def request(method: str, url: str, **kw: Any) -> tuple[int, dict[str, str], Any]:
    async with aiohttp.ClientSession() as s, s.request(method, url, **kw) as r:
        body = await r.read()
        ctype = r.headers.get("Content-Type", "")
        data: Any = body
        if ctype.startswith("application/json"):
            data = json.loads(body)
        return r.status, dict(r.headers), data


def call(method: str, url: str, **kw: Any) -> tuple[int, dict[str, str], Any]:
    return asyncio.run(request(method, url, **kw))


async def raw_get(base: str, path: str) -> tuple[int, bytes]:
    """A GET whose path is sent exactly as given (no client-side normalisation of ``..``)."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data.split(b" ", 2)[1])
    return status, data


def judge_items(tmp: Path) -> tuple[Path, Path]:
    """items.tsv and a da run of it with 3 runs per item (runs of items 3, 7, 10 disagree)."""
    items = write_items(tmp / "items.tsv", N, hostile=False)
    calls: dict[int, int] = defaultdict(int)

    def answer(body):
        user = body["messages"][-1]["content"]
        i = int(user.split("Satz Nummer ", 1)[1].split(",", 1)[0])
        k = calls[i]
        calls[i] += 1
        return json.dumps({"score": BASE[i] + (SPREAD.get(i, 0) * (k % 3 - 1))})

    with ScriptedServer(answer) as srv:
        assert cli("judge", items, "-p", "da", "-o", tmp / "run", "--judge", f"openai:m@{srv.base_url}", "-q",
                   "--runs", "3", "--temperature", "1") == 0
    return items, tmp / "run"




def span_run(tmp: Path, items: Path) -> Path:
    """A gemba-esa run over ``items`` (needs OPENAI_API_KEY set): "books" and "Beijing" marked in the
    translation "He bought books in Beijing.", nothing elsewhere."""
    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        if "He bought books" in user:
            return json.dumps({"errors": [{"span": "books", "severity": "major"},
                                          {"span": "Beijing", "severity": "minor"}], "score": 40})
        return json.dumps({"errors": [], "score": 90})

    with ScriptedServer(answer) as srv:
        assert cli("judge", items, "-p", "gemba-esa", "-o", tmp / "run", "--judge", f"openai:m@{srv.base_url}",
                   "-q") == 0
    return tmp / "run"
