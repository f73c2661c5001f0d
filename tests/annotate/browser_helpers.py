"""Driving the annotation pages in headless Chromium over CDP (tests and the screenshot script).

Real input events only: mouse presses, moves and releases at the centre of the
translation's character elements (``.ch[data-i=K]``) and key presses, all sent
with ``Input.dispatch*Event``, so the page's own handlers run as for a person.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.report.cdp import Browser

# Windows virtual key codes CDP needs for keys that are not printable characters.
_KEYS: dict[str, tuple[str, int]] = {
    "Enter": ("Enter", 13), "Escape": ("Escape", 27), "Backspace": ("Backspace", 8), "Tab": ("Tab", 9),
    "ArrowLeft": ("ArrowLeft", 37), "ArrowUp": ("ArrowUp", 38), "ArrowRight": ("ArrowRight", 39),
    "ArrowDown": ("ArrowDown", 40), "Home": ("Home", 36), "End": ("End", 35),
}
SHIFT, CTRL = 8, 2


@contextmanager
def serving(campaign: Path, annotator: str = "ann") -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``polyjudge annotate serve CAMPAIGN --port 0`` in a subprocess; yields (the annotator's link, process)."""
    proc = subprocess.Popen([sys.executable, "-m", "polyjudge.cli.main", "annotate", "serve", str(campaign),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    lines: queue.Queue[str] = queue.Queue()
    errors: list[str] = []
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout, proc.stderr
    threading.Thread(target=lambda: [lines.put(x) for x in out], daemon=True).start()
    threading.Thread(target=lambda: [errors.append(x) for x in err], daemon=True).start()
    try:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            raise RuntimeError(f"annotate serve printed no link; stderr: {''.join(errors)[-2000:]}") from None
        name, _, link = line.strip().partition("\t")
        if name != annotator or not link.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"unexpected link line from annotate serve: {line!r}")
        yield link, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)


def wait_for(b: Browser, expr: str, timeout: float = 10.0) -> Any:
    """Poll a JavaScript expression until it is truthy; return its value."""
    deadline = time.time() + timeout
    while True:
        value = b.eval(expr)
        if value:
            return value
        if time.time() > deadline:
            raise TimeoutError(f"never true: {expr}")
        time.sleep(0.05)


def open_page(b: Browser, url: str) -> None:
    b.navigate(url)
    wait_for(b, "document.body.getAttribute('data-ready') === '1'")


def wait_item(b: Browser, position: int) -> None:
    wait_for(b, f"document.getElementById('app').getAttribute('data-position') === '{position}'"
                " && document.getElementById('app').getAttribute('data-state') === 'item'")


def center(b: Browser, selector: str) -> tuple[float, float]:
    """Viewport coordinates of an element's centre (scrolled into view first)."""
    rect = b.eval(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
        if (!e) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
    if rect is None:
        raise LookupError(selector)
    return float(rect[0]), float(rect[1])


def _mouse(b: Browser, kind: str, x: float, y: float, buttons: int) -> None:
    button = "left" if kind != "mouseMoved" or buttons else "none"
    b.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button, buttons=buttons,
           clickCount=1 if kind != "mouseMoved" else 0)


def click(b: Browser, selector: str) -> None:
    x, y = center(b, selector)
    _mouse(b, "mouseMoved", x, y, 0)
    _mouse(b, "mousePressed", x, y, 1)
    _mouse(b, "mouseReleased", x, y, 0)


def double_click(b: Browser, selector: str) -> None:
    x, y = center(b, selector)
    _mouse(b, "mouseMoved", x, y, 0)
    for count in (1, 2):
        b.call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", buttons=1, clickCount=count)
        b.call("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y, button="left", buttons=0, clickCount=count)


def drag_chars(b: Browser, first: int, last: int) -> None:
    """Press on character ``first`` of the translation, move over every character to ``last``, release."""
    x, y = center(b, f"#tgt-chars .ch[data-i='{first}']")
    _mouse(b, "mouseMoved", x, y, 0)
    _mouse(b, "mousePressed", x, y, 1)
    step = 1 if last >= first else -1
    for i in range(first + step, last + step, step):
        x, y = center(b, f"#tgt-chars .ch[data-i='{i}']")
        _mouse(b, "mouseMoved", x, y, 1)
    _mouse(b, "mouseReleased", x, y, 0)


def touch_drag_chars(b: Browser, first: int, last: int) -> None:
    """A finger on character ``first`` of the translation, moved over every character to ``last``, lifted."""
    b.call("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
    try:
        step = 1 if last >= first else -1
        points = [center(b, f"#tgt-chars .ch[data-i='{i}']") for i in range(first, last + step, step)]
        b.call("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": points[0][0], "y": points[0][1]}])
        for x, y in points[1:]:
            b.call("Input.dispatchTouchEvent", type="touchMove", touchPoints=[{"x": x, "y": y}])
        b.call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
    finally:
        b.call("Emulation.setTouchEmulationEnabled", enabled=False)


def press(b: Browser, key: str, modifiers: int = 0) -> None:
    """Press and release one key; ``key`` is a printable character or a name from _KEYS."""
    if key in _KEYS:
        name, code = _KEYS[key]
        common: dict[str, Any] = {"key": name, "code": name, "windowsVirtualKeyCode": code,
                                  "nativeVirtualKeyCode": code, "modifiers": modifiers}
        text = "\r" if key == "Enter" and not modifiers else ""
    else:
        code = ord(key.upper()) if key.isalnum() else ord(key)
        common = {"key": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code, "modifiers": modifiers}
        text = key if not modifiers & CTRL else ""
    b.call("Input.dispatchKeyEvent", type="keyDown" if text else "rawKeyDown", text=text, **common)
    b.call("Input.dispatchKeyEvent", type="keyUp", **common)


def selected_text(b: Browser) -> str:
    """The characters currently highlighted as the selection, in order."""
    return str(b.eval("Array.from(document.querySelectorAll('#tgt-chars .ch.sel')).map(e => e.textContent).join('')"))
