"""The cluster graph's view of a URL: its pattern key, its scope and its tokens (digest §2.1, §2.3).

Reads URL strings only and returns strings and tuples; it touches no file, no clock and no
network. Two forms of a URL occur in the package:

* the crawler's canonical absolute URL (``https://Bob.blog.test:8042/tag/cats/?x=1#top``);
* the *normalised* key that every other module works on (``bob.blog.test/tag/cats?x=1``):
  :func:`normalise` drops the scheme, the userinfo, the port (the lab serves on a new port
  every run, and a model must not depend on it) and the fragment, lowercases the host and
  trims trailing slashes, keeping the case, the percent-encoding and the parameter order of
  path and query.

:func:`tokens` cuts a normalised key into its three parts (authority, path, query), each as
an alternating sequence of tokens and separator runs so that a pattern can be rebuilt
position by position (§2.6); :func:`itemise` gives the paper's three item sets (§2.3), the
tokens without positions, for frequent-itemset mining.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

Part = Literal["authority", "path", "query"]
PARTS: tuple[Part, Part, Part] = ("authority", "path", "query")

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
# One capturing group: ``split`` then returns token, separator run, token, …, token.
_AUTHORITY_SEPARATORS = re.compile(r"(\.+)")
_PATH_SEPARATORS = re.compile(r"([/.]+)")
_QUERY_SEPARATORS = re.compile(r"([&=]+)")


def _strip_scheme(url: str) -> str:
    colon = url.find("://")
    if colon > 0 and _SCHEME.fullmatch(url, 0, colon):
        return url[colon + 3 :]
    return url


def _host(authority: str) -> str:
    """The lower-case host of an authority: userinfo and port removed (IPv6 literals keep their brackets)."""
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        return host[: host.find("]") + 1].lower() if "]" in host else host.lower()
    return host.partition(":")[0].lower()


def _cut(rest: str) -> tuple[str, str, str]:
    """Authority, path and query of a scheme-less, fragment-less URL (the path still raw)."""
    end = rest.find("/")
    if end < 0:
        end = len(rest)
    query_mark = rest.find("?", 0, end)
    if query_mark >= 0:
        end = query_mark
    authority, rest = rest[:end], rest[end:]
    path, _, query = rest.partition("?")
    return authority, path, query


def normalise(url: str) -> str:
    """The pattern key of ``url``: ``authority + path + ("?" + query if query)``, idempotent.

    An empty path becomes ``/``; a non-root path loses its trailing ``/`` (all of them, so
    that ``normalise(normalise(u)) == normalise(u)`` holds for ``/x//`` too: the digest's
    "strip one" for every URL with a single trailing slash).
    """
    authority, path, query = _cut(_strip_scheme(url.partition("#")[0]))
    path = path.rstrip("/") or "/"
    key = _host(authority) + path
    return f"{key}?{query}" if query else key


def host_of(url: str) -> str:
    """The lower-case host of an absolute URL or of a normalised key, without userinfo or port."""
    return _host(_cut(_strip_scheme(url.partition("#")[0]))[0])


def in_scope(url: str, domain: str) -> bool:
    """Whether the host of ``url`` is the registrable ``domain`` or one of its subdomains."""
    host = host_of(url)
    domain = domain.lower().strip(".")
    return host == domain or host.endswith("." + domain)


class Tokens(NamedTuple):
    """The three parts of a normalised key, each cut as ``(token, separators, token, …, token)``.

    Even positions hold tokens, odd positions the maximal runs of the part's separator
    characters (authority ``.``, path ``/`` and ``.``, query ``&`` and ``=``). Inner tokens
    are never empty; the first and the last are empty when the part starts or ends with a
    separator, as every path does. ``"".join(part)`` gives the part back, so a pattern built
    position by position keeps every separator verbatim. The query part excludes the ``?``
    and is ``("",)`` when there is no query.
    """

    authority: tuple[str, ...]
    path: tuple[str, ...]
    query: tuple[str, ...]

    def text(self) -> str:
        """The normalised key these tokens came from."""
        key = "".join(self.authority) + "".join(self.path)
        query = "".join(self.query)
        return f"{key}?{query}" if query else key


def tokens(normalised: str) -> Tokens:
    """The positional tokens of a normalised key (also of a pattern string: ``*`` and ``$`` are tokens)."""
    authority, path, query = _cut(normalised)
    return Tokens(
        tuple(_AUTHORITY_SEPARATORS.split(authority)),
        tuple(_PATH_SEPARATORS.split(path)),
        tuple(_QUERY_SEPARATORS.split(query)),
    )


def items_of(part: tuple[str, ...]) -> frozenset[str]:
    """The item set of one part of :class:`Tokens`: its non-empty tokens."""
    return frozenset(token for token in part[::2] if token)


def itemise(normalised: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The paper's three transactions of a URL (§2.3): authority, path and query item sets."""
    authority, path, query = tokens(normalised)
    return items_of(authority), items_of(path), items_of(query)
