"""One self-contained HTML file per study: inline CSS, SVG and script, no network.

Safety: the page is rendered by Jinja2 with autoescaping on, the data for the
span browser is embedded as JSON in ``<script type="application/json">`` with
every ``<``, ``>`` and ``&`` written as a ``\\u`` escape (so neither ``</script>``
nor ``<!--`` can end the block), the script builds the table with
``textContent`` only, and a Content-Security-Policy allows no network and no
script other than the page's own (by hash): even a missed escape could not
run injected code.

Secrets: every value the page shows (texts, tables, figures, the span
browser's data) passes through :class:`polyjudge.data.secrets.Redactor` as it
is rendered, and so do the standalone SVG files; the page's own script,
style and policy are left byte-exact (the script's hash is in the policy).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from polyjudge._version import __version__
from polyjudge.data.errors import InputError
from polyjudge.data.secrets import Redactor
from polyjudge.report import svg
from polyjudge.report.load import RERANK_JSON, RunData, load_run
from polyjudge.report.sections import Figure, Section, build_sections
from polyjudge.reranking.summary import RUN_DIR as RERANK_RUN
from polyjudge.reranking.summary import is_rerank_output, read_rerank
from polyjudge.rundir import RunDir
from polyjudge.rundir.ownership import atomic_write, check_out_path, claim

_TEMPLATE_PKG = "polyjudge"


def _asset(name: str) -> str:
    return resources.files(_TEMPLATE_PKG).joinpath("templates", "report", name).read_text(encoding="utf-8")


def json_for_script(obj: Any) -> Markup:
    """JSON safe to place inside a ``<script>`` element (and readable by JSON.parse)."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    s = (s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
         .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return Markup(s)


def _env(finalize: Callable[[Any], Any] | None = None) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FunctionLoader(lambda n: _asset(n)),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, finalize=finalize)


def _redacting(redactor: Redactor, keep: tuple[object, ...]) -> Callable[[Any], Any]:
    """A Jinja ``finalize`` hook masking secrets in every printed value but those in ``keep``."""
    def finalize(value: Any) -> Any:
        if any(value is k for k in keep):
            return value
        if isinstance(value, Markup):
            return Markup(redactor(str(value)))
        if isinstance(value, str):
            return redactor(value)
        return value
    return finalize


@dataclass(slots=True)
class Report:
    html: str
    sections: list[Section]
    figures: list[tuple[str, Figure]]  # (file stem, figure)
    seconds: float


def render(runs: list[RunData], *, title: str | None = None, n_boot: int = 1000,
           studies: dict[str, Any] | None = None) -> Report:
    """Build the report for already loaded runs (and study outputs given on their own)."""
    t0 = time.perf_counter()
    sections, data = build_sections(runs, n_boot=n_boot, studies=studies)
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
           "img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'")
    title = title or "polyjudge report: " + (", ".join(r.name for r in runs) or "study outputs")
    css, code = Markup(_asset("report.css")), Markup(script)
    html = _env(_redacting(Redactor(), (css, code, csp))).get_template("report.html.j2").render(
        title=title, sections=sections, css=css, script=code,
        csp=csp, data={k: json_for_script(v) for k, v in data.items()}, version=__version__,
        generated=time.strftime("%Y-%m-%d %H:%M:%S"))
    figures = []
    multi = len(runs) > 1
    for sec in sections:
        for b in sec.blocks:
            if isinstance(b, Figure):
                stem = (f"{sec.run}-{b.name}" if multi and sec.run else b.name)
                figures.append(("".join(c if c.isalnum() or c in "-_." else "-" for c in stem), b))
    return Report(html, sections, figures, time.perf_counter() - t0)


def write_report(run_dirs: list[str | Path], out: str | Path, *, plots_dir: str | Path | None = None,
                 title: str | None = None, n_boot: int = 1000,
                 studies: dict[str, Any] | None = None) -> Report:
    """Load run directories, write the HTML file (and each plot as SVG when asked).

    ``studies``: study outputs given on their own (``metaeval.json`` /
    ``consistency.json`` / ``validation.json`` -> parsed JSON).
    """
    runs, studies = _load(run_dirs, studies)
    rep = render(runs, title=title, n_boot=n_boot, studies=studies)
    out = Path(out)
    if out.is_symlink():
        raise InputError("is a symlink; polyjudge does not write through symlinks", path=str(out), field="out")
    check_out_path(out.parent, "-o/--out")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, [rep.html])
    if plots_dir is not None:
        plots = claim(plots_dir, "report plots", adopt=_adopt_plots, flag="--plots-dir")
        seen: dict[str, int] = {}
        redactor = Redactor()
        for stem, fig in rep.figures:
            seen[stem] = seen.get(stem, 0) + 1
            name = stem if seen[stem] == 1 else f"{stem}-{seen[stem]}"
            plots.write_text(f"{name}.svg", redactor(svg.standalone(fig.svg)))
    return rep


def _load(paths: list[str | Path], studies: dict[str, Any] | None) -> tuple[list[RunData], dict[str, Any] | None]:
    """The runs of ``paths``; a reranking output folder without a judge's run (``--utility chrf``)
    is a study output instead (its section needs no run)."""
    runs = []
    for p in paths:
        if not RunDir.is_run_dir(p) and is_rerank_output(p) and not RunDir.is_run_dir(Path(p) / RERANK_RUN):
            if studies and RERANK_JSON in studies:
                raise InputError("give one reranking output without a judge's run at a time (its section has "
                                 "no run to tell it apart)", path=str(p))
            studies = {**(studies or {}), RERANK_JSON: read_rerank(p)}
        else:
            runs.append(load_run(p))
    return runs, studies


def _adopt_plots(root: Path) -> set[str] | None:
    """A plots folder of an earlier version: nothing but SVG files."""
    names = {p.name for p in root.iterdir()}
    return names if all(n.endswith(".svg") and (root / n).is_file() for n in names) else None
