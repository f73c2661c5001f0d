import json
import re

import pytest

from polyjudge.data.records import Item


@pytest.fixture
def items():
    out = []
    for system in ("A", "B"):
        for seg in range(1, 4):
            out.append(Item(src=f"source {seg}", tgt=f"{system} translation {seg}", src_lang="en", tgt_lang="de",
                            doc_id="d1" if seg < 3 else "d2", seg_id=str(seg), system=system))
    return out


def da_score(body) -> int:
    """Deterministic scripted judge: system A is better; the seed (run) shifts the score."""
    user = body["messages"][-1]["content"]
    m = re.search(r"translation: (\w) translation (\d)", user)
    system, seg = m.group(1), int(m.group(2))
    return (80 if system == "A" else 50) + seg + body.get("seed", 0)


@pytest.fixture
def da_responder():
    return lambda body: json.dumps({"score": da_score(body)})
