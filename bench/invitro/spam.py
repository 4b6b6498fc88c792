"""Spam hosts of the in-vitro web, with ground truth: link farms, keyword stuffing, generated text.

Role: what :class:`~bench.invitro.model.WebModel` adds when ``WebParams.spam_share`` > 0 (issue
16, item 3; the NADINE report, ``bubing-nadine.md`` §1.B), so a host quality filter can be trained
and judged on hosts it has not seen. With ``spam_share`` 0 nothing here runs and the web is byte
for byte what it was. The truth is :meth:`WebModel.spam_kind` and ``python -m bench.invitro
labels`` (a CSV ``host,label,kind``).

**Layout** (:func:`layout`, a pure function of the params). ``round(spam_share × hosts)`` hosts
are spam. They come in *farms* of 10–60 consecutive hosts, all of one kind, on one IP (two for
a farm of 20 hosts or more): spam operators buy many domains on one machine (the report's
Table 4 has thousands of hosts on one IP). Good hosts keep the usual layout, ``hosts_per_ip`` to an
IP, except that 5 % of their IP groups are shared hosting with 10–40 good hosts, so that hosts per
IP alone does not give spam away. Good groups and farms are shuffled by the seed (the first group
is good: host 0 is never spam), so each ``seed`` has its own farms and labels. No IP holds good
and spam hosts together.

**Kinds** (one per farm, in a cycle that gives every kind once in any three farms: 40 % ``farm``,
30 % ``stuffed``, 30 % ``generated``), pages written by
:func:`write_spam_page`; every farm has three to five keywords, mostly commercial ones ("cheap",
"casino", "loans") and one or two popular words of the good vocabulary:

- ``farm`` (a link farm): half as many pages as a good host; each page links 25–70 pages of other
  hosts of its farm (home and deep pages, with keyword anchors, in link lists), a few other spam
  hosts and one or two popular good hosts (to look legitimate), between templated sentences
  ("Top cheap loans deals: …") on short pages. A crawl that enters a farm finds dozens of new
  farm URLs per page. Half the farm hosts are *disguised*: their pages are good pages (written by
  :func:`~bench.invitro.page.write_page`) with a "partners" list of 25–70 farm links added in the
  good pages' list markup and anchors (:func:`partner_list`): only their links tell.
- ``stuffed`` (keyword stuffing): good sentences followed by runs of 3–12 of the farm's keywords
  (in a share of paragraphs that varies by host, 10–100 %); a long title of 12–25 keywords, meta
  keywords, keyword anchors; links to its own pages and 4–10 farm hosts.
- ``generated`` (machine-generated): four times as many pages as a good host, of word salad over
  the good pages' content words with almost no function words (0–15 % of words against about
  40 % on good pages), mixed with copied good sentences (0–40 % of them, by host: spun text);
  the usual number of internal links, 3–8 to its farm.

**Links from good hosts.** A good page's external links go to good hosts only; spam is reached
through comment spam: 15 % of good hosts have a comments section on 30 % of their pages, with one
or two links (70 % followed, 30 % ``rel="nofollow ugc"``) to spam hosts' pages under keyword
anchors. :meth:`WebModel.seeds` lists good hosts only, as a curated seed list would.

**What makes it hard.** Disguised farm hosts read like good hosts; light stuffers stuff a tenth of
their paragraphs; generated hosts copy good sentences; 10 % of good hosts are *thin* (pages a fifth
of the usual size with twice the links: directories and portals), which look like farm pages by
their anchor share; 15 % keep a *blogroll*, the list a disguised farm host has but of good hosts
(:func:`blogroll`); 15 % are *shops*, whose product lists repeat commercial words (as stuffed pages
do) with few function words; shared hosting puts good hosts 10–40 to an IP; comment spam puts
commercial anchors on good pages. Without the good hosts' variety one feature (the function-word
share) separated the classes perfectly; with it, on a 400-host web with ``spam_share`` 0.2, no
one of ten simple page statistics reaches an AUC of 0.98 on another seed's hosts, and a random
forest of eight content statistics reaches about 0.98 (the disguised farm hosts are the misses).

**In a crawl.** Politeness bounds what spam takes: a farm's IP is fetched at most every
``politeness.ip_delay`` however many hosts it has, a good IP about once per ``host_delay /
hosts_per_ip``. A 3000-page crawl of the 400-host web from ten good seeds spends about 13 % of its
pages on spam with ``spam_share`` 0.2 (16 % once the farms are found) and 25 % (31 %) with 0.4.

Every spam page is a pure function of (params, port, host, page) like every other page, written
from prebuilt sentence tables (:mod:`bench.invitro.html` and the salad below) and the page's
own ``random.Random``.
"""

from __future__ import annotations

import functools
import random
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import xxhash

from bench.invitro import html
from bench.invitro.page import (
    STYLESHEET,
    Link,
    Page,
    directory,
    host_table,
    href,
    write_nav,
)

if TYPE_CHECKING:
    from bench.invitro.model import HostInfo, WebModel, WebParams

FARM, STUFFED, GENERATED = "farm", "stuffed", "generated"
KINDS = (FARM, STUFFED, GENERATED)
_KIND_CYCLE = (FARM, STUFFED, GENERATED, FARM, GENERATED, STUFFED, FARM, STUFFED, GENERATED, FARM)
"""the kinds of consecutive farms, from a random place: 40 % link farms, every kind once in three farms"""
FARM_SIZES = (10, 60)
"""smallest and largest farm (the last farm takes what is left, up to 69 hosts)"""
_TWO_IPS_FROM = 20  # a farm this large is on two IPs (so every farm IP holds 10 hosts or more)
_SHARED_HOSTING_SHARE, _SHARED_HOSTING_SIZES = 0.05, (10, 40)
PAGES_SCALE = {FARM: 0.5, STUFFED: 1.0, GENERATED: 4.0}
"""pages of a spam host against a good host's (log-normal draw times this)"""
DISGUISED_SHARE = 0.5
"""share of link-farm hosts whose pages are good pages plus a list of farm links"""
THIN_SHARE, THIN_SIZE, THIN_LINKS = 0.1, 0.2, 2.0
"""share of good hosts that are thin, and their page size and link count against a good host's"""
BLOGROLL_SHARE = 0.15
"""share of good hosts whose pages end with a long list of links to other good hosts, as disguised farms' do"""
SHOP_SHARE, SHOP_SIZE = 0.15, 0.6
"""share of good hosts that are shops (their pages list products in commercial words), their text's size"""
COMMENT_HOSTS_SHARE, COMMENT_PAGES_SHARE, COMMENT_NOFOLLOW = 0.15, 0.3, 0.3
"""good hosts with comment spam, the share of their pages that have it, its nofollow share"""

COMMERCIAL = (
    "cheap best buy discount free online deals offer price sale casino loans insurance pills replica bonus "
    "poker mortgage credit download wholesale outlet coupon betting dating forex crypto diet"
).split()
POPULAR = ("travel", "guide", "review", "music", "weather", "market", "garden", "history", "science", "people")
_TEMPLATES = (
    "Welcome to the best {a} site on the web. Find {a} and {b} here.",
    "Top {a} {b} deals: compare {c} offers and save today.",
    "{A} {b} reviews, {c} tips and the latest {a} news.",
    "Looking for {a}? Our {b} guide lists every {c} offer.",
    "Click here for {a} {c}. Updated daily with new {b}.",
    "The number one {a} portal: {b}, {c} and more {a}.",
    "Get {a} now. {B} {c} with fast delivery and {a} support.",
    "Best {a} online. Cheap {b}, free {c}, {a} {b} {c}.",
)
_GEN = random.Random(20261124)


def _salad(gen: random.Random) -> str:
    """A sentence of word salad: content words of the good vocabulary, few function words."""
    function_share = gen.uniform(0.0, 0.15)
    function = sorted(html.FUNCTION_WORDS)
    words = [gen.choice(function) if gen.random() < function_share else gen.choice(html.CONTENT_WORDS)
             for _ in range(gen.randint(6, 18))]
    return words[0].capitalize() + " " + " ".join(words[1:]) + gen.choice((".", ".", ",", ";", "!"))


SALAD = tuple(_salad(_GEN) for _ in range(1024))
"""1024 generated sentences (str)"""
del _GEN


@dataclass(frozen=True, slots=True)
class Layout:
    """Which hosts are spam and the IP of every host (host index → IP number in ``ip_addresses``)."""

    ip_number: array[int]  # per host
    kind: bytes  # per host: 0 good, else 1 + index in KINDS
    farm: array[int]  # per host: its farm's number, -1 for a good host
    farms: tuple[range, ...]  # host indices of each farm
    keywords: tuple[tuple[str, ...], ...]  # per farm
    ip_count: int
    good: array[int]  # good host indices, ascending
    spam: array[int]  # spam host indices, ascending

    def kind_of(self, index: int) -> str | None:
        k = self.kind[index]
        return KINDS[k - 1] if k else None


@functools.lru_cache(maxsize=8)
def layout(params: WebParams) -> Layout:
    """The farms, kinds and IPs of a web with ``spam_share`` > 0 (deterministic for the params)."""
    rng = random.Random(xxhash.xxh3_64_intdigest(b"spam-layout", seed=params.seed & 0xFFFF_FFFF_FFFF_FFFF))
    spam_total = round(params.spam_share * params.hosts)
    blocks: list[tuple[int, int]] = []  # (hosts, kind): kind 0 for a group of good hosts
    left = spam_total
    offset = rng.randrange(len(_KIND_CYCLE))
    while left > 0:
        size = min(left, rng.randint(*FARM_SIZES))
        if left - size < FARM_SIZES[0]:
            size = left  # no farm smaller than the smallest, but in a web too small for one
        blocks.append((size, 1 + KINDS.index(_KIND_CYCLE[(offset + len(blocks)) % len(_KIND_CYCLE)])))
        left -= size
    left = params.hosts - spam_total
    good_blocks: list[tuple[int, int]] = []
    while left > 0:
        shared = rng.random() < _SHARED_HOSTING_SHARE
        size = min(left, rng.randint(*_SHARED_HOSTING_SIZES) if shared else params.hosts_per_ip)
        good_blocks.append((size, 0))
        left -= size
    rest = blocks + good_blocks[1:]
    rng.shuffle(rest)
    ip_number, farm_of = array("l"), array("l")
    farms: list[range] = []
    keywords: list[tuple[str, ...]] = []
    kinds = bytearray()
    ip = 0
    for size, kind in good_blocks[:1] + rest:
        start = len(kinds)
        kinds += bytes([kind]) * size
        if kind == 0:
            ip_number.extend([ip] * size)
            farm_of.extend([-1] * size)
            ip += 1
            continue
        two = size >= _TWO_IPS_FROM
        ip_number.extend(ip + (two and k >= size // 2) for k in range(size))
        ip += 1 + two
        farm_of.extend([len(farms)] * size)
        farms.append(range(start, start + size))
        keywords.append(tuple(rng.sample(COMMERCIAL, 3) + rng.sample(POPULAR, rng.randint(1, 2))))
    good = array("l", (i for i, k in enumerate(kinds) if k == 0))
    spam = array("l", (i for i, k in enumerate(kinds) if k))
    return Layout(ip_number, bytes(kinds), farm_of, tuple(farms), tuple(keywords), ip, good, spam)


def write_spam_page(web: WebModel, info: HostInfo, i: int, rng: random.Random, size: int) -> Page:
    """Page ``i`` of a spam host (not a disguised one), about ``size`` bytes."""
    spam = web.spam_layout
    assert spam is not None
    kind = spam.kind_of(info.number)
    farm_number = spam.farm[info.number]
    keywords = spam.keywords[farm_number]
    r, bits = rng.random, rng.getrandbits
    table = host_table(web, info)
    url = table.urls[i]
    base_dir = directory(table.paths[i])
    links: list[Link] = []

    def keyword() -> str:
        return keywords[int(r() * len(keywords))]

    def anchor() -> str:
        if kind == GENERATED:
            return " ".join(html.CONTENT_WORDS[int(r() * len(html.CONTENT_WORDS))] for _ in range(1 + int(r() * 3)))
        return " ".join(keyword() for _ in range(1 + int(r() * 3)))

    if kind == STUFFED:
        title = " ".join(keyword().capitalize() for _ in range(12 + int(r() * 14)))
    elif kind == GENERATED:
        title = SALAD[bits(10)].rstrip(".,;!")
    else:
        title = f"{keyword().capitalize()} {keyword()} {keyword()}"
    out = [html.HEAD_START, f"<title>{title} | {info.name}</title>\n".encode()]
    description = SALAD[bits(10)] if kind == GENERATED else _template(keywords, r)
    out.append(f'<meta name="description" content="{description}">\n'.encode())
    if kind != GENERATED:
        repeat = 5 if kind == STUFFED else 1
        out.append(f'<meta name="keywords" content="{", ".join(keywords * repeat)}">\n'.encode())
    css = _own_href(info, STYLESHEET, base_dir, r())
    links.append((info.origin + STYLESHEET, css, "link", False))
    out.append(b'<link rel="stylesheet" href="%s">\n' % css)
    out.append(html.HEAD_END)
    out.append(f'<header class="site">\n<p class="brand">{info.name}</p>\n</header>\n'.encode())
    out.append(b'<nav aria-label="site">\n<ul>\n')
    write_nav(web, table, info, i, base_dir, url, links, rng, out)
    out.append(f'</ul>\n</nav>\n<main id="main">\n<article>\n<h1>{title}</h1>\n'.encode())

    others = _farm_mates(spam, info.number)
    targets: list[tuple[str, bytes]] = []  # (URL, written href) of the body's links
    if kind == FARM:
        targets += _farm_links(web, info, r)
        targets += (_good_link(web, r) for _ in range(1 + int(r() * 2)))
        internal = 3 + int(r() * 5)
    elif kind == STUFFED:
        targets += (_deep_link(web, others[int(r() * len(others))], r) for _ in range(4 + int(r() * 7)))
        targets.append(_deep_link(web, spam.spam[int(r() * len(spam.spam))], r))
        internal = 10 + int(r() * 16)
    else:
        targets += (_deep_link(web, others[int(r() * len(others))], r) for _ in range(3 + int(r() * 6)))
        internal = max(1, round(info.degree * (0.7 + 0.6 * r())))
    for _ in range(internal):
        target = table.paths[int(r() * info.pages)]
        targets.append((info.origin + target, _own_href(info, target, base_dir, r())))
    rng.shuffle(targets)

    stuffing = 0.1 + 0.9 * web.unit(f"{info.name}|stuffing")
    spun = 0.4 * web.unit(f"{info.name}|spun")

    def text(sentences: int = 1) -> str:
        """A run of text in the host's kind (``sentences`` of word salad for a generated host)."""
        if kind == GENERATED:
            return " ".join(html.SENTENCES[bits(10)] if r() < spun else SALAD[bits(10)] for _ in range(sentences))
        if kind == FARM:
            return _template(keywords, r)
        sentence = html.SENTENCES[bits(10)]
        if r() < stuffing:
            sentence += " " + " ".join(keyword() for _ in range(3 + int(r() * 10)))
        return sentence

    at = 0
    while at < len(targets):
        group = 8 + int(r() * 12) if kind == FARM else 1 + int(r() * 3)
        chunk = targets[at : at + group]
        at += group
        if kind == FARM:  # link farms list their links
            out.append(f"<p>{text()}</p>\n<ul class=\"links\">\n".encode())
            out += (b'<li><a href="%s">%s</a></li>\n' % (written, anchor().encode()) for _, written in chunk)
            out.append(b"</ul>\n")
        else:
            out.append(b"<p>")
            for _, written in chunk:
                out.append(b'%s <a href="%s">%s</a> ' % (text().encode(), written, anchor().encode()))
            out.append(f"{text()}</p>\n".encode())
        links += ((target_url, written, "a", False) for target_url, written in chunk)
    length = sum(map(len, out))
    end = html.footer(info.name)
    goal = size // 3 if kind == FARM else size  # link farms: short pages, mostly links
    while length + len(end) < goal:
        block = f"<p>{text(2 + int(r() * 4))}</p>\n".encode()
        out.append(block)
        length += len(block)
    out.append(end)
    return Page(b"".join(out), [k[0] for k in links], [k[3] for k in links], [k[2] for k in links])


def partner_list(web: WebModel, info: HostInfo, rng: random.Random) -> tuple[bytes, list[str]]:
    """A disguised farm page's list of farm links, in good pages' markup: (markup, URLs)."""
    return _link_list(_farm_links(web, info, rng.random), rng)


def blogroll(web: WebModel, rng: random.Random) -> tuple[bytes, list[str]]:
    """A blogroll host's list of 25–70 links to good hosts, in the same markup: (markup, URLs)."""
    r = rng.random
    return _link_list([_good_link(web, r) for _ in range(25 + int(r() * 46))], rng)


def _link_list(targets: list[tuple[str, bytes]], rng: random.Random) -> tuple[bytes, list[str]]:
    bits = rng.getrandbits
    items = b"".join(html.ITEM_START + written + html.ITEM_CLOSES[bits(9)] for _, written in targets)
    return html.LIST_STARTS[bits(9)] + items + b"</ul>\n", [url for url, _ in targets]


def _farm_links(web: WebModel, info: HostInfo, r: Callable[[], float]) -> list[tuple[str, bytes]]:
    """A link farm page's links: 25–70 to pages of other hosts of its farm, 2–4 to other spam hosts."""
    spam = web.spam_layout
    assert spam is not None
    others = _farm_mates(spam, info.number)
    links = [_deep_link(web, others[int(r() * len(others))], r) for _ in range(25 + int(r() * 46))]
    return links + [_deep_link(web, spam.spam[int(r() * len(spam.spam))], r) for _ in range(2 + int(r() * 3))]


def _farm_mates(spam: Layout, index: int) -> list[int]:
    """The other hosts of a host's farm (itself, in a farm of one)."""
    return [j for j in spam.farms[spam.farm[index]] if j != index] or [index]


def comment_block(web: WebModel, rng: random.Random) -> tuple[bytes, list[str], list[bool]]:
    """A comments section with one or two spam links: (markup, URLs, nofollow), for a good page."""
    spam = web.spam_layout
    assert spam is not None
    r = rng.random
    parts = [b'<section class="comments">\n<h2>Comments</h2>\n']
    urls, nofollow = [], []
    for _ in range(1 + int(r() * 2)):
        j = spam.spam[int(r() * len(spam.spam))]
        keywords = spam.keywords[spam.farm[j]]
        url, written = _deep_link(web, j, r)
        rel = r() < COMMENT_NOFOLLOW
        words = " ".join(keywords[int(r() * len(keywords))] for _ in range(2))
        parts.append(
            b'<div class="comment">\n<p class="byline">Posted by %s</p>\n<p>Great post! %s <a href="%s"%s>%s</a></p>\n</div>\n'
            % (words.title().encode(), html.SENTENCES[int(r() * 1024)].encode(), written,
               b' rel="nofollow ugc"' if rel else b"", words.encode())
        )
        urls.append(url)
        nofollow.append(rel)
    parts.append(b"</section>\n")
    return b"".join(parts), urls, nofollow


def product_block(host: str, rng: random.Random) -> bytes:
    """A shop's product list for a good page: 30–90 lines of content words, commercial words and prices."""
    seed = xxhash.xxh3_64_intdigest(host.encode())
    words = [COMMERCIAL[(seed >> (5 * k)) % len(COMMERCIAL)] for k in range(3)]  # the shop's own three
    r, content = rng.random, html.CONTENT_WORDS
    lines = (
        f"<li>{content[int(r() * len(content))].capitalize()} {content[int(r() * len(content))]} "
        f"{words[int(r() * 3)]} – {words[int(r() * 3)]} price {5 + int(r() * 200)}.{int(r() * 100):02d}</li>\n"
        for _ in range(30 + int(r() * 61))
    )
    return ('<section class="products">\n<h2>Products</h2>\n<ul>\n' + "".join(lines) + "</ul>\n</section>\n").encode()


def _template(keywords: tuple[str, ...], r: Callable[[], float]) -> str:
    a, b, c = (keywords[int(r() * len(keywords))] for _ in range(3))
    return _TEMPLATES[int(r() * len(_TEMPLATES))].format(a=a, b=b, c=c, A=a.capitalize(), B=b.capitalize())


def _deep_link(web: WebModel, index: int, r: Callable[[], float]) -> tuple[str, bytes]:
    """(URL, written href) of the home page or a random page of host ``index``."""
    other = web.host_info_at(index)
    target = "/" if r() < 0.4 else web.host_paths(other)[int(r() * other.pages)]
    url = other.origin + target
    return url, html.escape(url)


def _good_link(web: WebModel, r: Callable[[], float]) -> tuple[str, bytes]:
    url, written = web.external_link(r)
    return url, html.escape(written)


def _own_href(info: HostInfo, target: str, base_dir: str, form: float) -> bytes:
    """How a spam page writes a link to a page of its own host (the forms good pages use)."""
    return html.escape(href(info.origin, target, base_dir, form))
