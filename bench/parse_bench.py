"""Micro-benchmark of link extraction (``engine/parse.py``) and resolution (``frontier/urls.py``).

Generates realistic HTML pages (~15 KB, ~40 links in the mix a crawler meets: navigation
by root-relative paths, relative and ``../`` links, absolute links to other hosts,
protocol-relative assets, queries, fragments, a few ``javascript:``/``mailto:`` and
``rel=nofollow``), then times :func:`engine.parse.extract_links` per page in its three
modes, :meth:`frontier.urls.BaseURL.resolve` per link, :meth:`~frontier.urls.BaseURL.resolve_all` (the
common hrefs in C) per link and, for scale,
``canonicalize(urljoin(...))``. Figures are the least CPU time of several repeats (the
machine is shared), in µs.

    python -m bench.parse_bench [--pages 100] [--repeat 15]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from urllib.parse import urljoin

from lxml import etree

from engine.parse import extract_links
from frontier.urls import BaseURL, canonicalize

WORDS = (
    "crawler frontier sieve politeness host queue fetch parse archive record robots link anchor "
    "page document server response header status body cache index domain path query fragment"
).split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _href(rng: random.Random, page: int) -> str:
    kind = rng.random()
    if kind < 0.35:
        return f"/{rng.choice(WORDS)}/{rng.choice(WORDS)}-{rng.randrange(1000)}.html"
    if kind < 0.55:
        return f"{rng.choice(WORDS)}-{rng.randrange(1000)}.html"
    if kind < 0.62:
        return f"../{rng.choice(WORDS)}/index.html"
    if kind < 0.77:
        return f"https://{rng.choice(WORDS)}{rng.randrange(50)}.example.org/{rng.choice(WORDS)}?id={rng.randrange(10**6)}"
    if kind < 0.82:
        return f"/search?q={rng.choice(WORDS)}+{rng.choice(WORDS)}&page={rng.randrange(9)}"
    if kind < 0.87:
        return f"#{rng.choice(WORDS)}"
    if kind < 0.90:
        return f"{rng.choice(WORDS)}.html#{rng.choice(WORDS)}"
    if kind < 0.93:
        return "javascript:void(0)"
    if kind < 0.95:
        return f"mailto:{rng.choice(WORDS)}@example.com"
    return f"/page/{page}/{rng.choice(WORDS)}%20{rng.choice(WORDS)}"


def make_page(seed: int, links: int = 40, size: int = 15_000) -> bytes:
    """A deterministic HTML page of about `size` bytes with `links` anchors (plus assets)."""
    rng = random.Random(seed)
    head = (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{_text(rng, 5)}</title>"
        '<link rel=stylesheet href="/static/site.css"><link rel=icon href="/favicon.ico">'
        '<script src="//cdn.example.net/lib.js"></script>'
        "<style>body{font-family:sans-serif}.nav li{display:inline}</style></head>\n"
        '<body class="page"><div class="header"><ul class="nav">'
    )
    parts = [head]
    for i in range(links):
        href = _href(rng, seed)
        rel = ' rel="nofollow"' if rng.random() < 0.05 else ""
        cls = f' class="item i{i % 4}"' if rng.random() < 0.5 else ""
        anchor = f'<a href="{href}"{cls}{rel}>{_text(rng, rng.randrange(1, 5))}</a>'
        if i < 8:
            parts.append(f"<li>{anchor}</li>")
        else:
            parts.append(f'<p class="text">{_text(rng, rng.randrange(3, 12))} {anchor} {_text(rng, 4)}</p>\n')
        if i == 7:
            parts.append('</ul></div><div class="main wide"><h1>Title</h1>\n')
    body = "".join(parts)
    filler = []
    while len(body) + sum(map(len, filler)) < size - 200:
        filler.append(
            f'<div class="para"><p>{_text(rng, 6)} <em>{_text(rng, 2)}</em> {_text(rng, 5)}'
            f'<br><span class="note">{_text(rng, 3)}</span> <b>{_text(rng, 1)}</b></p>'
            f'<img src="/img/{rng.randrange(999)}.png" alt="{_text(rng, 2)}"></div>\n'
        )
    return (body + "".join(filler) + '</div><div class="footer">&copy; 2024</div></body></html>\n').encode()


def raw_hrefs(page: bytes) -> list[str]:
    """The raw href/src values of a page, to time resolution on its own."""
    root = etree.fromstring(page, etree.HTMLParser(encoding="utf-8"))
    return [v for el in root.iter("a", "area", "link", "frame", "iframe") if (v := el.get("href", el.get("src")))]


def least_cpu(tasks: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Least CPU seconds of each task over `repeat` rounds.

    CPU time rather than wall time, and the tasks taken in turn within each round, because
    other processes share the cores: a busy spell then slows every task, not just one.
    """
    least = dict.fromkeys(tasks, float("inf"))
    for _ in range(repeat):
        for name, task in tasks.items():
            t0 = time.process_time()
            task()
            least[name] = min(least[name], time.process_time() - t0)
    return least


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    urls = [f"http://www.site{i % 7}.test/section/{i}/page.html" for i in range(args.pages)]
    pages = [make_page(i) for i in range(args.pages)]
    found = sum(len(extract_links(p, u).links) for p, u in zip(pages, urls))
    kb = sum(map(len, pages)) / len(pages) / 1024
    print(f"{args.pages} pages, {kb:.1f} KB each, {found / args.pages:.1f} distinct links kept per page")

    def extract(**kwargs: bool) -> Callable[[], None]:
        def run() -> None:
            for page, url in zip(pages, urls):
                extract_links(page, url, content_type="text/html; charset=utf-8", **kwargs)

        return run

    hrefs = [(BaseURL(url), raw_hrefs(page)) for page, url in zip(pages, urls)]
    n = sum(len(h) for _, h in hrefs)

    def resolve_each() -> None:
        for base, links in hrefs:
            resolve = base.resolve
            for href in links:
                resolve(href)

    def resolve_all() -> None:
        for base, links in hrefs:
            base.resolve_all(links)

    def urljoin_all() -> None:
        for base, links in hrefs:
            for href in links:
                canonicalize(urljoin(base.url, href))

    pages_tasks = {
        "extract_links (default)": extract(),
        "extract_links want_document": extract(want_document=True),
        "extract_links want_context": extract(want_context=True),
    }
    for label, seconds in least_cpu(pages_tasks, args.repeat).items():
        print(f"{label:30} {seconds / args.pages * 1e6:8.1f} µs/page {seconds / found * 1e6:6.2f} µs/link kept")
    link_tasks = {"BaseURL.resolve": resolve_each, "BaseURL.resolve_all": resolve_all, "canonicalize(urljoin())": urljoin_all}
    for label, seconds in least_cpu(link_tasks, args.repeat).items():
        print(f"{label:30} {seconds / n * 1e6:8.2f} µs/href ({n} hrefs)")


if __name__ == "__main__":
    main()
