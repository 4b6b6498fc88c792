"""The Scrapy side of ``bench/scrapy_side.py``: a broad-crawl spider that follows every link.

Run by that benchmark as ``scrapy runspider bench/scrapy_spider.py -a seeds=FILE -a
stats_file=FILE -O feed.jsonl -s DOWNLOAD_DELAY=… -s CLOSESPIDER_TIMEOUT=…``, with ``http_proxy``
set to the in-vitro web's forward proxy (Scrapy's ``HttpProxyMiddleware`` reads it, for
robots.txt requests too), so Scrapy resolves no names.

Settings: those Scrapy's documentation recommends for broad crawls
(https://docs.scrapy.org/en/latest/topics/broad-crawls.html): concurrency 100, a larger reactor
thread pool, INFO logging, no cookies, retries or redirects, a 15 s download timeout, and
breadth-first order (``DEPTH_PRIORITY`` with FIFO queues). ``AJAXCRAWL_ENABLED`` is no longer
a Scrapy setting (its middleware is gone from Scrapy 2.13 on), so it is left out. Politeness
as our crawler's: robots.txt obeyed, one request at a time per host, and ``DOWNLOAD_DELAY`` (the
benchmark's host delay) exactly, not randomised.

What it stores: one feed line per response that reaches the spider (2xx: Scrapy drops error
responses before the spider): URL, status, body length, content type and the body's SHA-1 (so the
benchmark counts a payload seen before as a duplicate, as our archive writes it as a revisit). Scrapy's own stats
are written to ``stats_file`` when the spider closes, with ``elapsed_seconds`` since it started.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from scrapy.http import Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

BROAD_CRAWL_SETTINGS: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 100,
    "REACTOR_THREADPOOL_MAXSIZE": 20,
    "LOG_LEVEL": "INFO",
    "COOKIES_ENABLED": False,
    "RETRY_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 15,
    "REDIRECT_ENABLED": False,
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    # politeness, the same as our crawler's
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "RANDOMIZE_DOWNLOAD_DELAY": False,
    # no listening telnet console in a benchmark
    "TELNETCONSOLE_ENABLED": False,
}


class InVitroSpider(CrawlSpider):
    name = "invitro"
    custom_settings = BROAD_CRAWL_SETTINGS
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def __init__(self, seeds: str, stats_file: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = Path(seeds).read_text().split()
        self.stats_file = Path(stats_file)

    def parse_start_url(self, response: Response, **kwargs: Any) -> Iterator[dict[str, Any]]:
        return self.parse_item(response)

    def parse_item(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {
            "url": response.url,
            "status": response.status,
            "length": len(response.body),
            "type": (response.headers.get("Content-Type") or b"").decode("latin-1"),
            "sha1": hashlib.sha1(response.body).hexdigest(),  # a payload seen before is a duplicate, as in our WARC
        }

    def closed(self, reason: str) -> None:
        assert self.crawler.stats is not None
        stats = self.crawler.stats.get_stats()
        started: datetime = stats["start_time"]  # Scrapy adds elapsed_time_seconds only after this runs
        stats["elapsed_seconds"] = (datetime.now(tz=started.tzinfo) - started).total_seconds()
        self.stats_file.write_bytes(orjson.dumps(stats, default=str, option=orjson.OPT_INDENT_2))
