// The explorer of report.html (analysis/explorer.h writes the page and its data). Plain
// JavaScript, no library, no network: the data is the JSON of <script id="rx-data">, every
// matrix float32 little-endian in base64. Two parts:
//   maps    choose run, map (attention, position scores, P·Pᵀ), snapshot, layer, head; the value
//           under the cursor is shown below the map (#rx-readout)
//   curves  relative-weight curves of several runs overlaid (#rx-ccanvas), values at the
//           cursor's r below (#rx-creadout)
// Opened with #selftest=<JSON list of probes> the page drives its own selectors and cursor
// and writes what it showed into a pre element of id rx-selftest (tests/test_report_explorer.cpp).
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('rx-data').textContent);
  var root = document.getElementById('rx-root');
  var decoded = {};

  // base64 -> Float32Array (the page assumes a little-endian machine, as every browser's is).
  function f32(b64) {
    if (decoded[b64]) return decoded[b64];
    var s = atob(b64), u = new Uint8Array(s.length);
    for (var k = 0; k < s.length; ++k) u[k] = s.charCodeAt(k);
    return (decoded[b64] = new Float32Array(u.buffer));
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var a in attrs || {}) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function select(id, label, parent) {
    var wrap = el('label', {}, label + ' ');
    var s = el('select', { id: id });
    wrap.appendChild(s);
    parent.appendChild(wrap);
    parent.appendChild(document.createTextNode(' '));
    return s;
  }

  // Replaces the options; keeps the selected value where it still exists (returns whether).
  function fill(sel, options, keep) {
    var old = sel.value;
    sel.innerHTML = '';
    options.forEach(function (o) { sel.appendChild(el('option', { value: String(o[0]) }, o[1])); });
    var kept = keep && options.some(function (o) { return String(o[0]) === old; });
    if (kept) sel.value = old;
    return kept;
  }

  function fmtValue(v) { return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4) : v.toPrecision(5); }

  // Colours: viridis for values of one sign, blue-white-red around 0 for signed ones (the
  // figures' palettes, analysis/gnuplot.cpp).
  var VIRIDIS = ['#440154', '#482878', '#3e4989', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58', '#fde725'];
  var DIVERGING = ['#2166ac', '#67a9cf', '#f7f7f7', '#ef8a62', '#b2182b'];
  function rgb(h) { return [parseInt(h.substr(1, 2), 16), parseInt(h.substr(3, 2), 16), parseInt(h.substr(5, 2), 16)]; }
  function ramp(stops, t) {
    t = Math.min(1, Math.max(0, t)) * (stops.length - 1);
    var k = Math.min(stops.length - 2, Math.floor(t)), f = t - k, a = rgb(stops[k]), b = rgb(stops[k + 1]);
    return 'rgb(' + [0, 1, 2].map(function (c) { return Math.round(a[c] + f * (b[c] - a[c])); }).join(',') + ')';
  }

  // ---- maps ----
  var mapBox = el('div', { id: 'rx-maps' });
  root.appendChild(el('p', { class: 'rx-note' },
    'Choose a run (the first of each variant), a map, a snapshot, a layer and a head; the value ' +
    'under the cursor is shown under the map. Values: run.h5 as stored (float32); P·Pᵀ computed ' +
    'from the stored table.' + (data.note ? ' Left out to keep the page small:' + data.note : '')));
  root.appendChild(mapBox);
  var controls = el('div', { class: 'rx-controls' });
  mapBox.appendChild(controls);
  var runSel = select('rx-run', 'run', controls), mapSel = select('rx-map', 'map', controls);
  var stepSel = select('rx-step', 'snapshot', controls), layerSel = select('rx-layer', 'layer', controls);
  var headSel = select('rx-head', 'head', controls);
  var canvas = el('canvas', { id: 'rx-canvas', style: 'border:1px solid #ccc;cursor:crosshair' });
  mapBox.appendChild(canvas);
  var legend = el('div', { id: 'rx-legend', style: 'font-size:0.85em;color:#555' });
  var readout = el('div', { id: 'rx-readout', style: 'font-family:monospace;min-height:1.4em' }, '');
  mapBox.appendChild(legend);
  mapBox.appendChild(readout);
  fill(runSel, data.runs.map(function (r, k) { return [k, r.name + ' (' + r.variant + ')']; }));

  var view = null;  // what the map canvas shows: {run, map, values (n'×n'), pos, cell, lo, hi}

  function currentRun() { return data.runs[Number(runSel.value)]; }
  function currentMap() { var r = currentRun(); return r.maps[Number(mapSel.value)]; }

  function refreshMapOptions() {
    var r = currentRun();
    fill(mapSel, r.maps.map(function (m, k) { return [k, m.label]; }), false);
    refreshIndexOptions();
  }

  function refreshIndexOptions() {
    var r = currentRun(), m = currentMap();
    if (!fill(stepSel, r.steps.map(function (s, k) { return [k, 'step ' + s]; }), true))
      stepSel.value = String(r.steps.length - 1);  // the last snapshot first
    var layers = [], heads = [];
    for (var l = 0; l < m.layers; ++l) layers.push([l, m.kind === 'gram' ? '—' : String(l)]);
    for (var h = 0; h < m.heads; ++h) heads.push([h, m.kind === 'gram' ? '—' : String(h)]);
    if (m.heads > 1) heads.push([-1, 'mean over heads']);
    fill(layerSel, layers, true);
    fill(headSel, heads, true);
  }

  // The (n'×n') matrix of the selection: one head, or the mean over the heads.
  function selectedMatrix() {
    var r = currentRun(), m = currentMap(), snap = Number(stepSel.value);
    var all = f32(m.data[snap]), n = m.pos.length, l = Number(layerSel.value), h = Number(headSel.value);
    var out = new Float64Array(n * n);
    var heads = h < 0 ? m.heads : 1;
    for (var k = 0; k < heads; ++k) {
      var off = ((l * m.heads) + (h < 0 ? k : h)) * n * n;
      for (var e = 0; e < n * n; ++e) out[e] += all[off + e] / heads;
    }
    return { run: r, map: m, values: out, pos: m.pos, step: r.steps[snap], layer: l, head: h };
  }

  function masked(v, i, j) { return v.map.kind !== 'gram' && v.run.causal && v.pos[j] > v.pos[i]; }

  function drawMap() {
    var v = selectedMatrix(), n = v.pos.length, signed = false, lo = Infinity, hi = -Infinity;
    for (var i = 0; i < n; ++i)
      for (var j = 0; j < n; ++j) {
        if (masked(v, i, j)) continue;
        var x = v.values[i * n + j];
        lo = Math.min(lo, x); hi = Math.max(hi, x);
      }
    signed = lo < 0 && hi > 0;
    if (signed) { var a = Math.max(-lo, hi); lo = -a; hi = a; }
    if (!(hi > lo)) { hi = lo + 1; }
    v.cell = Math.max(4, Math.floor(512 / n));
    v.lo = lo; v.hi = hi;
    canvas.width = canvas.height = v.cell * n;
    var g = canvas.getContext('2d');
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, canvas.width, canvas.height);
    for (i = 0; i < n; ++i)
      for (j = 0; j < n; ++j) {
        if (masked(v, i, j)) continue;
        var t = (v.values[i * n + j] - lo) / (hi - lo);
        g.fillStyle = ramp(signed ? DIVERGING : VIRIDIS, t);
        g.fillRect(j * v.cell, i * v.cell, v.cell, v.cell);
      }
    var what = v.map.kind === 'gram' ? 'position i (rows) × position j (columns)' : 'query i (rows, 0 at the top) × key j (columns)';
    var stride = v.run.stride > 1 ? '; every ' + v.run.stride + 'th position shown' : '';
    var probes = v.map.kind === 'attention' && v.run.probes > 0 ? '; averaged over ' + v.run.probes + ' probe sequences' : '';
    legend.textContent = what + stride + probes + '. Colour: ' + fmtValue(lo) + ' (' + (signed ? 'blue' : 'dark') + ') to ' +
      fmtValue(hi) + ' (' + (signed ? 'red' : 'yellow') + ')' + (v.run.causal && v.map.kind !== 'gram' ? '; white: masked (j > i)' : '') + '.';
    view = v;
    readout.textContent = '';
  }

  function hoverMap(e) {
    if (!view) return;
    var rect = canvas.getBoundingClientRect(), n = view.pos.length;
    var j = Math.floor((e.clientX - rect.left) / view.cell), i = Math.floor((e.clientY - rect.top) / view.cell);
    if (i < 0 || j < 0 || i >= n || j >= n) return;
    var x = view.values[i * n + j], pi = view.pos[i], pj = view.pos[j];
    var names = view.map.kind === 'gram' ? ['i', 'j'] : ['query i', 'key j'];
    readout.textContent = names[0] + ' = ' + pi + ', ' + names[1] + ' = ' + pj + ': ' + fmtValue(x) +
      (masked(view, i, j) ? ' (masked)' : '') + ' — ' + view.map.label + ', step ' + view.step +
      (view.map.kind === 'gram' ? '' : ', layer ' + view.layer + ', ' + (view.head < 0 ? 'mean over heads' : 'head ' + view.head));
    // String(x): the shortest text that reads back as the same number (a float32 widened exactly).
    readout.dataset.i = pi; readout.dataset.j = pj; readout.dataset.value = String(x);
  }

  canvas.addEventListener('mousemove', hoverMap);
  runSel.addEventListener('change', function () { refreshMapOptions(); drawMap(); });
  mapSel.addEventListener('change', function () { refreshIndexOptions(); drawMap(); });
  [stepSel, layerSel, headSel].forEach(function (s) { s.addEventListener('change', drawMap); });

  // ---- curves ----
  var curveBox = el('div', { id: 'rx-curves' });
  root.appendChild(el('h3', {}, 'Relative-weight curves'));
  root.appendChild(curveBox);
  var cControls = el('div', { class: 'rx-controls' });
  curveBox.appendChild(cControls);
  var cstepSel = select('rx-cstep', 'snapshot', cControls);
  var allSteps = [];
  data.runs.forEach(function (r) { r.steps.forEach(function (s) { if (allSteps.indexOf(s) < 0) allSteps.push(s); }); });
  allSteps.sort(function (a, b) { return a - b; });
  fill(cstepSel, allSteps.map(function (s) { return [s, 'step ' + s + ' (or each run\'s last before it)']; }));
  cstepSel.value = String(allSteps[allSteps.length - 1]);
  var clist = el('div', { id: 'rx-clist', style: 'max-height:12em;overflow-y:auto;font-size:0.9em;columns:2' });
  curveBox.appendChild(clist);
  var ccanvas = el('canvas', { id: 'rx-ccanvas', width: 760, height: 360, style: 'border:1px solid #ccc;cursor:crosshair' });
  curveBox.appendChild(ccanvas);
  var creadout = el('div', { id: 'rx-creadout', style: 'font-family:monospace;font-size:0.9em;min-height:1.4em' });
  curveBox.appendChild(creadout);
  var boxes = [];  // {box, run, curve, row, key}
  var dashes = [[], [6, 3], [2, 3], [8, 3, 2, 3], [1, 2]];
  data.runs.forEach(function (r, ri) {
    r.curves.forEach(function (c, ci) {
      c.rows.forEach(function (row, k) {
        var key = r.name + ' · ' + c.label + ' · ' + row;
        var box = el('input', { type: 'checkbox', id: 'rx-c-' + ri + '-' + ci + '-' + k });
        if (k === 0 && boxes.filter(function (b) { return b.box.checked; }).length < 6) box.checked = true;
        var lab = el('label', { style: 'display:block;color:' + r.colour });
        lab.appendChild(box);
        lab.appendChild(document.createTextNode(' ' + key));
        clist.appendChild(lab);
        boxes.push({ box: box, run: r, curve: c, row: k, key: key, dash: dashes[k % dashes.length] });
        box.addEventListener('change', drawCurves);
      });
    });
  });
  if (!boxes.length) {
    // Nothing to overlay: no empty plot, only the line that says why.
    [cControls, clist, ccanvas, creadout].forEach(function (e) { e.style.display = 'none'; });
    curveBox.appendChild(el('p', {}, 'No relative-weight curves: no run exports a function of the distance r.'));
  }
  cstepSel.addEventListener('change', drawCurves);

  var cview = null;  // {series: [{key, r, y, colour, dash}], x0, x1, y0, y1, px, py}

  // The values of a checked row at the chosen step: the run's last embedded snapshot at or
  // before it (its first when none is).
  function seriesOf(b) {
    var step = Number(cstepSel.value), snap = 0;
    b.run.steps.forEach(function (s, k) { if (s <= step) snap = k; });
    var all = f32(b.curve.data[snap]), R = b.curve.r.length;
    return { key: b.key, r: b.curve.r, y: Array.prototype.slice.call(all, b.row * R, (b.row + 1) * R),
             colour: b.run.colour, dash: b.dash, step: b.run.steps[snap], train: b.run.train_length, causal: b.run.causal };
  }

  function drawCurves() {
    var g = ccanvas.getContext('2d'), W = ccanvas.width, H = ccanvas.height, m = { l: 60, r: 10, t: 10, b: 30 };
    g.clearRect(0, 0, W, H);
    var series = boxes.filter(function (b) { return b.box.checked; }).map(seriesOf);
    if (!series.length) { cview = null; return; }
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    series.forEach(function (s) {
      s.r.forEach(function (r, k) { x0 = Math.min(x0, r); x1 = Math.max(x1, r); y0 = Math.min(y0, s.y[k]); y1 = Math.max(y1, s.y[k]); });
    });
    if (!(x1 > x0)) x1 = x0 + 1;
    if (!(y1 > y0)) { y0 -= 0.5; y1 += 0.5; }
    var pad = 0.05 * (y1 - y0); y0 -= pad; y1 += pad;
    var px = function (x) { return m.l + (x - x0) / (x1 - x0) * (W - m.l - m.r); };
    var py = function (y) { return H - m.b - (y - y0) / (y1 - y0) * (H - m.t - m.b); };
    // The distances training saw, |r| < T (T of the first checked run), shaded as in the figures.
    var T = series[0].train;
    if (T > 0) {
      var a = Math.max(x0, x0 >= 0 ? 0 : -(T - 1)), b = Math.min(x1, series[0].causal && x0 < 0 ? 0 : T - 1);
      if (b >= a) {
        g.fillStyle = '#e3ebf5';
        g.fillRect(px(a), m.t, Math.max(1, px(b) - px(a)), H - m.t - m.b);
        g.fillStyle = '#35608f';
        g.fillText('trained |r| < ' + T, px((a + b) / 2) - 30, m.t + 12);
      }
    }
    g.strokeStyle = '#999'; g.lineWidth = 1; g.setLineDash([]);
    g.strokeRect(m.l, m.t, W - m.l - m.r, H - m.t - m.b);
    if (y0 < 0 && y1 > 0) { g.beginPath(); g.moveTo(m.l, py(0)); g.lineTo(W - m.r, py(0)); g.stroke(); }
    g.fillStyle = '#333';
    g.fillText(fmtValue(y1), 4, m.t + 10); g.fillText(fmtValue(y0), 4, H - m.b);
    g.fillText('r = ' + x0, m.l, H - 10); g.fillText('r = ' + x1, W - m.r - 50, H - 10);
    series.forEach(function (s) {
      g.strokeStyle = s.colour; g.lineWidth = 2; g.setLineDash(s.dash);
      g.beginPath();
      s.r.forEach(function (r, k) { if (k) g.lineTo(px(r), py(s.y[k])); else g.moveTo(px(r), py(s.y[k])); });
      g.stroke();
    });
    g.setLineDash([]);
    cview = { series: series, x0: x0, x1: x1, px: px, left: m.l, right: W - m.r };
    creadout.textContent = '';
  }

  var lastCurveValues = [];
  function hoverCurves(e) {
    if (!cview) return;
    var rect = ccanvas.getBoundingClientRect(), x = e.clientX - rect.left;
    var r = Math.round(cview.x0 + (x - cview.left) / (cview.right - cview.left) * (cview.x1 - cview.x0));
    lastCurveValues = [];
    cview.series.forEach(function (s) {
      var k = s.r.indexOf(r);
      if (k >= 0) lastCurveValues.push({ key: s.key, r: r, step: s.step, value: s.y[k] });
    });
    creadout.textContent = 'r = ' + r + ': ' + lastCurveValues.map(function (v) {
      return v.key + ' (step ' + v.step + ') = ' + fmtValue(v.value);
    }).join('; ');
  }
  ccanvas.addEventListener('mousemove', hoverCurves);

  refreshMapOptions();
  drawMap();
  drawCurves();

  // ---- self-test: #selftest=<JSON list of probes> ----
  function setSelect(sel, value) {
    if (!Array.prototype.some.call(sel.options, function (o) { return o.value === String(value); }))
      throw new Error(sel.id + ' has no option ' + value);
    sel.value = String(value);
    sel.dispatchEvent(new Event('change'));
  }

  function probeMap(p) {
    var ri = data.runs.findIndex(function (r) { return r.name === p.run; });
    if (ri < 0) throw new Error('no run ' + p.run);
    setSelect(runSel, ri);
    var mi = data.runs[ri].maps.findIndex(function (m) { return m.label === p.map; });
    if (mi < 0) throw new Error('no map ' + p.map + ' in ' + p.run);
    setSelect(mapSel, mi);
    setSelect(stepSel, data.runs[ri].steps.indexOf(p.step));
    setSelect(layerSel, p.layer);
    setSelect(headSel, p.head);
    // The shown cell nearest to (i, j): the cursor at its centre.
    var near = function (x) { var b = 0; view.pos.forEach(function (q, k) { if (Math.abs(q - x) < Math.abs(view.pos[b] - x)) b = k; }); return b; };
    var rect = canvas.getBoundingClientRect(), c = view.cell;
    canvas.dispatchEvent(new MouseEvent('mousemove', {
      clientX: rect.left + near(p.j) * c + Math.floor(c / 2), clientY: rect.top + near(p.i) * c + Math.floor(c / 2) }));
    return { probe: p, i: Number(readout.dataset.i), j: Number(readout.dataset.j), value: Number(readout.dataset.value), readout: readout.textContent };
  }

  function probeCurve(p) {
    var b = boxes.find(function (x) { return x.run.name === p.run && x.curve.label === p.curve && x.curve.rows[x.row] === p.row; });
    if (!b) throw new Error('no curve ' + p.run + ' ' + p.curve + ' ' + p.row);
    b.box.checked = true;
    setSelect(cstepSel, p.step);
    var rect = ccanvas.getBoundingClientRect();
    ccanvas.dispatchEvent(new MouseEvent('mousemove', { clientX: Math.round(rect.left + cview.px(p.r)), clientY: rect.top + 20 }));
    var got = lastCurveValues.find(function (v) { return v.key === b.key; });
    return { probe: p, r: got ? got.r : null, step: got ? got.step : null, value: got ? got.value : null, readout: creadout.textContent };
  }

  var hash = location.hash;
  if (hash.indexOf('#selftest=') === 0) {
    var out = el('pre', { id: 'rx-selftest' });
    var results = [];
    try {
      JSON.parse(decodeURIComponent(hash.substr('#selftest='.length))).forEach(function (p) {
        results.push(p.curve ? probeCurve(p) : probeMap(p));
      });
    } catch (err) {
      results.push({ error: String(err && err.message || err) });
    }
    out.textContent = JSON.stringify({ results: results, runs: data.runs.length });
    document.body.appendChild(out);
  }
})();
