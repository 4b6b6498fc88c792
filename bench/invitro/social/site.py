"""What a synthetic social site is: the interface every lab site implements, and its ground truth.

Role: the contract between the lab's sites (``blog``, ``forum``, ``books``, ``microblog``),
the lab web that serves them (:mod:`bench.invitro.social.web`) and the scorer
(:mod:`bench.invitro.social.score`). A site is a pure function of the URL: the same
(seed, port, knobs) and the same host and target give the same :class:`Answer`, in any
process, with no state kept between requests. Its :class:`Truth` is the side API a crawler
never reads: only the scorer, the tests and the benchmarks do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

VALUABLE = "valuable"
DUPLICATE = "duplicate"
UNINFORMATIVE = "uninformative"
ERROR = "error"
CATEGORIES = (VALUABLE, DUPLICATE, UNINFORMATIVE, ERROR)


@dataclass(frozen=True, slots=True)
class Truth:
    """What one URL is, as a human labeller of the site would say.

    ``type`` is the page template (``post``, ``tag_listing``, ``reply_form``, ...).
    ``category`` is one of :data:`CATEGORIES`. ``content_key`` names the content the page
    holds: a valuable page's own key (``post:bob:123``), the key of the valuable page that a
    duplicate repeats (a print view, a mirror, a sort variant, an old-scheme redirect), or
    ``""`` when there is none (action pages, errors, listings that only re-list items).
    ``ucc``: the page's main content is what users made, whatever its category, as the
    SOUrCe digest labels page types (``source.md`` §4.2, §5.3): posts, threads, reviews,
    profiles, and the lists of them users' activity fills (boards, tag and shelf lists,
    friends and contacts, a user's posts, archives), under any URL that shows them (a
    legacy scheme, a session or tracking alias, a mirror); not the site's own pages (home,
    news, help, forms and actions, login), redirects, print views or errors.
    """

    type: str
    category: str
    content_key: str = ""
    ucc: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    """A site's whole answer to one request.

    ``status`` 200 has ``html`` (the body, of ``content_type``: an RSS feed is XML); a 3xx has
    ``location`` (absolute); 404 and other errors have neither. ``links`` are the absolute,
    fragment-free URLs a crawler takes from the body (none from a body that is not HTML), in
    document order with repeats (a redirect lists its location), so tests and the scorer can
    follow the site without parsing it.
    """

    status: int
    truth: Truth
    html: str = ""
    location: str = ""
    links: tuple[str, ...] = ()
    content_type: str = "text/html; charset=utf-8"


class Site(ABC):
    """One synthetic social site under its own registrable domain (``blog.test``, ...).

    ``port`` is the port every URL names (the lab serves all sites on one port); ``seed``
    fixes everything random; ``knobs`` are the site's own settings (sizes, shares, the
    reply-form rate...), each with a default in ``defaults``.
    """

    name: str
    """short name: ``blog``, ``forum``, ``books``, ``microblog``"""
    domain: str
    """registrable domain; every host of the site is it or a subdomain of it"""

    defaults: ClassVar[Mapping[str, float]] = {}
    """every knob of the site with its default; another knob is a ValueError"""

    def __init__(self, seed: int, port: int, **knobs: float) -> None:
        unknown = sorted(set(knobs) - set(self.defaults))
        if unknown:
            raise ValueError(f"unknown {self.name} knobs: {', '.join(unknown)}")
        self.seed = seed
        self.port = port
        self.knobs = knobs
        self.k: dict[str, float] = {**self.defaults, **knobs}
        """every knob's value, the defaults filled in"""

    def origin(self, host: str) -> str:
        """``http://host:port``, as every link of the site is written."""
        return f"http://{host}:{self.port}"

    @abstractmethod
    def owns(self, host: str) -> bool:
        """True for a host this site serves (per-user subdomains included), lower case, no port."""

    @abstractmethod
    def seeds(self) -> list[str]:
        """The URLs a crawl of this site starts from (its home page, sometimes a few more)."""

    @abstractmethod
    def robots(self, host: str) -> str:
        """The text of ``http://host/robots.txt``."""

    @abstractmethod
    def answer(self, host: str, target: str) -> Answer:
        """The answer to ``GET target`` (path and query, as requested) on ``host``."""
