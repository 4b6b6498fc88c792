"""After a fetch: store the exchange, then follow its redirect or extract and hand on its links.

The agent's fetchers call :meth:`Pipeline.page` for every page response and
:meth:`Pipeline.robots` for robots.txt responses. Discovered links leave through the
``discover`` callable the agent provides, which routes them to this process's frontier or to
the agent that owns their host; the pipeline neither knows nor cares which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.addresses import is_ip
from engine.config import Config
from engine.content import decode_body
from engine.fetch import FetchResult
from engine.parse import extract_links, parse_location
from engine.stats import Counters
from frontier.page import FetchedPage, LinkContext
from frontier.policy import BreadthFirst, CrawlPolicy
from store.warc import WarcStore

REDIRECTS = frozenset((301, 302, 303, 307, 308))
HTML_TYPES = ("text/html", "application/xhtml+xml")

Discover = Callable[[Sequence[str], str, Sequence[LinkContext] | None], None]


class Pipeline:
    """Store → parse → discover for one process; stateless between pages but for its counters."""

    def __init__(
        self,
        config: Config,
        store: WarcStore,
        stats: Counters,
        policy: CrawlPolicy,
        discover: Discover,
        fetched: Callable[[FetchedPage], None],
    ) -> None:
        self.config = config
        self.store = store
        self.stats = stats
        self.policy = policy
        self.default_policy = isinstance(policy, BreadthFirst)
        self.discover = discover
        self.fetched = fetched

    def body(self, result: FetchResult) -> bytes:
        """The body as the server meant it: content-coding removed, within the body limit."""
        return decode_body(result.body, result.headers.get("content-encoding"), self.config.network.max_body_bytes)

    def robots(self, result: FetchResult) -> None:
        self.stats.robots += 1
        self.save(result)

    def save(self, result: FetchResult) -> None:
        self.store.store_exchange(
            url=result.url,
            ip=result.ip if result.ip and is_ip(result.ip) else None,
            fetched_at=result.fetched_at,
            request_head=result.request_head,
            response_head=result.response_head,
            body=result.body,
            truncated=result.truncated,
        )
        self.stats.stored += 1
        self.stats.bytes += len(result.body)
        if result.truncated:
            self.stats.truncated += 1

    def page(self, result: FetchResult) -> None:
        """Store the exchange, then follow its redirect or its links."""
        self.save(result)
        status = result.status
        self.stats.statuses[status] += 1
        if status in REDIRECTS:
            location = result.headers.get("location")
            target = parse_location(location, result.url) if location else None
            if target is not None:
                self.stats.redirects += 1
                self.discover([target], result.url, None)
            return
        content_type = result.headers.get("content-type", "")
        is_html = status == 200 and content_type.split(";", 1)[0].strip().lower() in HTML_TYPES
        if not is_html and self.default_policy:
            return
        body = self.body(result)
        parsed = None
        if is_html:
            policy = self.policy
            parsed = extract_links(
                body,
                result.url,
                content_type=content_type,
                follow_nofollow=self.config.scope.follow_nofollow,
                want_context=policy.wants_context,
                want_document=policy.wants_document,
            )
            self.stats.links += len(parsed.links)
            self.discover(parsed.links, result.url, parsed.contexts)
        if not self.default_policy:
            self.fetched(
                FetchedPage(
                    url=result.url,
                    status=status,
                    headers=result.headers,
                    body=body,
                    fetched_at=result.fetched_at,
                    document=parsed.document if parsed is not None else None,
                )
            )
