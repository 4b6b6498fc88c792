// SVG charts for the dashboard, written by hand: a line chart over time and a horizontal bar chart.
// Each draw replaces the SVG's children; the series' <path> carries data-n, the number of points drawn.

const NS = "http://www.w3.org/2000/svg";

function node(name, attributes, text) {
  const element = document.createElementNS(NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

// 1, 2 or 5 times a power of ten, at least value: the top of an axis that reads well
export function niceCeiling(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

export function formatNumber(value) {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e9) return (value / 1e9).toFixed(1) + "G";
  if (magnitude >= 1e6) return (value / 1e6).toFixed(1) + "M";
  if (magnitude >= 1e4) return (value / 1e3).toFixed(0) + "k";
  if (magnitude >= 100 || Number.isInteger(value)) return value.toFixed(0);
  return value.toFixed(magnitude >= 10 ? 1 : 2);
}

function clock(seconds) {
  const s = Math.max(0, Math.round(seconds));
  return s < 3600 ? `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`
    : `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}`;
}

// series: [{name, color, points: [[t, value], ...]}] with t in seconds; the x axis shows the last `span` seconds
export function lineChart(svg, series, { span = 300, width = 360, height = 150 } = {}) {
  const left = 40, right = 8, top = 8, bottom = 20;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.replaceChildren();
  const all = series.flatMap((s) => s.points);
  const end = all.length ? Math.max(...all.map((p) => p[0])) : span;
  const start = Math.max(0, end - span);
  const ceiling = niceCeiling(Math.max(0, ...all.filter((p) => p[0] >= start).map((p) => p[1])));
  const x = (t) => left + (t - start) / Math.max(end - start, 1) * (width - left - right);
  const y = (v) => top + (1 - v / ceiling) * (height - top - bottom);
  for (let i = 0; i <= 4; i++) {
    const value = ceiling * i / 4;
    svg.append(node("line", { class: "grid", x1: left, x2: width - right, y1: y(value), y2: y(value) }));
    svg.append(node("text", { x: left - 4, y: y(value) + 4, "text-anchor": "end" }, formatNumber(value)));
  }
  for (let i = 0; i <= 4; i++) {
    const t = start + (end - start) * i / 4;
    svg.append(node("text", { x: x(t), y: height - 5, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" },
      clock(t)));
  }
  for (const s of series) {
    const shown = s.points.filter((p) => p[0] >= start);
    const d = shown.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join("");
    svg.append(node("path", { class: "series", d: d || "M0,0", stroke: s.color, "data-n": shown.length,
      "data-series": s.name }));
  }
}

// entries: [[label, value, className?], ...] drawn as one bar each, longest first as given
export function barChart(svg, entries, { width = 330, row = 18, empty = "none yet" } = {}) {
  const labelWidth = 92, valueWidth = 60;
  const height = Math.max(1, entries.length) * row + 4;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.replaceChildren();
  if (!entries.length) {
    svg.append(node("text", { x: 0, y: row - 5 }, empty));
    return;
  }
  const most = Math.max(...entries.map((e) => e[1]), 1);
  const room = width - labelWidth - valueWidth;
  entries.forEach(([label, value, kind], i) => {
    const top = i * row + 2;
    svg.append(node("text", { x: labelWidth - 6, y: top + row - 6, "text-anchor": "end" }, label));
    svg.append(node("rect", { class: `bar ${kind || ""}`, x: labelWidth, y: top + 2, height: row - 5,
      width: Math.max(value > 0 ? 1 : 0, value / most * room), "data-value": value }));
    svg.append(node("text", { class: "value", x: labelWidth + value / most * room + 4, y: top + row - 6 },
      formatNumber(value)));
  });
}
