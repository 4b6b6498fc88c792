// The dashboard page: polls the control API while visible and draws it; the buttons and the form call it.
// GET /status and GET /timeline?since=T every second (the supervisor samples the timeline once a second
// anyway, so the charts are full from the first look), GET /hosts every few seconds, GET /config once.
import { barChart, formatNumber, lineChart } from "./chart.js";

const PERIOD = 1000; // ms between two looks
const HOSTS_EVERY = 3; // looks between two GET /hosts
const SPAN = 300; // seconds of history on the charts
const CHANGES = { "X-Crawl-Dashboard": "1" }; // what the server asks of a change authorized by the cookie

const $ = (id) => document.getElementById(id);
let timeline = []; // points of GET /timeline, t ascending, the last SPAN seconds
let looks = 0;
let timer = null;
let settings = {}; // the live settings as the server last said
let pending = null; // the command this page sent and awaits: "/pause" answers once no fetch is in flight

async function api(method, path, body) {
  const init = { method, headers: method === "GET" ? {} : { ...CHANGES } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) location.reload(); // the cookie is gone (another crawl, a new token): sign in
  return { status: response.status, body: await response.json() };
}

function problem(text) {
  $("problem").hidden = !text;
  $("problem").textContent = text || "";
}

function rates(points, key, scale = 1) {
  const out = [];
  for (let i = 1; i < points.length; i++) {
    const dt = points[i].t - points[i - 1].t;
    if (dt > 0) out.push([points[i].t, Math.max(0, points[i][key] - points[i - 1][key]) / dt / scale]);
  }
  return out;
}

function lastRate(points, key, scale) {
  const recent = rates(points.slice(-11), key, scale); // about ten seconds, like the terminal panel
  return recent.length ? recent.reduce((sum, p) => sum + p[1], 0) / recent.length : 0;
}

function drawCharts() {
  const series = (key) => timeline.map((p) => [p.t, p[key] ?? 0]);
  lineChart($("chart-pages"), [{ name: "pages", color: "#2f6fde", points: rates(timeline, "pages") }], { span: SPAN });
  lineChart($("chart-bytes"), [{ name: "bytes", color: "#2e9d5b", points: rates(timeline, "bytes", 1e6) }], { span: SPAN });
  // the required front is a tile, not a line: it is often a hundred times the front, which it would flatten
  lineChart($("chart-front"), [{ name: "front", color: "#2f6fde", points: series("front") },
    { name: "in_flight", color: "#e07b24", points: series("in_flight") }], { span: SPAN });
  lineChart($("chart-workbench"), [{ name: "workbench_urls", color: "#7a4fcf", points: series("workbench_urls") }],
    { span: SPAN });
}

function tile(value, label) {
  const div = document.createElement("div");
  div.className = "tile";
  const b = document.createElement("b");
  b.textContent = value;
  const span = document.createElement("span");
  span.textContent = label;
  div.append(b, span);
  return div;
}

function rows(table, data) {
  const body = $(table).tBodies[0];
  body.replaceChildren(...data.map((cells) => {
    const tr = document.createElement("tr");
    cells.forEach((cell, i) => {
      const td = document.createElement("td");
      td.textContent = typeof cell === "number" ? formatNumber(cell) : String(cell);
      if (table === "hosts" && i === 0) { td.className = "host"; td.title = cell; }
      tr.append(td);
    });
    return tr;
  }));
}

// a histogram of GET /status (engine/metrics.py: counts per bucket) as bars, one per bucket
function buckets(histogram) {
  return Object.entries(histogram.counts).sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([bound, n]) => [bound === "+Inf" ? "longer" : `≤ ${bound} s`, n]);
}

function drawStatus(status) {
  const stats = status.stats;
  const errors = Object.values(stats.errors).reduce((a, b) => a + b, 0);
  // "paused" once no fetch is in flight: the flag is set at once, the fetches under way finish first
  const draining = pending === "/pause" || (status.paused && status.in_flight > 0);
  const state = $("state");
  state.textContent = draining ? "pausing" : pending === "/resume" ? "resuming" : status.paused ? "paused" : "running";
  state.className = `state ${status.paused ? "paused" : "running"}`;
  $("pause").disabled = status.paused || pending !== null;
  $("resume").disabled = !status.paused || pending !== null;
  const last = timeline[timeline.length - 1];
  $("elapsed").textContent = last ? `${Math.round(last.t)} s crawling` : "starting";
  $("tiles").replaceChildren(
    tile(formatNumber(stats.pages), "pages"),
    tile(lastRate(timeline, "pages", 1).toFixed(1), "pages/s"),
    tile((stats.bytes / 1e6).toFixed(1), "MB"),
    tile(lastRate(timeline, "bytes", 1e6).toFixed(2), "MB/s"),
    tile(formatNumber(status.hosts), `hosts on ${formatNumber(status.ips)} IPs`),
    tile(`${formatNumber(status.front)} / ${formatNumber(status.required_front)}`, "front / required"),
    tile(formatNumber(status.workbench_urls), `workbench URLs (${formatNumber(status.disk_urls)} on disk)`),
    tile(formatNumber(status.todo), "todo"),
    tile(formatNumber(status.in_flight), "in flight"),
    tile(formatNumber(errors), "errors"),
  );
  barChart($("statuses"), Object.entries(stats.statuses).sort((a, b) => b[1] - a[1])
    .map(([code, n]) => [code, n, code >= "400" ? "bad" : code >= "300" ? "moved" : ""]));
  barChart($("errors"), Object.entries(stats.errors).sort((a, b) => b[1] - a[1]).map(([kind, n]) => [kind, n, "bad"]),
    { empty: "no errors" });
  const waits = status.histograms?.politeness_wait_seconds;
  if (waits) {
    barChart($("waits"), buckets(waits));
    $("waits-total").textContent = `${formatNumber(waits.sum)} s asleep, fetchers idle ${formatNumber(stats.todo_wait_seconds)} fetcher-s`;
  }
  const latency = status.histograms?.fetch_latency_seconds;
  if (latency) {
    barChart($("latency"), buckets(latency));
    const n = Object.values(latency.counts).reduce((a, b) => a + b, 0);
    $("latency-mean").textContent = n ? `mean ${formatNumber(latency.sum / n * 1000)} ms` : "";
  }
  rows("agents", (status.agents || []).map((a) => [a.agent, String(a.pid), a.stats.pages ?? 0,
    a.in_flight, a.todo, a.front, a.hosts, a.cpu_seconds, a.rss_bytes / 2 ** 20,
    a.paused ? "paused" : a.idle ? "idle" : "crawling"]));
  $("machines-box").hidden = !status.machines;
  if (status.machines) {
    rows("machines", status.machines.map((m) => [m.node, m.agents, m.pages, m.state, m.beat, m.beat_age_seconds ?? "-"]));
  }
  const policy = Object.entries(status.policy || {}).flatMap(([name, table]) =>
    Object.entries(table).sort((a, b) => b[1] - a[1]).map(([key, n]) => [name, key, n]));
  $("policy-box").hidden = policy.length === 0;
  rows("policy", policy);
}

async function look() {
  timer = null;
  let period = PERIOD;
  try {
    const since = timeline.length ? timeline[timeline.length - 1].t : -1;
    const [status, points] = await Promise.all([api("GET", "/status"), api("GET", `/timeline?since=${since}`)]);
    timeline = timeline.concat(points.body);
    const last = timeline.length ? timeline[timeline.length - 1].t : 0;
    timeline = timeline.filter((p) => p.t >= last - SPAN - 1);
    drawStatus(status.body);
    drawCharts();
    if (looks++ % HOSTS_EVERY === 0) {
      const hosts = await api("GET", "/hosts");
      rows("hosts", hosts.body.map((h) => [h.host, h.pages, h.queued, h.agent]));
    }
    problem("");
  } catch (error) {
    $("state").textContent = "no answer";
    $("state").className = "state gone";
    problem(`The crawl does not answer (${error.message}); it may have ended.`);
    period = 5 * PERIOD; // a crawl that ended is asked again, but not every second
  }
  if (!document.hidden) timer = setTimeout(look, period);
}

// A hidden tab stops looking, so a forgotten tab costs the crawl nothing; shown again, it looks at once.
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && timer === null) look();
});

async function command(button, path) {
  button.disabled = true;
  pending = path;
  try {
    const { status, body } = await api("POST", path);
    if (status !== 200) problem(body.error);
  } catch (error) {
    problem(`${path} got no answer (${error.message})`);
  } finally {
    pending = null;
  }
  if (timer !== null) { clearTimeout(timer); look(); }
}

$("pause").addEventListener("click", (e) => command(e.currentTarget, "/pause"));
$("resume").addEventListener("click", (e) => command(e.currentTarget, "/resume"));
$("stop").addEventListener("click", (e) => {
  if (confirm("Stop the crawl? It finishes its fetches, checkpoints and exits.")) command(e.currentTarget, "/stop");
});

// The form shows each live setting; it sends the changed ones as PATCH /config would take them, typed like
// the current value (a number stays a number when it reads as one), and shows the server's verdict word for word.
function buildForm(values) {
  settings = values;
  const form = $("config");
  form.replaceChildren();
  for (const [key, value] of Object.entries(values)) {
    const label = document.createElement("label");
    label.htmlFor = `setting-${key}`;
    label.textContent = key;
    const input = document.createElement("input");
    input.id = `setting-${key}`;
    input.name = key;
    input.value = String(value);
    form.append(label, input);
  }
  const button = document.createElement("button");
  button.type = "submit";
  button.textContent = "Apply";
  form.append(button);
}

function typed(text, current) {
  if (typeof current !== "number") return text;
  const number = Number(text);
  return text.trim() !== "" && Number.isFinite(number) ? number : text;
}

$("config").addEventListener("submit", async (event) => {
  event.preventDefault();
  const changes = {};
  for (const input of $("config").querySelectorAll("input")) {
    input.classList.remove("refused");
    if (input.value !== String(settings[input.name])) changes[input.name] = typed(input.value, settings[input.name]);
  }
  $("config-error").hidden = true;
  $("config-done").hidden = true;
  if (!Object.keys(changes).length) return;
  let status, body;
  try {
    ({ status, body } = await api("PATCH", "/config", changes));
  } catch (error) {
    ({ status, body } = { status: 0, body: { error: `PATCH /config got no answer (${error.message})` } });
  }
  if (status === 200) {
    settings = { ...settings, ...body };
    $("config-done").textContent = `applied: ${Object.keys(body).join(", ")}`;
    $("config-done").hidden = false;
  } else {
    $("config-error").textContent = body.error;
    $("config-error").hidden = false;
    if (body.key) document.getElementById(`setting-${body.key}`)?.classList.add("refused");
  }
});

api("GET", "/config").then(({ body }) => buildForm(body), (error) => problem(`GET /config: ${error.message}`));
look();
