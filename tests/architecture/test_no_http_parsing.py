"""Nothing under src/ speaks HTTP by hand: aiohttp frames and parses every request and answer.

An HTTP/1.1 client of our own once looped forever on a negative chunk size
(issue 24); this keeps one from coming back. The rules read the source with
``ast`` and name the line that breaks them.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "polyjudge"

# Text that only HTTP framing code needs: status lines, header/body separators, chunked coding.
FRAMING_TEXT = ("HTTP/1.", "\r\n\r\n", "transfer-encoding", "chunked", "content-length")
PROTOCOL_BASES = {"Protocol", "BufferedProtocol", "StreamReaderProtocol", "BaseProtocol"}
PROTOCOL_METHODS = {"data_received", "buffer_updated", "eof_received"}
RAW_CONNECTIONS = {"create_connection", "open_connection", "sock_connect", "sock_recv"}
OTHER_HTTP_LIBRARIES = {"httpx", "h11", "http.client", "requests", "urllib3"}
# Raw connections that carry no HTTP, each with its reason.
NOT_HTTP = {"engine/ray_executor.py": "a TCP reachability probe of a Ray cluster's address before ray.init",
            "backends/registry.py": "the preflight's TCP probe of a self-hosted server's port (no byte sent)"}


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "templates" not in p.parts)


def _breaches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(SRC)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            is_doc = isinstance(node.value, str) and "\n" in text and len(text) > 200
            if not is_doc and any(t in text.lower() if t.islower() else t in text for t in FRAMING_TEXT):
                found.append(f"{where}: HTTP framing text {text[:40]!r}")
        elif isinstance(node, ast.ClassDef):
            bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
            if bases & PROTOCOL_BASES and any(isinstance(b, ast.Attribute) and getattr(b.value, "id", "") == "asyncio"
                                              for b in node.bases):
                found.append(f"{where}: an asyncio protocol class {node.name}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in PROTOCOL_METHODS:
            found.append(f"{where}: protocol callback {node.name}")
        elif isinstance(node, ast.Attribute) and node.attr in RAW_CONNECTIONS:
            if str(path.relative_to(SRC)) in NOT_HTTP and node.attr == "create_connection":
                continue
            found.append(f"{where}: raw connection {node.attr}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{where}: imports {n}" for n in names if n.split(".")[0] in OTHER_HTTP_LIBRARIES
                      or n in OTHER_HTTP_LIBRARIES]
    return found


def test_nothing_under_src_frames_or_parses_http():
    breaches = [b for path in _modules() for b in _breaches(path)]
    assert breaches == [], "HTTP is aiohttp's job:\n" + "\n".join(breaches)


def test_the_rules_catch_a_hand_written_client(tmp_path):
    sample = tmp_path / "client.py"
    sample.write_text(
        "import asyncio\n"
        "class C(asyncio.Protocol):\n"
        "    def data_received(self, data):\n"
        "        head, _, body = data.partition(b'\\r\\n\\r\\n')\n"
        "async def go(loop):\n"
        "    await loop.create_connection(C, 'h', 80)\n"
        "    return b'POST / HTTP/1.1\\r\\n'\n", encoding="utf-8")
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        kinds = {b.split(": ", 1)[1].split(" ")[0] for b in _breaches(sample)}
    finally:
        SRC = saved
    assert kinds >= {"an", "protocol", "raw", "HTTP"}
