"""The documentation site builds with ``mkdocs build --strict`` (issue 37): every page of the nav exists, every
link and anchor resolves, the API reference resolves, and nothing is fetched from outside to build or read it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.docs.mkdocs_site import ROOT, build, built_site, need_mkdocs
from tests.helpers.extras import needs_extra

pytestmark = needs_extra("docs")


def _pages() -> list[Path]:
    docs = ROOT / "docs"
    return sorted(p.relative_to(docs) for p in docs.rglob("*.md") if "hooks" not in p.parts)


def test_every_page_builds_strictly():
    site = built_site()
    missing = [str(p) for p in _pages() if not (site / p.with_suffix(".html")).is_file()]
    assert not missing, missing
    for page in ("reference/cli.html", "reference/api.html", "reference/plugins.html",
                 "explanations/statistics.html", "explanations/protocols.html", "explanations/run-directory.html"):
        assert (site / page).stat().st_size > 10_000, page
    api = (site / "reference" / "api.html").read_text(encoding="utf-8")
    assert 'id="polyjudge.api.settle.judge"' in api and 'id="polyjudge.api.metaeval.meta_eval"' in api


def test_nothing_is_fetched_from_outside():
    site = built_site()
    for path in site.rglob("*"):
        if path.suffix not in (".html", ".css", ".js") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, path
        if path.suffix == ".html":
            # scripts, styles, images and fonts come from the site itself; only links a reader clicks go out
            outside = re.findall(r'<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)="(?:https?:)?//[^"]*"', text)
            assert not outside, (path, outside[:3])


def test_a_broken_link_or_a_missing_nav_page_fails_the_build(tmp_path):
    need_mkdocs()
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copyfile(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "src").symlink_to(ROOT / "src")  # mkdocstrings reads the code from src/, as in the repository
    page = tmp_path / "docs" / "reference" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [nowhere](no-such-page.md).\n", encoding="utf-8")
    (tmp_path / "docs" / "reference" / "exit-codes.md").unlink()
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    log = done.stdout + done.stderr
    assert "no-such-page.md" in log and "exit-codes.md" in log, log
