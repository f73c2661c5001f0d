"""Issue 48's page items in headless Chromium against ``annotate serve`` (real mouse and key events over CDP):
source-side spans, omissions, comments, a category per span, editing by clicking, Backspace twice, Ctrl+Z,
adjacent spans, word-wise keyboard selection (a Chinese and a right-to-left Arabic segment), drafts after a
reload, messages in view, slider labels at their values, the document, the review list, guidelines,
AI suggestions and active time. With POLYJUDGE_SHOTS=DIR each page state is saved there as a PNG."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.annotate.browser_helpers import (
    CTRL,
    SHIFT,
    click,
    drag_chars,
    open_page,
    press,
    selected_text,
    serving,
    wait_for,
    wait_item,
)
from tests.annotate.campaign_helpers import span_run
from tests.helpers.cli import cli
from tests.report.cdp import Browser, find_chromium

CHROMIUM = find_chromium()
SRC = "他昨天在北京买了三本书。"
TGT = "He bought books in Beijing."
CHINESE = "我喜欢喝茶，不喜欢咖啡，也不喜欢可乐。"
ARABIC = "مرحبا بالعالم، كيف حالك اليوم؟"
DOC = [
    {"src": SRC, "tgt": TGT, "src_lang": "zh", "tgt_lang": "en", "system": "sysA", "doc_id": "news-7", "seg_id": "41",
     "doc_pos": 4},
    {"src": "书很贵。", "tgt": "The books were dear.", "src_lang": "zh", "tgt_lang": "en", "system": "sysA",
     "doc_id": "news-7", "seg_id": "42", "doc_pos": 5},
    {"src": "他很高兴。", "tgt": "He was happy.", "src_lang": "zh", "tgt_lang": "en", "system": "sysA",
     "doc_id": "news-7", "seg_id": "43", "doc_pos": 6},
]
WORDS = [
    {"src": "I like tea, not coffee, nor cola.", "tgt": CHINESE, "src_lang": "en", "tgt_lang": "zh", "system": "s",
     "doc_id": "d1", "seg_id": "1"},
    {"src": "Hello world, how are you today?", "tgt": ARABIC, "src_lang": "en", "tgt_lang": "ar", "system": "s",
     "doc_id": "d2", "seg_id": "1"},
]
SHOTS = os.environ.get("POLYJUDGE_SHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("Chromium not installed (apt-get install chromium)")
    b = Browser(CHROMIUM)
    b.call("Emulation.setFocusEmulationEnabled", enabled=True)  # the page counts time only while focused
    yield b
    b.quit()


@pytest.fixture(autouse=True)
def fresh_events(browser: Browser) -> None:
    browser.events.clear()


def shot(b: Browser, name: str) -> None:
    """Save the page as POLYJUDGE_SHOTS/NAME.png (when that folder is given)."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        b.screenshot(Path(SHOTS) / f"{name}.png")


def _campaign(tmp: Path, scheme: str, items: list[dict[str, Any]], *extra: Any) -> Path:
    src = tmp / f"{scheme}-items.jsonl"
    src.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items), encoding="utf-8")
    folder = tmp / f"{scheme}-campaign"
    assert cli("annotate", "init", folder, "--items", src, "--scheme", scheme, "--annotators", "ann", *extra) == 0
    return folder


def _text(b: Browser, selector: str) -> str:
    return str(b.eval(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent"))


def _rows(b: Browser) -> list[list[Any]]:
    rows = b.eval("Array.from(document.querySelectorAll('#spans .span-item')).map(li => [li.getAttribute('data-side'),"
                  " +li.getAttribute('data-start'), +li.getAttribute('data-end')])")
    assert isinstance(rows, list)
    return rows


def _category(b: Browser, name: str) -> None:
    """Choose a category with the keyboard: C, then arrow down to it."""
    press(b, "c")
    for _ in range(40):
        press(b, "ArrowDown")
        if b.eval("document.getElementById('category').value") == name:
            return
    raise AssertionError(name)


def _type(b: Browser, text: str) -> None:
    b.call("Input.insertText", text=text)


def _in_view(b: Browser, selector: str) -> bool:
    return bool(b.eval(f"""(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();
        return !document.querySelector({json.dumps(selector)}).hidden && r.top >= 0 && r.bottom <= innerHeight
            && r.height > 0; }})()"""))


def _classes(b: Browser, i: int) -> list[str]:
    return list(b.eval(f"Array.from(document.querySelector(\"#tgt-chars .ch[data-i='{i}']\").classList)"))


def _mark_source_and_omission(b: Browser) -> None:
    """A source span (昨天) with a comment, then an omission at offset 10 of the translation."""
    drag_chars_in(b, "src-chars", 1, 2)
    assert b.eval("Array.from(document.querySelectorAll('#src-chars .ch.sel')).map(e => e.textContent).join('')") \
        == "昨天"
    _category(b, "Accuracy/Omission")
    assert "missing" in _text(b, "#cat-definition")  # the chosen category's definition, next to the list
    press(b, "m")
    _type(b, "yesterday is not translated")
    click(b, "button.sev-major")
    assert _rows(b) == [["source", 1, 3]]
    press(b, "o")
    press(b, "Home")
    for _ in range(10):
        press(b, "ArrowRight")
    assert "Omission at offset 10" in _text(b, "#sel-text")  # "three" is missing before "books"
    press(b, "2")
    assert _rows(b) == [["source", 1, 3], ["target", 10, 10]]
    assert "omit" in _classes(b, 10)  # the caret mark where something is missing


def drag_chars_in(b: Browser, box: str, first: int, last: int) -> None:
    """Like drag_chars, in the box ``box`` (src-chars or tgt-chars)."""
    from tests.annotate.browser_helpers import _mouse, center

    x, y = center(b, f"#{box} .ch[data-i='{first}']")
    _mouse(b, "mouseMoved", x, y, 0)
    _mouse(b, "mousePressed", x, y, 1)
    for i in range(first + 1, last + 1):
        x, y = center(b, f"#{box} .ch[data-i='{i}']")
        _mouse(b, "mouseMoved", x, y, 1)
    _mouse(b, "mouseReleased", x, y, 0)


def _adjacent_edit_remove_undo(b: Browser) -> None:
    """Two adjacent spans keep their own edges; a click edits one; Backspace twice removes; Ctrl+Z undoes."""
    drag_chars(b, 3, 8)  # "bought"
    _category(b, "Accuracy/Mistranslation")
    press(b, "1")
    drag_chars(b, 9, 14)  # " books": starts where "bought" ends
    press(b, "1")
    assert "Choose a category" in _text(b, "#message")  # the category is chosen per span, none is carried over
    assert _in_view(b, "#message")
    _category(b, "Other")
    press(b, "1")
    assert "needs one" in _text(b, "#message")  # "Other" needs a comment
    press(b, "m")
    _type(b, "word order")
    click(b, "button.sev-minor")
    assert _rows(b)[-2:] == [["target", 3, 9], ["target", 9, 15]]
    assert "se" in _classes(b, 8) and "sb" in _classes(b, 9)  # two edges between them: not one span
    shot(b, "03-mqm-source-span-omission-adjacent-spans")
    click(b, "#tgt-chars .ch[data-i='5']")  # a click (no drag) on an error opens it
    assert "Editing error 3" in _text(b, "#status")
    assert b.eval("document.getElementById('category').value") == "Accuracy/Mistranslation"
    shot(b, "04-mqm-editing-a-span")
    press(b, "3")  # applied: now critical
    assert b.eval("document.querySelectorAll('#spans .badge')[2].textContent") == "critical"
    press(b, "Backspace")
    assert "Press Backspace again" in _text(b, "#message") and len(_rows(b)) == 4
    press(b, "Backspace")
    assert len(_rows(b)) == 3
    press(b, "z", CTRL)
    assert len(_rows(b)) == 4 and "Undone" in _text(b, "#status")


def test_source_spans_omissions_comments_and_span_editing_in_the_browser(browser: Browser, tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text("# Before you start\n\nMark **every** error; <img src=x onerror=window.__pwned=1> is text.\n\n"
                     "- one span per error\n- omissions: press O\n", encoding="utf-8")
    campaign = _campaign(tmp_path, "mqm", DOC, "--guidelines", guide)
    with serving(campaign) as (link, _proc):
        open_page(browser, link)
        wait_item(browser, 0)
        shot(browser, "01-mqm-item-with-document")
        # the document: every segment with its position, this one marked
        assert browser.eval("Array.from(document.querySelectorAll('#doc-list .doc-pos')).map(e => e.textContent)") \
            == ["\u00b6 4", "\u00b6 5", "\u00b6 6"]
        assert browser.eval("document.querySelector('#doc-list .current').getAttribute('data-pos')") == "4"
        # the header (with the progress) stays in view when the page scrolls
        browser.eval("window.scrollTo(0, document.body.scrollHeight)")
        assert _in_view(browser, ".bar") and _in_view(browser, "#progress-text")
        press(browser, "Enter", CTRL)  # nothing marked: the message is where the eye is, not scrolled away
        assert "Mark at least one error" in _text(browser, "#message") and _in_view(browser, "#message")
        shot(browser, "02-mqm-message-in-view")
        browser.eval("window.scrollTo(0, 0)")
        press(browser, "g")
        assert browser.eval("document.querySelector('#guidelines h3').textContent") == "Before you start"
        assert browser.eval("document.querySelectorAll('#guidelines strong, #guidelines li').length") == 3
        assert browser.eval("typeof window.__pwned") == "undefined"
        press(browser, "?")
        assert "missing from the translation" in _text(browser, "#definitions")
        shot(browser, "05-guidelines-and-definitions")
        press(browser, "g")
        press(browser, "?")
        _mark_source_and_omission(browser)
        _adjacent_edit_remove_undo(browser)
        browser.navigate(link)  # a reload before submitting: the changes come back, and the page says so
        wait_for(browser, "document.body.getAttribute('data-ready') === '1'")
        wait_item(browser, 0)
        assert len(_rows(browser)) == 4 and "Restored the changes" in _text(browser, "#draft-banner")
        shot(browser, "06-mqm-draft-restored-after-reload")
        press(browser, "Enter", CTRL)
        wait_item(browser, 1)
        assert browser.errors() == []
    assert cli("annotate", "export", campaign, "--to", "mqm-tsv", "-o", tmp_path / "m.tsv") == 0
    rows = [r.split("\t") for r in (tmp_path / "m.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    assert [(r[2], r[5], r[6], r[7], r[8], r[9]) for r in rows] == [
        ("4", "他<v>昨天</v>在北京买了三本书。", TGT, "Accuracy/Omission", "Major", "yesterday is not translated"),
        ("4", SRC, "He bought <v></v>books in Beijing.", "Accuracy/Omission", "Major", ""),
        ("4", SRC, "He <v>bought</v> books in Beijing.", "Accuracy/Mistranslation", "Critical", ""),
        ("4", SRC, "He bought<v> books</v> in Beijing.", "Other", "Minor", "word order"),
    ]


def _word_presses(b: Browser, key: str, n: int) -> int:
    """Ctrl + Shift + ``key`` until the selection holds ``n`` code points; how many presses it took."""
    press(b, "t")
    press(b, "Home")
    for k in range(1, n + 1):
        press(b, key, CTRL | SHIFT)
        if len(selected_text(b)) >= n:
            return k
    raise AssertionError(selected_text(b))


def test_word_wise_keyboard_selection_in_chinese_and_right_to_left_arabic(browser: Browser, tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "esa", WORDS)
    with serving(campaign) as (link, _proc):
        open_page(browser, link)
        wait_item(browser, 0)
        press(browser, "t")
        press(browser, "Home")
        press(browser, "ArrowRight", CTRL | SHIFT)
        assert selected_text(browser) == "我"  # the browser's Chinese word segmenter: 我 | 喜欢 | 喝茶 ...
        press(browser, "ArrowRight", CTRL | SHIFT)
        assert selected_text(browser) == "我喜欢"
        assert _word_presses(browser, "ArrowRight", len(CHINESE) - 1) < len(CHINESE) - 1  # before: one per character
        press(browser, "2")
        press(browser, "s")
        press(browser, "ArrowRight")
        press(browser, "Enter", CTRL)
        wait_item(browser, 1)
        assert browser.eval("getComputedStyle(document.getElementById('tgt-chars')).direction") == "rtl"
        press(browser, "t")
        press(browser, "Home")
        press(browser, "ArrowLeft", CTRL | SHIFT)  # right to left: the left arrow goes forward in the text
        assert selected_text(browser) == "مرحبا"
        press(browser, "ArrowLeft", CTRL | SHIFT)
        assert selected_text(browser) == "مرحبا بالعالم"
        shot(browser, "07-rtl-word-selection")
        press(browser, "1")
        press(browser, "s")
        press(browser, "ArrowLeft")
        press(browser, "Enter", CTRL)
        wait_for(browser, "document.getElementById('app').getAttribute('data-state') === 'done'")
        assert browser.errors() == []
    assert cli("annotate", "export", campaign, "--to", "esa-jsonl", "-o", tmp_path / "e.jsonl") == 0
    recs = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(s["start_i"], s["end_i"]) for s in recs[1]["esa_spans"]] == [(0, len("مرحبا بالعالم"))]


def _slider_labels(b: Browser) -> None:
    """Each label's mark at its value: where the thumb's centre is at that value (before: 22-30, 48-58, 78)."""
    got = b.eval("""(() => { const r = document.getElementById('score-range').getBoundingClientRect();
        return Array.from(document.querySelectorAll('.ticks .tick')).map(t => {
            const m = t.querySelector('.mark').getBoundingClientRect();
            return [+t.getAttribute('data-value'), (m.left - r.left - 8) / (r.width - 16) * 100]; }); })()""")
    assert [v for v, _ in got] == [0, 33, 66, 100]
    for value, at in got:
        assert abs(at - value) < 1.0, got


def test_ai_suggestions_time_slider_and_review_list_in_the_browser(browser: Browser, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in DOC), encoding="utf-8")
    run = span_run(tmp_path, items)
    campaign = _campaign(tmp_path, "esa", DOC, "--prefill", run)
    with serving(campaign) as (link, _proc):
        open_page(browser, link)
        wait_item(browser, 0)
        assert "AI\u2019s suggestions" in _text(browser, "#ai-note")
        assert _rows(browser) == [["target", 10, 15], ["target", 19, 26]]
        assert "ai" in _classes(browser, 11)
        shot(browser, "08-esa-ai-suggestions")
        click(browser, "#tgt-chars .ch[data-i='20']")  # "Beijing": edit, then delete it
        press(browser, "Backspace")
        press(browser, "Backspace")
        drag_chars(browser, 0, 1)
        press(browser, "1")
        _slider_labels(browser)
        press(browser, "s")
        press(browser, "ArrowLeft")
        shot(browser, "09-esa-score-slider")
        browser.eval("new Promise(r => setTimeout(r, 600))")
        press(browser, "ArrowLeft")
        press(browser, "Enter", CTRL)
        wait_item(browser, 1)
        press(browser, "s")
        press(browser, "ArrowRight")
        press(browser, "Enter", CTRL)
        wait_item(browser, 2)
        press(browser, "s")
        press(browser, "ArrowRight")
        press(browser, "Enter", CTRL)
        wait_for(browser, "document.getElementById('app').getAttribute('data-state') === 'done'")
        wait_for(browser, "document.querySelectorAll('#review tbody tr').length === 3")
        assert browser.eval("Array.from(document.querySelectorAll('#review tbody td:nth-child(5)'))"
                            ".map(e => e.textContent)") == ["done (version 1)"] * 3
        shot(browser, "10-done-page-review-list")
        click(browser, "#review button.go[data-position='1']")
        wait_item(browser, 1)
        assert browser.errors() == []
    assert cli("annotate", "export", campaign, "--to", "esa-jsonl", "-o", tmp_path / "e.jsonl") == 0
    rec = json.loads((tmp_path / "e.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert [(s["start_i"], s["end_i"], s["origin"]) for s in rec["esa_spans"]] == [(10, 15, "kept"), (0, 2, "added")]
    assert [(s["start_i"], s["end_i"], s["origin"]) for s in rec["deleted_spans"]] == [(19, 26, "deleted")]
    assert 500 <= rec["active_ms"] < 120_000  # the page's active time, idle gaps left out
    assert cli("annotate", "status", campaign) == 0
