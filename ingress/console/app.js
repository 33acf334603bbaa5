// The operator console (docs/console.md): a page over the admin API (docs/api.md,
// "Administration") and /metrics, served by the ingress on the operations plane. Every text
// that comes from the API goes into the page with textContent (never innerHTML): a tool
// description holding <script> shows as text. No cookie: the admin token is kept in this tab's
// sessionStorage and sent as Authorization: Bearer.
import { bucketDelta, bucketsOf, counterIncrease, histogramQuantile, parseProm, sumOf } from './prom.js?v=@CONSOLE_VERSION@';

const TOKEN_KEY = 'mcpq.console.adminToken';
const POLL_MS = 2000; // /metrics
const CHART_POINTS = 90;
const PAGE_SIZE = 20;

const $ = (id) => document.getElementById(id);

/** An element with attributes (class, on<event> handlers, others as attributes) and children
 * (strings become text nodes). */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

function when(ms) {
  if (ms === null || ms === undefined || ms === '') return '';
  const d = typeof ms === 'number' ? new Date(ms) : new Date(String(ms));
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function status(msg, isError = false) {
  const s = $('status');
  s.textContent = msg;
  s.classList.toggle('error', isError);
}

// ---- the admin API ------------------------------------------------------------------------

class ApiError extends Error {
  constructor(statusCode, message) {
    super(message);
    this.status = statusCode;
  }
}

/** method path [body] with the token: the answer's JSON; a 401 signs out with the reason. */
async function api(method, path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) throw new ApiError(401, 'not signed in');
  const headers = { Authorization: `Bearer ${token}` };
  const init = { method, headers, cache: 'no-store', credentials: 'omit' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  const why = (data && typeof data.error === 'string' && data.error) || text || r.statusText;
  if (r.status === 401) {
    signOut(`The admin token was refused (401: ${why}).`);
    throw new ApiError(401, why);
  }
  if (!r.ok) throw new ApiError(r.status, `${method} ${path}: ${r.status} ${why}`);
  return data;
}

const enc = encodeURIComponent;
const tenantPath = () => `/admin/v1/tenants/${enc(state.tenant)}`;

/** Runs an action, showing its failure (not a 401: that returned to the form) as the status. */
async function guard(what, fn) {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) status(`${what}: ${e.message}`, true);
    return undefined;
  }
}

/** Asks the operator to confirm text; resolves true or false. */
function confirmAction(text) {
  const d = $('confirm');
  $('confirm-text').textContent = text;
  return new Promise((resolve) => {
    const done = (v) => {
      $('confirm-yes').onclick = null;
      $('confirm-no').onclick = null;
      d.close();
      resolve(v);
    };
    $('confirm-yes').onclick = () => done(true);
    $('confirm-no').onclick = () => done(false);
    d.showModal();
  });
}

// ---- sign in and out, views ----------------------------------------------------------------

const state = { tenant: null, view: 'registry', tasksToken: null, tasksGen: 0, taskId: null, metricsTimer: null };

function showSignIn(msg) {
  $('nav').hidden = true;
  for (const v of document.querySelectorAll('.view')) v.hidden = true;
  $('signin').hidden = false;
  $('signin-msg').textContent = msg || '';
  $('token').value = '';
  $('token').focus();
}

function signOut(msg) {
  sessionStorage.removeItem(TOKEN_KEY);
  stopMetrics();
  status('');
  showSignIn(msg);
}

async function signIn(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
  const ok = await guard('sign in', () => loadTenants());
  if (!ok) {
    sessionStorage.removeItem(TOKEN_KEY); // kept only once it worked
    return;
  }
  $('signin').hidden = true;
  $('nav').hidden = false;
  status('');
  await show(state.view);
}

async function loadTenants() {
  const data = await api('GET', '/admin/v1/tenants?pageSize=1000');
  const sel = clear($('tenant'));
  for (const t of data.tenants || []) sel.append(el('option', { value: t.id }, t.id));
  if (!state.tenant || ![...sel.options].some((o) => o.value === state.tenant)) state.tenant = sel.value || null;
  sel.value = state.tenant ?? '';
  return true;
}

async function show(view) {
  state.view = view;
  status('');
  for (const b of document.querySelectorAll('nav .tab')) {
    if (b.dataset.view === view) b.setAttribute('aria-current', 'page');
    else b.removeAttribute('aria-current');
  }
  for (const v of document.querySelectorAll('.view')) v.hidden = v.id !== `view-${view}`;
  if (view !== 'metrics') stopMetrics();
  if (!state.tenant && view !== 'metrics') {
    status('no tenant is configured');
    return;
  }
  if (view === 'registry') await guard('registry', loadRegistry);
  else if (view === 'tasks') await guard('tasks', () => loadTasks(true));
  else if (view === 'deliveries') await guard('deliveries', loadDeliveries);
  else if (view === 'metrics') startMetrics();
}

// ---- registry: servers, tools, versions ------------------------------------------------------

async function loadRegistry() {
  const [servers, tools] = await Promise.all([
    api('GET', `${tenantPath()}/servers?pageSize=1000`),
    api('GET', `${tenantPath()}/tools?pageSize=1000&orderBy=name`),
  ]);
  const box = clear($('registry'));
  $('versions').hidden = true;
  for (const s of servers.servers || []) {
    const rows = (tools.tools || []).filter((t) => t.server === s.name);
    box.append(el('h3', {}, `server ${s.name}`, s.description ? ` — ${s.description}` : ''));
    if (!rows.length) {
      box.append(el('p', { class: 'note' }, 'no tools'));
      continue;
    }
    box.append(el('table', { class: 'tools' },
      el('thead', {}, el('tr', {}, el('th', {}, 'name'), el('th', {}, 'kind'),
        el('th', {}, 'published version'), el('th', {}, ''))),
      el('tbody', {}, rows.map((t) => el('tr', { 'data-tool': t.name },
        el('td', {}, t.name), el('td', {}, t.kind || 'tool'),
        el('td', { class: t.published ? 'state-published' : '' }, t.published ? t.publishedVersion : 'offline'),
        el('td', {}, el('button', { type: 'button', onclick: () => guard('versions', () => loadVersions(t.name)) },
          'Versions')))))));
  }
}

/** The version to roll back to: the one created just before the published one (the admin API
 * keeps no history of publications; versions created together keep the list's order). */
function previousVersion(versions, published) {
  const sorted = [...versions].sort((a, b) => String(a.createTime).localeCompare(String(b.createTime)));
  const i = sorted.findIndex((v) => v.version === published);
  return i > 0 ? sorted[i - 1] : null;
}

async function versionAction(tool, version, verb, text) {
  if (!(await confirmAction(text))) return;
  await api('POST', `${tenantPath()}/tools/${enc(tool)}/versions/${enc(version)}:${verb}`);
  status(`${tool}: version ${version} ${verb === 'publish' ? 'published' : 'taken offline'}`);
  await loadRegistry();
  await loadVersions(tool);
}

async function loadVersions(tool) {
  const [t, data] = await Promise.all([
    api('GET', `${tenantPath()}/tools/${enc(tool)}`),
    api('GET', `${tenantPath()}/tools/${enc(tool)}/versions?pageSize=1000&orderBy=create_time`),
  ]);
  const versions = data.versions || [];
  $('versions').hidden = false;
  $('versions-title').textContent = `tool ${tool} (server ${t.server})`;
  const published = t.published ? t.publishedVersion : null;
  $('versions-state').textContent = published ? `published: version ${published}` : 'offline: no version is published';
  const prev = published ? previousVersion(versions, published) : null;
  const rb = $('rollback');
  rb.hidden = !prev;
  rb.onclick = prev ? () => guard('roll back', () => versionAction(tool, prev.version, 'publish',
    `Roll back ${tool} from version ${published} to version ${prev.version}?`)) : null;
  if (prev) rb.textContent = `Roll back to version ${prev.version}`;
  const body = clear($('versions-table').tBodies[0]);
  for (const v of versions) {
    const live = v.version === published;
    body.append(el('tr', { 'data-version': v.version },
      el('td', {}, v.version), el('td', { class: 'description' }, v.description ?? ''),
      el('td', {}, when(v.createTime)),
      el('td', { class: live ? 'state-published' : '' }, live ? 'published' : 'offline'),
      el('td', {}, live
        ? el('button', { type: 'button', onclick: () => guard('offline', () => versionAction(tool, v.version, 'offline',
          `Take ${tool} offline (unpublish version ${v.version})? Clients will no longer see it.`)) }, 'Take offline')
        : el('button', { type: 'button', onclick: () => guard('publish', () => versionAction(tool, v.version, 'publish',
          `Publish version ${v.version} of ${tool}?${published ? ` It replaces version ${published}.` : ''}`)) }, 'Publish'))));
  }
}

// ---- tasks -----------------------------------------------------------------------------

/** A page of tasks (the first one again when first): a listing started later (another filter)
 * wins over one still waiting for its answer. */
async function loadTasks(first) {
  const gen = ++state.tasksGen;
  const q = new URLSearchParams({ pageSize: String(PAGE_SIZE) });
  const st = $('task-status').value;
  if (st) q.set('status', st);
  if (!first && state.tasksToken) q.set('pageToken', state.tasksToken);
  const data = await api('GET', `${tenantPath()}/tasks?${q}`);
  if (gen !== state.tasksGen) return;
  const body = $('tasks-table').tBodies[0];
  if (first) {
    clear(body);
    $('task-detail').hidden = true;
  }
  for (const t of data.tasks || []) {
    body.append(el('tr', { class: 'clickable', 'data-task': t.taskId, onclick: () => guard('task', () => loadTask(t.taskId)) },
      el('td', {}, el('code', {}, t.taskId)), el('td', {}, t.tool ?? ''),
      el('td', { class: `state-${t.status}` }, t.status), el('td', {}, t.statusMessage ?? ''),
      el('td', {}, when(t.createdAt))));
  }
  if (!body.rows.length) body.append(el('tr', {}, el('td', { colspan: 5, class: 'note' }, 'no tasks')));
  state.tasksToken = data.nextPageToken || null;
  $('tasks-more').hidden = !state.tasksToken;
  $('tasks-table').dataset.shows = st || 'all'; // which filter the rows answer (tests wait on it)
}

function json(v) {
  return v === undefined || v === null ? '' : JSON.stringify(v, null, 2);
}

/** One history entry as a line: its time, what happened, and its other members. */
function historyLine(h) {
  if (typeof h !== 'object' || h === null) return String(h);
  const time = h.time ?? h.at ?? h.at_ms ?? h.timestamp;
  const what = h.event ?? h.type ?? h.what ?? '';
  const rest = Object.entries(h).filter(([k]) => !['time', 'at', 'at_ms', 'timestamp', 'event', 'type', 'what'].includes(k))
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`);
  return [when(time), what, ...rest].filter((s) => s !== '').join('  ');
}

async function loadTask(id) {
  state.taskId = id;
  const t = await api('GET', `${tenantPath()}/tasks/${enc(id)}`);
  for (const r of $('tasks-table').tBodies[0].rows) r.classList.toggle('selected', r.dataset.task === id);
  $('task-detail').hidden = false;
  $('task-title').textContent = `task ${t.taskId}`;
  const dl = clear($('task-fields'));
  const fields = [['status', t.status], ['message', t.statusMessage], ['tool', t.tool], ['server', t.server],
    ['created', when(t.createdAt)], ['updated', when(t.lastUpdatedAt)]];
  for (const [k, v] of fields) dl.append(el('dt', {}, k), el('dd', { class: k === 'status' ? `state-${v}` : '', 'data-field': k }, v ?? ''));
  $('task-error').textContent = t.error ? (t.error.message ? `${t.error.message}\n\n${json(t.error)}` : json(t.error)) : '(none)';
  $('task-result').textContent = t.result ? json(t.result) : '(none)';
  const hist = clear($('task-history'));
  for (const h of t.history || []) hist.append(el('li', {}, historyLine(h)));
  if (!hist.children.length) hist.append(el('li', { class: 'note' }, 'no history'));
  const running = t.status === 'working' || t.status === 'input_required';
  const cancel = $('task-cancel');
  cancel.hidden = !running;
  cancel.onclick = running ? () => guard('cancel', async () => {
    if (!(await confirmAction(`Cancel task ${t.taskId} (${t.tool ?? ''})? The worker running it is told to stop.`))) return;
    await api('POST', `${tenantPath()}/tasks/${enc(t.taskId)}:cancel`);
    status(`task ${t.taskId} cancelled`);
    await loadTask(t.taskId);
  }) : null;
  renderDeliveries($('task-deliveries'), t.deliveries || [], () => loadTask(id));
}

// ---- webhook deliveries -----------------------------------------------------------------------

function renderDeliveries(box, list, reload) {
  clear(box);
  if (!list.length) {
    box.append(el('p', { class: 'note' }, 'no deliveries'));
    return;
  }
  const table = el('table', { class: 'deliveries' },
    el('thead', {}, el('tr', {}, ['delivery', 'event', 'task', 'status', 'attempts', 'last status', 'last error', 'created', ''].map((h) => el('th', {}, h)))));
  const body = el('tbody');
  for (const d of list) {
    body.append(el('tr', { 'data-delivery': d.id },
      el('td', {}, el('code', {}, d.id)), el('td', {}, d.event ?? ''), el('td', {}, el('code', {}, d.task ?? '')),
      el('td', { class: `state-${d.status}`, 'data-field': 'status' }, d.status),
      el('td', { 'data-field': 'attempts' }, String(d.attempts ?? 0)),
      el('td', {}, d.last_status ?? ''), el('td', {}, d.last_error ?? ''), el('td', {}, when(d.created_ms)),
      el('td', {}, el('button', { type: 'button', onclick: () => guard('redeliver', async () => {
        if (!(await confirmAction(`Redeliver ${d.event ?? 'event'} of task ${d.task ?? ''} (delivery ${d.id}) now?`))) return;
        await api('POST', `${tenantPath()}/deliveries/${enc(d.id)}:redeliver`);
        status(`delivery ${d.id} queued again`);
        await reload();
      }) }, 'Redeliver'))));
    const log = (d.log || []).map((a) => el('li', {}, `${when(a.at_ms)}  status ${a.status ?? 'none'}  ${a.ms ?? '?'} ms${a.error ? `  ${a.error}` : ''}`));
    body.append(el('tr', { class: 'attempts' }, el('td', { colspan: 9 },
      el('details', {}, el('summary', {}, `attempt log (${log.length})`), el('ol', {}, log)))));
  }
  table.append(body);
  box.append(table);
}

async function loadDeliveries() {
  const q = new URLSearchParams({ pageSize: '50' });
  const st = $('delivery-status').value;
  if (st) q.set('filter', `status = "${st}"`);
  const data = await api('GET', `${tenantPath()}/deliveries?${q}`);
  renderDeliveries($('deliveries'), data.deliveries || [], loadDeliveries);
}

// ---- live metrics -------------------------------------------------------------------------

const CALL = { method: 'tools/call' };
const series = { t: [], rate: [], p50: [], p95: [], p99: [], inflight: [] };
let lastScrape = null;

function stopMetrics() {
  clearInterval(state.metricsTimer);
  state.metricsTimer = null;
}

function startMetrics() {
  $('poll-s').textContent = String(POLL_MS / 1000);
  if (state.metricsTimer) return;
  scrape();
  state.metricsTimer = setInterval(scrape, POLL_MS);
}

function push(key, v) {
  series[key].push(v);
  if (series[key].length > CHART_POINTS) series[key].shift();
}

function fmt(v, digits = 2) {
  return Number.isFinite(v) ? v.toFixed(digits) : '–';
}

async function scrape() {
  let samples;
  try {
    const r = await fetch('/metrics', { cache: 'no-store', credentials: 'omit' });
    if (!r.ok) throw new Error(`GET /metrics: ${r.status}`);
    samples = parseProm(await r.text());
  } catch (e) {
    status(`metrics: ${e.message}`, true);
    return;
  }
  const now = { at: performance.now(), count: sumOf(samples, 'mcpq_request_duration_seconds_count', CALL),
    buckets: bucketsOf(samples, 'mcpq_request_duration_seconds', CALL), inflight: sumOf(samples, 'mcpq_inflight_calls') };
  push('inflight', now.inflight);
  $('m-inflight').textContent = String(now.inflight);
  if (lastScrape) {
    const dt = (now.at - lastScrape.at) / 1000;
    const rate = dt > 0 ? counterIncrease(lastScrape.count, now.count) / dt : NaN;
    const delta = bucketDelta(lastScrape.buckets, now.buckets);
    const q = (p) => (delta ? histogramQuantile(p, delta) * 1000 : NaN); // seconds to ms
    push('t', now.at);
    push('rate', rate);
    push('p50', q(0.5));
    push('p95', q(0.95));
    push('p99', q(0.99));
    $('m-rate').textContent = fmt(rate);
    $('m-p50').textContent = fmt(series.p50.at(-1), 3);
    $('m-p95').textContent = fmt(series.p95.at(-1), 3);
    $('m-p99').textContent = fmt(series.p99.at(-1), 3);
  }
  lastScrape = now;
  draw($('c-rate'), [{ v: series.rate, color: '#1f4e79' }]);
  draw($('c-latency'), [{ v: series.p50, color: '#1b6e2d' }, { v: series.p95, color: '#c77700' }, { v: series.p99, color: '#a61b1b' }]);
  draw($('c-inflight'), [{ v: series.inflight, color: '#5b2a86' }]);
}

/** A line chart of lines ({v: values, color}) on canvas: the y axis from 0 to the largest
 * finite value, a gap where a value is not finite. */
function draw(canvas, lines) {
  const g = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  const pad = 30;
  g.clearRect(0, 0, w, h);
  g.fillStyle = '#fff';
  g.fillRect(0, 0, w, h);
  let max = 0;
  for (const l of lines) for (const x of l.v) if (Number.isFinite(x)) max = Math.max(max, x);
  if (max === 0) max = 1;
  g.strokeStyle = '#ccc';
  g.beginPath();
  g.moveTo(pad, 4);
  g.lineTo(pad, h - 4);
  g.lineTo(w - 4, h - 4);
  g.stroke();
  g.fillStyle = '#666';
  g.font = '10px sans-serif';
  g.fillText(fmt(max), 2, 12);
  g.fillText('0', 2, h - 6);
  for (const l of lines) {
    g.strokeStyle = l.color;
    g.lineWidth = 2;
    g.beginPath();
    let pen = false;
    l.v.forEach((x, i) => {
      if (!Number.isFinite(x)) {
        pen = false;
        return;
      }
      const px = pad + ((w - pad - 6) * i) / (CHART_POINTS - 1);
      const py = h - 6 - ((h - 12) * x) / max;
      if (pen) g.lineTo(px, py);
      else g.moveTo(px, py);
      pen = true;
    });
    g.stroke();
  }
}

// ---- wiring -------------------------------------------------------------------------------

function wire() {
  $('signin-form').addEventListener('submit', (ev) => {
    ev.preventDefault(); // no navigation: the CSP has form-action 'none'
    const token = $('token').value.trim();
    if (token) signIn(token);
  });
  $('signout').addEventListener('click', () => signOut('Signed out.'));
  for (const b of document.querySelectorAll('nav .tab')) b.addEventListener('click', () => show(b.dataset.view));
  $('tenant').addEventListener('change', () => {
    state.tenant = $('tenant').value;
    show(state.view);
  });
  $('task-status').addEventListener('change', () => guard('tasks', () => loadTasks(true)));
  $('tasks-refresh').addEventListener('click', () => guard('tasks', () => loadTasks(true)));
  $('tasks-more').addEventListener('click', () => guard('tasks', () => loadTasks(false)));
  $('delivery-status').addEventListener('change', () => guard('deliveries', loadDeliveries));
  $('deliveries-refresh').addEventListener('click', () => guard('deliveries', loadDeliveries));
  if (sessionStorage.getItem(TOKEN_KEY)) signIn(sessionStorage.getItem(TOKEN_KEY));
  else showSignIn('');
}

wire();
