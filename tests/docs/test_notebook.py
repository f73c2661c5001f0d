"""The tutorial that is a notebook (docs/tutorials/notebook.ipynb) runs in a real Jupyter kernel (issue 45).

nbclient starts an ipykernel (which runs an event loop, as every notebook does) and executes the cells one by
one, with the judge's OpenAI endpoint pointed at a scripted server (``OPENAI_BASE_URL``). Each cell's output
is checked against what the server was scripted to answer, and the server's request count between cells
shows the cache answering repeated calls; the cell tagged ``interrupt`` gets a real kernel interrupt
(SIGINT, what Jupyter's stop button sends) once some of its answers have arrived."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from pathlib import Path

import pytest

from tests.helpers.extras import needs_extra
from tests.helpers.openai_server import Reply, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "tutorials" / "notebook.ipynb"
pytestmark = needs_extra("pandas", "datasets")

SCORES = {"The dog is sleeping in the garden.": 92, "The dog sleeps garden.": 41, "See you tomorrow morning.": 88,
          "We see us morning.": 23}
LONG = 48  # the rows of the interrupted cell, each answered after a delay
DELAY_S = 0.25


def scripted(body):
    translation = re.search(r"English translation: (.+?)(?:\n\n|\Z)", body["messages"][-1]["content"], re.S).group(1)
    if translation in SCORES:
        return json.dumps({"score": SCORES[translation]})
    found = re.fullmatch(r"Sentence number (\d+)\.", translation)
    assert found, repr(body["messages"][-1]["content"][-300:])
    number = int(found.group(1))
    return Reply(json.dumps({"score": 50 + number}), delay_s=DELAY_S)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream" and out["name"] == "stdout":
            parts.append(out["text"])
        elif out["output_type"] in ("execute_result", "display_data"):
            parts.append(out["data"].get("text/plain", ""))
    return "".join(parts)


def _errors(cell) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for o in cell.get("outputs", []) if o["output_type"] == "error"]


def _interrupt_after(srv: ScriptedServer, pid: int, answered: int) -> threading.Thread:
    """SIGINT to the kernel once the server has answered ``answered`` of the long rows (what Jupyter sends)."""
    def watch() -> None:
        while sum(1 for b in srv.completed if "Sentence number" in b["messages"][-1]["content"]) < answered:
            threading.Event().wait(0.01)
        threading.Event().wait(0.1)  # the answers the server sent reach the judge (a request in flight is given up)
        os.kill(pid, signal.SIGINT)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def run_notebook(tmp_path: Path, monkeypatch) -> tuple[dict[str, object], dict[str, int]]:
    """Every code cell executed in order in one kernel: each tagged cell and the requests it sent."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells, sent = {}, {}
    with ScriptedServer(scripted) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-notebook-test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH")]  # the kernel imports this checkout
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
        client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=False,
                                resources={"metadata": {"path": str(tmp_path)}})
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                tag = (_tags(cell) or [f"cell{index}"])[0]
                before = len(srv.requests)
                if tag == "interrupt":
                    _interrupt_after(srv, client.km.provisioner.pid, answered=8)
                client.execute_cell(cell, index)
                cells[tag], sent[tag] = cell, len(srv.requests) - before
    return cells, sent


def test_the_notebook_runs_in_a_jupyter_kernel(tmp_path, monkeypatch):
    cells, sent = run_notebook(tmp_path, monkeypatch)
    for tag, cell in cells.items():
        assert not _errors(cell), (tag, _errors(cell))
    expected = list(map(float, SCORES.values()))
    mean = sum(expected) / len(expected)
    # rows of dicts, judged once: the server's scores in the rows' order
    assert _text(cells["dicts"]) == repr(expected) and sent["dicts"] == len(SCORES)
    summary = _text(cells["summary"]).splitlines()
    assert float(summary[0]) == pytest.approx(mean)
    assert summary[1] == repr({"A": (92 + 88) / 2, "B": (41 + 23) / 2})
    assert summary[2].startswith("da|judge:gpt-4.1-mini|") and summary[3].startswith("True ")
    assert 0 < float(summary[3].split()[1]) < 0.01  # gpt-4.1-mini's price of four short requests
    # await apredict on dicts, a DataFrame and a Dataset: the same scores, each answered by the shared cache
    assert _text(cells["await-dicts"]) == "True"
    assert [line.split()[-1] for line in _text(cells["dataframe"]).splitlines()[1:]] == [str(s) for s in expected]
    assert _text(cells["dataset"]).splitlines() == [repr(expected)] * 3
    for tag in ("await-dicts", "dataframe", "dataset", "cached", "compute", "mistakes", "presets"):
        assert sent[tag] == 0, tag
    assert sent["corpus"] == len(SCORES)  # da shows the judge a row's reference: new prompts
    assert _text(cells["cached"]) == "0.0 0 4\n"
    corpus = _text(cells["corpus"]).splitlines()
    assert corpus[0] == f"da = {mean:.2f}" and corpus[1].startswith(f"da = {mean:.2f} (da|judge:gpt-4.1-mini|")
    assert _text(cells["compute"]) == repr({"mean_score": mean, "scores": expected})
    mistakes = _text(cells["mistakes"])
    assert "unexpected keyword argument 'temprature' (did you mean 'temperature'?)" in mistakes
    assert "field 'runs'" in mistakes and "row 0, field 'mt': has no 'mt'" in mistakes
    # the kernel interrupt: some answers kept, the next run sends only the rest
    said = _text(cells["interrupt"])
    kept = int(re.search(r"interrupted: (\d+) of 48 judgments answered, kept in the shared response cache", said)[1])
    assert 1 <= kept < LONG and sent["interrupt"] < LONG
    assert sent["resume"] == LONG - kept and _text(cells["resume"]) == str(LONG)
    assert "gemba-mqm-v2: GEMBA-MQM V2" in _text(cells["presets"])
