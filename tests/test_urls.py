"""frontier/urls.py: canonicalization from tables, link resolution against urljoin and WHATWG, properties."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlparse

import pytest
import xxhash
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from frontier.urls import (
    BaseURL,
    _canonical_clean,
    _clean,
    _parameter_name,
    canonicalize,
    fingerprint,
    host_of,
    port_of,
    split,
)

CANONICAL = [
    # scheme, host, case, default ports
    ("HTTP://Example.COM/Path", "http://example.com/Path"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com:80/", "http://example.com/"),
    ("https://example.com:443/", "https://example.com/"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://example.com:/", "http://example.com/"),
    ("http://example.com:0080/", "http://example.com/"),
    ("http://example.com:8080", "http://example.com:8080/"),
    ("http://example.com:65535/", "http://example.com:65535/"),
    ("http://example.com:65536/", None),
    ("http://example.com:8o/", None),
    ("http://example.com:-1/", None),
    ("http://example.com:１/", None),  # a non-ASCII digit is no port
    ("http://example.com./", "http://example.com/"),
    # schemes and authorities that are not acceptable
    ("ftp://example.com/", None),
    ("javascript:alert(1)", None),
    ("mailto:a@example.com", None),
    ("example.com/path", None),
    ("/relative", None),
    ("http:/example.com/", None),
    ("http:example.com", None),
    ("http://", None),
    ("http:///path", None),
    ("http://:80/", None),
    ("http://exa mple.com/", None),
    ("http://exa<mple.com/", None),
    ("", None),
    # IDNA and percent-encoded hosts
    ("http://Bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://BÜCHER.example/", "http://xn--bcher-kva.example/"),
    ("http://例え。テスト/", "http://xn--r8jz45g.xn--zckzah/"),
    ("http://ｅｘａｍｐｌｅ.com/", "http://example.com/"),
    ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"),
    ("http://%65xample.com/", "http://example.com/"),
    ("http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
    ("http://b%FFcher.example/", None),
    ("http://a%2Fb.example/", None),
    # IPv4 and IPv6
    ("http://192.168.0.1:8080/", "http://192.168.0.1:8080/"),
    ("http://0x7f.0.0.1/", "http://127.0.0.1/"),
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0177.1/", "http://127.0.0.1/"),
    ("http://256.1.1.1/", None),
    ("http://1.2.3.4.5/", None),
    ("http://09.1/", None),
    ("http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/"),
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("https://[::1]:443/", "https://[::1]/"),
    ("http://[::1/", None),
    ("http://[::1]x/", None),
    ("http://[not:an:ip]/", None),
    ("http://[fe80::1%25eth0]/", None),
    # userinfo
    ("http://user:pass@Example.com/", "http://user:pass@example.com/"),
    ("http://us er@example.com/", "http://us%20er@example.com/"),
    ("http://a@b@example.com/", "http://a%40b@example.com/"),
    ("http://@example.com/", "http://example.com/"),
    # paths: dot segments, empty path, backslashes
    ("http://a/b/c/./../../g", "http://a/g"),
    ("http://a/./b", "http://a/b"),
    ("http://a/../../b", "http://a/b"),
    ("http://a/b/..", "http://a/"),
    ("http://a/b/.", "http://a/b/"),
    ("http://a/b//../c", "http://a/b/c"),
    ("http://a/b//c", "http://a/b//c"),
    ("http://a/.b/..c/c..", "http://a/.b/..c/c.."),
    ("http://a/%2e%2E/b/%2E/c", "http://a/b/c"),
    ("http://a/b\\c\\..\\d", "http://a/b/d"),
    ("http://a\\b\\c", "http://a/b/c"),
    ("http://a/b?c\\d", "http://a/b?c%5Cd"),
    # percent-encoding
    ("http://a/%7e%7E%41%2d%5f%2E", "http://a/~~A-_."),
    ("http://a/%2f%3A%3f%23%25", "http://a/%2F%3A%3F%23%25"),
    ("http://a/%c3%a9", "http://a/%C3%A9"),
    ("http://a/é ü", "http://a/%C3%A9%20%C3%BC"),
    ("http://a/日本", "http://a/%E6%97%A5%E6%9C%AC"),
    ('http://a/"<>^`{|}', "http://a/%22%3C%3E%5E%60%7B%7C%7D"),
    ("http://a/100%", "http://a/100%25"),
    ("http://a/%zz%4", "http://a/%25zz%254"),
    ("http://a/%%41", "http://a/%25A"),
    ("http://a/[x]:@!$&'()*+,;=", "http://a/[x]:@!$&'()*+,;="),
    ("http://a/\x01\x7f", "http://a/%01%7F"),
    ("http://a/\udcff\udc80", "http://a/%FF%80"),  # bytes kept by surrogateescape
    ("http://a/\ud800", "http://a/%ED%A0%80"),
    # query: normalised, parameters sorted by name (stably, byte order of the encoded name); empty query dropped
    ("http://a/b?", "http://a/b"),
    ("http://a/b?#frag", "http://a/b"),
    ("http://a?q", "http://a/?q"),
    ("http://a/b?z=1&a=2", "http://a/b?a=2&z=1"),
    ("http://a/index.php?id=8&cat=x", "http://a/index.php?cat=x&id=8"),
    ("http://a/b?a=2&b=1&a=1", "http://a/b?a=2&a=1&b=1"),  # one name: order kept (may be a list)
    ("http://a/b?x-=1&x=2", "http://a/b?x=2&x-=1"),  # by name, not by whole parameter
    ("http://a/b?a=1&&b=2", "http://a/b?&a=1&b=2"),  # an empty parameter is kept, its name is ""
    ("http://a/b?b&a=1&b=", "http://a/b?a=1&b&b="),  # no `=`: the whole parameter is its name
    ("http://a/b?&", "http://a/b?&"),
    ("http://a/b?b=%26x%3d=&a=1+2%2B", "http://a/b?a=1+2%2B&b=%26x%3D="),
    ("http://a/b?b=1;a=2", "http://a/b?b=1;a=2"),  # `;` separates nothing
    ("http://a/b?%62=1&a=2", "http://a/b?a=2&b=1"),  # escapes normalised before sorting
    ("http://a/b?é=1&a=2&B=3", "http://a/b?%C3%A9=1&B=3&a=2"),
    ("http://a/b?y=1&x=2#f&a=3", "http://a/b?x=2&y=1"),
    ("http://a/b?q=a b&r=%7e+x", "http://a/b?q=a%20b&r=~+x"),
    ("http://a/b?x=/./..", "http://a/b?x=/./.."),
    ("http://a/b??x?", "http://a/b??x?"),
    # fragments and whitespace
    ("http://a/b#frag", "http://a/b"),
    ("http://a/b#", "http://a/b"),
    ("http://a/b?q#f?g", "http://a/b?q"),
    ("  http://a/b  ", "http://a/b"),
    ("\x00\x1f http://a/b\x01", "http://a/b"),
    ("ht\ttp://a/b\n/c\r", "http://a/b/c"),
    ("http://a/b c", "http://a/b%20c"),
    ("http://a/b #f", "http://a/b%20"),
    ("http://a/b\xa0", "http://a/b%C2%A0"),
]


@pytest.mark.parametrize(("url", "expected"), CANONICAL)
def test_canonicalize(url: str, expected: str | None) -> None:
    assert canonicalize(url) == expected
    assert _canonical_clean(_clean(url), True) == expected  # the general path agrees with the fast one
    if expected is not None:
        assert canonicalize(expected) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://a/b?z=1&a=2", "http://a/b?z=1&a=2"),
        ("http://a/b?z=1&a=2&", "http://a/b?z=1&a=2&"),
        ("HTTP://A/b?q=a b&r=%7e+x&a=%2f", "http://a/b?q=a%20b&r=~+x&a=%2F"),
        ("http://a/b?a=1&&b=2#f", "http://a/b?a=1&&b=2"),
    ],
)
def test_canonicalize_keeps_the_query_order_when_asked(url: str, expected: str) -> None:
    assert canonicalize(url, sort_query=False) == expected
    assert _canonical_clean(_clean(url), False) == expected
    page = BaseURL("http://a/x?y=2&x=1", sort_query=False)
    assert page.url == "http://a/x?y=2&x=1"
    assert page.resolve(url) == expected
    assert page.resolve("b?" + url.partition("?")[2]) == expected
    assert BaseURL("http://a/x?y=2&x=1").url == "http://a/x?x=1&y=2"


# RFC 3986 §5.4: base http://a/b/c/d;p?q, results written canonically (fragments dropped).
RFC_BASE = "http://a/b/c/d;p?q"
RFC_EXAMPLES = [
    # §5.4.1 normal examples
    ("g:h", None),  # a scheme we do not crawl
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/g"),
    ("g?y#s", "http://a/b/c/g?y"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
    # §5.4.2 abnormal examples
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g"),
    ("g#s/../x", "http://a/b/c/g"),
    ("http:g", "http://a/b/c/g"),  # the "backward compatible" reading, as urljoin and browsers
]

MORE_LINKS = [
    ("javascript:void(0)", None),
    ("JavaScript:void(0)", None),
    ("  javascript:x", None),
    ("java\tscript:x", None),
    ("mailto:someone@example.com", None),
    ("tel:+1-555", None),
    ("data:text/html,<a>", None),
    ("ftp://a/b", None),
    ("https:g", None),  # another scheme and no authority
    ("https://Other.test:443/x#y", "https://other.test/x"),
    ("HTTP://A/x", "http://a/x"),
    ("http://a:80/../x", "http://a/x"),
    ("//other.test:8080", "http://other.test:8080/"),
    ("//[::1]/x", "http://[::1]/x"),
    ("//", None),
    ("///x", None),  # empty authority (urljoin: http://a/x)
    ("?", "http://a/b/c/d;p"),  # empty query (urljoin keeps ?q)
    ("http:", "http://a/b/c/d;p?q"),
    ("http:?y", "http://a/b/c/d;p?y"),
    ("http:/g", "http://a/g"),
    ("  g  ", "http://a/b/c/g"),
    ("\ng\t/h\r", "http://a/b/c/g/h"),
    ("g h", "http://a/b/c/g%20h"),
    ("g #s", "http://a/b/c/g%20"),
    ("é", "http://a/b/c/%C3%A9"),
    ("%7Eg%2fh", "http://a/b/c/~g%2Fh"),
    ("%2e%2e/g", "http://a/b/g"),
    ("..\\g", "http://a/b/g"),
    ("\\\\host\\g", "http://host/g"),  # a network path, as in browsers
    ("g?a=1&b=%zz", "http://a/b/c/g?a=1&b=%25zz"),
    ("../../../g?y#s", "http://a/g?y"),
    ("a:b/c", None),
    ("1a:b", "http://a/b/c/1a:b"),
    ("./a:b", "http://a/b/c/a:b"),
    ("g/:x", "http://a/b/c/g/:x"),
    ("//ex ample.com/", None),
    ("//exa%mple.com/", None),
    ("http://a:99999/", None),
]


@pytest.mark.parametrize(("href", "expected"), RFC_EXAMPLES + MORE_LINKS)
def test_resolve(href: str, expected: str | None) -> None:
    base = BaseURL(RFC_BASE)
    assert base.resolve(href) == expected
    assert base._resolve_general(href) == expected  # the fast path agrees with the general one
    assert base.resolve_all([href]) == [expected]  # and so does the one in C


# Backslashes as browsers read them (WHATWG URL Standard: in http(s) a `\` before the query is a
# `/`, before the reference is joined), checked against `new URL(href, base)` of Node.js.
# One departure: a `\` in the query is percent-encoded (browsers leave it), as any `\` there.
WHATWG_LINKS = [
    ("http://host/lang_expr.html", "\\", "http://host/"),
    ("http://host/c3ref/intro.html", "\\x.html", "http://host/x.html"),
    ("http://host/c3ref/intro.html", "\\c3ref\\x.html#f", "http://host/c3ref/x.html"),
    ("http://a/b/c/d;p?q", "\\\\evil.com/x", "http://evil.com/x"),
    ("https://a/b", "\\\\evil.com/x", "https://evil.com/x"),
    ("http://a/b", "\\\\evil.com\\x?y\\z", "http://evil.com/x?y%5Cz"),
    ("http://a/b", "/\\evil.com", "http://evil.com/"),
    ("http://a/b", "\\/evil.com:8080\\", "http://evil.com:8080/"),
    ("http://a/b", "http:\\\\evil.com\\x", "http://evil.com/x"),
    ("http://a/b", "HTTPS:\\\\evil.com", "https://evil.com/"),
    ("http://a/b/c", "http:\\g", "http://a/g"),
    ("http://a/b/c", "a\\b/../c", "http://a/b/a/c"),
    ("http://a/b/c", "x\\..\\y", "http://a/b/y"),
    ("http://a/b/c", "g?a\\b", "http://a/b/g?a%5Cb"),
    ("http://a/b/c", "  \\g  ", "http://a/g"),
    ("http://a/b/c", "\\\\", None),  # empty host (browsers: an error too)
]


@pytest.mark.parametrize(("base", "href", "expected"), WHATWG_LINKS)
def test_resolve_backslashes_as_browsers(base: str, href: str, expected: str | None) -> None:
    page = BaseURL(base)
    assert page.resolve(href) == expected
    assert page._resolve_general(href) == expected
    assert page.resolve_all([href]) == [expected]
    if expected is not None:
        assert canonicalize(expected) == expected


def test_absolute_urls_with_backslashes() -> None:
    assert canonicalize("http:\\\\a\\b\\..\\c?d\\e") == "http://a/c?d%5Ce"
    assert canonicalize("https:/\\a:443\\") == "https://a/"


def test_base_url_pieces() -> None:
    base = BaseURL("HTTP://User@Example.com:8080/a/b/c.html?x=1#f")
    assert base.url == "http://User@example.com:8080/a/b/c.html?x=1"
    assert (base.scheme, base.origin, base.path, base.query, base.directory) == (
        "http",
        "http://User@example.com:8080",
        "/a/b/c.html",
        "x=1",
        "/a/b/",
    )
    assert repr(base) == "BaseURL('http://User@example.com:8080/a/b/c.html?x=1')"
    with pytest.raises(ValueError):
        BaseURL("mailto:x@example.com")


@pytest.mark.parametrize(
    ("url", "sa", "pq", "host", "port"),
    [
        ("http://a.test:8080/x?y=1", "http://a.test:8080", "/x?y=1", "a.test", 8080),
        ("https://a.test/", "https://a.test", "/", "a.test", 443),
        ("http://a/", "http://a", "/", "a", 80),
        ("http://u:p@a.test/x", "http://u:p@a.test", "/x", "a.test", 80),
        ("http://[::1]:81/x", "http://[::1]:81", "/x", "::1", 81),
        ("https://[2001:db8::1]/", "https://[2001:db8::1]", "/", "2001:db8::1", 443),
    ],
)
def test_split_host_port(url: str, sa: str, pq: str, host: str, port: int) -> None:
    assert canonicalize(url) == url
    assert split(url) == (sa, pq)
    assert host_of(sa) == host
    assert port_of(sa) == port


def test_fingerprint() -> None:
    url = "http://a.test/é"
    assert fingerprint(url) == fingerprint(url.encode()) == xxhash.xxh3_64_intdigest(url.encode())
    assert 0 <= fingerprint(url) < 2**64
    assert fingerprint("http://a.test/x") != fingerprint("http://a.test/y")


# -- properties ----------------------------------------------------------------------------------

PIECES = [
    "/", "//", ".", "..", "./", "../", "/..", "?", "#", "%", "%2e", "%2E", "%41", "%7e", "%2F",
    "%zz", "%C3%A9", "%e9", "a", "B", "x.html", "é", "日本", " ", "\\", ":", "@", ";", "=", "&", "+",
    "~", "\t", "\n", "[", "]", "|", "^", "{", '"', "'", "http:", "https:", "HTTP:", "//x.test",
    "//X.Test:80", "//a.b:8080", "//[::1]", "//u@h", "javascript:", "mailto:", "\x00", "\x7f",
    "\ud800", "\udcff", "\xa0", "*", "(",
]  # fmt: skip
hrefs = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    st.text(max_size=12),
    st.text(alphabet="abc./?#%:\\", max_size=12),
)
segments = st.text(alphabet="abcXYZ019-._~!$&'()*+,;=:@%é ", min_size=1, max_size=6)
bases = st.builds(
    lambda scheme, host, port, segs, slash, query: f"{scheme}://{host}{port}/{'/'.join(segs)}{slash}{query}",
    st.sampled_from(["http", "https", "HTTP"]),
    st.sampled_from(["a.test", "WWW.Example.COM", "127.0.0.1", "[::1]", "bücher.example", "u:p@h.test"]),
    st.sampled_from(["", ":80", ":443", ":8080"]),
    st.lists(segments, max_size=4),
    st.sampled_from(["", "/"]),
    st.sampled_from(["", "?", "?q=1", "?a=%7e&b=c d", "?x/../y"]),
)


def _join(base: str, href: str) -> str:
    try:
        return urljoin(base, href)
    except ValueError:
        return base + href


urls = st.one_of(bases, st.builds(_join, bases, hrefs), st.text(max_size=30), st.builds("".join, st.lists(st.sampled_from(PIECES))))

C0_AND_SPACE = "".join(map(chr, range(0x21)))


def _loses_empty_params(raw_path: str, params: str) -> bool:
    """urlparse found no params although the last segment has a `;`: urlunparse drops it."""
    return params == "" and ";" in raw_path.rpartition("/")[2]


def urljoin_departs_from_rfc(base: str, href: str) -> bool:
    """True for the inputs where urljoin is known to differ from RFC 3986 (see BaseURL.resolve)."""
    scheme = urlparse(base).scheme
    ref = urlparse(href, scheme)
    if ref.scheme != scheme:
        return False
    cleaned = _clean(href)
    prefix = re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", cleaned)
    if prefix and prefix.group()[:-1].lower() == scheme:
        cleaned = cleaned[prefix.end() :]
    raw_path = cleaned.partition("?")[0]
    if not cleaned and (ref.path or ref.params or ref.query):  # `http: `: urljoin keeps the space
        return True
    if "\\" in href.partition("#")[0].partition("?")[0]:  # `\` is `/` before the join (WHATWG)
        return True
    if ref.netloc:
        return bool(ref.path) and _loses_empty_params(raw_path, ref.params)
    if cleaned.startswith("//"):  # empty authority
        return True
    if not ref.path and not ref.params:  # urljoin takes the base's path (and query if none)
        if raw_path or (cleaned and not ref.query):
            return True  # `;`, `;?x` or `?` alone: urljoin keeps the base's path or query
        return _loses_empty_params(split(base)[1].partition("?")[0], urlparse(base).params)
    if _loses_empty_params(raw_path, ref.params):
        return True
    if ref.params and ref.path.rpartition("/")[2] in (".", ".."):  # urljoin reads `..;x` as `..`
        return True
    if ref.path[:1] != "/":  # urljoin drops empty segments when merging a relative path
        base_parts = urlparse(base).path.split("/")
        if base_parts[-1] != "":
            del base_parts[-1]
        return "" in (base_parts + ref.path.split("/"))[1:-1]
    segments = ref.path.split("/")  # and turns one into the root after `..` climbs above it
    return ".." in segments and "" in segments[1:-1]


@given(urls)
@example("http://a/%%41")
@example("http://a/b/%2e%2e%2f")
@settings(max_examples=2000)
def test_canonicalize_is_idempotent_ascii_and_fragment_free(url: str) -> None:
    canonical = canonicalize(url)
    assert canonical == _canonical_clean(_clean(url), True)
    if canonical is not None:
        assert canonicalize(canonical) == canonical
        assert canonical.isascii()
        assert "#" not in canonical and " " not in canonical
        sa, pq = split(canonical)
        assert sa + pq == canonical
        assert pq.startswith("/")
        assert canonicalize(sa) == sa + "/"
        assert host_of(sa) and 0 < port_of(sa) < 65536


@given(bases, hrefs)
@example("http://a/b/c/d;p?q", "g;x?y#s")
@example("http://a/b/", "..%2F")
@example("http://a/b", "?#")
@example("http://a.test/", "/\x00?\t")
@settings(max_examples=3000)
def test_resolve_matches_urljoin(base: str, href: str) -> None:
    page = BaseURL(base)
    resolved = page.resolve(href)
    assert resolved == page._resolve_general(href)
    assert page.resolve_all([href, href + "#f"]) == [resolved, page.resolve(href + "#f")]
    try:
        joined = urljoin(page.url, href)
    except ValueError:  # urlsplit rejects some netlocs (brackets, NFKC); we return None or a URL
        return
    assume(not urljoin_departs_from_rfc(page.url, href))
    # "%2e" is a dot segment for browsers (WHATWG), which we follow; urljoin keeps it as a name
    assume("%2e" not in href.lower())
    # urlunparse drops an empty `?`, `;` or `#` (once both strip the end: `/\x00?\t`); whitespace
    # before it then looks trailing
    assume(not (joined[-1:] in C0_AND_SPACE and href.rstrip(C0_AND_SPACE)[-1:] not in C0_AND_SPACE))
    assert resolved == canonicalize(joined)
    if resolved is not None:
        assert canonicalize(resolved) == resolved


# Hrefs of the shapes frontier/_resolve.c resolves itself (plain ASCII, the characters a canonical URL keeps), and
# the near misses it must leave to BaseURL.resolve: escapes, schemes in capitals, dot segments, long queries.
C_PIECES = [
    "/", "//", ".", "..", "./", "../", "/.", "/..", "?", "#", "&", "=", "a", "B", "x.html", ":", "@", ";", "+", "~", "[",
    "]", "(", "'", "*", "!", "$", ",", "-", "_", "09", ".well-known", "http://", "https://", "HTTP://", "Https://", "http:",
    "https:", "hTtp:", "//x.test", "//X.Test:80", "//a.b:8080", "//[::1]", "//u@h", "//h:99999", "javascript:", "mailto:",
    "j:", "h1:", "a=1", "b=2", "&a", "=x", "x?y&z", "a&b=c&a=0", "%41", "%", "é", " ", "\\", "&" * 70,
]  # fmt: skip
C_BASES = [
    "http://a.test/", "http://a.test/d/p.html", "https://b.test:8443/x/y/z?q=1&a=2", "http://a.test/.well-known/x",
    "http://[::1]/a/b/", "http://u:p@h.test/a%20b/c", "HTTP://WWW.Example.COM:80/d/", "http://a.test/d;p?x",
]


@given(st.sampled_from(C_BASES), st.lists(st.lists(st.sampled_from(C_PIECES), max_size=7).map("".join), max_size=8),
       st.booleans())
@settings(max_examples=3000)
def test_resolving_a_pages_links_in_c_gives_what_resolve_gives(base: str, hrefs: list[str], sort_query: bool) -> None:
    page = BaseURL(base, sort_query=sort_query)
    assert page.resolve_all(hrefs) == [page.resolve(href) for href in hrefs]


@st.composite
def spelled_differently(draw: st.DrawFn) -> tuple[str, str]:
    """A URL and the same URL with other case, default port and %-encoded unreserved characters."""
    scheme = draw(st.sampled_from(["http", "https"]))
    host = draw(st.sampled_from(["a.test", "www.example.com", "x-1.b.c"]))
    path = draw(st.text(alphabet="abcXYZ019-._~/", max_size=12))
    query = draw(st.text(alphabet="abc019-._~=&", max_size=8))
    url = f"{scheme}://{host}/{path}" + (f"?{query}" if query else "")

    def encode(text: str) -> str:
        flags = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
        return "".join(
            f"%{ord(c):02{'x' if draw(st.booleans()) else 'X'}}" if flag and c not in "/=&" else c
            for c, flag in zip(text, flags)
        )

    port = draw(st.sampled_from(["", ":80" if scheme == "http" else ":443"]))
    upper_host = "".join(c.upper() if draw(st.booleans()) else c for c in host)
    other = f"{scheme.upper() if draw(st.booleans()) else scheme}://{upper_host}{port}/{encode(path)}"
    return url, other + (f"?{encode(query)}" if query else "")


@given(spelled_differently())
def test_equivalent_spellings_share_one_canonical_form(pair: tuple[str, str]) -> None:
    url, other = pair
    assert canonicalize(url) == canonicalize(other) is not None


# -- query order ---------------------------------------------------------------------------------

# Canonical as they stand: no `&`, `=` or `#`; escapes of characters that stay escaped.
QUERY_CHARS = list("abcXYZ019-._~!$'()*+,;:@/?[]") + ["%26", "%3D", "%2B", "%25", "%20", "%23", "%C3%A9", "%5C"]


def _query_text(extra: list[str], max_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(QUERY_CHARS + extra), max_size=max_size).map("".join)


names = _query_text([], 4)
parameters = st.builds(
    lambda name, value: name if value is None else f"{name}={value}", names, st.none() | _query_text(["="], 6)
)
few_names = st.sampled_from(["", "a", "b", "a%26", "A", "a-", "%C3%A9"])
repeated = st.lists(
    st.builds(lambda name, value: name if value is None else f"{name}={value}", few_names, st.none() | _query_text(["="], 3)),
    min_size=1,
    max_size=8,
)


def _query(url: str) -> list[str]:
    return url.partition("?")[2].split("&")


def _every_way(query: str, sort_query: bool) -> set[str | None]:
    """The canonical form of a URL with this query, by each path through frontier/urls.py."""
    url = "http://a.test/p?" + query
    page = BaseURL("http://a.test/dir/page", sort_query=sort_query)
    return {
        canonicalize(url, sort_query=sort_query),
        _canonical_clean(_clean(url), sort_query),
        page.resolve(url),
        page.resolve("/p?" + query),
        page.resolve("../p?" + query),
        page._resolve_general("/p?" + query),
    }


@given(st.lists(parameters, min_size=1, max_size=6))
@example(["a=1", "", "b=2"])
@example(["x-=1", "x=2"])
def test_sorted_query_is_canonical_idempotent_and_keeps_every_byte(params: list[str]) -> None:
    (url,) = _every_way("&".join(params), True)
    assert url is not None and canonicalize(url) == url
    query = _query(url)
    assert sorted(query) == sorted(params)
    assert [_parameter_name(p) for p in query] == sorted(_parameter_name(p) for p in params)


@given(st.lists(parameters, max_size=6, unique_by=_parameter_name).flatmap(lambda ps: st.tuples(st.just(ps), st.permutations(ps))))
def test_order_of_distinct_names_does_not_matter(pair: tuple[list[str], list[str]]) -> None:
    params, permuted = pair
    assert _every_way("&".join(params), True) == _every_way("&".join(permuted), True)
    assert len(_every_way("&".join(params), True)) == 1


@given(repeated)
@example(["a=2", "b", "a=1", "", "a"])
def test_parameters_of_one_name_keep_their_order(params: list[str]) -> None:
    (url,) = _every_way("&".join(params), True)
    assert url is not None
    query = _query(url)
    for name in {_parameter_name(p) for p in params}:
        assert [p for p in query if _parameter_name(p) == name] == [p for p in params if _parameter_name(p) == name]


@given(st.lists(parameters, min_size=2, max_size=6))
def test_without_sort_query_the_order_is_kept(params: list[str]) -> None:
    (url,) = _every_way("&".join(params), False)
    assert url is not None and canonicalize(url, sort_query=False) == url
    assert _query(url) == params
