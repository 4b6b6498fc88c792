"""The social lab's blog (bench/invitro/social/blog.py): purity, links, size and mix, robots, URL rules.

Everything here calls ``BlogSite.answer`` in process (no socket); the one full census at the
default knobs is shared by the module. Serving over sockets is tested in test_social_lab.py.
"""

from __future__ import annotations

import re
from collections import Counter

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protego import Protego

from bench.invitro.social.blog import BlogSite
from bench.invitro.social.census import Census, census, split
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Answer, Truth
from bench.invitro.social.web import SocialParams, SocialWeb

PORT = 8080
WWW = f"http://www.blog.test:{PORT}"
INTENDED = {
    "portal": VALUABLE, "news": VALUABLE, "journal": VALUABLE, "profile": VALUABLE, "post": VALUABLE,
    "comments": VALUABLE, "taglist": VALUABLE, "community": VALUABLE, "journal_tracking": DUPLICATE,
    "light": DUPLICATE, "taglist_sort": DUPLICATE, "tag": DUPLICATE, "friends": DUPLICATE, "redirect": DUPLICATE,
    "reply": UNINFORMATIVE, "tellafriend": UNINFORMATIVE, "static": UNINFORMATIVE,
}
"""every page type a polite crawl meets at the default knobs, with its one category (calendar has two)"""


@pytest.fixture(scope="module")
def site() -> BlogSite:
    return BlogSite(1, PORT)


@pytest.fixture(scope="module")
def lab(site: BlogSite) -> Census:
    return census(site)


def get(site: BlogSite, url: str) -> Answer:
    return site.answer(*split(url))


def parsed_links(html: str) -> list[str]:
    """The hrefs a parser finds, in document order, without fragments."""
    return [href.partition("#")[0] for href in lxml.html.fromstring(html).xpath("//a/@href")]


def test_census_at_the_default_knobs_has_the_digest_size_mix_and_degrees(lab: Census) -> None:
    assert 10_000 <= lab.pages <= 25_000 and not lab.truncated
    assert 0.58 <= lab.share(VALUABLE) <= 0.70
    assert 0.18 <= lab.share(DUPLICATE) <= 0.30
    assert 0.10 <= lab.share(UNINFORMATIVE) <= 0.15
    assert lab.by_category.get(ERROR, 0) == 0  # every link of the site is answered
    # social-like degrees (digest §4.3: mean out ~90, a quarter with ≥ 100 out-links, ~45% with in ≥ 10)
    assert 50 <= lab.out_mean <= 120 and lab.out_sd > 25 and lab.out_100 >= 0.2
    assert lab.in_10 >= 0.45 and lab.in_max >= 0.9 * lab.pages  # the header pages are linked from everywhere
    assert len(lab.valuable_keys) == lab.by_category[VALUABLE]  # one key per valuable page
    assert lab.ucc_keys and lab.ucc_keys <= lab.valuable_keys


def test_every_intended_page_type_is_reachable_with_its_category(site: BlogSite, lab: Census) -> None:
    assert set(lab.by_type) == set(INTENDED) | {"calendar"}
    seen: dict[str, set[str]] = {}
    for url, truth in zip(lab.urls, lab.truths):
        seen.setdefault(truth.type, set()).add(truth.category)
    assert all(get(site, url).truth == truth for url, truth in list(zip(lab.urls, lab.truths))[::50])
    assert {t: c for t, c in seen.items() if t != "calendar"} == {t: {c} for t, c in INTENDED.items()}
    assert seen["calendar"] == {DUPLICATE, UNINFORMATIVE}
    # the endless calendar was met and cut: at most trap_cap (300) empty days were counted
    empty = [u for u, truth in zip(lab.urls, lab.truths) if truth == Truth("calendar", UNINFORMATIVE)]
    assert lab.capped > 0 and 0 < len(empty) <= 300


def test_answers_are_pure_and_the_seed_changes_them(site: BlogSite, lab: Census) -> None:
    again = BlogSite(1, PORT)
    sample = lab.urls[:: max(1, len(lab.urls) // 400)]
    assert all(get(site, url) == get(again, url) for url in sample)
    webs = SocialWeb(SocialParams(("blog",)), PORT), SocialWeb(SocialParams(("blog",)), PORT)
    assert all(webs[0].respond(*split(u)).body == webs[1].respond(*split(u)).body for u in sample[:50])
    other = BlogSite(2, PORT)
    assert [u.name for u in other.users[:20]] != [u.name for u in site.users[:20]]


def test_listed_links_are_what_a_parser_finds_absolute_and_without_fragments(site: BlogSite, lab: Census) -> None:
    by_type: dict[str, list[str]] = {}
    for url, truth in zip(lab.urls, lab.truths):
        by_type.setdefault(truth.type, []).append(url)
    for urls in by_type.values():
        for url in urls[:30]:
            answer = get(site, url)
            if answer.status == 200:
                assert list(answer.links) == parsed_links(answer.html), url
                assert all(link.startswith("http://") and "#" not in link for link in answer.links)
            else:
                assert answer.links == (answer.location,) and answer.status == 301


def test_robots_txt_disallows_login_and_add_friend_but_not_tell_a_friend_or_replies(site: BlogSite) -> None:
    www = Protego.parse(site.robots("www.blog.test"))
    user = site.users[3]
    post = site.post(user, 0)
    assert not www.can_fetch(f"{WWW}/login?returnto=x", "bot")
    assert not www.can_fetch(f"{WWW}/manage/circle/add?user={user.name}", "bot")
    assert www.can_fetch(f"{WWW}/tools/tellafriend?journal={user.name}&itemid={post.itemid}", "bot")
    host = f"{user.name}.blog.test"
    reply = f"http://{host}:{PORT}/{post.itemid}.html?mode=reply"
    assert Protego.parse(site.robots(host)).can_fetch(reply, "bot")
    strict = BlogSite(1, PORT, reply_robots=1, login_robots=0)
    assert not Protego.parse(strict.robots(host)).can_fetch(reply, "bot")
    assert Protego.parse(strict.robots("www.blog.test")).can_fetch(f"{WWW}/login?returnto=x", "bot")


def test_the_census_obeys_robots_txt(lab: Census) -> None:
    assert lab.disallowed >= lab.pages  # one login URL per page, and the add-friend pages
    assert not any("/login" in url or "/manage/" in url for url in lab.urls)


def test_post_page_links_and_the_reply_share_knob(site: BlogSite) -> None:
    user = max(site.users[:50], key=lambda u: u.posts)
    post = site.post(user, user.posts // 2)
    home = f"http://{user.name}.blog.test:{PORT}/"
    answer = get(site, f"{home}{post.itemid}.html")
    links = set(answer.links)
    assert {home, home + "profile", f"{WWW}/"} <= links
    neighbours = {f"{home}{site.post(user, n).itemid}.html" for n in (post.n - 1, post.n + 1)}
    assert neighbours <= links and {f"{home}tag/{tag}" for tag in post.tags} <= links
    assert any(link.startswith(f"{WWW}/login?returnto=") for link in links)
    assert Counter(answer.links)[f"{home}{post.itemid}.html"] >= 1  # comment permalinks: the page itself
    always = BlogSite(1, PORT, reply_share=1.0)
    for n in range(0, user.posts, 7):
        p = always.post(always.users[user.number], n)
        assert f"{home}{p.itemid}.html?mode=reply" in get(always, f"{home}{p.itemid}.html").links
    replies = sum(site.post(u, n).reply for u in site.users[:100] for n in range(u.posts))
    total = sum(u.posts for u in site.users[:100])
    assert 0.07 <= replies / total <= 0.13


def test_url_variants_share_the_content_key_of_their_page(site: BlogSite) -> None:
    user = site.users[7]
    post = site.post(user, 0)
    home = f"http://{user.name}.blog.test:{PORT}/"
    key = get(site, f"{home}{post.itemid}.html").truth.content_key
    assert get(site, f"{home}{post.itemid}.html?format=light").truth.content_key == key
    journal = get(site, home).truth.content_key
    for query in ("?utm_source=portal&utm_medium=web", "?utm_medium=email&utm_source=news", "?ref=friends"):
        truth = get(site, home + query).truth
        assert (truth.type, truth.category, truth.content_key) == ("journal_tracking", DUPLICATE, journal)
    redirect = get(site, f"{WWW}/~{user.name}/")
    assert (redirect.status, redirect.location, redirect.truth.content_key) == (301, home, journal)
    # the parameters may come in any order (the crawler sorts them): the same answer
    forward = f"{WWW}/tools/tellafriend?journal={user.name}&itemid={post.itemid}"
    backward = f"{WWW}/tools/tellafriend?itemid={post.itemid}&journal={user.name}"
    assert get(site, forward) == get(site, backward) and get(site, forward).status == 200


def test_unknown_and_non_canonical_targets_are_404(site: BlogSite) -> None:
    user = site.users[1]
    post = site.post(user, 0)
    host = f"{user.name}.blog.test"
    for target in ("/nothing", "/?skip=0", "/?skip=7", f"/?skip={20 * user.posts}", f"/0{post.itemid}.html",
                   f"/{post.itemid + 1}.html", f"/{post.itemid}.html?page=1", f"/{post.itemid}.html?mode=edit",
                   "/tag/no-such-tag", "/2020/2/3/", "/2020/02/30/", "/profile?x=1", "/tag?sort=date"):
        assert site.answer(host, target).truth.category == ERROR, target
    assert site.answer("nobody-here.blog.test", "/").status == 404
    assert site.answer("www.blog.test", "/0.html").status == 404


def test_the_calendar_is_endless_in_both_directions(site: BlogSite) -> None:
    user = site.users[2]
    days = site.days(user)
    home = f"http://{user.name}.blog.test:{PORT}/"
    for step, start in ((1, days[-1]), (-1, days[0])):
        day = start
        for _ in range(40):  # follow "next day" (or "previous day") from the last (first) day with entries
            answer = get(site, site.day_url(user, day))
            assert answer.status == 200 and answer.truth.type == "calendar"
            assert site.day_url(user, day + step) in answer.links
            day += step
        assert get(site, site.day_url(user, day)).truth == Truth("calendar", UNINFORMATIVE)
    assert site.day_url(user, days[0]).startswith(home)


def body_class(html: str) -> str:
    found = re.search(r'<body class="([^"]+)"', html)
    assert found is not None
    return found.group(1)


def test_at_least_50_layouts_and_two_variants_on_www(site: BlogSite, lab: Census) -> None:
    journals = {body_class(get(site, f"http://{u.name}.blog.test:{PORT}/profile").html) for u in site.users}
    assert len(journals) >= 50
    www = {body_class(get(site, url).html) for url, truth in zip(lab.urls, lab.truths)
           if url.startswith(WWW) and truth.type != "redirect"}
    assert len(www) == 2


_SMALL = BlogSite(3, PORT, users=30, news=5, communities=4)
PIECES = ["/", "/profile", "/friends", "/tag", "/tag/", "/2016/", "/01/", "/12.html", "/256.html", "/513.html",
          "/~", "/tools/tellafriend", "/login", "/legal/tos", "?", "&", "=", "skip", "page", "mode", "reply",
          "format", "light", "sort", "count", "20", "0", "2", "returnto", "http%3A%2F%2Fwww.blog.test%3A8080%2F",
          "utm_source", "portal", "journal", "itemid", "user"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["www.blog.test", "community.blog.test", "USER.blog.test"]),
       st.lists(st.sampled_from(PIECES), max_size=7))
def test_any_target_gets_a_consistent_answer(host: str, pieces: list[str]) -> None:
    site = _SMALL
    host = host.replace("USER", site.users[0].name)
    target = "/" + "".join(pieces).lstrip("/")
    answer = site.answer(host, target)
    assert answer.status in (200, 301, 404)
    assert (answer.truth.category == ERROR) == (answer.status == 404)
    if answer.status == 200:
        assert list(answer.links) == parsed_links(answer.html)

