"""After a fetch: decode, deduplicate, parse, store, then hand on the page's links (ARCHITECTURE.md, step 7).

The agent's fetchers call :meth:`Pipeline.page` for every page response and
:meth:`Pipeline.robots` for robots.txt responses. A page goes through:

1. **decode**: content-coding removed, cut at ``network.max_body_bytes`` (``engine/content.py``);
2. **examine**: the archive computes its payload digest (and near-duplicate signature) and says
   whether the same payload, or a near-duplicate, is stored already (``store/archive.py``);
3. **parse**: an HTML page's links are extracted, unless it is a duplicate, identical or near,
   and ``store.follow_duplicates`` is off (BUbiNG does not follow the links of duplicates);
4. **store**: one write of request, response (or revisit, for an identical payload), and a
   metadata record with the outlinks (and, for a near-duplicate, the capture it nearly
   repeats), then the index line and the graph record; a near-duplicate is not written at all
   with ``store.near_duplicates = "skip"``;
5. **the policy, then discover**: the crawl policy sees the page (``Frontier.fetched``: status,
   headers, body, links, their contexts, the redirect target) before its links are judged,
   then the links (or the redirect target) leave through the ``discover`` callable the agent
   provides, which routes them to this process's frontier or to the agent that owns their
   host (``engine/routing.py``); the pipeline neither knows nor cares which. With the default
   policy, which looks at no page, no page object is built at all;
6. **quality** (``[quality]``, off by default): a 200 HTML page (not a revisit of an identical
   payload) of a host the quality filter has not scored yet goes to ``Frontier.quality_page``, which
   counts it and, if it is one of the pages the filter reads, has it read (``engine/quality_text.py``)
   into its host's sample, before its links are discovered, so the links of the page that
   gets a host stopped are dropped; the verdict goes to ``engine/quality_log.py``.

A 304 (the answer to a conditional revisit, whose request sent the validators of the URL's last
fetch) is stored as a ``server-not-modified`` revisit record and shown to the policy with
``changed=False``; nothing is parsed. Every page shown to the policy brings its validators, which
the revisits of its URL carry (``Frontier.fetched``, ``frontier/validators.py``).

Bad input never stops the crawl: a body that does not decode is stored and not parsed;
the link extractor takes any bytes. A full disk (:class:`store.errors.StoreFull`) is handed
to ``stop`` when the agent gives one (the crawl then ends cleanly), else raised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from engine.addresses import is_ip
from engine.config import Config, link_rules
from engine.content import Decoded, decode
from engine.fetch import FetchResult
from engine.parse import HTML_TYPES, ParsedPage, extract_links, parse_location
from engine.quality_log import QualityLog
from engine.quality_text import page_text
from engine.stats import Counters
from frontier import validators
from frontier.filters import PhaseFilters, Response
from frontier.frontier import Frontier
from frontier.page import FetchedPage, LinkContext
from store.archive import Archive, Check
from store.cdxj import mime_of
from store.errors import StoreFull
from store.warc import Exchange, is_compressed

REDIRECTS = frozenset((301, 302, 303, 307, 308))

Discover = Callable[[Sequence[str], str | None, Sequence[LinkContext] | None], None]


class Pipeline:
    """Decode → examine → parse → store → discover for one process; stateless between pages but for its counters."""

    def __init__(
        self,
        config: Config,
        store: Archive,
        stats: Counters,
        frontier: Frontier,
        discover: Discover,
        filters: Callable[[], PhaseFilters],
        *,
        stop: Callable[[str, Path], None] | None = None,
        quality_log: QualityLog | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.stats = stats
        self.frontier = frontier
        self.discover = discover
        self.filters = filters  # the crawl's, read afresh for each page: a live change swaps them
        self.stop = stop
        self.lost = 0  # fetches that could not be stored (a full disk)
        self.link_rules = link_rules(config)
        self.quality_log = quality_log

    def decode(self, result: FetchResult) -> Decoded:
        return decode(result.body, result.headers.get("content-encoding"), self.config.network.max_body_bytes)

    def body(self, result: FetchResult) -> bytes:
        """The body as the server meant it: content-coding removed, within the body limit."""
        return self.decode(result).payload or b""

    def robots(self, result: FetchResult) -> None:
        self.stats.robots += 1
        self.save(result)

    def deferred(self, result: FetchResult) -> None:
        """A 429 the URL will be fetched again after: stored as it came, counted apart from pages (``deferred``),
        not parsed nor shown to the policy."""
        self.stats.deferred += 1
        self.save(result)

    def save(
        self,
        result: FetchResult,
        *,
        check: Check | None = None,
        page: bool = False,
        links: Sequence[str] = (),
        redirect: str | None = None,
        payload_truncated: bool = False,
    ) -> bool:
        """Store the exchange (a page with its metadata and graph record); False if the disk is full.

        A near-duplicate the archive skips (``store.near_duplicates = "skip"``) counts as received, not stored.
        """
        mime = mime_of(result.headers.get("content-type"))
        exchange = Exchange(
            result.url,
            result.ip if result.ip and is_ip(result.ip) else None,
            result.fetched_at,
            result.request_head,
            result.response_head,
            result.body,
            result.truncated,
            is_compressed(result.headers.get("content-encoding"), mime),
        )
        try:
            capture = self.store.store(
                exchange, status=result.status, mime=mime, check=check, page=page,
                links=links, redirect=redirect, fetch_seconds=result.ended - result.started if page else None,
                payload_truncated=payload_truncated,
            )
        except StoreFull as e:
            if self.stop is None:
                raise
            self.lost += 1
            self.stop(str(e), e.path)
            return False
        self.stats.stored += capture is not None
        self.stats.bytes += len(result.body)
        if result.truncated:
            self.stats.truncated[result.truncated] += 1
        return True

    def page(self, result: FetchResult, sent: bytes = b"") -> None:
        """Store the exchange, show it to the policy, then follow its redirect or its links.

        ``sent`` are the validators the request carried (``frontier/validators.py``), b"" for an
        unconditional GET."""
        status = result.status
        self.stats.statuses[status] += 1
        frontier = self.frontier
        if status == 304:
            self._not_modified(result, sent)
            return
        if status in REDIRECTS:
            location = result.headers.get("location")
            target = parse_location(location, result.url, sort_query=self.link_rules.sort_query) if location else None
            if self.save(result, page=True, redirect=target):
                if frontier.wants_pages:
                    frontier.fetched(self._page(result, b"", None, target), result.ended)
                if target:
                    self.stats.redirects += 1
                    self.discover([target], result.url, None)
            return
        content_type = result.headers.get("content-type", "")
        is_html = status == 200 and content_type.split(";", 1)[0].strip().lower() in HTML_TYPES
        decoded = self.decode(result) if status == 200 or frontier.wants_pages else Decoded(None, False)
        if decoded.cut:
            self.stats.truncated["decoded"] += 1
        check = self.store.examine(
            status=status, body=result.body, payload=decoded.payload, html=is_html,
            complete=not (result.truncated or decoded.cut),
        )
        filters = self.filters()
        response = None
        if filters.parse is not None or filters.store is not None:
            response = Response(result.url, status, result.headers, decoded.payload or b"")
        parsed = None
        if (
            is_html
            and (not check.duplicate or self.config.store.follow_duplicates)
            and (filters.parse is None or filters.parse(response))
        ):
            parsed = extract_links(
                decoded.payload or b"",
                result.url,
                content_type=content_type,
                rules=self.link_rules,
                want_context=frontier.wants_context,
                want_document=frontier.wants_document,
            )
        links = parsed.links if parsed is not None else []
        if filters.store is not None and not filters.store(response):
            self.stats.store_filtered += 1  # not archived, but its links are still followed
        elif not self.save(result, check=check, page=True, links=links, payload_truncated=decoded.cut):
            return
        if frontier.wants_pages:  # the policy sees the page before it judges the page's links
            page = self._page(result, decoded.payload or b"", parsed, None, changed=True if sent else None)
            frontier.fetched(page, result.ended, validators.of_response(result.headers))
        # an identical payload is a revisit record, with no body for `crawl learn quality` to read: skipped here too
        if is_html and decoded.payload and check.original is None and frontier.quality_wants(result.url):
            self._quality(result, decoded.payload, links)
        if parsed is not None:
            self.stats.links += len(links)
            self.discover(links, result.url, parsed.contexts)

    def _not_modified(self, result: FetchResult, sent: bytes) -> None:
        """A 304: a revisit record of profile server-not-modified, then the policy hears "not changed"
        (its revisits keep the validators: the 304's own, else those sent)."""
        if self.save(result, page=True) and self.frontier.wants_pages:
            page = self._page(result, b"", None, None, changed=False)
            self.frontier.fetched(page, result.ended, validators.of_response(result.headers, sent))

    def _quality(self, result: FetchResult, payload: bytes, links: Sequence[str]) -> None:
        verdict = self.frontier.quality_page(result.url, lambda: page_text(payload, links))
        if verdict is None or self.quality_log is None:
            return
        try:
            self.quality_log.record(verdict, result.fetched_at)
        except StoreFull as e:
            if self.stop is None:
                raise
            self.stop(str(e), e.path)

    @staticmethod
    def _page(result: FetchResult, body: bytes, parsed: ParsedPage | None, redirect: str | None, *,
              changed: bool | None = None) -> FetchedPage:
        return FetchedPage(
            url=result.url,
            status=result.status,
            headers=result.headers,
            body=body,
            fetched_at=result.fetched_at,
            document=parsed.document if parsed is not None else None,
            links=tuple(parsed.links) if parsed is not None else (),
            contexts=tuple(parsed.contexts) if parsed is not None and parsed.contexts is not None else None,
            redirect=redirect,
            changed=changed,
        )
