"""``crawl learn clustergraph``: its argument errors, and one learn of the social lab's blog over real sockets.

The end-to-end learn (the lab's DNS, per-user hosts, each with its robots.txt) is judged from
the server's request log (each page once, robots.txt first on every host and obeyed, the page
budget held) and from the files it leaves; then ``--from-sample`` retrains from the saved
sample, offline, into a byte-identical model.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from protego import Protego

from bench.invitro import LogRecord
from bench.invitro.social.web import SocialParams, SocialWeb
from engine import cli
from engine.config import ConfigError
from engine.learn import LearnError, model_params, sample_site, site_of, split_settings
from engine.learn_fetch import Page
from frontier.clustergraph.model import Params
from frontier.clustergraph.sampler import xi_for
from frontier.clustergraph.train import read_sample
from frontier.urls import host_of, split
from tests.invitro_harness import USER_AGENT, WebThread, page_requests, url_of

MAX_PAGES = 60
PILOT_PAGES = 20


def learn_command(out: Path, seeds: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "engine.cli", "learn", "clustergraph", "--seeds", str(seeds), "--out", str(out),
            *extra]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        status = cli.main(argv)
    except SystemExit as e:  # argparse's own errors
        status = int(e.code or 0)
    return status, capsys.readouterr().err


@pytest.fixture
def seeds_file(tmp_path: Path) -> Path:
    path = tmp_path / "seeds.txt"
    path.write_text("# one site\nhttp://bob.blog.test/\nhttp://alice.blog.test/post/1\n")
    return path


# -- argument errors: exit 2, one line naming the key --------------------------------------------


@pytest.mark.parametrize(
    ("setting", "key"),
    [("no_such_knob=1", "no_such_knob"), ("tau=high", "tau"), ("bins=2.5", "bins"), ("literal=3", "literal"),
     ("politeness.no_such_delay=1", "politeness.no_such_delay")],
)
def test_a_bad_setting_is_one_config_error_line_naming_the_key(
    setting: str, key: str, seeds_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["learn", "clustergraph", "--seeds", str(seeds_file), "--out", str(tmp_path / "m"), "--max-pages", "5",
            "--set", setting]
    status, err = run_cli(argv, capsys)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"crawl: config error: {key}:"), err
    assert not (tmp_path / "m").exists(), "nothing is written before the arguments are checked"


def test_missing_seeds_or_budget_exit_2_naming_them(
    tmp_path: Path, seeds_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = run_cli(["learn", "clustergraph", "--out", str(tmp_path / "m"), "--max-pages", "5"], capsys)
    assert status == 2 and "--seeds" in err
    status, err = run_cli(["learn", "clustergraph", "--seeds", str(tmp_path / "none.txt"), "--out",
                           str(tmp_path / "m"), "--max-pages", "5"], capsys)
    assert status == 2 and err.startswith("crawl: config error: --seeds: cannot read"), err
    status, err = run_cli(["learn", "clustergraph", "--seeds", str(seeds_file), "--out", str(tmp_path / "m")], capsys)
    assert status == 2 and err.startswith("crawl: config error: --max-pages:"), err
    status, err = run_cli(["learn", "nothing", "--seeds", str(seeds_file), "--out", str(tmp_path / "m")], capsys)
    assert status == 2 and "clustergraph" in err
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    status, err = run_cli(["learn", "clustergraph", "--seeds", str(seeds_file), "--out", str(tmp_path / "m"),
                           "--from-sample", str(tmp_path / "bad.jsonl")], capsys)
    assert status == 2 and err.startswith("crawl: config error: --from-sample:"), err


def test_seeds_of_two_sites_are_refused() -> None:
    assert site_of(["http://bob.blog.test/", "http://blog.test:8080/x"]) == "blog.test"
    with pytest.raises(ConfigError) as raised:
        site_of(["http://bob.blog.test/", "http://forum.test/"])
    assert raised.value.key == "--seeds" and "blog.test, forum.test" in raised.value.problem


def test_settings_split_into_model_parameters_and_crawl_keys() -> None:
    params, crawl = split_settings(["tau=0.5", "politeness.host_delay=0.1", "edge_universe=sampled", "xi=1"])
    assert crawl == ["politeness.host_delay=0.1"]
    model = model_params(params)
    assert (model.tau, model.edge_universe, model.xi) == (0.5, "sampled", 1.0)
    assert model_params([]) == type(model)()


# -- the sampling loop, on a site in memory --------------------------------------------------------


class SiteInMemory:
    """What ``sample_site`` needs of a ``SiteClient``, over a dict of pages: url → outlinks."""

    def __init__(self, links: dict[str, list[str]], disallowed: set[str] = set()) -> None:
        self.links, self.disallowed = links, disallowed
        self.fetched: list[str] = []
        self.downloads = self.robots_fetches = 0
        self.errors: dict[str, int] = {}

    async def fetch(self, url: str) -> Page | None:
        if url in self.disallowed:
            return None
        self.downloads += 1
        self.fetched.append(url)
        return Page(url, url, 200 if url in self.links else 404, tuple(self.links.get(url, ())))


def ring(pages: int, degree: int) -> dict[str, list[str]]:
    """Page i links to the ``degree`` pages after it, and page 0 also to one that does not exist."""
    links = {f"http://a.test/{i}": [f"http://a.test/{(i + d) % pages}" for d in range(1, degree + 1)]
             for i in range(pages)}
    links["http://a.test/0"].append("http://a.test/gone")
    return links


@pytest.mark.parametrize("batch", [1, 3])
async def test_the_pilot_is_reused_and_the_budget_holds(batch: int) -> None:
    site = SiteInMemory(ring(200, 10), disallowed={"http://a.test/5"})
    kept: list[int] = []
    done = await sample_site(site, ["http://a.test/0"], Params(pilot_pages=12, batch=batch), 50,  # type: ignore[arg-type]
                             lambda record: kept.append(record.seq))
    assert site.downloads == len(site.fetched) == 50 and len(set(site.fetched)) == 50
    assert site.fetched[:3] == ["http://a.test/0", "http://a.test/1", "http://a.test/2"], "the pilot is breadth-first"
    # the pilot: 0, 1..4, 6..10 (5 is disallowed), gone (404), 11; K̄ over the eleven pages answered 200
    assert done.pilot_pages == 12 and done.mean_out_degree == pytest.approx(111 / 11)
    assert done.xi == xi_for(done.mean_out_degree)
    urls = [r.url for r in done.records]
    assert urls[0] == "http://a.test/0" and len(set(urls)) == len(urls) and set(urls) <= set(site.fetched)
    assert kept == [r.seq for r in done.records] == list(range(len(urls)))
    assert "http://a.test/5" not in urls and done.disallowed <= 1
    assert done.failed == sum(r.status == 404 for r in done.records)


async def test_a_set_xi_is_used_as_it_is() -> None:
    done = await sample_site(SiteInMemory(ring(40, 4)), ["http://a.test/0"], Params(xi=1.0, pilot_pages=3), 10,  # type: ignore[arg-type]
                             lambda record: None)
    assert done.xi == 1.0 and done.withdrawn == 0, "ξ = 1: nothing is ever withdrawn"


async def test_no_seed_page_is_a_learn_error_saying_why() -> None:
    with pytest.raises(LearnError, match="http://a.test/0 .disallowed by robots.txt."):
        await sample_site(SiteInMemory(ring(5, 2), disallowed={"http://a.test/0"}), ["http://a.test/0"],  # type: ignore[arg-type]
                          Params(), 10, lambda record: None)


# -- one learn of the in-vitro web --------------------------------------------------------------


@dataclass
class Learned:
    web: WebThread
    log: list[LogRecord]
    out: Path
    seeds: Path
    stderr: str


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> Learned:
    tmp = tmp_path_factory.mktemp("learn")
    web = WebThread(None, tmp / "requests.jsonl", social=SocialParams(sites=("blog",)))  # type: ignore[arg-type]
    seeds = tmp / "seeds.txt"
    seeds.write_text(web.web.seeds[0] + "\n")
    out = tmp / "model"
    try:
        proc = subprocess.run(
            learn_command(out, seeds, "--dns", str(web.web.dns_address), "--max-pages", str(MAX_PAGES),
                          "--set", 'network.allow_networks=["127.0.0.0/8"]', "--set", f'engine.user_agent="{USER_AGENT}"',
                          "--set", "politeness.host_delay=0.01", "--set", "politeness.ip_delay=0.0",
                          "--set", f"pilot_pages={PILOT_PAGES}", "--set", "batch=2", "--set", "min_support=2"),
            capture_output=True, text=True, timeout=120,
        )
    finally:
        log = web.stop()
    assert proc.returncode == 0, proc.stderr
    return Learned(web, log, out, seeds, proc.stderr)


def test_no_page_is_fetched_twice_and_the_budget_holds(learned: Learned) -> None:
    pages = [url_of(r, learned.web.model.port) for r in page_requests(learned.log)]
    assert len(pages) == MAX_PAGES, "the budget is spent whole: the small web has more pages than that"
    assert len(set(pages)) == len(pages), "a page was downloaded twice"


def robots_rules(model: SocialWeb, host: str) -> Protego:
    response = model.respond(host, "/robots.txt")
    assert response.status == 200
    return Protego.parse(response.body.decode())


def test_robots_txt_comes_first_on_every_host_and_is_obeyed(learned: Learned) -> None:
    model = learned.web.model
    assert isinstance(model, SocialWeb)
    first: dict[str, str] = {}
    for record in sorted(learned.log, key=lambda r: r.start):
        first.setdefault(record.host, record.target)
        if record.target != "/robots.txt":
            url = url_of(record, model.port)
            assert robots_rules(model, record.host).can_fetch(url, USER_AGENT), url
    assert len(first) > 1 and all(target == "/robots.txt" for target in first.values()), first
    robots = [r.host for r in learned.log if r.target == "/robots.txt"]
    assert len(robots) == len(set(robots)), "robots.txt fetched more than once on a host"


def test_the_sample_holds_the_drawn_pages_in_order(learned: Learned) -> None:
    records = read_sample(learned.out / "sample.jsonl")
    pages = {url_of(r, learned.web.model.port) for r in page_requests(learned.log)}
    assert [r.seq for r in records] == list(range(len(records)))
    assert 0 < len(records) <= MAX_PAGES
    assert {r.url for r in records} <= pages, "every sampled page was downloaded"
    assert len({r.url for r in records}) == len(records)
    assert records[0].url == learned.seeds.read_text().strip(), "U starts as the seeds"
    for r in records:
        for link in r.outlinks:
            assert host_of(split(link)[0]).endswith(".blog.test") and "#" not in link and link != r.url
        assert len(set(r.outlinks)) == len(r.outlinks)
        if r.status in (301, 302):
            assert r.final_url != r.url and r.outlinks in ((), (r.final_url,))
            assert r.blocks == (), "a redirect has no text of its own"
        elif r.status == 200:
            assert r.blocks and all(words > 0 for _, words in r.blocks), "a page's text is kept for rule T"
            assert r.media_type == "text/html", "and its media type, for rule F"


def test_the_model_files_and_the_summary(learned: Learned) -> None:
    for name in ("model.json", "report.md", "graph.svg", "sample.jsonl", "sampling.json"):
        assert (learned.out / name).stat().st_size > 0, name
    sampling = orjson.loads((learned.out / "sampling.json").read_bytes())
    assert sampling["downloads"] == MAX_PAGES and sampling["site"] == "blog.test"
    assert sampling["pilot_pages"] == PILOT_PAGES
    assert sampling["mean_out_degree"] > 1 and 0 < sampling["xi"] <= 1
    assert "learn: clusters:" in learned.stderr and "model.json" in learned.stderr


def test_retraining_from_the_sample_gives_a_byte_identical_model(learned: Learned, tmp_path: Path) -> None:
    """Offline: the web is closed by now."""
    out = tmp_path / "again"
    proc = subprocess.run(
        learn_command(out, learned.seeds, "--from-sample", str(learned.out / "sample.jsonl"),
                      "--set", f"pilot_pages={PILOT_PAGES}",
                      "--set", "batch=2", "--set", "min_support=2"),
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "model.json").read_bytes() == (learned.out / "model.json").read_bytes()
    assert (out / "sample.jsonl").read_bytes() == (learned.out / "sample.jsonl").read_bytes()


def test_a_site_that_answers_nothing_is_a_clear_error(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\n")  # the discard port: nothing listens there
    proc = subprocess.run(
        learn_command(tmp_path / "m", seeds, "--max-pages", "5", "--set", 'network.allow_networks=["127.0.0.0/8"]',
                      "--set", "network.connect_timeout=2"),
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1
    assert "no seed page could be fetched: http://127.0.0.1:9/" in proc.stderr, proc.stderr
