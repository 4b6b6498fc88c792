"""The host quality filter's parts: the page reader on fixed pages (golden values), the features,
link features and BM25 of a hand-made model, the forest evaluator against scikit-learn, the filter's decision in the
frontier (n pages, then one score; stop drops queued and later URLs; memory freed), config errors."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import config as configuration
from engine.quality_text import page_text
from frontier.frontier import Frontier
from frontier.quality import FEATURES, LINK_FEATURES, LINKED_HOSTS, HostSample, PageText, QualityFilter, reads_page
from frontier.quality_model import Model, forest_arrays, forest_probability
from frontier.settings import FrontierSettings

PAGE = (
    b"<!DOCTYPE html><html><head><title>Cheap Pills Online</title><style>p{color:red}</style></head>\n"
    b'<body><h1>Buy cheap pills</h1><script>var x = "hidden words";</script>\n'
    b'<p>Cheap pills, cheap PILLS! <a href="/a">best <b>offer</b></a> today.</p><!-- a comment --></body></html>\n'
)
WORDS = b"buy cheap pills cheap pills cheap pills best offer today".split()


def test_page_text_reads_the_visible_words_of_the_body() -> None:
    text = page_text(PAGE)
    assert text.words == WORDS  # script, style, comment and the head left out; lower case; punctuation gone
    assert text.title_words == 3
    assert text.anchor_words == 2  # "best offer", through the nested <b>
    assert text.html_bytes == len(PAGE) - PAGE.index(b"<body")
    assert text.text_bytes == len(b" ".join(WORDS)) == 56
    assert text.compressed_bytes == 41  # deflate of the repetitive text, zlib framing included


def test_page_text_of_odd_pages() -> None:
    assert page_text(b"").words == [] and page_text(b"").compressed_bytes == 0
    no_body = page_text(b"<p>Caf\xc3\xa9 na\xc3\xafve 42</p>")
    assert no_body.words == [b"caf\xc3\xa9", b"na\xc3\xafve", b"42"]  # UTF-8 letters stay inside their word
    long = page_text(b"<body><p>first</p>" + b"<p>word</p>" * 2000 + b"<footer><a href=/x>last links</a></footer>")
    assert long.html_bytes <= 3072 + 1 and len(long.words) < 300  # only both ends are read: the cost per page is bounded
    assert long.words[:2] == [b"first", b"word"] and long.words[-3:] == [b"word", b"last", b"links"]
    assert long.anchor_words == 2


def model(**changes: object) -> Model:
    n = len(FEATURES) + 3
    fields: dict[str, object] = dict(
        pages=3, read=3, vocabulary=["cheap", "pills", "offer"], idf=[1.0, 2.0, 0.5], avdl=10.0, popular=["cheap", "today"],
        trigrams={"cheap pills cheap": math.log(0.5)}, trigram_floor=math.log(0.01),
        mean=[50.0] + [0.0] * (n - 1), scale=[10.0] + [1.0] * (n - 1),
        classifier={"kind": "logistic", "coef": [1.0] + [0.0] * (n - 1), "intercept": 0.0},
    )
    fields.update(changes)
    return Model(**fields)  # type: ignore[arg-type]


def test_page_features_and_host_vector_golden() -> None:
    m = model()
    sample = HostSample()
    m.add_page(sample, page_text(PAGE))
    f = sample
    assert (f.pages, f.words, f.letters, f.title_words, f.anchor_words) == (1, 10, 47, 3, 2)
    assert (f.popular_words, f.popular_found) == (4, 2)  # cheap ×3, today; two popular words found
    assert f.terms == {b"cheap": 3, b"pills": 3, b"offer": 1}
    assert (f.trigrams, f.trigrams_seen) == (8, 2)
    assert f.trigram_logp == pytest.approx(2 * math.log(0.5) + 6 * math.log(0.01))
    content = m.content(sample, hosts_per_ip=7)
    assert content[:4] == [10.0, 3.0, 4.7, 0.2]
    assert content[6:8] == [0.4, 1.0] and content[-1] == 7.0  # both popular words are on the page
    assert content[8] == pytest.approx(-(2 * math.log(0.5) + 6 * math.log(0.01)) / 8)
    # BM25 with k1 = 1.2, b = 0.75: dl = avdl, so K = k1
    assert m.bm25(sample) == pytest.approx([1.0 * 2.2 * 3 / 4.2, 2.0 * 2.2 * 3 / 4.2, 0.5 * 2.2 * 1 / 2.2])
    m.add_page(sample, page_text(PAGE))  # a second page: dl = 2 avdl, K = 1.2 (0.25 + 1.5)
    assert m.bm25(sample)[2] == pytest.approx(0.5 * 2.2 * 2 / (1.2 * 1.75 + 2))


def test_link_features_golden() -> None:
    m = model()
    sample = HostSample("http://a.test")
    own = ["http://a.test/1", "http://a.test/2"]
    m.add_page(sample, PageText(100, 10, 5, 0, 0, [b"x"], [*own, "http://b.test/", "http://c.test/x", "http://b.test/y"]))
    m.add_page(sample, PageText(100, 10, 5, 0, 0, [b"x"], ["http://b.test/", "http://d.test:8080/"]))
    assert (sample.links, sample.external_links) == (7, 5)
    assert sample.linked == {"http://b.test": 3, "http://c.test": 1, "http://d.test:8080": 1}
    ips = {"http://a.test": "10.0.0.1", "http://b.test": "10.0.0.1", "http://c.test": "10.0.0.2"}.get  # d: unresolved
    # 3.5 links a page, 5 of 7 to other hosts, 3 other hosts over 2 pages, 5 links over 3 hosts;
    # of the 4 links to hosts of known address, 3 go to the host's own IP; by chance, with 2 hosts
    # on that IP of the 9 the crawl knows, 1 in 8 would: a lift of 6
    expected = [3.5, 5 / 7, 1.5, 5 / 3, (3 / 4) / (1 / 8)]
    assert Model.link_features(sample, "10.0.0.1", ips, 2, 9) == pytest.approx(expected)
    assert Model.link_features(sample, None, ips, 2, 9)[4] == 0.0  # the host's own address unknown
    assert Model.link_features(sample, "10.0.0.1", ips, 1, 9)[4] == 0.0  # alone on its IP: no lift
    vector = m.vector(sample, 2, "10.0.0.1", ips, 9)
    assert len(vector) == len(FEATURES) + 3
    assert list(vector[len(FEATURES) - len(LINK_FEATURES) : len(FEATURES)]) == pytest.approx(expected)
    assert page_text(PAGE, own).links == own  # the engine hands over the links it parsed


def test_a_sample_counts_links_to_a_bounded_number_of_hosts() -> None:
    m = model()
    sample = HostSample("http://a.test")
    m.add_page(sample, PageText(0, 0, 0, 0, 0, [], [f"http://h{i}.test/" for i in range(LINKED_HOSTS - 1)]))
    m.add_page(sample, PageText(0, 0, 0, 0, 0, [], ["http://h0.test/", "http://new1.test/", "http://new2.test/"]))
    assert len(sample.linked) == LINKED_HOSTS and sample.external_links == LINKED_HOSTS + 2
    assert sample.linked["http://h0.test"] == 2 and sample.linked["http://new1.test"] == 1
    assert "http://new2.test" not in sample.linked  # full: a new host is counted among the links only


def test_the_forest_evaluator_agrees_with_scikit_learn(tmp_path: Path) -> None:
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 6))
    y = (x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(scale=0.5, size=300) > 0).astype(int)
    forest = RandomForestClassifier(n_estimators=25, random_state=0).fit(x, y)
    arrays = forest_arrays(tree.tree_ for tree in forest.estimators_)
    m = model(classifier={"kind": "forest"}, forest=arrays)
    m.save(tmp_path)
    loaded = Model.load(tmp_path)
    probe = rng.normal(size=(50, 6))
    expected = forest.predict_proba(probe)[:, 1]
    assert [loaded.score(v) for v in probe] == pytest.approx(list(expected), abs=1e-12)
    assert [forest_probability(arrays, v) for v in probe] == pytest.approx(list(expected), abs=1e-12)


def test_a_model_folder_round_trips(tmp_path: Path) -> None:
    m = model(pages=100, read=20)
    m.save(tmp_path)
    loaded = Model.load(tmp_path)
    vector = m.vector(HostSample(), 3)
    assert loaded.score(vector) == m.score(vector) and (loaded.pages, loaded.read) == (100, 20)
    data = orjson.loads((tmp_path / "model.json").read_bytes())
    del data["read"]
    (tmp_path / "model.json").write_bytes(orjson.dumps(data))
    assert Model.load(tmp_path).read == 100  # learnt before --read: it read every page of its first n
    (tmp_path / "model.json").write_text("{}")
    with pytest.raises(ValueError, match="not a quality model"):
        Model.load(tmp_path)


# -- the decision, in the frontier ---------------------------------------------------------------

def read(page: PageText) -> Callable[[], PageText]:
    """What the engine hands the filter: a reader of the page's text, called if the filter reads it."""
    return lambda: page


SPAM = PageText(1000, 800, 100, 3, 0, [b"cheap"] * 100)  # 100 words a page: score ≈ sigmoid(5)
GOOD = PageText(1000, 300, 150, 3, 0, [b"river"] * 10)  # 10 words: score ≈ sigmoid(-4)


def crawl(tmp_path: Path, action: str, pages: int = 3) -> tuple[Frontier, QualityFilter, list[str]]:
    """Two hosts of 20 pages each, linked from their front pages; each fetched page goes to the filter."""
    quality = QualityFilter(model(), threshold=0.5, pages=pages, read=pages, action=action)
    f = Frontier(tmp_path / "frontier", FrontierSettings(host_delay=1.0, ip_delay=0.0, sieve_flush_interval=0.0,
                                                         workbench_bytes=1 << 20, sieve_bucket_bytes=1 << 12),
                 quality=quality)
    hosts = {"http://spam.test": SPAM, "http://good.test": GOOD}
    f.discover([f"{h}/" for h in hosts])
    fetched: list[str] = []
    now = 0.0
    for _ in range(10_000):
        if f.wants_flush(now):
            f.flush()
            f.flush_sieve(now, now)
        for vs in f.distribute(now):
            f.resolved(vs, "10.0.0.1")
        vs = f.acquire(now)
        if vs is None:
            deadline = f.next_deadline()
            if deadline is None and f.idle():
                break
            now = max(now + 0.01, deadline or 0.0)
            continue
        url = f.next_url(vs)
        fetched.append(url)
        f.succeeded(vs)
        f.release(vs, now)
        host = url.rsplit("/", 1)[0]
        if f.quality_wants(url):
            f.quality_page(url, read(hosts[host]))
        if url.endswith("/"):  # the front page links every page of its host, and the other host's pages
            others = [f"{h}/p{i}" for h in hosts for i in range(20)]
            f.discover(others, url)
    return f, quality, fetched


def test_stop_cuts_a_host_off_after_n_pages(tmp_path: Path) -> None:
    f, quality, fetched = crawl(tmp_path, "stop")
    spam = [u for u in fetched if u.startswith("http://spam.test")]
    good = [u for u in fetched if u.startswith("http://good.test")]
    assert len(spam) == 3  # n pages, then the score, then nothing more
    assert len(good) == 21  # the good host is crawled to the end
    stats = f.statistics()
    assert stats.drops["purged_quality"] == 21 - 3  # its queued URLs, dropped and counted
    later = [f"http://spam.test/p{i}" for i in range(25)]
    assert f.discover(later, "http://good.test/p1") == 0
    assert f.statistics().drops["quality"] == 25  # later links to it, dropped before the URL cache and the sieve
    assert stats.quality == {"pages_read": 6, "hosts_scored": 2, "hosts_stopped": 1, "hosts_deprioritized": 0,
                             "hosts_sampling": 0}
    assert quality.samples == {}  # every accumulator freed once its host was scored
    assert quality.judged == {"http://spam.test", "http://good.test"}
    # a stopped host's address stays known: the same-IP share of hosts linking to it counts it
    assert f.distributor.ip_of("http://spam.test") == "10.0.0.1" and f.distributor.ip_of("http://unknown.test") is None


def test_a_host_is_scored_once_on_its_first_n_pages(tmp_path: Path) -> None:
    verdicts = []
    quality = QualityFilter(model(), threshold=0.5, pages=3, read=3, action="stop")
    for i in range(3):
        assert quality.wants("http://spam.test")
        verdicts.append(quality.add("http://spam.test", read(SPAM), "10.0.0.1", hosts_on_ip=4))
    assert verdicts[:2] == [None, None]
    verdict = verdicts[2]
    assert verdict is not None and verdict.action == "stop" and verdict.pages == 3 and verdict.hosts_per_ip == 4
    assert verdict.score == pytest.approx(1 / (1 + math.exp(-5)))
    assert not quality.wants("http://spam.test")
    # the next host of that IP counts the stopped one, though it left the IP's workbench entry
    for _ in range(3):
        last = quality.add("http://other.test", read(GOOD), "10.0.0.1", hosts_on_ip=3)
    assert last is not None and last.action == "keep" and last.hosts_per_ip == 4


@given(pages=st.integers(1, 500), read_=st.integers(1, 600))
def test_the_pages_read_are_evenly_spread_and_end_on_the_last(pages: int, read_: int) -> None:
    chosen = [seen for seen in range(1, pages + 1) if reads_page(seen, pages, read_)]
    assert len(chosen) == min(pages, read_) and chosen[-1] == pages
    gaps = {b - a for a, b in zip([0, *chosen], chosen)}
    assert max(gaps) - min(gaps) <= 1


def test_reads_of_the_first_hundred_are_every_fifth() -> None:
    assert [seen for seen in range(1, 101) if reads_page(seen, 100, 20)] == list(range(5, 101, 5))


def test_a_host_is_scored_on_the_pages_it_reads_of_its_first_n(tmp_path: Path) -> None:
    quality = QualityFilter(model(), threshold=0.5, pages=10, read=2, action="stop")
    texts: list[int] = []

    def page(i: int) -> Callable[[], PageText]:
        def text() -> PageText:
            texts.append(i)
            return SPAM
        return text

    verdicts = [quality.add("http://spam.test", page(i), "10.0.0.1", hosts_on_ip=1) for i in range(1, 11)]
    assert texts == [5, 10]  # the other eight pages were counted, never read
    assert verdicts[:9] == [None] * 9 and verdicts[9] is not None and verdicts[9].pages == 2
    assert quality.statistics()["pages_read"] == 2 and quality.statistics()["hosts_sampling"] == 0

    # a checkpoint between two reads keeps the count: the host is still scored at its tenth page
    for i in range(1, 8):
        quality.add("http://half.test", page(i), "10.0.0.1", hosts_on_ip=1)
    again = QualityFilter(model(), threshold=0.5, pages=10, read=2, action="stop")
    again.restore(quality.state())
    assert [again.add("http://half.test", page(i), "10.0.0.1", hosts_on_ip=1) is None for i in (8, 9, 10)] \
        == [True, True, False]
    assert texts[-2:] == [5, 10]


def test_with_several_agents_hosts_per_ip_count_every_agents_hosts(tmp_path: Path) -> None:
    """Two agents' frontiers on one machine-wide IP table: a host is scored with the hosts of the other
    agent on its IP; a host moving to another IP leaves the count, a stopped one stays in it."""
    from engine.ip_table import SharedIpTable
    from engine.parts import share_hosts_per_ip

    SharedIpTable.create(tmp_path / "ip-table")
    settings = FrontierSettings(host_delay=0.0, ip_delay=0.0, sieve_flush_interval=0.0)
    agents = []
    for name, hosts in (("a", ["http://a1.test", "http://a2.test"]), ("b", ["http://b1.test", "http://b2.test"])):
        quality = QualityFilter(model(), threshold=0.5, pages=1, read=1, action="stop")
        f = Frontier(tmp_path / name, settings, quality=quality)
        table = SharedIpTable(tmp_path / "ip-table")
        share_hosts_per_ip(f, table)
        f.discover([f"{h}/" for h in hosts])
        f.flush()
        f.flush_sieve(0.0, 0.0)
        for vs in f.distribute(0.0):
            f.resolved(vs, "10.0.0.1")
        agents.append((f, table))
    (a, table), (b, _) = agents
    assert table.hosts("10.0.0.1") == 4
    verdict = a.quality_page("http://a1.test/", read(SPAM))
    assert verdict is not None and verdict.action == "stop" and verdict.hosts_per_ip == 4
    moving = b.acquire(0.0)  # its address expired: resolved again, to another IP
    assert moving is not None
    b.readdress(moving)
    b.resolved(moving, "10.0.0.2")
    assert (table.hosts("10.0.0.1"), table.hosts("10.0.0.2")) == (3, 1)  # the stopped a1 still counts
    verdict = a.quality_page("http://a2.test/", read(GOOD))
    assert verdict is not None and verdict.action == "keep" and verdict.hosts_per_ip == 3
    for f, t in agents:
        f.close()
        t.close()


def test_a_host_linking_into_its_own_ip_is_stopped_by_a_link_model() -> None:
    same_ip = FEATURES.index("same_ip_link_lift")
    coef = [0.0] * (len(FEATURES) + 3)
    coef[same_ip] = 1.0
    quality = QualityFilter(model(classifier={"kind": "logistic", "coef": coef, "intercept": -5.0}),
                            threshold=0.5, pages=2, read=2, action="stop")
    ips = {"http://mate.test": "10.0.0.9", "http://far.test": "10.0.0.2"}.get
    farm = PageText(100, 10, 5, 0, 0, [b"x"], ["http://mate.test/a", "http://mate.test/b"])
    blogroll = PageText(100, 10, 5, 0, 0, [b"x"], ["http://far.test/a", "http://far.test/b"])
    verdicts = [quality.add(host, read(page), "10.0.0.9", 3, ips, known_hosts=21) for host, page in  # chance: 2 of 20
                (("http://farm.test", farm), ("http://roll.test", blogroll)) for _ in range(2)]
    assert [v.action if v else None for v in verdicts] == [None, "stop", None, "keep"]


def test_deprioritize_slows_a_host_down(tmp_path: Path) -> None:
    f, quality, fetched = crawl(tmp_path, "deprioritize")
    assert quality.deprioritized == {"http://spam.test"}
    spam = f.distributor.host_to_visit_state["http://spam.test"]
    assert spam.host_delay == f.quality_delay == 60.0
    assert sum(u.startswith("http://spam.test") for u in fetched) == 21  # slowly, but to the end
    f.set_delays(host_delay=2.0)  # a live change of politeness keeps it slow
    assert spam.host_delay == 60.0 and f.distributor.host_to_visit_state["http://good.test"].host_delay == 2.0


@pytest.mark.parametrize(
    ("override", "key", "problem"),
    [
        ("quality.threshold=1.5", "quality.threshold", "must lie between 0 and 1"),
        ("quality.threshold=high", "quality.threshold", "expected a number"),
        ("quality.pages=-1", "quality.pages", "must be 0 (the model's) or more"),
        ("quality.action=ban", "quality.action", "must be stop or deprioritize"),
        ("quality.model=/nonexistent/model", "quality.model", "/nonexistent/model does not exist"),
        ("quality.modle=x", "quality.modle", "unknown key"),
    ],
)
def test_config_errors_name_the_key(override: str, key: str, problem: str) -> None:
    with pytest.raises(configuration.ConfigError) as e:
        configuration.load(None, [override])
    assert e.value.key == key and problem in e.value.problem


def test_a_model_folder_without_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(configuration.ConfigError, match="holds no model.json"):
        configuration.load(None, [f"quality.model={tmp_path}"])
    model().save(tmp_path)
    assert configuration.load(None, [f"quality.model={tmp_path}"]).quality.model == str(tmp_path)


def test_learn_quality_refuses_bad_arguments_naming_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli import main

    def run(*argv: str) -> tuple[int, str]:
        status = main(["learn", "quality", "--out", str(tmp_path / "m"), *argv])
        return status, capsys.readouterr().err

    labels = tmp_path / "hosts.csv"
    labels.write_text("host,label,kind\nh00001.web.test,1,farm\n")
    assert run("--crawl", str(tmp_path)) == (2, "crawl: config error: --labels: crawl learn quality needs --labels "
                                               "hosts.csv and --crawl OUT_DIR\n")
    status, err = run("--labels", str(labels), "--crawl", str(tmp_path))
    assert status == 2 and err.startswith("crawl: config error: --crawl: no WARC files in"), err
    labels.write_text("h00001.web.test,spam\n")
    status, err = run("--labels", str(labels), "--crawl", str(tmp_path))
    assert status == 2 and "--labels" in err and "label 0 or 1" in err, err
    status, err = run("--labels", str(labels), "--crawl", str(tmp_path), "--pages", "0")
    assert status == 2 and err.startswith("crawl: config error: --pages: must be at least 1"), err
    status, err = run("--labels", str(labels), "--crawl", str(tmp_path), "--read", "0")
    assert status == 2 and err.startswith("crawl: config error: --read: must be at least 1"), err


def test_a_host_score_record_is_no_page_when_the_graph_is_rebuilt(tmp_path: Path) -> None:
    from store import recovery
    from store.archive import Archive
    from tests.test_archive import INFO, page, settings, store

    with Archive(tmp_path, "t", settings(), INFO) as archive:
        for k in range(3):
            store(archive, f"http://h.test/{k}", page(k), links=(f"http://h.test/{k + 1}",))
            archive.store_metadata("http://h.test/", [("hostQualityScore", "0.9")], 1_700_000_000.0)
    [warc] = tmp_path.glob("*.warc.gz")
    [graph] = tmp_path.glob("*.graph")
    graph.unlink()
    rebuilt = recovery.rebuild(tmp_path, warc.name, graph=True)
    assert rebuilt.graph_pages == 3  # the three pages, not the score records that follow them


def test_a_checkpoint_keeps_the_filters_samples_and_verdicts(tmp_path: Path) -> None:
    settings = FrontierSettings(host_delay=0.0, ip_delay=0.0, sieve_flush_interval=0.0)

    def frontier() -> tuple[Frontier, QualityFilter]:
        quality = QualityFilter(model(), threshold=0.5, pages=3, read=3, action="stop")
        return Frontier(tmp_path / "frontier", settings, quality=quality), quality

    f, quality = frontier()
    linking = PageText(1000, 800, 100, 3, 0, [b"cheap", b"\xc3\xa9t\xc3\xa9"] * 50, ["http://mate.test/x"])
    for _ in range(3):
        f.quality_page("http://spam.test/", read(SPAM))  # judged: stopped
    for _ in range(2):
        f.quality_page("http://half.test/", read(linking))  # two of its three pages in
    before = quality.state()
    f.checkpoint(0.0, {})
    f.close()

    f, quality = frontier()
    f.restore(1.0)
    assert quality.state() == before
    assert quality.samples["http://half.test"].terms == {b"cheap": 100}  # bytes keys back as bytes
    assert quality.samples["http://half.test"].linked == {"http://mate.test": 2}
    assert quality.stopped == {"http://spam.test"} and not quality.wants("http://spam.test")
    assert f.discover(["http://spam.test/later"], "http://good.test/") == 0  # its later links still dropped
    verdict = f.quality_page("http://half.test/", read(linking))  # the third page: scored on all three
    assert verdict is not None and verdict.pages == 3 and verdict.action == "stop"
    assert f.statistics().quality["pages_read"] == 3 + 3 and f.statistics().quality["hosts_stopped"] == 2
    f.close()
