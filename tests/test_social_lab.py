"""The social lab's framework: SocialWeb, serving it over real sockets, the census and the scorer.

The web is served as tests/invitro_harness.py serves the synthetic one (``WebThread``) and as
``python -m bench.invitro --social``; requests go over loopback with http.client and raw DNS
packets. The census and the scorer are checked on hand-made inputs with known answers (a tiny
site defined here, record lists written by hand) and with a hypothesis property test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import ipaddress
import signal
import socket
import struct
import sys
from pathlib import Path

import lxml.html
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.invitro import LogRecord, WebParams, read_log, start_invitro
from bench.invitro.html import SENTENCES
from bench.invitro.social import SITE_NAMES, kit, site_class
from bench.invitro.social.__main__ import main as social_main
from bench.invitro.social.blog import BlogSite
from bench.invitro.social.census import census
from bench.invitro.social.score import score
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Answer, Site, Truth
from bench.invitro.social.web import SocialParams, SocialWeb, split_url
from tests.invitro_harness import WebThread

PORT = 8080
BLOG = SocialParams(("blog",), knobs={"blog": {"users": 60, "news": 6, "communities": 5}})
TIMEOUT = 10
WEB = SocialWeb(BLOG, PORT)


@pytest.fixture
def web() -> SocialWeb:
    return WEB


# The registry and the parameters.


def test_registry_imports_sites_lazily_and_refuses_unknown_names() -> None:
    assert SITE_NAMES == ("blog", "forum", "books", "microblog")
    assert site_class("blog") is BlogSite
    with pytest.raises(KeyError):
        site_class("wiki")
    for bad in ((), ("blog", "blog"), ("wiki",)):
        with pytest.raises(ValueError):
            SocialParams(bad)
    with pytest.raises(ValueError, match="forum"):
        SocialParams(("blog",), knobs={"forum": {"threads": 10}})
    with pytest.raises(ValueError, match="nonsense"):
        SocialWeb(SocialParams(("blog",), knobs={"blog": {"nonsense": 1}}), PORT)


# SocialWeb without sockets.


def test_hosts_map_to_their_site_and_one_loopback_ip_per_site(web: SocialWeb) -> None:
    blog = web.site_named("blog")
    user = f"{web.sites[0].users[0].name}.blog.test"  # type: ignore[attr-defined]
    for host in ("www.blog.test", "WWW.Blog.Test", "community.blog.test", user):
        assert web.site_of(host) is blog and web.host_index(host) == 0 and web.ip_of(host) == "127.0.77.1"
    for host in ("blog.test", "a.b.blog.test", "www.forum.test", "example.com"):
        assert web.site_of(host) is None and web.host_index(host) is None
        with pytest.raises(KeyError):
            web.ip_of(host)
    assert web.ips() == ["127.0.77.1"] and web.domain == "test"
    assert all(ipaddress.IPv4Address(ip) in ipaddress.IPv4Network("127.0.0.0/8") for ip in web.ips())
    assert web.seeds(10) == web.seeds_of("blog") == [f"http://www.blog.test:{PORT}/"]
    assert web.sites_info() == {"blog": {"domain": "blog.test", "seeds": [f"http://www.blog.test:{PORT}/"]}}


def test_responses_carry_the_answers_html_links_location_and_robots(web: SocialWeb) -> None:
    blog = web.site_named("blog")
    page = web.respond("www.blog.test", "/")
    answer = blog.answer("www.blog.test", "/")
    assert (page.status, page.content_type, page.compressible) == (200, "text/html; charset=utf-8", True)
    assert page.body == answer.html.encode() and page.links == list(answer.links)
    assert page.tags == ["a"] * len(page.links) and page.nofollow == [False] * len(page.links)
    user = web.sites[0].users[1].name  # type: ignore[attr-defined]
    moved = web.respond("www.blog.test", f"/~{user}/")
    home = f"http://{user}.blog.test:{PORT}/"
    assert (moved.status, dict(moved.headers)["Location"], moved.links, moved.tags) == (301, home, [home], ["location"])
    assert web.respond("www.blog.test", "/nothing").status == 404
    assert web.respond("nobody.example", "/").status == 404
    robots = web.respond("www.blog.test", "/robots.txt")
    assert robots.body.decode() == blog.robots("www.blog.test") and robots.content_type.startswith("text/plain")


def test_a_dialect_renames_the_url_words_and_keeps_the_truth(web: SocialWeb) -> None:
    renamed = SocialWeb(dataclasses.replace(BLOG, knobs={"blog": {**BLOG.knobs["blog"], "dialect": 1}}), PORT)
    dialect = renamed.sites[0].dialect  # type: ignore[attr-defined]
    user = f"{web.sites[0].users[3].name}.blog.test"  # type: ignore[attr-defined]
    links = renamed.respond(user, "/").links
    assert links != web.respond(user, "/").links and renamed.seeds(1) == web.seeds(1)
    for link in links:
        host, target = split_url(link)
        assert renamed.truth(host, target) == web.truth(host, dialect.to_site(target)) != Truth("not_found", ERROR)


def test_truth_side_api(web: SocialWeb) -> None:
    assert web.truth_of_url(f"http://www.blog.test:{PORT}/legal/tos#top") == Truth("static", UNINFORMATIVE)
    assert web.truth_of_url(f"http://www.blog.test:{PORT}/").category == VALUABLE
    assert web.truth("www.blog.test", "/robots.txt").category == UNINFORMATIVE
    assert web.truth("nobody.example", "/").category == ERROR
    assert web.truth_of_url(f"http://www.blog.test:{PORT}/nothing?x=1").category == ERROR


# Serving over real sockets.


def http_get(address: tuple[str, int], target: str, host: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(*address, timeout=TIMEOUT)
    try:
        connection.request("GET", target, headers={"Host": host})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def dns_query(address: str, name: str) -> tuple[int, bytes]:
    """(rcode, the last four bytes: the A record's address if there is one) for an A query over UDP."""
    host, port = address.split(":")
    question = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\x00"
    query = struct.pack("!HHHHHH", 99, 0x0100, 1, 0, 0, 0) + question + struct.pack("!HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.sendto(query, (host, int(port)))
        reply = sock.recv(512)
    return struct.unpack_from("!H", reply, 2)[0] & 0xF, reply[-4:]


def test_served_in_a_thread_over_http_and_dns_with_a_request_log(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        asyncio.run(start_invitro(WebParams(), social=BLOG))
    server = WebThread(None, tmp_path / "log.jsonl", social=BLOG)
    try:
        lab = server.web
        model = SocialWeb(BLOG, lab.port)  # the same lab computed here: the pages must be byte for byte these
        user = f"{model.sites[0].users[2].name}.blog.test"  # type: ignore[attr-defined]
        assert lab.seeds == [f"http://www.blog.test:{lab.port}/"] and lab.ips == ["127.0.77.1"]
        assert lab.proxy_address is not None and lab.dns_address is not None
        proxy_host, proxy_port = lab.proxy_address.split(":")
        status, headers, body = http_get((proxy_host, int(proxy_port)), lab.seeds[0], "www.blog.test")
        assert (status, headers["content-type"]) == (200, "text/html; charset=utf-8")
        assert body == model.respond("www.blog.test", "/").body
        status, _, body = http_get(("127.0.77.1", lab.port), "/profile", user)
        assert status == 200 and body == model.respond(user, "/profile").body
        status, headers, _ = http_get(("127.0.77.1", lab.port), f"/~{user.split('.')[0]}/", "www.blog.test")
        assert status == 301 and headers["location"] == f"http://{user}:{lab.port}/"
        assert http_get(("127.0.77.1", lab.port), "/robots.txt", user)[0] == 200
        assert dns_query(lab.dns_address, user) == (0, socket.inet_aton("127.0.77.1"))
        assert dns_query(lab.dns_address, "www.forum.test")[0] == 3  # NXDOMAIN: not served
        info = lab.ready_info()
        assert info["sites"] == {"blog": {"domain": "blog.test", "seeds": lab.seeds}}
        assert info["params"] == BLOG.as_dict()
    finally:
        log = server.stop()
    assert [(r.host, r.target, r.status, r.proxy, r.ip) for r in log] == [
        ("www.blog.test", "/", 200, True, "127.0.77.1"),
        (user, "/profile", 200, False, "127.0.77.1"),
        ("www.blog.test", f"/~{user.split('.')[0]}/", 301, False, "127.0.77.1"),
        (user, "/robots.txt", 200, False, "127.0.77.1"),
    ]


async def test_python_m_bench_invitro_social_writes_sites_in_the_ready_file(tmp_path: Path) -> None:
    ready, log = tmp_path / "ready.json", tmp_path / "log.jsonl"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.invitro", "--social", "blog", "--social-seed", "5", "--site-knob",
        "blog.users=40", "--site-knob", "blog.reply_share=1", "--ready-file", str(ready), "--log", str(log),
        "--no-dns", stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        first = await asyncio.wait_for(child.stdout.readline(), 30)  # printed after the ready file is in place
        assert first.startswith(b"invitro: http  127.0.77.1") and b"sites blog" in first
        info = orjson.loads(ready.read_bytes())
        seed = f"http://www.blog.test:{info['port']}/"
        assert info["seeds"] == [seed] and info["sites"] == {"blog": {"domain": "blog.test", "seeds": [seed]}}
        assert info["params"] == {"sites": ["blog"], "seed": 5, "knobs": {"blog": {"users": 40.0, "reply_share": 1.0}}}
        child.send_signal(signal.SIGTERM)
        await asyncio.wait_for(child.communicate(), 30)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    assert child.returncode == 0 and read_log(log) == []


# The census, on a tiny site whose answers are known.


class Tiny(Site):
    """``/`` → /a, /b, /list, /cal/0, /secret (disallowed), an off-site link; /cal/N → /cal/N+1 endlessly."""

    name = "tiny"
    domain = "tiny.test"

    def owns(self, host: str) -> bool:
        return host == "www.tiny.test"

    def seeds(self) -> list[str]:
        return [self.url("/")]

    def url(self, target: str) -> str:
        return self.origin("www.tiny.test") + target

    def robots(self, host: str) -> str:
        return "User-agent: *\nDisallow: /secret\n"

    def answer(self, host: str, target: str) -> Answer:
        links: tuple[str, ...]
        if target == "/":
            truth = Truth("home", VALUABLE, "home")
            links = ("/a", "/b", "/a#x", "/cal/0", "/secret", "/list?z=1&a=2", "/")
        elif target == "/a":
            truth, links = Truth("item", VALUABLE, "a", ucc=True), ("/", "/b")
        elif target == "/b":
            truth, links = Truth("alias", DUPLICATE, "a", ucc=True), ("/",)
        elif target == "/list?a=2&z=1":  # only in the parameter order a crawler sorts them into
            truth, links = Truth("list", DUPLICATE), ("/",)
        elif target.startswith("/cal/"):
            truth, links = Truth("cal", UNINFORMATIVE), (f"/cal/{int(target[5:]) + 1}", "/")
        elif target == "/secret":
            truth, links = Truth("item", VALUABLE, "secret"), ("/",)
        else:
            return Answer(404, Truth("missing", ERROR))
        full = tuple(self.url(link) for link in links) + ("http://other.test/",)
        return Answer(200, truth, "<html></html>", links=tuple(link.partition("#")[0] for link in full))


def test_census_counts_caps_the_endless_chain_and_measures_degrees() -> None:
    lab = census(Tiny(0, PORT), trap_cap=5)
    base = f"http://www.tiny.test:{PORT}"
    assert lab.urls == tuple(base + t for t in ("/", "/a", "/b", "/cal/0", "/list?a=2&z=1", "/cal/1", "/cal/2",
                                                "/cal/3", "/cal/4", "/cal/5"))
    assert (lab.pages, lab.disallowed, lab.capped, lab.truncated) == (10, 1, 1, False)
    assert lab.by_category == {VALUABLE: 2, DUPLICATE: 2, UNINFORMATIVE: 6}
    assert lab.by_type == {"home": 1, "item": 1, "alias": 1, "list": 1, "cal": 6}
    assert lab.valuable_keys == {"home", "a"} and lab.ucc_keys == {"a"}
    # out: / has 5 distinct in-site links besides itself, /a 2, /b 1, /list 1, each /cal/k 2
    assert (lab.out_mean, lab.out_max, lab.out_100) == (2.1, 5, 0.0)
    # in, from counted pages: / 9, /b 2, the others 1
    assert (lab.in_mean, lab.in_max, lab.in_10) == (1.9, 9, 0.0)
    assert lab.truths[0] == Truth("home", VALUABLE, "home")
    unruly = census(Tiny(0, PORT), trap_cap=5, obey_robots=False)
    assert unruly.pages == 11 and unruly.disallowed == 0 and "secret" in unruly.valuable_keys
    short = census(Tiny(0, PORT), max_urls=3)
    assert short.pages == 3 and short.truncated


# The scorer, on records written by hand.


def record(web: SocialWeb, host: str, target: str, method: str = "GET", aborted: bool = False) -> LogRecord:
    status = web.respond(host, target).status
    return LogRecord(0.0, 0.0, 1, "127.0.77.1", True, method, host, "127.0.77.1", target, status, 1, False, aborted)


def scenario(web: SocialWeb) -> tuple[list[LogRecord], list[LogRecord], dict[str, str]]:
    blog = web.sites[0]
    user = blog.users[4]  # type: ignore[attr-defined]
    host = f"{user.name}.blog.test"
    p = [f"/{blog.post(user, n).itemid}.html" for n in range(3)]  # type: ignore[attr-defined]
    tag = f"/tag/{blog.post(user, 0).tags[0]}"  # type: ignore[attr-defined]
    crawl = [
        record(web, "www.blog.test", "/"),  # valuable-new 1
        record(web, "www.blog.test", "/robots.txt"),  # not a download
        record(web, host, p[0] + "?format=light"),  # duplicate; carries post 0 (a print view: not UCC)
        record(web, host, p[0]),  # valuable, but its key was carried: duplicate (UCC, not new)
        record(web, host, p[1]),  # valuable-new 2, new UCC
        record(web, "www.blog.test", f"/~{user.name}/"),  # a redirect: duplicate, carries nothing
        record(web, host, "/"),  # valuable-new 3 (the redirect did not carry it), new UCC
        record(web, host, tag),  # duplicate listing
        record(web, "www.blog.test", "/legal/tos"),  # uninformative
        record(web, host, "/nothing"),  # error
        record(web, host, "/profile", method="HEAD"),  # not a download
        record(web, host, "/profile", aborted=True),  # not a download
        record(web, "www.forum.test", "/"),  # not this site
    ]
    baseline = [record(web, "www.blog.test", "/")] + [record(web, host, t) for t in p]
    keys = {f"p{n}": f"post:{user.name}:{p[n][1:-5]}" for n in range(3)}
    keys |= {"journal": f"journal:{user.name}:0", "profile": f"profile:{user.name}"}
    return crawl, baseline, keys


def test_score_counts_valuable_new_by_content_key_fn_and_ucc(web: SocialWeb) -> None:
    crawl, baseline, keys = scenario(web)
    lab = dataclasses.replace(census(Tiny(0, PORT)), ucc_keys=frozenset(keys.values()))
    s = score(crawl, web, "blog", baseline=baseline, census=lab)
    assert (s.downloads, s.valuable_new, s.duplicate, s.uninformative, s.error) == (9, 3, 4, 1, 1)
    assert s.valuable_share == pytest.approx(3 / 9) and s.fp == pytest.approx(6 / 9)
    assert s.curve == (1, 1, 1, 2, 2, 3, 3, 3, 3)
    assert s.by_type == {"journal": 1, "light": 1, "not_found": 1, "portal": 1, "post": 2, "redirect": 1, "static": 1,
                         "tag": 1}
    # the baseline found portal, post 0, 1 and 2; this crawl never carried post 2
    assert (s.baseline_keys, s.missed_keys, s.fn) == (4, 1, pytest.approx(1 / 4))
    assert s.ucc_valid == 2 and s.ucc_valid_ratio == pytest.approx(2 / 9)
    assert s.ucc_recall == pytest.approx(3 / 5)  # post 0 (its UCC page, after the light view), post 1, the journal
    plain = score(crawl, web, "blog")
    assert plain.fn is None and plain.ucc_recall is None and plain.as_dict()["curve"] == list(s.curve)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_score_invariants_on_any_order_of_downloads(data: st.DataObject) -> None:
    crawl, _, _ = scenario(WEB)
    records = data.draw(st.lists(st.sampled_from(crawl), max_size=30))
    s = score(records, WEB, "blog", baseline=records)
    assert s.valuable_new + s.duplicate + s.uninformative + s.error == s.downloads == len(s.curve)
    assert list(s.curve) == sorted(s.curve) and (s.curve[-1] if s.curve else 0) == s.valuable_new
    assert s.fn == 0.0 and 0.0 <= s.valuable_share <= 1.0 and s.ucc_valid <= s.downloads
    # fetching it all again adds downloads but nothing valuable, and no new UCC
    twice = score(records + records, WEB, "blog")
    assert (twice.downloads, twice.valuable_new, twice.ucc_valid) == (2 * s.downloads, s.valuable_new, s.ucc_valid)


def test_python_m_bench_invitro_social_scores_a_log(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    crawl, baseline, _ = scenario(WEB)
    for name, records in (("crawl", crawl), ("bfs", baseline)):
        (tmp_path / f"{name}.jsonl").write_bytes(b"".join(orjson.dumps(dataclasses.asdict(r)) + b"\n" for r in records))
    knobs = [x for k, v in BLOG.knobs["blog"].items() for x in ("--knob", f"blog.{k}={v}")]
    assert social_main(["score", str(tmp_path / "crawl.jsonl"), "--site", "blog", "--baseline",
                        str(tmp_path / "bfs.jsonl"), *knobs]) == 0
    result = orjson.loads(capsysbinary.readouterr().out)
    assert (result["downloads"], result["valuable_new"], result["fn"]) == (9, 3, 0.25) and "curve" not in result


# User-written HTML.

USER_TAGS = {"div", "p", "b", "i", "br", "ul", "ol", "li", "blockquote", "pre", "code", "img", "span", "em"}


def test_user_html_marks_up_the_texts_sentences_in_varied_markup_without_links() -> None:
    rand = kit.Rand(1)
    shapes = set()
    for k in range(300):
        n, author, topic = k % 4, k % 7 or None, k % 5 or None
        html = kit.user_html(rand, n, "comment", k, author=author, topic=topic)
        assert html == kit.user_html(rand, n, "comment", k, author=author, topic=topic)  # a function of its key
        root = lxml.html.fragment_fromstring(html, create_parent="div")
        assert {e.tag for e in root.iter()} - {"div"} <= USER_TAGS and not root.xpath("//*[@href]")
        text, at = root.text_content(), 0
        for i in range(n):  # the sentences rand.text(n, "comment", k) gives, in order
            at = text.index(SENTENCES[rand.below(len(SENTENCES), "comment", k, i)], at)
        shapes.add(tuple(e.tag for e in root.iter()))
    assert len(shapes) > 150
    assert sum(kit.user_html(kit.Rand(2), 1, "comment", k) != kit.user_html(rand, 1, "comment", k)
               for k in range(100)) > 90  # and of the site's seed


def test_an_authors_items_share_their_look() -> None:
    rand = kit.Rand(1)

    def look(html: str) -> tuple[str, ...]:
        root = lxml.html.fragment_fromstring(html, create_parent="div")
        blocks = root.xpath("div[@class='author' or @class='signature']")
        return tuple(lxml.html.tostring(e, encoding="unicode") for e in blocks)

    looks = set()
    for author in range(100):
        mine = {look(kit.user_html(rand, 2, "post", author, j, author=author)) for j in range(5)}
        assert len(mine) == 1  # avatar, badges and signature alike on all of them
        looks |= mine
    assert len(looks) > 50
    edited = sum('<em class="edited">' in kit.user_html(rand, 1, "post", j, author=j) for j in range(2000))
    assert abs(edited / 2000 - kit.EDITED_SHARE) < 0.03
    assert "<em" not in kit.user_html(rand, 1, "post", 0)  # only items shown with their author


def test_user_text_is_written_as_is_and_site_text_escaped() -> None:
    page = kit.Page("t")
    page.text("site", "a < b")
    page.user_text("user", "<p><b>bold</b></p>")
    html = kit.render(page, kit.Layout("t0", "div", "ul", True))
    assert '<div class="site"><p>a &lt; b</p></div>' in html and '<div class="user"><p><b>bold</b></p></div>' in html
