"""The report in a real browser: headless Chromium over the DevTools protocol."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from polyjudge.report.html import write_report
from tests.report.cdp import Browser, find_chromium
from tests.report.fixtures import CONSISTENCY, INJECT_TGT, METAEVAL, VALIDATION, build_run

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium not installed (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def browser():
    b = Browser(CHROMIUM)
    yield b
    b.quit()


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    d = build_run(root, n_items=90, n_runs=3, judges=("judge-a", "judge-b"), inject=True,
                  extras={"metaeval.json": METAEVAL, "consistency.json": CONSISTENCY,
                          "validation.json": VALIDATION})
    out = root / "report.html"
    write_report([d], out, n_boot=200)
    return out


def _matched(b: Browser) -> int:
    return int(b.eval("document.querySelector('.spanbrowser').getAttribute('data-matched')"))


def test_report_loads_filters_and_is_inert(browser, report_file, tmp_path):
    browser.navigate(report_file.as_uri())
    assert browser.eval("document.body.getAttribute('data-ready')") == "1"
    # Injected markup in a translation, a system name and a description stayed text.
    assert browser.eval("typeof window.__pwned") == "undefined"
    assert browser.eval("document.querySelectorAll('main img').length") == 0
    assert browser.eval("document.querySelectorAll('b').length") == 0

    total = _matched(browser)
    assert total == 90 * 3 * 2  # one row per judgment, failures included
    rows_on_page = browser.eval("document.querySelectorAll('.spantable tbody tr').length")
    assert rows_on_page == 50  # paginated

    # Filter: text search for the injected translation finds exactly its judgments.
    browser.eval("""(() => {const i = document.querySelector('[data-f=text]');
        i.value = 'window.__pwned=1'; i.dispatchEvent(new Event('input'));
        return new Promise(r => setTimeout(r, 400));})()""")
    assert _matched(browser) == 3 * 2
    cell = browser.eval("document.querySelector('.spantable tbody td.text').textContent")
    assert cell == INJECT_TGT
    # Spans are highlighted with a severity class and a tooltip.
    assert browser.eval("document.querySelectorAll('.spantable tbody td.text .sp[title]').length") > 0

    # Filter by severity and "with spans only": counts must match the data.
    browser.eval("""(() => {const i = document.querySelector('[data-f=text]');
        i.value = ''; i.dispatchEvent(new Event('input'));
        return new Promise(r => setTimeout(r, 400));})()""")
    data = json.loads(browser.eval("document.getElementById('spans-data-0').textContent"))
    crit = data["severities"].index("critical")
    expected = sum(1 for r in data["rows"] if any(s[2] == crit for s in r[5]))
    browser.eval(f"""(() => {{const s = document.querySelector('[data-f=severity]');
        s.value = '{crit}'; s.dispatchEvent(new Event('change'));}})()""")
    assert _matched(browser) == expected > 0
    assert browser.eval("""Array.from(document.querySelectorAll('.spantable tbody tr')).every(
        tr => tr.querySelector('td.text .sev-critical') !== null)""")
    browser.eval("""(() => {const s = document.querySelector('[data-f=severity]');
        s.value = ''; s.dispatchEvent(new Event('change'));
        const c = document.querySelector('[data-f=errors]'); c.checked = true;
        c.dispatchEvent(new Event('change'));})()""")
    assert _matched(browser) == sum(1 for r in data["rows"] if r[5])

    # Next page works.
    browser.eval("document.querySelector('[data-p=next]').click()")
    assert "page 2" in browser.eval("document.querySelector('.pageinfo').textContent")

    # Every section rendered with its SVG.
    assert browser.eval("document.querySelectorAll('figure svg').length") >= 7
    assert browser.eval("window.__reportErrors.length") == 0
    assert browser.errors() == []

    shot = Path(os.environ.get("POLYJUDGE_SCREENSHOT_DIR", tmp_path)) / "report.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
