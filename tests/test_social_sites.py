"""The lab's forum, books and microblog sites (bench/invitro/social/): pure, closed, and shaped as intended.

Small instances (knobs shrunk, rare features made common) are walked whole to check every page
type: reachable from the seeds, with the category it is meant to have, links as lxml finds them,
the same answer twice. The default instances are counted by ``census`` for size, mix and degrees.
"""

from __future__ import annotations

import functools
from collections import deque
from urllib.parse import urlsplit

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protego import Protego

from bench.invitro.social.books import BooksSite
from bench.invitro.social.census import census
from bench.invitro.social.forum import ForumSite
from bench.invitro.social.microblog import MicroblogSite
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Answer, Site

PORT = 8123
V, D, U = VALUABLE, DUPLICATE, UNINFORMATIVE

SMALL: dict[str, tuple[type[Site], dict[str, float]]] = {
    "forum": (ForumSite, {"threads": 60, "users": 300, "comments": 40, "quote_share": 0.2}),
    "books": (BooksSite, {"users": 200, "books": 80, "reviews": 14, "groups": 10, "shelf": 45}),
    "microblog": (MicroblogSite, {"users": 150, "messages": 14, "mobile_share": 0.5}),
}
INTENDED = {
    "forum": {
        "home": V, "board": V, "thread": V, "profile": V,
        "board_sorted": D, "comment_permalink": D, "thread_print": D, "redirect": D, "user_posts": D,
        "archive": D, "session_alias": D,
        "post_reply": U, "post_quote": U, "post_report": U, "login": U, "search": U, "static": U,
    },
    "books": {
        "home": V, "profile": V, "book": V, "reviews": V, "review": V, "group": V,
        "shelf": D, "book_tab": D, "book_tracking": D, "reviews_sorted": D,
        "addbook": U, "invite": U, "login": U, "static": U,
    },
    "microblog": {
        "home": V, "stream": V, "presence": V, "contacts": V, "channel": V,
        "stream_offset": D, "feed": D, "mobile_stream": D, "mobile_presence": D,
        "comment_form": U, "mobile_comment_form": U, "invite": U, "login": U,
    },
}

DISALLOWED = {"forum": {"post_report", "search"}, "books": {"addbook"}, "microblog": {"comment_form"}}
"""page types that robots.txt keeps out of a census"""


def split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.path + (f"?{parts.query}" if parts.query else "")


def ask(site: Site, url: str) -> Answer:
    return site.answer(*split(url))


class Walk:
    """Every URL reachable from a site's seeds (robots.txt not obeyed), with one sample URL per page type."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.samples: dict[str, list[str]] = {}
        self.categories: dict[str, set[str]] = {}
        seen = dict.fromkeys(site.seeds())
        queue = deque(seen)
        while queue:
            url = queue.popleft()
            answer = ask(site, url)
            kind = answer.truth.type
            self.categories.setdefault(kind, set()).add(answer.truth.category)
            if len(self.samples.setdefault(kind, [])) < 4:
                self.samples[kind].append(url)
            for link in answer.links:
                if link not in seen and site.owns(split(link)[0]):
                    seen[link] = None
                    queue.append(link)
        self.urls = list(seen)


@functools.cache
def walk_of(name: str) -> Walk:
    cls, knobs = SMALL[name]
    return Walk(cls(7, PORT, **knobs))


@pytest.fixture(params=sorted(SMALL))
def walk(request: pytest.FixtureRequest) -> Walk:
    return walk_of(request.param)


@pytest.fixture(scope="module")
def forum() -> ForumSite:
    return ForumSite(7, PORT, **SMALL["forum"][1])


@pytest.fixture(scope="module")
def books() -> BooksSite:
    return BooksSite(7, PORT, **SMALL["books"][1])


@pytest.fixture(scope="module")
def micro() -> MicroblogSite:
    return MicroblogSite(7, PORT, **SMALL["microblog"][1])


def lxml_links(html: str) -> tuple[str, ...]:
    return tuple(a.get("href", "").partition("#")[0] for a in lxml.html.fromstring(html).iter("a"))


# -- every page type: reachable, the intended category, links as a parser finds them, pure --------


def test_every_page_type_is_reachable_with_its_intended_category(walk: Walk) -> None:
    intended = INTENDED[walk.site.name]
    assert set(walk.categories) == set(intended), "types reached differ from the types intended"
    for kind, category in intended.items():
        assert walk.categories[kind] == {category}, kind


def test_links_are_what_lxml_finds_absolute_on_the_sites_port(walk: Walk) -> None:
    for kind, urls in walk.samples.items():
        for url in urls:
            answer = ask(walk.site, url)
            if answer.status == 200 and answer.content_type.startswith("text/html"):
                assert answer.links == lxml_links(answer.html), (kind, url)
            elif answer.status == 200:  # a feed: XML, nothing a crawler follows
                assert answer.links == () and answer.html.startswith("<?xml"), (kind, url)
            for link in answer.links:
                assert link.startswith("http://") and f":{PORT}/" in link and "#" not in link, (kind, link)


def test_answers_are_pure(walk: Walk) -> None:
    cls, knobs = SMALL[walk.site.name]
    twin = cls(7, PORT, **knobs)
    for urls in walk.samples.values():
        for url in urls:
            assert ask(walk.site, url) == ask(walk.site, url) == ask(twin, url)


def test_a_different_seed_gives_a_different_site(walk: Walk) -> None:
    cls, knobs = SMALL[walk.site.name]
    other = cls(8, PORT, **knobs)
    assert vars(other)["users"] != vars(walk.site)["users"]
    changed = [url for urls in walk.samples.values() for url in urls if ask(other, url) != ask(walk.site, url)]
    assert len(changed) > len(walk.samples) // 2


def test_unknown_knobs_are_refused() -> None:
    for cls, _ in SMALL.values():
        with pytest.raises(ValueError, match="knobs"):
            cls(1, PORT, no_such_knob=1.0)


@settings(max_examples=300, deadline=None)
@given(target=st.text(alphabet="/?&=-_.0123456789abcdefghijklmnoprstuvwxyz", max_size=40),
       name=st.sampled_from(sorted(SMALL)))
def test_any_target_gets_an_answer_and_errors_are_404(target: str, name: str) -> None:
    cls, knobs = SMALL[name]
    site = cls(7, PORT, **knobs)
    host = {"forum": "www.forum.test", "books": "www.books.test", "microblog": "www.micro.test"}[name]
    answer = site.answer(host, "/" + target)
    assert answer.status in (200, 301, 404)
    assert (answer.status == 404) == (answer.truth.category == ERROR)


# -- sizes, mix and degrees at the default knobs ---------------------------------------------------


@pytest.mark.parametrize("cls", [ForumSite, BooksSite, MicroblogSite], ids=lambda c: c.name)
def test_default_size_mix_and_degrees(cls: type[Site]) -> None:
    counted = census(cls(1, PORT))
    assert not counted.truncated and counted.capped == 0
    assert set(counted.by_type) == set(INTENDED[cls.name]) - DISALLOWED[cls.name]
    assert 10_000 <= counted.pages <= 25_000
    assert 0.60 <= counted.share(VALUABLE) <= 0.72
    assert 0.16 <= counted.share(DUPLICATE) <= 0.26
    assert 0.09 <= counted.share(UNINFORMATIVE) <= 0.16
    assert counted.share(ERROR) == 0
    assert counted.out_mean >= 35 and counted.out_max >= 500, "high out-degree, with hubs"
    assert counted.in_max >= counted.pages // 2, "header pages are linked from about every page"
    assert counted.in_10 >= 0.3


# -- robots.txt, 404s, redirects and aliases --------------------------------------------------------


def allowed(site: Site, url: str) -> bool:
    host, _ = split(url)
    return bool(Protego.parse(site.robots(host)).can_fetch(url, "crawler"))


def test_robots_disallow_some_actions_and_not_others(forum: ForumSite, books: BooksSite, micro: MicroblogSite) -> None:
    f = "http://www.forum.test:8123"
    assert not allowed(forum, f"{f}/post/report?c=100003") and not allowed(forum, f"{f}/search?q=")
    for path in ("/post/reply?t=100", "/post/quote?c=100003", "/login?returnto=%2F", "/t/100/x", "/u/1"):
        assert allowed(forum, f + path)
    b = "http://www.books.test:8123"
    assert not allowed(books, f"{b}/actions/addbook?bookid=1000")
    assert allowed(books, f"{b}/invite") and allowed(books, f"{b}/login?ReturnUrl=%2F") and allowed(books, f"{b}/")
    user = micro.users[3]
    assert not allowed(micro, f"http://{user}.micro.test:8123/presence/{100_000 + micro.first[3]}?comment=1")
    assert allowed(micro, f"http://{user}.micro.test:8123/presence/{100_000 + micro.first[3]}")
    assert allowed(micro, f"http://www.micro.test:8123/invite/email/{user}")
    assert allowed(micro, f"http://m.micro.test:8123/{user}/presence/{100_000 + micro.first[3]}?comment=1")


@pytest.mark.parametrize("url", [
    "http://www.forum.test:8123/nope", "http://www.forum.test:8123/t/100/wrong-slug",
    "http://www.forum.test:8123/board/general?page=1", "http://www.forum.test:8123/board/general?page=999",
    "http://www.forum.test:8123/board/general?sort=", "http://www.forum.test:8123/board/general?sort=old",
    "http://www.forum.test:8123/u/0", "http://www.forum.test:8123/u/01",
    "http://www.forum.test:8123/showthread.php?t=159",
    "http://www.forum.test:8123/t/100/print?page=2", "http://www.forum.test:8123/?sid=00000000",
    "http://www.forum.test:8123/post/report?c=99999", "http://other.forum.test:8123/",
    "http://www.books.test:8123/books/1000/wrong", "http://www.books.test:8123/review/1",
    "http://www.books.test:8123/no-such-user", "http://www.books.test:8123/books/1000/x/reviews?after=1",
    "http://www.books.test:8123/groups/999", "http://www.books.test:8123/actions/addbook?bookid=1",
    "http://www.micro.test:8123/channel/none", "http://nobody.micro.test:8123/",
    "http://m.micro.test:8123/nobody/", "http://www.micro.test:8123/invite/email/nobody",
])
def test_unknown_urls_are_404(url: str, forum: ForumSite, books: BooksSite, micro: MicroblogSite) -> None:
    site = {"forum.test": forum, "books.test": books, "micro.test": micro}[split(url)[0].split(".", 1)[1]]
    answer = ask(site, url)
    assert (answer.status, answer.truth.category, answer.links) == (404, ERROR, ())


def test_old_thread_urls_redirect_to_the_new_scheme(forum: ForumSite) -> None:
    old = forum.old
    assert old > 0
    for t in (0, old - 1):
        answer = ask(forum, f"http://www.forum.test:8123/showthread.php?t={100 + t}")
        new = f"http://www.forum.test:8123/t/{100 + t}/{forum.slugs[t]}"
        assert (answer.status, answer.location, answer.links) == (301, new, (new,))
        target = ask(forum, new)
        assert target.truth.category == VALUABLE
        assert answer.truth.type == "redirect" and answer.truth.category == DUPLICATE
        assert answer.truth.content_key == target.truth.content_key
    assert ask(forum, f"http://www.forum.test:8123/showthread.php?t={100 + old}").status == 404


def test_forum_aliases_share_the_thread_pages_content_key(forum: ForumSite) -> None:
    walk = walk_of("forum")
    for kind in ("comment_permalink", "thread_print", "session_alias"):
        for url in walk.samples[kind]:
            alias = ask(forum, url)
            if kind == "session_alias":
                host, target = split(url)
                params = [p for p in target.partition("?")[2].split("&") if not p.startswith("sid=")]
                base = target.partition("?")[0] + ("?" + "&".join(params) if params else "")
                original = forum.answer(host, base)
                assert (original.html, original.truth.content_key) == (alias.html, alias.truth.content_key)
            else:
                assert alias.truth.content_key.startswith("thread:")


def test_books_login_names_the_page_it_is_on(books: BooksSite) -> None:
    logins = set()
    for b in range(10):
        page = ask(books, books.book_url(b))
        login = [link for link in page.links if "/login?" in link]
        assert len(login) == 1 and login[0].endswith(books.book_url(b)[len(books.o):].replace("/", "%2F"))
        logins.add(login[0])
        assert ask(books, login[0]).truth.category == UNINFORMATIVE
    assert len(logins) == 10


def test_books_cursor_and_sort_variants_repeat_the_reviews_page(books: BooksSite) -> None:
    b = max(range(len(books.slugs)), key=lambda b: books.first_review[b + 1] - books.first_review[b])
    main = ask(books, books.book_url(b, "/reviews"))
    alias = ask(books, books.book_url(b, "/reviews", page=1, sort="helpful"))
    assert main.truth.category == VALUABLE and alias.truth.category == DUPLICATE
    assert alias.truth.content_key == main.truth.content_key
    newest = ask(books, books.book_url(b, "/reviews", sort="newest"))
    cursor = [link for link in newest.links if "after=" in link]
    assert len(cursor) == 1 and ask(books, cursor[0]).status == 200
    assert ask(books, cursor[0].replace("after=", "after=1")).status == 404


def test_microblog_mirror_and_offset_aliases(micro: MicroblogSite) -> None:
    u = next(u for u in range(len(micro.users)) if micro.mobile_linked(u) and len(micro.stream(u)) > 20)
    i = micro.stream(u)[0]
    desktop, mobile = ask(micro, micro.presence(i)), ask(micro, micro.presence(i, mobile=True))
    assert micro.presence(i, mobile=True) in desktop.links and micro.presence(i) in mobile.links
    assert (desktop.truth.category, mobile.truth.category) == (VALUABLE, DUPLICATE)
    assert desktop.truth.content_key == mobile.truth.content_key
    home = micro.home(u)
    cursor = ask(micro, f"{home}/?before={100_000 + micro.stream(u)[9]}")
    offset = ask(micro, f"{home}/?offset=10")
    assert (cursor.truth.type, offset.truth.type) == ("stream", "stream_offset")
    assert cursor.truth.content_key == offset.truth.content_key == f"stream:{micro.users[u]}:2"
    assert ask(micro, f"{home}/?before={100_000 + micro.stream(u)[8]}").status == 404
    assert ask(micro, f"{home}/?offset=5").status == 404
