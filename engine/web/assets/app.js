// The dashboard's one script. Every text from the server goes into the page as a text node (el() below):
// nothing is ever parsed as HTML, so a check keyed <img src=x onerror=alert(1)> shows as those characters.
'use strict';

const csrfToken = document.querySelector('meta[name="csrf-token"]').content;
let config = { read_only: true, user: '' };

// el('td', {class: 'num'}, 'text', child, [children]): strings become text nodes, null is skipped.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}
function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
function svg(tag, attrs) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

async function api(path) {
  const response = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await response.json();
  if (!response.ok) throw Object.assign(new Error(body.error || response.statusText), { status: response.status });
  return body;
}
async function act(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrfToken },
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}
// A button's click handler: asks `confirmText` first when given, keeps the button disabled while `work`
// runs, and shows a failure as a toast with the button usable again.
const onClick = (confirmText, work) => async (event) => {
  if (confirmText && !confirm(confirmText)) return;
  const button = event.target;
  button.disabled = true;
  try { await work(button); } catch (e) { toast(e.message, true); button.disabled = false; }
};
function toast(text, isError) {
  const box = document.getElementById('toast');
  box.textContent = text;
  box.className = 'show' + (isError ? ' error' : '');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.className = ''; }, 6000);
}
const number = (n) => Number(n).toLocaleString('en-US');
const shortTime = (iso) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');
const orDash = (v) => (v === null || v === undefined || v === '' ? '—' : v);
function page(title, ...children) {
  const main = document.getElementById('main');
  main.replaceChildren(el('h1', {}, title));
  return append(main, children);
}
function params() { return new URLSearchParams(location.search); }

// Ten colours, each class or outcome keeping its own.
const palette = ['#2457c5', '#e8833a', '#3a9d5d', '#b42318', '#7a4fc4', '#0e8c9a', '#c4499b', '#8a6d1c', '#5b6b7f', '#1d2430'];
// An outcome's colour: its own where one is given here, else a guard's (a name starting guard_) or the muted
// one, so that an outcome added to prescient.outcomes() is drawn without a change here.
const outcomeColours = { done: '#3a9d5d', failed: '#b42318', cancelled: '#8a94a6', deadline_missed: '#e8833a', overlap_skipped: '#c9a227',
  guard_max_checks: '#7a4fc4', guard_past: '#c4499b', guard_horizon: '#0e8c9a' };
const outcomeColour = (outcome) => outcomeColours[outcome] || (outcome.startsWith('guard_') ? '#8a6d1c' : '#5b6b7f');

// A legend of coloured swatches: spans [[name, colour, class]]. Colours come from a fixed palette; a style
// attribute would need 'unsafe-inline' in the CSP, so a swatch takes its colour through a CSS variable set
// from script (allowed: CSSOM, not markup).
function legendOf(spans) {
  const legend = el('div', { class: 'legend' }, spans.map(([name, colour, kind]) => el('span', { class: kind, 'data-colour': colour }, name)));
  legend.querySelectorAll('span').forEach((span) => span.style.setProperty('--c', span.dataset.colour));
  return legend;
}

// Times on the charts are the browser's, in its zone, which each chart names; the tables keep UTC, as the
// API gives them.
const localZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
const hourMinute = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
const dayMonth = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short' });
const monthOnly = new Intl.DateTimeFormat('en-GB', { month: 'short' });
const fullLocal = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric',
  hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'short' });
const isoOf = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');  // as the API writes times

// The steps ticks may take, finest first; `ms` is a step's length at most (a month's 31 days), to count
// how many ticks a span would get. Minutes divide a day, so ticks fall on the same round times every day.
const tickSteps = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720].map((minutes) => ({ minutes, ms: minutes * 60e3 }))
  .concat([{ days: 1, ms: 864e5 }, { days: 7, ms: 7 * 864e5 }, { months: 1, ms: 31 * 864e5 }, { months: 3, ms: 92 * 864e5 }]);

// Ticks at round local times in [from, to): every few minutes or hours of the local day, local midnights
// (weeks from Mondays), or the 1st of months. Date's local methods follow the zone's offsets, daylight
// saving's changes included; a wall time a change skips moves on, and ticks only ever go forward.
function ticksOf(from, to, most) {
  const step = tickSteps.find((s) => (to - from) / s.ms <= most) || tickSteps[tickSteps.length - 1];
  const t = new Date(from);
  t.setSeconds(0, 0);
  const advance = () => {
    if (step.minutes) t.setHours(0, Math.floor((t.getHours() * 60 + t.getMinutes()) / step.minutes + 1) * step.minutes, 0, 0);
    else if (step.days) t.setDate(t.getDate() + step.days);
    else t.setMonth(t.getMonth() + step.months);
  };
  if (step.minutes) {
    const minute = t.getHours() * 60 + t.getMinutes();
    if (minute % step.minutes !== 0) advance();
  } else {
    t.setHours(0, 0, 0, 0);
    if (step.months) t.setDate(1);
    while (t < from || (step.days === 7 && t.getDay() !== 1) || (step.months && t.getMonth() % step.months !== 0)) {
      if (step.months) t.setMonth(t.getMonth() + 1); else t.setDate(t.getDate() + 1);
    }
  }
  const ticks = [];
  for (let last = -Infinity; t.getTime() < to && t.getTime() > last; advance()) {
    last = t.getTime();
    if (last < from) continue;
    const midnight = t.getHours() === 0 && t.getMinutes() === 0;
    const label = step.months ? monthOnly.format(t) + (t.getMonth() === 0 ? ` ${t.getFullYear()}` : '')
      : step.days || midnight ? dayMonth.format(t) : hourMinute.format(t);
    ticks.push({ at: last, label });
  }
  return ticks;
}

// A stacked bar chart on a time axis. span: {from, to, bucket_seconds} as the API gives it; points:
// [{at, series, value}] (at: a bucket's start). One column per bucket of the span, empty ones too, placed
// by its time: a quiet hour shows as a gap. Each column carries its start and total (data-starts-at,
// data-total) and each bar its series and value, for the browser tests to compare with SQL.
function timeChart(id, span, points, colours, what) {
  const from = Date.parse(span.from), to = Date.parse(span.to), width = span.bucket_seconds * 1000;
  const count = Math.max(0, Math.round((to - from) / width));
  const columns = Array.from({ length: count }, () => ({}));
  for (const p of points) {
    const i = Math.round((Date.parse(p.at) - from) / width);
    if (i >= 0 && i < count) columns[i][p.series] = (columns[i][p.series] || 0) + p.value;
  }
  const totals = columns.map((parts) => Object.values(parts).reduce((a, b) => a + b, 0));
  const most = Math.max(1, ...totals);
  const w = 1000, left = 44, right = 8, top = 12, plot = 180, h = top + plot + 22;
  const x = (ms) => left + ((w - left - right) * (ms - from)) / (to - from);
  const chart = svg('svg', { viewBox: `0 0 ${w} ${h}`, role: 'img', 'data-chart': id });
  const text = (attrs, content) => { const node = svg('text', { 'font-size': 11, fill: '#687385', ...attrs }); node.textContent = content; return node; };
  chart.append(svg('line', { x1: left, x2: w - right, y1: top, y2: top, stroke: '#eef1f5' }),
    text({ x: left - 6, y: top + 4, 'text-anchor': 'end' }, number(most)),
    text({ x: left - 6, y: top + plot, 'text-anchor': 'end' }, '0'));
  for (const tick of ticksOf(from, to, 12)) {
    const g = svg('g', { 'data-tick': isoOf(tick.at) });
    g.append(svg('line', { x1: x(tick.at), x2: x(tick.at), y1: top, y2: top + plot + 4, stroke: '#eef1f5' }),
      text({ x: x(tick.at), y: top + plot + 16, 'text-anchor': 'middle' }, tick.label));
    chart.append(g);
  }
  const step = (w - left - right) / Math.max(count, 1);
  columns.forEach((parts, i) => {
    const starts = from + i * width;
    const column = svg('g', { 'data-starts-at': isoOf(starts), 'data-total': totals[i] });
    // The whole column answers a hover, an empty one too (its title says so).
    column.append(svg('title'), svg('rect', { x: x(starts), y: top, width: step, height: plot, fill: 'transparent' }));
    const said = Object.entries(parts).map(([series, value]) => `${series} ${number(value)}`).join(', ');
    column.firstChild.textContent = `${fullLocal.format(starts)}: ${said || 'none'}`;
    let y = top + plot;
    for (const [series, value] of Object.entries(parts)) {
      const height = (plot * value) / most;
      y -= height;
      column.append(svg('rect', { x: x(starts) + Math.min(1, step / 4), y, width: Math.max(step - Math.min(2, step / 2), 0.5), height,
        fill: colours[series] || '#5b6b7f', 'data-series': series, 'data-value': value }));
    }
    chart.append(column);
  });
  chart.append(svg('line', { x1: left, x2: w - right, y1: top + plot, y2: top + plot, stroke: '#dde3ea' }));
  return el('div', { class: 'chart' }, chart,
    el('div', { class: 'axis muted', 'data-zone': localZone }, `${what}; times in your zone, ${localZone}`),
    legendOf(Object.entries(colours)));
}

// What a column of a span is, for the chart's caption.
function columnOf(span) {
  const s = span.bucket_seconds;
  return s === 86400 ? 'one column per day (UTC)' : s === 3600 ? 'one column per hour'
    : `one column per slot (${s % 60 === 0 ? `${s / 60} min` : `${s} s`})`;
}

async function overview() {
  const zoom = ['slot', 'hour', 'day'].includes(params().get('zoom')) ? params().get('zoom') : 'slot';
  const only = params().get('job') || '';
  const [stats, future, past, runners] = await Promise.all([api('/api/stats'), api(`/api/future?zoom=${zoom}`),
    api('/api/past'), api('/api/runners')]);
  // Firing: completed one of the last three slots (a runner completes the previous slot as the next begins).
  const firing = runners.filter((r) => r.slots_behind <= 3);
  const age = Math.round((Date.parse(stats.now) - Date.parse(stats.counted_at)) / 1000);
  const tile = (label, key, value, bad) => el('div', { class: 'tile' + (bad ? ' bad' : '') },
    el('div', { class: 'label' }, label), el('div', { class: 'value', 'data-figure': key }, number(value)));
  const tiles = el('div', { class: 'tiles' },
    tile('pending', 'pending', stats.pending),
    tile('due now', 'due_now', stats.due_now),
    tile('overdue', 'overdue', stats.overdue, stats.overdue > 0),
    tile('paused classes', 'paused', stats.paused_classes.length, stats.paused_classes.length > 0),
    tile('dead letters (30 days)', 'dead_letters', stats.dead_letters, stats.dead_letters > 0),
    tile('settled last hour', 'finished_last_hour', Object.values(stats.finished_last_hour).reduce((a, b) => a + b, 0)),
    tile('runners (last 3 slots)', 'runners', firing.length, firing.length === 0));
  const counted = el('p', { class: 'muted', 'data-counted-at': stats.counted_at },
    `Counted ${shortTime(stats.counted_at)} (${age} s ago, in ${stats.count_millis} ms); the daemons count again every minute.`);
  const paused = stats.paused_classes.length === 0 ? null : el('p', {},
    'Paused: ', stats.paused_classes.map((p) => `${p.job} (${number(p.pending)} pending, by ${p.paused_by})`).join(', '));

  // The future: pending checks per slot, hour or day ahead, stacked by job class.
  const jobs = [...new Set(future.buckets.map((b) => b.job))].sort();
  const colours = Object.fromEntries(jobs.map((job, i) => [job, palette[i % palette.length]]));
  const ahead = future.buckets.filter((b) => !only || b.job === only)
    .map((b) => ({ at: b.starts_at, series: b.job, value: b.checks }));
  const link = (z, label) => el('a', { href: `/?zoom=${z}${only ? '&job=' + encodeURIComponent(only) : ''}` },
    el('button', { class: z === zoom ? 'active' : null, type: 'button' }, label));
  const classFilter = el('select', { 'aria-label': 'job class', onchange: (e) => {
    const next = params(); if (e.target.value) next.set('job', e.target.value); else next.delete('job');
    location.search = next.toString(); } },
  el('option', { value: '' }, 'every class'), jobs.map((job) => el('option', { value: job, selected: job === only }, job)));
  const futureTotal = ahead.reduce((sum, b) => sum + b.value, 0);
  const futurePanel = el('div', { class: 'panel' },
    el('div', { class: 'actions zoom' }, link('slot', 'next hour, by slot'), link('hour', 'next day, by hour'),
      link('day', 'next year, by day'), classFilter,
      el('span', { class: 'muted', 'data-figure': 'future_total' }, `${number(futureTotal)} checks`)),
    ahead.length ? timeChart('future', future, ahead, only ? { [only]: colours[only] } : colours,
      `Pending checks, ${columnOf(future)}`)
      : el('p', { class: 'muted' }, 'Nothing pending in this span.'));

  // The past day: settlements per hour by outcome, and lateness (settled time minus slot).
  const hours = new Map();
  for (const h of past.hours) {
    if (!hours.has(h.hour)) hours.set(h.hour, { parts: {}, late: null });
    hours.get(h.hour).parts[h.outcome] = h.checks;
    if (h.outcome === 'done') hours.get(h.hour).late = h;
  }
  const seen = [...new Set(past.hours.map((h) => h.outcome))];
  const seconds = (s) => (s === null || s === undefined ? '—' : `${s.toFixed(s < 10 ? 2 : 0)} s`);
  const lateness = el('table', { 'data-table': 'lateness' },
    el('thead', {}, el('tr', {}, el('th', {}, 'hour (UTC)'), el('th', {}, 'settled'), el('th', {}, 'done'),
      el('th', {}, 'lateness p50'), el('th', {}, 'lateness p99'))),
    el('tbody', {}, [...hours.entries()].reverse().map(([at, v]) => el('tr', {},
      el('td', {}, shortTime(at)), el('td', { class: 'num' }, number(Object.values(v.parts).reduce((a, b) => a + b, 0))),
      el('td', { class: 'num' }, number(v.parts.done || 0)),
      el('td', { class: 'num' }, seconds(v.late && v.late.lateness_p50_seconds)),
      el('td', { class: 'num' }, seconds(v.late && v.late.lateness_p99_seconds))))));
  const pastPanel = el('div', { class: 'panel' },
    past.hours.length ? timeChart('past', past, past.hours.map((h) => ({ at: h.hour, series: h.outcome, value: h.checks })),
      Object.fromEntries(seen.map((o) => [o, outcomeColour(o)])), `Settlements by outcome, ${columnOf(past)}`)
      : el('p', { class: 'muted' }, 'Nothing settled in the last day.'),
    lateness);

  const runnersPanel = runners.length === 0 ? el('p', { class: 'muted' }, 'No daemon has completed a slot in the last week.')
    : el('table', { 'data-table': 'runners' },
      el('thead', {}, el('tr', {}, ['runner', 'shard', 'last slot', 'slots behind', 'claimed in it', 'seen since']
        .map((h) => el('th', {}, h)))),
      el('tbody', {}, runners.map((r) => el('tr', { class: r.slots_behind > 3 ? 'stale' : null },
        el('td', { class: 'mono' }, r.runner_id), el('td', {}, r.shard), el('td', {}, shortTime(r.last_slot)),
        el('td', { class: 'num' }, r.slots_behind), el('td', { class: 'num' }, number(r.claimed)),
        el('td', {}, shortTime(r.first_seen_at))))));

  page('Overview', tiles, counted, paused, el('h2', {}, 'The future: pending checks ahead'), futurePanel,
    el('h2', {}, 'The past day: settlements per hour'), pastPanel, el('h2', {}, 'Runners'), runnersPanel);
}

const checkFields = ['job_key', 'entity_name', 'entity_key', 'job', 'group_key'];

async function checks() {
  const query = params();
  const form = el('form', { class: 'search', method: 'get', action: '/checks' },
    checkFields.map((name) => el('label', {}, name.replace('_', ' '),
      el('input', { name, value: query.get(name) || '', size: 16 }))),
    el('button', { class: 'primary', type: 'submit' }, 'Search'));
  const search = new URLSearchParams();
  for (const name of [...checkFields, 'after']) if (query.get(name)) search.set(name, query.get(name));
  const rows = await api('/api/checks?' + search.toString());
  const table = el('table', { 'data-table': 'checks' },
    el('thead', {}, el('tr', {}, ['id', 'job', 'entity', 'job key', 'group', 'next check', 'priority', 'checks', 'attempts']
      .map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((c) => el('tr', { 'data-id': c.id },
      el('td', {}, el('a', { href: `/checks/${c.id}` }, c.id)), el('td', {}, c.job),
      el('td', { class: 'mono' }, `${c.entity_name}/${c.entity_key}`), el('td', { class: 'mono' }, orDash(c.job_key)),
      el('td', { class: 'mono' }, orDash(c.group_key)), el('td', {}, shortTime(c.next_check_at)),
      el('td', { class: 'num' }, c.priority), el('td', { class: 'num' }, c.check_count), el('td', { class: 'num' }, c.attempts)))));
  let next = null;
  if (rows.length === 50) {
    const after = new URLSearchParams(search);
    after.set('after', `${rows[rows.length - 1].next_check_at},${rows[rows.length - 1].id}`);
    next = el('p', {}, el('a', { href: '/checks?' + after.toString(), rel: 'next' }, 'Next page →'));
  }
  page('Checks', form, rows.length ? table : el('p', { class: 'muted' }, 'No pending check matches.'), next);
}

// A time as microseconds since the epoch, for ordering: the server's times carry up to six decimals.
function microsOf(iso) {
  const fraction = iso.match(/\.(\d+)Z$/);
  return Date.parse(iso.replace(/\.\d+Z$/, 'Z')) * 1000 + (fraction ? Number(fraction[1].padEnd(6, '0')) : 0);
}
const took = (us) => (us === null || us === undefined ? '—' : us < 1000 ? `${us} µs`
  : us < 1e6 ? `${(us / 1000).toFixed(1)} ms` : `${(us / 1e6).toFixed(2)} s`);
const runColour = { rescheduled: '#2457c5', retried: '#e8833a', deferred: '#8a94a6' };

// What a run returned besides its answer (docs/design.md, "Results"), as a timeline entry shows it.
const resultText = (result) => (result === null || result === undefined ? '' : `, result ${JSON.stringify(result)}`);

// A check's life, oldest first, as `prescient show` prints it: each run that left it pending (check_run), each
// deferral by a flow limit, and how it ended (its history rows); entries of the same time in that order.
function timelineOf(t) {
  const entries = [];
  for (const r of t.runs) {
    entries.push({ at: r.finished_at, kind: 'run', tag: r.result, due: r.due_at, runner: r.runner, micros: r.run_micros,
      checks: r.check_count, attempts: r.attempts,
      what: `${r.result} to ${shortTime(r.next_check_at)}` + (r.answered_at ? ` (answered ${shortTime(r.answered_at)})` : '')
        + (r.error ? `: ${r.error}` : '') + resultText(r.run_result) });
  }
  for (const d of t.deferrals) {
    entries.push({ at: d.deferred_at, kind: 'deferral', tag: 'deferred', limit: d.limit, due: null, runner: null, micros: null,
      checks: null, attempts: null, what: `deferred by limit ${d.limit} (${d.key_value}) until ${shortTime(d.until)}` });
  }
  for (const h of t.history) {
    entries.push({ at: h.finished_at, kind: 'end', tag: h.outcome, due: h.last_check_at, runner: h.finished_by,
      micros: h.run_micros, checks: h.check_count, attempts: h.attempts,
      what: `ended ${h.outcome}` + (h.last_error ? `: ${h.last_error}` : '') + resultText(h.result) });
  }
  return entries.sort((a, b) => microsOf(a.at) - microsOf(b.at));  // stable: ties keep the order above
}

// The timeline at a glance: one marker per entry along a line, placed by its time (the pending check's next
// time as a hollow one); each marker's title says what happened. Nothing before its first run.
function timelineStrip(entries, next) {
  if (entries.length === 0) return null;
  const colourOf = (e) => (e.kind === 'end' ? outcomeColour(e.tag) : runColour[e.tag]);
  const points = entries.map((e) => ({ at: microsOf(e.at), iso: e.at, colour: colourOf(e), kind: e.kind,
    r: e.kind === 'end' ? 8 : 6, label: `${shortTime(e.at)}: ${e.what}` }));
  if (next) points.push({ at: microsOf(next), iso: next, colour: null, kind: 'next', r: 6, label: `next check ${shortTime(next)}` });
  const width = 1000, height = 46, pad = 14, y = 16;
  const first = Math.min(...points.map((p) => p.at)), last = Math.max(...points.map((p) => p.at));
  const x = (at) => (last === first ? width / 2 : pad + ((width - 2 * pad) * (at - first)) / (last - first));
  const strip = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'data-chart': 'timeline' });
  strip.append(svg('line', { x1: pad, x2: width - pad, y1: y, y2: y, stroke: '#dde3ea', 'stroke-width': 2 }));
  for (const p of points) {
    const mark = svg('circle', { cx: x(p.at), cy: y, r: p.r, fill: p.colour || '#fff', stroke: p.colour || '#2457c5',
      'stroke-width': 2, 'data-kind': p.kind });
    mark.append(svg('title'));
    mark.firstChild.textContent = p.label;
    strip.append(mark);
  }
  // The first and the last time under the line's ends.
  const label = (at, anchor, tx) => {
    const text = svg('text', { x: tx, y: height - 4, 'font-size': 11, 'text-anchor': anchor, fill: '#687385' });
    text.textContent = shortTime(points.find((p) => p.at === at).iso);
    return text;
  };
  strip.append(label(first, last === first ? 'middle' : 'start', last === first ? width / 2 : 0));
  if (last !== first) strip.append(label(last, 'end', width));
  const colours = {};
  for (const e of entries) colours[e.tag] = colourOf(e);
  return el('div', { class: 'strip' }, strip,
    legendOf([...Object.entries(colours), ...(next ? [['next check', '#fff', 'hollow']] : [])]));
}

// The class's row of the registry (prescient.job_class): what is set there; null is not set here.
function policyPanel(job, policy) {
  if (!policy) {
    return el('p', { class: 'muted', 'data-policy': 'none' }, `The class registry has no row for ${job}: its coded policy, `
      + "the config file's defaults and the database's settings decide.");
  }
  const notSet = "not set here: the class's coded policy or the settings";
  const row = (key, value) => el('tr', { 'data-field': key }, el('th', {}, key),
    value === null ? el('td', { class: 'muted' }, notSet) : el('td', {}, value));
  return el('div', { class: 'panel', 'data-policy': policy.name },
    el('table', { 'data-table': 'class-policy' }, el('tbody', {},
      row('max_checks', policy.max_checks === null ? null : policy.max_checks === 0 ? '0 (no limit)' : number(policy.max_checks)),
      row('max_attempts', policy.max_attempts === null ? null : number(policy.max_attempts)),
      row('backoff', policy.backoff),
      row('backoff_max', policy.backoff_max),
      row('timeout', policy.timeout),
      el('tr', { 'data-field': 'policy_updated' }, el('th', {}, 'policy set'),
        el('td', {}, policy.policy_updated_at ? `${shortTime(policy.policy_updated_at)} by ${policy.policy_updated_by}` : '—')),
      el('tr', { 'data-field': 'registered' }, el('th', {}, 'registered'),
        el('td', {}, `${policy.origin}, runs in the ${policy.runs_in}`)))));
}

// A check's page: its fields (from its pending row, or its last history row once it ended), its timeline
// oldest first, and its class's policy. Every text goes in as text (el()).
async function trace(id) {
  const t = await api(`/api/checks/${id}`);
  const p = t.pending;
  const last = t.history.length ? t.history[t.history.length - 1] : null;
  const c = p || last;
  const actions = [];
  if (p && !config.read_only) {
    const run = (label, path, body, confirmText) => onClick(confirmText, async () => {
      await act(path, body()); toast(`${label}: done`); await trace(id);
    });
    const when = el('input', { type: 'datetime-local', step: 1, 'aria-label': 'new time (UTC)' });
    actions.push(el('div', { class: 'actions' },
      el('button', { class: 'danger', 'data-action': 'cancel', onclick: run('Cancel', `/api/checks/${id}/cancel`, () => ({}), `Cancel check ${id}?`) }, 'Cancel'),
      el('button', { 'data-action': 'fire', onclick: run('Fire at the next slot', `/api/checks/${id}/fire`, () => ({})) }, 'Fire at the next slot'),
      when, el('span', { class: 'muted' }, 'UTC'),
      el('button', { 'data-action': 'reschedule', onclick: run('Reschedule', `/api/checks/${id}/reschedule`, () => ({ at: when.value + 'Z' })) }, 'Reschedule')));
  }
  const field = (key, name, value) => el('tr', { 'data-field': key }, el('th', {}, name), el('td', { class: 'mono' }, orDash(value)));
  const fields = el('div', { class: 'panel', 'data-check': c.id, 'data-pending': p ? p.id : 'none' },
    el('table', {}, el('tbody', {}, field('id', 'id', c.id), field('job', 'job (class)', c.job),
      field('job_key', 'job key', c.job_key), field('entity', 'entity', `${c.entity_name}/${c.entity_key}`),
      field('group_key', 'group', c.group_key),
      field('state', 'state', p ? 'pending' : `ended ${last.outcome} at ${shortTime(last.finished_at)} by ${last.finished_by}`),
      p ? field('next_check_at', 'next check', shortTime(p.next_check_at)) : null,
      field('first_check_at', 'first check', shortTime(c.first_check_at)),
      field('priority', 'priority', `${c.priority} (0 first, 9 last)`),
      field('counts', 'checks / attempts', `${c.check_count} / ${c.attempts}`),
      field('last_error', 'last error', c.last_error),
      field('enqueued', 'enqueued', `${shortTime(c.enqueued_on)} by ${c.enqueued_by}`),
      // The W3C trace it was created in (00-trace-parent-flags): each run is a span of that trace.
      field('trace_id', 'trace id', c.traceparent ? c.traceparent.slice(3, 35) : null),
      field('traceparent', 'created in (traceparent)', c.traceparent),
      c.tracestate ? field('tracestate', 'tracestate', c.tracestate) : null,
      el('tr', { 'data-field': 'payload' }, el('th', {}, 'payload'),
        el('td', {}, el('pre', { class: 'mono payload' }, JSON.stringify(c.payload, null, 2)))))), actions);
  const entries = timelineOf(t);
  const timeline = el('table', { 'data-table': 'timeline' },
    el('thead', {}, el('tr', {}, ['at (UTC)', 'ran for', 'what happened', 'runner', 'took', 'checks', 'attempts']
      .map((h) => el('th', {}, h)))),
    el('tbody', {}, entries.map((e) => el('tr', { 'data-kind': e.kind, 'data-result': e.kind === 'run' ? e.tag : null,
      'data-outcome': e.kind === 'end' ? e.tag : null, 'data-limit': e.limit },
    el('td', {}, shortTime(e.at)), el('td', {}, e.due ? shortTime(e.due) : '—'), el('td', {}, e.what),
    el('td', { class: 'mono' }, orDash(e.runner)), el('td', { class: 'num' }, took(e.micros)),
    el('td', { class: 'num' }, orDash(e.checks)), el('td', { class: 'num' }, orDash(e.attempts))))));
  page(`Check ${id}`, fields,
    el('h2', {}, `Timeline (${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}, oldest first)`),
    timelineStrip(entries, p ? p.next_check_at : null),
    entries.length ? timeline : el('p', { class: 'muted', 'data-timeline': 'empty' }, 'Nothing yet: it has not run.'),
    el('h2', {}, `Class policy: ${c.job}`), policyPanel(c.job, t.class_policy));
}

// "gold=3, silver=2" as the weights object {"gold": 3, "silver": 2}; the server judges the numbers.
function weightsOf(text) {
  const weights = {};
  for (const part of text.split(',').map((p) => p.trim()).filter((p) => p)) {
    const at = part.lastIndexOf('=');
    if (at < 1) throw new Error(`invalid weight '${part}': write VALUE=N`);
    weights[part.slice(0, at).trim()] = Number(part.slice(at + 1));
  }
  return Object.keys(weights).length ? weights : null;
}

// Flow limits (docs/flow-control.md) and the deferrals each made per key value: set and removed here,
// with `prescient limits` or in SQL.
async function limits() {
  // The chart's count may be stopped (a day of many deferrals): the page is drawn without it then.
  const [r, perHour] = await Promise.all([api('/api/limits'), api('/api/limits/deferrals').catch((e) => e)]);
  const remove = (name) => onClick(`Remove limit ${name}? Checks it deferred keep their times.`, async () => {
    await act(`/api/limits/${encodeURIComponent(name)}/remove`); toast(`Limit ${name} removed`); await limits();
  });
  const table = el('table', { 'data-table': 'limits' },
    el('thead', {}, el('tr', {}, ['name', 'key', 'job', 'value', 'rate', 'burst', 'concurrency', 'fair share', 'updated', '']
      .map((h) => el('th', {}, h)))),
    el('tbody', {}, r.limits.map((l) => el('tr', { 'data-name': l.name },
      el('td', {}, l.name), el('td', { class: 'mono' }, l.key), el('td', {}, orDash(l.job)),
      el('td', { class: 'mono' }, orDash(l.key_value)), el('td', {}, orDash(l.rate)), el('td', {}, number(l.burst)),
      el('td', {}, orDash(l.concurrency)),
      el('td', { 'data-field': 'fair_share' }, !l.fair_share ? 'no'
        : ['yes', ...Object.entries(l.weights || {}).map(([value, weight]) => `${value}×${weight}`)].join(' ')),
      el('td', { class: 'muted' }, `${shortTime(l.updated_at)} by ${l.updated_by}`),
      el('td', {}, config.read_only ? null
        : el('button', { class: 'danger', 'data-action': 'remove-limit', onclick: remove(l.name) }, 'Remove'))))));
  const input = (name, label, attributes) => el('label', {}, label, el('input', { name, ...attributes }));
  const form = config.read_only ? null : el('form', { class: 'search', 'data-form': 'limit' },
    input('name', 'name', { required: true }), input('key', 'key', { placeholder: 'payload.tenant', required: true }),
    input('rate', 'rate', { placeholder: '200/s' }), input('burst', 'burst', { type: 'number', min: 1 }),
    input('concurrency', 'concurrency', { type: 'number', min: 1 }),
    el('label', {}, el('input', { name: 'fair_share', type: 'checkbox' }), 'fair share'),
    input('weights', 'weights', { placeholder: 'gold=3, silver=2' }), input('job', 'job'),
    input('key_value', 'value'),
    el('button', { class: 'primary', type: 'submit', 'data-action': 'set-limit' }, 'Set'));
  if (form) {
    form.onsubmit = async (event) => {
      event.preventDefault();
      const value = (name) => form.elements[name].value.trim() || null;
      const whole = (name) => (value(name) === null ? null : Number(value(name)));
      try {
        const body = { name: value('name'), key: value('key'), rate: value('rate'), burst: whole('burst'),
          concurrency: whole('concurrency'), fair_share: form.elements.fair_share.checked,
          weights: weightsOf(form.elements.weights.value), job: value('job'), key_value: value('key_value') };
        const answer = await act('/api/limits', body);
        toast(`Limit ${answer.name}: ${answer.status}`);
        await limits();
      } catch (e) { toast(e.message, true); }
    };
  }
  const deferred = el('table', { 'data-table': 'deferrals' },
    el('thead', {}, el('tr', {}, ['limit', 'key value', 'checks deferred', 'last'].map((h) => el('th', {}, h)))),
    el('tbody', {}, r.deferrals.map((d) => el('tr', { 'data-limit': d.limit, 'data-key': d.key_value },
      el('td', {}, d.limit), el('td', { class: 'mono' }, d.key_value), el('td', {}, number(d.deferred)),
      el('td', {}, shortTime(d.last_deferred_at))))));
  let chart = el('p', { class: 'muted' }, 'No check deferred in the past day.');
  if (perHour instanceof Error) chart = el('p', { class: 'muted', 'data-chart-error': 'deferrals' }, perHour.message);
  else if (perHour.hours.length) {
    const names = [...new Set(perHour.hours.map((h) => h.limit))].sort();
    chart = timeChart('deferrals', perHour, perHour.hours.map((h) => ({ at: h.hour, series: h.limit, value: h.deferred })),
      Object.fromEntries(names.map((name, i) => [name, palette[i % palette.length]])), `Checks deferred by limit, ${columnOf(perHour)}`);
  }
  page('Limits',
    el('p', { class: 'muted' }, 'A check over its budget moves to when its budget allows. Setting a limit of an existing name replaces it whole.'),
    r.limits.length ? table : el('p', { class: 'muted', 'data-limits': 'none' }, 'No limits.'),
    ...(form ? [el('h2', {}, 'Set a limit'), form] : []),
    el('h2', {}, 'Deferrals in the past day, per hour'), el('div', { class: 'panel' }, chart),
    el('h2', {}, 'Deferrals per key value, in all'),
    r.deferrals.length ? deferred : el('p', { class: 'muted' }, 'No check deferred yet.'));
}

// The class registry (prescient.job_class): each class, where it runs, whether it is paused, its pending
// checks (as last counted) and the policy set for it here; a form per class sets or clears that policy
// (prescient.set_job_policy's rules: a refusal is its one line, shown as it comes).
const policyFields = ['max_checks', 'max_attempts', 'backoff', 'backoff_max', 'timeout'];

async function jobs() {
  const rows = await api('/api/jobs');
  const notSet = "not set here: the class's coded policy or the settings";
  const shown = (j, key) => (j[key] === null ? null
    : key === 'max_checks' && j[key] === 0 ? '0 (no limit)'
      : key === 'max_checks' || key === 'max_attempts' ? number(j[key]) : j[key]);
  const policyCell = (j, key) => (shown(j, key) === null ? el('td', { class: 'muted', 'data-field': key }, notSet)
    : el('td', { 'data-field': key }, shown(j, key)));
  const formOf = (j) => {
    const form = el('form', { class: 'search', 'data-form': 'policy' },
      policyFields.map((key) => el('label', {}, key,
        el('input', { name: key, size: 8, placeholder: key === 'max_checks' ? 'N or unlimited'
          : key === 'max_attempts' ? 'N' : '30s' }),
        el('span', { class: 'muted' }, el('input', { name: `clear_${key}`, type: 'checkbox', 'aria-label': `clear ${key}` }), 'clear'))),
      el('button', { class: 'primary', type: 'submit', 'data-action': 'set-policy' }, 'Set'));
    form.onsubmit = async (event) => {
      event.preventDefault();
      const body = { clear: [] };
      for (const key of policyFields) {
        const value = form.elements[key].value.trim();
        if (form.elements[`clear_${key}`].checked) body.clear.push(key);
        else if (value !== '') body[key] = value;  // as typed: the server judges it and names it if bad
      }
      try {
        await act(`/api/jobs/${encodeURIComponent(j.name)}/policy`, body);
        toast(`Job class ${j.name}: policy set`);
        await jobs();
      } catch (e) { toast(e.message, true); }
    };
    return el('details', {}, el('summary', {}, 'Set policy'), form);
  };
  const table = el('table', { 'data-table': 'jobs' },
    el('thead', {}, el('tr', {}, ['class', 'runs in', 'origin', 'declared', 'seen', 'state', 'pending',
      ...policyFields, 'policy set', ''].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((j) => el('tr', { 'data-name': j.name, 'data-paused': j.paused ? 'yes' : 'no' },
      el('td', { class: 'mono', 'data-field': 'name' }, j.name), el('td', { 'data-field': 'runs_in' }, j.runs_in),
      el('td', { 'data-field': 'origin' }, j.origin),
      el('td', { 'data-field': 'declared' }, `${shortTime(j.declared_at)} by ${j.declared_by}`),
      el('td', { 'data-field': 'seen_at' }, shortTime(j.seen_at)),
      el('td', { 'data-field': 'state', class: j.paused ? 'bad' : null },
        j.paused ? `paused ${shortTime(j.paused.paused_at)} by ${j.paused.paused_by}` : 'active'),
      el('td', { class: 'num', 'data-field': 'pending' }, j.pending === null ? '—' : number(j.pending)),
      policyFields.map((key) => policyCell(j, key)),
      el('td', { class: 'muted', 'data-field': 'policy_updated' },
        j.policy_updated_at ? `${shortTime(j.policy_updated_at)} by ${j.policy_updated_by}` : '—'),
      el('td', {}, config.read_only ? null : formOf(j))))));
  const declare = el('form', { class: 'search', 'data-form': 'declare' },
    el('label', {}, 'class', el('input', { name: 'name', size: 24, required: true })),
    el('label', {}, el('input', { name: 'worker', type: 'checkbox', checked: true }), 'run by workers (Python, Go, Java, Node)'),
    el('button', { class: 'primary', type: 'submit', 'data-action': 'declare' }, 'Declare'));
  declare.onsubmit = async (event) => {
    event.preventDefault();
    const name = declare.elements.name.value;
    try {
      const answer = await act('/api/jobs', { name, worker: declare.elements.worker.checked });
      toast(answer.status === 'added' ? `Job class ${name} declared` : `Job class ${name} was known already`);
      await jobs();
    } catch (e) { toast(e.message, true); }
  };
  page('Jobs',
    el('p', { class: 'muted' }, 'The class registry: the classes this database knows (enqueue refuses any other). '
      + 'A policy set here comes before the class\'s coded policy, the config file and the settings; '
      + 'max_checks 0 is no limit. Pending is as the figures were last counted.'),
    config.read_only ? null : el('details', {}, el('summary', {}, 'Declare a class'), declare),
    rows.length ? table : el('p', { class: 'muted' }, 'No job class is registered.'));
}

// Calendars for business time (docs/business-time.md), read only: the list, and a calendar's open time over
// four weeks drawn in its zone. The bars are the database's own spans (calendar_span: what business_add
// counts), cut at each local midnight and placed by the wall clock; a day's total is the instants they hold,
// so a day the clocks change shows its real hours.
async function calendars() {
  const rows = await api('/api/calendars');
  const table = el('table', { 'data-table': 'calendars' },
    el('thead', {}, el('tr', {}, ['calendar', 'time zone', 'version', 'set'].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((c) => el('tr', { 'data-name': c.name },
      el('td', { class: 'mono', 'data-field': 'name' }, el('a', { href: '/calendars/' + encodeURIComponent(c.name) }, c.name)),
      el('td', { 'data-field': 'time_zone' }, c.time_zone), el('td', { class: 'num', 'data-field': 'version' }, c.version),
      el('td', { 'data-field': 'changed' }, `${shortTime(c.changed_at)} by ${c.changed_by}`)))));
  page('Calendars',
    el('p', { class: 'muted' }, 'Calendars for business time, each in its time zone; setting one again makes its next version '
      + '(prescient calendar set, or the config file\'s [calendar NAME] sections and prescient calendar apply).'),
    rows.length ? table : el('p', { class: 'muted' }, 'No calendar is set.'));
}

const daySeconds = 86400;
const two = (n) => String(n).padStart(2, '0');
const wallOf = (second) => `${two(Math.floor(second / 3600))}:${two(Math.floor((second % 3600) / 60))}`;
const secondOfWall = (hhmm) => Number(hhmm.slice(0, 2)) * 3600 + Number(hhmm.slice(3, 5)) * 60;
const openTime = (ms) => {
  const minutes = Math.round(ms / 60e3);
  return minutes % 60 === 0 ? `${minutes / 60} h` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
};
const dateAfter = (date, days) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 864e5).toISOString().slice(0, 10);

// A day's row: the wall clock from 00:00 to 24:00, a bar per stretch of open time, the hour the clocks skip or
// repeat shaded, and now on today's.
function dayTrack(day, isToday, nowSecond) {
  const w = 960, h = 20, x = (second) => (w * second) / daySeconds;
  const track = svg('svg', { viewBox: `0 0 ${w} ${h}`, class: 'track', role: 'img' });
  const titled = (node, text) => { const title = svg('title'); title.textContent = text; node.append(title); return node; };
  track.append(svg('rect', { x: 0, y: 0, width: w, height: h, fill: day.open_day ? '#fff' : '#f0f2f5' }));
  for (let hour = 3; hour < 24; hour += 3) track.append(svg('line', { x1: x(hour * 3600), x2: x(hour * 3600), y1: 0, y2: h, stroke: '#eef1f5' }));
  const change = day.offset_change;
  if (change) {
    const [from, to] = [secondOfWall(change.wall_before), secondOfWall(change.wall_after)].sort((a, b) => a - b);
    track.append(titled(svg('rect', { x: x(from), y: 0, width: Math.max(x(to) - x(from), 1), height: h, fill: '#f5c451',
      'data-offset-change': change.at }), clockChange(change)));
  }
  for (const o of day.openings) {
    track.append(titled(svg('rect', { x: x(o.opens_second), y: 3, width: Math.max(x(o.closes_second) - x(o.opens_second), 1),
      height: h - 6, fill: '#2457c5', 'data-opens-at': o.opens_at, 'data-closes-at': o.closes_at }),
    `${wallOf(o.opens_second)}–${wallOf(o.closes_second)}, ${openTime(Date.parse(o.closes_at) - Date.parse(o.opens_at))} open`));
  }
  if (isToday) track.append(svg('line', { x1: x(nowSecond), x2: x(nowSecond), y1: 0, y2: h, stroke: '#b42318', 'stroke-width': 2, 'data-now': true }));
  return track;
}

function clockChange(change) {
  return secondOfWall(change.wall_after) > secondOfWall(change.wall_before)
    ? `clocks go forward from ${change.wall_before} to ${change.wall_after}: ${change.wall_before}–${change.wall_after} does not exist`
    : `clocks go back from ${change.wall_before} to ${change.wall_after}: ${change.wall_after}–${change.wall_before} happens twice, open the first time only`;
}

async function calendarDays(name) {
  const from = params().get('from');
  const path = '/api/calendars/' + encodeURIComponent(name);
  const answer = await api(path + (from ? '?from=' + encodeURIComponent(from) : ''));
  const c = answer.calendar, days = answer.days;
  const link = (date, text, rel) => el('a', { href: `/calendars/${encodeURIComponent(name)}?from=${date}`, rel }, text);
  const axis = svg('svg', { viewBox: '0 0 960 14', class: 'track', role: 'img' });
  for (let hour = 0; hour <= 24; hour += 3) {
    const label = svg('text', { x: Math.min(Math.max((960 * hour) / 24, 18), 942), y: 11, 'font-size': 12, fill: '#687385', 'text-anchor': 'middle' });
    label.textContent = `${two(hour)}:00`;
    axis.append(label);
  }
  const table = el('table', { 'data-table': 'calendar-days' },
    el('thead', {}, el('tr', {}, el('th', {}, 'day'), el('th', { class: 'track' }, axis), el('th', {}, 'open'), el('th', {}, ''))),
    el('tbody', {}, days.map((day) => {
      const isToday = day.date === answer.today;
      const open = day.openings.reduce((sum, o) => sum + Date.parse(o.closes_at) - Date.parse(o.opens_at), 0);
      return el('tr', { 'data-day': day.date, 'data-open-day': day.open_day ? 'yes' : 'no', 'data-today': isToday ? 'yes' : null,
        class: [isToday ? 'today' : null, day.open_day ? null : 'closed'].filter(Boolean).join(' ') || null },
      el('td', { 'data-field': 'day' }, `${day.weekday} ${day.date}`, isToday ? el('strong', {}, ' today') : null),
      el('td', { class: 'track' }, dayTrack(day, isToday, answer.now_second)),
      // A closed day's open time can only be the day before's interval running past midnight.
      el('td', { 'data-field': 'open' }, day.open_day ? openTime(open) : 'closed' + (open > 0 ? `; ${openTime(open)} from the day before` : '')),
      el('td', { class: 'muted', 'data-field': 'note' }, day.offset_change ? clockChange(day.offset_change) : null));
    })));
  const field = (key, label, value) => el('tr', { 'data-field': key }, el('th', {}, label), el('td', { class: 'mono' }, orDash(value)));
  page(`Calendar ${c.name}`,
    el('div', { class: 'panel', 'data-calendar': c.name, 'data-version': c.version },
      el('table', {}, el('tbody', {}, field('time_zone', 'time zone', c.time_zone), field('version', 'version', c.version),
        field('changed', 'set', `${shortTime(c.changed_at)} by ${c.changed_by}`),
        field('definition', 'definition', JSON.stringify(c.definition))))),
    el('div', { class: 'actions' }, link(dateAfter(days[0].date, -days.length), '← earlier', 'prev'),
      link(answer.today, 'today'), link(dateAfter(days[0].date, days.length), 'later →', 'next')),
    el('h2', {}, `Open time from ${days[0].date} to ${days[days.length - 1].date}, in ${c.time_zone}, version ${c.version}`),
    table,
    el('p', { class: 'muted' }, `Each bar is a stretch of open time as business time counts it (the version's spans), `
      + `placed on the wall clock of ${c.time_zone}; a day is closed when no interval of its hours opens on it. `
      + 'Shaded: the hour the clocks skip or repeat.'));
}

async function deadLetters() {
  const query = params();
  const search = new URLSearchParams();
  for (const name of ['job', 'before']) if (query.get(name)) search.set(name, query.get(name));
  const rows = await api('/api/dead-letters?' + search.toString());
  const form = el('form', { class: 'search', method: 'get', action: '/dead-letters' },
    el('label', {}, 'job class', el('input', { name: 'job', value: query.get('job') || '' })),
    el('button', { class: 'primary', type: 'submit' }, 'Filter'));
  const retry = (id) => onClick(null, async () => {
    await act(`/api/dead-letters/${id}/retry`); toast(`Check ${id} is pending again`); await deadLetters();
  });
  const table = el('table', { 'data-table': 'dead-letters' },
    el('thead', {}, el('tr', {}, ['id', 'job', 'entity', 'failed at', 'attempts', 'last error', ''].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((h) => el('tr', { 'data-id': h.id },
      el('td', {}, el('a', { href: `/checks/${h.id}` }, h.id)), el('td', {}, h.job),
      el('td', { class: 'mono' }, `${h.entity_name}/${h.entity_key}`), el('td', {}, shortTime(h.finished_at)),
      el('td', { class: 'num' }, h.attempts), el('td', { class: 'mono' }, orDash(h.last_error)),
      el('td', {}, config.read_only ? null : el('button', { 'data-action': 'retry', onclick: retry(h.id) }, 'Retry'))))));
  let next = null;
  if (rows.length === 50) {
    const before = new URLSearchParams(search);
    before.set('before', `${rows[rows.length - 1].finished_at},${rows[rows.length - 1].history_id}`);
    next = el('p', {}, el('a', { href: '/dead-letters?' + before.toString(), rel: 'next' }, 'Next page →'));
  }
  // Retry all that match: the count first, a confirmation, then requests of at most 250 each until done.
  const job = query.get('job') || '';
  // (The confirmation needs the count, so it is asked inside, not by onClick.)
  const retryAll = onClick(null, async (button) => {
    const { matching, at_least: atLeast } = await api('/api/dead-letters/count' + (job ? '?job=' + encodeURIComponent(job) : ''));
    const what = `${atLeast ? 'at least ' : ''}${number(matching)} dead letter${matching === 1 ? '' : 's'}${job ? ' of ' + job : ''}`;
    if (matching === 0 || !confirm(`Retry ${what}? They become pending at the next slot.`)) { button.disabled = false; return; }
    let revived = 0, skipped = 0, afterId = 0;
    for (;;) {
      const step = await act('/api/dead-letters/retry', { job: job || null, after_id: afterId });
      revived += step.revived; skipped += step.skipped;
      button.textContent = `Retrying… ${number(revived)}`;
      if (step.last_id === null) break;
      afterId = step.last_id;
    }
    toast(`${number(revived)} pending again` + (skipped ? `; ${number(skipped)} skipped (their job key is taken by a pending check)` : ''));
    await deadLetters();
  });
  const bulk = config.read_only || rows.length === 0 ? null : el('div', { class: 'actions' },
    el('button', { class: 'danger', 'data-action': 'retry-all', onclick: retryAll }, job ? `Retry all of ${job}…` : 'Retry all…'));
  page('Dead letters', el('p', { class: 'muted' }, 'Checks whose last settlement in the last 30 days was a failure, and that were not put back.'),
    form, bulk, rows.length ? table : el('p', { class: 'muted' }, 'No dead letters.'), next);
}

const stateClass = { active: null, paused: 'muted', invalid: 'bad', finished: 'muted' };

async function schedules() {
  const query = params();
  const search = new URLSearchParams();
  for (const name of ['job', 'state', 'after']) if (query.get(name)) search.set(name, query.get(name));
  const rows = await api('/api/schedules?' + search.toString());
  const form = el('form', { class: 'search', method: 'get', action: '/schedules' },
    el('label', {}, 'job class', el('input', { name: 'job', value: query.get('job') || '', size: 16 })),
    el('label', {}, 'state', el('select', { name: 'state' },
      [['', 'any'], ['paused', 'paused'], ['invalid', 'invalid']].map(([value, label]) =>
        el('option', { value, selected: (query.get('state') || '') === value }, label)))),
    el('button', { class: 'primary', type: 'submit' }, 'Filter'));
  const table = el('table', { 'data-table': 'schedules' },
    el('thead', {}, el('tr', {}, ['id', 'spec', 'time zone', 'job', 'next check (UTC)', 'last occurrence', 'state']
      .map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((d) => el('tr', { 'data-id': d.id },
      el('td', { class: 'mono' }, el('a', { href: '/schedules/' + encodeURIComponent(d.id) }, d.id)),
      el('td', { class: 'mono' }, d.spec), el('td', {}, d.time_zone), el('td', {}, d.job),
      el('td', {}, shortTime(d.next_check_at)), el('td', {}, shortTime(d.last_occurrence_at)),
      el('td', { class: stateClass[d.state], 'data-state': d.state }, d.state)))));
  let next = null;
  if (rows.length === 50) {
    const after = new URLSearchParams(search);
    after.set('after', rows[rows.length - 1].id);
    next = el('p', {}, el('a', { href: '/schedules?' + after.toString(), rel: 'next' }, 'Next page →'));
  }
  page('Schedules', form, rows.length ? table : el('p', { class: 'muted' }, 'No schedule matches.'), next);
}

async function schedule(id) {
  const d = await api('/api/schedules/' + encodeURIComponent(id));
  const path = '/api/schedules/' + encodeURIComponent(id);
  const note = el('input', { name: 'pause-note', placeholder: 'why (optional)', maxlength: '1024' });
  const run = (action, confirmText) => onClick(confirmText, async () => {
    const answer = await act(`${path}/${action}`, action === 'pause' ? { note: note.value } : {});
    toast(`Schedule ${id}: ${answer.status}`);
    if (action === 'remove') location.assign('/schedules'); else await schedule(id);
  });
  const actions = config.read_only ? null : el('div', { class: 'actions' },
    d.state === 'paused'
      ? el('button', { class: 'primary', 'data-action': 'resume', onclick: run('resume') }, 'Resume')
      : el('span', {}, note, el('button', { 'data-action': 'pause', onclick: run('pause') }, 'Pause')),
    el('button', { 'data-action': 'trigger', onclick: run('trigger', `Fire one occurrence of schedule ${id} now?`) }, 'Trigger now'),
    el('button', { class: 'danger', 'data-action': 'remove', onclick: run('remove', `Remove schedule ${id}? Its pending check is cancelled.`) }, 'Remove'));
  const field = (name, value) => el('tr', {}, el('th', {}, name), el('td', { class: 'mono' }, orDash(value)));
  const definition = el('div', { class: 'panel', 'data-schedule': d.id, 'data-state': d.state },
    el('table', {}, el('tbody', {}, field('spec', d.spec), field('time zone', d.time_zone), field('job', d.job),
      field('payload', JSON.stringify(d.payload)), field('catch-up', d.catch_up), field('deadline', d.deadline),
      field('window', d.window), field('jitter', d.jitter), field('overlap', d.overlap),
      field('priority', d.priority),
      field('pauses after', d.pause_after_failures ? `${d.pause_after_failures} failed occurrences in a row (failed so far: ${d.failed_in_a_row})` : null),
      field('last failure', d.last_failure), field('starts', shortTime(d.start_at)), field('ends', shortTime(d.end_at)),
      field('runs', d.max_runs ? `${d.run_count} of max ${d.max_runs}` : null),
      field('version', d.version), field('state', d.state + (d.paused_at ? ` since ${shortTime(d.paused_at)}` : '')
        + (d.state === 'ended' ? ` ${shortTime(d.ended_at)}` : '')),
      field('paused because', d.pause_note), field('ended because', d.ended_reason),
      field('invalid because', d.invalid_reason), field('last occurrence', shortTime(d.last_occurrence_at)),
      field('next check', shortTime(d.next_check_at)), field('created', shortTime(d.created_at)),
      field('updated', shortTime(d.updated_at)))), actions);
  const firings = el('table', { 'data-table': 'next-firings' },
    el('thead', {}, el('tr', {}, el('th', {}, `in ${d.time_zone}`), el('th', {}, 'UTC'))),
    el('tbody', {}, d.next_firings.map((at, i) => el('tr', {},
      el('td', { class: 'mono' }, d.next_firings_local[i]), el('td', { class: 'mono' }, shortTime(at))))));
  const events = el('table', { 'data-table': 'recent-events' },
    el('thead', {}, el('tr', {}, ['event', 'occurred', 'emitted'].map((h) => el('th', {}, h)))),
    el('tbody', {}, d.recent_events.map((e) => el('tr', {},
      el('td', { class: 'mono' }, e.id), el('td', {}, shortTime(e.occurred_at)), el('td', {}, shortTime(e.emitted_at))))));
  // Backfill: fire a past range once (what ran already is not fired again).
  const backfill = config.read_only ? null : el('form', { class: 'search', 'data-form': 'backfill' },
    el('label', {}, 'backfill from', el('input', { name: 'from', placeholder: '2026-11-20T00:00:00Z', required: true })),
    el('label', {}, 'to', el('input', { name: 'to', placeholder: '2026-11-20T23:00:00Z', required: true })),
    el('button', { type: 'submit', 'data-action': 'backfill' }, 'Backfill'));
  if (backfill) {
    backfill.onsubmit = async (event) => {
      event.preventDefault();
      try {
        const answer = await act(`${path}/backfill`, { from: backfill.elements.from.value.trim(),
          to: backfill.elements.to.value.trim() });
        toast(`Schedule ${id}: backfill is check ${answer.check}`);
      } catch (e) { toast(e.message, true); }
    };
  }
  page(`Schedule ${id}`, definition, backfill,
    el('h2', {}, d.window ? `Next occurrences (each fires at its place in the ${d.window} window)`
      : d.jitter ? `Next occurrences (each fires at its own offset within ${d.jitter})` : 'Next firings'), d.next_firings.length ? firings : el('p', { class: 'muted' }, 'It fires no more.'),
    el('h2', {}, 'Recent events'), d.recent_events.length ? events : el('p', { class: 'muted' }, 'No event yet.'));
}

// The live tail: an EventSource on the outbox (its last 100 events, then each as it commits), newest first,
// keeping the last 500 on the page. The browser reconnects by itself, from the last event it got.
let liveEvents = null;
async function events() {
  const type = params().get('type') || '';
  const form = el('form', { class: 'search', method: 'get', action: '/events' },
    el('label', {}, 'type', el('input', { name: 'type', value: type, size: 24 })),
    el('button', { class: 'primary', type: 'submit' }, 'Filter'));
  const status = el('p', { class: 'muted', 'data-stream': 'connecting' }, 'Connecting…');
  const body = el('tbody', {});
  const table = el('table', { 'data-table': 'events' },
    el('thead', {}, el('tr', {}, ['emitted', 'type', 'id', 'source', 'occurred', 'payload'].map((h) => el('th', {}, h)))), body);
  page('Events', form, status, table);
  if (liveEvents) liveEvents.close();
  liveEvents = new EventSource('/api/events/stream' + (type ? '?type=' + encodeURIComponent(type) : ''));
  let received = 0;
  const say = (state, text) => { status.dataset.stream = state; status.textContent = text; };
  liveEvents.onopen = () => say('live', 'Live: new events appear at the top as they commit.');
  liveEvents.onerror = () => say('reconnecting', 'Disconnected; reconnecting…');
  liveEvents.addEventListener('failure', (m) => say('reconnecting', `The database failed (${JSON.parse(m.data).error}); reconnecting…`));
  liveEvents.onmessage = (m) => {
    const e = JSON.parse(m.data);
    body.prepend(el('tr', { 'data-id': e.id, 'data-type': e.type },
      el('td', {}, shortTime(e.emitted_at)), el('td', {}, e.type), el('td', { class: 'mono' }, e.id),
      el('td', { class: 'mono' }, e.source), el('td', {}, shortTime(e.occurred_at)),
      el('td', { class: 'mono' }, JSON.stringify(e.payload))));
    while (body.childElementCount > 500) body.lastElementChild.remove();
    say('live', `Live: ${number(++received)} events received; new ones appear at the top.`);
  };
}

// The database's health, read on the primary (docs/operations.md, "Health"): who holds back the horizon, each
// table's dead tuples and last vacuum, the backlog, and doctor's problems at its default limits. Reloaded every
// 10 s while it is shown (the daemons' /metrics read it as often).
async function health() {
  const h = await api('/api/health');
  const held = (x) => (x.held_seconds === null ? '—' : `${Math.round(x.held_seconds)} s`);
  const oldestWait = h.backlog.oldest_due_at === null ? 0 : Math.round((Date.parse(h.now) - Date.parse(h.backlog.oldest_due_at)) / 1000);
  const tile = (label, key, value, bad) => el('div', { class: 'tile' + (bad ? ' bad' : '') },
    el('div', { class: 'label' }, label), el('div', { class: 'value', 'data-figure': key }, value));
  const tiles = el('div', { class: 'tiles' },
    tile('horizon: transactions behind', 'horizon_xid_age', number(h.horizon ? h.horizon.xid_age : 0)),
    tile('horizon held for', 'horizon_held', h.horizon ? held(h.horizon) : '—'),
    tile('problems', 'problems', number(h.problems.length), h.problems.length > 0),
    tile('most dead tuples', 'dead_tuples', number(h.tables.length ? h.tables[0].dead_tuples : 0)),
    tile('oldest overdue', 'oldest_overdue', `${oldestWait} s`, oldestWait > 0));
  const hidden = h.details_hidden ? el('p', { class: 'bad', 'data-note': 'details-hidden' }, h.details_note) : null;
  const problems = h.problems.length === 0 ? el('p', { class: 'muted', 'data-problems': 'none' }, 'No problem found.')
    : el('ul', { 'data-list': 'problems' }, h.problems.map((p) => el('li', {},
      el('strong', {}, `${p.subject}: `), p.finding, el('br', {}), el('span', { class: 'muted' }, 'What to do: '), p.advice)));
  const holders = h.holders.length === 0 ? el('p', { class: 'muted' }, 'Nothing holds an xmin back.')
    : el('table', { 'data-table': 'holders' },
      el('thead', {}, el('tr', {}, ['kind', 'pid', 'name', 'application', 'role', 'state', 'transaction start', 'query start',
        'held for', 'xmin', 'transactions behind'].map((t) => el('th', {}, t)))),
      el('tbody', {}, h.holders.map((x) => el('tr', { 'data-pid': x.pid === null ? null : x.pid, class: x.holds_tables ? null : 'stale' },
        el('td', {}, x.kind), el('td', { class: 'num' }, orDash(x.pid)), el('td', { class: 'mono' }, orDash(x.name)),
        el('td', { class: 'mono' }, orDash(x.application_name)), el('td', {}, orDash(x.role_name)),
        el('td', {}, x.details_hidden ? 'hidden' : orDash(x.state)), el('td', {}, shortTime(x.xact_start)),
        el('td', {}, shortTime(x.query_start)), el('td', { class: 'num' }, held(x)), el('td', { class: 'num' }, x.held_xmin),
        el('td', { class: 'num' }, number(x.xid_age))))));
  const tables = el('table', { 'data-table': 'tables' },
    el('thead', {}, el('tr', {}, ['table', 'live', 'dead', 'autovacuum at', 'last autovacuum', 'last autoanalyze', 'autovacuums']
      .map((t) => el('th', {}, t)))),
    el('tbody', {}, h.tables.map((t) => el('tr', { 'data-table-name': t.table },
      el('td', { class: 'mono' }, t.table), el('td', { class: 'num' }, number(t.live_tuples)),
      el('td', { class: 'num' + (t.dead_tuples > 2 * t.vacuum_trigger && t.dead_tuples >= 10000 ? ' bad' : '') }, number(t.dead_tuples)),
      el('td', { class: 'num' }, number(t.vacuum_trigger)), el('td', {}, t.autovacuum_enabled ? shortTime(t.last_autovacuum) : 'off'),
      el('td', {}, shortTime(t.last_autoanalyze)), el('td', { class: 'num' }, number(t.autovacuum_count))))));
  const backlog = el('p', { class: 'muted' }, h.backlog.overdue === null ? 'The queue figures have not been counted yet.'
    : `${number(h.backlog.overdue)} checks overdue when counted ${shortTime(h.backlog.counted_at)}; the oldest overdue now is `
      + (h.backlog.oldest_due_at === null ? 'none.' : `due at ${shortTime(h.backlog.oldest_due_at)}.`));
  page('Health', tiles, hidden, el('h2', {}, 'Problems'), problems,
    el('h2', {}, 'What holds back the horizon (oldest first)'), holders,
    el('h2', {}, 'Tables'), tables, el('h2', {}, 'Backlog'), backlog,
    el('p', { class: 'muted' }, `Read on the primary at ${shortTime(h.now)}; this page reads again every 10 s.`));
  clearTimeout(health.timer);
  health.timer = setTimeout(() => { if (location.pathname === '/health') health().catch((e) => toast(e.message, true)); }, 10000);
}

// What draws each page, by the name the server puts on <body> (engine/web/web_pages.cpp, the one list of the
// pages; tests/unit/web_pages_test.cpp holds this table to it). A page's argument is what its address holds
// after its first part: /checks/ID, /schedules/ID, /calendars/NAME.
const pathArgument = () => decodeURIComponent(location.pathname.split('/').slice(2).join('/'));
const pages = {
  overview: () => overview(),
  checks: () => checks(),
  check: () => trace(pathArgument()),
  'dead-letters': () => deadLetters(),
  schedules: () => schedules(),
  schedule: () => schedule(pathArgument()),
  limits: () => limits(),
  jobs: () => jobs(),
  calendars: () => calendars(),
  calendar: () => calendarDays(pathArgument()),
  health: () => health(),
  events: () => events(),
};

async function route() {
  const section = '/' + location.pathname.split('/')[1];
  document.querySelectorAll('nav a').forEach((a) => a.classList.toggle('active', a.getAttribute('href') === section));
  try {
    config = await api('/api/config');
    document.getElementById('mode').textContent = config.read_only ? 'read-only' : '';
    await pages[document.body.dataset.page]();
    document.body.dataset.ready = 'true';
  } catch (e) {
    // 503: the database failed, or the figures are not counted yet (a daemon just started): it passes.
    const again = e.status === 503;
    page('Error', el('p', { class: 'muted', 'data-error': true }, e.message), again ? el('p', {}, 'Trying again in 5 s…') : null);
    document.body.dataset.ready = 'true';
    if (again) setTimeout(route, 5000);
  }
}

route();
