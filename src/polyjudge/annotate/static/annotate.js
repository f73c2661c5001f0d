// polyjudge annotate: the page script. It talks to the JSON API only (Authorization: Bearer TOKEN,
// the token taken from this page's path /a/TOKEN) and renders every piece of data as text.
// Offsets are Unicode code points of the translation: each code point of Array.from(tgt) is its own
// <span class="ch" data-i="k">, so a selection maps to code-point offsets exactly.
(function () {
  'use strict';

  // Languages written right to left, by code or by name (scripts: any "-Arab" or "-Hebr" code too).
  var RTL_LANGS = ['ar', 'arb', 'arc', 'ckb', 'dv', 'fa', 'he', 'heb', 'iw', 'ks', 'pes', 'ps', 'sd', 'syr', 'ug', 'ur',
    'urd', 'yi', 'arabic', 'dhivehi', 'farsi', 'hebrew', 'pashto', 'persian', 'sindhi', 'syriac', 'urdu', 'uyghur',
    'yiddish'];
  // Invisible characters that change the order or direction of text: shown as visible markers.
  var CONTROLS = {
    0x061C: 'ALM', 0x200E: 'LRM', 0x200F: 'RLM', 0x202A: 'LRE', 0x202B: 'RLE', 0x202C: 'PDF', 0x202D: 'LRO',
    0x202E: 'RLO', 0x2066: 'LRI', 0x2067: 'RLI', 0x2068: 'FSI', 0x2069: 'PDI', 0xFEFF: 'BOM'
  };
  var SCHEME_TITLES = {
    'mqm': 'MQM error spans', 'esa': 'Error span annotation (ESA)', 'da': 'Direct assessment (DA)',
    'forced-choice': 'Forced choice', 'response-set': 'Response set'
  };
  var SCORE_ANCHORS = [[0, 'no meaning kept'], [33, 'some meaning kept'], [66, 'most meaning kept, few slips'],
    [100, 'perfect meaning and grammar']];

  var S = {
    token: null, camp: null, item: null, chars: [], spans: [], noError: false, score: null,
    choice: null, choices: [], anchor: 0, caret: 0, dragging: false, dir: 'ltr', busy: false, pending: null,
    dirty: false, leaveTo: null
  };

  // ---------- small DOM helpers (data only ever goes through text nodes) ----------

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs) {
    var node = document.createElement(tag);
    var key;
    attrs = attrs || {};
    for (key in attrs) {
      if (!Object.prototype.hasOwnProperty.call(attrs, key) || attrs[key] === null || attrs[key] === undefined) {
        continue;
      }
      if (key === 'text') { appendText(node, String(attrs[key])); }
      else if (key === 'class') { node.className = attrs[key]; }
      else if (key === 'hidden' || key === 'disabled' || key === 'checked') { node[key] = !!attrs[key]; }
      else { node.setAttribute(key, String(attrs[key])); }
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  function hex(cp) {
    var h = cp.toString(16).toUpperCase();
    while (h.length < 4) { h = '0' + h; }
    return 'U+' + h;
  }

  function controlMarker(cp) {
    var name = CONTROLS[cp];
    return el('span', { 'class': 'ctl', title: hex(cp) + ' ' + name + ' (invisible direction control in the data)',
      'aria-label': 'control character ' + hex(cp) + ' ' + name }, '\u27E8' + name + '\u27E9');
  }

  // Append data text: plain runs as text nodes, direction controls as visible markers.
  function appendText(parent, text) {
    var run = '';
    Array.from(String(text)).forEach(function (ch) {
      var cp = ch.codePointAt(0);
      if (CONTROLS[cp]) {
        if (run) { parent.appendChild(document.createTextNode(run)); run = ''; }
        parent.appendChild(controlMarker(cp));
      } else {
        run += ch;
      }
    });
    if (run) { parent.appendChild(document.createTextNode(run)); }
    return parent;
  }

  // 'rtl' for a right-to-left language, else 'auto' (the browser looks at the text's first strong letter).
  function langDir(lang) {
    var l = String(lang || '').toLowerCase().replace(/_/g, '-');
    for (var i = 0; i < RTL_LANGS.length; i++) {
      if (l === RTL_LANGS[i] || l.indexOf(RTL_LANGS[i] + '-') === 0) { return 'rtl'; }
    }
    return l.indexOf('-arab') >= 0 || l.indexOf('-hebr') >= 0 ? 'rtl' : 'auto';
  }

  // A <bdi> holding data text, isolated from the page's own direction, with lang/dir from the language.
  function dataText(text, lang, cls) {
    var node = el('bdi', { 'class': 'data ' + (cls || ''), dir: langDir(lang) });
    if (lang && /^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/.test(lang)) {
      node.setAttribute('lang', lang.replace(/_/g, '-'));
    }
    return appendText(node, text);
  }

  // ---------- API ----------

  function ApiError(status, message) { this.status = status; this.message = message; }

  function api(method, path, body) {
    var init = { method: method, headers: { 'Authorization': 'Bearer ' + S.token }, cache: 'no-store',
      credentials: 'omit', redirect: 'error' };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (resp) {
      return resp.text().then(function (raw) {
        var data = null;
        try { data = raw ? JSON.parse(raw) : null; } catch (e) { data = null; }
        if (!resp.ok) {
          throw new ApiError(resp.status, data && typeof data.error === 'string' ? data.error : '');
        }
        return data;
      });
    }, function () {
      throw new ApiError(0, '');
    });
  }

  function errorText(err) {
    if (!(err instanceof ApiError)) { return 'Unexpected error in the page: ' + String(err && err.message || err); }
    var detail = err.message ? ' (' + err.message + ')' : '';
    switch (err.status) {
      case 0: return 'Cannot reach the annotation server. Is "polyjudge annotate serve" still running? '
        + 'Your answer is still on this page: submit again once the server is back.';
      case 401: return 'This page was opened without an annotator token. Open the full link that '
        + '"polyjudge annotate serve" printed for you (it ends in /a/ and your token).' + detail;
      case 403: return 'The server refused this link: the token is not valid for this campaign, or the request '
        + 'came from another site. Open your own link from "polyjudge annotate serve".' + detail;
      case 404: return 'There is no item at that position in your queue.' + detail;
      case 413: return 'This annotation is too large for the server (request bodies are limited to 64 KiB). '
        + 'Remove some spans and submit again.' + detail;
      case 415: return 'The server expected a JSON request.' + detail;
      case 422: return 'The server did not accept this annotation: ' + (err.message || 'invalid input') + '.';
      default: return 'The server answered with an error (HTTP ' + err.status + ')' + detail + '.';
    }
  }

  function showMessage(text) {
    var box = $('message');
    box.textContent = '';
    if (text) { appendText(box, text); }
    box.hidden = !text;
  }

  function showStatus(text) { $('status').textContent = text || ''; }

  function fail(err) { S.busy = false; showMessage(errorText(err)); }

  // ---------- header and progress ----------

  function setProgress(p) {
    if (!p) { return; }
    var bar = $('progress-bar');
    bar.max = Math.max(1, p.total);
    bar.value = p.done;
    $('progress-text').textContent = p.done + ' / ' + p.total;
    if (S.camp) { S.camp.progress = p; }
  }

  function renderHeader(c) {
    appendText($('campaign-name'), c.name);
    appendText($('annotator'), c.annotator);
    $('scheme').textContent = SCHEME_TITLES[c.scheme] || c.scheme;
    document.title = 'polyjudge annotate · ' + c.name;
    document.body.setAttribute('data-scheme', c.scheme);
    setProgress(c.progress);
    renderShortcuts(c);
  }

  function shortcutList(c) {
    var rows = [];
    if (c.scheme === 'mqm' || c.scheme === 'esa') {
      rows.push(['Drag', 'select characters of the translation (mouse, pen or finger)']);
      rows.push(['Double-click', 'select a word']);
      rows.push(['T', 'focus the translation']);
      rows.push(['Shift + \u2190 / \u2192', 'extend the selection by a character']);
      rows.push(['\u2190 / \u2192', 'move the cursor in the translation']);
      rows.push(['Esc', 'clear the selection']);
      if (c.scheme === 'mqm' && c.categories.length) { rows.push(['C', 'category list (\u2191 / \u2193 choose)']); }
      c.severities.forEach(function (sev, i) {
        rows.push([String(i + 1), 'add the selection as a ' + sev + ' error']);
      });
      rows.push(['Backspace', 'remove the last span']);
      if (c.scheme === 'mqm') { rows.push(['N', 'toggle "no error"']); }
    }
    if (c.score) { rows.push(['S', 'score (\u2190 / \u2192, or type a number)']); }
    if (c.scheme === 'forced-choice') { rows.push(['1 \u2013 ' + c.options.length, 'choose that option']); }
    if (c.scheme === 'response-set') { rows.push(['1 \u2013 ' + c.options.length, 'tick or untick that option']); }
    rows.push(['Ctrl + Enter', 'submit and go to the next item']);
    rows.push(['[  /  ]', 'previous / next item (without saving)']);
    return rows;
  }

  function renderShortcuts(c) {
    var body = $('shortcut-table').tBodies[0];
    body.textContent = '';
    shortcutList(c).forEach(function (r) {
      body.appendChild(el('tr', null, el('th', { scope: 'row' }, el('kbd', { text: r[0] })), el('td', { text: r[1] })));
    });
  }

  // ---------- the item ----------

  function loadState(item) {
    var a = item.annotation || {};
    S.item = item;
    S.chars = Array.from(item.tgt || '');
    S.bounds = clusterBounds(S.chars);
    S.spans = (a.spans || []).map(function (s) {
      return { start: s.start, end: s.end, category: s.category || '', severity: s.severity };
    });
    S.noError = !!a.no_error;
    S.score = typeof a.score === 'number' ? a.score : null;
    S.choice = a.choice || null;
    S.choices = Array.isArray(a.choices) ? a.choices.slice() : [];
    S.anchor = 0;
    S.caret = 0;
    S.dir = langDir(item.tgt_lang);
    S.dirty = false;
    S.leaveTo = null;
  }

  function pairRow(src, tgt, item, cls, label) {
    var row = el('div', { 'class': 'row ' + cls, role: 'row', 'aria-label': label });
    row.appendChild(el('div', { 'class': 'cell src', role: 'cell', 'data-label': 'Source' },
      dataText(src, item.src_lang)));
    row.appendChild(el('div', { 'class': 'cell tgt', role: 'cell', 'data-label': 'Translation' },
      dataText(tgt, item.tgt_lang)));
    return row;
  }

  function targetChars(item) {
    var box = el('bdi', { id: 'tgt-chars', 'class': 'data chars', dir: S.dir, tabindex: '0', role: 'group',
      'aria-label': 'Translation: drag with the mouse or use Shift and the arrow keys to select an error span',
      'aria-describedby': 'sel-text' });
    if (item.tgt_lang && /^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/.test(item.tgt_lang)) {
      box.setAttribute('lang', item.tgt_lang.replace(/_/g, '-'));
    }
    S.chars.forEach(function (ch, i) {
      var cp = ch.codePointAt(0);
      var node = CONTROLS[cp] ? controlMarker(cp) : el('span', null, ch);
      node.classList.add('ch');
      node.setAttribute('aria-hidden', 'true');
      node.setAttribute('data-i', String(i));
      box.appendChild(node);
    });
    if (!S.chars.length) { box.appendChild(el('span', { 'class': 'empty', text: '(empty translation)' })); }
    box.addEventListener('pointerdown', onCharDown);
    box.addEventListener('pointermove', onCharOver);
    box.addEventListener('pointerup', onPointerUp);
    box.addEventListener('pointercancel', onPointerUp);
    box.addEventListener('dblclick', onCharDouble);
    box.addEventListener('keydown', onCharKey);
    return box;
  }

  function renderPairs(item, withSpans) {
    var grid = el('div', { 'class': 'pairs', role: 'table', 'aria-label': 'Source and translation' });
    grid.appendChild(el('div', { 'class': 'row head', role: 'row' },
      el('div', { 'class': 'cell', role: 'columnheader' }, 'Source ',
        el('span', { 'class': 'lang', text: item.src_lang })),
      el('div', { 'class': 'cell', role: 'columnheader' }, 'Translation ',
        el('span', { 'class': 'lang', text: item.tgt_lang }))));
    var ctx = item.context || {};
    (ctx.before || []).forEach(function (c) {
      grid.appendChild(pairRow(c.src, c.tgt, item, 'ctx', 'context before'));
    });
    var cur = el('div', { 'class': 'row cur', role: 'row', 'aria-label': 'segment to annotate' });
    cur.appendChild(el('div', { 'class': 'cell src', role: 'cell', 'data-label': 'Source' },
      dataText(item.src, item.src_lang, 'seg-src')));
    var tgtCell = el('div', { 'class': 'cell tgt', role: 'cell', 'data-label': 'Translation' });
    if (withSpans) {
      // Screen readers get the translation as one text; the character elements are for selecting.
      tgtCell.appendChild(dataText(item.tgt, item.tgt_lang, 'sr-only'));
      tgtCell.appendChild(targetChars(item));
    } else {
      tgtCell.appendChild(dataText(item.tgt, item.tgt_lang, 'seg-tgt'));
    }
    cur.appendChild(tgtCell);
    grid.appendChild(cur);
    (ctx.after || []).forEach(function (c) { grid.appendChild(pairRow(c.src, c.tgt, item, 'ctx', 'context after')); });
    return grid;
  }

  function navBar(item) {
    var total = S.camp.progress.total;
    var prev = el('button', { type: 'button', id: 'prev', disabled: item.position <= 0 }, '\u2190 Previous');
    var next = el('button', { type: 'button', id: 'next', disabled: item.position >= total - 1 }, 'Next \u2192');
    var first = el('button', { type: 'button', id: 'first-open' }, 'First unannotated');
    prev.addEventListener('click', function () { goTo(item.position - 1); });
    next.addEventListener('click', function () { goTo(item.position + 1); });
    first.addEventListener('click', function () { if (mayLeave('next')) { loadNext(); } });
    var where = el('span', { 'class': 'where' }, 'Item ' + (item.position + 1) + ' of ' + total + ' \u00B7 document ',
      el('bdi', { text: item.doc_id == null ? '\u2014' : String(item.doc_id) }), ', segment ',
      el('bdi', { text: item.seg_id == null ? '\u2014' : String(item.seg_id) }));
    return el('nav', { 'class': 'nav', 'aria-label': 'Items' }, prev, where, next, first);
  }

  function editBanner(item) {
    if (!item.annotation) { return null; }
    var v = item.annotation.version;
    return el('p', { 'class': 'edit', id: 'edit-banner' },
      'You already annotated this item' + (v ? ' (version ' + v + ')' : '') + '. Your answer is loaded below; '
      + 'submitting again saves a new version, and earlier versions are kept as history.');
  }

  function renderItem(item) {
    loadState(item);
    setProgress(item.progress);
    var app = $('app');
    app.textContent = '';
    app.setAttribute('data-state', 'item');
    app.setAttribute('data-position', String(item.position));
    var scheme = S.camp.scheme;
    var spanScheme = scheme === 'mqm' || scheme === 'esa';
    app.appendChild(navBar(item));
    var banner = editBanner(item);
    if (banner) { app.appendChild(banner); }
    app.appendChild(renderPairs(item, spanScheme));
    var form = el('section', { 'class': 'panel', 'aria-label': 'Your annotation' });
    if (spanScheme) { form.appendChild(spanPanel()); }
    if (scheme === 'forced-choice' || scheme === 'response-set') { form.appendChild(choicePanel(scheme)); }
    if (S.camp.score) { form.appendChild(scorePanel()); }
    var submit = el('button', { type: 'button', id: 'submit', 'class': 'primary' }, 'Submit and next (Ctrl+Enter)');
    submit.addEventListener('click', submitAnnotation);
    form.appendChild(el('div', { 'class': 'actions' }, submit));
    app.appendChild(form);
    refresh();
    var focus = spanScheme ? $('tgt-chars') : null;
    if (focus) { focus.focus({ preventScroll: true }); }
  }

  // ---------- spans (MQM, ESA) ----------

  function spanPanel() {
    var c = S.camp;
    var box = el('div', { 'class': 'spans-panel' });
    box.appendChild(el('p', { id: 'sel-text', 'class': 'sel-text', 'aria-live': 'polite' }));
    var pick = el('div', { 'class': 'pick' });
    if (usesCategories()) {
      var sel = categorySelect(c.categories);
      pick.appendChild(el('div', { 'class': 'cat' }, el('label', { 'for': 'category', text: 'Category (C)' }), sel));
    }
    var sevs = el('div', { 'class': 'sevs', role: 'group', 'aria-labelledby': 'sev-label' },
      el('span', { id: 'sev-label', 'class': 'label', text: 'Add the selection as' }));
    c.severities.forEach(function (sev, i) {
      var b = el('button', { type: 'button', 'class': 'sev sev-' + sev, 'data-sev': sev,
        'aria-keyshortcuts': String(i + 1) }, (i + 1) + ' \u00B7 ' + sev);
      b.addEventListener('click', function () { addSpan(sev); });
      sevs.appendChild(b);
    });
    pick.appendChild(sevs);
    box.appendChild(pick);
    box.appendChild(el('h3', { id: 'spans-title', text: 'Marked errors' }));
    box.appendChild(el('ol', { id: 'spans', 'class': 'spans', 'aria-labelledby': 'spans-title' }));
    if (c.scheme === 'mqm') {
      var cb = el('input', { type: 'checkbox', id: 'no-error', 'aria-keyshortcuts': 'N' });
      cb.addEventListener('change', function () { S.noError = cb.checked; S.dirty = true; refresh(); });
      box.appendChild(el('label', { 'class': 'no-error', 'for': 'no-error' }, cb,
        ' No error: this translation has nothing to mark (N)'));
    }
    return box;
  }

  // ESA marks spans with a severity only; MQM also asks for a category.
  function usesCategories() { return S.camp.scheme === 'mqm' && S.camp.categories.length > 0; }

  // A listbox of the categories, grouped by their top level ("Accuracy/Omission" under "Accuracy").
  function categorySelect(cats) {
    var sel = el('select', { id: 'category', size: String(Math.min(cats.length + 4, 10)) });
    var groups = {};
    cats.forEach(function (cat) {
      var cut = cat.indexOf('/');
      var opt = appendText(el('option', { value: cat }), cut > 0 ? cat.slice(cut + 1) : cat);
      if (cut <= 0) { sel.appendChild(opt); return; }
      var top = cat.slice(0, cut);
      if (!groups[top]) { groups[top] = el('optgroup', { label: top }); sel.appendChild(groups[top]); }
      groups[top].appendChild(opt);
    });
    return sel;
  }

  function selection() {
    var a = Math.min(S.anchor, S.caret);
    var b = Math.max(S.anchor, S.caret);
    return a < b ? { start: a, end: b } : null;
  }

  function addSpan(sev) {
    var sel = selection();
    var cat = '';
    if (!sel) { showMessage('Select some characters of the translation first (drag, or Shift + arrow keys).'); return; }
    if (usesCategories()) {
      cat = $('category').value;
      if (!cat) { showMessage('Choose a category for this error first (C, then \u2191 / \u2193).'); return; }
    }
    S.spans.push({ start: sel.start, end: sel.end, category: cat, severity: sev });
    S.dirty = true;
    S.noError = false;
    S.anchor = S.caret = sel.end;
    showMessage('');
    showStatus('Added a ' + sev + ' error at offsets ' + sel.start + '\u2013' + sel.end + '.');
    refresh();
    $('tgt-chars').focus({ preventScroll: true });
  }

  function removeSpan(i) {
    S.spans.splice(i, 1);
    S.dirty = true;
    showStatus('Removed a span.');
    refresh();
  }

  function severityRank(sev) { return S.camp.severities.indexOf(sev); }

  function paintChars() {
    var box = $('tgt-chars');
    if (!box) { return; }
    var sel = selection();
    var worst = S.chars.map(function () { return -1; });
    S.spans.forEach(function (s) {
      for (var i = s.start; i < s.end && i < worst.length; i++) {
        worst[i] = Math.max(worst[i], severityRank(s.severity));
      }
    });
    var nodes = box.querySelectorAll('.ch');
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i];
      n.classList.toggle('sel', !!sel && i >= sel.start && i < sel.end);
      S.camp.severities.forEach(function (sev, k) { n.classList.toggle('sev-' + sev, worst[i] === k); });
      n.classList.toggle('caret', i === S.caret);
      n.classList.toggle('caret-end', S.caret === nodes.length && i === nodes.length - 1);
    }
  }

  function paintSelection() {
    var p = $('sel-text');
    if (!p) { return; }
    var sel = selection();
    p.textContent = '';
    if (!sel) {
      p.appendChild(document.createTextNode('No selection. Drag over the translation, or Shift + arrow keys.'));
      return;
    }
    p.appendChild(document.createTextNode('Selected offsets ' + sel.start + '\u2013' + sel.end + ': \u201C'));
    p.appendChild(dataText(S.chars.slice(sel.start, sel.end).join(''), S.item.tgt_lang, 'quote'));
    p.appendChild(document.createTextNode('\u201D'));
  }

  function paintSpanList() {
    var list = $('spans');
    if (!list) { return; }
    list.textContent = '';
    S.spans.forEach(function (s, i) {
      var rm = el('button', { type: 'button', 'class': 'rm', 'aria-label': 'Remove error ' + (i + 1) }, 'Remove');
      rm.addEventListener('click', function () { removeSpan(i); });
      var li = el('li', { 'class': 'span-item', 'data-start': String(s.start), 'data-end': String(s.end) },
        el('span', { 'class': 'badge sev-' + s.severity, text: s.severity }), ' ');
      if (s.category) {
        li.appendChild(el('span', { 'class': 'cat-name', text: s.category }));
        li.appendChild(document.createTextNode(' '));
      }
      li.appendChild(document.createTextNode('\u201C'));
      li.appendChild(dataText(S.chars.slice(s.start, s.end).join(''), S.item.tgt_lang, 'quote'));
      li.appendChild(document.createTextNode('\u201D '));
      li.appendChild(el('span', { 'class': 'offsets', text: 'offsets ' + s.start + '\u2013' + s.end }));
      li.appendChild(rm);
      list.appendChild(li);
    });
    if (!S.spans.length) {
      list.appendChild(el('li', { 'class': 'none', text: S.noError ? 'No error marked.' : 'None yet.' }));
    }
    var cb = $('no-error');
    if (cb) {
      cb.checked = S.noError;
      cb.disabled = S.spans.length > 0;
    }
  }

  function charIndex(target) {
    var node = target && target.closest ? target.closest('.ch') : null;
    return node ? parseInt(node.getAttribute('data-i'), 10) : -1;
  }

  // Mouse, pen or finger: the pointer is captured by the translation while it is down, and the character
  // under it is found from its position (a captured pointer's events all go to the translation).
  function onCharDown(e) {
    if (e.button !== 0) { return; }
    var i = charIndex(e.target);
    if (i < 0) { return; }
    e.preventDefault();
    var box = $('tgt-chars');
    box.focus({ preventScroll: true });
    if (box.setPointerCapture) { box.setPointerCapture(e.pointerId); }
    S.dragging = true;
    S.dragFrom = i;
    S.dragTo = i;
    S.anchor = snap(i, -1);
    S.caret = snap(i + 1, 1);
    refresh();
  }

  function onCharOver(e) {
    if (!S.dragging) { return; }
    var j = charIndex(document.elementFromPoint(e.clientX, e.clientY));
    if (j < 0) { return; }
    if (j === S.dragTo) { return; }
    S.dragTo = j;
    if (j >= S.dragFrom) { S.anchor = snap(S.dragFrom, -1); S.caret = snap(j + 1, 1); }
    else { S.anchor = snap(S.dragFrom + 1, 1); S.caret = snap(j, -1); }
    refresh();
  }

  function onMouseUp() { S.dragging = false; }

  function onPointerUp(e) {
    S.dragging = false;
    var box = $('tgt-chars');
    if (box && box.hasPointerCapture && box.hasPointerCapture(e.pointerId)) { box.releasePointerCapture(e.pointerId); }
  }

  // Offsets where a user-perceived character (grapheme cluster) starts, plus the end: a selection never
  // splits "e" + combining accent, a flag or an emoji with its skin tone. Offsets stay code points.
  function clusterBounds(chars) {
    var bounds = [];
    var k;
    try {
      if (typeof Intl !== 'undefined' && Intl.Segmenter) {
        var text = chars.join('');
        var u16 = [];
        var u = 0;
        for (k = 0; k < chars.length; k++) { u16.push(u); u += chars[k].length; }
        var starts = {};
        Array.from(new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)).forEach(function (g) {
          starts[g.index] = true;
        });
        for (k = 0; k < chars.length; k++) { if (starts[u16[k]]) { bounds.push(k); } }
        bounds.push(chars.length);
        return bounds;
      }
    } catch (e) { /* every code point is its own character */ }
    for (k = 0; k <= chars.length; k++) { bounds.push(k); }
    return bounds;
  }

  // The nearest cluster boundary to offset i: at or below it (dir < 0) or at or above it (dir > 0).
  function snap(i, dir) {
    var b = S.bounds;
    if (i <= 0) { return 0; }
    if (i >= S.chars.length) { return S.chars.length; }
    for (var k = 0; k < b.length; k++) {
      if (b[k] === i) { return i; }
      if (b[k] > i) { return dir > 0 ? b[k] : b[k - 1]; }
    }
    return S.chars.length;
  }

  // Code-point offset of a UTF-16 offset into the translation.
  function cpOf(u16) {
    var u = 0;
    for (var k = 0; k < S.chars.length; k++) {
      if (u >= u16) { return k; }
      u += S.chars[k].length;
    }
    return S.chars.length;
  }

  // The word around character i: the browser's word segmenter for the language (it knows CJK words),
  // else the run of characters between white space.
  function wordAt(i) {
    var text = S.chars.join('');
    var u16 = S.chars.slice(0, i).join('').length;
    try {
      if (typeof Intl !== 'undefined' && Intl.Segmenter) {
        var lang = String(S.item.tgt_lang || '').replace(/_/g, '-');
        var seg = new Intl.Segmenter(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(lang) ? lang : undefined,
          { granularity: 'word' }).segment(text).containing(u16);
        if (seg && seg.isWordLike) { return [cpOf(seg.index), cpOf(seg.index + seg.segment.length)]; }
      }
    } catch (e) { /* fall back to white space */ }
    var a = i;
    var b = i + 1;
    if (/\s/.test(S.chars[i])) { return [a, b]; }
    while (a > 0 && !/\s/.test(S.chars[a - 1])) { a--; }
    while (b < S.chars.length && !/\s/.test(S.chars[b])) { b++; }
    return [a, b];
  }

  function onCharDouble(e) {
    var i = charIndex(document.elementFromPoint(e.clientX, e.clientY));
    if (i < 0) { return; }
    var w = wordAt(i);
    S.dragging = false;
    S.anchor = w[0];
    S.caret = w[1];
    refresh();
  }

  function onCharKey(e) {
    var n = S.chars.length;
    var step = 0;
    var rtl = getComputedStyle(e.currentTarget).direction === 'rtl';
    if (e.key === 'ArrowRight') { step = rtl ? -1 : 1; }
    else if (e.key === 'ArrowLeft') { step = rtl ? 1 : -1; }
    else if (e.key === 'Home') { step = -n; }
    else if (e.key === 'End') { step = n; }
    else { return; }
    e.preventDefault();
    e.stopPropagation();
    S.caret = Math.abs(step) > 1 ? Math.max(0, Math.min(n, S.caret + step)) : snap(S.caret + step, step);
    if (!e.shiftKey) { S.anchor = S.caret; }
    refresh();
  }

  // ---------- choices (forced choice, response set) ----------

  function choicePanel(scheme) {
    var c = S.camp;
    var multi = scheme === 'response-set';
    var fs = el('fieldset', { 'class': 'choices', id: 'choices' });
    fs.appendChild(el('legend', { 'class': 'question' }, c.question ? appendText(el('bdi'), c.question) : 'Question'));
    fs.appendChild(el('p', { 'class': 'hint', text: multi
      ? 'Tick every option you find reasonable for this item: one, or several if more than one could fairly apply.'
      : 'Pick the single option that fits best, even if you hesitate between several.' }));
    c.options.forEach(function (o, i) {
      var id = 'opt-' + i;
      var input = el('input', { type: multi ? 'checkbox' : 'radio', name: 'option', id: id, value: o.key,
        'aria-keyshortcuts': String(i + 1) });
      input.addEventListener('change', function () { toggleOption(o.key, input.checked); });
      // An option may carry a description (the rating task's wording of it): shown under its label.
      var text = el('span', { 'class': 'option-text' }, appendText(el('bdi', { 'class': 'label' }), o.label));
      if (typeof o.description === 'string' && o.description) {
        text.appendChild(appendText(el('bdi', { 'class': 'description' }), o.description));
      }
      fs.appendChild(el('label', { 'class': 'option', 'for': id }, input, el('kbd', { text: String(i + 1) }), text));
    });
    return fs;
  }

  function toggleOption(key, on) {
    S.dirty = true;
    if (S.camp.scheme === 'forced-choice') { S.choice = on ? key : S.choice; }
    else {
      S.choices = S.choices.filter(function (k) { return k !== key; });
      if (on) { S.choices.push(key); }
    }
    refresh();
  }

  function paintChoices() {
    var inputs = document.querySelectorAll('#choices input');
    for (var i = 0; i < inputs.length; i++) {
      var k = inputs[i].value;
      inputs[i].checked = S.camp.scheme === 'forced-choice' ? S.choice === k : S.choices.indexOf(k) >= 0;
    }
  }

  function pressOption(i) {
    var o = S.camp.options[i];
    if (!o) { return; }
    S.dirty = true;
    if (S.camp.scheme === 'forced-choice') { S.choice = o.key; }
    else { toggleOption(o.key, S.choices.indexOf(o.key) < 0); }
    refresh();
  }

  // ---------- score (ESA, DA) ----------

  function scorePanel() {
    var r = S.camp.score;
    var esa = S.camp.scheme === 'esa';
    var range = el('input', { type: 'range', id: 'score-range', min: r.min, max: r.max, step: '1',
      'aria-label': 'Score from ' + r.min + ' to ' + r.max, 'aria-keyshortcuts': 'S' });
    var num = el('input', { type: 'number', id: 'score-num', min: r.min, max: r.max, step: '1', inputmode: 'numeric',
      'aria-label': 'Score as a number' });
    range.addEventListener('input', function () { setScore(range.value); });
    num.addEventListener('input', function () { setScore(num.value); });
    var ticks = el('div', { 'class': 'ticks', 'aria-hidden': 'true' });
    SCORE_ANCHORS.forEach(function (a) { ticks.appendChild(el('span', { text: a[0] + ' \u00B7 ' + a[1] })); });
    return el('div', { 'class': 'score' },
      el('label', { 'for': 'score-range', id: 'score-label', text: esa
        ? 'Overall quality of the translation, after marking its errors (' + r.min + '\u2013' + r.max + ')'
        : 'How well does the translation convey the source? (' + r.min + '\u2013' + r.max + ')' }),
      el('div', { 'class': 'score-row' }, range, num), ticks,
      el('p', { id: 'score-unset', 'class': 'hint', text: 'Not scored yet: move the slider or type a number.' }));
  }

  function setScore(v) {
    var r = S.camp.score;
    var x = v === '' ? NaN : Number(v);
    S.score = isFinite(x) ? Math.max(r.min, Math.min(r.max, Math.round(x))) : null;
    S.dirty = true;
    refresh(true);
  }

  function paintScore(typing) {
    var range = $('score-range');
    if (!range) { return; }
    var num = $('score-num');
    range.classList.toggle('unset', S.score === null);
    $('score-unset').hidden = S.score !== null;
    if (S.score !== null) {
      range.value = String(S.score);
      if (!typing || document.activeElement !== num) { num.value = String(S.score); }
    } else {
      range.value = String((S.camp.score.min + S.camp.score.max) / 2);
      if (document.activeElement !== num) { num.value = ''; }
    }
  }

  function refresh(typing) {
    paintChars();
    paintSelection();
    paintSpanList();
    paintChoices();
    paintScore(typing);
  }

  // ---------- navigation and submit ----------

  function body() {
    var s = S.camp.scheme;
    return {
      item_id: S.item.item_id,
      spans: s === 'mqm' || s === 'esa' ? S.spans.map(function (x) {
        return { start: x.start, end: x.end, category: x.category, severity: x.severity };
      }) : [],
      no_error: s === 'mqm' ? S.noError && !S.spans.length : false,
      score: S.camp.score ? S.score : null,
      choice: s === 'forced-choice' ? S.choice : null,
      choices: s === 'response-set' ? S.choices.slice() : null
    };
  }

  function missing() {
    var s = S.camp.scheme;
    if (s === 'mqm' && !S.spans.length && !S.noError) {
      return 'Mark at least one error, or tick "No error" (N) if the translation has none.';
    }
    if (S.camp.score && S.score === null) { return 'Give a score first (move the slider or type a number).'; }
    if (s === 'forced-choice' && !S.choice) { return 'Choose one option first.'; }
    if (s === 'response-set' && !S.choices.length) { return 'Tick at least one option you find reasonable.'; }
    return '';
  }

  function submitAnnotation() {
    if (S.busy || !S.item) { return; }
    var why = missing();
    if (why) { showMessage(why); return; }
    S.busy = true;
    showMessage('');
    api('POST', '/api/annotations', body()).then(function (r) {
      S.busy = false;
      S.dirty = false;
      setProgress(r.progress);
      showStatus('Saved (version ' + r.version + ')' + (r.version > 1 ? '; the earlier versions are kept.' : '.'));
      return loadNext();
    }).catch(fail);
  }

  function show(data) {
    if (data && data.done) { renderDone(data.progress); }
    else { renderItem(data); }
  }

  function loadNext() {
    return api('GET', '/api/next').then(function (d) { showMessage(''); show(d); }).catch(fail);
  }

  // The position shown, or the one being loaded (so that pressing ] twice quickly moves two items).
  function here() { return S.pending !== null ? S.pending : S.item ? S.item.position : 0; }

  // Leaving an item with unsaved changes takes a second request: the first one only warns.
  function mayLeave(target) {
    if (!S.item || !S.dirty || S.leaveTo === target) { return true; }
    S.leaveTo = target;
    showMessage('This item has changes that are not saved. Submit them (Ctrl+Enter), or ask again to leave '
      + 'without saving.');
    return false;
  }

  function goTo(position) {
    if (S.busy || position < 0 || (S.camp && position >= S.camp.progress.total) || !mayLeave(position)) { return; }
    S.pending = position;
    api('GET', '/api/items/' + position).then(function (d) {
      if (S.pending !== position) { return; }
      S.pending = null;
      showMessage('');
      showStatus('');
      show(d);
    }).catch(function (err) { S.pending = null; fail(err); });
  }

  function renderDone(p) {
    setProgress(p);
    S.item = null;
    var app = $('app');
    app.textContent = '';
    app.setAttribute('data-state', 'done');
    var first = el('button', { type: 'button', id: 'review-first' }, 'Review item 1');
    var last = el('button', { type: 'button', id: 'review-last' }, 'Review item ' + p.total);
    first.addEventListener('click', function () { goTo(0); });
    last.addEventListener('click', function () { goTo(p.total - 1); });
    app.appendChild(el('section', { 'class': 'done' },
      el('h2', { text: 'All done: ' + p.done + ' / ' + p.total + ' items annotated. Thank you!' }),
      el('p', { text: 'You can still go back and change any answer; every change is saved as a new version '
        + 'and the earlier versions are kept.' }),
      el('div', { 'class': 'actions' }, first, last)));
  }

  // ---------- keyboard shortcuts ----------

  function typingIn(t) {
    if (!t || !t.tagName) { return false; }
    if (t.tagName === 'TEXTAREA' || t.isContentEditable) { return true; }
    return t.tagName === 'INPUT' && ['checkbox', 'radio', 'button', 'range'].indexOf(t.type) < 0;
  }

  function onKey(e) {
    if (!S.camp || !S.item) { return; }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); submitAnnotation(); return; }
    if (e.ctrlKey || e.metaKey || e.altKey || typingIn(e.target)) { return; }
    var c = S.camp;
    var digit = /^[1-9]$/.test(e.key) ? parseInt(e.key, 10) - 1 : -1;
    var handled = true;
    var spans = c.scheme === 'mqm' || c.scheme === 'esa';
    if (digit >= 0 && spans && digit < c.severities.length) { addSpan(c.severities[digit]); }
    else if (digit >= 0 && (c.scheme === 'forced-choice' || c.scheme === 'response-set')) { pressOption(digit); }
    else if (e.key === 'Escape') { S.anchor = S.caret; refresh(); }
    else if ((e.key === 'c' || e.key === 'C') && $('category')) { $('category').focus(); }
    else if ((e.key === 't' || e.key === 'T') && $('tgt-chars')) { $('tgt-chars').focus(); }
    else if ((e.key === 's' || e.key === 'S') && $('score-range')) { $('score-range').focus(); }
    else if ((e.key === 'n' || e.key === 'N') && c.scheme === 'mqm' && !S.spans.length) {
      S.noError = !S.noError;
      S.dirty = true;
      refresh();
    }
    else if (e.key === 'Backspace' && S.spans.length && e.target.tagName !== 'SELECT') {
      removeSpan(S.spans.length - 1);
    }
    else if (e.key === '[') { goTo(here() - 1); }
    else if (e.key === ']') { goTo(here() + 1); }
    else { handled = false; }
    if (handled) { e.preventDefault(); }
  }

  // ---------- start ----------

  function start() {
    document.addEventListener('keydown', onKey);
    document.addEventListener('mouseup', onMouseUp);
    var m = /^\/a\/([A-Za-z0-9_-]+)\/?$/.exec(location.pathname);
    if (!m) {
      $('app').textContent = '';
      showMessage(errorText(new ApiError(401, '')));
      return;
    }
    S.token = m[1];
    api('GET', '/api/campaign').then(function (c) {
      S.camp = c;
      c.categories = c.categories || [];
      c.severities = c.severities || [];
      c.options = c.options || [];
      renderHeader(c);
      return loadNext();
    }).then(function () {
      document.body.setAttribute('data-ready', '1');
    }).catch(function (err) {
      $('app').textContent = '';
      $('app').setAttribute('data-state', 'error');
      fail(err);
      document.body.setAttribute('data-ready', '1');
    });
  }

  start();
}());
