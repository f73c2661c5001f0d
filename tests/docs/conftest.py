"""What every documentation test shares: the scripted servers the pages' judges talk to, and one
fresh directory per page (its working directory, home, XDG folders and response cache).

Pages are independent stories, and much of a story's time is spent waiting (a Batch API's first poll, a
Ray cluster starting, a command's interpreter starting), so the pages of the tests selected in a session
run side by side on a few threads: the first test to ask starts them all, and each test waits for its own
page and fails with its own page's message."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.docs.blocks import ExtraMissing, PageRun, page_env, page_extras, run_page
from tests.docs.judge import answer
from tests.helpers.anthropic_server import AnthropicServer
from tests.helpers.extras import needs_extra
from tests.helpers.mtme_testset import build_ted_testset
from tests.helpers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
HOWTOS = sorted((ROOT / "docs" / "how-to").glob("*.md"))
README = ROOT / "README.md"
# The site's other pages (home, reference, explanations): their runnable blocks run too.
SITE_PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md")
                    if p.parent.name not in {"tutorials", "how-to", "hooks"})
# Pages that get more than the four API variables: the WMT tutorial's mt-metrics-eval data root.
NEEDS_MTME = {"wmt-test-set.md"}
WORKERS = 3  # pages run at once (the machine's cores are shared with the scripted servers)


def page_params(pages: list[Path], ids: list[str] | None = None) -> list[object]:
    """``pages`` as parameters of a page test; a page whose blocks declare extras is marked as needing them
    (``partial``: without one it runs up to that block, then skips naming it)."""
    names = ids if ids is not None else [p.name for p in pages]
    return [pytest.param(page, id=name, marks=[needs_extra(*extras, partial=True)] if (extras := page_extras(page))
                         else []) for page, name in zip(pages, names, strict=True)]


@pytest.fixture(scope="session")
def docs_servers() -> Iterator[tuple[ScriptedServer, AnthropicServer]]:
    """One scripted OpenAI-compatible and one Anthropic server for every page (batches finish at once)."""
    with ScriptedServer(answer) as openai, AnthropicServer(answer) as anthropic:
        yield openai, anthropic


class PageRunner:
    """Runs pages on a few threads, each once, in its own directory; ``result(page)`` waits for one."""

    def __init__(self, servers: tuple[ScriptedServer, AnthropicServer], root: Path, pages: list[Path]) -> None:
        openai, anthropic = servers
        self.servers = {"OPENAI_API_KEY": "sk-docs-test", "OPENAI_BASE_URL": openai.base_url,
                        "ANTHROPIC_API_KEY": "sk-ant-docs-test", "ANTHROPIC_BASE_URL": anthropic.base_url}
        self.self_hosted = openai.base_url.removesuffix("/v1")
        self.root, self.selected = root, pages
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="docs-page")
        self.futures: dict[Path, Future[PageRun]] = {}
        self.lock = threading.Lock()

    def _run(self, page: Path) -> PageRun:
        folder = self.root / f"{page.parent.name}-{page.stem}"
        env = page_env(os.environ, folder, self.servers)
        if page.name in NEEDS_MTME:
            build_ted_testset(folder / "mt-metrics-eval-v2")
            env["MTME_DATA"] = str(folder / "mt-metrics-eval-v2")
        return run_page(page, folder, env, self.self_hosted)

    def result(self, page: Path) -> PageRun:
        with self.lock:
            for one in [*self.selected, page]:
                if one not in self.futures:
                    self.futures[one] = self.pool.submit(self._run, one)
        return self.futures[page].result()


def _selected_pages(session: pytest.Session) -> list[Path]:
    """The pages of this session's parametrised page tests, in test order."""
    pages: list[Path] = []
    for item in session.items:
        page = getattr(item, "callspec", None) and item.callspec.params.get("page")  # type: ignore[attr-defined]
        if isinstance(page, Path) and "story" in getattr(item, "fixturenames", ()) and page not in pages:
            pages.append(page)
    return pages


@pytest.fixture(scope="session")
def page_runner(request: pytest.FixtureRequest, docs_servers: tuple[ScriptedServer, AnthropicServer],
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageRunner]:
    runner = PageRunner(docs_servers, tmp_path_factory.mktemp("docs-pages"), _selected_pages(request.session))
    yield runner
    runner.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def story(page_runner: PageRunner) -> Callable[[Path], PageRun]:
    """``story(page)`` runs a page as one story in its own temporary directory and returns the run; a page
    that reaches a block needing an extra which is not installed skips, naming it."""
    def run(page: Path) -> PageRun:
        try:
            return page_runner.result(page)
        except ExtraMissing as exc:
            pytest.skip(str(exc))
    return run
