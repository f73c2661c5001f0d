"""The annotation pages in a real browser, against the real server (``polyjudge annotate serve``).

Headless Chromium over the DevTools protocol (tests/report/cdp.py): real mouse drags over the
translation's character elements and real key presses, then ``annotate export`` must hold the
spans at the right code-point offsets of a non-ASCII translation (an astral emoji first, so UTF-16
offsets would be off by one), a hostile segment must stay text, and each scheme must submit.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.annotate.browser_helpers import (
    CTRL,
    SHIFT,
    click,
    double_click,
    drag_chars,
    open_page,
    press,
    selected_text,
    serving,
    touch_drag_chars,
    wait_for,
    wait_item,
)
from tests.helpers.cli import cli
from tests.report.cdp import Browser, find_chromium

CHROMIUM = find_chromium()
STATIC = Path(__file__).resolve().parents[2] / "src" / "polyjudge" / "annotate" / "static"

GERMAN = "😀 Der Bär läuft über die Brücke, größer als gedacht."
HOSTILE_SRC = "<img src=x onerror=window.__pwned=1> <script>window.__pwned=2</script> {{7*7}} ${7*7}"
HOSTILE_TGT = "Ein \u202eTest\u202c <b>fett</b> {{7*7}} <img src=x onerror=window.__pwned=3> \u2067x\u2069"
CHINESE = "我喜欢喝茶，不喜欢咖啡。"
ARABIC = "مرحبا بالعالم، كيف حالك؟"
CLUSTERS = "👍🏽 Super, danke! Cafe\u0301 und 🇩🇪."  # an emoji with a skin tone, a combining accent, a flag
ITEMS = [
    {"src": "The bear runs over the bridge, bigger than expected.", "tgt": GERMAN, "src_lang": "en",
     "tgt_lang": "de", "system": "sysA", "doc_id": "d1", "seg_id": "1"},
    {"src": HOSTILE_SRC, "tgt": HOSTILE_TGT, "src_lang": "en", "tgt_lang": "de", "system": "sysA", "doc_id": "d1",
     "seg_id": "2"},
    {"src": "I like tea, not coffee.", "tgt": CHINESE, "src_lang": "en", "tgt_lang": "zh", "system": "sysA",
     "doc_id": "d2", "seg_id": "1"},
    {"src": "Hello world, how are you?", "tgt": ARABIC, "src_lang": "en", "tgt_lang": "ar", "system": "sysA",
     "doc_id": "d3", "seg_id": "1"},
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("Chromium not installed (apt-get install chromium)")
    b = Browser(CHROMIUM)
    yield b
    b.quit()


@pytest.fixture(autouse=True)
def fresh_events(browser: Browser) -> None:
    """Each test sees only its own script errors and console messages."""
    browser.events.clear()


def _campaign(tmp: Path, scheme: str, items: list[dict[str, str]]) -> Path:
    src = tmp / f"{scheme}-items.jsonl"
    src.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items), encoding="utf-8")
    folder = tmp / f"{scheme}-campaign"
    assert cli("annotate", "init", folder, "--items", src, "--scheme", scheme, "--annotators", "ann") == 0
    return folder


def _export(campaign: Path, to: str, out: Path) -> str:
    assert cli("annotate", "export", campaign, "--to", to, "-o", out) == 0
    return out.read_text(encoding="utf-8")


def _text(b: Browser, selector: str) -> Any:
    return b.eval(f"document.querySelector({json.dumps(selector)}).textContent")


def _span_rows(b: Browser) -> list[list[int]]:
    rows = b.eval("Array.from(document.querySelectorAll('#spans .span-item')).map("
                  "li => [+li.getAttribute('data-start'), +li.getAttribute('data-end')])")
    assert isinstance(rows, list)
    return rows


def _pick_category(b: Browser, downs: int) -> str:
    press(b, "c")
    for _ in range(downs):
        press(b, "ArrowDown")
    return str(b.eval("document.getElementById('category').value"))


def _keyboard_select(b: Browser, start: int, length: int, forward: str = "ArrowRight") -> None:
    press(b, "t")
    press(b, "Home")
    for _ in range(start):
        press(b, forward)
    for _ in range(length):
        press(b, forward, SHIFT)


def _mqm_first_item(b: Browser) -> None:
    """Two spans on the German item (mouse, then keyboard), one more added and removed, submit."""
    wait_item(b, 0)
    assert _text(b, "#progress-text") == "0 / 4"
    drag_chars(b, 6, 8)
    assert selected_text(b) == "Bär" == GERMAN[6:9]
    assert _pick_category(b, 1) == "Accuracy/Mistranslation"
    press(b, "2")
    assert _span_rows(b) == [[6, 9]]
    start = GERMAN.index("Brücke")
    _keyboard_select(b, start, len("Brücke"))
    assert selected_text(b) == "Brücke"
    # issue 48: every span gets its own category (before, the first span's stayed chosen and went silently)
    assert b.eval("document.getElementById('category').value") == ""
    press(b, "1")
    assert "Choose a category" in str(_text(b, "#message")) and len(_span_rows(b)) == 1
    _pick_category(b, 1)
    press(b, "1")
    double_click(b, f"#tgt-chars .ch[data-i='{GERMAN.index('läuft') + 2}']")
    assert selected_text(b) == "läuft"
    _pick_category(b, 1)
    press(b, "3")
    assert len(_span_rows(b)) == 3
    click(b, "#spans .span-item:nth-child(3) button.rm")
    assert _span_rows(b) == [[6, 9], [start, start + 6]]
    press(b, "Enter", CTRL)
    wait_item(b, 1)
    assert _text(b, "#progress-text") == "1 / 4"


def _hostile_item(b: Browser) -> None:
    """The hostile segment (item 1) is shown as characters, its bidi controls as visible markers."""
    assert b.eval("typeof window.__pwned") == "undefined"
    assert b.eval("document.querySelectorAll('img, script:not([src]), b, main i').length") == 0
    assert b.eval("document.scripts.length") == 1
    assert _text(b, ".seg-src") == HOSTILE_SRC
    chars = b.eval("Array.from(document.querySelectorAll('#tgt-chars .ch')).map(e => e.textContent)")
    assert len(chars) == len(HOSTILE_TGT)  # one element per code point, control characters included
    for i, ch in enumerate(HOSTILE_TGT):
        if ch in "\u202e\u202c\u2067\u2069":
            assert chars[i] in ("\u27e8RLO\u27e9", "\u27e8PDF\u27e9", "\u27e8RLI\u27e9", "\u27e8PDI\u27e9")
        else:
            assert chars[i] == ch
    titles = b.eval("Array.from(document.querySelectorAll('#tgt-chars .ctl')).map(e => e.title)")
    assert [t.split()[0] for t in titles] == ["U+202E", "U+202C", "U+2067", "U+2069"]
    # No direction control of the data reaches the page: it cannot reorder the interface.
    assert b.eval(r"/[\u202a-\u202e\u2066-\u2069]/.test(document.body.textContent)") is False
    assert "{{7*7}}" in str(_text(b, "#tgt-chars"))
    press(b, "n")
    assert b.eval("document.getElementById('no-error').checked") is True
    press(b, "Enter", CTRL)
    wait_item(b, 2)


def _cjk_and_edit(b: Browser) -> None:
    """A Chinese span, submitted; then back to it, changed to "no error": version 2, history kept."""
    double_click(b, "#tgt-chars .ch[data-i='9']")
    assert selected_text(b) == "咖啡"  # the browser's word segmenter knows Chinese words
    drag_chars(b, 3, 4)
    assert selected_text(b) == "喝茶"
    _pick_category(b, 2)
    press(b, "3")
    press(b, "Enter", CTRL)
    wait_item(b, 3)
    b.eval("document.activeElement.blur()")
    press(b, "[")
    wait_item(b, 2)
    assert "version 1" in str(_text(b, "#edit-banner"))
    assert _span_rows(b) == [[3, 5]]
    click(b, "#spans .span-item button.rm")
    press(b, "n")
    press(b, "Enter", CTRL)
    wait_item(b, 3)
    assert "version 2" in str(_text(b, "#status"))


def _rtl_item(b: Browser) -> None:
    """Right to left: the translation is laid out rtl and Shift+ArrowLeft moves forward in the text."""
    assert b.eval("getComputedStyle(document.getElementById('tgt-chars')).direction") == "rtl"
    _keyboard_select(b, 0, 5, forward="ArrowLeft")
    assert selected_text(b) == ARABIC[:5]
    _pick_category(b, 1)
    press(b, "1")
    press(b, "[")  # unsaved changes: the first request to leave only warns
    assert "not saved" in str(_text(b, "#message"))
    assert b.eval("document.getElementById('app').getAttribute('data-position')") == "3"
    press(b, "Enter", CTRL)
    wait_for(b, "document.getElementById('app').getAttribute('data-state') === 'done'")
    assert _text(b, "#progress-text") == "4 / 4"


def test_mqm_spans_through_the_browser_land_at_code_point_offsets(browser: Browser, tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "mqm", ITEMS)
    with serving(campaign) as (link, _proc):
        open_page(browser, link)
        assert browser.eval("document.body.getAttribute('data-scheme')") == "mqm"
        _mqm_first_item(browser)
        _hostile_item(browser)
        _cjk_and_edit(browser)
        _rtl_item(browser)
        assert browser.errors() == []
    rows = list(csv.DictReader(_export(campaign, "mqm-tsv", tmp_path / "mqm.tsv").splitlines(),
                               delimiter="\t", quoting=csv.QUOTE_NONE))
    by_seg = [(r["doc"], r["seg_id"], r["target"], r["category"], r["severity"]) for r in rows]
    b = GERMAN.index("Brücke")
    assert by_seg == [
        ("d1", "1", GERMAN[:6] + "<v>Bär</v>" + GERMAN[9:], "Accuracy/Mistranslation", "Major"),
        ("d1", "1", GERMAN[:b] + "<v>Brücke</v>" + GERMAN[b + 6:], "Accuracy/Mistranslation", "Minor"),
        ("d1", "2", HOSTILE_TGT, "No-error", "No-error"),
        ("d2", "1", CHINESE, "No-error", "No-error"),  # the newest version counts
        ("d3", "1", "<v>" + ARABIC[:5] + "</v>" + ARABIC[5:], "Accuracy/Mistranslation", "Minor"),
    ]
    with sqlite3.connect(f"file:{campaign / 'campaign.sqlite'}?mode=ro", uri=True) as con:
        assert con.execute("SELECT COUNT(*) FROM annotations").fetchone()[0] == 5  # the edit kept version 1


def test_esa_spans_and_score_then_errors_shown(browser: Browser, tmp_path: Path) -> None:
    clusters = {"src": "Great, thanks! Cafe and flag.", "tgt": CLUSTERS, "src_lang": "en", "tgt_lang": "de",
                "system": "sysA", "doc_id": "d9", "seg_id": "1"}
    campaign = _campaign(tmp_path, "esa", ITEMS[:1] + [clusters])
    with serving(campaign) as (link, proc):
        open_page(browser, link)
        wait_item(browser, 0)
        assert browser.eval("document.getElementById('category')") is None  # ESA: severity only
        drag_chars(browser, 6, 8)
        press(browser, "2")
        press(browser, "Enter", CTRL)
        assert "score" in str(_text(browser, "#message"))  # not sent without a score
        click(browser, "#score-num")
        for key in "72":
            press(browser, key)
        assert browser.eval("document.getElementById('score-range').value") == "72"
        press(browser, "Enter", CTRL)
        wait_item(browser, 1)
        touch_drag_chars(browser, CLUSTERS.index("Super"), CLUSTERS.index("Super") + 4)  # a finger works too
        assert selected_text(browser) == "Super"
        # A selection never splits a user-perceived character; offsets stay code points.
        press(browser, "t")
        press(browser, "Home")
        press(browser, "ArrowRight", SHIFT)
        assert selected_text(browser) == "👍🏽" == CLUSTERS[:2]
        e = CLUSTERS.index("e\u0301")
        drag_chars(browser, e, e)
        assert selected_text(browser) == "e\u0301"
        press(browser, "End")
        press(browser, "ArrowLeft")
        press(browser, "ArrowLeft", SHIFT)
        assert selected_text(browser) == "🇩🇪"
        # 201 spans: the server's 422 names the field, and the page shows it. The page's own key handlers
        # make the spans (dispatched in one evaluation: 600 real key presses take half a minute).
        press(browser, "Home")
        browser.eval("""(() => { const t = document.getElementById('tgt-chars');
            const key = (k, shift) => t.dispatchEvent(new KeyboardEvent('keydown', {key: k, shiftKey: shift,
                bubbles: true, cancelable: true}));
            for (let i = 0; i < 201; i++) { key('ArrowRight', true); key('1', false); key('ArrowLeft', false); }
        })()""")
        assert len(_span_rows(browser)) == 201
        press(browser, "s")
        press(browser, "ArrowRight")
        press(browser, "Enter", CTRL)
        msg = wait_for(browser, "document.getElementById('message').hidden === false"
                                " && document.getElementById('message').textContent")
        assert msg.startswith("The server did not accept this annotation:") and "spans" in msg
        proc.terminate()
        proc.wait(timeout=10)
        press(browser, "Enter", CTRL)
        msg = wait_for(browser, "document.getElementById('message').textContent.includes('Cannot reach')"
                                " && document.getElementById('message').textContent")
        assert "annotate serve" in msg
    recs = [json.loads(x) for x in _export(campaign, "esa-jsonl", tmp_path / "esa.jsonl").splitlines()]
    assert len(recs) == 1
    assert recs[0]["score"] == 72
    assert [(s["start_i"], s["end_i"], s["severity"]) for s in recs[0]["esa_spans"]] == [(6, 9, "major")]
    assert recs[0]["hypothesis"][6:9] == "Bär"
    errors = browser.errors()
    assert len(errors) == 2 and "422" in errors[0], errors  # the refused post, then the unreachable server


@pytest.mark.parametrize(("scheme", "keys", "answer"), [("forced-choice", "32", "B"), ("response-set", "13", "AC")])
def test_choice_schemes_submit(browser: Browser, tmp_path: Path, scheme: str, keys: str, answer: str) -> None:
    campaign = _campaign(tmp_path, scheme, ITEMS[:1])
    with serving(campaign) as (link, _proc):
        open_page(browser, link)
        wait_item(browser, 0)
        hint = str(_text(browser, "#choices .hint"))
        assert ("every option you find reasonable" in hint) == (scheme == "response-set")
        assert browser.eval("document.querySelectorAll('#choices input').length") == 3
        assert browser.eval("document.querySelectorAll('#choices .option .description').length") == 3
        for key in keys:
            press(browser, key)
        press(browser, "Enter", CTRL)
        wait_for(browser, "document.getElementById('app').getAttribute('data-state') === 'done'")
        assert browser.errors() == []
    lines = _export(campaign, "ratings", tmp_path / "ratings.tsv").splitlines()
    assert lines[1].split("\t")[1:] == ["fc" if scheme == "forced-choice" else "rs", answer]


def test_da_slider_submits(browser: Browser, tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "da", ITEMS[:1])
    with serving(campaign) as (link, _proc):
        open_page(browser, link)
        wait_item(browser, 0)
        press(browser, "s")
        for _ in range(3):
            press(browser, "ArrowRight")
        assert browser.eval("document.getElementById('score-num').value") == "53"
        press(browser, "Enter", CTRL)
        wait_for(browser, "document.getElementById('app').getAttribute('data-state') === 'done'")
    lines = _export(campaign, "ratings", tmp_path / "da.tsv").splitlines()
    assert lines[1].split("\t")[-1] == "53.0"


def test_the_pages_hold_no_inline_code_no_external_url_and_no_html_sink() -> None:
    """What the server's CSP forbids, and the ways data could become markup, are absent from the files."""
    html = (STATIC / "annotate.html").read_text(encoding="utf-8")
    js = (STATIC / "annotate.js").read_text(encoding="utf-8")
    css = (STATIC / "annotate.css").read_text(encoding="utf-8")
    assert re.findall(r"<script\b[^>]*>", html) == ['<script src="/static/annotate.js">']
    assert not re.search(r"\sstyle=|<style\b|\son[a-z]+=|javascript:", html, re.IGNORECASE)
    for text in (html, js, css):
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(", text, re.IGNORECASE)
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|"
                         r"setAttribute\('style'|\.style\.", js)
