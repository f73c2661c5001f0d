"""What every documentation test shares: the scripted servers the pages' judges talk to, and one
fresh directory per page (its working directory, home, XDG folders and response cache)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.blocks import PageRun, page_env, run_page
from tests.docs.judge import answer
from tests.helpers.anthropic_server import AnthropicServer
from tests.helpers.mtme_testset import build_ted_testset
from tests.helpers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
HOWTOS = sorted((ROOT / "docs" / "how-to").glob("*.md"))
README = ROOT / "README.md"
# Pages that get more than the four API variables: the WMT tutorial's mt-metrics-eval data root.
NEEDS_MTME = {"wmt-test-set.md"}


@pytest.fixture(scope="session")
def docs_servers() -> Iterator[tuple[ScriptedServer, AnthropicServer]]:
    """One scripted OpenAI-compatible and one Anthropic server for every page (batches finish at once)."""
    with ScriptedServer(answer) as openai, AnthropicServer(answer) as anthropic:
        yield openai, anthropic


@pytest.fixture
def story(docs_servers: tuple[ScriptedServer, AnthropicServer], tmp_path: Path):
    """``story(page)`` runs a page as one story in its own temporary directory and returns the run."""
    openai, anthropic = docs_servers
    servers = {"OPENAI_API_KEY": "sk-docs-test", "OPENAI_BASE_URL": openai.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-docs-test", "ANTHROPIC_BASE_URL": anthropic.base_url}
    self_hosted = openai.base_url.removesuffix("/v1")

    def _run(page: Path) -> PageRun:
        env = page_env(os.environ, tmp_path, servers)
        if page.name in NEEDS_MTME:
            build_ted_testset(tmp_path / "mt-metrics-eval-v2")
            env["MTME_DATA"] = str(tmp_path / "mt-metrics-eval-v2")
        return run_page(page, tmp_path, env, self_hosted)

    return _run
