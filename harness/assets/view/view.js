'use strict';
// compactbench view: renders a run's embedded data. Every string from the run is set as text (text nodes,
// textContent, title), never parsed as markup; the data blocks are gzip + base64, decoded on demand.
(() => {
  const started = performance.now();
  const app = document.getElementById('app');
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const MAX_SHOWN_CHARS = 20000;

  // ---------------------------------------------------------------------------------------------------
  // DOM helpers: children are nodes or plain strings (appended as text).

  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'title') node.title = String(v);
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, String(v));
    }
    return append(node, children);
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, String(v));
    }
    return append(node, children);
  }

  const link = (route, ...children) => el('a', { href: '#/' + route }, ...children);
  const go = (route) => { location.hash = '#/' + route; };

  // ---------------------------------------------------------------------------------------------------
  // Data: the index at once, each conversation's chunk when first opened.

  async function decode(id) {
    const text = document.getElementById(id).textContent.trim();
    let bytes;
    if (typeof Uint8Array.fromBase64 === 'function') {
      bytes = Uint8Array.fromBase64(text);
    } else {
      const bin = atob(text);
      bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return JSON.parse(await new Response(stream).text());
  }

  let DATA = null;
  const chunkCache = new Map();
  function chunkOf(conversation) {
    const id = DATA.conversations[conversation].chunk;
    if (!chunkCache.has(id)) chunkCache.set(id, decode('data-' + id));
    return chunkCache.get(id);
  }

  // ---------------------------------------------------------------------------------------------------
  // Formatting.

  const intFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
  const tokens = (v) => (v === null || v === undefined ? '–' : intFmt.format(v));
  const pct = (v, digits = 1) => (v === null || v === undefined || !isFinite(v) ? '–' : (100 * v).toFixed(digits) + '%');

  function figureText(unit, v) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    switch (unit) {
      case 'share': return pct(v);
      case 'count': return intFmt.format(v);
      case 'tokens': return intFmt.format(v);
      case 'usd': return '$' + v.toFixed(4);
      default: return v.toFixed(2);
    }
  }

  function figureCell(metric, fig) {
    if (!fig) return el('td', { class: 'num' }, '–');
    const interval = fig.low !== fig.value || fig.high !== fig.value;
    return el('td', { class: 'num', title: metric.title + ' (n = ' + fig.n + ')' },
      figureText(metric.unit, fig.value),
      interval && metric.unit === 'share'
        ? el('span', { class: 'ci' }, ' [' + (100 * fig.low).toFixed(1) + ', ' + (100 * fig.high).toFixed(1) + ']')
        : null);
  }

  // A run by its name, or by its directory when both runs have the same name.
  const runLabel = (r) => (r.dir && DATA.runs.filter((x) => x.name === r.name).length > 1 ? r.dir : r.name);
  const pointLabel = (p) => (DATA.runs.length > 1 ? runLabel(DATA.runs[p.run]) + ' · ' : '') + '#' + p.number + ' ' + p.label;
  const runOf = (p) => DATA.runs[p.run];

  // ---------------------------------------------------------------------------------------------------
  // Sortable tables: columns {name, value(row), cell(row) -> td, numeric}.

  function sortableTable(columns, rows, state, onRow, rowClass) {
    const table = el('table');
    const head = el('tr');
    const body = el('tbody');
    const draw = () => {
      let sorted = rows.slice();
      if (state.sort !== undefined && columns[state.sort]) {
        const col = columns[state.sort];
        sorted.sort((a, b) => {
          const x = col.value(a), y = col.value(b);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
          return state.desc ? -c : c;
        });
      }
      body.replaceChildren(...sorted.map((r) => {
        const tr = el('tr', { class: (onRow ? 'link ' : '') + (rowClass ? rowClass(r) : '') }, columns.map((c) => c.cell(r)));
        if (onRow) tr.addEventListener('click', (e) => { if (!e.target.closest('a,button,input')) onRow(r); });
        return tr;
      }));
      head.querySelectorAll('th').forEach((th, i) => {
        th.classList.toggle('sorted-asc', state.sort === i && !state.desc);
        th.classList.toggle('sorted-desc', state.sort === i && !!state.desc);
      });
    };
    columns.forEach((c, i) => head.append(el('th', {
      class: c.numeric ? 'num' : '',
      title: c.title || null,
      onclick: () => { state.desc = state.sort === i ? !state.desc : !!c.numeric; state.sort = i; draw(); },
    }, c.name)));
    table.append(el('thead', null, head), body);
    draw();
    return table;
  }

  // ---------------------------------------------------------------------------------------------------
  // Points.

  const pointsState = { filter: '', role: '', defaults: false, sort: undefined, desc: false, picked: [] };

  function viewPoints() {
    const wrap = el('div');
    const axes = [...new Set(DATA.runs.flatMap((r) => r.axes))];
    const columns = [
      { name: '#', value: (p) => p.number, cell: (p) => el('td', { class: 'num' }, p.number), numeric: true },
    ];
    if (DATA.runs.length > 1) columns.push({ name: 'run', value: (p) => runLabel(runOf(p)), cell: (p) => el('td', null, runLabel(runOf(p))) });
    columns.push(
      { name: 'strategy', value: (p) => p.strategy, cell: (p) => el('td', { class: 'nowrap', title: p.label + ' (point ' + p.id + ')' }, p.strategy, p.slice ? ' [' + p.slice + ']' : null, p.default ? el('span', { class: 'badge', title: "the strategy's default point" }, 'default') : null) },
      { name: 'summarizer', value: (p) => p.summarizer || '', cell: (p) => el('td', null, p.summarizer || '–') },
    );
    for (const a of axes) {
      columns.push({
        name: a,
        value: (p) => (p.axes[a] === undefined ? null : isNaN(+p.axes[a]) ? p.axes[a] : +p.axes[a]),
        cell: (p) => el('td', null, p.axes[a] === undefined ? '–' : p.axes[a]),
      });
    }
    for (const m of DATA.metrics) {
      columns.push({
        name: m.header + (m.better === 'lower' ? ' ↓' : m.better === 'higher' ? ' ↑' : ''),
        title: m.title,
        numeric: true,
        value: (p) => (p.figures[m.name] ? p.figures[m.name].value : null),
        cell: (p) => figureCell(m, p.figures[m.name]),
      });
    }
    columns.push({
      name: 'compare',
      title: 'pick two points to compare',
      value: () => 0,
      cell: (p) => {
        const i = DATA.points.indexOf(p);
        const box = el('input', { type: 'checkbox', title: 'compare this point' });
        box.checked = pointsState.picked.includes(i);
        box.addEventListener('change', () => {
          pointsState.picked = pointsState.picked.filter((x) => x !== i);
          if (box.checked) pointsState.picked.push(i);
          pointsState.picked = pointsState.picked.slice(-2);
          render();
        });
        return el('td', null, box);
      },
    });
    const roles = [...new Set(DATA.points.map((p) => p.role).filter(Boolean))].sort();
    const shown = DATA.points.filter((p) => {
      if (pointsState.defaults && !p.default) return false;
      if (pointsState.role && p.role !== pointsState.role) return false;
      const text = [p.label, p.strategy, p.summarizer || '', p.id, ...Object.values(p.axes)].join(' ').toLowerCase();
      return text.includes(pointsState.filter.toLowerCase());
    });
    const search = el('input', { type: 'search', placeholder: 'filter: strategy, knob value, summarizer…', value: pointsState.filter });
    search.addEventListener('input', () => { pointsState.filter = search.value; render(); search.focus(); });
    const roleSelect = el('select', null, el('option', { value: '' }, 'every role'), roles.map((r) => el('option', { value: r }, r)));
    roleSelect.value = pointsState.role;
    roleSelect.addEventListener('change', () => { pointsState.role = roleSelect.value; render(); });
    const defaults = el('input', { type: 'checkbox', id: 'defaults-only' });
    defaults.checked = pointsState.defaults;
    defaults.addEventListener('change', () => { pointsState.defaults = defaults.checked; render(); });
    const compare = el('button', {
      id: 'compare-picked',
      disabled: pointsState.picked.length === 2 ? null : 'disabled',
      onclick: () => go('compare/' + pointsState.picked.join('/')),
    }, 'compare the two picked points');
    const problems = DATA.runs.flatMap((r) => r.problems.map((line) => (DATA.runs.length > 1 ? runLabel(r) + ': ' : '') + line));
    append(wrap, [
      el('h2', null, 'Points'),
      problems.length ? el('details', { class: 'problem', id: 'problems' }, el('summary', null, 'Cells missing or damaged, left out of every figure and table'),
        el('ul', null, problems.map((line) => el('li', null, line)))) : null,
      el('p', { class: 'note' }, 'Each figure over the point\'s conversations, with its 95 % bootstrap interval over conversations (as in report.md). Click a row for its conversations; click a header to sort.'),
      el('div', { class: 'controls' }, search, roleSelect, el('label', null, defaults, ' default points only'), compare,
        el('span', { class: 'note' }, shown.length + ' of ' + DATA.points.length + ' points')),
      sortableTable(columns, shown, pointsState, (p) => go('point/' + DATA.points.indexOf(p)), (p) => (p.default ? 'default' : '') + (pointsState.picked.includes(DATA.points.indexOf(p)) ? ' selected' : '')),
    ]);
    wrap.querySelector('table').id = 'points';
    return wrap;
  }

  // ---------------------------------------------------------------------------------------------------
  // A point's conversations.

  const cellsOfPoint = (pi) => DATA.cells.map((c, i) => [c, i]).filter(([c]) => c.point === pi);
  const compressions = (cell) => cell.events.filter((e) => e.span.acted !== 'unchanged').length;
  const storms = (cell) => cell.events.filter((e) => e.storm).length;
  const convState = { filter: '', compressed: false, lost: false, overflowed: false, sort: undefined, desc: false };

  function viewPoint(pi) {
    const p = DATA.points[pi];
    if (!p) return el('p', { class: 'problem' }, 'No such point.');
    const rows = cellsOfPoint(pi).map(([c, i]) => ({ cell: c, index: i, conv: DATA.conversations[c.conversation] }));
    const shown = rows.filter((r) => {
      if (convState.compressed && compressions(r.cell) === 0) return false;
      if (convState.lost && r.cell.lost === 0) return false;
      if (convState.overflowed && r.cell.first_overflow === undefined) return false;
      return (r.conv.id + ' ' + r.conv.source).toLowerCase().includes(convState.filter.toLowerCase());
    });
    const columns = [
      { name: 'conversation', value: (r) => r.conv.id, cell: (r) => el('td', null, link('cell/' + r.index, r.conv.id), r.cell.repeat ? ' (repeat ' + r.cell.repeat + ')' : '') },
      { name: 'source', value: (r) => r.conv.source, cell: (r) => el('td', null, r.conv.source) },
      { name: 'requests', numeric: true, value: (r) => r.cell.requests.length, cell: (r) => el('td', { class: 'num' }, r.cell.requests.length) },
      { name: 'compressions', numeric: true, value: (r) => compressions(r.cell), cell: (r) => el('td', { class: 'num' }, compressions(r.cell)) },
      { name: 'storms', numeric: true, value: (r) => storms(r.cell), cell: (r) => el('td', { class: 'num' + (storms(r.cell) ? ' storm' : '') }, storms(r.cell)) },
      { name: 'overflow at request', numeric: true, value: (r) => (r.cell.first_overflow === undefined ? null : r.cell.first_overflow), cell: (r) => el('td', { class: 'num' + (r.cell.first_overflow === undefined ? '' : ' lost') }, r.cell.first_overflow === undefined ? '–' : r.cell.first_overflow) },
      { name: 'tokens vs none ↓', numeric: true, value: (r) => r.cell.figures.tokens_vs_none, cell: (r) => el('td', { class: 'num' }, pct(r.cell.figures.tokens_vs_none)) },
      { name: 'early-only kept', numeric: true, value: (r) => (r.cell.early_only ? r.cell.early_only[0] / r.cell.early_only[1] : null), cell: (r) => el('td', { class: 'num' }, r.cell.early_only ? r.cell.early_only[0] + ' / ' + r.cell.early_only[1] : '–') },
      { name: 'probes lost at end', numeric: true, value: (r) => r.cell.lost, cell: (r) => el('td', { class: 'num' + (r.cell.lost ? ' lost' : '') }, r.cell.probes ? r.cell.lost + ' / ' + r.cell.probes : '–') },
      { name: 'error', value: (r) => r.cell.error || '', cell: (r) => el('td', { class: r.cell.error ? 'problem' : '' }, r.cell.error || '') },
    ];
    const search = el('input', { type: 'search', placeholder: 'filter conversations…', value: convState.filter });
    search.addEventListener('input', () => { convState.filter = search.value; render(); search.focus(); });
    const toggle = (key, text) => {
      const box = el('input', { type: 'checkbox' });
      box.checked = convState[key];
      box.addEventListener('change', () => { convState[key] = box.checked; render(); });
      return el('label', null, box, ' ' + text);
    };
    const figs = DATA.metrics.filter((m) => p.figures[m.name]).map((m) => el('span', { class: 'badge', title: m.title }, m.header + ' ' + figureText(m.unit, p.figures[m.name].value)));
    const table = sortableTable(columns, shown, convState, (r) => go('cell/' + r.index));
    table.id = 'conversations';
    return el('div', null,
      el('div', { class: 'crumbs' }, link('', 'Points'), ' › ', pointLabel(p)),
      el('h2', null, pointLabel(p)),
      el('p', { class: 'note' }, p.strategy + (p.summarizer ? ' · summarizer ' + p.summarizer : '') + ' · point ' + p.id),
      el('div', null, figs),
      el('div', { class: 'controls' }, search, toggle('compressed', 'with compressions'), toggle('lost', 'with probes lost at the end'), toggle('overflowed', 'overflowed'),
        el('span', { class: 'note' }, shown.length + ' of ' + rows.length + ' conversations')),
      table);
  }

  // ---------------------------------------------------------------------------------------------------
  // A conversation under one point: the request sizes, its events, and one event in full.

  function noneCellFor(cell) {
    const run = DATA.points[cell.point].run;
    const i = DATA.cells.findIndex((c) => c.conversation === cell.conversation && c.repeat === cell.repeat &&
      DATA.points[c.point].role === 'no-compression' && DATA.points[c.point].run === run);
    return i < 0 ? null : i;
  }

  function niceStep(max, ticks) {
    const raw = max / ticks;
    const mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    return [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || mag * 10;
  }

  function plot(cell, overlay, overlayLabel, selected, onEvent) {
    const W = 1000, H = 340, L = 70, R = 20, T = 8, B = 36;
    const n = Math.max(cell.requests.length, overlay ? overlay.requests.length : 0);
    const ymax = 1.06 * Math.max(1, ...cell.requests, ...(overlay ? overlay.requests : []), cell.window || 0, cell.trigger || 0);
    const x = (i) => L + (n > 1 ? (i * (W - L - R)) / (n - 1) : 0);
    const top = T + 14;
    const y = (v) => top + (H - top - B) * (1 - v / ymax);
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plot', role: 'img', id: 'timeline' },
      svg('title', null, 'Request size per request'));
    const ystep = niceStep(ymax, 5);
    for (let v = 0; v <= ymax; v += ystep) {
      g.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#eef1f4' }));
      g.append(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, tokens(v)));
    }
    const xstep = Math.max(1, niceStep(Math.max(1, n - 1), 10));
    for (let i = 0; i < n; i += xstep) g.append(svg('text', { x: x(i), y: H - B + 16, 'text-anchor': 'middle' }, String(i)));
    g.append(svg('text', { x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle' }, 'request (one per recorded model turn)'));
    g.append(svg('text', { x: 12, y: T + (H - T - B) / 2, transform: `rotate(-90 12 ${T + (H - T - B) / 2})`, 'text-anchor': 'middle' }, 'request tokens'));
    const hline = (v, color, label) => {
      if (!v) return;
      g.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: color, 'stroke-dasharray': '6 4', 'stroke-width': 1.5 }));
      g.append(svg('text', { x: W - R - 4, y: y(v) - 4, 'text-anchor': 'end', fill: color }, label + ' ' + tokens(v)));
    };
    hline(cell.window, '#c62828', 'window');
    hline(cell.trigger, '#ef6c00', 'trigger');
    const line = (values, color, width, dash) => svg('polyline', {
      points: values.map((v, i) => x(i).toFixed(1) + ',' + y(v).toFixed(1)).join(' '),
      fill: 'none', stroke: color, 'stroke-width': width, 'stroke-dasharray': dash || null,
    });
    if (overlay) g.append(line(overlay.requests, '#8b949e', 2, '4 3'));
    g.append(line(cell.requests, '#1f6feb', 2));
    // Requests over the window, on a strip along the top (their points on the line may hold a compression).
    cell.requests.forEach((v, i) => {
      if (cell.window && v > cell.window) {
        g.append(svg('path', { d: `M${x(i) - 4},${T}l8,8m0,-8l-8,8`, stroke: '#c62828', 'stroke-width': 2, class: 'overflow' },
          svg('title', null, `request ${i}: ${tokens(v)} tokens, over the window (the provider refuses it)`)));
      }
    });
    cell.events.forEach((e, k) => {
      const cx = x(e.request), cy = y(e.before);
      const tip = `compression #${k} at request ${e.request}: ${e.status}, ${tokens(e.before)} → ${tokens(e.after)} tokens` +
        (e.storm ? ' (storm: still at or above the trigger)' : '');
      g.append(svg('line', { x1: cx, x2: cx, y1: cy, y2: y(e.after), stroke: e.storm ? '#ef6c00' : '#1f6feb', 'stroke-width': 1 }));
      const common = { class: 'marker', 'data-event': k, onclick: () => onEvent(k), 'stroke-width': k === selected ? 3 : 1 };
      let shape;
      if (e.span.acted === 'unchanged') shape = svg('circle', { ...common, cx, cy, r: 5, fill: '#fff', stroke: '#5d6878' });
      else if (e.storm) shape = svg('path', { ...common, d: `M${cx},${cy - 7}l7,12h-14z`, fill: '#ef6c00', stroke: '#7a3600' });
      else if (e.span.acted === 'in-place') shape = svg('rect', { ...common, x: cx - 5, y: cy - 5, width: 10, height: 10, fill: '#6f42c1', stroke: '#3b2068' });
      else shape = svg('circle', { ...common, cx, cy, r: 6, fill: '#1f6feb', stroke: '#0b3a82' });
      shape.append(svg('title', null, tip));
      g.append(shape);
    });
    const legend = el('div', { class: 'legend' },
      el('span', { style: null, class: 'lg-main' }, DATA.points[cell.point].label),
      overlay ? el('span', { class: 'lg-overlay' }, overlayLabel) : null,
      el('span', { class: 'lg-window' }, 'window'), el('span', { class: 'lg-trigger' }, 'trigger'),
      el('span', { class: 'lg-plain' }, '● compression'), el('span', { class: 'lg-storm' }, '▲ storm (still at or above the trigger)'),
      el('span', { class: 'lg-inplace' }, '■ rewritten in place'), el('span', { class: 'lg-unchanged' }, '○ left unchanged'),
      el('span', { class: 'lg-overflow' }, '× (along the top) request over the window'));
    const colors = { 'lg-main': '#1f6feb', 'lg-overlay': '#8b949e', 'lg-window': '#c62828', 'lg-trigger': '#ef6c00', 'lg-plain': '#1f6feb', 'lg-storm': '#ef6c00', 'lg-inplace': '#6f42c1', 'lg-unchanged': '#5d6878', 'lg-overflow': '#c62828' };
    legend.querySelectorAll('span').forEach((s) => { s.style.color = colors[s.className]; });
    return el('div', null, g, legend);
  }

  function roundOf(turns, i) {
    let lo = 0, hi = turns.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (turns[mid] < i) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function marked(text, golds, whole) {
    const pre = el('pre');
    const shown = text.length > MAX_SHOWN_CHARS && !whole ? text.slice(0, MAX_SHOWN_CHARS) : text;
    const lower = shown.toLowerCase();
    const hits = [];
    for (const g of golds) {
      const needle = g.toLowerCase();
      if (!needle) continue;
      for (let at = lower.indexOf(needle); at >= 0; at = lower.indexOf(needle, at + needle.length)) hits.push([at, at + needle.length]);
    }
    hits.sort((a, b) => a[0] - b[0]);
    let pos = 0;
    for (const [a, b] of hits) {
      if (a < pos) continue;
      pre.append(shown.slice(pos, a), el('mark', null, shown.slice(a, b)));
      pos = b;
    }
    pre.append(shown.slice(pos));
    if (shown.length < text.length) {
      const more = el('button', null, 'show all ' + intFmt.format(text.length) + ' characters');
      more.addEventListener('click', () => more.parentElement.replaceWith(marked(text, golds, true)));
      return el('div', null, pre, more);
    }
    return pre;
  }

  function contentBlock(chunk, i, golds) {
    const c = chunk.contents[i];
    return el('div', { class: 'content', 'data-content': i },
      el('span', { class: 'badge ' + (c.role === 'model' ? 'model' : 'user') }, c.role),
      el('span', { class: 'note' }, ' #' + i + ' · ' + tokens(c.tokens) + ' tokens'),
      marked(c.text, golds));
  }

  const containsAny = (text, golds) => { const t = text.toLowerCase(); return golds.some((g) => g && t.includes(g.toLowerCase())); };

  // Recorded Contents from..to-1, one collapsed block per request round, rendered when opened.
  function historyRounds(chunk, from, to, golds) {
    const out = [];
    let i = from;
    while (i < to) {
      const r = roundOf(chunk.turns, i);
      const last = Math.min(to, r < chunk.turns.length ? chunk.turns[r] + 1 : chunk.contents.length);
      const ids = [];
      for (let j = i; j < last; j++) ids.push(j);
      const total = ids.reduce((s, j) => s + chunk.contents[j].tokens, 0);
      const hasGold = ids.some((j) => containsAny(chunk.contents[j].text, golds));
      const label = (r < chunk.turns.length ? 'request ' + r + ' (model turn ' + chunk.turns[r] + ')' : 'after the last request') +
        ' · ' + ids.length + (ids.length === 1 ? ' content' : ' contents') + ' · ' + tokens(total) + ' tokens' + (hasGold ? ' · ★ gold' : '');
      const details = el('details', { class: hasGold ? 'gold' : null, 'data-from': ids[0], 'data-to': ids[ids.length - 1] + 1 }, el('summary', null, label));
      details.addEventListener('toggle', () => {
        if (details.open && details.children.length === 1) append(details, ids.map((j) => contentBlock(chunk, j, golds)));
      }, { once: false });
      out.push(details);
      i = last;
    }
    return out;
  }

  function lineDiff(a, b) {
    const x = a.split('\n').slice(0, 3000), y = b.split('\n').slice(0, 3000);
    const n = x.length, m = y.length;
    const dp = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) dp[i][j] = x[i] === y[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    const out = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push([' ', x[i]]); i++; j++; }
      else if (j < m && (i === n || dp[i][j + 1] >= dp[i + 1][j])) { out.push(['+', y[j]]); j++; }
      else { out.push(['-', x[i]]); i++; }
    }
    return out;
  }

  function whereGold(probe, span, chunk) {
    if (!probe || !probe.evidence.length) return '–';
    const ev = probe.evidence;
    if (ev.some((e) => e >= span.from && e < span.to)) {
      const e = ev.find((e) => e >= span.from && e < span.to);
      const r = roundOf(chunk.turns, e);
      return el('span', null, 'in the replaced history, content #' + e + ' (request ' + r + ') ',
        el('button', { class: 'show-gold', onclick: () => openContent(e) }, 'show'));
    }
    if (ev.every((e) => e < span.from)) return 'replaced by an earlier compression';
    if (ev.every((e) => e < span.end)) {
      if (span.acted === 'in-place') return 'in the history it rewrote in place';
      return span.acted === 'unchanged' ? 'in the history, left unchanged' : 'kept verbatim';
    }
    return 'not yet in the history';
  }

  function openContent(i) {
    for (const d of document.querySelectorAll('#event details[data-from]')) {
      if (+d.dataset.from <= i && i < +d.dataset.to) {
        let p = d;
        while (p) { if (p.tagName === 'DETAILS') p.open = true; p = p.parentElement; }
        d.open = true;
        d.dispatchEvent(new Event('toggle'));
        const node = d.querySelector(`[data-content="${i}"]`) || d;
        node.scrollIntoView({ block: 'center' });
        return;
      }
    }
  }

  function outcomeText(o) {
    if (o.kept) return el('span', { class: 'kept' }, 'kept');
    return el('span', { class: 'lost' }, o.held ? 'lost (after the overflow)' : 'lost');
  }

  function probesTable(outcomes, chunk, strings, span) {
    const columns = [
      { name: 'kind', value: (o) => (chunk.probes[o.probe] || {}).kind || '', cell: (o) => el('td', null, (chunk.probes[o.probe] || {}).kind || '?') },
      { name: 'question', value: (o) => (chunk.probes[o.probe] || {}).question || o.probe, cell: (o) => el('td', { title: o.probe }, (chunk.probes[o.probe] || {}).question || o.probe) },
      { name: 'gold', value: (o) => (chunk.probes[o.probe] || {}).gold || '', cell: (o) => el('td', null, el('code', null, (chunk.probes[o.probe] || {}).gold || '?')) },
      { name: 'answer', value: (o) => (o.answer === undefined ? '' : strings[o.answer]), cell: (o) => el('td', null, o.answer === undefined ? '–' : el('div', { class: 'answer' }, strings[o.answer].slice(0, 400))) },
      { name: 'outcome', value: (o) => (o.kept ? 1 : 0), cell: (o) => el('td', { class: 'outcome' }, outcomeText(o)) },
      { name: 'at risk', value: (o) => (o.at_risk ? 1 : 0), cell: (o) => el('td', null, o.at_risk === undefined ? '–' : o.at_risk ? 'yes' : 'no') },
      { name: 'early-only', value: (o) => (o.early_only ? 1 : 0), cell: (o) => el('td', null, o.early_only === undefined ? '–' : o.early_only ? 'yes' : 'no') },
    ];
    if (span) columns.push({ name: 'where the gold was', value: () => 0, cell: (o) => el('td', null, whereGold(chunk.probes[o.probe], span, chunk)) });
    return sortableTable(columns, outcomes, {}, null, (o) => (o.kept ? 'probe-kept' : 'probe-lost'));
  }

  function lostFiles(outcomes, chunk) {
    const files = outcomes.filter((o) => !o.kept && (chunk.probes[o.probe] || {}).kind === 'artifact').map((o) => chunk.probes[o.probe].gold);
    return files.length ? el('p', { class: 'lost-files' }, el('strong', { class: 'lost' }, 'Files lost: '), files.join(', ')) : null;
  }

  function renderEvent(cell, detail, chunk, k) {
    const e = cell.events[k];
    const d = detail.events[k] || { probes: [] };
    const span = e.span;
    const golds = d.probes.flatMap((o) => { const p = chunk.probes[o.probe]; return p ? [p.gold, ...(p.accept || [])] : []; });
    const previous = (() => {
      for (let j = k - 1; j >= 0; j--) {
        if (cell.events[j].span.acted === 'replaced') return detail.events[j] && detail.events[j].summary !== undefined ? j : null;
      }
      return null;
    })();
    const replacedPane = el('div', { class: 'pane', id: 'replaced' }, el('h3', null, 'History it replaced'));
    if (!chunk.contents.length) {
      replacedPane.append(el('p', { class: 'problem' }, 'The recording could not be read: ' + (DATA.conversations[cell.conversation].problem || '')));
    } else if (span.acted === 'replaced') {
      const total = chunk.contents.slice(span.from, span.to).reduce((s, c) => s + c.tokens, 0);
      replacedPane.append(el('p', { class: 'note' }, 'Recorded contents #' + span.from + '–#' + (span.to - 1) + ' (' + (span.to - span.from) + ', ' + tokens(total) + ' tokens)' +
        (previous !== null ? ' and the summary of compression #' + previous : '') + ', located from the event\'s counts; by request round, collapsed:'));
      if (previous !== null) {
        const prev = el('details', { class: 'previous-summary' }, el('summary', null, 'summary written at compression #' + previous + ' · ' + tokens(cell.events[previous].summary_tokens) + ' tokens'));
        prev.append(marked(chunk.strings[detail.events[previous].summary], golds));
        replacedPane.append(prev);
      }
      append(replacedPane, historyRounds(chunk, span.from, span.to, golds));
      if (span.end > span.to) {
        const keptTotal = chunk.contents.slice(span.to, span.end).reduce((s, c) => s + c.tokens, 0);
        const kept = el('details', { class: 'kept-tail' }, el('summary', null, 'kept verbatim: contents #' + span.to + '–#' + (span.end - 1) + ' · ' + tokens(keptTotal) + ' tokens'));
        kept.addEventListener('toggle', () => { if (kept.open && kept.children.length === 1) append(kept, historyRounds(chunk, span.to, span.end, golds)); });
        replacedPane.append(kept);
      }
    } else if (span.acted === 'in-place') {
      replacedPane.append(el('p', { class: 'note' }, 'This strategy rewrote contents of the history in place (masked or truncated tool outputs): ' +
        tokens(e.before - e.after) + ' tokens fewer. The cell does not record which contents; the history it acted on:'));
      append(replacedPane, historyRounds(chunk, span.from, span.end, golds));
    } else {
      replacedPane.append(el('p', { class: 'note' }, 'The history was left as it was (' + e.status + ').'));
    }
    const summaryPane = el('div', { class: 'pane', id: 'summary' }, el('h3', null, 'Summary it produced'));
    if (d.summary !== undefined) {
      summaryPane.append(el('p', { class: 'note' }, tokens(e.summary_tokens) + ' tokens'), marked(chunk.strings[d.summary], golds));
    } else if (span.acted === 'replaced') {
      summaryPane.append(el('p', { class: 'note' }, runOf(DATA.points[cell.point]).summaries && !e.summary_tokens
        ? 'No summary: this strategy drops what it removes.' : 'The run did not keep summary texts.'));
    } else {
      summaryPane.append(el('p', { class: 'note' }, 'No summary at this event.'));
    }
    const panes = [replacedPane, summaryPane];
    if (d.first_pass !== undefined && d.summary !== undefined) {
      const diff = lineDiff(chunk.strings[d.first_pass], chunk.strings[d.summary]);
      const added = diff.filter((x) => x[0] === '+').length, removed = diff.filter((x) => x[0] === '-').length;
      const pre = el('pre', { class: 'diff' }, diff.map(([op, text]) => el('div', { class: op === '+' ? 'diff-add' : op === '-' ? 'diff-del' : null }, (op === ' ' ? '  ' : op + ' ') + text)));
      panes.push(el('div', { class: 'pane', id: 'verification' }, el('h3', null, 'Verification pass'),
        el('p', { class: 'note' }, 'It changed the first summary: ' + added + ' lines added, ' + removed + ' removed.'), pre));
    } else if (e.verification_changed === false) {
      summaryPane.append(el('p', { class: 'note' }, 'The verification pass left the summary unchanged.'));
    }
    const lost = d.probes.filter((o) => !o.kept).length;
    return el('section', { id: 'event' },
      el('h3', null, 'Compression #' + k + ' at request ' + e.request + ' (model turn ' + e.turn + '): ' + e.status + (e.storm ? ' · storm' : '')),
      el('p', { class: 'note' }, 'Request ' + tokens(e.before) + ' → ' + tokens(e.after) + ' tokens' + (e.storm ? ', still at or above the trigger: the next request compresses again' : '') + '.'),
      el('div', { class: 'event' + (panes.length === 3 ? ' with-verification' : '') }, panes),
      el('h3', null, 'Probes scored at this compression: ' + lost + ' lost of ' + d.probes.length),
      lostFiles(d.probes, chunk),
      d.probes.length ? probesTable(d.probes, chunk, chunk.strings, span) : el('p', { class: 'note' }, 'No probe was scored here.'));
  }

  async function viewCell(ci, opts) {
    const cell = DATA.cells[ci];
    if (!cell) return el('p', { class: 'problem' }, 'No such cell.');
    const p = DATA.points[cell.point];
    const conv = DATA.conversations[cell.conversation];
    const chunk = await chunkOf(cell.conversation);
    const detail = chunk.cells[ci] || { events: [], end: [] };
    const overlayIndex = opts.vs !== undefined ? opts.vs : noneCellFor(cell);
    const overlay = overlayIndex !== null && overlayIndex !== ci ? DATA.cells[overlayIndex] : null;
    // `vs/-1`: no overlay (without `vs` the point's `none` is drawn).
    const route = (k, vs) => 'cell/' + ci + (vs === null ? '/vs/-1' : vs !== undefined ? '/vs/' + vs : '') + (k !== undefined && k !== null ? '/event/' + k : '');
    const siblings = DATA.cells.map((c, i) => [c, i]).filter(([c]) => c.conversation === cell.conversation && c.repeat === cell.repeat);
    const pointSelect = el('select', { id: 'cell-point' }, siblings.map(([c, i]) => el('option', { value: i }, pointLabel(DATA.points[c.point]))));
    pointSelect.value = String(ci);
    pointSelect.addEventListener('change', () => go('cell/' + pointSelect.value));
    const overlaySelect = el('select', { id: 'cell-overlay' }, el('option', { value: '' }, 'nothing'), siblings.filter(([, i]) => i !== ci).map(([c, i]) => el('option', { value: i }, pointLabel(DATA.points[c.point]))));
    overlaySelect.value = overlay ? String(overlayIndex) : '';
    overlaySelect.addEventListener('change', () => go(route(opts.event, overlaySelect.value === '' ? -1 : overlaySelect.value)));
    const eventColumns = [
      { name: '#', numeric: true, value: (x) => x.k, cell: (x) => el('td', { class: 'num' }, x.k) },
      { name: 'request', numeric: true, value: (x) => x.e.request, cell: (x) => el('td', { class: 'num' }, x.e.request) },
      { name: 'model turn', numeric: true, value: (x) => x.e.turn, cell: (x) => el('td', { class: 'num' }, x.e.turn) },
      { name: 'status', value: (x) => x.e.status, cell: (x) => el('td', null, x.e.status, x.e.storm ? el('span', { class: 'badge storm' }, 'storm') : null) },
      { name: 'tokens before → after', numeric: true, value: (x) => x.e.before - x.e.after, cell: (x) => el('td', { class: 'num' }, tokens(x.e.before) + ' → ' + tokens(x.e.after)) },
      { name: 'summary tokens', numeric: true, value: (x) => x.e.summary_tokens, cell: (x) => el('td', { class: 'num' }, x.e.summary_tokens ? tokens(x.e.summary_tokens) : '–') },
      { name: 'verification', value: (x) => String(x.e.verification_changed), cell: (x) => el('td', null, x.e.verification_changed === undefined ? '–' : x.e.verification_changed ? 'changed' : 'unchanged') },
      { name: 'probes lost', numeric: true, value: (x) => x.e.lost, cell: (x) => el('td', { class: 'num' + (x.e.lost ? ' lost' : '') }, x.e.probes ? x.e.lost + ' / ' + x.e.probes : '–') },
    ];
    const events = cell.events.map((e, k) => ({ e, k }));
    const eventsTable = sortableTable(eventColumns, events, {}, (x) => go(route(x.k, opts.vs)), (x) => (x.k === opts.event ? 'selected' : ''));
    eventsTable.id = 'events';
    const endLost = detail.end.filter((o) => !o.kept).length;
    const end = el('details', { id: 'end-probes' }, el('summary', null, 'Probes at the end of the replay: ' + endLost + ' lost of ' + detail.end.length),
      lostFiles(detail.end, chunk), detail.end.length ? probesTable(detail.end, chunk, chunk.strings, null) : null);
    const out = el('div', null,
      el('div', { class: 'crumbs' }, link('', 'Points'), ' › ', link('point/' + cell.point, pointLabel(p)), ' › ', conv.id),
      el('h2', null, conv.id + ' ', el('span', { class: 'note' }, conv.source)),
      conv.problem ? el('p', { class: 'problem' }, 'Recording not available: ' + conv.problem) : null,
      chunk.probe_problem ? el('p', { class: 'problem' }, 'Probes not available: ' + chunk.probe_problem) : null,
      cell.error ? el('p', { class: 'problem' }, 'The replay stopped: ' + cell.error) : null,
      el('div', { class: 'controls' }, el('label', null, 'point ', pointSelect), el('label', null, 'overlay ', overlaySelect)),
      plot(cell, overlay, overlay ? pointLabel(DATA.points[overlay.point]) : '', opts.event, (k) => go(route(k, opts.vs))),
      el('p', { class: 'note' }, cell.requests.length + ' requests · window ' + tokens(cell.window) + (cell.trigger ? ' · trigger ' + tokens(cell.trigger) : '') +
        (cell.first_overflow !== undefined ? ' · first request over the window: ' + cell.first_overflow : '') + ' · token counts ' + runOf(p).tokenizer),
      el('h3', null, cell.events.length ? 'Compressions (click one)' : 'No compression in this conversation'),
      cell.events.length ? eventsTable : null,
      reworkTable(chunk),
      end);
    if (opts.event !== undefined && cell.events[opts.event]) {
      const section = renderEvent(cell, detail, chunk, opts.event);
      out.append(section);
      requestAnimationFrame(() => section.scrollIntoView({ block: 'start' }));
    }
    return out;
  }

  // What the agent did after each of its own compactions, read from the recording (harness/docs/rework.md).
  function reworkTable(chunk) {
    if (!chunk.rework || !chunk.rework.length) return null;
    const opt = (v) => (v === null || v === undefined ? '–' : String(v));
    const columns = [
      { name: '#', numeric: true, value: (r) => r.ordinal, cell: (r) => el('td', { class: 'num' }, r.ordinal) },
      { name: 'tokens before → after', numeric: true, value: (r) => r.tokens_before || 0, cell: (r) => el('td', { class: 'num' }, opt(r.tokens_before) + ' → ' + opt(r.tokens_after)) },
      { name: 'summary tokens', numeric: true, value: (r) => r.summary_tokens, cell: (r) => el('td', { class: 'num' }, r.summary_readable ? tokens(r.summary_tokens) : 'unreadable') },
      { name: 'turns after', numeric: true, value: (r) => r.turns_after, cell: (r) => el('td', { class: 'num' }, r.turns_after) },
      { name: 're-reads (named / not)', numeric: true, value: (r) => r.rereads, cell: (r) => el('td', { class: 'num' }, r.rereads + (r.rereads_named === null ? '' : ' (' + r.rereads_named + ' / ' + r.rereads_not_named + ')')) },
      { name: 'control re-reads', numeric: true, value: (r) => r.control_rereads, cell: (r) => el('td', { class: 'num' }, r.control_rereads + ' in ' + r.control_turns + ' turns') },
      { name: 'repeated commands', numeric: true, value: (r) => r.repeated_commands, cell: (r) => el('td', { class: 'num' }, r.repeated_commands + ' of ' + r.commands_after) },
      { name: 'restated prompts', numeric: true, value: (r) => r.restated_prompts, cell: (r) => el('td', { class: 'num' }, r.restated_prompts + ' of ' + r.prompts_after) },
      { name: 'turns to first edit', numeric: true, value: (r) => (r.turns_to_first_edit === null ? 1e9 : r.turns_to_first_edit), cell: (r) => el('td', { class: 'num' }, opt(r.turns_to_first_edit)) },
      { name: 'files changed named', numeric: true, value: (r) => r.files_edited_named || 0, cell: (r) => el('td', { class: 'num' }, opt(r.files_edited_named) + ' of ' + r.files_edited_before) },
    ];
    return el('details', { id: 'rework', open: '' },
      el('summary', null, 'After each of the agent\'s own compactions (from the recording): ' + chunk.rework.length),
      sortableTable(columns, chunk.rework, {}, null, () => ''));
  }

  // ---------------------------------------------------------------------------------------------------
  // Compare two points (of one run or of two runs): differences only.

  function defaultPair() {
    if (DATA.runs.length > 1) {
      for (const b of DATA.points.filter((p) => p.run === 0 && p.default)) {
        const a = DATA.points.findIndex((q) => q.run === 1 && q.id === b.id);
        if (a >= 0) return [a, DATA.points.indexOf(b)];
      }
    }
    const ref = DATA.points.findIndex((p) => p.role === 'reference' && p.default);
    const none = DATA.points.findIndex((p) => p.role === 'no-compression' && p.run === (ref >= 0 ? DATA.points[ref].run : 0));
    return [none >= 0 ? none : 0, ref >= 0 ? ref : Math.min(1, DATA.points.length - 1)];
  }

  function changedConversations(a, b) {
    const byConv = (pi) => new Map(cellsOfPoint(pi).map(([c, i]) => [DATA.conversations[c.conversation].id + '/' + c.repeat, i]));
    const A = byConv(a), B = byConv(b);
    const rows = [];
    for (const [key, ia] of A) {
      const ib = B.get(key);
      if (ib === undefined) continue;
      const ca = DATA.cells[ia], cb = DATA.cells[ib];
      const changes = [];
      const diff = (name, x, y, fmt) => { if (x !== y) changes.push(name + ' ' + fmt(x) + ' → ' + fmt(y)); };
      const id = (v) => (v === undefined || v === null ? '–' : String(v));
      diff('compressions', compressions(ca), compressions(cb), id);
      diff('storms', storms(ca), storms(cb), id);
      diff('overflow at request', ca.first_overflow, cb.first_overflow, id);
      diff('early-only kept', ca.early_only ? ca.early_only[0] : undefined, cb.early_only ? cb.early_only[0] : undefined, id);
      diff('probes lost at end', ca.lost, cb.lost, id);
      const ta = ca.figures.tokens_vs_none, tb = cb.figures.tokens_vs_none;
      if (ta !== undefined && tb !== undefined && Math.abs(ta - tb) > 0.0005) changes.push('tokens vs none ' + pct(ta) + ' → ' + pct(tb));
      if (changes.length) rows.push({ key, ia, ib, changes, lostDelta: cb.lost - ca.lost });
    }
    return rows;
  }

  async function probeChanges(ia, ib) {
    const ca = DATA.cells[ia], cb = DATA.cells[ib];
    const [ka, kb] = await Promise.all([chunkOf(ca.conversation), chunkOf(cb.conversation)]);
    const ea = new Map(((ka.cells[ia] || {}).end || []).map((o) => [o.probe, o]));
    const rows = [];
    for (const o of (kb.cells[ib] || {}).end || []) {
      const before = ea.get(o.probe);
      if (before && before.kept !== o.kept) rows.push([before, o]);
    }
    const probe = (id) => kb.probes[id] || ka.probes[id] || {};
    return el('table', { class: 'probe-changes' },
      el('thead', null, el('tr', null, ['kind', 'question', 'gold', 'A', 'B'].map((h) => el('th', null, h)))),
      el('tbody', null, rows.length ? rows.map(([x, y]) => el('tr', null, el('td', null, probe(y.probe).kind || '?'), el('td', null, probe(y.probe).question || y.probe),
        el('td', null, el('code', null, probe(y.probe).gold || '?')), el('td', null, outcomeText(x)), el('td', null, outcomeText(y))))
        : el('tr', null, el('td', { colspan: 5, class: 'note' }, 'No probe changed its outcome at the end of the replay.'))));
  }

  function gateSection(a, b) {
    const gate = DATA.gate;
    if (!gate) return null;
    const base = DATA.runs[gate.baseline], cur = DATA.runs[gate.current];
    const pointIn = (run, id) => DATA.points.findIndex((p) => p.run === run && p.id === id);
    const cellIn = (run, id, conversation, repeat) => DATA.cells.findIndex((c) => DATA.points[c.point].run === run && DATA.points[c.point].id === id &&
      DATA.conversations[c.conversation].id === conversation && c.repeat === repeat);
    const flagged = gate.cells.filter((f) => a === undefined || DATA.points[b].id === f.point);
    return el('section', { id: 'gate' },
      el('h3', null, 'The regression gate: ' + cur.dir + ' against ' + base.dir),
      gate.completeness.length ? el('ul', { class: 'problem' }, gate.completeness.map((c) => el('li', null, c))) : null,
      el('p', null, gate.regressions.length ? gate.regressions.length + ' of ' + gate.checks + ' checks failed:' : 'No regression in ' + gate.checks + ' checks.'),
      gate.regressions.length ? el('ul', null, gate.regressions.map((r) => el('li', null, r.label + ' (' + r.point + '): ' + r.metric +
        (r.difference ? ' changed by ' + r.difference.mean.toFixed(4) + ' [' + r.difference.low.toFixed(4) + ', ' + r.difference.high.toFixed(4) + ']' : '') +
        ', tolerance ' + r.tolerance.toFixed(4) + ' ', (() => { const pa = pointIn(gate.baseline, r.point), pb = pointIn(gate.current, r.point); return pa >= 0 && pb >= 0 ? link('compare/' + pa + '/' + pb, 'compare') : null; })()))) : null,
      flagged.length ? el('table', { id: 'gate-cells' },
        el('thead', null, el('tr', null, ['point', 'conversation', 'metric', 'baseline', 'current', ''].map((h) => el('th', null, h)))),
        el('tbody', null, flagged.map((f) => {
          const ib = cellIn(gate.current, f.point, f.conversation, f.repeat), ia = cellIn(gate.baseline, f.point, f.conversation, f.repeat);
          const pi = pointIn(gate.current, f.point);
          return el('tr', null, el('td', { title: f.point }, pi >= 0 ? '#' + DATA.points[pi].number + ' ' + DATA.points[pi].label : f.point), el('td', null, f.conversation), el('td', null, f.metric), el('td', { class: 'num' }, f.baseline.toFixed(4)),
            el('td', { class: 'num' }, f.current.toFixed(4)), el('td', null, ib >= 0 ? link('cell/' + ib + (ia >= 0 ? '/vs/' + ia : ''), 'open') : ''));
        }))) : null);
  }

  function viewCompare(a, b) {
    if (a === undefined || b === undefined || !DATA.points[a] || !DATA.points[b]) [a, b] = defaultPair();
    const options = () => DATA.points.map((p, i) => el('option', { value: i }, pointLabel(p)));
    const sa = el('select', { id: 'compare-a' }, options()), sb = el('select', { id: 'compare-b' }, options());
    sa.value = String(a); sb.value = String(b);
    const change = () => go('compare/' + sa.value + '/' + sb.value);
    sa.addEventListener('change', change); sb.addEventListener('change', change);
    const pa = DATA.points[a], pb = DATA.points[b];
    const figures = el('table', { id: 'compare-figures' },
      el('thead', null, el('tr', null, ['figure', 'A', 'B', 'B − A'].map((h) => el('th', null, h)))),
      el('tbody', null, DATA.metrics.map((m) => {
        const fa = pa.figures[m.name], fb = pb.figures[m.name];
        const d = fa && fb ? fb.value - fa.value : null;
        return el('tr', null, el('td', { title: m.title }, m.header), figureCell(m, fa), figureCell(m, fb),
          el('td', { class: 'num' }, d === null ? '–' : m.unit === 'share' ? (d >= 0 ? '+' : '') + (100 * d).toFixed(1) + ' pp' : (d >= 0 ? '+' : '') + figureText(m.unit, d)));
      })));
    const rows = changedConversations(a, b);
    const changed = el('table', { id: 'changed' },
      el('thead', null, el('tr', null, ['conversation', 'what changed (A → B)', 'probes', ''].map((h) => el('th', null, h)))),
      el('tbody', null, rows.map((r) => {
        const more = el('td');
        const button = el('button', { class: 'probe-diff' }, 'probes that changed');
        button.addEventListener('click', async () => { button.disabled = true; more.append(await probeChanges(r.ia, r.ib)); });
        more.append(button);
        return el('tr', null, el('td', null, r.key.replace(/\/0$/, '')), el('td', null, r.changes.join('; ')), more,
          el('td', null, link('cell/' + r.ib + '/vs/' + r.ia, 'open B over A')));
      })));
    let overview = null;
    if (DATA.runs.length > 1) {
      const pairs = DATA.points.map((p, i) => [i, DATA.points.findIndex((q) => q.run === 1 && q.id === p.id)]).filter(([i, j]) => DATA.points[i].run === 0 && j >= 0);
      overview = el('table', { id: 'compare-runs' },
        el('thead', null, el('tr', null, ['point', 'conversations changed', 'probes lost at end (A → B)', 'gate-flagged cells'].map((h) => el('th', null, h)))),
        el('tbody', null, pairs.map(([i, j]) => {
          const ch = changedConversations(j, i);
          const lost = (pi) => cellsOfPoint(pi).reduce((s, [c]) => s + c.lost, 0);
          const flagged = DATA.gate ? DATA.gate.cells.filter((f) => f.point === DATA.points[i].id).length : 0;
          const tr = el('tr', { class: 'link' + (ch.length || flagged ? '' : ' note') }, el('td', null, '#' + DATA.points[i].number + ' ' + DATA.points[i].label),
            el('td', { class: 'num' }, ch.length), el('td', { class: 'num' }, lost(j) + ' → ' + lost(i)), el('td', { class: 'num' + (flagged ? ' lost' : '') }, flagged));
          tr.addEventListener('click', () => go('compare/' + j + '/' + i));
          return tr;
        })));
    }
    return el('div', null,
      el('div', { class: 'crumbs' }, link('', 'Points'), ' › compare'),
      el('h2', null, 'Compare'),
      el('p', { class: 'note' }, 'Two points, of this run or of the two runs (A: the baseline side, B: the other): their figures, then only what changed, conversation by conversation (cells paired by conversation).'),
      el('div', { class: 'controls' }, el('label', null, 'A ', sa), el('label', null, 'B ', sb)),
      gateSection(a, b),
      overview ? el('h3', null, 'Every configuration of both runs') : null, overview,
      el('h3', null, 'Figures'), figures,
      el('h3', null, rows.length + ' conversations whose outcome changed'),
      rows.length ? changed : el('p', { class: 'note' }, 'None: every paired conversation has the same compressions, overflow, probes and tokens.'));
  }

  // ---------------------------------------------------------------------------------------------------
  // Routing.

  async function render() {
    const begun = performance.now();
    const parts = location.hash.replace(/^#\/?/, '').split('/').filter((x) => x !== '');
    document.getElementById('nav-points').classList.toggle('active', parts[0] !== 'compare');
    document.getElementById('nav-compare').classList.toggle('active', parts[0] === 'compare');
    let view;
    try {
      if (parts[0] === 'point') view = viewPoint(+parts[1]);
      else if (parts[0] === 'cell') {
        const opts = {};
        for (let i = 2; i + 1 < parts.length; i += 2) opts[parts[i]] = +parts[i + 1];
        if (opts.vs === -1) opts.vs = null;
        view = await viewCell(+parts[1], opts);
      } else if (parts[0] === 'compare') view = viewCompare(parts[1] === undefined ? undefined : +parts[1], parts[2] === undefined ? undefined : +parts[2]);
      else view = viewPoints();
    } catch (err) {
      console.error(err);
      view = el('p', { class: 'problem' }, 'Could not show this view: ' + err);
    }
    app.replaceChildren(view);
    document.documentElement.dataset.view = parts[0] || 'points';
    // How long the last view took to decode and draw (the browser tests report it).
    document.documentElement.dataset.renderMs = (performance.now() - begun).toFixed(0);
  }

  async function main() {
    DATA = await decode('data-index');
    const run = DATA.runs[0];
    document.title = 'compactbench view: ' + run.name;
    document.getElementById('run-name').textContent = run.name + (DATA.runs.length > 1 ? ' vs ' + DATA.runs[1].name : '');
    document.getElementById('run-info').textContent = DATA.runs.map((r) => (r.dir || r.name) + ': ' + r.cells + ' cells' +
      (r.problems.length ? ' (' + r.problems.length + ' missing or damaged: left out)' : '') + ', token counts ' + r.tokenizer).join(' · ');
    window.addEventListener('hashchange', render);
    await render();
    // When the first view is on screen: the time since navigation (the page's opening time, for the
    // browser tests), and the part spent decoding and drawing.
    document.documentElement.dataset.scriptMs = (performance.now() - started).toFixed(0);
    document.documentElement.dataset.openedMs = performance.now().toFixed(0);
  }

  main().catch((err) => {
    console.error(err);
    app.replaceChildren(el('p', { class: 'problem' }, 'This page could not decode its data: ' + err));
  });
})();
