"""What the runner itself promises: every page is found and says what runs, skips are few and explained,
and a failing command names its page, its line and its output."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.docs import blocks as blocks_module
from tests.docs.blocks import ExtraMissing, console_commands, page_env, page_extras, parse_blocks, prepare, run_page
from tests.docs.conftest import HOWTOS, README, ROOT, SITE_PAGES, TUTORIALS, page_params
from tests.helpers import extras as extras_module
from tests.helpers.extras import EXTRAS, MARKER, needs_extra, skip_if_missing, skip_reason

MAX_SKIPS = 2
PAGES = [README, *TUTORIALS, *HOWTOS]


def test_the_site_has_tutorials_and_howtos() -> None:
    assert {p.name for p in TUTORIALS} >= {"index.md", "own-data.md", "wmt-test-set.md", "spans.md",
                                           "validation.md", "study.md"}
    assert {p.name for p in HOWTOS} >= {"index.md", "reasoning-models.md", "batches.md", "self-hosted.md",
                                        "cache.md", "spending-caps.md", "plugins.md"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_a_page_skips_at_most_two_blocks_each_with_a_reason(page: Path) -> None:
    skipped = [b for b in parse_blocks(page) if b.skip is not None]
    assert len(skipped) <= MAX_SKIPS, f"{page.name}: {len(skipped)} skipped blocks (lines {[b.line for b in skipped]})"
    assert all(b.skip != "no reason given" for b in skipped), f"{page.name}: a skip without a reason"


def test_every_tutorial_and_howto_has_a_block_that_runs() -> None:
    """Index pages only link; every other page shows at least one command that the tests run."""
    silent = [p.name for p in [*TUTORIALS, *HOWTOS]
              if p.name != "index.md" and not any(b.runs and b.kind != "file" for b in parse_blocks(p))]
    assert silent == []


def test_the_parser_reads_the_convention(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('Intro\n\n```console\n$ echo one \\\n  two\none two\n$ true\n```\n\n'
                    '```toml title="study.toml"\nx = 1\n```\n\n<!-- docs-test: skip (needs PyPI) -->\n'
                    '```bash\npip install polyjudge\n```\n\n```text\nshown\n```\n\n'
                    '    ```python\n    print(1)\n    ```\n', encoding="utf-8")
    blocks = parse_blocks(page)
    assert [(b.line, b.kind, b.runs) for b in blocks] == [(3, "console", True), (10, "file", True),
                                                          (15, "bash", False), (19, "shown", False),
                                                          (23, "python", True)]
    assert blocks[1].title == "study.toml" and blocks[2].skip == "needs PyPI" and blocks[4].text == "print(1)\n"
    assert console_commands(blocks[0].text) == [(0, "echo one \\\n  two"), (3, "true")]


def test_api_variables_are_dropped_and_the_self_hosted_address_rewritten() -> None:
    script = ("export OPENAI_API_KEY=sk-...\nexport ANTHROPIC_BASE_URL=https://api.anthropic.com\n"
              "polyjudge judge x --judge openai:m@http://127.0.0.1:8000/v1\n")
    assert prepare(script, "http://127.0.0.1:4242") == "polyjudge judge x --judge openai:m@http://127.0.0.1:4242/v1\n"


def test_a_failing_command_names_page_line_and_output(tmp_path: Path) -> None:
    page = tmp_path / "drift.md"
    page.write_text("```console\n$ export GREETING=hello\n$ cd sub 2>/dev/null || mkdir sub && cd sub\n```\n\n"
                    "```bash\ntest \"$GREETING\" = hello && test \"$(basename \"$PWD\")\" = sub\n```\n\n"
                    "```console\n$ polyjudge judge missing.csv --lp de-en -o run\n```\n", encoding="utf-8")
    env = page_env(os.environ, tmp_path, {})
    with pytest.raises(AssertionError) as failed:
        run_page(page, tmp_path, env, "http://127.0.0.1:1")
    message = str(failed.value)
    assert message.startswith("drift.md:10 (line 11: $ polyjudge judge missing.csv")
    assert "exit 2" in message and "missing.csv" in message


def test_a_background_server_does_not_hold_the_page_and_ends_with_it(tmp_path: Path) -> None:
    """``cmd &`` (a server a how-to starts) neither makes the command wait for it nor outlives the page."""
    page = tmp_path / "server.md"
    page.write_text("```console\n$ sleep 300 & echo $! > server.pid\n$ echo started\n```\n",
                    encoding="utf-8")
    env = page_env(os.environ, tmp_path, {})
    started = time.monotonic()
    story = run_page(page, tmp_path, env, "http://127.0.0.1:1")
    assert time.monotonic() - started < 60 and story.commands == 2
    pid = int((tmp_path / "work" / "server.pid").read_text())
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the background process {pid} outlived its page")


def _hidden_commands(page: Path) -> list[int]:
    """Lines of blocks shown but never run (``text``, untitled ``tsv``...) that hold a ``$ command``."""
    return [b.line for b in parse_blocks(page)
            if b.kind == "shown" and any(line.startswith("$ ") for line in b.text.splitlines())]


@pytest.mark.parametrize("page", [README, *SITE_PAGES, *TUTORIALS, *HOWTOS],
                         ids=[p.relative_to(ROOT).as_posix() for p in [README, *SITE_PAGES, *TUTORIALS, *HOWTOS]])
def test_no_command_hides_in_a_block_that_never_runs(page: Path) -> None:
    """A ``$ command`` is written in a ``console`` block (run, or skipped with a reason), never in a ``text``
    block the tests pass over."""
    assert _hidden_commands(page) == [], f"{page.name}: commands in a shown block at lines {_hidden_commands(page)}"
    assert all(b.skip != "no reason given" for b in parse_blocks(page) if b.skip is not None)


def test_the_hidden_command_rule_catches_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```text\n$ polyjudge judge x\n```\n", encoding="utf-8")
    assert _hidden_commands(page) == [1]


def test_a_block_declares_the_extra_it_needs(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('```console\n$ echo one > one.txt\n```\n\n<!-- docs-test: needs ray (a Ray cluster) -->\n'
                    '```console\n$ echo two > two.txt\n```\n\n```console\n$ echo three > three.txt\n```\n',
                    encoding="utf-8")
    assert [(b.line, b.needs, b.runs) for b in parse_blocks(page)] == [(1, None, True), (6, "ray", True),
                                                                      (10, None, True)]
    assert page_extras(page) == ["ray"]
    (param,) = page_params([page])
    assert [(m.name, m.args, m.kwargs) for m in param.marks] == [(MARKER, ("ray",), {"partial": True})]


def test_a_page_runs_up_to_a_block_whose_extra_is_missing_then_skips_naming_it(tmp_path: Path, monkeypatch) -> None:
    page = tmp_path / "page.md"
    page.write_text('```console\n$ echo one > one.txt\n```\n\n<!-- docs-test: needs ray -->\n'
                    '```console\n$ echo two > two.txt\n```\n', encoding="utf-8")
    monkeypatch.setattr(blocks_module, "skip_reason", lambda extra: f"needs the {extra} extra (absent here)")
    env = page_env(os.environ, tmp_path, {})
    with pytest.raises(ExtraMissing, match=r"page\.md:6 needs the ray extra \(absent here\) \(the 1 command"):
        run_page(page, tmp_path, env, "http://127.0.0.1:1")
    assert (tmp_path / "work" / "one.txt").exists() and not (tmp_path / "work" / "two.txt").exists()
    monkeypatch.setattr(blocks_module, "skip_reason", lambda extra: None)  # installed: the block runs
    assert run_page(page, tmp_path, env, "http://127.0.0.1:1").commands == 2


@pytest.mark.parametrize("page", [README, *SITE_PAGES, *TUTORIALS, *HOWTOS],
                         ids=[p.relative_to(ROOT).as_posix() for p in [README, *SITE_PAGES, *TUTORIALS, *HOWTOS]])
def test_a_declared_extra_is_one_of_pyprojects(page: Path) -> None:
    assert set(page_extras(page)) <= set(EXTRAS), page_extras(page)


def test_the_extras_table_names_pyprojects_extras_and_their_install() -> None:
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(declared)
    assert {"model", "test"} <= set(declared) and not {"model", "test"} & set(EXTRAS)  # the README installs those
    with pytest.raises(ValueError, match="unknown extra 'rays'"):
        needs_extra("rays")
    reason = skip_reason("ray")
    assert reason is None or ("the ray extra" in reason and "pip install -e '.[ray]'" in reason)


def test_a_marked_test_skips_naming_the_missing_extra_unless_it_skips_by_itself(monkeypatch) -> None:
    class Item:
        def __init__(self, *marks: pytest.MarkDecorator) -> None:
            self.marks = [m.mark for m in marks]

        def iter_markers(self, name: str):
            return (m for m in self.marks if m.name == name)

    monkeypatch.setattr(extras_module, "missing", lambda extra: ["ray"] if extra == "ray" else [])
    with pytest.raises(pytest.skip.Exception, match=r"needs the ray extra \(ray not installed\): "
                                                   r"pip install -e '\.\[ray\]'"):
        skip_if_missing(Item(needs_extra("pandas", "ray")))
    skip_if_missing(Item(needs_extra("pandas")))  # installed: runs
    skip_if_missing(Item(needs_extra("ray", partial=True)))  # a page: skips at its block
