"""frontier/clustergraph/urls.py: the pattern key, scope and itemisation (digest AT-01…AT-03), from tables and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.clustergraph.urls import host_of, in_scope, itemise, normalise, tokens

NORMALISED = [
    ("http://news.example.com/over/there?name=dog#nose", "news.example.com/over/there?name=dog"),
    ("https://Bob.Blog.TEST:8042/tag/cats/?x=1", "bob.blog.test/tag/cats?x=1"),
    ("http://user:pw@bob.blog.test:80/Tag/Cats?B=2&a=1", "bob.blog.test/Tag/Cats?B=2&a=1"),  # case and order kept
    ("http://user1.example.com", "user1.example.com/"),
    ("http://user1.example.com/", "user1.example.com/"),
    ("http://a.test?x=1", "a.test/?x=1"),
    ("http://a.test/p?", "a.test/p"),  # an empty query is no query
    ("http://a.test/%7Ebob/", "a.test/%7Ebob"),  # no percent-decoding
    ("http://a.test/x//", "a.test/x"),
    ("http://[::1]:8080/x", "[::1]/x"),
    ("http://a.test/r?to=http://b.test/y#f", "a.test/r?to=http://b.test/y"),
    ("bob.blog.test/tag/cats?x=1", "bob.blog.test/tag/cats?x=1"),  # already normalised
]


@pytest.mark.parametrize(("url", "key"), NORMALISED)
def test_normalise(url: str, key: str) -> None:
    assert normalise(url) == key


def test_at01_fragment_ignored_and_three_item_sets() -> None:
    authority, path, query = itemise(normalise("http://news.example.com/over/there?name=dog#nose"))
    assert (authority, path, query) == (
        frozenset({"news", "example", "com"}),
        frozenset({"over", "there"}),
        frozenset({"name", "dog"}),
    )


def test_at02_separators() -> None:
    assert itemise(normalise("http://user1.example.com")) == (
        frozenset({"user1", "example", "com"}),
        frozenset(),
        frozenset(),
    )
    _, path, _ = itemise(normalise("http://a.test/2009/05/12/my-day.html"))
    assert path == {"2009", "05", "12", "my-day", "html"}
    _, _, query = itemise(normalise("http://a.test/p?mode=reply&itemid=123"))
    assert query == {"mode", "reply", "itemid", "123"}
    _, path, query = itemise("a.test/a_b~c;d+e?x=a-b;c")
    assert path == {"a_b~c;d+e"} and query == {"x", "a-b;c"}


def test_at03_case_and_trailing_slash_give_one_key_and_off_site_is_out_of_scope() -> None:
    assert normalise("http://Bob.Site.test/tag/") == normalise("http://bob.site.test/tag") == "bob.site.test/tag"
    assert tokens(normalise("http://Bob.Site.test/tag/")) == tokens(normalise("http://bob.site.test/tag"))
    assert in_scope("http://Bob.Site.test/tag/", "site.test")
    assert in_scope("http://site.test/", "Site.Test")
    assert not in_scope("http://evil.test/site.test", "site.test")
    assert not in_scope("http://notsite.test/", "site.test")
    assert not in_scope("http://site.test.evil.test/", "site.test")
    assert in_scope("http://u:p@www.site.test:9000/", "site.test")


def test_host_of() -> None:
    assert host_of("https://U:P@WWW.Site.test:81/x?y#z") == "www.site.test"
    assert host_of("www.site.test/x") == "www.site.test"


def test_tokens_keep_separator_runs_and_positions() -> None:
    parts = tokens("bob.lj.test/2009/05/my-day.html?mode=reply&&x==1")
    assert parts.authority == ("bob", ".", "lj", ".", "test")
    assert parts.path == ("", "/", "2009", "/", "05", "/", "my-day", ".", "html")
    assert parts.query == ("mode", "=", "reply", "&&", "x", "==", "1")
    assert tokens("a.test/").path == ("", "/", "")
    assert tokens("a.test/").query == ("",)


# -- properties ----------------------------------------------------------------------------

label = st.text("abcXYZ019-_", min_size=1, max_size=6)
hosts = st.lists(label, min_size=1, max_size=4).map(".".join)
path_text = st.text("abZ09-_./~%", max_size=20).map(lambda p: "/" + p)
query_text = st.text("abZ09=&-_/?:%", max_size=16)
url_parts = st.tuples(st.sampled_from(["http", "https", "HTTP"]), hosts, path_text, query_text)


def build(scheme: str, host: str, path: str, query: str, port: str = "", fragment: str = "", userinfo: str = "") -> str:
    return f"{scheme}://{userinfo}{host}{port}{path}{'?' + query if query else ''}{fragment}"


@settings(max_examples=300, deadline=None)
@given(url_parts, st.text(max_size=30))
def test_normalise_is_idempotent(parts: tuple[str, str, str, str], junk: str) -> None:
    key = normalise(build(*parts))
    assert normalise(key) == key
    assert normalise(normalise(junk)) == normalise(junk)


@settings(max_examples=300, deadline=None)
@given(url_parts, st.integers(1, 65535), st.text("abc#?/=", max_size=8), st.sampled_from(["", "u@", "u:p@"]))
def test_pattern_key_ignores_port_fragment_scheme_host_case_and_userinfo(
    parts: tuple[str, str, str, str], port: int, fragment: str, userinfo: str
) -> None:
    scheme, host, path, query = parts
    plain = normalise(build("http", host.lower(), path, query))
    varied = build(
        "https" if scheme == "http" else "http", host.upper(), path, query, f":{port}", "#" + fragment, userinfo
    )
    assert normalise(varied) == plain


@settings(max_examples=300, deadline=None)
@given(url_parts)
def test_tokens_rebuild_the_key_and_items_are_the_non_empty_tokens(parts: tuple[str, str, str, str]) -> None:
    key = normalise(build(*parts))
    cut = tokens(key)
    assert cut.text() == key
    for part, items in zip(cut, itemise(key), strict=True):
        assert items == {token for token in part[::2] if token}
        assert all(token for token in part[2:-1:2])  # inner tokens are never empty
        assert all(piece and not any(c.isalnum() for c in piece) for piece in part[1::2])
