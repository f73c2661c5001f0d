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
    [100, 'perfect meaning and grammar']];  // each label sits at its value (annotate.css: .tick-N)

  var S = {
    token: null, camp: null, item: null, chars: [], spans: [], noError: false, score: null,
    choice: null, choices: [], anchor: 0, caret: 0, dragging: false, dir: 'ltr', busy: false, pending: null,
    dirty: false, leaveTo: null, side: 'target', text: null, bounds: [], editing: -1, omit: false, undo: [],
    confirmRemove: -1, active: 0, lastTick: 0, lastInput: 0, moved: false, draftFailed: false
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
    renderGuides(c);
  }

  // ---------- guidelines (Markdown, rendered as text nodes) and category definitions ----------

  // Inline Markdown: **bold**, *italic* and `code` become elements holding text; nothing else is markup.
  function inline(parent, text) {
    var re = /(\*\*[^*]+\*\*|\*[^*]+\*|`[^`]+`)/g;
    var last = 0;
    var m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) { appendText(parent, text.slice(last, m.index)); }
      var t = m[0];
      if (t.charAt(0) === '`') { parent.appendChild(appendText(el('code'), t.slice(1, -1))); }
      else if (t.slice(0, 2) === '**') { parent.appendChild(appendText(el('strong'), t.slice(2, -2))); }
      else { parent.appendChild(appendText(el('em'), t.slice(1, -1))); }
      last = m.index + t.length;
    }
    if (last < text.length) { appendText(parent, text.slice(last)); }
    return parent;
  }

  // Block Markdown: headings, paragraphs, bullet and numbered lists.
  function markdown(text) {
    var out = el('div', { 'class': 'md' });
    var list = null;
    var para = [];
    function flush() {
      if (para.length) { out.appendChild(inline(el('p'), para.join(' '))); para = []; }
    }
    String(text).split(/\r?\n/).forEach(function (line) {
      var h = /^(#{1,4})\s+(.*)$/.exec(line);
      var li = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
      if (h) { flush(); list = null; out.appendChild(inline(el('h' + Math.min(6, h[1].length + 2)), h[2])); }
      else if (li) {
        flush();
        if (!list) { list = el(/^\s*\d/.test(line) ? 'ol' : 'ul'); out.appendChild(list); }
        list.appendChild(inline(el('li'), li[1]));
      } else if (!line.trim()) { flush(); list = null; }
      else { list = null; para.push(line.trim()); }
    });
    flush();
    return out;
  }

  function renderGuides(c) {
    var box = $('guides');
    box.textContent = '';
    var guide = el('section', { id: 'guidelines', 'class': 'guide', hidden: true, 'aria-label': 'Guidelines' },
      el('h2', { text: 'Guidelines (G)' }));
    if (c.guidelines) { guide.appendChild(markdown(c.guidelines)); }
    var defs = el('section', { id: 'definitions', 'class': 'guide', hidden: true, 'aria-label': 'Categories' },
      el('h2', { text: 'What each category means (?)' }));
    var dl = el('dl', null);
    (c.categories || []).forEach(function (cat) {
      dl.appendChild(el('dt', { text: cat }));
      dl.appendChild(el('dd', { text: (c.definitions || {})[cat] || '' }));
    });
    defs.appendChild(dl);
    box.appendChild(guide);
    box.appendChild(defs);
    var buttons = $('guide-buttons');
    buttons.textContent = '';
    if (c.guidelines) {
      var g = el('button', { type: 'button', id: 'show-guidelines', 'aria-keyshortcuts': 'G' }, 'Guidelines (G)');
      g.addEventListener('click', function () { toggleGuide('guidelines'); });
      buttons.appendChild(g);
    }
    if ((c.categories || []).length && c.scheme === 'mqm') {
      var d = el('button', { type: 'button', id: 'show-definitions', 'aria-keyshortcuts': '?' }, 'Categories (?)');
      d.addEventListener('click', function () { toggleGuide('definitions'); });
      buttons.appendChild(d);
    }
  }

  function toggleGuide(id) {
    var box = $(id);
    if (!box) { return; }
    box.hidden = !box.hidden;
    if (!box.hidden) { box.scrollIntoView({ block: 'nearest' }); }
  }

  function shortcutList(c) {
    var rows = [];
    if (c.scheme === 'mqm' || c.scheme === 'esa') {
      rows.push(['Drag', 'select characters of the source or the translation (mouse, pen or finger)']);
      rows.push(['Double-click', 'select a word']);
      rows.push(['Click an error', 'edit it (move, category, severity, comment) or remove it']);
      rows.push(['T / R', 'focus the translation / the source']);
      rows.push(['Shift + \u2190 / \u2192', 'extend the selection by a character']);
      rows.push(['Ctrl + Shift + \u2190 / \u2192', 'extend the selection by a word']);
      rows.push(['\u2190 / \u2192', 'move the cursor (Ctrl: by a word)']);
      rows.push(['Esc', 'clear the selection, stop editing']);
      if (c.scheme === 'mqm' && c.categories.length) { rows.push(['C', 'category list (\u2191 / \u2193 choose)']); }
      if (c.scheme === 'mqm' && c.categories.length) { rows.push(['?', 'what each category means']); }
      rows.push(['O', 'mark where something is missing (an omission)']);
      rows.push(['M', 'comment on the error']);
      c.severities.forEach(function (sev, i) {
        rows.push([String(i + 1), 'add the selection as a ' + sev + ' error']);
      });
      rows.push(['Backspace twice', 'remove the error being edited (or the last one)']);
      rows.push(['Ctrl + Z', 'undo the last change to the errors']);
      if (c.scheme === 'mqm') { rows.push(['N', 'toggle "no error"']); }
    }
    if (c.score) { rows.push(['S', 'score (\u2190 / \u2192, or type a number)']); }
    if (c.scheme === 'forced-choice') { rows.push(['1 \u2013 ' + c.options.length, 'choose that option']); }
    if (c.scheme === 'response-set') { rows.push(['1 \u2013 ' + c.options.length, 'tick or untick that option']); }
    rows.push(['Ctrl + Enter', 'submit and go to the next item']);
    rows.push(['[  /  ]', 'previous / next item (without saving)']);
    rows.push(['L', 'the list of all your items']);
    if (c.guidelines) { rows.push(['G', 'the guidelines']); }
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

  var SIDES = ['target', 'source'];
  var BOX = { target: 'tgt-chars', source: 'src-chars' };
  var IDLE_MS = 30000;  // no input for this long: the time is not counted as active
  var MAX_UNDO = 100;

  function sideOf(box) { return box && box.id === 'src-chars' ? 'source' : 'target'; }

  // The selection's side becomes the current one: S.chars and S.bounds are its characters and clusters.
  function useSide(side) {
    S.side = side;
    S.chars = S.text[side].chars;
    S.bounds = S.text[side].bounds;
  }

  function copySpan(s) {
    var out = { start: s.start, end: s.end, category: s.category || '', severity: s.severity,
      side: s.side === 'source' ? 'source' : 'target', comment: s.comment || '' };
    if (typeof s.prefill === 'number') { out.prefill = s.prefill; }
    return out;
  }

  function loadState(item) {
    var a = item.annotation || {};
    S.item = item;
    S.text = {
      target: { chars: Array.from(item.tgt || '') },
      source: { chars: Array.from(item.src || '') }
    };
    SIDES.forEach(function (side) { S.text[side].bounds = clusterBounds(S.text[side].chars); });
    useSide('target');
    S.spans = (a.spans || []).map(copySpan);
    if (!item.annotation && Array.isArray(item.prefill)) {
      // The AI's suggestions: each keeps the index of the suggestion it started as.
      S.spans = item.prefill.map(function (s, k) { var c = copySpan(s); c.prefill = k; return c; });
    }
    S.noError = !!a.no_error;
    S.score = typeof a.score === 'number' ? a.score : null;
    S.choice = a.choice || null;
    S.choices = Array.isArray(a.choices) ? a.choices.slice() : [];
    S.anchor = 0;
    S.caret = 0;
    S.dir = langDir(item.tgt_lang);
    S.dirty = false;
    S.leaveTo = null;
    S.editing = -1;
    S.omit = false;
    S.undo = [];
    S.confirmRemove = -1;
    S.active = 0;
    S.lastTick = Date.now();
    S.lastInput = Date.now();
    return restoreDraft(item);
  }

  // ---------- drafts: changes not submitted survive a reload ----------

  function draftKey(item) {
    return 'polyjudge-draft:' + S.camp.name + ':' + S.camp.annotator + ':' + item.item_id;
  }

  function saveDraft() {
    if (!S.item) { return; }
    try {
      window.localStorage.setItem(draftKey(S.item), JSON.stringify({
        base: S.item.annotation ? S.item.annotation.version : 0, spans: S.spans, no_error: S.noError,
        score: S.score, choice: S.choice, choices: S.choices, active: S.active
      }));
      S.draftFailed = false;
    } catch (e) { S.draftFailed = true; }
  }

  function dropDraft(item) {
    try { window.localStorage.removeItem(draftKey(item)); } catch (e) { /* nothing stored */ }
  }

  // A draft of this item's current version: its changes come back, and the annotator is told.
  function restoreDraft(item) {
    var raw = null;
    try { raw = window.localStorage.getItem(draftKey(item)); } catch (e) { raw = null; }
    if (!raw) { return false; }
    var d = null;
    try { d = JSON.parse(raw); } catch (e) { d = null; }
    var base = item.annotation ? item.annotation.version : 0;
    if (!d || d.base !== base || !Array.isArray(d.spans)) { dropDraft(item); return false; }
    S.spans = d.spans.filter(function (s) { return s && typeof s.start === 'number'; }).map(copySpan);
    S.noError = !!d.no_error;
    S.score = typeof d.score === 'number' ? d.score : null;
    S.choice = typeof d.choice === 'string' ? d.choice : null;
    S.choices = Array.isArray(d.choices) ? d.choices.slice() : [];
    S.active = typeof d.active === 'number' ? d.active : 0;
    S.dirty = true;
    return true;
  }

  // Every change: the item is dirty, the draft is stored, and the time counts as active.
  function changed() {
    S.dirty = true;
    S.lastInput = Date.now();
    saveDraft();
  }

  // ---------- active time: focus and input, idle time left out ----------

  function tick() {
    var now = Date.now();
    if (S.item && !document.hidden && document.hasFocus() && now - S.lastInput < IDLE_MS) {
      S.active += now - S.lastTick;
    }
    S.lastTick = now;
  }

  function onInput() { tick(); S.lastInput = Date.now(); }

  // ---------- rendering ----------

  function charBox(side, text, lang) {
    var box = el('bdi', { id: BOX[side], 'class': 'data chars', dir: side === 'target' ? S.dir : langDir(lang),
      tabindex: '0', role: 'group', 'data-side': side,
      'aria-label': (side === 'target' ? 'Translation' : 'Source') + ': drag with the mouse or use Shift and the '
        + 'arrow keys (Ctrl: a word at a time) to select an error span; click a marked error to edit it',
      'aria-describedby': 'sel-text' });
    if (lang && /^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/.test(lang)) {
      box.setAttribute('lang', lang.replace(/_/g, '-'));
    }
    S.text[side].chars.forEach(function (ch, i) {
      var cp = ch.codePointAt(0);
      var node = CONTROLS[cp] ? controlMarker(cp) : el('span', null, ch);
      node.classList.add('ch');
      node.setAttribute('aria-hidden', 'true');
      node.setAttribute('data-i', String(i));
      box.appendChild(node);
    });
    if (!text) { box.appendChild(el('span', { 'class': 'empty', text: '(empty)' })); }
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
    var cur = el('div', { 'class': 'row cur', role: 'row', 'aria-label': 'segment to annotate' });
    var srcCell = el('div', { 'class': 'cell src', role: 'cell', 'data-label': 'Source' });
    var tgtCell = el('div', { 'class': 'cell tgt', role: 'cell', 'data-label': 'Translation' });
    if (withSpans) {
      // Screen readers get each text whole; the character elements are for selecting.
      srcCell.appendChild(dataText(item.src, item.src_lang, 'seg-src sr-only'));
      srcCell.appendChild(charBox('source', item.src, item.src_lang));
      tgtCell.appendChild(dataText(item.tgt, item.tgt_lang, 'sr-only'));
      tgtCell.appendChild(charBox('target', item.tgt, item.tgt_lang));
    } else {
      srcCell.appendChild(dataText(item.src, item.src_lang, 'seg-src'));
      tgtCell.appendChild(dataText(item.tgt, item.tgt_lang, 'seg-tgt'));
    }
    cur.appendChild(srcCell);
    cur.appendChild(tgtCell);
    grid.appendChild(cur);
    return grid;
  }

  // The whole document (as far as the campaign has it), each segment with its position, this one marked.
  function documentPanel(item) {
    var doc = item.document || {};
    var segs = doc.segments || [];
    if (segs.length < 2) { return null; }
    var here = 0;
    segs.forEach(function (s, k) { if (s.current) { here = k; } });
    var list = el('ol', { 'class': 'doc-list', id: 'doc-list' });
    segs.forEach(function (s) {
      var pos = s.doc_pos == null ? '\u2014' : String(s.doc_pos);
      var li = el('li', { 'class': 'doc-seg' + (s.current ? ' current' : ''), 'data-pos': pos },
        el('span', { 'class': 'doc-pos', text: '\u00B6 ' + pos }),
        el('div', { 'class': 'doc-texts' }, dataText(s.src, item.src_lang, 'doc-src'),
          dataText(s.tgt, item.tgt_lang, 'doc-tgt')));
      if (s.current) {
        li.setAttribute('aria-current', 'true');
        li.insertBefore(el('span', { 'class': 'doc-here', text: 'this segment' }), li.firstChild.nextSibling);
      }
      list.appendChild(li);
    });
    var title = 'Document ';
    var summary = el('summary', null, title, el('bdi', { text: doc.doc_id || '' }),
      ' \u00B7 segment ' + (here + 1) + ' of ' + segs.length + ' shown');
    return el('details', { 'class': 'document', id: 'document', open: 'open' }, summary, list);
  }

  function navBar(item) {
    var total = S.camp.progress.total;
    var prev = el('button', { type: 'button', id: 'prev', disabled: item.position <= 0 }, '\u2190 Previous');
    var next = el('button', { type: 'button', id: 'next', disabled: item.position >= total - 1 }, 'Next \u2192');
    var first = el('button', { type: 'button', id: 'first-open' }, 'First unannotated');
    var review = el('button', { type: 'button', id: 'review-open', 'aria-keyshortcuts': 'L' }, 'All items (L)');
    prev.addEventListener('click', function () { goTo(item.position - 1); });
    next.addEventListener('click', function () { goTo(item.position + 1); });
    first.addEventListener('click', function () { if (mayLeave('next')) { loadNext(); } });
    review.addEventListener('click', toggleReview);
    var pos = item.doc_pos == null ? '' : ' (\u00B6 ' + item.doc_pos + ')';
    var where = el('span', { 'class': 'where' }, 'Item ' + (item.position + 1) + ' of ' + total + ' \u00B7 document ',
      el('bdi', { text: item.doc_id == null || item.doc_id === '' ? '\u2014' : String(item.doc_id) }), pos,
      ', segment ', el('bdi', { text: item.seg_id == null ? '\u2014' : String(item.seg_id) }));
    return el('nav', { 'class': 'nav', 'aria-label': 'Items' }, prev, where, next, first, review);
  }

  function editBanner(item, restored) {
    if (restored) {
      return el('p', { 'class': 'edit restored', id: 'draft-banner' },
        'Restored the changes you made here but did not submit (kept in this browser). Submit them, or '
        + 'leave the item twice to drop them.');
    }
    if (!item.annotation) { return null; }
    var v = item.annotation.version;
    return el('p', { 'class': 'edit', id: 'edit-banner' },
      'You already annotated this item' + (v ? ' (version ' + v + ')' : '') + '. Your answer is loaded below; '
      + 'submitting again saves a new version, and earlier versions are kept as history.');
  }

  function renderItem(item) {
    var restored = loadState(item);
    setProgress(item.progress);
    var app = $('app');
    app.textContent = '';
    app.setAttribute('data-state', 'item');
    app.setAttribute('data-position', String(item.position));
    var scheme = S.camp.scheme;
    var spanScheme = scheme === 'mqm' || scheme === 'esa';
    app.appendChild(navBar(item));
    var banner = editBanner(item, restored);
    if (banner) { app.appendChild(banner); }
    if (spanScheme && Array.isArray(item.prefill) && !item.annotation) {
      app.appendChild(el('p', { 'class': 'edit ai-note', id: 'ai-note' }, item.prefill.length
        ? 'The marked errors are an AI\u2019s suggestions (dashed). Keep, edit (click one) or delete each; add what '
          + 'it missed.'
        : 'An AI looked at this translation and suggested no error. Add what you find.'));
    }
    app.appendChild(renderPairs(item, spanScheme));
    var form = el('section', { 'class': 'panel', 'aria-label': 'Your annotation' });
    if (spanScheme) { form.appendChild(spanPanel()); }
    if (scheme === 'forced-choice' || scheme === 'response-set') { form.appendChild(choicePanel(scheme)); }
    if (S.camp.score) { form.appendChild(scorePanel()); }
    var submit = el('button', { type: 'button', id: 'submit', 'class': 'primary' }, 'Submit and next (Ctrl+Enter)');
    submit.addEventListener('click', submitAnnotation);
    form.appendChild(el('div', { 'class': 'actions' }, submit));
    app.appendChild(form);
    var doc = documentPanel(item);
    if (doc) { app.appendChild(doc); }
    refresh();
    var focus = spanScheme ? $('tgt-chars') : null;
    if (focus) { focus.focus({ preventScroll: true }); }
    var current = document.querySelector('#doc-list .current');
    if (current && current.parentNode) {
      current.parentNode.scrollTop = Math.max(0, current.offsetTop - current.parentNode.offsetTop - 40);
    }
  }

  // ---------- spans (MQM, ESA) ----------

  function spanPanel() {
    var c = S.camp;
    var box = el('div', { 'class': 'spans-panel' });
    box.appendChild(el('p', { id: 'sel-text', 'class': 'sel-text', 'aria-live': 'polite' }));
    var pick = el('div', { 'class': 'pick' });
    if (usesCategories()) {
      var sel = categorySelect(c.categories);
      sel.addEventListener('change', paintDefinition);
      pick.appendChild(el('div', { 'class': 'cat' }, el('label', { 'for': 'category', text: 'Category (C)' }), sel,
        el('p', { id: 'cat-definition', 'class': 'definition', 'aria-live': 'polite' })));
    }
    var sevs = el('div', { 'class': 'sevs', role: 'group', 'aria-labelledby': 'sev-label' },
      el('span', { id: 'sev-label', 'class': 'label', text: 'Add the selection as' }));
    c.severities.forEach(function (sev, i) {
      var b = el('button', { type: 'button', 'class': 'sev sev-' + sev, 'data-sev': sev,
        'aria-keyshortcuts': String(i + 1) }, (i + 1) + ' \u00B7 ' + sev);
      b.addEventListener('click', function () { addSpan(sev); });
      sevs.appendChild(b);
    });
    var omit = el('button', { type: 'button', id: 'omission', 'aria-keyshortcuts': 'O' },
      'O \u00B7 something is missing here');
    omit.addEventListener('click', toggleOmission);
    sevs.appendChild(omit);
    pick.appendChild(sevs);
    var comment = el('input', { type: 'text', id: 'comment', maxlength: '1000', autocomplete: 'off',
      placeholder: 'What is wrong (required for Other)' });
    pick.appendChild(el('div', { 'class': 'comment' }, el('label', { 'for': 'comment', text: 'Comment (M)' }), comment));
    box.appendChild(pick);
    box.appendChild(el('h3', { id: 'spans-title', text: 'Marked errors' }));
    box.appendChild(el('ol', { id: 'spans', 'class': 'spans', 'aria-labelledby': 'spans-title' }));
    if (c.scheme === 'mqm') {
      var cb = el('input', { type: 'checkbox', id: 'no-error', 'aria-keyshortcuts': 'N' });
      cb.addEventListener('change', function () { remember(); S.noError = cb.checked; changed(); refresh(); });
      box.appendChild(el('label', { 'class': 'no-error', 'for': 'no-error' }, cb,
        ' No error: this translation has nothing to mark (N)'));
    }
    return box;
  }

  // ESA marks spans with a severity only; MQM also asks for a category.
  function usesCategories() { return S.camp.scheme === 'mqm' && S.camp.categories.length > 0; }

  // A listbox of the categories, grouped by their top level ("Accuracy/Omission" under "Accuracy"); each
  // option's title is its definition. Nothing is chosen: every span gets its own category.
  function categorySelect(cats) {
    var sel = el('select', { id: 'category', size: String(Math.min(cats.length + 4, 10)) });
    var groups = {};
    var defs = S.camp.definitions || {};
    cats.forEach(function (cat) {
      var cut = cat.indexOf('/');
      var opt = appendText(el('option', { value: cat, title: defs[cat] || null }), cut > 0 ? cat.slice(cut + 1) : cat);
      if (cut <= 0) { sel.appendChild(opt); return; }
      var top = cat.slice(0, cut);
      if (!groups[top]) { groups[top] = el('optgroup', { label: top }); sel.appendChild(groups[top]); }
      groups[top].appendChild(opt);
    });
    sel.selectedIndex = -1;
    return sel;
  }

  function paintDefinition() {
    var p = $('cat-definition');
    var sel = $('category');
    if (!p || !sel) { return; }
    var d = (S.camp.definitions || {})[sel.value];
    p.textContent = '';
    if (d) { appendText(p, d); }
  }

  // A fresh category list (its keyboard cursor back at the top too) and an empty comment for the next span.
  function resetPick() {
    var sel = $('category');
    if (sel) {
      var fresh = categorySelect(S.camp.categories);
      fresh.addEventListener('change', paintDefinition);
      var focused = document.activeElement === sel;
      sel.parentNode.replaceChild(fresh, sel);
      if (focused) { fresh.focus({ preventScroll: true }); }
    }
    var comment = $('comment');
    if (comment) { comment.value = ''; }
    paintDefinition();
  }

  function selection() {
    var a = Math.min(S.anchor, S.caret);
    var b = Math.max(S.anchor, S.caret);
    return a < b ? { start: a, end: b, side: S.side } : null;
  }

  // Undo: each change to the spans (or "no error") first remembers the state before it.
  function remember() {
    S.undo.push(JSON.stringify({ spans: S.spans, noError: S.noError }));
    if (S.undo.length > MAX_UNDO) { S.undo.shift(); }
  }

  function undo() {
    if (!S.undo.length) { showStatus('Nothing to undo.'); return; }
    var prev = JSON.parse(S.undo.pop());
    S.spans = prev.spans;
    S.noError = prev.noError;
    S.editing = -1;
    S.confirmRemove = -1;
    changed();
    showMessage('');
    showStatus('Undone.');
    refresh();
  }

  function spanFromPick(sev, sel) {
    var cat = '';
    var comment = $('comment') ? $('comment').value.replace(/\s+/g, ' ').trim() : '';
    if (sel.start === sel.end) { cat = usesCategories() ? S.camp.omission : ''; }
    else if (usesCategories()) {
      cat = $('category').value;
      if (!cat) { return { error: 'Choose a category for this error first (C, then \u2191 / \u2193; ? shows '
        + 'what each means).' }; }
    }
    if ((S.camp.comment_required || []).indexOf(cat) >= 0 && !comment) {
      return { error: 'Say in the comment what the error is: "' + cat + '" needs one (M).' };
    }
    return { start: sel.start, end: sel.end, side: sel.side, category: cat, severity: sev, comment: comment };
  }

  function addSpan(sev) {
    var sel = selection();
    if (!sel && S.omit && S.side === 'target') { sel = { start: S.caret, end: S.caret, side: 'target' }; }
    if (S.editing >= 0) { updateSpan(S.editing, sev, sel); return; }
    if (!sel) {
      showMessage('Select some characters of the source or the translation first (drag, or Shift + arrow keys), '
        + 'or press O to mark where something is missing.');
      return;
    }
    var span = spanFromPick(sev, sel);
    if (span.error) { showMessage(span.error); return; }
    remember();
    S.spans.push(span);
    S.noError = false;
    S.omit = false;
    S.anchor = S.caret = sel.end;
    changed();
    resetPick();
    showMessage('');
    showStatus('Added a ' + sev + (sel.start === sel.end ? ' omission at offset ' + sel.start
      : ' error at offsets ' + sel.start + '\u2013' + sel.end) + (sel.side === 'source' ? ' of the source' : '')
      + '. Ctrl+Z undoes it.');
    refresh();
    $(BOX[sel.side]).focus({ preventScroll: true });
  }

  // Editing span k: a new selection moves it, the category list and comment change it, a severity applies.
  function startEdit(k) {
    var s = S.spans[k];
    if (!s) { return; }
    S.editing = k;
    S.omit = false;
    useSide(s.side);
    S.anchor = s.start;
    S.caret = s.end;
    var sel = $('category');
    if (sel) { sel.value = s.category || ''; if (!s.category) { sel.selectedIndex = -1; } }
    if ($('comment')) { $('comment').value = s.comment || ''; }
    paintDefinition();
    showMessage('');
    showStatus('Editing error ' + (k + 1) + ': select again to move it, change its category or comment, then '
      + 'press its severity (1\u20133) to apply; Backspace removes it; Esc stops editing.');
    refresh();
  }

  function updateSpan(k, sev, sel) {
    var old = S.spans[k];
    var bounds = sel || { start: old.start, end: old.end, side: old.side };
    var span = spanFromPick(sev, bounds);
    if (span.error) { showMessage(span.error); return; }
    if (typeof old.prefill === 'number') { span.prefill = old.prefill; }
    remember();
    S.spans[k] = span;
    S.editing = -1;
    S.anchor = S.caret = bounds.end;
    changed();
    resetPick();
    showMessage('');
    showStatus('Changed error ' + (k + 1) + '. Ctrl+Z undoes it.');
    refresh();
  }

  function removeSpan(i) {
    remember();
    S.spans.splice(i, 1);
    S.editing = -1;
    S.confirmRemove = -1;
    changed();
    showMessage('');
    showStatus('Removed an error. Ctrl+Z brings it back.');
    refresh();
  }

  // Backspace: the first press names the error it would remove, the second removes it.
  function backspace() {
    var k = S.editing >= 0 ? S.editing : S.spans.length - 1;
    if (k < 0) { return; }
    if (S.confirmRemove !== k) {
      S.confirmRemove = k;
      showMessage('Press Backspace again to remove error ' + (k + 1) + ' (\u201C'
        + spanText(S.spans[k]) + '\u201D); any other key keeps it.');
      return;
    }
    removeSpan(k);
  }

  function spanText(s) {
    var chars = S.text[s.side === 'source' ? 'source' : 'target'].chars;
    return s.start === s.end ? '\u2041 missing at ' + s.start : chars.slice(s.start, s.end).join('');
  }

  function toggleOmission() {
    useSide('target');
    S.omit = !S.omit;
    S.anchor = S.caret;
    refresh();
    if (S.omit) {
      showStatus('Omission: put the cursor where something is missing (click, or \u2190 / \u2192 in the '
        + 'translation), then press its severity.');
    }
    $('tgt-chars').focus({ preventScroll: true });
  }

  function severityRank(sev) { return S.camp.severities.indexOf(sev); }

  // Which span each character shows (the last one covering it), so adjacent spans get their own edges.
  function coverOf(side, n) {
    var cover = [];
    var worst = [];
    for (var i = 0; i < n; i++) { cover.push(-1); worst.push(-1); }
    S.spans.forEach(function (s, k) {
      if ((s.side || 'target') !== side) { return; }
      for (var j = s.start; j < s.end && j < n; j++) {
        cover[j] = k;
        worst[j] = Math.max(worst[j], severityRank(s.severity));
      }
    });
    return { cover: cover, worst: worst };
  }

  function paintBox(side) {
    var box = $(BOX[side]);
    if (!box) { return; }
    var nodes = box.querySelectorAll('.ch');
    var c = coverOf(side, nodes.length);
    var sel = S.side === side ? selection() : null;
    var omitAt = {};
    S.spans.forEach(function (s) {
      if (side === 'target' && s.start === s.end) { omitAt[s.start] = s.severity; }
    });
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i];
      var k = c.cover[i];
      n.classList.toggle('sel', !!sel && i >= sel.start && i < sel.end);
      S.camp.severities.forEach(function (sev, r) { n.classList.toggle('sev-' + sev, c.worst[i] === r); });
      n.classList.toggle('sb', k >= 0 && (i === 0 || c.cover[i - 1] !== k));
      n.classList.toggle('se', k >= 0 && (i === nodes.length - 1 || c.cover[i + 1] !== k));
      n.classList.toggle('ai', k >= 0 && typeof S.spans[k].prefill === 'number');
      n.classList.toggle('editing', k >= 0 && k === S.editing);
      n.classList.toggle('omit', omitAt[i] !== undefined);
      n.classList.toggle('omit-end', i === nodes.length - 1 && omitAt[nodes.length] !== undefined);
      n.classList.toggle('caret', S.side === side && i === S.caret);
      n.classList.toggle('caret-end', S.side === side && S.caret === nodes.length && i === nodes.length - 1);
    }
    box.classList.toggle('omitting', side === 'target' && S.omit);
  }

  function paintChars() { SIDES.forEach(paintBox); }

  function paintSelection() {
    var p = $('sel-text');
    if (!p) { return; }
    var sel = selection();
    p.textContent = '';
    if (S.omit && !sel) {
      p.appendChild(document.createTextNode('Omission at offset ' + S.caret + ' of the translation: press its '
        + 'severity (1\u2013' + S.camp.severities.length + ').'));
      return;
    }
    if (!sel) {
      p.appendChild(document.createTextNode('No selection. Drag over the source or the translation, or Shift + '
        + 'arrow keys (Ctrl + Shift: a word at a time).'));
      return;
    }
    p.appendChild(document.createTextNode('Selected ' + (sel.side === 'source' ? 'source ' : '') + 'offsets '
      + sel.start + '\u2013' + sel.end + ': \u201C'));
    p.appendChild(dataText(S.chars.slice(sel.start, sel.end).join(''),
      sel.side === 'source' ? S.item.src_lang : S.item.tgt_lang, 'quote'));
    p.appendChild(document.createTextNode('\u201D'));
  }

  function spanRow(s, i) {
    var rm = el('button', { type: 'button', 'class': 'rm', 'aria-label': 'Remove error ' + (i + 1) }, 'Remove');
    rm.addEventListener('click', function () { removeSpan(i); });
    var ed = el('button', { type: 'button', 'class': 'ed', 'aria-label': 'Edit error ' + (i + 1) }, 'Edit');
    ed.addEventListener('click', function () { startEdit(i); });
    var li = el('li', { 'class': 'span-item' + (i === S.editing ? ' editing' : '')
      + (typeof s.prefill === 'number' ? ' ai' : ''), 'data-start': String(s.start), 'data-end': String(s.end),
      'data-side': s.side || 'target' },
      el('span', { 'class': 'badge sev-' + s.severity, text: s.severity }), ' ');
    if (s.side === 'source') { li.appendChild(el('span', { 'class': 'side', text: 'source' })); }
    if (typeof s.prefill === 'number') { li.appendChild(el('span', { 'class': 'side ai-tag', text: 'AI' })); }
    if (s.category) {
      li.appendChild(el('span', { 'class': 'cat-name', title: (S.camp.definitions || {})[s.category] || null,
        text: s.category }));
      li.appendChild(document.createTextNode(' '));
    }
    li.appendChild(document.createTextNode('\u201C'));
    li.appendChild(dataText(spanText(s), s.side === 'source' ? S.item.src_lang : S.item.tgt_lang, 'quote'));
    li.appendChild(document.createTextNode('\u201D '));
    li.appendChild(el('span', { 'class': 'offsets', text: 'offsets ' + s.start + '\u2013' + s.end }));
    if (s.comment) { li.appendChild(el('span', { 'class': 'span-comment' }, ' \u2014 ', appendText(el('bdi'), s.comment))); }
    li.appendChild(ed);
    li.appendChild(rm);
    return li;
  }

  function paintSpanList() {
    var list = $('spans');
    if (!list) { return; }
    list.textContent = '';
    S.spans.forEach(function (s, i) { list.appendChild(spanRow(s, i)); });
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

  function spanAt(side, i) {
    for (var k = S.spans.length - 1; k >= 0; k--) {
      var s = S.spans[k];
      if ((s.side || 'target') === side && s.start <= i && i < s.end) { return k; }
    }
    return -1;
  }

  // Mouse, pen or finger: the pointer is captured by the text while it is down, and the character
  // under it is found from its position (a captured pointer's events all go to the text).
  function onCharDown(e) {
    if (e.button !== 0) { return; }
    var i = charIndex(e.target);
    if (i < 0) { return; }
    e.preventDefault();
    var box = e.currentTarget;
    useSide(sideOf(box));
    box.focus({ preventScroll: true });
    if (box.setPointerCapture) { box.setPointerCapture(e.pointerId); }
    S.confirmRemove = -1;
    S.dragging = true;
    S.moved = false;
    S.dragFrom = i;
    S.dragTo = i;
    if (S.omit && S.side === 'target') { S.anchor = S.caret = snap(i, -1); refresh(); return; }
    S.anchor = snap(i, -1);
    S.caret = snap(i + 1, 1);
    refresh();
  }

  function onCharOver(e) {
    if (!S.dragging) { return; }
    var hit = document.elementFromPoint(e.clientX, e.clientY);
    if (!hit || !e.currentTarget.contains(hit)) { return; }
    var j = charIndex(hit);
    if (j < 0 || j === S.dragTo) { return; }
    S.dragTo = j;
    S.moved = true;
    if (S.omit && S.side === 'target') { S.anchor = S.caret = snap(j, -1); refresh(); return; }
    if (j >= S.dragFrom) { S.anchor = snap(S.dragFrom, -1); S.caret = snap(j + 1, 1); }
    else { S.anchor = snap(S.dragFrom + 1, 1); S.caret = snap(j, -1); }
    refresh();
  }

  function onMouseUp() { S.dragging = false; }

  function onPointerUp(e) {
    var was = S.dragging;
    S.dragging = false;
    var box = e.currentTarget;
    if (box && box.hasPointerCapture && box.hasPointerCapture(e.pointerId)) { box.releasePointerCapture(e.pointerId); }
    // A click (no drag) on a marked error opens it for editing.
    if (was && !S.moved && !S.omit && S.editing < 0) {
      var k = spanAt(S.side, S.dragFrom);
      if (k >= 0) { startEdit(k); }
    }
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

  // Code-point offset of a UTF-16 offset into the current text.
  function cpOf(u16) {
    var u = 0;
    for (var k = 0; k < S.chars.length; k++) {
      if (u >= u16) { return k; }
      u += S.chars[k].length;
    }
    return S.chars.length;
  }

  function sideLang() {
    var lang = String((S.side === 'source' ? S.item.src_lang : S.item.tgt_lang) || '').replace(/_/g, '-');
    return /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(lang) ? lang : undefined;
  }

  // The words of the current text as code-point [start, end) pairs: the browser's word segmenter for the
  // language (it knows CJK words), else runs of characters between white space.
  function words() {
    var out = [];
    var text = S.chars.join('');
    try {
      if (typeof Intl !== 'undefined' && Intl.Segmenter) {
        Array.from(new Intl.Segmenter(sideLang(), { granularity: 'word' }).segment(text)).forEach(function (g) {
          if (g.isWordLike) { out.push([cpOf(g.index), cpOf(g.index + g.segment.length)]); }
        });
        return out;
      }
    } catch (e) { out = []; }
    var a = -1;
    for (var i = 0; i <= S.chars.length; i++) {
      var space = i === S.chars.length || /\s/.test(S.chars[i]);
      if (!space && a < 0) { a = i; }
      if (space && a >= 0) { out.push([a, i]); a = -1; }
    }
    return out;
  }

  function wordAt(i) {
    var w = words();
    for (var k = 0; k < w.length; k++) { if (w[k][0] <= i && i < w[k][1]) { return w[k]; } }
    return [i, i + 1];
  }

  // Ctrl + arrow: to the end of this or the next word (forward), or the start of this or the previous one.
  function wordStep(from, forward) {
    var w = words();
    var k;
    if (forward) {
      for (k = 0; k < w.length; k++) { if (w[k][1] > from) { return w[k][1]; } }
      return S.chars.length;
    }
    for (k = w.length - 1; k >= 0; k--) { if (w[k][0] < from) { return w[k][0]; } }
    return 0;
  }

  function onCharDouble(e) {
    var box = e.currentTarget;
    useSide(sideOf(box));
    var i = charIndex(document.elementFromPoint(e.clientX, e.clientY));
    if (i < 0) { return; }
    var w = wordAt(i);
    S.dragging = false;
    if (S.editing >= 0 && spanAt(S.side, i) === S.editing) { S.editing = -1; showStatus(''); }
    S.anchor = w[0];
    S.caret = w[1];
    refresh();
  }

  function onCharKey(e) {
    useSide(sideOf(e.currentTarget));
    var n = S.chars.length;
    var rtl = getComputedStyle(e.currentTarget).direction === 'rtl';
    var forward = null;
    if (e.key === 'ArrowRight') { forward = !rtl; }
    else if (e.key === 'ArrowLeft') { forward = rtl; }
    else if (e.key !== 'Home' && e.key !== 'End') { return; }
    e.preventDefault();
    e.stopPropagation();
    onInput();
    S.confirmRemove = -1;
    if (forward === null) { S.caret = e.key === 'Home' ? 0 : n; }
    else if (e.ctrlKey || e.altKey || e.metaKey) { S.caret = wordStep(S.caret, forward); }
    else { S.caret = snap(S.caret + (forward ? 1 : -1), forward ? 1 : -1); }
    if (!e.shiftKey || S.omit) { S.anchor = S.caret; }
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
    changed();
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
    changed();
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
    SCORE_ANCHORS.forEach(function (a) {
      ticks.appendChild(el('span', { 'class': 'tick tick-' + a[0], 'data-value': String(a[0]) },
        el('span', { 'class': 'mark' }), el('span', { 'class': 'tick-label', text: a[0] + ' \u00B7 ' + a[1] })));
    });
    return el('div', { 'class': 'score' },
      el('label', { 'for': 'score-range', id: 'score-label', text: esa
        ? 'Overall quality of the translation, after marking its errors (' + r.min + '\u2013' + r.max + ')'
        : 'How well does the translation convey the source? (' + r.min + '\u2013' + r.max + ')' }),
      el('div', { 'class': 'score-row' }, el('div', { 'class': 'slider' }, range, ticks), num),
      el('p', { id: 'score-unset', 'class': 'hint', text: 'Not scored yet: move the slider or type a number.' }));
  }

  function setScore(v) {
    var r = S.camp.score;
    var x = v === '' ? NaN : Number(v);
    S.score = isFinite(x) ? Math.max(r.min, Math.min(r.max, Math.round(x))) : null;
    changed();
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
        var out = { start: x.start, end: x.end, category: x.category, severity: x.severity, side: x.side,
          comment: x.comment || '' };
        if (typeof x.prefill === 'number') { out.prefill = x.prefill; }
        return out;
      }) : [],
      no_error: s === 'mqm' ? S.noError && !S.spans.length : false,
      score: S.camp.score ? S.score : null,
      choice: s === 'forced-choice' ? S.choice : null,
      choices: s === 'response-set' ? S.choices.slice() : null,
      active_ms: Math.round(S.active)
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
    tick();
    var item = S.item;
    api('POST', '/api/annotations', body()).then(function (r) {
      S.busy = false;
      S.dirty = false;
      dropDraft(item);
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
    if (!S.item || !S.dirty) { return true; }
    if (S.leaveTo === target) { dropDraft(S.item); return true; }
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
    app.appendChild(el('section', { 'class': 'done' },
      el('h2', { text: 'All done: ' + p.done + ' / ' + p.total + ' items annotated. Thank you!' }),
      el('p', { text: 'You can still go back and change any answer; every change is saved as a new version '
        + 'and the earlier versions are kept. Pick an item below.' })));
    showReview(app);
  }

  // The review list: every item of the queue, whether it is annotated, a link to it.
  function showReview(parent) {
    return api('GET', '/api/queue').then(function (q) {
      var old = $('review');
      if (old) { old.parentNode.removeChild(old); }
      var table = el('table', { 'class': 'review-table' },
        el('thead', null, el('tr', null, el('th', { text: '#' }), el('th', { text: 'Document' }),
          el('th', { text: 'Segment' }), el('th', { text: 'Source' }), el('th', { text: 'Status' }),
          el('th', { text: '' }))));
      var tbody = el('tbody');
      q.items.forEach(function (row) {
        var go = el('button', { type: 'button', 'class': 'go', 'data-position': String(row.position) },
          row.done ? 'Review' : 'Annotate');
        go.addEventListener('click', function () { goTo(row.position); });
        tbody.appendChild(el('tr', { 'class': row.done ? 'is-done' : 'is-open' },
          el('td', { text: String(row.position + 1) }),
          el('td', null, el('bdi', { text: row.doc_id || '\u2014' }),
            row.doc_pos == null ? '' : ' \u00B6 ' + row.doc_pos),
          el('td', null, el('bdi', { text: row.seg_id })),
          el('td', null, dataText(row.src, null, 'snippet')),
          el('td', { text: row.done ? 'done (version ' + row.version + ')' : 'not yet' }),
          el('td', null, go)));
      });
      table.appendChild(tbody);
      var box = el('section', { id: 'review', 'class': 'review', 'aria-label': 'Your items' },
        el('h2', { text: 'Your items (' + q.progress.done + ' / ' + q.progress.total + ' done)' }), table);
      parent.appendChild(box);
      box.scrollIntoView({ block: 'nearest' });
    }).catch(fail);
  }

  function toggleReview() {
    var old = $('review');
    if (old) { old.parentNode.removeChild(old); return; }
    showReview($('app'));
  }

  // ---------- keyboard shortcuts ----------

  function typingIn(t) {
    if (!t || !t.tagName) { return false; }
    if (t.tagName === 'TEXTAREA' || t.isContentEditable) { return true; }
    return t.tagName === 'INPUT' && ['checkbox', 'radio', 'button', 'range'].indexOf(t.type) < 0;
  }

  function onKey(e) {
    onInput();
    if (!S.camp) { return; }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && S.item) { e.preventDefault(); submitAnnotation(); return; }
    if (typingIn(e.target)) { return; }
    if ((e.ctrlKey || e.metaKey) && !e.altKey && (e.key === 'z' || e.key === 'Z') && S.item) {
      e.preventDefault();
      undo();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (e.key !== 'Backspace' && e.key !== 'Shift') { S.confirmRemove = -1; }
    if (e.key === 'l' || e.key === 'L') { e.preventDefault(); toggleReview(); return; }
    if (e.key === 'g' || e.key === 'G') { e.preventDefault(); toggleGuide('guidelines'); return; }
    if (e.key === '?') { e.preventDefault(); toggleGuide('definitions'); return; }
    if (!S.item) { return; }
    if (!itemKey(e)) { return; }
    e.preventDefault();
  }

  // The keys of an item's page; false when the key means nothing here.
  function itemKey(e) {
    var c = S.camp;
    var digit = /^[1-9]$/.test(e.key) ? parseInt(e.key, 10) - 1 : -1;
    var spans = c.scheme === 'mqm' || c.scheme === 'esa';
    var k = e.key.toLowerCase();
    if (digit >= 0 && spans && digit < c.severities.length) { addSpan(c.severities[digit]); }
    else if (digit >= 0 && (c.scheme === 'forced-choice' || c.scheme === 'response-set')) { pressOption(digit); }
    else if (e.key === 'Escape') {
      S.anchor = S.caret;
      S.omit = false;
      if (S.editing >= 0) { S.editing = -1; resetPick(); showStatus(''); }
      showMessage('');
      refresh();
    }
    else if (k === 'c' && $('category')) { $('category').focus(); }
    else if (k === 't' && $('tgt-chars')) { useSide('target'); $('tgt-chars').focus(); refresh(); }
    else if (k === 'r' && $('src-chars')) { useSide('source'); $('src-chars').focus(); refresh(); }
    else if (k === 'm' && $('comment')) { $('comment').focus(); }
    else if (k === 'o' && spans) { toggleOmission(); }
    else if (k === 's' && $('score-range')) { $('score-range').focus(); }
    else if (k === 'n' && c.scheme === 'mqm' && !S.spans.length) {
      remember();
      S.noError = !S.noError;
      changed();
      refresh();
    }
    else if (e.key === 'Backspace' && S.spans.length && e.target.tagName !== 'SELECT') { backspace(); }
    else if (e.key === '[') { goTo(here() - 1); }
    else if (e.key === ']') { goTo(here() + 1); }
    else { return false; }
    return true;
  }

  // ---------- start ----------

  function start() {
    document.addEventListener('keydown', onKey);
    document.addEventListener('mouseup', onMouseUp);
    ['pointerdown', 'pointermove', 'wheel', 'input'].forEach(function (kind) {
      document.addEventListener(kind, onInput, { passive: true, capture: true });
    });
    window.setInterval(tick, 250);
    // Changes are kept as a draft in this browser; only when that fails does leaving the page warn.
    window.addEventListener('beforeunload', function (e) {
      if (S.item && S.dirty && S.draftFailed) { e.preventDefault(); e.returnValue = ''; }
    });
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
