"""The crawl report as one self-contained HTML page (``crawl report OUT_DIR``), from :class:`CrawlFacts`.

Heritrix's crawl reports are the yardstick (its hosts, mimetype, response-code and seeds
reports): one page with a section each for the timeline, the status, MIME and size mix, the hosts
by pages and by errors, robots.txt outcomes, politeness waits, duplicates and revisits, the host
ranking of ``crawl rank`` and the crawl policy's own figures. Self-contained: the style is inline,
the plots are inline SVG (:mod:`tools.svg_chart`), there is no script, and no ``src`` or ``href``
leads out of the page (crawled URLs are text, never links), so the file can be mailed or archived
and opens offline. A section whose data the crawl did not record says so and why.

Pure: facts in, text out (:mod:`tools.report_data` reads the folder).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from tools.report_data import SIZE_BOUNDS, CrawlFacts, HostRow, IndexFacts, PolicyFacts, RankRow
from tools.report_markdown import markdown_html
from tools.report_robots import RobotsFiles
from tools.svg_chart import bar_chart, line_chart, number

MAX_POINTS = 300  # timeline points: longer crawls are cut into equal bins
STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; } td, th { padding: 2px 10px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.missing { color: #8a5a00; background: #fff6e0; padding: 4px 8px; } nav a { margin-right: 0.8em; }
code { background: #f4f4f4; padding: 0 3px; } svg.chart { display: block; margin: 0.5em 0; }
"""
SECTIONS = (("timeline", "Timeline"), ("mix", "Status, MIME and size"), ("hosts", "Hosts"),
            ("seeds", "Seeds"), ("robots", "robots.txt"), ("politeness", "Politeness"), ("duplicates", "Duplicates and revisits"),
            ("ranking", "Host ranking"), ("policy", "Policy"))


def missing(why: str) -> str:
    return f'<p class="missing">not recorded by this crawl: {escape(why)}</p>'


def table(header: Sequence[str], rows: Iterable[Sequence[object]], css_class: str = "") -> str:
    """An HTML table; numbers are right-aligned and written with thousands separators."""
    def cell(value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"<td>{escape(str(value))}</td>"
        return f'<td class="n">{value:,}</td>' if isinstance(value, int) else f'<td class="n">{value:,.3g}</td>'

    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    attribute = f' class="{css_class}"' if css_class else ""
    thead = f"<thead><tr>{head}</tr></thead>" if any(header) else ""
    return f"<table{attribute}>{thead}<tbody>{body}</tbody></table>"


def binary(size: int) -> str:
    """``4096`` → ``4 KiB``: the size classes are powers of two."""
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def stamp(second: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(second))


def summary(facts: CrawlFacts) -> str:
    index, stats = facts.index, facts.stats
    if stats is not None:
        state = f"finished: {stats.get('stop_reason') or 'done'}"
    else:
        state = "running, or stopped before writing stats.json: the figures are those of the archive so far"
    seconds = sorted(index.pages_per_second) or sorted(index.bytes_per_second)
    rows: list[tuple[str, object]] = [
        ("state", state),
        ("pages", sum(row.pages for row in index.hosts.values())),
        ("records indexed", index.records),
        ("hosts", len(index.hosts)),
        ("WARC files", f"{len(facts.warc_files)}, {number(sum(size for _, size in facts.warc_files))} bytes"),
        ("CDXJ indexes", f"{index.files} ({index.open_files} still open), {index.torn_lines} torn lines skipped"),
    ]
    if seconds:
        rows.append(("captures", f"{stamp(seconds[0])} to {stamp(seconds[-1])} ({seconds[-1] - seconds[0]:,} s)"))
    if stats is not None:
        rows.append(("elapsed", f"{stats.get('elapsed_seconds', 0):,.1f} s, {stats.get('cpu_seconds', 0):,.1f} CPU s"))
    return table(("", ""), rows)


def timeline(index: IndexFacts) -> str:
    if not index.bytes_per_second:
        return missing("no record indexed yet")
    first, last = min(index.bytes_per_second), max(index.bytes_per_second)
    width = max(1, math.ceil((last - first + 1) / MAX_POINTS))
    bins = range(0, last - first + 1, width)
    pages = [sum(index.pages_per_second.get(first + b + i, 0) for i in range(width)) / width for b in bins]
    megabytes = [sum(index.bytes_per_second.get(first + b + i, 0) for i in range(width)) / width / 1e6 for b in bins]
    xs = [float(b) for b in bins]
    label = f"seconds since {stamp(first)}" + (f" (bins of {width} s)" if width > 1 else "")
    return (line_chart(xs, [("pages/s", pages)], "Pages per second (record timestamps)", label, "pages/s")
            + line_chart(xs, [("MB/s", megabytes)], "Archive bytes per second (compressed records)", label, "MB/s"))


def mix(facts: CrawlFacts) -> str:
    index = facts.index
    if not index.records:
        return missing("no record indexed yet")
    statuses = sorted(index.statuses.items(), key=lambda kv: (kv[0] == "none", kv[0]))
    sizes = [(f"≤ {binary(bound)}", index.sizes.get(i, 0)) for i, bound in enumerate(SIZE_BOUNDS)]
    sizes.append((f"> {binary(SIZE_BOUNDS[-1])}", index.sizes.get(len(SIZE_BOUNDS), 0)))
    while sizes and not sizes[-1][1]:
        sizes.pop()
    mimes = index.mimes.most_common(15)
    parts = [bar_chart([(f"status {s}", n) for s, n in statuses], "Records by HTTP status"),
             table(("status", "records", "share"),
                   [(s, n, f"{n / index.records:.1%}") for s, n in statuses], "statuses"),
             bar_chart(mimes, f"Records by MIME type (top {len(mimes)} of {len(index.mimes)})"),
             bar_chart(sizes, "Records by compressed size in the WARC file")]
    errors = (facts.stats or {}).get("errors") or {}
    parts.append("<h3>Fetch errors (no record in the archive)</h3>" + (
        table(("kind", "count"), sorted(errors.items())) if errors
        else "<p>none</p>" if facts.stats is not None else missing("counted in stats.json, written when the crawl ends")))
    return "".join(parts)


def host_rows(items: Iterable[tuple[str, HostRow]]) -> list[tuple[str, int, int, int, int]]:
    return [(host, row.records, row.pages, row.errors, row.bytes) for host, row in items]


def hosts(index: IndexFacts, top: int) -> str:
    if not index.hosts:
        return missing("no record indexed yet")
    header = ("host", "records", "pages", "errors (≥ 400)", "bytes")
    by_pages = sorted(index.hosts.items(), key=lambda kv: (-kv[1].pages, kv[0]))[:top]
    erring = sorted((kv for kv in index.hosts.items() if kv[1].errors), key=lambda kv: (-kv[1].errors, kv[0]))[:top]
    errors_title = (f"By errors (top {len(erring)} of {sum(1 for r in index.hosts.values() if r.errors):,} hosts "
                    "with an error)") if erring else "By errors"
    return (f"<h3>By pages (top {len(by_pages)} of {len(index.hosts):,})</h3>"
            + table(header, host_rows(by_pages), "hosts-by-pages")
            + f"<h3>{errors_title}</h3>"
            + (table(header, host_rows(erring), "hosts-by-errors") if erring else "<p>no page with a status of 400 or more</p>"))


def seeds(index: IndexFacts, top: int) -> str:
    if not index.seeds:
        return missing("no seed list in crawl.json")
    outcomes = Counter(status or "not captured yet" for _, status in index.seeds.values())
    listed = sorted(index.seeds.items(), key=lambda kv: (kv[1][1] == "200", kv[0]))[:top]  # trouble first
    return (table(("first capture", "seeds"), sorted(outcomes.items()), "seed-outcomes")
            + f"<h3>{len(listed)} of {len(index.seeds):,} seeds, those not answered 200 first</h3>"
            + table(("seed", "status of its first capture"),
                    [(seed, status or "not captured yet") for seed, (_, status) in listed], "seeds"))


def robots_files(census: RobotsFiles) -> str:
    delays = census.crawl_delays
    spread = (f"{len(delays):,} (from {delays[0]:g} s to {delays[-1]:g} s, median {delays[len(delays) // 2]:g} s)"
              if delays else "0")
    return table(("what the parsed files asked of this crawl", "robots.txt files"), [
        ("read from the WARC files", census.read),
        ("not readable yet (a record not yet flushed)", census.unread),
        ("unparseable (disallow all)", census.unparseable),
        ("disallow / to our user agent", census.root_disallowed),
        ("a Crawl-delay for our user agent", spread),
    ], "robots-files")


def robots(facts: CrawlFacts) -> str:
    index, stats = facts.index, facts.stats
    parts = []
    if index.robots:
        parts.append(table(("outcome (RFC 9309)", "robots.txt answers"), sorted(index.robots.items()), "robots"))
        parts.append(robots_files(facts.robots_files))
    else:
        parts.append(missing("no robots.txt answer in the archive"))
    if stats is not None:
        failed = {k: v for k, v in (stats.get("errors") or {}).items() if k.startswith("robots_")}
        parts.append(table(("counter (stats.json)", "count"), [
            ("robots.txt responses", stats.get("robots", 0)),
            ("URLs robots.txt disallowed", stats.get("robots_disallowed", 0)),
            *((f"fetch failed: {k.removeprefix('robots_')} (unreachable: disallow all)", v) for k, v in sorted(failed.items())),
        ]))
    else:
        parts.append(missing("the URLs robots.txt disallowed are counted in stats.json, written when the crawl ends"))
    return "".join(parts)


def histogram_rows(histogram: dict[str, Any]) -> list[tuple[str, float]]:
    """Bucket counts as bars, ascending: ``≤ bound s``, and ``> last bound s`` for the open bucket."""
    counts = histogram.get("counts") or {}
    bounds = sorted((k for k in counts if k != "+Inf"), key=float)  # stats.json sorts its keys as text
    rows = [(f"≤ {k} s", float(counts[k])) for k in bounds] + [(f"> {bounds[-1] if bounds else 0} s",
                                                                 float(counts.get("+Inf", 0)))]
    while len(rows) > 1 and not rows[-1][1]:  # the empty buckets above the longest observation
        rows.pop()
    return rows


def politeness(facts: CrawlFacts) -> str:
    settings = (facts.config or {}).get("politeness") or {}
    parts = [table(("setting", "seconds"), sorted(settings.items()))] if settings else []
    waits = ((facts.stats or {}).get("histograms") or {}).get("politeness_wait_seconds")
    if waits:
        total = sum((waits.get("counts") or {}).values())
        parts.append(f"<p>{total:,} waits of the todo filler for a host and an IP to become polite, "
                     f"{waits.get('sum', 0.0):,.1f} s in all (mean {waits.get('sum', 0.0) / max(total, 1):.3f} s), "
                     "counted since the agents last started.</p>")
        parts.append(bar_chart(histogram_rows(waits), "Politeness waits (seconds the todo filler slept)"))
    else:
        parts.append(missing("the politeness-wait histogram is written to stats.json when the crawl ends "
                             "(crawls before the report existed did not write it)"))
    latency = ((facts.stats or {}).get("histograms") or {}).get("fetch_latency_seconds")
    if latency:
        parts.append(bar_chart(histogram_rows(latency), "Fetch latency (start of a fetch to its last byte)"))
    if facts.stats is not None:
        parts.append(f"<p>Fetchers found the todo ring empty {facts.stats.get('todo_waits', 0):,} times "
                     f"({facts.stats.get('todo_wait_seconds', 0.0):,.0f} fetcher-seconds).</p>")
    return "".join(parts)


def duplicates(facts: CrawlFacts) -> str:
    index = facts.index
    parts = [table(("in the archive", "count"), [
        ("revisit records (identical payload or 304)", index.revisit_records),
        ("URLs captured more than once", index.recaptured_urls),
        ("captures of a URL captured before", index.recaptures),
    ], "revisits")]
    if facts.stats is not None:
        store = facts.stats.get("store") or {}
        frontier = facts.stats.get("frontier") or {}
        parts.append(table(("counter (stats.json)", "count"), [
            ("revisits of an identical payload", store.get("revisits_identical", 0)),
            ("revisits answered 304 Not Modified", store.get("revisits_not_modified", 0)),
            ("near-duplicates stored", store.get("near_duplicates_stored", 0)),
            ("near-duplicates skipped", store.get("near_duplicates_skipped", 0)),
            ("links the URL cache knew (duplicate links)", frontier.get("cache_hits", 0)),
            ("URLs discovered (new to the sieve)", frontier.get("discovered", 0)),
        ]))
    else:
        parts.append(missing("the store's duplicate counters are in stats.json, written when the crawl ends"))
    return "".join(parts)


def ranking(rows: list[RankRow] | None, top: int) -> str:
    if not rows:
        return missing("no rank-host.csv in the output folder: run `crawl rank OUT_DIR` first")
    firsts = [sorted(rows, key=key)[:top] for key in (lambda r: r.k, lambda r: r.k_star, lambda r: r.k2)]
    return (f"<p>{len(rows):,} hosts ranked by <code>crawl rank</code> (rank-host.csv).</p>"
            + table(("#", "PageRank (K)", "CheiRank (K*)", "2DRank (K2)"),
                    [(i, a.host, b.host, c.host) for i, (a, b, c) in enumerate(zip(*firsts), start=1)], "ranking"))


def policy(facts: PolicyFacts | None) -> str:
    if facts is None:
        return missing("the crawl ran the default policy (breadth-first), which keeps no model")
    parts = [table(("", ""), [("policy", facts.name),
                              ("model", str(facts.model) if facts.model else "none"),
                              ("model files", ", ".join(facts.model_files) or "none found")])]
    for name, counts in sorted(facts.counters.items()):
        rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        parts.append(f"<h3>{escape(name)}</h3>" + table(("key", "count"), rows, "policy-counter"))
    if not facts.counters:
        parts.append(missing("the policy's counters are in stats.json, written when the crawl ends"))
    if facts.report_md is not None and facts.report_text is not None:
        parts.append(f"<details><summary>The model's own report, <code>{escape(str(facts.report_md))}</code> "
                     f"(its clusters, edges and tables)</summary>{markdown_html(facts.report_text)}</details>")
    if facts.graph_svg and "<svg" in facts.graph_svg:
        svg = facts.graph_svg
        parts.append('<h3>The model\'s graph</h3><div class="model-graph">' + svg[svg.find("<svg"):] + "</div>")
    return "".join(parts)


def render(facts: CrawlFacts, now: float, top: int = 25) -> str:
    """The whole page, written at ``now`` (unix seconds), with ``top`` rows in the top-N tables."""
    bodies = {"timeline": timeline(facts.index), "mix": mix(facts), "hosts": hosts(facts.index, top),
              "seeds": seeds(facts.index, top),
              "robots": robots(facts), "politeness": politeness(facts), "duplicates": duplicates(facts),
              "ranking": ranking(facts.ranking, top), "policy": policy(facts.policy)}
    nav = " ".join(f'<a href="#{key}">{escape(title)}</a>' for key, title in SECTIONS)
    sections = "".join(f'<section id="{key}"><h2>{escape(title)}</h2>{bodies[key]}</section>' for key, title in SECTIONS)
    title = f"Crawl report: {facts.out}"
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
            f"<p>Written {stamp(int(now))} by <code>crawl report</code> from the folder's files.</p>"
            f"<nav>{nav}</nav>{summary(facts)}{sections}</body></html>\n")
