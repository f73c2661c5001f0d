"use strict";
// polyjudge report: span browser. Builds every cell with textContent only,
// so no text from the data is ever parsed as HTML.
window.__reportErrors = [];
window.addEventListener("error", function (e) { window.__reportErrors.push(String(e.message)); });

(function () {
  var SEV_CLASS = { critical: "sev-critical", major: "sev-major", minor: "sev-minor", neutral: "sev-neutral" };

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }

  function sevClass(name) { return SEV_CLASS[name] || "sev-other"; }

  function option(select, value, label) {
    var o = document.createElement("option");
    o.value = String(value);
    o.textContent = String(label);
    select.appendChild(o);
  }

  // Highlight spans (code-point offsets) in text; empty spans become omission markers.
  function highlight(text, spans, D) {
    var cps = Array.from(text || "");
    var n = cps.length;
    var frag = document.createDocumentFragment();
    var cuts = [0, n];
    var omitAt = {};
    spans.forEach(function (s, k) {
      var a = Math.max(0, Math.min(n, s[0])), b = Math.max(0, Math.min(n, s[1]));
      if (b <= a) { (omitAt[a] = omitAt[a] || []).push(k); } else { cuts.push(a, b); }
    });
    cuts = Array.from(new Set(cuts)).sort(function (x, y) { return x - y; });
    Object.keys(omitAt).forEach(function (p) { if (cuts.indexOf(+p) < 0) { cuts.push(+p); } });
    cuts.sort(function (x, y) { return x - y; });
    function tip(k) {
      var s = spans[k];
      return D.severities[s[2]] + " · " + D.categories[s[3]] + (s[4] ? ": " + s[4] : "");
    }
    for (var i = 0; i < cuts.length; i++) {
      var a = cuts[i];
      (omitAt[a] || []).forEach(function (k) {
        var m = el("span", "omit " + sevClass(D.severities[spans[k][2]]), "\u2300");
        m.title = "omission — " + tip(k);
        frag.appendChild(m);
      });
      if (i + 1 >= cuts.length) break;
      var b = cuts[i + 1];
      if (b <= a) continue;
      var piece = cps.slice(a, b).join("");
      var cover = [];
      spans.forEach(function (s, k) { if (s[1] > s[0] && s[0] <= a && s[1] >= b) cover.push(k); });
      if (!cover.length) { frag.appendChild(document.createTextNode(piece)); continue; }
      var worst = cover.reduce(function (w, k) { return spans[k][2] < spans[w][2] ? k : w; }, cover[0]);
      var sp = el("span", "sp " + sevClass(D.severities[spans[worst][2]]), piece);
      sp.title = cover.map(tip).join("\n");
      frag.appendChild(sp);
    }
    return frag;
  }

  function SpanBrowser(root, D) {
    var segs = D.segs, rows = D.rows;
    var f = {};
    root.querySelectorAll("[data-f]").forEach(function (n) { f[n.getAttribute("data-f")] = n; });
    D.systems.forEach(function (s, i) { option(f.system, i, s); });
    D.judges.forEach(function (s, i) { option(f.judge, i, s); });
    var maxRun = rows.reduce(function (m, r) { return Math.max(m, r[2]); }, 0);
    for (var r = 0; r <= maxRun; r++) option(f.run, r, r);
    D.severities.forEach(function (s, i) { option(f.severity, i, s); });
    D.categories.forEach(function (s, i) { option(f.category, i, s); });
    var legend = root.querySelector(".legend");
    D.severities.forEach(function (s) { legend.appendChild(el("span", sevClass(s), s)); });
    legend.appendChild(el("span", "omit", "\u2300 omission"));

    var tbody = root.querySelector("tbody");
    var info = root.querySelector(".pageinfo");
    var page = 0, matched = [];

    function filter() {
      var sys = f.system.value, jd = f.judge.value, run = f.run.value;
      var sev = f.severity.value, cat = f.category.value;
      var q = f.text.value.trim().toLowerCase(), only = f.errors.checked;
      matched = [];
      for (var i = 0; i < rows.length; i++) {
        var row = rows[i], seg = segs[row[0]] || [0, "", "", "", "", null];
        if (sys !== "" && seg[0] !== +sys) continue;
        if (jd !== "" && row[1] !== +jd) continue;
        if (run !== "" && row[2] !== +run) continue;
        var sp = row[5];
        if (only && !sp.length) continue;
        if (sev !== "" && !sp.some(function (s) { return s[2] === +sev; })) continue;
        if (cat !== "" && !sp.some(function (s) { return s[3] === +cat; })) continue;
        if (q && (seg[3] + "\n" + seg[4]).toLowerCase().indexOf(q) < 0 &&
            !sp.some(function (s) { return (s[4] || "").toLowerCase().indexOf(q) >= 0; })) continue;
        matched.push(i);
      }
      page = 0;
      draw();
    }

    function draw() {
      var size = +f.pagesize.value || 50;
      var pages = Math.max(1, Math.ceil(matched.length / size));
      page = Math.max(0, Math.min(page, pages - 1));
      var start = page * size, end = Math.min(matched.length, start + size);
      var body = document.createDocumentFragment();
      for (var i = start; i < end; i++) {
        var row = rows[matched[i]], seg = segs[row[0]] || [0, "", "", "", "", null];
        var tr = el("tr");
        tr.appendChild(el("td", "", D.systems[seg[0]]));
        tr.appendChild(el("td", "", seg[1]));
        tr.appendChild(el("td", "", seg[2]));
        tr.appendChild(el("td", "", D.judges[row[1]]));
        tr.appendChild(el("td", "", row[2]));
        var status = D.statuses[row[3]];
        tr.appendChild(el("td", status === "ok" ? "" : "status-bad", status === "ok" ? row[4] : status));
        tr.appendChild(el("td", "src", seg[3]));
        var td = el("td", "text");
        if (seg[4]) td.appendChild(highlight(seg[4], row[5], D));
        tr.appendChild(td);
        var list = el("td", "spanlist");
        row[5].forEach(function (s) {
          list.appendChild(el("div", "", "[" + s[0] + "," + s[1] + ") " + D.severities[s[2]] + " · " +
            D.categories[s[3]] + (s[4] ? ": " + s[4] : "")));
        });
        tr.appendChild(list);
        body.appendChild(tr);
      }
      tbody.replaceChildren(body);
      info.textContent = matched.length ? "rows " + (start + 1) + "\u2013" + end + " of " + matched.length +
        " (page " + (page + 1) + " of " + pages + ")" : "no rows match";
      root.setAttribute("data-matched", String(matched.length));
    }

    var timer = null;
    Object.keys(f).forEach(function (k) {
      var n = f[k];
      if (k === "pagesize") { n.addEventListener("change", draw); return; }
      n.addEventListener(k === "text" ? "input" : "change", function () {
        if (k !== "text") { filter(); return; }
        clearTimeout(timer);
        timer = setTimeout(filter, 150);
      });
    });
    root.querySelector("[data-p=prev]").addEventListener("click", function () { page--; draw(); });
    root.querySelector("[data-p=next]").addEventListener("click", function () { page++; draw(); });
    root.__filter = filter;
    filter();
  }

  function init() {
    document.querySelectorAll(".spanbrowser").forEach(function (root) {
      var src = document.getElementById(root.getAttribute("data-source"));
      if (!src) return;
      SpanBrowser(root, JSON.parse(src.textContent));
    });
    document.body.setAttribute("data-ready", "1");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
