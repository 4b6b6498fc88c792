"""URL canonicalization and link resolution: pure string work, no I/O (step 1 of ARCHITECTURE.md).

Every URL the crawler keeps — seeds, links, redirect targets — is first put in one
canonical form, so the URL cache and the sieve see one string (and one fingerprint) per
resource. The rules follow RFC 3986 §6.2.2 plus what browsers do with sloppy input:

* only ``http`` and ``https``; scheme and host lower-case; non-ASCII hosts to punycode
  (UTS 46, as browsers); a trailing dot of the host removed; numeric IPv4 forms
  (``0x7f.1``, ``2130706433``) written dotted-decimal and IPv6 literals compressed, inside
  brackets; the default port dropped; an invalid port or an empty host makes the URL invalid;
* path never empty; dot segments removed (RFC 3986 §5.2.4); ``\\`` before the query read as
  ``/``, as browsers do in http(s) (WHATWG URL Standard), before a link is joined with its base;
* percent-encoding normalised in userinfo, path and query: hex digits upper-case, encoded
  unreserved characters decoded, characters not allowed in a URI (space, ``"<>\\^`{|}``,
  controls, non-ASCII as UTF-8) encoded, a stray ``%`` written ``%25``;
* leading and trailing C0 controls and spaces stripped, TAB/CR/LF removed anywhere, the
  fragment dropped, an empty query (``?``) dropped;
* query parameters sorted by name (``sort_query``, on by default: ``?id=8&cat=x`` and
  ``?cat=x&id=8`` are one page to nearly every server, and one URL to Scrapy's fingerprint):
  see :func:`_sort_query`.

:class:`BaseURL` resolves the links of one page. Per PERF-NOTES.md ``urllib.parse.urljoin``
costs ~25 µs per link, so the base is cut into pieces once and the common forms of
``href`` are joined by string operations (~1 µs); anything unusual takes a general path
that joins per RFC 3986 §5.2.2 and then canonicalizes. The result equals
``canonicalize(urljoin(base, href))`` except where urljoin departs from RFC 3986 and the
browsers; those cases are listed in :meth:`BaseURL.resolve`.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from types import ModuleType

import xxhash

from frontier._resolve import resolve_all as _resolve_all

_idna_package: ModuleType | None
try:  # UTS 46 mapping, as browsers do; `idna` comes with aiohttp (via yarl).
    import idna as _idna_package
except ImportError:  # pragma: no cover - the stdlib codec (IDNA 2003) is close enough
    _idna_package = None

__all__ = ["BaseURL", "canonicalize", "fingerprint", "host_of", "port_of", "split"]

DEFAULT_PORTS = {"http": 80, "https": 443}

_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = "0123456789ABCDEFabcdef"
_DIGITS = {8: "01234567", 10: "0123456789", 16: _HEX}

# Characters that may stand unencoded in a canonical path or query: unreserved, sub-delims,
# ":@/?" and the brackets (which browsers leave alone too). `%` is handled apart.
_SAFE = r"\-A-Za-z0-9._~!$&'()*+,;=:@/?\[\]"
# A URL made only of these needs no encoding work; `%` escapes are still normalised.
_simple = re.compile(f"[{_SAFE}%]*").fullmatch
# The fast shape of an absolute URL: lower-case scheme, an authority with no space or
# control, then safe characters only. Everything else takes the general path.
_fast_absolute = re.compile(rf"(https?)://([^/?#\\\x00-\x20]*)((?:[/?][{_SAFE}%]*)?)").fullmatch
_scheme = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*").fullmatch
_reg_name = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]+").fullmatch
_ipv4_like = re.compile(r"(?:.*\.)?(?:[0-9]+|0[xX][0-9A-Fa-f]*)").fullmatch

# One table lookup per `%XX`: decoded if unreserved, else upper-cased.
_PCT: dict[str, str] = {}
for _a in _HEX:
    for _b in _HEX:
        _c = chr(int(_a + _b, 16))
        _PCT["%" + _a + _b] = _c if _c in _UNRESERVED else "%" + (_a + _b).upper()
del _a, _b, _c


def _pct_or_quote(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "%":
        return _PCT.get(text, "%25")  # a stray `%` is matched alone
    try:  # lone surrogates: bytes smuggled in by surrogateescape (header values) go back out
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)


_pct_only = re.compile(r"%(?:[0-9A-Fa-f]{2})?").sub
_quote_path_query = re.compile(rf"%[0-9A-Fa-f]{{2}}|%|[^{_SAFE}%]+").sub
_quote_userinfo = re.compile(r"%[0-9A-Fa-f]{2}|%|[^\-A-Za-z0-9._~!$&'()*+,;=:%]+").sub


def _fix_pct(text: str) -> str:
    """Normalise the `%` escapes of text that holds only safe characters."""
    return _pct_only(_pct_or_quote, text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 for an absolute path (it starts with `/`)."""
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def _parameter_name(parameter: str) -> str:
    return parameter.partition("=")[0]


def _sort_query(query: str) -> str:
    """The query's parameters ordered by name, stably, each one kept byte for byte.

    Names are compared as they stand (still percent-encoded, escapes already normalised), so
    values are never decoded: an escaped ``&`` (``%26``), ``=``, ``+`` or any escape stays as
    it was. Parameters of one name keep their relative order (``a=2&a=1`` may be a list).
    Nothing a server could read is dropped: an empty parameter (``a=1&&b=2``) has the empty
    name and goes first (``&a=1&b=2``), and a parameter without ``=`` (``flag``) is its own
    name (``b&a`` gives ``a&b``). Only ``&`` separates parameters (``;`` does not).
    """
    return "&".join(sorted(query.split("&"), key=_parameter_name))


def _path_query(path: str, query: str | None, sort_query: bool) -> str:
    """Canonical path and query from already-encoded pieces; the path starts with `/`."""
    if "/." in path:
        path = _remove_dot_segments(path)
    if not query:
        return path
    if sort_query and "&" in query:  # one parameter (most queries) has nothing to sort
        query = _sort_query(query)
    return path + "?" + query


# -- authority -----------------------------------------------------------------------------------


def _ipv4(host: str) -> str | None:
    """The WHATWG IPv4 parser: dotted-decimal, or None if `host` is not a valid address."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    numbers: list[int] = []
    for part in parts:
        if part[:2] in ("0x", "0X"):
            digits, base = part[2:] or "0", 16
        elif len(part) > 1 and part[0] == "0":
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        if not digits or not all(c in _DIGITS[base] for c in digits):  # int() would take "_" and " "
            return None
        numbers.append(int(digits, base))
    *front, last = numbers
    if any(n > 255 for n in front) or last >= 256 ** (5 - len(numbers)):
        return None
    for i, n in enumerate(front):
        last += n << (8 * (3 - i))
    return ".".join(str((last >> shift) & 255) for shift in (24, 16, 8, 0))


def _to_ascii(host: str) -> str | None:
    """Map a non-ASCII host as browsers do (UTS 46, lax about hyphens and STD3 rules)."""
    try:
        if _idna_package is None:  # pragma: no cover
            return host.encode("idna").decode("ascii")
        host = _idna_package.uts46_remap(host, std3_rules=False, transitional=False)
        return ".".join(
            label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
            for label in host.split(".")
        )
    except (UnicodeError, ValueError):  # idna.IDNAError is a UnicodeError
        return None


def _host(raw: str) -> str | None:
    if raw.startswith("["):
        if not raw.endswith("]") or "%" in raw:  # zone identifiers are not for URLs
            return None
        try:
            return "[" + ipaddress.IPv6Address(raw[1:-1]).compressed + "]"
        except ValueError:
            return None
    if "%" in raw:
        try:
            raw = re.sub(
                r"(?:%[0-9A-Fa-f]{2})+", lambda m: bytes.fromhex(m.group().replace("%", "")).decode(), raw
            )
        except UnicodeDecodeError:
            return None
    if not raw.isascii():
        ascii_host = _to_ascii(raw)
        if ascii_host is None:
            return None
        raw = ascii_host
    host = raw.lower().rstrip(".")
    if not host or _reg_name(host) is None:
        return None
    if _ipv4_like(host):
        return _ipv4(host)
    return host


@lru_cache(maxsize=16384)
def _origin(scheme: str, authority: str) -> str | None:
    """`scheme://authority` in canonical form, or None. Cached: pages link to few hosts."""
    userinfo, at, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        close = hostport.find("]") + 1
        raw_host, port = hostport[:close], hostport[close:]
        if not close or (port and port[0] != ":"):
            return None
        port = port[1:]
    else:
        raw_host, _, port = hostport.partition(":")
    host = _host(raw_host)
    if host is None:
        return None
    if port:
        if not (port.isascii() and port.isdigit()) or int(port) > 65535:
            return None
        number = int(port)
        port = "" if number == DEFAULT_PORTS[scheme] else f":{number}"
    if userinfo:
        userinfo = _quote_userinfo(_pct_or_quote, userinfo) + "@"
    return f"{scheme}://{userinfo}{host}{port}"


# -- canonicalize --------------------------------------------------------------------------------


def _clean(url: str) -> str:
    """Strip C0 controls and spaces at both ends, remove TAB/CR/LF, drop the fragment, read
    ``\\`` before the query as ``/``.

    The last is what the WHATWG URL parser does in special schemes (http and https are the
    only ones kept), and it must happen before a relative reference is joined with its base:
    ``\\x`` is then root-relative and ``\\\\host/x`` scheme-relative, as in browsers.
    """
    url = url.strip(_C0_AND_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.replace("\t", "").replace("\n", "").replace("\r", "")
    url = url.partition("#")[0]
    if "\\" in url:
        before, mark, query = url.partition("?")
        url = before.replace("\\", "/") + mark + query
    return url


def _canonical_clean(url: str, sort_query: bool) -> str | None:
    """Canonicalize a URL already through :func:`_clean` (no fragment, no TAB/CR/LF, no ``\\`` before ``?``)."""
    colon = url.find(":")
    if colon < 0 or _scheme(url[:colon]) is None:
        return None
    scheme = url[:colon].lower()
    if scheme not in DEFAULT_PORTS or url[colon + 1 : colon + 3] != "//":
        return None
    start = colon + 3
    end = len(url)
    for delimiter in "/?":
        i = url.find(delimiter, start, end)
        if i >= 0:
            end = i
    origin = _origin(scheme, url[start:end])
    if origin is None:
        return None
    path, mark, query = url[end:].partition("?")
    if _simple(path) is None or "%" in path:
        path = _quote_path_query(_pct_or_quote, path)
    if _simple(query) is None or "%" in query:
        query = _quote_path_query(_pct_or_quote, query)
    return origin + _path_query(path or "/", query, sort_query)


def canonicalize(url: str, *, sort_query: bool = True) -> str | None:
    """The canonical form of an absolute http(s) URL, or None if it is invalid or not http(s).

    ``sort_query`` (config ``urls.sort_query``) orders the query's parameters by name.
    """
    hash_at = url.find("#")
    return _canonical(url if hash_at < 0 else url[:hash_at], url, sort_query)


def _canonical(head: str, url: str, sort_query: bool) -> str | None:
    """Canonicalize `url`, whose part before any `#` is `head`: a fast path for clean URLs."""
    match = _fast_absolute(head)
    if match is None:
        return _canonical_clean(_clean(url), sort_query)
    scheme, authority, rest = match.groups()
    origin = _origin(scheme, authority)
    if origin is None:
        return None
    if "%" in rest:
        rest = _fix_pct(rest)
    path, _, query = rest.partition("?")
    return origin + _path_query(path or "/", query, sort_query)


# -- resolving links -----------------------------------------------------------------------------


class BaseURL:
    """The base of one page's links, cut into pieces once so that each link is cheap.

    Invariant: ``url`` is canonical, ``url == origin + path + ("?" + query if query else "")``
    and ``directory`` is ``path`` up to and including its last ``/``. ``sort_query`` holds for
    the base and for every link resolved against it (see :func:`canonicalize`).
    """

    __slots__ = ("url", "scheme", "origin", "path", "query", "directory", "sort_query", "_network_prefix", "_page")

    def __init__(self, url: str, *, sort_query: bool = True) -> None:
        self.sort_query = sort_query
        canonical = canonicalize(url, sort_query=sort_query)
        if canonical is None:
            raise ValueError(f"not a valid http(s) URL: {url!r}")
        self.url = canonical
        self.origin, path_query = split(canonical)
        self.scheme = canonical[: canonical.index(":")]
        self.path, _, self.query = path_query.partition("?")
        self.directory = self.path[: self.path.rindex("/") + 1]
        self._network_prefix = self.scheme + ":"
        self._page = self.origin + self.path  # the page without its query

    def __repr__(self) -> str:
        return f"BaseURL({self.url!r})"

    def resolve(self, href: str) -> str | None:
        """The canonical absolute URL of a link, or None (other schemes, invalid URLs).

        Equals ``canonicalize(urllib.parse.urljoin(self.url, href), sort_query=self.sort_query)``
        except where urljoin departs from RFC 3986 (and from browsers), on purpose:

        * ``?`` alone (or ``http:?``) gives the page without a query; urljoin keeps the
          base's query (it cannot tell an empty query from none) and reads ``;`` as the page.
        * the href is stripped of C0 controls and spaces at both ends before it is read, as
          browsers do; urljoin strips only the start, so ``http: `` has a path for it, and
          whitespace before an empty query or fragment (``x ?``: ours ``x%20``) ends up
          trailing once urljoin drops the empty delimiter.
        * empty segments (``a//b``) are kept, as RFC 3986 says; urljoin drops them when
          merging a relative path (with the base's too), and turns one into the root after
          a ``..`` that climbs above it (``/..//x``: ours ``//x``, urljoin ``/x``).
        * a ``;`` in the last segment is part of it: ``g;`` keeps its ``;`` and ``..;x`` is
          no dot segment; urljoin splits the parameters off and drops an empty one.
        * ``///x`` and ``http:///x`` (empty authority) are invalid (None); urljoin reads
          them as ``/x`` on the base's host.
        * a ``\\`` before the query is a ``/`` before the href is joined, as in browsers
          (WHATWG, special schemes): ``\\x`` is root-relative, ``\\\\host/x`` is
          ``//host/x`` (another host), ``a\\b/../c`` is ``a/c``; urljoin keeps ``\\`` as a
          character of a segment.
        """
        original = href
        hash_at = href.find("#")
        if hash_at >= 0:
            href = href[:hash_at]
        if href[:4] == "http" and href.startswith(("http://", "https://")):
            return _canonical(href, original, self.sort_query)
        if _simple(href) is None:
            return self._resolve_general(original)
        first = href[:1]
        if first == "/":
            if href[1:2] == "/":
                url = self._network_prefix + href
                return _canonical(url, url, self.sort_query)
            path_query = href
        elif first == "?":
            if len(href) == 1:
                return self._page
            path_query = self.path + href
        elif not first:
            return self.url
        else:
            colon = href.find(":")
            if colon > 0 and _scheme(href[:colon]) is not None:
                if href[:colon].lower() not in DEFAULT_PORTS:
                    return None  # javascript:, mailto:, data:, tel:, ...
                return self._resolve_general(href)
            directory = self.directory
            if first == ".":  # climb `../` here rather than in _remove_dot_segments
                while True:
                    if href.startswith("../"):
                        href = href[3:]
                        if len(directory) > 1:
                            directory = directory[: directory.rindex("/", 0, -1) + 1]
                    elif href.startswith("./"):
                        href = href[2:]
                    else:
                        break
            path_query = directory + href
        if "%" in path_query:
            path_query = _fix_pct(path_query)
        path, _, query = path_query.partition("?")
        return self.origin + _path_query(path, query, self.sort_query)

    def resolve_all(self, hrefs: list[str]) -> list[str | None]:
        """``[self.resolve(href) for href in hrefs]``: the hrefs of the common shapes resolved in C
        (``frontier/_resolve.c``, ~5x faster), every other one by :meth:`resolve`."""
        return _resolve_all(self, hrefs, _origin)

    def _resolve_general(self, href: str) -> str | None:
        """Any href: clean it, join it per RFC 3986 §5.2.2, canonicalize the result."""
        ref = _clean(href)
        sort_query = self.sort_query
        colon = ref.find(":")
        if colon > 0 and _scheme(ref[:colon]) is not None:
            scheme = ref[:colon].lower()
            ref = ref[colon + 1 :]
            if scheme not in DEFAULT_PORTS:
                return None
            if ref[:2] == "//":
                return _canonical_clean(scheme + ":" + ref, sort_query)
            if scheme != self.scheme:  # `https:x` on an http page: no authority
                return None
        if ref[:2] == "//":
            return _canonical_clean(self._network_prefix + ref, sort_query)
        if ref[:1] == "/":
            return _canonical_clean(self.origin + ref, sort_query)
        if not ref:
            return self.url
        if ref[:1] == "?":
            return _canonical_clean(self._page + ref, sort_query)
        return _canonical_clean(self.origin + self.directory + ref, sort_query)


# -- pieces of canonical URLs --------------------------------------------------------------------


def split(url: str) -> tuple[str, str]:
    """A canonical URL → (scheme+authority, path+query): ``("http://a.test:8080", "/x?y=1")``."""
    # The authority starts at index 7 ("http://") or 8 ("https://") and is never empty.
    slash = url.find("/", 8)
    if slash < 0:
        return url, ""
    return url[:slash], url[slash:]


def _host_port(scheme_authority: str) -> tuple[str, str]:
    hostport = scheme_authority[scheme_authority.index("://") + 3 :].rpartition("@")[2]
    if hostport.startswith("["):
        close = hostport.index("]")
        return hostport[1:close], hostport[close + 2 :]
    host, _, port = hostport.partition(":")
    return host, port


def host_of(scheme_authority: str) -> str:
    """The host name of ``scheme://[userinfo@]host[:port]``, without brackets for IPv6."""
    return _host_port(scheme_authority)[0]


def port_of(scheme_authority: str) -> int:
    """The port of ``scheme://authority``: the explicit one, else the scheme's default."""
    port = _host_port(scheme_authority)[1]
    if port:
        return int(port)
    return DEFAULT_PORTS[scheme_authority[: scheme_authority.index(":")].lower()]


def fingerprint(url: str | bytes) -> int:
    """64-bit xxh3 of the canonical URL's UTF-8 bytes (what the URL cache and sieve store)."""
    return xxhash.xxh3_64_intdigest(url.encode() if isinstance(url, str) else url)
