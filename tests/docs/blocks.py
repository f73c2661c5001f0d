"""Run a documentation page as one story: its fenced blocks in order, in one directory and shell environment.

The rules are the documentation's code-block convention (issue 37):

- ``console`` blocks: lines starting with ``$ `` are commands (a trailing backslash continues them); the
  other lines are sample output, not compared.
- ``bash``/``sh`` blocks: the whole block is one script, run with ``set -euo pipefail``.
- ``python`` blocks: run by the test's Python interpreter in the page's directory.
- a block with a ``title="NAME"``: its text is written to NAME in the page's directory, not run.
- anything else (``text``, ``json``, ``tsv``... without a title) is shown to the reader, not run.
- ``<!-- docs-test: skip (why) -->`` on the line just before a fence skips that block (counted).
- ``<!-- docs-test: needs EXTRA (why) -->`` on the line just before a fence: the block needs that extra of
  pyproject (``ray``, ``datasets``, ``pandas``, ``docs``, ``lint``: ``tests/helpers/extras.py``). Without it
  the page runs up to that block and then skips, naming the extra and its install; the README's install
  (``.[model,test]``) thus runs every page that needs nothing more, and the rest of each page up to the
  block. The page's test carries ``needs_extra(EXTRA, partial=True)``, so ``pytest -m needs_extra`` runs it
  once the extras are installed (``.ci/run``'s second pass).

Lines that export the four API variables (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``) are dropped: the runner sets them to its scripted servers. The self-hosted
address ``http://127.0.0.1:8000`` is rewritten to the scripted OpenAI-compatible server's. Environment
variables and the working directory carry over from one block to the next. A command may leave a server
running in the background (``cmd &``); the runner ends it (its process group) when the page ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.extras import skip_reason

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip\s*(?:\((?P<why>.*)\))?\s*-->\s*$")
NEEDS = re.compile(r"^\s*<!--\s*docs-test:\s*needs\s+(?P<extra>[A-Za-z0-9_-]+)\s*(?:\((?P<why>.*)\))?\s*-->\s*$")
TITLE = re.compile(r"""title=(?:"([^"]+)"|'([^']+)'|(\S+))""")
API_EXPORT = re.compile(r"^\s*(?:export\s+)?(?:OPENAI_API_KEY|OPENAI_BASE_URL|ANTHROPIC_API_KEY|ANTHROPIC_BASE_URL)="
                        r"\S*\s*$")
SELF_HOSTED = "http://127.0.0.1:8000"
RUN_LANGS = {"console": "console", "bash": "bash", "sh": "bash", "shell": "bash", "python": "python",
             "py": "python"}
COMMAND_TIMEOUT_S = 240


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts (1-based line of the fence), its language, title, text and skip."""

    page: Path
    line: int
    lang: str
    title: str | None
    text: str
    skip: str | None = None
    needs: str | None = None  # the extra the block needs (``docs-test: needs EXTRA``)

    @property
    def kind(self) -> str:
        """``file`` (written), ``console``, ``bash``, ``python`` (run) or ``shown`` (neither)."""
        if self.title:
            return "file"
        return RUN_LANGS.get(self.lang, "shown")

    @property
    def runs(self) -> bool:
        return self.skip is None and self.kind != "shown"


def parse_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` in order (indented ones included, their indent removed)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info").strip()
        start, body = i, []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        lang = info.split()[0].lstrip(".").lower() if info else ""
        t = TITLE.search(info)
        skip = SKIP.match(lines[start - 1]) if start > 0 else None
        needs = NEEDS.match(lines[start - 1]) if start > 0 else None
        blocks.append(Block(page, start + 1, lang, next(g for g in t.groups() if g) if t else None,
                            "\n".join(body) + "\n", (skip.group("why") or "no reason given") if skip else None,
                            needs.group("extra") if needs else None))
    return blocks


def page_extras(page: Path) -> list[str]:
    """The extras the blocks of ``page`` declare (``docs-test: needs EXTRA``), in page order, once each."""
    return list(dict.fromkeys(b.needs for b in parse_blocks(page) if b.needs is not None))


class ExtraMissing(Exception):
    """A page reached a block that needs an extra which is not installed (the test skips with this text)."""


def console_commands(text: str) -> list[tuple[int, str]]:
    """The ``$ `` commands of a console block with their 0-based line offsets (continuations joined)."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        offset, parts = i, [lines[i][2:]]
        while parts[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            parts.append(lines[i])
        out.append((offset, "\n".join(parts)))
        i += 1
    return out


def prepare(script: str, self_hosted: str) -> str:
    """The script without the API variables' export lines, the self-hosted address rewritten."""
    kept = [line for line in script.splitlines() if not API_EXPORT.match(line)]
    return "\n".join(kept).replace(SELF_HOSTED, self_hosted) + "\n"


@dataclass
class PageRun:
    """The state of one page's story: its working directory, its shell state file, what ran."""

    page: Path
    work: Path
    env: Mapping[str, str]
    self_hosted: str
    state: Path = field(init=False)
    commands: int = 0
    groups: list[int] = field(default_factory=list)  # process groups of commands that left processes behind

    def __post_init__(self) -> None:
        self.state = self.work.parent / "shell-state.sh"
        self.state.write_text(f"cd {shlex.quote(str(self.work))}\n", encoding="utf-8")

    def _shell(self, body: str, where: str) -> None:
        script = (f"set -euo pipefail\n. {shlex.quote(str(self.state))}\n{body}\n"
                  f"__pj_rc=$?\n{{ export -p; echo \"cd $(printf '%q' \"$PWD\")\"; }} > "
                  f"{shlex.quote(str(self.state))}\nexit $__pj_rc\n")
        log = self.work.parent / "command-output.txt"
        with log.open("w+", encoding="utf-8", errors="replace") as out:
            # A file, not a pipe, takes the output: a server a block starts in the background (``cmd &``)
            # keeps it open, and the command is done when bash is. Its own session lets stop() find it.
            shell = subprocess.Popen(["bash", "-c", script], env=dict(self.env), stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = shell.wait(timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = None
            if _group_alive(shell.pid):
                self.groups.append(shell.pid)
            out.seek(0)
            output = out.read()[-6000:]
        self.commands += 1
        if code is None:
            raise AssertionError(f"{where}: timed out after {COMMAND_TIMEOUT_S} s\n--- output ---\n{output}")
        if code != 0:
            raise AssertionError(f"{where}: exit {code}\n--- output ---\n{output}")

    def stop(self) -> None:
        """End what the page's commands left running (background servers): their process groups only."""
        for group in self.groups:
            if _group_alive(group):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGTERM)
        self.groups.clear()

    def run(self, block: Block) -> None:
        """Run or write one block (a skipped or shown block does nothing)."""
        if not block.runs:
            return
        where = f"{block.page.name}:{block.line}"
        if block.needs is not None and (reason := skip_reason(block.needs)) is not None:
            raise ExtraMissing(f"{where} {reason} (the {self.commands} command(s) before it ran)")
        if block.kind == "file":
            assert block.title is not None
            target = self.work / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(prepare(block.text, self.self_hosted), encoding="utf-8")
        elif block.kind == "console":
            for offset, command in console_commands(block.text):
                self._shell(prepare(command, self.self_hosted),
                            f"{where} (line {block.line + 1 + offset}: $ {command.splitlines()[0]})")
        elif block.kind == "bash":
            self._shell(prepare(block.text, self.self_hosted), f"{where} (bash block)")
        else:
            source = self.work.parent / f"block-{block.line}.py"
            source.write_text(prepare(block.text, self.self_hosted), encoding="utf-8")
            self._shell(f"{shlex.quote(sys.executable)} {shlex.quote(str(source))}", f"{where} (python block)")


def _group_alive(group: int) -> bool:
    """Whether a process of this process group still runs (then its id cannot have been reused)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(group) and fields[0] != "Z":
            return True
    return False


def page_env(base: Mapping[str, str], root: Path, servers: Mapping[str, str]) -> dict[str, str]:
    """The environment of a page: the test's own, the scripted servers, the cache and home in ``root``."""
    env = {k: v for k, v in base.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "POLYJUDGE_", "XDG_", "RAY_"))}
    home = root / "home"
    for sub in ("cache", "config", "data"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(servers)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"),
               XDG_DATA_HOME=str(home / "data"), POLYJUDGE_CACHE=str(home / "cache" / "polyjudge"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}", NO_COLOR="1",
               COLUMNS="100")
    return env


def run_page(page: Path, root: Path, env: Mapping[str, str], self_hosted: str) -> PageRun:
    """Run every block of ``page`` in ``root/work``; the first failure raises naming page, line and output."""
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    story = PageRun(page, work, env, self_hosted)
    try:
        for block in parse_blocks(page):
            story.run(block)
    finally:
        story.stop()
    return story


__all__ = ["Block", "ExtraMissing", "PageRun", "console_commands", "page_env", "page_extras", "parse_blocks",
           "prepare", "run_page"]
