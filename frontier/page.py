"""Plain data that crosses from the engine into the frontier's crawl policy.

These are the typed payloads of the policy hooks (see :mod:`frontier.policy`): what the
engine knows about a link (its context in the parent page) and about a fetched page.
They are built by ``engine/parse.py`` and ``engine/pipeline.py``; the frontier and the
policy only read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LinkContext:
    """Where a link stood in its parent page.

    ``tag_path`` is the chain of element names from the root to the link's element, each
    with its CSS classes joined by dots, separated by ``/``, e.g.
    ``html/body/div.main.wide/ul.list/li/a.item``. ``anchor_text`` is the element's text
    with whitespace collapsed (empty for ``link``/``frame`` elements). ``tag`` is the
    element name (``a``, ``area``, ``link``, ``frame``, ``iframe``).
    """

    tag: str
    tag_path: str
    anchor_text: str


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A fetched response as the crawl policy sees it (every status, redirects included).

    ``body`` is the decoded payload (content-encoding removed, possibly truncated; empty for
    a redirect), ``headers`` the response headers with lower-case names. ``fetched_at`` is
    wall-clock seconds, the WARC record's date: never compare it with the hooks' ``now``.
    ``document`` is the parsed lxml root element of an HTML page when the policy sets
    ``wants_document``, else ``None``. ``links`` are the page's canonical links in page
    order (empty if it was not parsed), ``contexts`` their :class:`LinkContext`, one per
    link, when the policy sets ``wants_context``. ``redirect`` is the canonical target of a
    redirect, else ``None``. ``changed`` answers "changed since the last fetch?" for a
    conditional GET (a revisit that sent validators): False for a 304, True for any other
    answer; ``None`` when the request was not conditional.
    """

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    fetched_at: float
    document: Any = None
    links: tuple[str, ...] = ()
    contexts: tuple[LinkContext, ...] | None = None
    redirect: str | None = None
    changed: bool | None = None
