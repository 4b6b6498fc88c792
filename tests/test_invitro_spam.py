"""The in-vitro web's spam hosts (``bench/invitro/spam.py``): ground truth, layout, page kinds, a real crawl.

The default web is pinned by a digest computed before spam existed, so ``spam_share`` 0 (the
default) provably leaves every byte as benchmarks measured it.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import re
from pathlib import Path

import pytest

from bench.invitro import html
from bench.invitro.__main__ import main as invitro_main
from bench.invitro.dns import A, DnsService
from bench.invitro.model import WebModel, WebParams, ip_addresses
from bench.invitro.spam import FARM_SIZES, KINDS
from bench.spam_budget import pages_by_kind, read_labels, spam_share
from tests.invitro_harness import WebThread, reachable, run_crawl

SPAM_WEB = WebParams(hosts=400, spam_share=0.2)
_TAG = re.compile(r"<[^>]+>|<script>.*?</script>|<style>.*?</style>", re.DOTALL)
_WORD = re.compile(r"[^\W\d_]+")


def digest(params: WebParams, port: int = 8080) -> str:
    """A hash of the host list, IPs, seeds and the first pages and robots.txt of every 7th host."""
    web = WebModel(params, port)
    h = hashlib.sha256()
    for host in web.hosts():
        h.update(f"{host} {web.ip_of(host)} {len(web.paths(host))}\n".encode())
    h.update(" ".join(ip_addresses(params)).encode())
    h.update(" ".join(web.seeds(1000)).encode())
    for host in web.hosts()[::7]:
        for target in ["/robots.txt", *web.paths(host)[:6]]:
            r = web.respond(host, target)
            h.update(b"%d %r %r\n" % (r.status, r.headers, r.links))
            h.update(r.body)
    return h.hexdigest()


def test_the_default_web_is_byte_for_byte_what_it_was_before_spam() -> None:
    # Computed with the code before spam.py existed.
    assert digest(WebParams()) == "2cdde69716074d641604bdfd5e223a0e6b5920fce04c32e435abcc16e9a9aec3"
    assert digest(WebParams(hosts=400, seed=3, duplicate_share=0.1, trap_share=0.1, hostile_share=0.1)) == (
        "2404bb5dfdd8e89fb0a8d5df1d5da97f4f6a76af4e26381ea8c397848ecb96db"
    )
    web = WebModel(WebParams(), 8080)
    assert web.spam_layout is None and {web.spam_kind(h) for h in web.hosts()} == {None}


def kinds(params: WebParams) -> dict[str, str | None]:
    web = WebModel(params, 0)
    return {host: web.spam_kind(host) for host in web.hosts()}


def test_spam_hosts_are_the_share_asked_of_every_kind_and_deterministic_per_seed() -> None:
    truth = kinds(SPAM_WEB)
    assert sum(k is not None for k in truth.values()) == round(0.2 * 400)
    assert set(truth.values()) == {None, *KINDS}
    assert kinds(WebParams(hosts=400, spam_share=0.2)) == truth  # a fresh model: the same truth
    other = kinds(WebParams(hosts=400, spam_share=0.2, seed=1))
    assert other != truth and sum(k is not None for k in other.values()) == 80
    assert truth["h00000.web.test"] is None  # the first host, the first seed, is good


def test_labels_csv_matches_spam_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "hosts.csv"
    assert invitro_main(["labels", "--hosts", "400", "--spam-share", "0.2", "--out", str(out)]) == 0
    assert "400 hosts, 80 spam" in capsys.readouterr().out
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["host", "label", "kind"]
    truth = kinds(SPAM_WEB)
    assert {r["host"]: (r["label"], r["kind"] or None) for r in rows} == {
        host: ("1" if kind else "0", kind) for host, kind in truth.items()
    }
    with pytest.raises(SystemExit):
        invitro_main(["labels", "--set", "spam_share=1.5", "--out", str(out)])
    assert "spam_share must lie in [0, 1]" in capsys.readouterr().err


def test_farms_share_ips_and_good_hosts_keep_theirs() -> None:
    web = WebModel(SPAM_WEB, 8080)
    layout = web.spam_layout
    assert layout is not None
    by_ip: dict[str, list[str]] = collections.defaultdict(list)
    for host in web.hosts():
        by_ip[web.ip_of(host)].append(host)
    assert set(by_ip) == set(web.ips()) == set(ip_addresses(SPAM_WEB))  # every IP serves, none is left over
    for ip, hosts in by_ip.items():
        farms = {layout.farm[web.host_index(h) or 0] for h in hosts}
        assert len(farms) == 1, f"{ip} mixes hosts of farms {farms}"  # -1, the good hosts, is one "farm" too
        if farms != {-1}:
            assert len(hosts) >= FARM_SIZES[0], (ip, hosts)
        else:
            assert len(hosts) == SPAM_WEB.hosts_per_ip or 10 <= len(hosts) <= 40 or hosts[-1] == web.hosts()[-1]
    good_groups = [hosts for hosts in by_ip.values() if web.spam_kind(hosts[0]) is None]
    assert sum(len(g) == SPAM_WEB.hosts_per_ip for g in good_groups) >= 0.8 * len(good_groups)
    for farm in layout.farms:
        assert len({web.ip_of(web.host_name(i)) for i in farm}) in (1, 2)


def visible_words(body: bytes) -> list[str]:
    text = _TAG.sub(" ", body.decode())
    return [w.lower() for w in _WORD.findall(text)]


def pages_of(web: WebModel, kind: str | None, hosts: int, pages: int) -> list[tuple[str, bytes, list[str]]]:
    """(host, body, links) of the first 200 pages of the first hosts of a kind."""
    found = []
    for host in [h for h in web.hosts() if web.spam_kind(h) == kind][:hosts]:
        for target in web.paths(host)[:pages]:
            r = web.respond(host, target)
            if r.status == 200:
                found.append((host, r.body, r.links))
    return found


def test_each_kind_has_the_property_that_defines_it() -> None:
    web = WebModel(SPAM_WEB, 8080)
    layout = web.spam_layout
    assert layout is not None
    for host, body, _ in pages_of(web, "stuffed", 10, 5):
        keywords = layout.keywords[layout.farm[web.host_index(host) or 0]]
        counts = collections.Counter(w for w in visible_words(body) if w in keywords)
        assert counts.most_common(1)[0][1] >= 8, host  # 10 at least on the 432 pages of the first 100
        title = re.search(rb"<title>(.*?) \|", body)
        assert title is not None and len(title.group(1).split()) >= 12
    for host, _, links in pages_of(web, "farm", 30, 5):
        farm = layout.farms[layout.farm[web.host_index(host) or 0]]
        members = {web.host_name(i) for i in farm} - {host}
        linked = {link.split("/")[2].split(":")[0] for link in links} & members
        assert len(linked) >= min(10, len(members)), host

    def function_share(found: list[tuple[str, bytes, list[str]]]) -> float:
        words = [w for _, body, _ in found for w in visible_words(body)]
        return sum(w in html.FUNCTION_WORDS for w in words) / len(words)

    good, generated = function_share(pages_of(web, None, 20, 5)), function_share(pages_of(web, "generated", 20, 5))
    assert good > 0.3 and generated < good / 2, (good, generated)
    good_pages = sum(len(web.paths(h)) for h in web.hosts() if web.spam_kind(h) is None) / 320
    generated_pages = sum(len(web.paths(h)) for h in web.hosts() if web.spam_kind(h) == "generated")
    assert generated_pages / sum(web.spam_kind(h) == "generated" for h in web.hosts()) > 2 * good_pages


def test_good_hosts_link_spam_only_by_rare_comments_and_a_bfs_reaches_it() -> None:
    web = WebModel(SPAM_WEB, 8080)
    pages = linking = 0
    for _, body, links in pages_of(web, None, 320, 8):
        spam_links = [link for link in links if web.spam_kind(link.split("/")[2].split(":")[0])]
        pages += 1
        if spam_links:
            linking += 1
            assert body.count(b'class="comment"') == len(spam_links)  # comment spam, nothing else
    assert 0.01 < linking / pages < 0.1, (linking, pages)
    assert all(web.spam_kind(url.split("/")[2].split(":")[0]) is None for url in web.seeds(400))
    small = WebModel(WebParams(hosts=100, spam_share=0.2, mean_pages=8), 8080)
    hosts = {url.split("/")[2].split(":")[0] for url in reachable(small, small.seeds(5))}
    assert sum(small.spam_kind(h) is not None for h in hosts) >= 15  # most of the 20 spam hosts, from five good seeds


def test_every_link_of_a_spam_page_names_a_page_of_the_web() -> None:
    web = WebModel(SPAM_WEB, 8080)
    for kind in KINDS:
        for _, _, links in pages_of(web, kind, 5, 5):
            for link in links:
                host, target = link.split("/")[2].split(":")[0], "/" + link.split("/", 3)[3]
                info = web.host_info(host)
                assert info is not None, link
                answer = web.respond(host, target)  # a 404 only for a page that is one by design
                assert answer.status != 404 or target.startswith("/missing/") or web.page_of(info, target) is not None


def test_dns_answers_farm_hosts_with_their_shared_ip() -> None:
    web = WebModel(SPAM_WEB, 8080)
    service = DnsService(web)
    farm = [h for h in web.hosts() if web.spam_kind(h) == "farm"][:3]
    for host in farm:
        query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
        query += b"".join(bytes([len(p)]) + p.encode() for p in host.split(".")) + b"\x00" + bytes([0, A, 0, 1])
        answer = service.answer(query)
        assert answer is not None and answer[-4:] == bytes(int(x) for x in web.ip_of(host).split("."))


def test_a_real_crawl_from_good_seeds_fetches_spam_hosts_and_their_robots(tmp_path: Path) -> None:
    web = WebThread(WebParams(hosts=100, spam_share=0.2, mean_pages=20), tmp_path / "requests.jsonl")
    try:
        result = run_crawl(tmp_path / "out", web.web.seeds[:5], dns=web.web.dns_address,
                           settings=["politeness.host_delay=0.2", "politeness.ip_delay=0.02"],
                           args=["--max-pages", "800"])
    finally:
        log = web.stop()
    labels = tmp_path / "hosts.csv"
    assert invitro_main(["labels", "--hosts", "100", "--spam-share", "0.2", "--mean-pages", "20", "--out", str(labels)]) == 0
    counts = pages_by_kind(result.out, read_labels(labels))
    assert counts["other"] == 0 and counts["good"] > 0, counts
    assert sum(counts.values()) - counts["good"] > 20 and 0 < spam_share(counts) < 1, counts
    robots = {r.host for r in log if r.target == "/robots.txt"}
    assert any(web.model.spam_kind(h) for h in robots)  # resolved by the in-vitro DNS and asked for robots.txt
