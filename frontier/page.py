"""Plain data that crosses from the engine into the frontier's crawl policy.

These are the typed payloads of the policy hooks (see :mod:`frontier.policy`): what the
engine knows about a link (its context in the parent page) and about a fetched page.
They are built by ``engine/parse.py`` and ``engine/agent.py``; the frontier only reads them.
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
    """A fetched response as the crawl policy sees it.

    ``body`` is the decoded payload (content-encoding removed, possibly truncated),
    ``headers`` the response headers with lower-case names. ``document`` is the parsed lxml
    root element for HTML pages when the policy asked for it, else ``None``.
    """

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    fetched_at: float
    document: Any = None
