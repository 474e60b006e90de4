// The sketchd console: hash-routed views over the public JSON API.
// No inline scripts or styles (the page's Content-Security-Policy forbids
// them): elements are built with the DOM API, styles come from app.css
// and, for computed sizes, the CSSOM.
import { layoutThree, layoutTwo, lensPath, radius } from './layout.js';
import { addDays, dayOf, midnight, stamp } from './zone.js';

const TOKEN_KEY = 'sketchd.read-token';
const SVG = 'http://www.w3.org/2000/svg';
const main = document.getElementById('main');
const message = document.getElementById('message');

// ---- DOM helpers ----

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  e.append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return e;
}

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  setAttrs(e, attrs);
  e.append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return e;
}

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
}

// ---- formatting ----

const intFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
// count formats an estimate of a number of ids: rounded, with separators.
const count = (x) => intFmt.format(Math.round(x));
const pct = (x) => `${(x * 100).toFixed(2)}%`;
const frac = (x) => x.toFixed(3);
function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// when shows instant iso as a date and time in time zone tz (UTC unless
// given: a series' times are in its own zone) with the zone's offset at
// that instant, and in its title the viewer's own local time.
function when(iso, tz = 'UTC') {
  if (!iso) return '';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const yours = new Intl.DateTimeFormat(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short',
  }).format(new Date(ms));
  return el('time', { datetime: iso, title: `${iso}${tz === 'UTC' ? '' : ` (${tz})`}; your time: ${yours}` }, stamp(ms, tz));
}

// latest is the latest of ISO instants (which may carry different
// offsets), or undefined.
function latest(isos) {
  return isos.filter(Boolean).sort((a, b) => Date.parse(a) - Date.parse(b)).pop();
}

// ---- the API ----

// Problem is a problem+json answer (or a network failure, status 0).
class Problem extends Error {
  constructor(status, title, detail, requestID) {
    super(`${status} ${title}: ${detail}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.requestID = requestID;
  }
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

async function api(method, path, body, { blob = false } = {}) {
  const headers = { Accept: 'application/json, application/problem+json' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new Problem(0, 'No answer', `sketchd did not answer (${e.message}).`, '');
  }
  if (resp.ok) return blob ? resp.blob() : resp.json();
  let p = {};
  if ((resp.headers.get('Content-Type') || '').includes('json')) {
    try {
      p = await resp.json();
    } catch {
      p = {};
    }
  }
  throw new Problem(resp.status, p.title || resp.statusText || 'Error', p.detail || '', p.request_id || '');
}

// sketchPath is a sketch's API path. Names are letters, digits and
// . _ : - (all safe in a path), and the API takes ':' as is, not %3A.
const sketchPath = (name) => `/v1/sketches/${encodeURIComponent(name).replace(/%3A/gi, ':')}`;
const seriesPath = (name) => `/v1/series/${encodeURIComponent(name).replace(/%3A/gi, ':')}`;

// ---- messages ----

function say(text, kind = 'error') {
  message.replaceChildren(...(Array.isArray(text) ? text : [text]));
  message.className = `message ${kind}`;
  message.hidden = false;
}

function clearMessage() {
  message.hidden = true;
  message.replaceChildren();
}

function showProblem(err) {
  if (!(err instanceof Problem)) {
    say(`Something went wrong in the page: ${err.message}`);
    return;
  }
  const detail = err.detail && !/[.!?]$/.test(err.detail) ? `${err.detail}.` : err.detail;
  const parts = [el('strong', { class: 'status' }, err.status ? `${err.status} ${err.title}` : err.title), ' ', detail];
  if (err.status === 401) {
    parts.push(' ', token() ? 'The token in use was refused; enter another read token above.' : 'This server needs a read token: enter it above.');
  } else if (err.status === 403) {
    parts.push(' ', 'The token in use may not do this.');
  }
  if (err.requestID) parts.push(el('span', { class: 'muted request-id' }, ` (request ${err.requestID})`));
  say(parts);
  if (err.status === 401) document.getElementById('token').focus();
}

// ---- the token ----

function tokenState() {
  document.getElementById('token-state').textContent = token() ? 'token set for this tab' : '';
}

document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token');
  const v = input.value.trim();
  if (v) sessionStorage.setItem(TOKEN_KEY, v);
  input.value = '';
  tokenState();
  route();
});

document.getElementById('token-forget').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  tokenState();
  route();
});

// ---- views ----

// A view renders into main from the route's parameters.
const views = [
  { pattern: /^\/sketch\/(.+)$/, render: (m) => sketchView(decodeURIComponent(m[1])), nav: 'nav-list' },
  { pattern: /^\/series\/(.+)$/, render: (m, q) => seriesView(decodeURIComponent(m[1]), q), nav: 'nav-list' },
  { pattern: /^\/overlap$/, render: (_m, q) => overlapView(q.getAll('s')), nav: 'nav-overlap' },
  { pattern: /^\/retention$/, render: (_m, q) => retentionView(q), nav: 'nav-retention' },
  { pattern: /^\/funnel$/, render: (_m, q) => funnelView(q.getAll('s')), nav: 'nav-funnel' },
  { pattern: /^\/rank$/, render: (_m, q) => rankView(q), nav: 'nav-rank' },
  { pattern: /^\/?$/, render: (_m, q) => listView(q.get('prefix') || ''), nav: 'nav-list' },
];

let generation = 0;

async function route() {
  const gen = ++generation;
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = hash.split('?');
  const q = new URLSearchParams(query);
  clearMessage();
  for (const v of views) {
    const m = path.match(v.pattern);
    if (!m) continue;
    for (const a of document.querySelectorAll('nav a')) {
      if (a.id === v.nav) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    main.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
    try {
      const content = await v.render(m, q);
      if (gen !== generation) return;
      main.replaceChildren(content);
    } catch (err) {
      if (gen !== generation) return;
      main.replaceChildren(errorPage(err));
      showProblem(err);
    }
    main.dataset.ready = String(gen);
    return;
  }
  main.replaceChildren(el('h1', {}, 'Not here'), el('p', {}, el('a', { href: '#/' }, 'Back to the sketches')));
}

// errorPage stands in for a view that could not be shown (a sketch that
// does not exist, a refused token): the message above says why, and this
// leads back.
function errorPage(err) {
  const missing = err instanceof Problem && err.status === 404;
  return el('section', { class: 'detail', id: 'error-page' },
    el('h1', {}, missing ? 'Not found' : 'This page could not be shown'),
    el('p', {}, el('a', { href: '#/', id: 'back' }, 'Back to the sketches'), ' · ', el('a', { href: '#/overlap' }, 'Overlap')));
}

window.addEventListener('hashchange', () => {
  route().then(() => {
    const h = main.querySelector('h1');
    if (h) {
      h.tabIndex = -1;
      h.focus({ preventScroll: true });
    }
  });
});

// estimateOf returns a sketch's estimate and absolute error (one standard
// error for HLL; CMS totals are exact counts).
// Theta and frequency sketches report bounds at two standard deviations;
// half their half-width is one.
const SAMPLED = new Set(['theta', 'freq']);
// HLL sketches in other ecosystems' formats: an estimate with its relative
// standard error and bounds at two standard deviations.
const REGISTERS = new Set(['ds_hll', 'cpc', 'zeta_hll', 'airlift_hll']);
// distinct says whether a kind counts distinct ids, so that it overlaps.
const distinct = (type) => type === 'hll' || type === 'theta' || REGISTERS.has(type);

function estimateOf(s) {
  if (s.type === 'hll' || REGISTERS.has(s.type)) return { value: s.cardinality, error: s.cardinality * s.std_error };
  if (s.type === 'kll') return { value: s.n, error: 0 };
  if (s.type === 'bloom') return { value: s.estimated_items, error: 0 };
  if (SAMPLED.has(s.type)) return { value: s.cardinality, error: (s.upper_bound - s.lower_bound) / 4 };
  return { value: s.total, error: 0 };
}

function estimateCell(s) {
  const { value, error } = estimateOf(s);
  if (s.type === 'hll' || REGISTERS.has(s.type)) {
    return [el('span', { class: 'est' }, count(value)), error > 0 ? el('span', { class: 'err' }, ` ± ${count(error)} (1σ)`) : el('span', { class: 'err muted' }, ' exact')];
  }
  if (s.type === 'cms') return [el('span', { class: 'est' }, count(value)), el('span', { class: 'err muted' }, ' total')];
  if (s.type === 'kll') return [el('span', { class: 'est' }, count(value)), el('span', { class: 'err muted' }, ' values')];
  if (s.type === 'bloom') return [el('span', { class: 'est' }, count(value)), el('span', { class: 'err muted' }, ` ids, ${s.false_positive_rate.toPrecision(2)} false positives`)];
  if (SAMPLED.has(s.type)) {
    // Theta and frequency bounds are two standard deviations each side:
    // the column gives every kind's ± 1σ, so that rows compare.
    const sd = (s.upper_bound - s.lower_bound) / 4;
    return [el('span', { class: 'est' }, count(value)), sd > 0 ? el('span', { class: 'err' }, ` ± ${count(sd)} (1σ)`) : el('span', { class: 'err muted' }, ' exact')];
  }
  return el('span', { class: 'muted' }, '—');
}

// kindName names a sketch kind for people; kinds the console does not
// know yet show their API name.
const kindName = (type) => ({ hll: 'HLL', cms: 'Count-Min', theta: 'Theta', freq: 'Frequency', ds_hll: 'DataSketches HLL', cpc: 'CPC', zeta_hll: 'ZetaSketch HLL++', airlift_hll: 'Trino HyperLogLog', kll: 'KLL quantiles', bloom: 'Bloom filter' })[type] || type;

async function listView(prefix) {
  const section = el('section', { class: 'list' });
  const input = el('input', { id: 'prefix', type: 'search', value: prefix, spellcheck: 'false', autocomplete: 'off', maxlength: 200, list: 'prefix-names' });
  // Suggestions: the names listed below and their prefixes up to each ':'.
  const suggestions = el('datalist', { id: 'prefix-names' });
  const suggested = new Set();
  const suggest = (name) => {
    const parts = name.split(':');
    for (let i = 1; i <= parts.length; i++) {
      const v = parts.slice(0, i).join(':') + (i < parts.length ? ':' : '');
      if (!suggested.has(v) && suggested.size < 500) {
        suggested.add(v);
        suggestions.append(el('option', { value: v }));
      }
    }
  };
  const form = el('form', { role: 'search', class: 'search' }, el('label', { for: 'prefix' }, 'Name starts with'), input, el('button', { type: 'submit' }, 'Search'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = input.value.trim();
    location.hash = v ? `#/?prefix=${encodeURIComponent(v)}` : '#/';
  });
  const tbody = el('tbody');
  const table = el('table', { class: 'sketches' },
    el('caption', { class: 'visually-hidden' }, 'Sketches, in name order'),
    el('thead', {}, el('tr', {},
      el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Select to compare')),
      el('th', { scope: 'col' }, 'Name'),
      el('th', { scope: 'col' }, 'Kind'),
      el('th', { scope: 'col', class: 'num' }, 'Estimate (± 1σ)'),
      el('th', { scope: 'col' }, 'Representation'),
      el('th', { scope: 'col', class: 'num' }, 'Size'),
      el('th', { scope: 'col' }, 'Last update'))),
    tbody);
  const compare = el('button', { type: 'button', id: 'compare', disabled: true }, 'Compare selected');
  const more = el('button', { type: 'button', id: 'more', hidden: true }, 'Show more');
  const status = el('p', { class: 'muted', 'aria-live': 'polite' });
  const selected = () => [...tbody.querySelectorAll('input[type=checkbox]:checked')].map((c) => c.value);
  const update = () => {
    const n = selected().length;
    compare.disabled = n < 2 || n > 3;
    compare.textContent = n ? `Compare ${n} selected` : 'Compare selected';
  };
  compare.addEventListener('click', () => {
    location.hash = `#/overlap?${selected().map((s) => `s=${encodeURIComponent(s)}`).join('&')}`;
  });

  let after = '';
  let shown = 0;
  const load = async () => {
    const q = new URLSearchParams({ limit: '100' });
    if (prefix) q.set('prefix', prefix);
    if (after) q.set('after', after);
    const page = await api('GET', `/v1/sketches?${q}`);
    for (const s of page.sketches) {
      suggest(s.name);
      const box = distinct(s.type)
        ? el('input', { type: 'checkbox', value: s.name, 'aria-label': `Select ${s.name} to compare`, onchange: update })
        : '';
      tbody.append(el('tr', { 'data-name': s.name },
        el('td', { 'data-label': 'Compare' }, box),
        el('th', { scope: 'row', 'data-label': 'Name' }, el('a', { href: `#/sketch/${encodeURIComponent(s.name)}` }, s.name)),
        el('td', { 'data-label': 'Kind' }, kindName(s.type)),
        el('td', { class: 'num estimate', 'data-label': 'Estimate' }, estimateCell(s)),
        el('td', { 'data-label': 'Representation' }, s.representation || '—'),
        el('td', { class: 'num', 'data-label': 'Size' }, bytes(s.size_bytes)),
        el('td', { 'data-label': 'Updated' }, when(s.updated_at))));
    }
    shown += page.sketches.length;
    after = page.next || '';
    more.hidden = !after;
    status.textContent = shown === 0
      ? (prefix ? `No sketch name starts with “${prefix}”.` : 'No sketches yet. Create one with PUT /v1/sketches/{name}.')
      : `${shown} sketch${shown === 1 ? '' : 'es'}${after ? ' so far' : ''}.`;
  };
  more.addEventListener('click', () => load().catch(showProblem));
  await load();
  const note = el('p', { class: 'muted', id: 'estimate-note' },
    '± 1σ is one standard error, for every kind that estimates: the true count is within it about two times in three, and within twice it about 19 times in 20 (for theta and frequency sketches, their 95% bounds). Count-Min rows give their exact total.');
  section.append(el('h1', {}, 'Sketches'), form, suggestions, status, el('div', { class: 'table-wrap' }, table), note, el('p', { class: 'actions' }, more, compare));
  update();
  const series = await seriesList(prefix);
  if (series) {
    for (const a of series.querySelectorAll('tbody tr')) suggest(a.dataset.name);
    section.append(series);
  }
  return section;
}

// seriesList lists the series whose names start with prefix, or returns
// null when the server's backend keeps none (501) or there are none.
async function seriesList(prefix) {
  const q = new URLSearchParams({ limit: '100' });
  if (prefix) q.set('prefix', prefix);
  let page;
  try {
    page = await api('GET', `/v1/series?${q}`);
  } catch (err) {
    if (err instanceof Problem && (err.status === 501 || err.status === 404)) return null;
    throw err;
  }
  if (page.series.length === 0) return null;
  const rows = page.series.map((s) => {
    const newest = latest(s.levels.map((l) => l.newest));
    return el('tr', { 'data-name': s.name },
      el('th', { scope: 'row', 'data-label': 'Name' }, el('a', { href: `#/series/${encodeURIComponent(s.name)}` }, s.name)),
      el('td', { 'data-label': 'Kind' }, kindName(s.type)),
      el('td', { 'data-label': 'Levels' }, s.levels.map((l) => `${l.level} (${l.buckets})`).join(', ')),
      el('td', { 'data-label': 'Time zone' }, s.tz),
      el('td', { class: 'num', 'data-label': 'Size' }, bytes(s.size_bytes)),
      el('td', { 'data-label': 'Newest bucket' }, when(newest, s.tz)));
  });
  return el('div', { class: 'series-list' },
    el('h2', {}, 'Series'),
    el('div', { class: 'table-wrap' }, el('table', { class: 'series' },
      el('thead', {}, el('tr', {},
        el('th', { scope: 'col' }, 'Name'), el('th', { scope: 'col' }, 'Kind'), el('th', { scope: 'col' }, 'Levels (buckets)'),
        el('th', { scope: 'col' }, 'Time zone'), el('th', { scope: 'col', class: 'num' }, 'Size'), el('th', { scope: 'col' }, 'Newest bucket'))),
      el('tbody', {}, rows))));
}

function facts(rows) {
  return el('dl', { class: 'facts' }, rows.filter(Boolean).map(([k, v, id]) => [el('dt', {}, k), el('dd', id ? { id } : {}, v)]));
}

async function sketchView(name) {
  const s = await api('GET', sketchPath(name));
  if (s.type === 'hll') return hllView(s);
  if (s.type === 'cms') return cmsView(s);
  if (SAMPLED.has(s.type)) return sampledView(s);
  if (REGISTERS.has(s.type)) return registersView(s);
  if (s.type === 'kll') return kllView(s);
  if (s.type === 'bloom') return bloomView(s);
  // A kind this page does not know yet: what every sketch has.
  return el('section', { class: 'detail' },
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, `${s.type} sketch`),
    facts([['Size', bytes(s.size_bytes)], ['Created', when(s.created_at)], ['Last update', when(s.updated_at)]]));
}

function hllView(s) {
  const { value, error } = estimateOf(s);
  const m = 2 ** s.log2m;
  const section = el('section', { class: 'detail' },
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, 'HyperLogLog sketch: distinct ids'),
    facts([
      ['Estimate', [count(value), ' distinct ids'], 'estimate'],
      ['Error', error > 0 ? `± ${count(error)} (one standard error, ${pct(s.std_error)})` : 'exact (the sketch still lists its ids)', 'error'],
      ['Representation', s.representation],
      ['Parameters', `log2m ${s.log2m} (${intFmt.format(m)} registers), regwidth ${s.regwidth}, expthresh ${s.expthresh}${s.expthresh === -1 ? ' (auto)' : ''}, sparse ${s.sparse ? 'on' : 'off'}`],
      ['Size', bytes(s.size_bytes)],
      ['Created', when(s.created_at)],
      ['Last update', when(s.updated_at)],
      ['On /metrics', s.metric ? 'yes' : 'no'],
    ]));

  const download = el('button', { type: 'button', id: 'download' }, `Download ${s.name}.hll`);
  download.addEventListener('click', () => downloadRaw(s.name, `${s.name.replace(/:/g, '_')}.hll`));
  const line = psqlLine(s.name);
  const copy = el('button', { type: 'button', id: 'copy-psql' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(line);
      copy.textContent = 'Copied';
    } catch {
      copy.textContent = 'Select the line and copy it';
    }
  });
  section.append(
    el('h2', {}, 'Take it to PostgreSQL'),
    el('p', {}, 'The bytes are the storage format postgresql-hll reads: ', download),
    el('p', {}, 'Or load it straight into psql (the hll extension prints the same estimate):'),
    el('pre', { class: 'code' }, el('code', { id: 'psql' }, line)),
    el('p', {}, copy, token() ? el('span', { class: 'muted' }, ' Set SKETCHD_TOKEN to your read token first.') : ''),
    el('p', {}, el('a', { href: `#/overlap?s=${encodeURIComponent(s.name)}` }, 'Compare with other sketches'), ' · ', rankLink(s.name)));
  return section;
}

// rankLink leads to the sketches that overlap most with name.
const rankLink = (name) => el('a', { href: `#/rank?target=${encodeURIComponent(name)}`, id: 'rank-link' }, 'Which sketches overlap most with this one');

// registersView shows an HLL sketch in another ecosystem's format, with
// what reads its bytes.
function registersView(s) {
  const { value, error } = estimateOf(s);
  const about = {
    ds_hll: ['DataSketches HLL sketch: distinct ids',
      `lg_k ${s.lg_k} (${intFmt.format(2 ** s.lg_k)} registers), ${s.tgt_type}`,
      'The bytes are DataSketches\' HLL format, read by Spark (hll_sketch_estimate), Druid, Hive, Impala and the DataSketches libraries: '],
    cpc: ['CPC sketch (DataSketches): distinct ids',
      `lg_k ${s.lg_k} (${intFmt.format(2 ** s.lg_k)} rows)`,
      'The bytes are DataSketches\' CPC format, read by Pinot, Hive, Impala and the DataSketches libraries: '],
    zeta_hll: [`ZetaSketch HLL++ sketch (BigQuery HLL_COUNT): distinct ${s.value_type === 'string' ? 'string' : s.value_type === 'int64' ? 'INT64' : ''} ids`,
      `precision ${s.precision} (${intFmt.format(2 ** s.precision)} registers), sparse precision ${s.sparse_precision || 'none'}; ${intFmt.format(s.num_values)} values added`,
      'The bytes are what BigQuery\'s HLL_COUNT.INIT writes, read by HLL_COUNT.MERGE and HLL_COUNT.EXTRACT, Beam\'s HllCount and ZetaSketch: '],
    airlift_hll: ['Trino HyperLogLog (airlift): distinct ids',
      `${s.index_bits} index bits (${intFmt.format(2 ** s.index_bits)} buckets)`,
      'The bytes are Trino\'s and Presto\'s HyperLogLog type, what approx_set writes and merge and cardinality read (cast them from varbinary): '],
  }[s.type];
  const download = el('button', { type: 'button', id: 'download' }, `Download ${s.name}.bin`);
  download.addEventListener('click', () => downloadRaw(s.name, `${s.name.replace(/:/g, '_')}.bin`));
  return el('section', { class: 'detail' },
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, about[0]),
    facts([
      ['Estimate', [count(value), ' distinct ids'], 'estimate'],
      ['Error', error > 0 ? `± ${count(error)} (one standard error, ${pct(s.std_error)})` : 'exact', 'error'],
      ['95% bounds', `${count(s.lower_bound)} – ${count(s.upper_bound)}`, 'bounds'],
      ['Representation', s.representation],
      ['Parameters', about[1]],
      ['Size', bytes(s.size_bytes)],
      ['Created', when(s.created_at)],
      ['Last update', when(s.updated_at)],
      ['On /metrics', s.metric ? 'yes' : 'no'],
    ]),
    el('h2', {}, 'Take it elsewhere'),
    el('p', {}, about[2], download));
}

// num formats a value of a KLL sketch: integers as counts, others to four
// significant digits.
const num = (x) => (Number.isInteger(x) ? intFmt.format(x) : Number(x.toPrecision(4)).toString());

// kllView shows a KLL sketch: its median and tails with the values at
// the ranks a rank error below and above, and its CDF with its error
// band.
async function kllView(s) {
  const download = el('button', { type: 'button', id: 'download' }, `Download ${s.name}.bin`);
  download.addEventListener('click', () => downloadRaw(s.name, `${s.name.replace(/:/g, '_')}.bin`));
  const head = [
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, `KLL sketch (DataSketches): the distribution of ${s.items} values`),
    facts([
      ['Values', count(s.n), 'kll-n'],
      s.n > 0 ? ['Min – max', `${num(s.min)} – ${num(s.max)}`, 'kll-range'] : null,
      ['Rank error', `± ${pct(s.rank_error)} of the values (99% confidence; ± ${pct(s.rank_error_pmf)} for a share between two values)`, 'kll-error'],
      ['Parameters', `k ${s.k}, ${intFmt.format(s.retained)} items kept`],
      ['Size', bytes(s.size_bytes)],
      ['Created', when(s.created_at)],
      ['Last update', when(s.updated_at)],
      ['On /metrics', s.metric ? 'yes' : 'no'],
    ])];
  const tail = [el('h2', {}, 'Take it elsewhere'),
    el('p', {}, 'The bytes are DataSketches\' compact KLL format, read by its Java, C++ and Python libraries and by Druid, Pinot and Spark: ', download)];
  if (s.n === 0) return el('section', { class: 'detail' }, ...head, el('p', { class: 'muted' }, 'Nothing added yet.'), ...tail);
  const path = sketchPath(s.name);
  const ranks = Array.from({ length: 101 }, (_, i) => i / 100);
  const qs = await api('GET', `${path}/quantile?q=${ranks.join(',')}`);
  // The CDF at the values of the percentiles: points spread over the
  // distribution, dense where the values are.
  const splits = [...new Set(qs.quantiles.map((q) => q.value))].sort((a, b) => a - b);
  const cdf = await api('GET', `${path}/cdf?split=${splits.join(',')}`);
  const table = el('table', { class: 'quantiles', id: 'kll-quantiles' },
    el('thead', {}, el('tr', {}, el('th', {}, 'Quantile'), el('th', {}, 'Value'), el('th', {}, 'Values at ', el('br'), `rank ± ${pct(qs.rank_error)}`))),
    el('tbody', {}, [0.5, 0.9, 0.99].map((q) => {
      const v = qs.quantiles[Math.round(q * 100)];
      return el('tr', { 'data-q': q, 'data-value': v.value, 'data-lower': v.lower, 'data-upper': v.upper },
        el('td', {}, `p${Math.round(q * 100)}`), el('td', { class: 'num' }, num(v.value)), el('td', { class: 'num' }, `${num(v.lower)}–${num(v.upper)}`));
    })));
  return el('section', { class: 'detail' }, ...head,
    el('h2', {}, 'Quantiles'), table,
    el('h2', {}, 'Cumulative distribution'), cdfChart(s, cdf),
    ...tail);
}

// cdfChart draws a KLL sketch's CDF at split points with its error band:
// the share of values at most each point, ± the rank error.
function cdfChart(s, cdf) {
  const small = narrow();
  const CW = small ? 420 : 900;
  const CH = small ? 400 : 340;
  const m = small ? { l: 52, r: 14, t: 14, b: 42 } : { l: 60, r: 24, t: 14, b: 46 };
  const pts = cdf.split_points.map((v, i) => ({ v, y: cdf.values[i], lo: cdf.lower[i], hi: cdf.upper[i] }));
  const lo = s.min, hi = Math.max(s.max, s.min + 1e-9);
  // Values spread over decades (latencies, sizes) are drawn on a log
  // axis, so that the body of the distribution is not squeezed into its
  // first pixels.
  const log = lo > 0 && hi / lo >= 20;
  const t = log ? Math.log10 : (v) => v;
  let ticks = [];
  if (log) {
    // 1, 2 and 5 times the powers of ten within the range, thinned out.
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const f of [1, 2, 5]) {
        const v = f * 10 ** e;
        if (v >= lo && v <= hi) ticks.push(v);
      }
    }
    const most = small ? 4 : 7;
    if (ticks.length > most) ticks = ticks.filter((v) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
  } else {
    const n = small ? 3 : 5;
    ticks = Array.from({ length: n + 1 }, (_, i) => lo + ((hi - lo) * i) / n);
  }
  // Room for half of the labels centred on the axis's ends.
  const px = tickPx(small);
  const half = (v) => textWidth(num(v), px) / 2;
  for (const v of ticks) {
    if (t(v) - t(lo) <= (t(hi) - t(lo)) / 2) m.l = Math.max(m.l, 3 + half(v));
    else m.r = Math.max(m.r, 3 + half(v));
  }
  const x = (v) => m.l + ((t(v) - t(lo)) / (t(hi) - t(lo))) * (CW - m.l - m.r);
  const y = (f) => CH - m.b - f * (CH - m.t - m.b);
  const root = svg('svg', { viewBox: `0 0 ${CW} ${CH}`, class: 'chart', id: 'kll-cdf', role: 'img', 'aria-labelledby': 'cdf-title', 'data-scale': log ? 'log' : 'linear' },
    svg('title', { id: 'cdf-title' }, `${s.name}: the share of values at most each value, with its error band`));
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    root.append(svg('line', { class: 'grid', x1: m.l, x2: CW - m.r, y1: y(f), y2: y(f) }),
      svg('text', { class: 'tick', x: m.l - 8, y: y(f) + 4, 'text-anchor': 'end' }, `${f * 100}%`));
  }
  for (const v of ticks) {
    root.append(svg('line', { class: 'grid', x1: x(v), x2: x(v), y1: m.t, y2: CH - m.b }),
      svg('text', { class: 'tick', x: x(v), y: CH - m.b + 20, 'text-anchor': 'middle' }, num(v)));
  }
  // The band and the line start at the min (rank 0) and end at the max.
  const first = { v: lo, y: 0, lo: 0, hi: Math.min(1, cdf.rank_error) };
  const last = { v: hi, y: 1, lo: Math.max(0, 1 - cdf.rank_error), hi: 1 };
  const all = [first, ...pts.filter((p) => p.v > lo && p.v < hi), last];
  const upper = all.map((p) => `${x(p.v)},${y(p.hi)}`);
  const lower = all.slice().reverse().map((p) => `${x(p.v)},${y(p.lo)}`);
  root.append(svg('polygon', { class: 'band line-7', id: 'cdf-band', points: [...upper, ...lower].join(' ') }),
    svg('polyline', { class: 'line line-7', id: 'cdf-line', points: all.map((p) => `${x(p.v)},${y(p.y)}`).join(' ') }));
  for (const p of pts) {
    root.append(svg('circle', { class: 'dot line-7', cx: x(p.v), cy: y(p.y), r: 2.5, 'data-value': p.v, 'data-cdf': p.y, 'data-lower': p.lo, 'data-upper': p.hi },
      svg('title', {}, `${pct(p.y)} of the values are at most ${num(p.v)} (${pct(p.lo)} – ${pct(p.hi)})`)));
  }
  return el('figure', { class: 'chart-figure' }, root,
    el('figcaption', {}, el('ul', { class: 'legend' },
      el('li', { id: 'cdf-note' }, `band: ± ${pct(cdf.rank_error)} rank error, 99% confidence, from ${count(s.n)} values`),
      log ? el('li', {}, 'values on a log scale') : null)));
}

// bloomView shows a Bloom filter: its shape, how full it is and its
// false-positive rate now.
function bloomView(s) {
  const download = el('button', { type: 'button', id: 'download' }, `Download ${s.name}.bin`);
  download.addEventListener('click', () => downloadRaw(s.name, `${s.name.replace(/:/g, '_')}.bin`));
  return el('section', { class: 'detail' },
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, 'Bloom filter: which ids were seen, with no false negatives'),
    facts([
      ['Distinct ids', ['about ', count(s.estimated_items)], 'bloom-items'],
      ['False positives', `${s.false_positive_rate.toPrecision(3)} now${s.fpp ? `; made for ${pct(s.fpp)} at ${count(s.expected_items)} ids` : ''}`, 'bloom-rate'],
      ['Bits', `${intFmt.format(s.bits_set)} of ${intFmt.format(s.bits)} set, ${s.hashes} per id`],
      ['Size', bytes(s.size_bytes)],
      ['Created', when(s.created_at)],
      ['Last update', when(s.updated_at)],
    ]),
    el('h2', {}, 'Take it elsewhere'),
    el('p', {}, 'The bytes are sketchd\'s Bloom filter format (docs/bloom.md): ', download));
}

// sampledView shows a theta or frequency sketch (DataSketches' formats),
// and for a frequency sketch its report of users per frequency class.
async function sampledView(s) {
  const download = el('button', { type: 'button', id: 'download' }, `Download ${s.name}.bin`);
  download.addEventListener('click', () => downloadRaw(s.name, `${s.name.replace(/:/g, '_')}.bin`));
  const report = s.type === 'freq' ? [el('h2', {}, 'How often users saw it'), await freqReport(s)] : [];
  return el('section', { class: 'detail' },
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, s.type === 'theta' ? 'Theta sketch (DataSketches): distinct ids' : 'Frequency sketch (DataSketches tuple): distinct ids and their impressions'),
    facts([
      ['Estimate', [count(s.cardinality), ' distinct ids'], 'estimate'],
      ['95% bounds', `${count(s.lower_bound)} – ${count(s.upper_bound)}`, 'bounds'],
      s.impressions !== undefined ? ['Impressions', count(s.impressions)] : null,
      ['Parameters', `lg_k ${s.lg_k} (${intFmt.format(2 ** s.lg_k)} nominal entries)`],
      ['Sampling', `theta ${s.theta.toPrecision(4)}, ${intFmt.format(s.retained)} hashes kept`],
      ['Size', bytes(s.size_bytes)],
      ['Created', when(s.created_at)],
      ['Last update', when(s.updated_at)],
    ]),
    ...report,
    el('h2', {}, 'Take it elsewhere'),
    el('p', {}, 'The bytes are DataSketches\' compact format, read by its Java, C++ and Python libraries: ', download),
    el('p', {}, el('a', { href: `#/overlap?s=${encodeURIComponent(s.name)}` }, 'Compare with other sketches'), s.type === 'theta' ? [' · ', rankLink(s.name)] : null));
}

// freqReport draws a frequency sketch's report: how many users saw it
// exactly k times (and k or more, last), with their impressions, each
// with the bounds the API gives.
async function freqReport(s) {
  const r = await api('GET', `${sketchPath(s.name)}/frequency_report?max=10`);
  const span = (iv) => `${count(iv.lower)}–${count(iv.upper)}`;
  const box = el('div', { id: 'freq-report' },
    facts([
      ['Reach', [count(r.reach.estimate), ' users ', el('span', { class: 'muted' }, `(${span(r.reach)})`)], 'freq-reach'],
      ['Impressions', [count(r.impressions.estimate), ' ', el('span', { class: 'muted' }, `(${span(r.impressions)})`)], 'freq-impressions'],
    ]));
  const shown = r.classes.filter((c) => c.users.estimate > 0 || !c.or_more);
  if (r.reach.estimate === 0) {
    box.append(el('p', { class: 'muted' }, 'Nothing added yet.'));
    return box;
  }
  const max = Math.max(...shown.map((c) => c.users.estimate));
  const list = el('ol', { class: 'bars', id: 'freq-classes' });
  for (const c of shown) {
    const bar = el('span', { class: 'bar' });
    bar.style.width = `${max > 0 ? (100 * c.users.estimate) / max : 0}%`;
    if (c.users.estimate === 0) bar.style.minWidth = '0';
    list.append(el('li', {},
      el('span', { class: 'bar-id' }, c.or_more ? `${c.k}+ times` : `${c.k} ${c.k === 1 ? 'time' : 'times'}`),
      el('span', { class: 'bar-track', 'aria-hidden': 'true' }, bar),
      el('span', { class: 'bar-val' }, `${count(c.users.estimate)} users`, el('span', { class: 'muted' }, ` (${span(c.users)}), ${count(c.impressions.estimate)} impressions`))));
  }
  box.append(list, el('p', { class: 'muted' },
    `In brackets: bounds at ${r.std_devs} standard deviations; the sketch keeps ${intFmt.format(r.retained)} users (theta ${r.theta.toPrecision(4)}) and scales them up.`));
  return box;
}

// downloadRaw fetches a sketch's stored bytes with the tab's token and
// hands them to the browser as a file.
async function downloadRaw(name, file) {
  try {
    const blob = await api('GET', `${sketchPath(name)}/raw`, undefined, { blob: true });
    const url = URL.createObjectURL(blob);
    const a = el('a', { href: url, download: file });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    showProblem(err);
  }
}

// psqlLine is one shell line that fetches the sketch as PostgreSQL's hex
// text and loads it as an hll value in psql. The token, if any, is named,
// never printed.
function psqlLine(name) {
  const url = `${location.origin}${sketchPath(name)}/raw?format=hex`;
  const auth = token() ? ' -H "Authorization: Bearer $SKETCHD_TOKEN"' : '';
  return `psql -v sketch="$(curl -sf${auth} '${url}')" <<< "SELECT hll_cardinality(:'sketch'::hll);"`;
}

async function cmsView(s) {
  const epsN = s.epsilon * s.total;
  const section = el('section', { class: 'detail' },
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, 'Count-Min sketch: how often each id appeared'),
    facts([
      ['Total count (N)', count(s.total), 'total'],
      ['Error bound', `an estimate overcounts by at most ε·N = ${epsN.toFixed(2)} with probability ${(1 - s.delta).toFixed(4)}; it never undercounts`],
      ['Parameters', `width ${s.width}, depth ${s.depth} (ε ${s.epsilon.toPrecision(3)}, δ ${s.delta.toPrecision(3)}), ${s.conservative ? 'conservative' : 'plain'} update, top-k ${s.topk || 'off'}`],
      ['Size', bytes(s.size_bytes)],
      ['Created', when(s.created_at)],
      ['Last update', when(s.updated_at)],
    ]));

  if (s.topk > 0) {
    const top = await api('GET', `${sketchPath(s.name)}/top?k=${Math.min(s.topk, 50)}`);
    section.append(el('h2', {}, 'Heaviest ids'), topBars(top.items, epsN));
  }

  const idInput = el('input', { id: 'freq-id', required: true, spellcheck: 'false', autocomplete: 'off', maxlength: 1000 });
  const typeSel = el('select', { id: 'freq-type' },
    el('option', { value: 'auto' }, 'a number is an int id'),
    el('option', { value: 'text' }, 'text'),
    el('option', { value: 'int' }, 'int'));
  const out = el('div', { id: 'freq-result', 'aria-live': 'polite' });
  const form = el('form', { class: 'inline' },
    el('label', { for: 'freq-id' }, 'Id'), idInput,
    el('label', { for: 'freq-type' }, 'as'), typeSel,
    el('button', { type: 'submit' }, 'How often?'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const id = idInput.value;
    let type = typeSel.value;
    if (type === 'auto') type = /^-?\d{1,19}$/.test(id) ? 'int' : 'text';
    try {
      const r = await api('GET', `${sketchPath(s.name)}/frequency?id=${encodeURIComponent(id)}&id_type=${type}`);
      const f = r.results[0];
      clearMessage();
      out.replaceChildren(facts([
        ['Estimate', count(f.estimate), 'freq-estimate'],
        ['True count', `between ${count(Math.max(0, f.estimate - f.error_bound))} and ${count(f.estimate)} with probability ${f.confidence.toFixed(4)} (ε·N = ${f.error_bound.toFixed(2)})`, 'freq-bound'],
      ]));
    } catch (err) {
      out.replaceChildren();
      showProblem(err);
    }
  });
  section.append(el('h2', {}, 'Look up an id'), form, out);
  return section;
}

// topBars draws heavy hitters as bars, each with the least its true
// count can be given the ε·N bound.
function topBars(items, epsN) {
  if (items.length === 0) return el('p', { class: 'muted' }, 'Nothing counted yet.');
  const max = Math.max(...items.map((i) => i.estimate));
  const list = el('ol', { class: 'bars', id: 'top' });
  for (const it of items) {
    const bar = el('span', { class: 'bar' });
    bar.style.width = `${(100 * it.estimate) / max}%`;
    list.append(el('li', {},
      el('span', { class: 'bar-id' }, String(it.id)),
      el('span', { class: 'bar-track', 'aria-hidden': 'true' }, bar),
      el('span', { class: 'bar-val' }, count(it.estimate), el('span', { class: 'muted' }, ` (≥ ${count(Math.max(0, it.estimate - epsN))})`))));
  }
  return el('div', {}, list, el('p', { class: 'muted' }, 'In brackets: the least the true count can be, given the ε·N bound.'));
}

// ---- series ----

// The lines of a daily series chart: the count of each day and the
// distinct counts over the trailing 7 and 30 days.
const LINES = [
  { window: 'P1D', label: 'day', cls: 'line-1' },
  { window: 'P7D', label: 'trailing 7 days', cls: 'line-7' },
  { window: 'P30D', label: 'trailing 30 days', cls: 'line-30' },
];

async function seriesView(name, q) {
  const s = await api('GET', seriesPath(name));
  const path = seriesPath(s.name);
  const section = el('section', { class: 'detail' },
    el('h1', {}, s.name),
    el('p', { class: 'muted' }, `${kindName(s.type)} series, buckets in ${s.tz}`),
    facts([
      ['Levels', s.levels.map((l) => `${l.level}: ${l.buckets} bucket${l.buckets === 1 ? '' : 's'}, kept ${l.retention}`).join('; ')],
      ['Late adds', `up to ${s.late_limit}`],
      ['Size', bytes(s.size_bytes)],
      ['Created', when(s.created_at, s.tz)],
    ]));
  const daily = s.levels.find((l) => l.level === 'day') || s.levels.find((l) => l.level === 'hour');
  if (!daily) {
    section.append(el('p', {}, 'This series keeps no hourly or daily buckets, so it has no daily chart.'));
    return section;
  }
  const newest = latest(s.levels.map((l) => l.newest));
  const lastDay = newest ? dayOf(newest, s.tz) : dayOf(new Date().toISOString(), s.tz);
  const to = q.get('to') || lastDay;
  const from = q.get('from') || addDays(to, -29);
  const fromInput = el('input', { id: 'range-from', type: 'date', value: from, required: true });
  const toInput = el('input', { id: 'range-to', type: 'date', value: to, required: true });
  const picker = el('form', { class: 'inline', id: 'range' },
    el('label', { for: 'range-from' }, 'From'), fromInput,
    el('label', { for: 'range-to' }, 'to (inclusive)'), toInput,
    el('button', { type: 'submit' }, 'Show'));
  picker.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = `#/series/${encodeURIComponent(s.name)}?from=${fromInput.value}&to=${toInput.value}`;
  });
  const distinct = s.type !== 'cms';
  section.append(el('h2', {}, distinct ? 'Distinct count per day' : 'Total count per day'), picker);
  if (!(from <= to)) throw new Problem(400, 'Bad range', 'the first day comes after the last one', '');
  const range = new URLSearchParams({ from: midnight(from, s.tz).toISOString(), to: midnight(addDays(to, 1), s.tz).toISOString(), step: 'P1D' });
  const lines = await Promise.all(LINES.map((l) => api('GET', `${path}/timeseries?${range}&window=${l.window}`).then((r) => ({ ...l, r }))));
  // The axis fits all lines, or one: at one line's own scale its error
  // band, often a percent or less of its value, is tall enough to see.
  const fitTo = el('select', { id: 'chart-fit' },
    el('option', { value: 'all' }, 'all lines'),
    LINES.map((l) => el('option', { value: l.window }, l.label)));
  let chart = seriesChart(s, lines, 'all');
  fitTo.addEventListener('change', () => {
    const next = seriesChart(s, lines, fitTo.value);
    chart.replaceWith(next);
    chart = next;
  });
  section.append(el('p', { class: 'inline' }, el('label', { for: 'chart-fit' }, 'Fit the axis to'), ' ', fitTo), chart);
  if (!distinct && s.params.topk > 0) {
    const rq = new URLSearchParams({ from: range.get('from'), to: range.get('to') });
    const [top, total] = await Promise.all([
      api('GET', `${path}/top?${rq}&k=${Math.min(s.params.topk, 50)}`),
      api('GET', `${path}/count?${rq}`),
    ]);
    section.append(el('h2', {}, `Heaviest ids, ${from} to ${to}`), topBars(top.items, s.params.epsilon * total.total));
  }
  const warnings = [...new Set(lines.flatMap((l) => l.r.warnings || []))];
  if (warnings.length) section.append(el('ul', { class: 'warnings', id: 'series-warnings' }, warnings.map((w) => el('li', {}, w))));
  return section;
}

// valueOf is a timeseries point's value and absolute error.
// Theta and frequency points give bounds at two standard deviations
// instead of a relative error.
function valueOf(p) {
  if (p.cardinality !== undefined && p.std_error === undefined && p.lower_bound !== undefined) {
    return { v: p.cardinality, e: (p.upper_bound - p.lower_bound) / 4 };
  }
  if (p.cardinality !== undefined) return { v: p.cardinality, e: p.cardinality * (p.std_error || 0) };
  return { v: p.total || 0, e: 0 };
}

// textWidth is the width of text at px pixels in the page's font, for
// margins that fit a chart's axis labels (an SVG cuts whatever reaches
// past its edge).
const measure = document.createElement('canvas').getContext('2d');
function textWidth(text, px) {
  measure.font = `${px}px ${getComputedStyle(document.body).fontFamily}`;
  return measure.measureText(text).width;
}

// tickPx is the size of a chart's axis text (.chart .tick in app.css).
const tickPx = (small) => (small ? 14 : 13);

function seriesChart(s, lines, fitTo) {
  // On a phone the drawing is narrower in its own units, so that its text
  // (13 units) stays readable once scaled to the screen.
  const small = narrow();
  const CW = small ? 420 : 900;
  const CH = small ? 400 : 360;
  const m = small ? { l: 52, r: 12, t: 16, b: 40 } : { l: 70, r: 20, t: 16, b: 46 };
  const n = lines[0].r.points.length;
  const fitted = fitTo === 'all' ? lines : lines.filter((l) => l.window === fitTo);
  const ends = fitted.flatMap((l) => l.r.points.map((p) => { const { v, e } = valueOf(p); return [Math.max(0, v - e), v + e]; }));
  const top = Math.max(1, ...ends.map((b) => b[1]));
  const bottom = Math.min(top, ...ends.map((b) => b[0]));
  // The axis spans the values, not 0 to the top, once they stay well
  // above zero: error bands of a percent or two are then tall enough to
  // see. Gridlines at round numbers: a step of 1, 2 or 5 × 10^k.
  const fromZero = bottom < top / 3;
  const span = fromZero ? top : Math.max(top - bottom, top * 0.02);
  const unit = 10 ** Math.floor(Math.log10(span / 4));
  const tick = [1, 2, 5, 10].map((f) => f * unit).find((t) => span / t <= 5);
  const min = fromZero ? 0 : Math.floor(bottom / tick) * tick;
  const max = Math.max(min + tick, Math.ceil(top / tick) * tick);
  // Room on the left for the widest number of the axis, and on the right
  // for half a date centred on the last day.
  const yTicks = [];
  for (let v = min; v <= max + tick / 2; v += tick) yTicks.push(v);
  const px = tickPx(small);
  m.l = Math.max(m.l, 12 + Math.max(...yTicks.map((v) => textWidth(count(v), px))));
  m.r = Math.max(m.r, 3 + textWidth('00-00', px) / 2);
  const x = (i) => m.l + (n <= 1 ? (CW - m.l - m.r) / 2 : (i * (CW - m.l - m.r)) / (n - 1));
  const y = (v) => CH - m.b - ((v - min) / (max - min)) * (CH - m.t - m.b);
  const root = svg('svg', { viewBox: `0 0 ${CW} ${CH}`, class: 'chart', id: 'series-chart', role: 'img', 'aria-labelledby': 'chart-title' },
    svg('title', { id: 'chart-title' }, `${s.name}: ${s.type === 'cms' ? 'total' : 'distinct'} count per day, and over the trailing 7 and 30 days`));
  // Grid and axes.
  for (const v of yTicks) {
    root.append(svg('line', { class: 'grid', x1: m.l, x2: CW - m.r, y1: y(v), y2: y(v) }),
      svg('text', { class: 'tick', x: m.l - 8, y: y(v) + 4, 'text-anchor': 'end' }, count(v)));
  }
  const every = Math.max(1, Math.ceil(n / (small ? 4 : 8)));
  // A day that has not ended yet (today) is still filling: marked, so
  // its lower value is not read as a drop.
  const lastPoint = lines[0].r.points[n - 1];
  if (lastPoint && new Date(lastPoint.end).getTime() > Date.now()) {
    const half = n <= 1 ? (CW - m.l - m.r) / 2 : (CW - m.l - m.r) / (n - 1) / 2;
    root.append(svg('rect', { class: 'partial', id: 'partial-day', x: x(n - 1) - half, y: m.t, width: half + m.r, height: CH - m.t - m.b },
      svg('title', {}, `${dayOf(lastPoint.start, s.tz)} is not over yet: its counts so far`)),
    svg('text', { class: 'tick partial-label', x: x(n - 1) - 4, y: m.t + 12, 'text-anchor': 'end' }, 'so far'));
  }
  lines[0].r.points.forEach((p, i) => {
    if (i % every === 0 || (i === n - 1 && i % every > every / 2)) {
      root.append(svg('text', { class: 'tick', x: x(i), y: CH - m.b + 20, 'text-anchor': 'middle' }, dayOf(p.start, s.tz).slice(5)));
    }
  });
  // Lines beyond an axis fitted to another one are cut at the plot's edge.
  const plot = svg('g', { 'clip-path': 'url(#plot-area)' });
  root.append(svg('defs', {}, svg('clipPath', { id: 'plot-area' }, svg('rect', { x: m.l - 4, y: m.t - 4, width: CW - m.l - m.r + 8, height: CH - m.t - m.b + 8 }))), plot);
  for (const l of lines) {
    const pts = l.r.points.map((p, i) => ({ i, ...valueOf(p) }));
    if (pts.some((p) => p.e > 0)) {
      const upper = pts.map((p) => `${x(p.i)},${y(p.v + p.e)}`);
      const lower = pts.slice().reverse().map((p) => `${x(p.i)},${y(Math.max(0, p.v - p.e))}`);
      plot.append(svg('polygon', { class: `band ${l.cls}`, points: [...upper, ...lower].join(' '), 'data-window': l.window }));
    }
    plot.append(svg('polyline', { class: `line ${l.cls}`, points: pts.map((p) => `${x(p.i)},${y(p.v)}`).join(' '), 'data-window': l.window },
      svg('title', {}, l.label)));
    for (const p of pts) {
      plot.append(svg('circle', { class: `dot ${l.cls}`, cx: x(p.i), cy: y(p.v), r: 2.5 },
        svg('title', {}, `${l.label} to ${dayOf(l.r.points[p.i].start, s.tz)}: ${count(p.v)}${p.e ? ` ± ${count(p.e)}` : ''}`)));
    }
  }
  const last = lines.map((l) => {
    const p = l.r.points[l.r.points.length - 1];
    if (!p) return null;
    const { v, e } = valueOf(p);
    return [`Last ${l.label}`, `${count(v)}${e ? ` ± ${count(e)}` : ''}`, `last-${l.window}`];
  });
  const key = (cls, text) => el('li', {}, svg('svg', { viewBox: '0 0 24 12', width: 24, height: 12, 'aria-hidden': 'true' }, svg('line', { class: `line ${cls}`, x1: 0, x2: 24, y1: 6, y2: 6 })), text);
  const widest = Math.max(0, ...lines.flatMap((l) => l.r.points.map((p) => { const { v, e } = valueOf(p); return v > 0 ? e / v : 0; })));
  return el('figure', { class: 'chart-figure' }, root,
    el('figcaption', {}, el('ul', { class: 'legend' }, lines.map((l) => key(l.cls, l.label)),
      s.type !== 'cms' ? el('li', { id: 'band-note' }, `bands: ± one standard error (at most ± ${pct(widest)} here)`) : null,
      !fromZero ? el('li', {}, `the axis starts at ${count(min)}`) : null), facts(last.filter(Boolean))));
}

// ---- overlap ----

const COLORS = ['a', 'b', 'c'];

const DAY = /^\d{4}-\d{2}-\d{2}$/;

// An overlap operand in the route is a sketch name, or a series range
// written ~name/first-day/last-day (days inclusive, in the series' time
// zone); '~' and '/' cannot occur in names.
function parseOperand(v) {
  if (!v.startsWith('~')) return { kind: 'sketch', name: v };
  const [name = '', from = '', to = ''] = v.slice(1).split('/');
  return { kind: 'series', name, from, to };
}

// resolveOperand fetches what the drawing needs of an operand: a label,
// the estimate and its relative error, and the operand as the
// intersection route takes it.
async function resolveOperand(v) {
  const o = parseOperand(v);
  if (o.kind === 'sketch') {
    const s = await api('GET', sketchPath(o.name));
    if (!distinct(s.type)) {
      throw new Problem(400, 'Not a distinct count', `${s.name} is a ${kindName(s.type)} sketch; overlaps need HyperLogLog, theta, DataSketches HLL, CPC, ZetaSketch HLL++ or Trino HyperLogLog sketches.`, '');
    }
    return { ...s, op: s.name };
  }
  if (!o.name || !DAY.test(o.from) || !DAY.test(o.to) || o.from > o.to) {
    throw new Problem(400, 'Bad range', `“${v}” is not a series range: give a series and its first and last day.`, '');
  }
  const sr = await api('GET', seriesPath(o.name));
  if (!distinct(sr.type)) {
    throw new Problem(400, 'Not a distinct count', `${sr.name} is a ${kindName(sr.type)} series; overlaps need HyperLogLog, theta, DataSketches HLL, CPC, ZetaSketch HLL++ or Trino HyperLogLog.`, '');
  }
  const op = { series: sr.name, from: midnight(o.from, sr.tz).toISOString(), to: midnight(addDays(o.to, 1), sr.tz).toISOString() };
  const c = await api('GET', `${seriesPath(sr.name)}/count?${new URLSearchParams({ from: op.from, to: op.to })}`);
  const { v: est, e: err } = valueOf(c);
  return { name: `${sr.name} ${o.from}–${o.to}`, type: sr.type, cardinality: est, std_error: est > 0 ? err / est : 0, op };
}

async function overlapView(values) {
  values = values.filter(Boolean).slice(0, 3);
  const section = el('section', { class: 'overlap' }, el('h1', {}, 'Overlap'));
  const [list, seriesPage] = await Promise.all([
    api('GET', '/v1/sketches?limit=1000'),
    api('GET', '/v1/series?limit=1000').catch((err) => {
      if (err instanceof Problem && (err.status === 501 || err.status === 404)) return { series: [] };
      throw err;
    }),
  ]);
  const hlls = list.sketches.filter((s) => distinct(s.type)).map((s) => s.name);
  const seriesNames = seriesPage.series.filter((s) => distinct(s.type)).map((s) => s.name);
  const fields = ['a', 'b', 'c'].map((id, i) => {
    const o = values[i] ? parseOperand(values[i]) : { kind: 'sketch', name: '' };
    const kind = el('select', { id: `kind-${id}`, 'aria-label': `Set ${id.toUpperCase()} is a` },
      el('option', { value: 'sketch', selected: o.kind === 'sketch' }, 'sketch'),
      seriesNames.length || o.kind === 'series' ? el('option', { value: 'series', selected: o.kind === 'series' }, 'series range') : null);
    const name = el('input', {
      id: `set-${id}`, list: o.kind === 'series' ? 'series-names' : 'hll-names', value: o.name, spellcheck: 'false', autocomplete: 'off',
      maxlength: 200, required: i < 2, placeholder: i < 2 ? 'name' : 'optional',
    });
    const from = el('input', { id: `from-${id}`, type: 'date', value: o.from || '', 'aria-label': `Set ${id.toUpperCase()} first day` });
    const to = el('input', { id: `to-${id}`, type: 'date', value: o.to || '', 'aria-label': `Set ${id.toUpperCase()} last day` });
    const range = el('span', { class: 'range', hidden: o.kind !== 'series' }, from, ' to ', to);
    kind.addEventListener('change', () => {
      range.hidden = kind.value !== 'series';
      name.setAttribute('list', kind.value === 'series' ? 'series-names' : 'hll-names');
    });
    const value = () => {
      const n = name.value.trim();
      if (!n) return '';
      return kind.value === 'series' ? `~${n}/${from.value}/${to.value}` : n;
    };
    const problem = el('span', { class: 'field-error', id: `err-${id}`, hidden: true });
    // A mistake is shown beside its set, which stays as typed.
    const mark = (text) => {
      problem.textContent = text;
      problem.hidden = false;
      name.setAttribute('aria-invalid', 'true');
      name.setAttribute('aria-describedby', problem.id);
    };
    return {
      el: el('div', { class: 'field' }, el('label', { for: name.id }, `Set ${id.toUpperCase()}`), el('span', { class: 'operand' }, kind, name), range, problem),
      value, mark, input: name,
    };
  });
  const form = el('form', { class: 'pick' },
    el('datalist', { id: 'hll-names' }, hlls.map((n) => el('option', { value: n }))),
    el('datalist', { id: 'series-names' }, seriesNames.map((n) => el('option', { value: n }))),
    fields.map((f) => f.el),
    el('button', { type: 'submit' }, 'Compare'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const picked = fields.map((f) => f.value()).filter(Boolean);
    location.hash = `#/overlap?${picked.map((v) => `s=${encodeURIComponent(v)}`).join('&')}`;
  });
  const formError = el('div', { class: 'form-error', id: 'overlap-error', role: 'alert', hidden: true });
  section.append(el('p', { class: 'muted' }, 'Pick two or three distinct-count sketches (HyperLogLog, theta, DataSketches HLL, CPC, ZetaSketch HLL++ or Trino HyperLogLog), or series ranges. Circle areas are proportional to the estimates; the rings span ± one standard error.'), form, formError);
  if (values.length < 2) return section;

  // A set that cannot be read, or is of another kind than set A, is
  // marked in the form; the form stays, so it can be fixed in place.
  const settled = await Promise.allSettled(values.map(resolveOperand));
  let bad = false;
  settled.forEach((r, i) => {
    if (r.status === 'rejected') {
      if (!(r.reason instanceof Problem)) throw r.reason;
      fields[i].mark(r.reason.status === 404 ? `No such ${parseOperand(values[i]).kind}: ${r.reason.detail}` : r.reason.detail);
      bad = true;
    }
  });
  if (!bad) {
    const kinds = settled.map((r) => r.value.type);
    kinds.forEach((k, i) => {
      if (k !== kinds[0]) {
        fields[i].mark(`This is a ${kindName(k)} sketch and set A a ${kindName(kinds[0])} one: an overlap compares sketches of one kind.`);
        bad = true;
      }
    });
  }
  if (bad) {
    formError.replaceChildren(el('strong', {}, 'Fix the marked set and compare again.'));
    formError.hidden = false;
    const first = fields.find((f) => f.input.getAttribute('aria-invalid') === 'true');
    if (first) first.input.focus({ preventScroll: true });
    return section;
  }
  const sets = settled.map((r) => r.value);
  const ops = sets.map((s) => s.op);
  let x;
  let pairs = [];
  try {
    x = await api('POST', '/v1/intersection', { sketches: ops });
    if (sets.length === 3) {
      pairs = await Promise.all([[0, 1], [0, 2], [1, 2]].map(([i, j]) => api('POST', '/v1/intersection', { sketches: [ops[i], ops[j]] })));
    }
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    formError.replaceChildren(el('strong', {}, `${err.status} ${err.title}.`), ' ', err.detail);
    formError.hidden = false;
    return section;
  }
  const result = el('div', { class: 'result' });
  if (sets.length === 2) {
    result.append(vennTwo(sets, x), numbersTwo(sets, x));
  } else {
    const drawn = vennThree(sets, x, pairs);
    result.append(drawn.figure, numbersThree(sets, x, pairs, drawn.layout), pairsTable(sets, pairs));
  }
  // POST /v1/overlap counts the kinds with HLL registers; theta and cpc
  // have no regions.
  if (overlapKinds.includes(sets[0].type)) result.append(regionsTable(sets, await api('POST', '/v1/overlap', { sketches: ops })));
  section.append(result);
  return section;
}

// overlapKinds are the kinds POST /v1/overlap counts (all sets are of
// one kind here).
const overlapKinds = ['hll', 'ds_hll', 'zeta_hll', 'airlift_hll'];

// fit returns a transform from layout units to a w×h viewBox with margin.
function fit(circles, w, h, margin) {
  const minX = Math.min(...circles.map((c) => c.x - c.r));
  const maxX = Math.max(...circles.map((c) => c.x + c.r));
  const minY = Math.min(...circles.map((c) => c.y - c.r));
  const maxY = Math.max(...circles.map((c) => c.y + c.r));
  const k = Math.min((w - 2 * margin) / (maxX - minX || 1), (h - 2 * margin) / (maxY - minY || 1));
  const ox = (w - k * (maxX - minX)) / 2 - k * minX;
  const oy = (h - k * (maxY - minY)) / 2 - k * minY;
  return (c) => ({ x: ox + k * c.x, y: oy + k * c.y, r: k * c.r, k });
}

// ringsAndCircles draws each set: its error ring (the band between the
// circles of areas estimate − error and estimate + error) and its circle.
function setShapes(sets, placed, scaleK) {
  const g = svg('g', { class: 'sets' });
  sets.forEach((s, i) => {
    const { value, error } = estimateOf(s);
    const c = placed[i];
    const rLo = radius(Math.max(0, value - error)) * scaleK;
    const rHi = radius(value + error) * scaleK;
    if (rHi - rLo > 0) {
      g.append(svg('circle', { class: `ring ring-${COLORS[i]}`, cx: c.x, cy: c.y, r: (rLo + rHi) / 2, 'stroke-width': Math.max(rHi - rLo, 0.5) },
        svg('title', {}, `${s.name}: ${count(value - error)} to ${count(value + error)}`)));
    }
    g.append(svg('circle', { class: `set set-${COLORS[i]}`, cx: c.x, cy: c.y, r: c.r, 'data-name': s.name },
      svg('title', {}, `${s.name}: ${count(value)} ± ${count(error)}`)));
  });
  return g;
}

// labelFor names a set beside its circle: above it, or below when below
// is asked for or there is no room above; dir −1 aligns the label with the
// circle's left edge, +1 with its right edge, 0 centres it.
function labelFor(s, c, dir, i, below = false) {
  const name = s.name.length > 32 ? `${s.name.slice(0, 31)}…` : s.name;
  const y = !below && c.y - c.r - 10 > 14 ? c.y - c.r - 10 : c.y + c.r + 22;
  const anchor = dir < 0 ? 'start' : dir > 0 ? 'end' : 'middle';
  const x = dir < 0 ? Math.max(4, c.x - c.r) : dir > 0 ? Math.min(W - 4, c.x + c.r) : c.x;
  return svg('text', { class: `label label-${COLORS[i]}`, x, y, 'text-anchor': anchor }, `${name} · ${count(estimateOf(s).value)}`);
}

const W = 640;
const H = 420;

function vennTwo(sets, x) {
  const [a, b] = sets.map((s) => estimateOf(s).value);
  // A spurious answer is drawn at its upper bound, dashed and unfilled:
  // the overlap may be anything from none to that.
  const target = x.spurious ? x.upper : x.estimate;
  const layout = layoutTwo(a, b, Math.min(target, Math.min(a, b)));
  const ext = sets.map((s, i) => ({ ...layout[i], r: radius(estimateOf(s).value + estimateOf(s).error) }));
  const tf = fit(ext, W, H, 36);
  const placed = layout.map(tf);
  const k = placed[0].k;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'venn-title', id: 'venn', class: 'venn' },
    svg('title', { id: 'venn-title' }, `Overlap of ${sets[0].name} and ${sets[1].name}: ${x.spurious ? 'spurious' : count(x.estimate)}`),
    setShapes(sets, placed, k));
  const lens = lensPath(placed[0], placed[1]);
  if (lens && x.spurious) {
    root.append(svg('path', { class: 'lens lens-spurious', d: lens.d }, svg('title', {}, `spurious: somewhere between 0 and ${count(x.upper)}`)));
    root.append(svg('text', { class: 'lens-note', x: lens.cx, y: lens.cy, 'text-anchor': 'middle' }, 'spurious'));
  } else if (x.spurious) {
    root.append(svg('text', { class: 'lens-note', x: W / 2, y: H - 12, 'text-anchor': 'middle' }, 'spurious: no overlap can be told apart'));
  } else if (lens) {
    const band = (v, cls) => {
      const s = Math.sqrt(Math.max(0, v) / Math.max(x.estimate, 1e-12));
      return svg('path', {
        class: cls, d: lens.d, 'vector-effect': 'non-scaling-stroke',
        transform: `translate(${lens.cx} ${lens.cy}) scale(${s}) translate(${-lens.cx} ${-lens.cy})`,
      });
    };
    root.append(
      band(x.upper, 'lens lens-upper'),
      svg('path', { class: 'lens lens-estimate', d: lens.d }, svg('title', {}, `${count(x.estimate)} ± ${count(x.error)}`)),
      x.lower > 0 ? band(x.lower, 'lens lens-lower') : null,
      svg('text', { class: 'lens-label', x: lens.cx, y: lens.cy, 'text-anchor': 'middle', 'dominant-baseline': 'middle' }, `${count(x.estimate)} ± ${count(x.error)}`));
  }
  // A's name above on the left, B's below on the right: long names
  // cannot collide.
  root.append(labelFor(sets[0], placed[0], -1, 0), labelFor(sets[1], placed[1], 1, 1, true));
  return el('figure', { class: 'venn-figure' }, root, legend(sets, !x.spurious));
}

function legend(sets, band) {
  const item = (cls, text) => el('li', {}, svg('svg', { viewBox: '0 0 16 16', width: 16, height: 16, 'aria-hidden': 'true' }, svg('rect', { class: cls, x: 1, y: 1, width: 14, height: 14, rx: 3 })), text);
  return el('figcaption', {}, el('ul', { class: 'legend' },
    sets.map((s, i) => item(`set set-${COLORS[i]}`, s.name)),
    item('ring ring-legend', 'ring: estimate ± one standard error'),
    band ? item('lens lens-upper', 'lens band: lower to upper bound (the lens is the estimate)') : null));
}

// regionsTable lists every region of the diagram (users in exactly these
// sets) with the API's count, error, bounds and verdict (POST /v1/overlap).
function regionsTable(sets, o) {
  const nameOf = new Map(o.only_here.map((f, i) => [f.operand, sets[i].name]));
  // Each name is a span of its own, so that a narrow screen breaks the
  // label between names (or, for a name longer than the line, inside
  // it), never "camp aign:s pring".
  const nm = (n) => el('span', { class: 'region-name' }, n);
  const join = (names, word) => names.flatMap((n, i) => (i ? [` ${word} `, nm(n)] : [nm(n)]));
  const label = (operands) => {
    const names = operands.map((op) => nameOf.get(op) || op);
    if (names.length === 1) return ['only ', nm(names[0])];
    if (names.length === sets.length) return names.length === 2 ? 'both' : 'all three';
    return [...join(names, 'and'), ', not ', ...join(sets.map((s) => s.name).filter((n) => !names.includes(n)), 'or')];
  };
  const rows = (o.regions || []).map((r) => el('tr', { 'data-operands': r.operands.join('|') },
    el('th', { scope: 'row' }, label(r.operands)),
    el('td', { class: 'num region-estimate', 'data-label': 'Users' }, `${count(r.estimate)} ± ${count(r.error)}`),
    el('td', { class: 'num region-bounds', 'data-label': 'Bounds' }, `${count(r.lower)} – ${count(r.upper)}`),
    el('td', { class: 'region-verdict', 'data-verdict': r.verdict, 'data-label': 'Verdict' }, verdictLabel(r.verdict))));
  return el('div', { class: 'regions', id: 'regions' },
    el('h2', {}, 'Regions'),
    el('p', { class: 'muted', id: 'regions-method' }, o.sets === 2
      ? `Users in exactly these sets, each with its error (one standard deviation), bounds and verdict, by the same estimator as the numbers above (${methodName(o.method)}).`
      : `Users in exactly these sets, counted from unions of the sketches (${methodName(o.method)}), each with its error (one standard deviation), bounds and verdict.`),
    el('div', { class: 'table-wrap' }, el('table', { class: 'regions' },
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Region'), el('th', { scope: 'col', class: 'num' }, 'Users'),
        el('th', { scope: 'col', class: 'num' }, 'Bounds'), el('th', { scope: 'col' }, 'Verdict'))),
      el('tbody', {}, rows))));
}

// verdict shows the API's verdict and its words as they are: the page
// decides nothing about how far an answer can be trusted.
function verdict(x) {
  const items = (x.warnings || []).map((w) => el('li', {}, w));
  return el('div', { class: `verdict ${x.verdict}`, id: 'verdict', 'data-verdict': x.verdict }, el('p', {}, x.verdict_text),
    items.length ? el('ul', { class: 'warnings', id: 'warnings' }, items) : null);
}

// verdictLabel names a verdict in a table cell.
function verdictLabel(v) {
  return String(v).replace('_', ' ');
}

function methodText(x) {
  if (x.lg_k !== undefined) return `theta (DataSketches), lg_k ${x.lg_k}, ${intFmt.format(x.retained)} hashes in the intersection`;
  return `${methodName(x.method)}, log2m ${x.log2m}`;
}

// methodName names an estimator of the API's answers for people.
function methodName(m) {
  return m === 'mle' ? 'maximum likelihood' : 'inclusion–exclusion';
}

function numbersTwo(sets, x) {
  const [a, b] = sets.map((s) => s.name);
  // HLL answers give each with its error; theta answers also its bounds.
  const show = (f) => (v) => {
    if (!v) return '—';
    const bounds = v.lower !== undefined ? ` (${f(v.lower)}–${f(v.upper)})` : '';
    return `${f(v.estimate)}${v.error !== undefined ? ` ± ${f(v.error)}` : ''}${bounds}`;
  };
  const pm = show(frac);
  const pmCount = show(count);
  return el('div', { class: 'numbers' },
    verdict(x),
    facts([
      [`|${a} ∩ ${b}|`, count(x.estimate), 'ov-estimate'],
      ['Error (Δ)', `± ${count(x.error)}`, 'ov-error'],
      ['Lower bound', count(x.lower), 'ov-lower'],
      ['Upper bound', count(x.upper), 'ov-upper'],
      ['Jaccard', pm(x.jaccard), 'ov-jaccard'],
      [`${a} \\ ${b}`, pmCount(x.a_not_b), 'ov-a-not-b'],
      [`${b} \\ ${a}`, pmCount(x.b_not_a), 'ov-b-not-a'],
      ['Share of the smaller set', pct(x.overlap)],
      ['Size ratio', `${x.cardinality_ratio.toFixed(1)} : 1`],
      ['Method', methodText(x)],
    ]));
}

function vennThree(sets, x, pairs) {
  const areas = sets.map((s) => estimateOf(s).value);
  const layout = layoutThree(areas, pairs.map((p) => p.estimate), x.estimate);
  const ext = layout.circles.map((c, i) => ({ ...c, r: radius(areas[i] + estimateOf(sets[i]).error) }));
  const tf = fit(ext, W, H, 36);
  const placed = layout.circles.map(tf);
  const k = placed[0].k;
  const clipB = svg('clipPath', { id: 'clip-b' }, svg('circle', { cx: placed[1].x, cy: placed[1].y, r: placed[1].r }));
  const clipC = svg('clipPath', { id: 'clip-c' }, svg('circle', { cx: placed[2].x, cy: placed[2].y, r: placed[2].r }));
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'venn-title', id: 'venn', class: 'venn' },
    svg('title', { id: 'venn-title' }, `Overlap of ${sets.map((s) => s.name).join(', ')}`),
    svg('defs', {}, clipB, clipC),
    setShapes(sets, placed, k));
  [[0, 1], [0, 2], [1, 2]].forEach(([i, j], n) => {
    const lens = lensPath(placed[i], placed[j]);
    // The translucent circles show each pair's overlap; only a spurious
    // pair is marked, so it is not read as a confident one.
    if (lens && pairs[n].spurious) root.append(svg('path', { class: 'lens lens-spurious', d: lens.d }));
  });
  if (!x.spurious) {
    root.append(svg('g', { 'clip-path': 'url(#clip-b)' },
      svg('circle', { class: 'lens lens-estimate triple', cx: placed[0].x, cy: placed[0].y, r: placed[0].r, 'clip-path': 'url(#clip-c)' })));
  }
  const center = { x: (placed[0].x + placed[1].x + placed[2].x) / 3, y: (placed[0].y + placed[1].y + placed[2].y) / 3 };
  if (x.spurious) {
    root.append(svg('text', { class: 'lens-note', x: center.x, y: center.y, 'text-anchor': 'middle' }, 'spurious'));
  } else {
    // The region common to all three carries its number, at the point
    // deepest inside all three circles.
    const p = deepestPoint(placed);
    root.append(svg('g', {}, svg('title', {}, `in all three: ${count(x.estimate)} ± ${count(x.error)}`),
      svg('text', { class: 'lens-label triple-label', id: 'triple-label', x: p.x, y: p.y, 'text-anchor': 'middle', 'dominant-baseline': 'middle' }, count(x.estimate))));
  }
  const boxes = placeLabels(sets, placed, center);
  boxes.forEach((b, i) => root.append(svg('text', { class: `label label-${COLORS[i]}`, x: b.tx, y: b.ty, 'text-anchor': b.anchor }, b.text)));
  // The drawing grows to hold labels pushed beyond it.
  const minX = Math.min(0, ...boxes.map((b) => b.x - 4));
  const minY = Math.min(0, ...boxes.map((b) => b.y - 4));
  const maxX = Math.max(W, ...boxes.map((b) => b.x + b.w + 4));
  const maxY = Math.max(H, ...boxes.map((b) => b.y + b.h + 4));
  root.setAttribute('viewBox', `${minX} ${minY} ${maxX - minX} ${maxY - minY}`);
  return { figure: el('figure', { class: 'venn-figure' }, root, legend(sets, false)), layout };
}

// narrow says the page is laid out for a phone (app.css's breakpoint),
// where the drawing's text is larger in drawing units.
const narrow = () => window.matchMedia('(max-width: 640px)').matches;

// deepestPoint is the point that lies deepest inside all the circles
// (the largest least margin to their edges), found on a grid over the
// smallest circle.
function deepestPoint(cs) {
  const s = cs.reduce((a, c) => (c.r < a.r ? c : a));
  let best = { x: s.x, y: s.y, m: -Infinity };
  for (let i = 0; i <= 60; i++) {
    for (let j = 0; j <= 60; j++) {
      const x = s.x - s.r + (2 * s.r * i) / 60;
      const y = s.y - s.r + (2 * s.r * j) / 60;
      const m = Math.min(...cs.map((c) => c.r - Math.hypot(x - c.x, y - c.y)));
      if (m > best.m) best = { x, y, m };
    }
  }
  return best;
}

// placeLabels puts each set's name and estimate above or below its
// circle (the drawing fills its width, so never beside it): below for a
// circle below the middle, above for one above it; circles side by side
// take turns. Labels that would overlap are moved further out, and the
// drawing grows to hold them. Text widths are estimated from the font
// size (0.62 em a character, generous for the page's sans-serif).
function placeLabels(sets, placed, center) {
  const fs = narrow() ? 24 : 15;
  const max = narrow() ? 18 : 32;
  const order = placed.map((c, i) => i).sort((i, j) => placed[i].x - placed[j].x);
  const boxes = sets.map((s, i) => {
    const c = placed[i];
    const name = s.name.length > max ? `${s.name.slice(0, max - 1)}…` : s.name;
    const text = `${name} · ${count(estimateOf(s).value)}`;
    const w = text.length * fs * 0.62;
    const h = fs * 1.25;
    const dy = c.y - center.y;
    const up = Math.abs(dy) > 0.3 * c.r ? dy < 0 : order.indexOf(i) % 2 === 0;
    const x = Math.min(Math.max(4, c.x - w / 2), Math.max(4, W - 4 - w));
    const y = up ? c.y - c.r - 6 - h : c.y + c.r + 6;
    return { text, x, y, w, h, up };
  });
  const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  for (let round = 0; round < 10; round++) {
    let moved = false;
    for (let i = 0; i < boxes.length; i++) {
      for (let j = 0; j < i; j++) {
        const a = boxes[j];
        const b = boxes[i];
        if (!overlap(a, b)) continue;
        b.y = b.up ? a.y - b.h - 2 : a.y + a.h + 2;
        moved = true;
      }
    }
    if (!moved) break;
  }
  for (const b of boxes) {
    b.anchor = 'middle';
    b.tx = b.x + b.w / 2;
    b.ty = b.y + b.h * 0.78;
  }
  return boxes;
}

// pairsTable is the three pairs' intersections, each with its bounds
// and verdict. It spans the width of the result, under the drawing and
// the numbers: beside them two long names, the bounds and the verdict do
// not fit, and the verdict was scrolled out of sight.
function pairsTable(sets, pairs) {
  const n = sets.map((s) => s.name);
  const rows = [[0, 1], [0, 2], [1, 2]].map(([i, j], k) => el('tr', {},
    el('th', { scope: 'row' }, el('span', { class: 'pair-name' }, n[i]), ' ∩ ', el('span', { class: 'pair-name' }, n[j])),
    el('td', { class: 'num', 'data-label': 'Estimate' }, count(pairs[k].estimate)),
    el('td', { class: 'num', 'data-label': 'Bounds' }, `${count(pairs[k].lower)} – ${count(pairs[k].upper)}`),
    el('td', { class: 'pair-verdict', 'data-verdict': pairs[k].verdict, 'data-label': 'Verdict' }, verdictLabel(pairs[k].verdict))));
  return el('div', { class: 'pairs-block' },
    el('h2', {}, 'Pairs'),
    el('div', { class: 'table-wrap' }, el('table', { class: 'pairs' },
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Pair'), el('th', { scope: 'col', class: 'num' }, 'Estimate'), el('th', { scope: 'col', class: 'num' }, 'Bounds'), el('th', { scope: 'col' }, 'Verdict'))),
      el('tbody', {}, rows))));
}

function numbersThree(sets, x, pairs, layout) {
  const n = sets.map((s) => s.name);
  return el('div', { class: 'numbers' },
    verdict(x),
    facts([
      [`|${n.join(' ∩ ')}|`, count(x.estimate), 'ov-estimate'],
      ['Error (Δ)', `± ${count(x.error)}`, 'ov-error'],
      ['Lower bound', count(x.lower), 'ov-lower'],
      ['Upper bound', count(x.upper), 'ov-upper'],
      ['Share of the smallest set', pct(x.overlap)],
      ['Method', methodText(x)],
    ]),
    el('p', { class: 'layout-error', id: 'layout-error', 'data-error': layout.error.toFixed(6) },
      `Drawing error: three circles cannot always show every overlap exactly. The pairwise overlaps are drawn within ${pct(layout.pairError)}, the region common to all three within ${pct(layout.triple.error)}, of the smallest circle's area.`));
}

// ---- most overlapping (POST /v1/rank) ----

// RANK_BY are the measures a rank orders candidates by, as the form
// offers them: by (and direction) as the API takes them, and how a value
// of each is written.
const RANK_BY = [
  { value: 'intersection', by: 'intersection', label: 'shared users', formula: '|T ∩ C|', fmt: count },
  { value: 'jaccard', by: 'jaccard', label: 'Jaccard index', formula: '|T ∩ C| / |T ∪ C|', fmt: (x) => x.toFixed(4) },
  { value: 'target_in_candidate', by: 'containment', direction: 'target_in_candidate', label: 'share of the target in each', formula: '|T ∩ C| / |T|', fmt: pct },
  { value: 'candidate_in_target', by: 'containment', direction: 'candidate_in_target', label: 'share of each in the target', formula: '|T ∩ C| / |C|', fmt: pct },
];

// rankOperand turns a target or candidate as the route writes it (a
// sketch name, or ~series/first-day/last-day) into the API's operand.
async function rankOperand(v) {
  const o = parseOperand(v);
  if (o.kind === 'sketch') return o.name;
  if (!o.name || !DAY.test(o.from) || !DAY.test(o.to) || o.from > o.to) {
    throw new Problem(400, 'Bad range', `“${v}” is not a series range: give ~series/first-day/last-day.`, '');
  }
  const sr = await api('GET', seriesPath(o.name));
  return { series: sr.name, from: midnight(o.from, sr.tz).toISOString(), to: midnight(addDays(o.to, 1), sr.tz).toISOString() };
}

// rankView ranks candidates (a name prefix, or a list of names and series
// ranges) by their overlap with a target, as POST /v1/rank answers: each
// result with its bounds drawn on one scale, its verdict, and a mark where
// it cannot be told apart from the next one.
async function rankView(q) {
  const target = q.get('target') || '';
  const names = q.getAll('c').filter(Boolean);
  const listMode = names.length > 0;
  // Without a prefix, the target's own: followers:alice suggests
  // followers:.
  const prefix = q.has('prefix') ? q.get('prefix') : target.includes(':') && !target.startsWith('~') ? target.slice(0, target.lastIndexOf(':') + 1) : '';
  // The measure as the route names it goes to the API as it is: one it
  // does not take is its to refuse (the form shows the first).
  const byParam = q.get('by') || 'intersection';
  const direction = q.get('direction') || '';
  const by = RANK_BY.find((b) => b.value === (byParam === 'containment' ? direction : byParam)) || RANK_BY[0];
  const top = q.get('top') || '10';
  const section = el('section', { class: 'detail rank' }, el('h1', {}, 'Most overlapping'));
  const list = await api('GET', '/v1/sketches?limit=1000').catch(() => ({ sketches: [] }));
  const targetInput = el('input', { id: 'rank-target', value: target, required: true, spellcheck: 'false', autocomplete: 'off', maxlength: 200, list: 'rank-names', placeholder: 'a sketch, or ~series/first-day/last-day' });
  const mode = el('select', { id: 'rank-mode' },
    el('option', { value: 'prefix', selected: !listMode }, 'whose names start with'),
    el('option', { value: 'list', selected: listMode }, 'named here, one a line'));
  const prefixInput = el('input', { id: 'rank-prefix', value: prefix, spellcheck: 'false', autocomplete: 'off', maxlength: 200, 'aria-label': 'Name prefix of the candidates' });
  const namesInput = el('textarea', { id: 'rank-list', rows: '4', spellcheck: 'false', 'aria-label': 'Candidates, one a line: a sketch name, or ~series/first-day/last-day' }, names.join('\n'));
  const showMode = () => {
    prefixInput.hidden = mode.value !== 'prefix';
    namesInput.hidden = mode.value !== 'list';
  };
  mode.addEventListener('change', showMode);
  showMode();
  const bySelect = el('select', { id: 'rank-by' }, RANK_BY.map((b) => el('option', { value: b.value, selected: b === by }, b.label)));
  const topInput = el('input', { id: 'rank-top', type: 'number', min: '1', max: '1000', value: top, required: true });
  const form = el('form', { class: 'rank-form', id: 'rank-form' },
    el('datalist', { id: 'rank-names' }, list.sketches.filter((s) => distinct(s.type)).map((s) => el('option', { value: s.name }))),
    el('div', { class: 'field' }, el('label', { for: 'rank-target' }, 'Target'), targetInput),
    el('div', { class: 'field field-wide' }, el('label', { for: 'rank-mode' }, 'Candidates'), el('span', { class: 'operand' }, mode, prefixInput), namesInput),
    el('div', { class: 'field' }, el('label', { for: 'rank-by' }, 'Rank by'), bySelect),
    el('div', { class: 'field' }, el('label', { for: 'rank-top' }, 'Show the top'), topInput),
    el('button', { type: 'submit' }, 'Rank'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const b = RANK_BY.find((x) => x.value === bySelect.value) || RANK_BY[0];
    const p = new URLSearchParams({ target: targetInput.value.trim() });
    if (mode.value === 'list') {
      for (const n of namesInput.value.split('\n').map((x) => x.trim()).filter(Boolean)) p.append('c', n);
    } else {
      p.set('prefix', prefixInput.value.trim());
    }
    p.set('by', b.by);
    if (b.direction) p.set('direction', b.direction);
    p.set('top', topInput.value);
    location.hash = `#/rank?${p}`;
  });
  const formError = el('div', { class: 'form-error', id: 'rank-error', role: 'alert', hidden: true });
  section.append(el('p', { class: 'muted' },
    'Which sketches overlap most with a target, and can the order be trusted? Each candidate is compared with the target by the estimator of an overlap of two; bars span each result\'s bounds on one scale, and results whose bounds overlap the next one\'s are marked: their order is not known.'),
  form, formError);
  if (!target || (!listMode && !q.has('prefix'))) return section;

  // The API's refusals are shown as it words them, beside the form kept
  // as typed.
  const refuse = (err) => {
    if (!(err instanceof Problem)) throw err;
    const detail = err.detail && !/[.!?]$/.test(err.detail) ? `${err.detail}.` : err.detail;
    formError.replaceChildren(el('strong', { class: 'status' }, err.status ? `${err.status} ${err.title}.` : `${err.title}.`), ' ',
      el('span', { class: 'problem-detail' }, detail),
      err.requestID ? el('span', { class: 'request-id' }, ` (request ${err.requestID})`) : null);
    formError.hidden = false;
    // A refused token also gets the page's message, which says what to do.
    if (err.status === 401 || err.status === 403) showProblem(err);
    return section;
  };
  let r;
  try {
    const body = {
      target: await rankOperand(target),
      candidates: listMode ? await Promise.all(names.map(rankOperand)) : { prefix },
      by: byParam,
      top: Number(top),
    };
    if (direction) body.direction = direction;
    r = await api('POST', '/v1/rank', body);
  } catch (err) {
    return refuse(err);
  }
  section.append(rankSummary(r, by), rankTable(r, by));
  if (r.note) section.append(el('p', { class: 'rank-note', id: 'rank-note' }, r.note));
  if (r.warnings.length) section.append(el('ul', { class: 'warnings', id: 'rank-warnings' }, r.warnings.map((w) => el('li', {}, w))));
  return section;
}

// rankSummary is what was compared: the target with its bounds, the
// measure and estimator, how many candidates were scanned and skipped,
// and whether the answer is complete.
function rankSummary(r, by) {
  const t = r.target;
  return facts([
    ['Target', [el('strong', {}, t.name), ` ${count(t.count)} `, el('span', { class: 'muted' }, `(bounds ${count(t.lower)} – ${count(t.upper)})`)], 'rank-target-count'],
    ['Ranked by', `${by.label} (${by.formula}, T the target, C a candidate), ${r.method === 'theta' ? 'theta set intersection (DataSketches)' : methodName(r.method)}`, 'rank-measure'],
    ['Compared', `${intFmt.format(r.scanned)} candidate${r.scanned === 1 ? '' : 's'}`, 'rank-scanned'],
    ['Skipped', r.skipped ? `${intFmt.format(r.skipped)} named but missing` : 'none', 'rank-skipped'],
    ['Complete', r.complete ? 'yes: every candidate was compared' : 'no: some candidates were skipped (see the warnings)', 'rank-complete'],
    ['Order', r.told_apart ? 'every neighbour is told apart' : 'not every neighbour is told apart (marked ≈)', 'rank-told-apart'],
  ]);
}

// breakable writes a name so that a narrow column breaks it after a
// ':', '-', '_' or '.' (a series range's label also after '[' and ','),
// not inside a word ("audie nce").
function breakable(name) {
  return name.split(/(?<=[:\-_.[,])/).flatMap((part, i) => (i ? [el('wbr'), part] : [part]));
}

// rankAxis is the scale the bars are drawn on: from 0 to the largest
// upper bound, or, when every lower bound is well above 0, from a round
// number below the smallest (as the series chart's axis), so that bounds
// a few percent wide are wide enough to see.
function rankAxis(results) {
  const top = Math.max(0, ...results.map((x) => x.upper));
  const bottom = Math.min(top, ...results.map((x) => x.lower));
  if (!(top > 0)) return { from: 0, to: 1 };
  if (bottom < top / 3) return { from: 0, to: top };
  const unit = 10 ** Math.floor(Math.log10(Math.max(top - bottom, top * 0.02)));
  return { from: Math.floor(bottom / unit) * unit, to: top };
}

// rankTable lists the results best first. The bounds column draws every
// result's bounds on one scale, so that bounds that overlap the next
// row's are seen to; a result the API marks tied_with_next carries a ≈
// mark, and the results of one group (a run of ties) are banded as one.
function rankTable(r, by) {
  const axis = rankAxis(r.results);
  const at = (v) => `${Math.min(100, Math.max(0, (100 * (v - axis.from)) / (axis.to - axis.from)))}%`;
  const n = r.results.length;
  const size = new Map();
  for (const x of r.results) size.set(x.group, (size.get(x.group) || 0) + 1);
  const rows = r.results.map((x, i) => {
    const bar = el('span', { class: 'ivl-range' });
    bar.style.left = at(x.lower);
    bar.style.width = `calc(${at(x.upper)} - ${at(x.lower)})`;
    const tick = el('span', { class: 'ivl-est' });
    tick.style.left = at(x.estimate);
    const next = i + 1 < n ? `#${i + 2}` : 'the best not listed';
    const mark = x.tied_with_next
      ? el('span', { class: 'tie-mark', title: `Its bounds overlap those of ${next}: their order is not known` }, `≈ tied with ${next}`)
      : el('span', { class: 'muted apart' }, i + 1 < n ? `apart from ${next}` : 'apart from the rest');
    // A pair of sketches (not series ranges) leads to their overlap.
    const name = !x.name.includes('[') && !r.target.name.includes('[')
      ? el('a', { href: `#/overlap?s=${encodeURIComponent(r.target.name)}&s=${encodeURIComponent(x.name)}`, title: `The overlap of ${r.target.name} and ${x.name}` }, breakable(x.name))
      : breakable(x.name);
    return el('tr', {
      'data-name': x.name, 'data-rank': x.rank, 'data-group': x.group, 'data-tied': String(x.tied_with_next),
      'data-estimate': String(x.estimate), 'data-std-error': String(x.std_error), 'data-lower': String(x.lower), 'data-upper': String(x.upper),
      class: `group-${x.group % 2 ? 'odd' : 'even'}${size.get(x.group) > 1 ? ' tied-group' : ''}`,
    },
    el('td', { class: 'num rank-no', 'data-label': 'Rank' }, String(x.rank)),
    el('th', { scope: 'row', class: 'rank-name' }, name),
    el('td', { class: 'num rank-estimate', 'data-label': 'Estimate (± 1σ)' },
      el('span', { class: 'est' }, by.fmt(x.estimate)), el('span', { class: 'err' }, ` ± ${by.fmt(x.std_error)}`)),
    el('td', { class: 'rank-bounds', 'data-label': 'Bounds' },
      el('span', { class: 'ivl', 'aria-hidden': 'true' }, bar, tick),
      el('span', { class: 'ivl-text' }, `${by.fmt(x.lower)} – ${by.fmt(x.upper)}`)),
    // The verdict's name, and the API's words for it, with the pair's
    // warnings they refer to, one click away.
    el('td', { class: `rank-verdict verdict-${x.verdict}`, 'data-label': 'Verdict', 'data-verdict': x.verdict },
      el('details', {}, el('summary', {}, verdictLabel(x.verdict)), el('p', { class: 'verdict-text' }, x.verdict_text),
        (x.warnings || []).length ? el('ul', { class: 'warnings' }, (x.warnings || []).map((w) => el('li', {}, w))) : null)),
    el('td', { class: 'num rank-group', 'data-label': 'Group' }, String(x.group)),
    el('td', { class: 'rank-next', 'data-label': 'Next' }, mark));
  });
  return el('div', { class: 'rank-results' },
    el('h2', {}, `Top ${n}`),
    el('div', { class: 'table-wrap' }, el('table', { class: 'ranked', id: 'rank-table', 'data-from': String(axis.from), 'data-to': String(axis.to) },
      el('caption', { class: 'visually-hidden' }, `Candidates ranked by ${by.label} (${by.formula}), best first`),
      el('thead', {}, el('tr', {},
        el('th', { scope: 'col', class: 'num' }, 'Rank'),
        el('th', { scope: 'col' }, 'Candidate'),
        el('th', { scope: 'col', class: 'num' }, 'Estimate (± 1σ)'),
        el('th', { scope: 'col' }, 'Bounds'),
        el('th', { scope: 'col' }, 'Verdict'),
        el('th', { scope: 'col', class: 'num' }, 'Group'),
        el('th', { scope: 'col' }, 'Next'))),
      el('tbody', {}, rows))),
    el('p', { class: 'muted', id: 'rank-scale' },
      `Bars: each result's bounds, lower to upper, on one scale from ${by.fmt(axis.from)} to ${by.fmt(axis.to)}; the dark tick is the estimate. ` +
      'A group is a run of results whose order is not known (≈); the groups\' order is known. Open a verdict for its reasons.'));
}

tokenState();
route();

// ---- retention and funnels ----

// A share's colour: lighter for smaller shares, on one hue, so the
// triangle reads as a heatmap; text stays dark enough on every shade.
function shareColour(r) {
  const v = Math.min(Math.max(r, 0), 1);
  return `hsl(212, 70%, ${Math.round(96 - 36 * Math.sqrt(v))}%)`;
}

// cellDetail is a cell's numbers in words: its estimate, error and bounds,
// its share with its bounds, and its verdict.
function cellDetail(label, c) {
  return `${label}: ${count(c.estimate)} ± ${count(c.error)} users (bounds ${count(c.lower)} to ${count(c.upper)}), ` +
    `${pct(c.share.estimate)} of the cohort (bounds ${pct(c.share.lower)} to ${pct(c.share.upper)}). ${c.verdict_text}`;
}

// trusted reports whether the API's verdict lets a number be read as one.
function trusted(x) {
  return x.verdict === 'reliable' || x.verdict === 'exact';
}

// periodEnd is the instant (ms) the period (P1D, P1W or P1M) that starts
// at the instant start ends, in tz.
function periodEnd(start, period, tz) {
  const day = dayOf(start, tz);
  if (period === 'P1M') {
    const [y, m] = day.split('-').map(Number);
    return midnight(new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10), tz).getTime();
  }
  return midnight(addDays(day, period === 'P1W' ? 7 : 1), tz).getTime();
}

async function retentionView(q) {
  const PERIODS = { P1D: 'day', P1W: 'week', P1M: 'month' };
  const section = el('section', { class: 'detail' }, el('h1', {}, 'Retention'));
  const series = q.get('series') || '';
  const period = PERIODS[q.get('period')] ? q.get('period') : 'P1D';
  const cohorts = Math.min(Math.max(parseInt(q.get('cohorts') || '7', 10) || 7, 1), 60);
  const periods = Math.min(Math.max(parseInt(q.get('periods') || '7', 10) || 7, 1), 60);
  const nameInput = el('input', { id: 'ret-series', value: series, required: true, spellcheck: 'false' });
  const periodSelect = el('select', { id: 'ret-period' }, Object.entries(PERIODS).map(([v, t]) => el('option', { value: v, selected: v === period ? '' : null }, t)));
  const startInput = el('input', { id: 'ret-start', type: 'date', value: q.get('start') || '', required: true });
  const cohortsInput = el('input', { id: 'ret-cohorts', type: 'number', min: '1', max: '60', value: String(cohorts) });
  const periodsInput = el('input', { id: 'ret-periods', type: 'number', min: '1', max: '60', value: String(periods) });
  const form = el('form', { class: 'inline', id: 'retention-form' },
    el('label', { for: 'ret-series' }, 'Series'), nameInput,
    el('label', { for: 'ret-period' }, 'Period'), periodSelect,
    el('label', { for: 'ret-start' }, 'First cohort'), startInput,
    el('label', { for: 'ret-cohorts' }, 'Cohorts'), cohortsInput,
    el('label', { for: 'ret-periods' }, 'Periods after'), periodsInput,
    el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = `#/retention?${new URLSearchParams({ series: nameInput.value, period: periodSelect.value, start: startInput.value, cohorts: cohortsInput.value, periods: periodsInput.value })}`;
  });
  section.append(el('p', { class: 'muted' }, 'Of the users active in each period (a cohort), the share active again 1, 2, … periods later. Every cell has its error; cells the sketches cannot estimate reliably are hatched and show their bounds, not a number.'), form);
  if (!series || !DAY.test(q.get('start') || '')) return section;
  const sr = await api('GET', seriesPath(series));
  const start = midnight(q.get('start'), sr.tz).toISOString();
  const r = await api('POST', '/v1/retention', { series: sr.name, period, start, cohorts, periods });
  const detail = el('p', { id: 'cell-detail', class: 'cell-detail', 'aria-live': 'polite' }, 'Focus or point at a cell for its numbers.');
  const show = (text) => { detail.textContent = text; };
  const head = el('tr', {}, el('th', { scope: 'col' }, 'Cohort'), el('th', { scope: 'col' }, 'Users'),
    Array.from({ length: periods }, (_, k) => el('th', { scope: 'col' }, `+${k + 1}`)));
  const rows = r.cohorts.map((row) => {
    const label = dayOf(row.start, sr.tz);
    const cells = Array.from({ length: periods }, (_, k) => {
      const c = row.cells.find((x) => x.offset === k + 1);
      if (!c) return el('td', { class: 'ret-none' }, '');
      // A period that has not ended (today's) holds the users seen so
      // far: its share is marked as such and not coloured as final.
      const open = periodEnd(c.start, period, sr.tz) > Date.now();
      const text = cellDetail(`${label} +${k + 1}`, c) + (open ? ` The ${PERIODS[period]} is not over yet: users so far.` : '');
      const ok = trusted(c);
      const shown = (ok ? pct(c.share.estimate) : `${pct(c.share.lower)}–${pct(c.share.upper)}`) + (open ? ' so far' : '');
      const td = el('td', {
        class: `ret-cell ${ok ? 'reliable' : 'unreliable'}${open ? ' partial' : ''}`, tabindex: '0', 'aria-label': text, title: text,
        'data-share': String(c.share.estimate), 'data-verdict': c.verdict,
      }, shown);
      // Through the CSSOM: the page's policy refuses style attributes.
      if (ok && !open) td.style.backgroundColor = shareColour(c.share.estimate);
      td.addEventListener('focus', () => show(text));
      td.addEventListener('mouseenter', () => show(text));
      return td;
    });
    return el('tr', {}, el('th', { scope: 'row' }, label), el('td', { class: 'num' }, `${count(row.size.estimate)} ± ${count(row.size.error)}`), cells);
  });
  const table = el('table', { id: 'retention', class: 'retention' }, el('caption', { class: 'muted' }, `${sr.name}, by ${PERIODS[period]}, share of each cohort`), el('thead', {}, head), el('tbody', {}, rows));
  section.append(el('div', { class: 'table-wrap' }, table), detail);
  if (r.warnings.length) section.append(el('ul', { class: 'warnings', id: 'retention-warnings' }, r.warnings.map((w) => el('li', {}, w))));
  return section;
}

// funnelView draws a funnel's steps (sketch names or series ranges, as
// the overlap route writes them) as bars with error whiskers.
async function funnelView(values) {
  values = values.filter(Boolean).slice(0, 8);
  const section = el('section', { class: 'detail' }, el('h1', {}, 'Funnel'));
  const input = el('textarea', { id: 'funnel-steps', rows: '4', spellcheck: 'false' }, values.join('\n'));
  const form = el('form', { id: 'funnel-form' },
    el('label', { for: 'funnel-steps' }, 'Steps, one a line: a sketch name, or ~series/first-day/last-day'), input,
    el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const steps = input.value.split('\n').map((x) => x.trim()).filter(Boolean);
    location.hash = `#/funnel?${steps.map((v) => `s=${encodeURIComponent(v)}`).join('&')}`;
  });
  section.append(el('p', { class: 'muted' }, 'Users in every step so far, each with its error (the whisker spans its bounds), and the conversion from the step before with its error.'), form);
  if (values.length < 2) return section;
  const ops = await Promise.all(values.map(resolveOperand));
  const r = await api('POST', '/v1/funnel', { steps: ops.map((o) => o.op) });
  const top = Math.max(...r.steps.map((st) => st.upper), 1);
  const BW = 480;
  const rowH = 58;
  const x = (v) => 8 + (BW - 16) * (v / top);
  // Each bar carries its count: a late step can be a sliver of the
  // first, too thin to read on its own. The number goes after the
  // whisker, or inside the bar's end when it would not fit there.
  const valueLabel = (st, y) => {
    const text = count(st.estimate);
    const w = textWidth(text, 16);
    const after = x(Math.max(st.upper, st.estimate)) + 6;
    if (after + w <= BW - 4) return svg('text', { class: 'fvalue', x: after, y: y + 19 }, text);
    return svg('text', { class: 'fvalue inside', x: x(st.estimate) - 6, y: y + 19, 'text-anchor': 'end' }, text);
  };
  const chart = svg('svg', { id: 'funnel', viewBox: `0 0 ${BW} ${rowH * r.steps.length + 8}`, role: 'img', 'aria-label': 'Funnel: users reaching each step, with error bounds' });
  const list = el('ol', { id: 'funnel-steps-list', class: 'funnel-list' });
  r.steps.forEach((st, i) => {
    const y = 8 + i * rowH;
    const name = ops[i].name;
    const ok = trusted(st);
    chart.append(svg('g', { class: `step ${ok ? 'reliable' : 'unreliable'}` },
      svg('rect', { class: 'fbar', x: 8, y, width: Math.max(x(st.estimate) - 8, 1), height: 26 }),
      svg('line', { class: 'fwhisker', x1: x(st.lower), x2: x(st.upper), y1: y + 13, y2: y + 13 }),
      svg('line', { class: 'fwhisker', x1: x(st.lower), x2: x(st.lower), y1: y + 5, y2: y + 21 }),
      svg('line', { class: 'fwhisker', x1: x(st.upper), x2: x(st.upper), y1: y + 5, y2: y + 21 }),
      valueLabel(st, y),
      svg('text', { class: 'flabel', x: 8, y: y + 44 }, `${i + 1}. ${name}`),
      svg('title', {}, `${name}: ${count(st.estimate)} ± ${count(st.error)} (bounds ${count(st.lower)} to ${count(st.upper)})`)));
    const conv = st.conversion
      ? `; ${pct(st.conversion.estimate)} ± ${pct(st.conversion.error)} of the step before, ${pct(st.overall.estimate)} ± ${pct(st.overall.error)} of the first`
      : '';
    const v = ok ? '' : ` ${st.verdict_text}`;
    list.append(el('li', { class: ok ? 'reliable' : 'unreliable' },
      el('strong', {}, name), ` ${count(st.estimate)} ± ${count(st.error)} users (bounds ${count(st.lower)} to ${count(st.upper)})${conv}.${v}`,
      (st.warnings || []).length ? el('ul', { class: 'warnings' }, st.warnings.map((w) => el('li', {}, w))) : null));
  });
  section.append(chart, list);
  if (r.warnings.length) section.append(el('ul', { class: 'warnings', id: 'funnel-warnings' }, r.warnings.map((w) => el('li', {}, w))));
  return section;
}
