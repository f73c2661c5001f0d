"""Hand-written inline SVG plots (no plotting library, nothing to download).

Every function returns :class:`markupsafe.Markup` holding one ``<svg>``
element. All text that can come from users (system names, languages, labels)
goes through :func:`markupsafe.escape`; numbers are formatted by
:mod:`polyjudge.report.format`. The same markup is written to ``--plots-dir`` as standalone ``.svg`` files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from markupsafe import Markup, escape

from polyjudge.report.format import NOT_AVAILABLE, number
from polyjudge.report.format import svg_number as _f  # coordinates: short name keeps the markup readable

# Okabe-Ito colour-blind safe palette.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
FONT = 'font-family="system-ui,sans-serif" font-size="11"'


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _svg(width: int, height: int, body: list[str], title: str) -> Markup:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" {FONT}>'
            f"<title>{escape(title)}</title>")
    return Markup(head + "".join(body) + "</svg>")


def _text(x: float, y: float, s: object, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" {extra}>{escape(str(s))}</text>'


def _legend(names: Sequence[str], x: float, y: float, colours: Sequence[str] | None = None,
            opacities: Sequence[str] | None = None) -> list[str]:
    out = []
    for i, n in enumerate(names):
        yy = y + 14 * i
        c = colours[i] if colours else colour(i)
        o = opacities[i] if opacities else "1"
        out.append(f'<rect x="{_f(x)}" y="{_f(yy - 8)}" width="10" height="10" fill="{c}" fill-opacity="{o}"/>')
        out.append(_label(x + 14, yy + 1, n, "start"))
    return out


MAX_LABEL = 28


def short(s: object, n: int = MAX_LABEL) -> str:
    """A label cut to n characters (the full text stays in a tooltip)."""
    t = str(s)
    return t if len(t) <= n else t[: n - 1] + "…"


def _label_width(labels: Sequence[str]) -> int:
    return int(max([40] + [7.0 * len(short(s)) for s in labels]) + 16)


def _label(x: float, y: float, s: object, anchor: str = "end", extra: str = "") -> str:
    """A possibly shortened label that shows its full text on hover."""
    return (f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" {extra}>'
            f"<title>{escape(str(s))}</title>{escape(short(s))}</text>")


def _x_axis(x0: float, x1: float, y: float, lo: float, hi: float, label: str,
            grid_top: float | None = None) -> tuple[list[str], Callable[[float], float]]:
    ticks = nice_ticks(lo, hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])

    def sx(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    out = [f'<line x1="{_f(x0)}" y1="{_f(y)}" x2="{_f(x1)}" y2="{_f(y)}" stroke="#444"/>']
    for t in ticks:
        out.append(f'<line x1="{_f(sx(t))}" y1="{_f(y)}" x2="{_f(sx(t))}" y2="{_f(y + 4)}" stroke="#444"/>')
        if grid_top is not None:
            out.append(f'<line x1="{_f(sx(t))}" y1="{_f(grid_top)}" x2="{_f(sx(t))}" y2="{_f(y)}" '
                       'stroke="#ddd"/>')
        out.append(_text(sx(t), y + 15, number(t), "middle"))
    out.append(_text((x0 + x1) / 2, y + 30, label, "middle"))
    return out, sx


def _y_axis(x: float, y0: float, y1: float, lo: float, hi: float, label: str,
            grid_right: float | None = None) -> tuple[list[str], Callable[[float], float]]:
    """y0 is the bottom pixel, y1 the top pixel."""
    ticks = nice_ticks(lo, hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])

    def sy(v: float) -> float:
        return y0 - (v - lo) / (hi - lo) * (y0 - y1)

    out = [f'<line x1="{_f(x)}" y1="{_f(y0)}" x2="{_f(x)}" y2="{_f(y1)}" stroke="#444"/>']
    for t in ticks:
        out.append(f'<line x1="{_f(x - 4)}" y1="{_f(sy(t))}" x2="{_f(x)}" y2="{_f(sy(t))}" stroke="#444"/>')
        if grid_right is not None:
            out.append(f'<line x1="{_f(x)}" y1="{_f(sy(t))}" x2="{_f(grid_right)}" y2="{_f(sy(t))}" '
                       'stroke="#e5e5e5"/>')
        out.append(_text(x - 6, sy(t) + 4, number(t), "end"))
    out.append(_text(12, (y0 + y1) / 2, label, "middle",
                     f'transform="rotate(-90 12 {_f((y0 + y1) / 2)})"'))
    return out, sy


def box_plot(groups: Sequence[tuple[str, np.ndarray]], *, xlabel: str = "score",
             title: str = "Score distribution") -> Markup:
    """Horizontal box plots (quartiles, 1.5 IQR whiskers, mean as a diamond), one row per group."""
    groups = [(str(n), np.asarray(v, float)[np.isfinite(v)]) for n, v in groups]
    groups = [(n, v) for n, v in groups if v.size]
    lw = _label_width([n for n, _ in groups])
    width, row = 640, 22
    height = 50 + row * max(1, len(groups))
    allv = np.concatenate([v for _, v in groups]) if groups else np.array([0.0, 1.0])
    body, sx = _x_axis(lw, width - 20, height - 40, float(allv.min()), float(allv.max()), xlabel,
                       grid_top=8)
    for i, (name, v) in enumerate(groups):
        yc = 14 + row * i + row / 2
        q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
        iqr = q3 - q1
        lo_w = float(v[v >= q1 - 1.5 * iqr].min())
        hi_w = float(v[v <= q3 + 1.5 * iqr].max())
        c = colour(i)
        body.append(_label(lw - 6, yc + 4, name))
        body.append(f'<line x1="{_f(sx(lo_w))}" y1="{_f(yc)}" x2="{_f(sx(hi_w))}" y2="{_f(yc)}" stroke="{c}"/>')
        body.append(f'<rect x="{_f(sx(q1))}" y="{_f(yc - 7)}" width="{_f(max(sx(q3) - sx(q1), 1))}" '
                    f'height="14" fill="{c}" fill-opacity="0.25" stroke="{c}"/>')
        body.append(f'<line x1="{_f(sx(med))}" y1="{_f(yc - 7)}" x2="{_f(sx(med))}" y2="{_f(yc + 7)}" '
                    f'stroke="{c}" stroke-width="2"/>')
        m = sx(float(v.mean()))
        body.append(f'<path d="M{_f(m)} {_f(yc - 4)}l4 4l-4 4l-4 -4z" fill="#000">'
                    f"<title>{escape(name)}: mean {number(float(v.mean()))}, median {number(float(med))}, "
                    f"n={v.size}</title></path>")
    return _svg(width, height, body, title)


def ci_plot(rows: Sequence[tuple[str, float, float, float]], *, xlabel: str = "mean score",
            title: str = "System ranking") -> Markup:
    """One row per system: mean as a dot, the confidence interval as a bar."""
    lw = _label_width([r[0] for r in rows])
    width, row = 640, 20
    height = 50 + row * max(1, len(rows))
    vals = [v for r in rows for v in r[1:] if math.isfinite(v)] or [0.0, 1.0]
    body, sx = _x_axis(lw, width - 20, height - 40, min(vals), max(vals), xlabel, grid_top=8)
    for i, (name, m, lo, hi) in enumerate(rows):
        yc = 14 + row * i + row / 2
        body.append(_label(lw - 6, yc + 4, name))
        if math.isfinite(lo) and math.isfinite(hi):
            body.append(f'<line x1="{_f(sx(lo))}" y1="{_f(yc)}" x2="{_f(sx(hi))}" y2="{_f(yc)}" '
                        f'stroke="{colour(0)}" stroke-width="3" stroke-opacity="0.5"/>')
        body.append(f'<circle cx="{_f(sx(m))}" cy="{_f(yc)}" r="4" fill="{colour(0)}">'
                    f"<title>{escape(name)}: {number(m)} [{number(lo)}, {number(hi)}]</title></circle>")
    return _svg(width, height, body, title)


def _downsample_sorted(v: np.ndarray, k: int = 1500) -> tuple[np.ndarray, np.ndarray]:
    """Keep at most k points of a sorted curve (its shape is monotone, so quantiles suffice)."""
    n = v.size
    if n <= k:
        return np.arange(n, dtype=float), v
    idx = np.unique(np.linspace(0, n - 1, k).round().astype(int))
    return idx.astype(float), v[idx]


def sorted_curves(series: Sequence[tuple[str, np.ndarray]], *, ylabel: str, xlabel: str,
                  cap: float | None = None, title: str = "Sorted values") -> Markup:
    """Values of each series sorted from largest to smallest, one line per series.

    ``cap`` clips the y axis (points above it are drawn at the cap), as in the
    per-segment variability figure of GEMBA-MQM V2.
    """
    series = [(str(n), np.sort(np.asarray(v, float)[np.isfinite(v)])[::-1]) for n, v in series]
    series = [(n, v) for n, v in series if v.size]
    width, height = 640, 300
    x0, x1, y0, y1 = 56, width - 20, height - 45, 12
    n_max = max([v.size for _, v in series] + [1])
    top = max([float(v[0]) for _, v in series] + [0.0])
    if cap is not None:
        top = min(top, cap)
    bottom = min([float(v[-1]) for _, v in series] + [0.0])
    if not top > bottom:  # nothing defined, or all values equal: a unit axis, not one of 1e-09
        top = bottom + 1.0
    yb, sy = _y_axis(x0, y0, y1, bottom, top, ylabel, grid_right=x1)
    xb, sx = _x_axis(x0, x1, y0, 0, n_max - 1 if n_max > 1 else 1, xlabel)
    body = yb + xb
    for i, (name, v) in enumerate(series):
        xs, ys = _downsample_sorted(v)
        if cap is not None:
            ys = np.minimum(ys, cap)
        pts = " ".join(f"{_f(sx(x))},{_f(sy(y))}" for x, y in zip(xs, ys))
        body.append(f'<polyline points="{pts}" fill="none" stroke="{colour(i)}" stroke-width="1.5">'
                    f"<title>{escape(name)}</title></polyline>")
    if len(series) > 1:
        body += _legend([n for n, _ in series], x1 - 150, y1 + 10)
    return _svg(width, height, body, title)


def grouped_bars(categories: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *,
                 ylabel: str, title: str = "Bars", ymin: float | None = None,
                 ymax: float | None = None, colours: Sequence[str] | None = None,
                 opacities: Sequence[float] | None = None) -> Markup:
    """Vertical bars: one group per category, one bar per series.

    ``colours``/``opacities`` (one per series) override the palette, e.g. to
    colour by severity or to tell a judge's bars from the humans'.
    """
    cats = [str(c) for c in categories]
    ns = max(len(series), 1)
    group_w = max(24.0, 12.0 * ns + 10)
    longest = max([len(short(c, 24)) for c in cats] + [1])
    x0 = max(56, int(5.0 * longest))
    width = int(max(360, x0 + 20 + group_w * len(cats) + (170 if ns > 1 else 0)))
    height = 220 + int(5.0 * longest)
    y0, y1 = height - 20 - int(5.0 * longest), 12
    vals = [float(v) for _, vs in series for v in vs if v is not None and math.isfinite(float(v))]
    lo = ymin if ymin is not None else min(vals + [0.0])
    hi = ymax if ymax is not None else max(vals + [0.0])
    if not hi > lo:  # no defined value (all n/a), or all at lo: a unit axis, never one of 1e-09
        hi = lo + 1.0
    plot_right = x0 + group_w * len(cats) + 10
    body, sy = _y_axis(x0, y0, y1, lo, hi, ylabel, grid_right=plot_right)
    zero = sy(max(lo, min(0.0, hi))) if lo <= 0 <= hi else sy(lo)
    bw = (group_w - 10) / ns

    def col(i: int) -> str:
        return colours[i] if colours and i < len(colours) else colour(i)

    def op(i: int) -> str:
        return _f(opacities[i], digits=2) if opacities and i < len(opacities) else "1"

    for gi, c in enumerate(cats):
        gx = x0 + 5 + gi * group_w
        for si, (name, vs) in enumerate(series):
            v = vs[gi] if gi < len(vs) else None
            if v is None or not math.isfinite(float(v)):  # undefined: labelled, not drawn as a bar of 0
                bx = gx + si * bw + max(bw - 1, 1) / 2
                body.append(f'<text x="{_f(bx)}" y="{_f(zero - 3)}" text-anchor="middle" font-size="8" '
                            f'fill="#888"><title>{escape(name)} · {escape(c)}: {NOT_AVAILABLE}</title>'
                            f"{NOT_AVAILABLE}</text>")
                continue
            v = float(v)
            yv = sy(v)
            top, h = (yv, zero - yv) if yv < zero else (zero, yv - zero)
            body.append(f'<rect x="{_f(gx + si * bw)}" y="{_f(top)}" width="{_f(max(bw - 1, 1))}" '
                        f'height="{_f(max(h, 0.5))}" fill="{col(si)}" fill-opacity="{op(si)}">'
                        f"<title>{escape(name)} · {escape(c)}: {number(v)}</title></rect>")
        cx = gx + (group_w - 10) / 2
        body.append(_label(cx, y0 + 14, c, "end", f'transform="rotate(-35 {_f(cx)} {_f(y0 + 14)})"'))
    body.append(f'<line x1="{_f(x0)}" y1="{_f(zero)}" x2="{_f(plot_right)}" y2="{_f(zero)}" stroke="#444"/>')
    if ns > 1:
        body += _legend([n for n, _ in series], plot_right + 10, y1 + 10,
                        [col(i) for i in range(ns)], [op(i) for i in range(ns)])
    return _svg(width, height, body, title)


def line_band(series: Sequence[tuple[str, Sequence[float], Sequence[float], Sequence[float], Sequence[float]]], *,
              xlabel: str, ylabel: str, title: str = "Lines", ymin: float | None = None,
              ymax: float | None = None) -> Markup:
    """One line per series through its means, with a shaded band from ``lo`` to ``hi``.

    Each series is ``(name, xs, means, los, his)``; points with a non-finite x
    or mean are skipped, a non-finite band end falls back to the mean.
    """
    clean = []
    for name, xs, ms, los, his in series:
        pts = []
        for x, m, lo, hi in zip(xs, ms, los, his):
            x, m, lo, hi = float(x), float(m), float(lo), float(hi)
            if math.isfinite(x) and math.isfinite(m):
                pts.append((x, m, lo if math.isfinite(lo) else m, hi if math.isfinite(hi) else m))
        clean.append((str(name), sorted(pts)))
    width, height = 640, 300
    x0, x1, y0, y1 = 56, width - 190, height - 45, 12
    allx = [p[0] for _, ps in clean for p in ps] or [0.0, 1.0]
    ally = [v for _, ps in clean for p in ps for v in p[1:]] or [0.0, 1.0]
    lo_y = ymin if ymin is not None else min(ally)
    hi_y = ymax if ymax is not None else max(ally)
    yb, sy = _y_axis(x0, y0, y1, lo_y, hi_y, ylabel, grid_right=x1)
    xb, sx = _x_axis(x0, x1, y0, min(allx), max(allx) if max(allx) > min(allx) else min(allx) + 1, xlabel)
    body = yb + xb
    for i, (name, ps) in enumerate(clean):
        if not ps:
            continue
        c = colour(i)
        band = [f"{_f(sx(x))},{_f(sy(hi))}" for x, _, _, hi in ps]
        band += [f"{_f(sx(x))},{_f(sy(lo))}" for x, _, lo, _ in reversed(ps)]
        body.append(f'<polygon points="{" ".join(band)}" fill="{c}" fill-opacity="0.15" stroke="none"/>')
        line = " ".join(f"{_f(sx(x))},{_f(sy(m))}" for x, m, _, _ in ps)
        body.append(f'<polyline points="{line}" fill="none" stroke="{c}" stroke-width="2">'
                    f"<title>{escape(name)}</title></polyline>")
        for x, m, lo, hi in ps:
            body.append(f'<circle cx="{_f(sx(x))}" cy="{_f(sy(m))}" r="3" fill="{c}">'
                        f"<title>{escape(name)} at {number(x)}: {number(m)} [{number(lo)}, {number(hi)}]"
                        "</title></circle>")
    body += _legend([n for n, _ in clean], x1 + 12, y1 + 10)
    return _svg(width, height, body, title)


def radar(axes: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *,
          rmin: float = 0.0, rmax: float = 1.0, title: str = "Radar") -> Markup:
    """Radar (spider) chart: one spoke per axis, one closed polygon per series."""
    axes = [str(a) for a in axes]
    k = max(len(axes), 3)
    width, height = 560, 360
    cx, cy, R = 190, 180, 125

    def pt(i: int, v: float) -> tuple[float, float]:
        a = -math.pi / 2 + 2 * math.pi * i / k
        r = R * (min(max(v, rmin), rmax) - rmin) / ((rmax - rmin) or 1)
        return cx + r * math.cos(a), cy + r * math.sin(a)

    body = []
    for t in nice_ticks(rmin, rmax, 4):
        if t < rmin or t > rmax + 1e-12:
            continue
        ring = " ".join(f"{_f(pt(i, t)[0])},{_f(pt(i, t)[1])}" for i in range(k))
        body.append(f'<polygon points="{ring}" fill="none" stroke="#ddd"/>')
        body.append(_text(cx + 3, pt(0, t)[1] - 2, number(t), "start", 'fill="#777" font-size="9"'))
    for i, a in enumerate(axes):
        x, y = pt(i, rmax)
        body.append(f'<line x1="{cx}" y1="{cy}" x2="{_f(x)}" y2="{_f(y)}" stroke="#ccc"/>')
        lx, ly = cx + (x - cx) * 1.1, cy + (y - cy) * 1.1
        anchor = "middle" if abs(lx - cx) < 5 else ("start" if lx > cx else "end")
        body.append(_label(lx, ly + 4, a, anchor))
    for si, (name, vs) in enumerate(series):
        keep = [(i, float(v)) for i, v in enumerate(vs)
                if i < k and v is not None and math.isfinite(float(v))]
        if not keep:
            continue
        pts = [pt(i, v) for i, v in keep]
        poly = " ".join(f"{_f(x)},{_f(y)}" for x, y in pts)
        c = colour(si)
        body.append(f'<polygon points="{poly}" fill="{c}" fill-opacity="0.12" stroke="{c}" stroke-width="2">'
                    f"<title>{escape(name)}</title></polygon>")
        for (x, y), (i, v) in zip(pts, keep):
            a = axes[i] if i < len(axes) else ""
            body.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="2.5" fill="{c}">'
                        f"<title>{escape(name)} · {escape(a)}: {number(v)}</title></circle>")
    body += _legend([n for n, _ in series], 390, 20)
    return _svg(width, height, body, title)


def standalone(svg: Markup) -> str:
    """An SVG file's text: XML declaration plus the inline markup."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + str(svg) + "\n"
