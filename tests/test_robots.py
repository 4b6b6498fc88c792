"""engine/robots.py: RFC 9309 decisions from tables; statuses; whole, truncated and trailing-garbage bodies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.robots import MAX_ROBOTS_BYTES, RobotsRules, product_token

UA = "crawl/0.1 (BUbiNG-style research crawler)"


def rules(body: str | bytes, user_agent: str = UA, status: int | None = 200, **kw: float) -> RobotsRules:
    raw = body.encode() if isinstance(body, str) else body
    return RobotsRules.from_response(status, raw, user_agent, **kw)


# -- rules: (robots.txt, path+query, allowed?) ------------------------------------------------------

STAR = "User-agent: *\n"
RULE_CASES = [
    # longest match wins; on a tie Allow wins (RFC 9309 §2.2.2)
    (STAR + "Disallow: /private\nAllow: /private/public", "/private/secret", False),
    (STAR + "Disallow: /private\nAllow: /private/public", "/private/public/x", True),
    (STAR + "Allow: /private\nDisallow: /private/secret", "/private/secret.html", False),
    (STAR + "Disallow: /page\nAllow: /page", "/page", True),
    (STAR + "Allow: /page\nDisallow: /page", "/page", True),
    (STAR + "Disallow: /", "/", False),
    (STAR + "Disallow: /", "/anything?q=1", False),
    (STAR + "Disallow:", "/anything", True),  # an empty Disallow disallows nothing
    (STAR + "Disallow: /Fish", "/fish", True),  # paths are case-sensitive
    (STAR + "Disallow: /fish", "/fish.html", False),
    (STAR + "Disallow: /fish/", "/fish", True),
    # wildcards and the end anchor
    (STAR + "Disallow: /*.pdf$", "/docs/a.pdf", False),
    (STAR + "Disallow: /*.pdf$", "/docs/a.pdf?download=1", True),
    (STAR + "Disallow: /*.pdf$", "/docs/a.pdf.html", True),
    (STAR + "Disallow: /fish*", "/fishheads/yummy.html", False),
    (STAR + "Disallow: /*/private/", "/a/b/private/x", False),
    (STAR + "Disallow: /*/private/", "/private/x", True),
    (STAR + "Disallow: /search?", "/search?q=robots", False),
    (STAR + "Disallow: /search?", "/search", True),
    (STAR + "Disallow: /*?sessionid=", "/a?x=1&sessionid=2", True),
    (STAR + "Disallow: /*sessionid=", "/a?x=1&sessionid=2", False),
    (STAR + "Disallow: /$", "/", False),
    (STAR + "Disallow: /$", "/index.html", True),
    # percent-encoding: an escaped and an unescaped spelling are the same path
    (STAR + "Disallow: /a%3Cd", "/a<d", False),
    (STAR + "Disallow: /%E2%82%AC", "/€", False),
    # robots.txt itself is always allowed
    (STAR + "Disallow: /", "/robots.txt", True),
    (STAR + "Disallow: /robots.txt", "/robots.txt", True),
    # a path that looks like an authority is still a path
    (STAR + "Disallow: /private", "//private", True),
    (STAR + "Disallow: //private", "//private", False),
    # comments, blank lines, CRLF and CR line ends
    ("# hello\r\nUser-agent: * # everyone\r\n\r\nDisallow: /x # no\r\n", "/x/y", False),
    ("User-agent: *\rDisallow: /x\r", "/x", False),
    # rules before any User-agent line belong to no group
    ("Disallow: /x\n", "/x", True),
]


@pytest.mark.parametrize("body, path, expected", RULE_CASES)
def test_rules(body: str, path: str, expected: bool) -> None:
    assert rules(body).allowed(path) is expected


GROUPS = """\
User-agent: *
Disallow: /private
Crawl-delay: 5

User-agent: CRAWL
User-agent: other-bot
Disallow: /only-for-crawl
Crawl-delay: 100

User-agent: bubing
Disallow: /

User-agent: crawl
Disallow: /merged
Sitemap: http://example.test/sitemap.xml
"""

GROUP_CASES = [
    # our product token, matched case-insensitively, and its groups merged (RFC 9309 §2.2.1)
    (UA, "/only-for-crawl", False),
    (UA, "/merged/x", False),
    (UA, "/private", True),  # our group replaces "*" entirely
    ("other-bot", "/only-for-crawl", False),
    # a word in the comment of the User-Agent header does not select a group
    ("Somebot/2.0 (bubing-compatible)", "/private", False),
    ("Somebot/2.0 (bubing-compatible)", "/anything", True),
    ("BUbiNG/0.9", "/anything", False),
    ("BUbiNG/0.9", "/robots.txt", True),
]


@pytest.mark.parametrize("user_agent, path, expected", GROUP_CASES)
def test_user_agent_group_selection(user_agent: str, path: str, expected: bool) -> None:
    assert rules(GROUPS, user_agent).allowed(path) is expected


@pytest.mark.parametrize(
    "user_agent, max_delay, expected",
    [(UA, 30.0, 30.0), (UA, 300.0, 100.0), ("Somebot/1", 30.0, 5.0), ("BUbiNG", 30.0, None)],
)
def test_crawl_delay_of_our_group_or_star_capped(user_agent: str, max_delay: float, expected: float | None) -> None:
    assert rules(GROUPS, user_agent, max_crawl_delay=max_delay).crawl_delay == expected


@pytest.mark.parametrize("value", ["abc", "-3", "nan", "inf", ""])
def test_malformed_crawl_delay_is_ignored(value: str) -> None:
    assert rules(f"User-agent: *\nCrawl-delay: {value}\n").crawl_delay is None


def test_sitemaps_are_site_wide() -> None:
    assert rules(GROUPS).sitemaps == ["http://example.test/sitemap.xml"]
    assert rules(GROUPS, "BUbiNG").sitemaps == ["http://example.test/sitemap.xml"]


@pytest.mark.parametrize(
    "user_agent, token",
    [(UA, "crawl"), ("Mozilla/5.0 (compatible; Foobot/1.0)", "Mozilla"), ("my_bot-2", "my_bot-"), ("", "")],
)
def test_product_token(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


# -- status codes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status, reason, allowed",
    [
        (200, "parsed", False),
        (203, "parsed", False),
        (301, "redirects", True),
        (308, "redirects", True),
        (400, "unavailable", True),
        (401, "unavailable", True),
        (403, "unavailable", True),
        (404, "unavailable", True),
        (410, "unavailable", True),
        (429, "unreachable", False),
        (500, "unreachable", False),
        (503, "unreachable", False),
        (None, "unreachable", False),
        (100, "unreachable", False),
        (600, "unreachable", False),
        (-1, "unreachable", False),
    ],
)
def test_status_decides_before_the_body(status: int | None, reason: str, allowed: bool) -> None:
    r = rules(STAR + "Disallow: /", status=status)
    assert r.reason == reason
    assert r.allowed("/page") is allowed
    assert r.allowed("/robots.txt") is True
    if reason != "parsed":
        assert r.crawl_delay is None and r.sitemaps == []


def test_allow_all_and_disallow_all_never_reach_protego(monkeypatch: pytest.MonkeyPatch) -> None:
    allow_all = [rules(b"", status=200), rules(STAR + "Allow: /x\nCrawl-delay: 2"), rules(b"x", status=404)]
    disallow_all = [rules(b"", status=503), rules(b"", status=None)]

    class Exploding:
        def can_fetch(self, url: str, agent: str) -> bool:
            raise AssertionError("protego consulted")

    for r in allow_all + disallow_all:
        monkeypatch.setattr(r, "_parser", Exploding(), raising=False)
    assert all(r.allowed("/x/y") for r in allow_all)
    assert not any(r.allowed("/x/y") for r in disallow_all)
    assert allow_all[1].crawl_delay == 2  # allow-all still reads Crawl-delay


# -- encodings and garbage ---------------------------------------------------------------------------


def test_utf8_bom_is_dropped() -> None:
    r = rules(b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n")
    assert r.allowed("/x") is False


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    r = rules(b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /x\xff\xfe\n")
    assert r.allowed("/x") is True  # the rule is /x plus replacement characters
    assert r.allowed("/y") is True


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=2000), status=st.one_of(st.none(), st.integers(-5, 1000)), path=st.text(max_size=50))
def test_garbage_never_raises(body: bytes, status: int | None, path: str) -> None:
    r = RobotsRules.from_response(status, body, UA)
    assert r.allowed(path) in (True, False)
    assert r.allowed("/" + path) in (True, False)
    assert r.crawl_delay is None or 0 <= r.crawl_delay <= 30


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(["User-agent", "Disallow", "Allow", "Crawl-delay", "Sitemap", "Nonsense"]), st.text(max_size=20)),
        max_size=30,
    ),
    path=st.text(max_size=30),
)
def test_directive_soup_never_raises(lines: list[tuple[str, str]], path: str) -> None:
    body = "\n".join(f"{k}: {v}" for k, v in lines).encode("utf-8", "surrogatepass")
    r = rules(body)
    assert r.allowed("/" + path) in (True, False)


def test_huge_body_is_read_up_to_500_kib_and_whole_lines_only() -> None:
    head = STAR + "Disallow: /early\n"
    filler = "# " + "x" * 1000 + "\n"
    body = head + filler * ((MAX_ROBOTS_BYTES - 100 - len(head)) // len(filler))
    body += "#" * (MAX_ROBOTS_BYTES - 15 - len(body) - 1) + "\n"
    line = "Disallow: /privately-owned\n"
    assert len(body) == MAX_ROBOTS_BYTES - 15  # the 500 KiB cut falls inside the next line...
    body += line + "Disallow: /late\n" + filler * 100
    r = rules(body)
    assert r.allowed("/early") is False
    assert r.allowed("/late") is True  # beyond the cut
    assert r.allowed("/priv") is True  # ...so its head ("Disallow: /priv…") is not read as a rule
    assert r.allowed("/privately-owned") is True


# -- one body, three ways: whole, truncated, with trailing garbage ----------------------------------------

BODY = (
    b"User-agent: *\n"  # line 1
    b"Disallow: /a\n"  # line 2
    b"Disallow: /b\n"  # line 3
    b"Allow: /a/open\n"  # line 4
    b"Crawl-delay: 2\n"  # line 5
)
# path -> allowed after the first k complete lines, for k = 0..5
EXPECTED_AFTER_LINES = {
    "/a/x": [True, True, False, False, False, False],
    "/b": [True, True, True, False, False, False],
    "/a/open/1": [True, True, False, False, True, True],
    "/c": [True] * 6,
}
DELAY_AFTER_LINES = [None, None, None, None, None, 2.0]


def check_after_lines(r: RobotsRules, k: int) -> None:
    for path, expected in EXPECTED_AFTER_LINES.items():
        assert r.allowed(path) is expected[k], (path, k)
    assert r.crawl_delay == DELAY_AFTER_LINES[k]


def test_whole_body() -> None:
    check_after_lines(rules(BODY), 5)


@pytest.mark.parametrize(
    "garbage",
    [b"\x00" * 100, b"\xff\xfe\x80garbage\x00\x01", b"<html><body>Not Found</body></html>", b"Disallow /zzz"],
)
def test_trailing_garbage_changes_nothing(garbage: bytes) -> None:
    check_after_lines(rules(BODY + garbage), 5)


def test_truncated_anywhere_never_raises_and_line_boundaries_read_as_the_lines_before() -> None:
    ends = [0] + [i + 1 for i, byte in enumerate(BODY) if byte == ord("\n")]
    for cut in range(len(BODY) + 1):
        r = rules(BODY[:cut])
        for path in EXPECTED_AFTER_LINES:
            assert r.allowed(path) in (True, False)
        if cut in ends:
            check_after_lines(r, ends.index(cut))


# -- rules in a checkpoint ------------------------------------------------------------------------------

DIRECTIVES = st.lists(
    st.tuples(st.sampled_from(["User-agent", "Disallow", "Allow", "Crawl-delay", "Sitemap"]),
              st.sampled_from(["*", "crawl", "other", "/", "/a", "/a/b", "/*.pdf$", "2", "http://x.test/s.xml", ""])),
    max_size=12,
).map(lambda lines: "\n".join(f"{k}: {v}" for k, v in lines).encode())


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(DIRECTIVES, st.binary(max_size=300), st.just(GROUPS.encode()), st.just(BODY)),
    status=st.one_of(st.none(), st.sampled_from([200, 301, 404, 429, 500])),
    paths=st.lists(st.sampled_from(["/", "/a", "/a/b/c", "/x.pdf", "/private/1", "/merged", "/robots.txt"]), max_size=7),
)
def test_rules_read_back_from_a_checkpoint_decide_alike(body: bytes, status: int | None, paths: list[str]) -> None:
    saved = RobotsRules.from_response(status, body, UA)
    restored = RobotsRules.decode(saved.encode(), UA)
    assert (restored.reason, restored.crawl_delay) == (saved.reason, saved.crawl_delay)
    assert [restored.allowed(p) for p in paths] == [saved.allowed(p) for p in paths]
    assert restored.sitemaps == saved.sitemaps


def test_restored_rules_parse_only_when_first_consulted() -> None:
    restored = RobotsRules.decode(rules(GROUPS).encode(), UA)
    assert restored._parser is None  # resuming many hosts parses none of them up front
    assert restored.allowed("/merged/x") is False and restored._parser is not None
    assert len(rules(GROUPS * 50).encode()) < len(GROUPS * 50) / 10  # kept compressed
