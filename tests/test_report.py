"""``crawl report OUT_DIR`` (engine/report_cli.py, tools/report_*.py): a real crawl of the in-vitro web, then its report.

The report's tables are checked against the archive itself: the host table against the CDXJ
indexes, the status mix against the WARC records read with warcio. The page must be
self-contained and render in headless Chromium without a console error, and a folder still being
written (a torn last index line, a WARC file cut inside a record, no stats.json yet) must give a
report too.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import lxml.html
import orjson
import pytest
from warcio.archiveiterator import ArchiveIterator

from bench.invitro import WebModel, WebParams
from frontier.markdown_table import markdown_table
from frontier.svg_graph import Edge, Node, circle_graph
from store.cdxj import parse_line
from tests.browser import browser, watched_page
from tests.invitro_harness import WebThread, crawl_command, run_crawl, when_requests
from tools.report_data import host_of

WEB = WebParams(hosts=14, hosts_per_ip=3, mean_pages=8, max_pages=16, mean_links=8, page_bytes=2000,
                frac_404=0.08, frac_500=0.04, duplicate_share=0.2, robots_crawl_delay_share=0.4,
                robots_crawl_delay=0.1, robots_5xx_share=0.1)
LIVE_WEB = WebParams(hosts=60, hosts_per_ip=3, mean_pages=25, max_pages=40, mean_links=8, page_bytes=2000)
SECTIONS = ["timeline", "mix", "hosts", "seeds", "robots", "politeness", "duplicates", "ranking", "policy"]


def crawl_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=120)


def report_of(out: Path, *args: str) -> lxml.html.HtmlElement:
    proc = crawl_cli("report", str(out), "--top", "100", *args)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return lxml.html.fromstring((out / "report.html").read_bytes())


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    web = WebThread(WEB, tmp / "requests.jsonl")
    try:
        result = run_crawl(tmp / "out", web.model.seeds(WEB.hosts), dns=web.web.dns_address,
                           settings=["engine.processes=2", "politeness.host_delay=0.05", "politeness.ip_delay=0.01"])
    finally:
        web.stop()
    assert result.stats["stop_reason"] == "done", result.process.stderr[-3000:]
    ranked = crawl_cli("rank", str(result.out))
    assert ranked.returncode == 0, ranked.stderr
    return result.out


def index_lines(out: Path) -> list[bytes]:
    return [line for path in sorted((out / "warc").glob("*.cdxj*")) for line in path.read_bytes().splitlines()]


def seeds_hosts(out: Path) -> list[str]:
    return [host_of(url) for url in orjson.loads((out / "crawl.json").read_bytes())["seeds"]]


def table_rows(page: lxml.html.HtmlElement, css_class: str) -> list[list[str]]:
    return [[cell.text_content() for cell in row.xpath("./td")] for row in page.xpath(f'//table[@class="{css_class}"]/tbody/tr')]


def count(text: str) -> int:
    return int(text.replace(",", ""))


def test_the_host_table_counts_what_the_cdxj_indexes_hold(crawl: Path) -> None:
    page = report_of(crawl)
    records: Counter[str] = Counter()
    pages: Counter[str] = Counter()
    for line in index_lines(crawl):
        entry = parse_line(line)
        records[host_of(entry.url)] += 1
        pages[host_of(entry.url)] += not entry.url.endswith("/robots.txt") and not entry.url.startswith("dns:")
    rows = table_rows(page, "hosts-by-pages")
    assert {row[0]: (count(row[1]), count(row[2])) for row in rows} == {h: (records[h], pages[h]) for h in records}
    assert len(rows) == len(records) >= WEB.hosts
    assert [count(row[2]) for row in rows] == sorted(pages.values(), reverse=True)  # most pages first
    seeds = {row[0]: row[1] for row in table_rows(page, "seeds")}
    assert seeds == {f"http://{host}/": "200" for host in seeds_hosts(crawl)}  # a home page is never an error
    erring = table_rows(page, "hosts-by-errors")
    assert erring and all(count(row[3]) > 0 for row in erring)  # the web answers 404 and 500 to some pages


def test_the_status_mix_adds_up_to_the_records_of_the_warc_files(crawl: Path) -> None:
    page = report_of(crawl)
    in_warc: Counter[str] = Counter()
    for path in (crawl / "warc").glob("*.warc.gz"):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type in ("response", "revisit"):
                    status = record.http_headers.get_statuscode() if record.http_headers else None
                    in_warc[status or "none"] += 1
    mix = {row[0]: count(row[1]) for row in table_rows(page, "statuses")}
    assert mix == dict(in_warc) and sum(mix.values()) == sum(in_warc.values())
    assert {"200", "404", "500"} <= set(mix)
    outcomes = {row[0]: count(row[1]) for row in table_rows(page, "robots")}
    assert sum(outcomes.values()) == sum(1 for line in index_lines(crawl) if b"/robots.txt " in line.split(b" {")[0] + b" ")


def test_the_robots_census_finds_the_crawl_delays_the_web_set(crawl: Path) -> None:
    page = report_of(crawl)
    model = WebModel(WEB, 0)  # robots.txt bodies depend on the host's name only
    bodies = [model.robots_txt(host.split(":")[0]) for host in seeds_hosts(crawl)]
    delays = sum(1 for status, body in bodies if status == 200 and b"Crawl-delay:" in body)
    assert 0 < delays < len(bodies)
    census = {row[0]: row[1] for row in table_rows(page, "robots-files")}
    assert census["read from the WARC files"] == str(sum(1 for status, _ in bodies if status == 200))
    assert census["a Crawl-delay for our user agent"].startswith(f"{delays} (from {WEB.robots_crawl_delay:g} s")
    assert census["disallow / to our user agent"] == "0"  # only BadBot is shut out


def test_the_page_is_self_contained(crawl: Path) -> None:
    page = report_of(crawl)
    for element in page.iter():
        for attribute in ("src", "href", "action", "data"):
            value = element.get(attribute)
            assert value is None or value.startswith("#"), (element.tag, attribute, value)
    assert not page.xpath("//script | //link | //iframe | //img | //object | //embed")
    for style in page.xpath("//style"):
        assert "url(" not in style.text_content() and "@import" not in style.text_content()
    text = page.text_content()
    assert "http://" in text  # the crawled URLs and hosts appear, as text
    assert [s.get("id") for s in page.xpath("//section")] == SECTIONS
    assert len(page.xpath("//section[@id='timeline']//polyline")) == 2


def test_it_renders_in_headless_chromium_without_a_console_error(crawl: Path, tmp_path: Path) -> None:
    report_of(crawl)
    with browser() as chromium:
        watched = watched_page(chromium)
        watched.page.goto((crawl / "report.html").as_uri())
        assert watched.page.locator("section h2").count() == len(SECTIONS)
        assert watched.page.locator("svg.chart").count() >= 5
        watched.page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert watched.errors == []
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_the_politeness_waits_and_the_ranking_are_reported(crawl: Path) -> None:
    stats = orjson.loads((crawl / "stats.json").read_bytes())
    waits = stats["histograms"]["politeness_wait_seconds"]  # the agents' histograms, added up
    assert sum(waits["counts"].values()) > 0 and waits["sum"] > 0
    page = report_of(crawl)
    politeness = page.xpath("//section[@id='politeness']")[0]
    assert f"{sum(waits['counts'].values()):,} waits" in politeness.text_content()
    assert not politeness.xpath(".//*[@class='missing']")
    bounds = [float(t.text.split()[1]) for t in politeness.xpath(".//svg[1]//text") if t.text.startswith("≤")]
    assert bounds and bounds == sorted(bounds)  # the buckets in order, though stats.json sorts its keys as text
    ranked = table_rows(page, "ranking")
    assert len(ranked) == len({host_of(parse_line(line).url) for line in index_lines(crawl)})
    revisits = {row[0]: count(row[1]) for row in table_rows(page, "revisits")}
    in_index = sum(1 for line in index_lines(crawl) if b'"mime":"warc/revisit"' in line)
    assert revisits["revisit records (identical payload or 304)"] == in_index


def test_a_folder_still_being_written_gives_a_report(crawl: Path, tmp_path: Path) -> None:
    """As a running crawl leaves it: an open index whose last line is torn, a WARC file cut inside a record, no stats.json."""
    out = tmp_path / "running"
    shutil.copytree(crawl, out, ignore=shutil.ignore_patterns("stats.json", "report.html", "rank-host.csv"))
    index = sorted((out / "warc").glob("*.cdxj"))[0]
    lines = index.read_bytes().splitlines(keepends=True)
    torn = index.with_name(index.name + ".open")
    torn.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    index.unlink()
    expected: Counter[str] = Counter()
    for line in index_lines(out):
        try:
            expected[host_of(parse_line(line).url)] += 1
        except ValueError:
            continue  # the torn line
    finishing = sorted((out / "warc").glob("*.cdxj"))[0]  # an index sorted, its open file not yet removed: once
    shutil.copy(finishing, finishing.with_name(finishing.name + ".open"))
    warc = sorted((out / "warc").glob("*.warc.gz"))[0]
    data = warc.read_bytes()
    warc.with_name(warc.name + ".open").write_bytes(data[: len(data) - 300])
    warc.unlink()
    page = report_of(out)
    summary = page.xpath("//table")[0].text_content()
    assert "1 still open" in summary and "1 torn lines skipped" in summary and "running" in summary
    rows = table_rows(page, "hosts-by-pages")
    assert {row[0]: count(row[1]) for row in rows} == dict(expected)
    for section in ("robots", "politeness", "duplicates", "ranking"):
        assert page.xpath(f"//section[@id='{section}']//p[@class='missing']"), section


def test_a_crawl_that_is_running_gives_a_report(tmp_path: Path) -> None:
    """A real crawl, reported on while it runs: its indexes are open and flushed in 64 KiB blocks, so a line may be torn."""
    web = WebThread(LIVE_WEB, tmp_path / "requests.jsonl")
    out = tmp_path / "out"
    try:
        answered = when_requests(web, 700)
        crawl = subprocess.Popen(crawl_command(out, web.model.seeds(LIVE_WEB.hosts), dns=web.web.dns_address,
                                               settings=["engine.processes=1", "politeness.host_delay=0.05",
                                                         "politeness.ip_delay=0"]),
                                 start_new_session=True, stderr=subprocess.DEVNULL)
        try:
            assert answered.wait(120), "the crawl did not get going"
            page = report_of(out)
            assert crawl.poll() is None, "the crawl ended before the report was written"
        finally:
            os.killpg(crawl.pid, signal.SIGTERM)
            crawl.wait(60)
    finally:
        web.stop()
    summary = page.xpath("//table")[0].text_content()
    assert "running" in summary and "1 still open" in summary, summary
    indexed = count(summary.split("records indexed")[1].split("hosts")[0])
    assert indexed > 0
    assert sum(count(row[1]) for row in table_rows(page, "hosts-by-pages")) == indexed


def test_an_empty_folder_says_not_recorded_everywhere(tmp_path: Path) -> None:
    page = report_of(tmp_path)
    for section in SECTIONS:
        assert "not recorded by this crawl" in page.xpath(f"//section[@id='{section}']")[0].text_content(), section
    missing = crawl_cli("report", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_the_policy_section_shows_the_counters_and_the_models_graph(crawl: Path, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "graph.svg").write_text(circle_graph([Node("C0", "/posts/*"), Node("C1", "/users/*")],
                                                  [Edge("C0", "C1", "kept", "C0 → C1")], "the cluster graph"))
    (model / "report.md").write_text("\n".join(["# Cluster-graph model", "", "Seed clusters: `/`", "",
                                                 *markdown_table(["cluster", "size"], [["/posts/*", 7], ["a|b", 3]])]))
    out = tmp_path / "policy-crawl"
    shutil.copytree(crawl, out, ignore=shutil.ignore_patterns("report.html"))
    stats = orjson.loads((out / "stats.json").read_bytes())
    stats["config"]["policy"] = {"name": "clustergraph", "model": str(model)}
    stats["policy"] = {"cluster_pages": {"C0": 7, "C1": 3}, "links_dropped": {"C1": 2}}
    (out / "stats.json").write_bytes(orjson.dumps(stats))
    page = report_of(out)
    policy = page.xpath("//section[@id='policy']")[0]
    assert "clustergraph" in policy.text_content() and str(model / "report.md") in policy.text_content()
    own = policy.xpath(".//details")[0]  # the model's own report, its tables rendered
    assert own.xpath(".//h4")[0].text_content() == "Cluster-graph model"
    assert [[td.text_content() for td in tr.xpath("./td")] for tr in own.xpath(".//tbody/tr")] == [["/posts/*", "7"],
                                                                                                  ["a|b", "3"]]
    assert [[row[0], count(row[1])] for row in table_rows(page, "policy-counter")] == [["C0", 7], ["C1", 3], ["C1", 2]]
    assert policy.xpath(".//svg//path[contains(@class, 'edge')]")
