"""Screenshots of the annotation pages for the documentation: docs/img/annotate-<scheme>.png.

Makes one small campaign per scheme in a temporary folder, serves it with
``polyjudge annotate serve --port 0``, drives headless Chromium (Debian's
/usr/bin/chromium, over the test suite's CDP client) to a typical state with
real mouse and key events, and captures a 1200x800 PNG.

    python scripts/annotate_screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.annotate.browser_helpers import (  # noqa: E402
    CTRL,
    SHIFT,
    click,
    drag_chars,
    open_page,
    press,
    serving,
    wait_item,
)
from tests.report.cdp import Browser, find_chromium  # noqa: E402

WIDTH, HEIGHT = 1200, 800


def _item(doc: str, seg: int, src: str, tgt: str, tgt_lang: str = "de") -> dict[str, str]:
    return {"src": src, "tgt": tgt, "src_lang": "en", "tgt_lang": tgt_lang, "system": "sys-1", "doc_id": doc,
            "seg_id": str(seg)}


NEWS = [
    _item("council", 1, "The city council approved the new budget on Tuesday.",
          "Der Stadtrat hat am Dienstag den neuen Haushalt genehmigt."),
    _item("council", 2, "Critics say the plan cuts funding for public libraries.",
          "Kritiker sagen, dass der Plan die Mittel für öffentliche Bücher kürzt."),
    _item("council", 3, "The mayor will present the details next week.",
          "Der Bürgermeister wird die Details letzte Woche vorstellen."),
    _item("weather", 1, "Heavy rain is expected over the weekend.",
          "Über das Wochenende wird starker Regen erwartet."),
    _item("weather", 2, "Residents near the river should prepare for flooding.",
          "Anwohner in der Nähe des Flusses sollten sich auf Überschwemmungen vorbereiten."),
]
ARABIC = [
    _item("greeting", 1, "Thank you for your patience while we fix the problem.",
          "شكرا لصبركم بينما نقوم بإصلاح المشكلة.", "ar"),
    _item("greeting", 2, "We will email you as soon as the service is back.",
          "سنرسل إليك رسالة بالبريد الإلكتروني فور عودة الخدمة.", "ar"),
]


def _init(tmp: Path, scheme: str, items: list[dict[str, str]]) -> Path:
    src = tmp / f"{scheme}.jsonl"
    src.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items), encoding="utf-8")
    folder = tmp / f"{scheme}-campaign"
    subprocess.run([sys.executable, "-m", "polyjudge.cli.main", "annotate", "init", str(folder), "--items", str(src),
                    "--scheme", scheme, "--annotators", "ann"], check=True, capture_output=True)
    return folder


def _category(b: Browser, downs: int) -> None:
    press(b, "c")
    for _ in range(downs):
        press(b, "ArrowDown")


def _mqm(b: Browser) -> None:
    press(b, "n")
    press(b, "Enter", CTRL)
    wait_item(b, 1)
    tgt = NEWS[1]["tgt"]
    start = tgt.index("Bücher")
    drag_chars(b, start, start + len("Bücher") - 1)
    _category(b, 1)
    press(b, "2")
    start = tgt.index("sagen, dass")
    drag_chars(b, start, start + len("sagen, dass") - 1)
    _category(b, 4)


def _esa(b: Browser) -> None:
    b.eval("document.activeElement.blur()")
    press(b, "]")
    press(b, "]")
    wait_item(b, 2)
    tgt = NEWS[2]["tgt"]
    press(b, "t")
    press(b, "Home")
    start = tgt.index("letzte")
    for _ in range(start):
        press(b, "ArrowRight")
    for _ in range(len("letzte")):
        press(b, "ArrowRight", SHIFT)
    press(b, "2")
    click(b, "#score-num")
    for key in "55":
        press(b, key)


def _da(b: Browser) -> None:
    press(b, "s")
    for _ in range(24):
        press(b, "ArrowRight")


def _forced_choice(b: Browser) -> None:
    press(b, "2")


def _response_set(b: Browser) -> None:
    press(b, "1")
    press(b, "2")


SHOTS: list[tuple[str, list[dict[str, str]], Callable[[Browser], None]]] = [
    ("mqm", NEWS, _mqm), ("esa", NEWS, _esa), ("da", ARABIC, _da),
    ("forced-choice", NEWS[1:3], _forced_choice), ("response-set", NEWS[1:3], _response_set),
]


def _capture(b: Browser, path: Path) -> None:
    b.eval("window.scrollTo(0, 0)")
    shot = b.call("Page.captureScreenshot", format="png",
                  clip={"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT, "scale": 1})
    path.write_bytes(base64.b64decode(shot["data"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder of the PNG files")
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("chromium not found (apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    b = Browser(chromium)
    try:
        b.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
        with tempfile.TemporaryDirectory(prefix="pj-annotate-shots-") as tmp:
            for scheme, items, drive in SHOTS:
                with serving(_init(Path(tmp), scheme, items)) as (link, _proc):
                    open_page(b, link)
                    wait_item(b, 0)
                    drive(b)
                    path = args.out / f"annotate-{scheme}.png"
                    _capture(b, path)
                    print(f"{path} ({path.stat().st_size} bytes)")
    finally:
        b.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
