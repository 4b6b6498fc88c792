"""The built-in predicates of the filter language, by name.

Each entry of :data:`BUILTINS` turns a call's arguments into a predicate once, at compile
time (argument checks, sets, compiled regexes, the host list read from its file), so that a
call costs only its test. URL predicates take a canonical URL (``frontier/urls.py``) and
pick the piece they need with ``str.find`` and a slice; the host, which several predicates
want and which repeats from link to link, comes from a small cache keyed by
scheme+authority. Response predicates take a :class:`Response`.

Predicates that detect something unwanted (``duplicate_segments``, ``looks_binary``) are
true when they detect it: write ``not duplicate_segments(3)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from frontier.filters.segments import repeats
from frontier.urls import canonicalize, host_of, split

__all__ = ["BUILTINS", "ArgumentError", "Builtin", "Response"]

Kind = Literal["url", "response"]
Predicate = Callable[[Any], bool]
Factory = Callable[[tuple[str, ...], Path | None], Predicate]  # (arguments, base_dir) -> predicate


@dataclass(frozen=True, slots=True)
class Response:
    """What a response filter sees of a fetched response.

    ``headers`` have lower-case names; ``body`` is the payload with its content-coding
    removed (possibly truncated). Only filters whose ``needs_body`` is set read ``body``.
    """

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes = b""


class ArgumentError(ValueError):
    """A bad argument: ``index`` says which (the compiler turns it into a column)."""

    def __init__(self, index: int, problem: str) -> None:
        super().__init__(problem)
        self.index = index


@dataclass(frozen=True, slots=True)
class Builtin:
    """A predicate of the language: its name, what it tests, how many arguments, its factory."""

    name: str
    kind: Kind
    usage: str  # e.g. "host_ends_with(SUFFIX, ...)"; what the predicate tests is its factory's docstring
    make: Factory
    min_args: int = 1
    max_args: int | None = None  # None: any number
    needs_body: bool = False


BUILTINS: dict[str, Builtin] = {}


def _builtin(usage: str, kind: Kind, *, min_args: int = 1, max_args: int | None = None,
             needs_body: bool = False) -> Callable[[Factory], Factory]:
    """Register a predicate factory under the name ``usage`` starts with."""

    def register(make: Factory) -> Factory:
        name = usage.partition("(")[0]
        BUILTINS[name] = Builtin(name, kind, usage, make, min_args, max_args, needs_body)
        return make

    return register


# -- pieces of a canonical URL --------------------------------------------------------------------

_ORIGIN_CACHE_ENTRIES = 1 << 16


def _by_origin(test: Callable[[str], bool]) -> Predicate:
    """A test of the host, answered once per scheme+authority: links repeat their hosts.

    The cache is a plain dict (a lookup is cheaper than an ``lru_cache`` call), emptied when
    it reaches 65,536 origins so that memory stays bounded over a crawl of many hosts.
    """
    cache: dict[str, bool] = {}

    def predicate(url: str) -> bool:
        slash = url.find("/", 8)  # a canonical URL has a path; its authority starts at 7 or 8
        origin = url if slash < 0 else url[:slash]
        try:
            return cache[origin]
        except KeyError:
            if len(cache) >= _ORIGIN_CACHE_ENTRIES:
                cache.clear()
            answer = cache[origin] = test(host_of(origin))
            return answer

    return predicate


def _path(url: str) -> str:
    """The path without its query ("/" for a URL without one)."""
    slash = url.find("/", 8)
    if slash < 0:
        return "/"
    query = url.find("?", slash)
    return url[slash:] if query < 0 else url[slash:query]


def _count(args: tuple[str, ...], index: int, minimum: int) -> int:
    try:
        value = int(args[index])
    except ValueError:
        raise ArgumentError(index, f"expected a whole number, got {args[index]!r}") from None
    if value < minimum:
        raise ArgumentError(index, f"must be at least {minimum}, got {value}")
    return value


# -- URL predicates -----------------------------------------------------------------------------


@_builtin("host_is(HOST, ...)", "url")
def _host_is(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The host is one of these."""
    hosts = frozenset(a.lower().rstrip(".") for a in args)
    return _by_origin(hosts.__contains__)


@_builtin("host_ends_with(SUFFIX, ...)", "url")
def _host_ends_with(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The host ends with one of these strings (write .example.com to leave example.com itself out)."""
    suffixes = tuple(a.lower() for a in args)
    return _by_origin(lambda host: host.endswith(suffixes))


@_builtin("host_in(FILE)", "url", max_args=1)
def _host_in(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The host, or a domain it belongs to, is listed in FILE (one per line, # comments)."""
    hosts = _read_hosts(Path(args[0]) if base_dir is None else base_dir / args[0])

    def listed(host: str) -> bool:
        while host not in hosts:
            dot = host.find(".")
            if dot < 0:
                return False
            host = host[dot + 1 :]
        return True

    return _by_origin(listed)


def _read_hosts(path: Path) -> frozenset[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ArgumentError(0, f"cannot read the host list {str(path)!r}: {getattr(e, 'strerror', None) or e}") from None
    hosts = set()
    for number, line in enumerate(lines, 1):
        entry = line.partition("#")[0].strip()
        if not entry:
            continue
        host = _list_host(entry)
        if host is None:
            raise ArgumentError(0, f"{path}, line {number}: {entry!r} is not a host name")
        hosts.add(host)
    return frozenset(hosts)


def _list_host(entry: str) -> str | None:
    """A host as canonical URLs spell it (lower case, punycode, dotted IPv4), or None."""
    if any(c in entry for c in "/?#@ ") or (":" in entry and not entry.startswith("[")):
        return None
    url = canonicalize(f"http://{entry}/")
    return None if url is None else host_of(split(url)[0])


@_builtin("scheme_is(SCHEME, ...)", "url")
def _scheme_is(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The scheme is one of these (http, https)."""
    prefixes = tuple(a.lower() + "://" for a in args)
    return lambda url: url.startswith(prefixes)


@_builtin("path_ends_with(SUFFIX, ...)", "url")
def _path_ends_with(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The path (query left out) ends with one of these, ignoring case."""
    suffixes = tuple(a.lower() for a in args)
    return lambda url: _path(url).lower().endswith(suffixes)


@_builtin("url_matches(REGEX)", "url", max_args=1)
def _url_matches(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The regular expression (Python syntax) matches somewhere in the URL."""
    try:
        search = re.compile(args[0]).search
    except re.error as e:
        raise ArgumentError(0, f"not a regular expression: {e}") from None
    return lambda url: search(url) is not None


@_builtin("max_depth(N)", "url", max_args=1)
def _max_depth(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The path (query left out) has at most N slashes: / is 1, /a/b.html is 2."""
    limit = _count(args, 0, 1)
    # "scheme://" holds the only two slashes before the path: one count settles most URLs
    return lambda url: url.count("/") - 2 <= limit or _path(url).count("/") <= limit


@_builtin("max_url_length(N)", "url", max_args=1)
def _max_url_length(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The URL is at most N characters long."""
    limit = _count(args, 0, 1)
    return lambda url: len(url) <= limit


@_builtin("duplicate_segments(T)", "url", max_args=1)
def _duplicate_segments(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """A run of path segments repeats T or more times in a row, as in the trap /a/b/a/b/a/b/ (T >= 2)."""
    times = _count(args, 0, 2)
    # as in max_depth: a URL with fewer than `times` slashes past "scheme://" cannot repeat a segment that often
    return lambda url: url.count("/") - 2 >= times and repeats(_path(url), times)


# -- response predicates ------------------------------------------------------------------------

_STATUS = re.compile(r"([1-5])(?:xx|XX|(\d\d))")


@_builtin("status(CODE, ...)", "response")
def _status(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The status is one of these codes or classes: status(200, 3xx)."""
    codes: set[int] = set()
    for index, arg in enumerate(args):
        match = _STATUS.fullmatch(arg)
        if match is None:
            raise ArgumentError(index, f"expected a status such as 200 or a class such as 4xx, got {arg!r}")
        first = int(match.group(1)) * 100
        codes.update([first + int(match.group(2))] if match.group(2) else range(first, first + 100))
    frozen = frozenset(codes)
    return lambda response: response.status in frozen


@_builtin("content_type(TYPE, ...)", "response")
def _content_type(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The media type (parameters and case ignored) is one of these; text/* takes a whole family."""
    exact, families = set(), set()
    for index, arg in enumerate(args):
        family, slash, sub = arg.lower().partition("/")
        if not slash or not family or not sub:
            raise ArgumentError(index, f"expected a media type such as text/html or text/*, got {arg!r}")
        if sub == "*":
            families.add(family)
        else:
            exact.add(f"{family}/{sub}")

    def matches(response: Any) -> bool:
        media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        return media in exact or (bool(media) and (media.partition("/")[0] in families or "*" in families))

    return matches


_SNIFF_BYTES = 8192
# control characters that text does not contain (tab, newline, form feed, carriage return and escape excepted)
_CONTROL = bytes(c for c in range(32) if c not in (8, 9, 10, 12, 13, 27)) + b"\x7f"


@_builtin("looks_binary()", "response", min_args=0, max_args=0, needs_body=True)
def _looks_binary(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The first 8 KiB of the body hold a NUL byte, or more than 10% control characters."""

    def looks_binary(response: Any) -> bool:
        sample = response.body[:_SNIFF_BYTES]
        if b"\0" in sample:
            return True
        controls = len(sample) - len(sample.translate(None, _CONTROL))
        return controls * 10 > len(sample)

    return looks_binary


@_builtin("max_size(BYTES)", "response", max_args=1, needs_body=True)
def _max_size(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The body is at most this many bytes long."""
    limit = _count(args, 0, 0)
    return lambda response: len(response.body) <= limit


@_builtin("min_size(BYTES)", "response", max_args=1, needs_body=True)
def _min_size(args: tuple[str, ...], base_dir: Path | None) -> Predicate:
    """The body is at least this many bytes long."""
    limit = _count(args, 0, 0)
    return lambda response: len(response.body) >= limit
