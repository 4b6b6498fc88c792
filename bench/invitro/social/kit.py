"""The tools every lab site builds its pages with: hashed randomness, names, text and HTML templates.

Role: pure helpers shared by the site modules, so a site module holds only what its site is
(its URL scheme, page types, links and truth). Nothing here keeps state between calls:
randomness is a hash of (site seed, what is being decided), so any process computes the same
page for the same URL.

A page is built as a :class:`Page`: a title, a header and a footer (the site's fixed link
blocks), and named *link groups*, each rendered as a block with its CSS class. Every anchor
carries a class naming its *role* (``<a class="user" href=...>``), as real social templates
mark theirs (vBulletin's ``a.username``, LiveJournal's ``a.ljuser``): links of one purpose
share a role, links of different purposes in one block get different roles, and a link with
no role of its own carries its block's class (the SOUrCe digest's Apath is the tag path to an
anchor plus that anchor's class, ``source.md`` §5.3). A
:class:`Layout` decides, per user or per page type, which of several DOM templates the page
uses (A/B variants, shuffled block order), so the structure varies the way customised social
pages do while the URLs and links stay the same.

User-created content is written as users write it (digest §3.2 and §5.3: UCC templates vary in
DOM because users add and remove elements, while constant pages are alike). :func:`user_html`
turns a keyed piece of user text into a body of 1–5 blocks (paragraphs with bold, italic and
line breaks, lists, nested quotes, code, inline images), in the mood of its topic or its author
(a code thread has code, a photo thread images) and, for an item shown with its author, that
author's block (avatar, badges), signature and an "edited" note. It writes no ``<a>``: an
``<img src>`` is not a link a crawler follows, so every page keeps exactly the links it had.
The sites mark which texts are their users' (:meth:`Page.user_text`, every :class:`Entry`);
the sites' own texts (help, news, intros) and their stripped print views stay one ``<p>``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

import xxhash

from bench.invitro.html import ANCHORS, SENTENCES, TITLES


class Rand:
    """Deterministic choices keyed by what is decided: ``Rand(seed).unit("friends", "bob")``."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def hash(self, *key: object) -> int:
        return xxhash.xxh3_64_intdigest("\x1f".join(map(str, key)).encode(), seed=self.seed)

    def unit(self, *key: object) -> float:
        """Uniform in (0, 1)."""
        return ((self.hash(*key) >> 11) + 0.5) / 2.0**53

    def below(self, n: int, *key: object) -> int:
        """Uniform in [0, n)."""
        return self.hash(*key) % n if n > 0 else 0

    def chance(self, p: float, *key: object) -> bool:
        return self.unit(*key) < p

    def pick(self, options: Sequence[str], *key: object) -> str:
        return options[self.below(len(options), *key)]

    def sample(self, n: int, k: int, *key: object) -> list[int]:
        """``k`` distinct numbers of [0, n), in a hashed order (all of them when k >= n)."""
        k = min(k, n)
        chosen: dict[int, None] = {}
        attempt = 0
        while len(chosen) < k:
            chosen.setdefault(self.below(n, *key, attempt), None)
            attempt += 1
        return list(chosen)

    def zipf(self, n: int, s: float, *key: object) -> int:
        """A rank in [0, n), small ranks far likelier (power law with exponent ``s`` > 1)."""
        u = self.unit(*key)
        return min(n - 1, int((1 - u) ** (-1 / (s - 1)) - 1))

    def lognormal(self, mean: float, sigma: float, *key: object) -> float:
        """A log-normal draw with the given mean (for heavy-tailed degrees)."""
        u = self.unit(*key)
        z = math.sqrt(2) * _erfinv(2 * u - 1)
        return mean * math.exp(sigma * z - sigma * sigma / 2)

    def text(self, sentences: int, *key: object) -> str:
        return " ".join(SENTENCES[self.below(len(SENTENCES), *key, i)] for i in range(sentences))

    def title(self, *key: object) -> str:
        return TITLES[self.below(len(TITLES), *key)]


def _erfinv(y: float) -> float:
    """Inverse error function (Giles' approximation; plenty for synthetic degrees)."""
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    return p * y


_SYLLABLES = ("ka", "lo", "mi", "ra", "ne", "to", "su", "vi", "da", "pe", "zo", "li", "mar", "tin", "bel", "or")


def user_name(rand: Rand, number: int, digit_share: float = 0.05) -> str:
    """A user's name: pronounceable letters, unique per number; about ``digit_share`` all digits."""
    if rand.chance(digit_share, "digit-name", number):
        return str(100000 + number)
    syllables = "".join(rand.pick(_SYLLABLES, "name", number, i) for i in range(2 + rand.below(2, "len", number)))
    return f"{syllables}{number}" if rand.chance(0.5, "suffix", number) else f"{syllables}-{number}"


def slug(rand: Rand, *key: object) -> str:
    """A title slug for a URL: ``quiet-river-station`` (ASCII words only, so URLs need no escaping)."""
    words = [w for w in rand.title(*key).lower().split() if w.isascii() and w.isalpha()]
    return "-".join(words[:4]) or "untitled"


Link = tuple[str, str, str]
"""(href, anchor text, role): the role is the anchor's class, ``""`` for its block's class"""


@dataclass
class Group:
    """A block of links with its CSS class."""

    css: str
    links: list[Link] = field(default_factory=list)

    def add(self, href: str, text: str, role: str = "") -> Group:
        self.links.append((href, text, role))
        return self


@dataclass
class Page:
    """One HTML page before rendering: title, text blocks, link groups, header and footer."""

    title: str
    header: Group = field(default_factory=lambda: Group("site-header"))
    footer: Group = field(default_factory=lambda: Group("site-footer"))
    groups: list[Group] = field(default_factory=list)
    texts: list[tuple[str, str]] = field(default_factory=list)
    """(css class, inner HTML) blocks: the page's own content, the site's or its users'"""
    forms: list[str] = field(default_factory=list)
    """form actions (a form's action is not a link a crawler follows)"""

    def group(self, css: str) -> Group:
        g = Group(css)
        self.groups.append(g)
        return g

    def text(self, css: str, content: str) -> None:
        """A block of the site's own text: one paragraph."""
        self.texts.append((css, f"<p>{escape(content)}</p>"))

    def user_text(self, css: str, body: str) -> None:
        """A block of user-created content: ``body`` is HTML from :func:`user_html`."""
        self.texts.append((css, body))

    def links(self) -> tuple[str, ...]:
        """Every href in document order, as :class:`Layout` renders them (header, blocks, footer)."""
        return tuple(link[0] for g in (self.header, *self.groups, self.footer) for link in g.links)


@dataclass(frozen=True, slots=True)
class Layout:
    """One DOM template: the wrapper elements and whether text comes before the link blocks.

    The order of the blocks within the page never changes which links a page has, only where
    they stand in the DOM; :meth:`Page.links` lists them header first, then blocks, then text
    blocks' order does not matter (text has no links), then footer.
    """

    name: str
    outer: str
    """the element wrapping the main part: ``div``, ``main``, ``section``, ``article``, ``table``"""
    block: str
    """the element of each link block: ``ul`` (items in ``li``), ``div``, ``nav``, ``p``"""
    text_first: bool


def layouts(rand: Rand, n: int) -> list[Layout]:
    """``n`` distinct templates for a site (the digest asks for at least 50 per blog site)."""
    outers = ("div", "main", "section", "article", "table")
    blocks = ("ul", "div", "nav", "p")
    return [
        Layout(f"t{i}", outers[rand.below(len(outers), "outer", i)], blocks[rand.below(len(blocks), "block", i)],
               rand.chance(0.5, "text-first", i))
        for i in range(n)
    ]


def render(page: Page, layout: Layout) -> str:
    """The page as HTML in ``layout``; the links appear in the order :meth:`Page.links` gives."""
    out = [f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{escape(page.title)}</title></head>\n",
           f"<body class=\"layout-{layout.name}\">\n", _block(page.header, "nav"),
           f"<{layout.outer} class=\"content\">\n<h1>{escape(page.title)}</h1>\n"]
    texts = "".join(f"<div class=\"{css}\">{body}</div>\n" for css, body in page.texts)
    forms = "".join(f"<form class=\"action\" method=\"post\" action=\"{escape(action)}\"><input name=\"q\">"
                    f"<button>Send</button></form>\n" for action in page.forms)
    blocks = "".join(_block(g, layout.block) for g in page.groups)
    out += [texts, blocks] if layout.text_first else [blocks, texts]
    out += [forms, f"</{layout.outer}>\n", _block(page.footer, "footer"), "</body></html>\n"]
    return "".join(out)


def _block(group: Group, element: str) -> str:
    if not group.links:
        return ""
    css = group.css
    if element == "ul":
        items = "".join(f"<li><a class=\"{r or css}\" href=\"{escape(h)}\">{escape(t)}</a></li>"
                        for h, t, r in group.links)
        return f"<ul class=\"{css}\">{items}</ul>\n"
    items = " ".join(f"<a class=\"{r or css}\" href=\"{escape(h)}\">{escape(t)}</a>" for h, t, r in group.links)
    return f"<{element} class=\"{css}\">{items}</{element}>\n"


def query(pairs: Iterable[tuple[str, object]]) -> str:
    """``?a=1&b=x`` from pairs (no escaping: lab values are URL-safe by construction)."""
    text = "&".join(f"{k}={v}" for k, v in pairs)
    return f"?{text}" if text else ""


# -- helpers shared by the forum, books and microblog sites -------------------------------------


def ranked(rand: Rand, n: int, power: float, *key: object) -> int:
    """A rank in [0, n) with P(rank < r) = (r / n) ** (1 / power): a power law for ``power`` > 1.

    Unlike :meth:`Rand.zipf` nothing piles up at the last rank, so it suits choosing among a
    fixed population (authors, followees, boards): the top ranks get most of the mass and the
    tail stays thin but non-empty.
    """
    return min(n - 1, int(n * rand.unit(*key) ** power))


def split_target(target: str) -> tuple[str, dict[str, str]] | None:
    """A request target's path and query parameters; None when a parameter repeats or has no ``=``.

    Lab sites never link such a query, so a site answers it with a 404.
    """
    path, _, text = target.partition("?")
    params: dict[str, str] = {}
    for part in text.split("&") if text else ():
        name, eq, value = part.partition("=")
        if not eq or name in params:
            return None
        params[name] = value
    return path, params


def url(origin: str, path: str, fragment: str = "", /, **params: object) -> str:
    """An absolute link with its parameters sorted by name, as a crawler's canonical form has them.

    Writing them sorted means the URL a crawler requests is the URL the site linked, so the
    census and the request log name every page alike.
    """
    text = query(sorted(params.items()))
    return f"{origin}{path}{text}#{fragment}" if fragment else f"{origin}{path}{text}"


def with_param(link: str, name: str, value: str) -> str:
    """``link`` with one more query parameter, kept in sorted position (the fragment stays last)."""
    base, hash_, fragment = link.partition("#")
    head, _, text = base.partition("?")
    parts = sorted([*text.split("&"), f"{name}={value}"] if text else [f"{name}={value}"],
                   key=lambda p: p.partition("=")[0])
    return f"{head}?{'&'.join(parts)}{hash_}{fragment}"


# -- user-written HTML ---------------------------------------------------------------------------

_SENTENCE_HTML = tuple(escape(text) for text in SENTENCES)
_PHRASE_HTML = tuple(escape(text) for text in ANCHORS)
_CODE = tuple(escape(line) for line in (
    "make test", "x = x + 1", "git pull --rebase", "SELECT * FROM shelf WHERE stars > 3;", "print(sum(range(10)))",
    "sudo apt-get install lantern", "for i in 1 2 3; do echo $i; done", "if (a < b) { swap(a, b); }"))
_BADGES = ("Veteran", "Helpful", "Moderator", "Top poster", "Reader", "Supporter", "Early bird", "Critic") * 2
"""an author's badges: a run of distinct ones from a random start"""
_MOODS = {
    "mixed": ("p", "p", "p", "p", "list", "list", "quote", "quote", "pre", "img"),
    "chat": ("p", "p", "p", "p", "p", "p", "quote"),
    "code": ("p", "p", "pre", "pre", "pre", "list"),
    "pictures": ("p", "img", "img", "img"),
    "quarrel": ("p", "p", "quote", "quote", "quote", "quote"),
    "howto": ("p", "list", "list", "list", "pre"),
}
"""the block kinds a text draws from in each *mood*, repeated by weight. Texts of one topic or one
author share a mood, so pages differ in the mix of their blocks, not only in their count, as
threads on code and threads of photos do"""
_IMAGES = 1000
"""distinct image numbers (``/static/img/N.png``)"""
EDITED_SHARE = 0.15
"""share of the items shown with their author that carry an "edited" note"""


@dataclass(frozen=True, slots=True)
class _Skeleton:
    """The markup of a user body with holes for its text: ``parts[0]``, slot 0, ``parts[1]``, ..., ``parts[-1]``."""

    parts: tuple[str, ...]
    fillers: tuple[str, ...]
    """what each slot holds when the text runs out before it: a short phrase"""

    def fill(self, texts: list[str]) -> str:
        """The body with ``texts`` spread over the slots in order, as evenly as can be."""
        slots = len(self.fillers)
        share, extra = divmod(len(texts), slots)
        out, at = [self.parts[0]], 0
        for j in range(slots):
            end = at + share + (j < extra)
            out += [" ".join(texts[at:end]) or self.fillers[j], self.parts[j + 1]]
            at = end
        return "".join(out)


def _skeleton(rng: random.Random, kinds_of_mood: tuple[str, ...]) -> _Skeleton:
    """A body of 1–5 blocks, fewer likelier, of the mood's kinds: paragraphs (with bold, italic and
    ``<br/>`` in their tails), ``ul``/``ol`` lists of 1–5 items, quotes nested 1–3 deep with a
    paragraph at each depth (mostly 1), ``pre``/``code`` and images; at least one block holds text."""
    kinds = [kinds_of_mood[int(rng.random() * len(kinds_of_mood))] for _ in range(1 + int(5 * rng.random() ** 1.6))]
    if all(kind in ("pre", "img") for kind in kinds):
        kinds.insert(0, "p")
    pieces: list[str | None] = []  # None: a slot for text
    for kind in kinds:
        if kind == "p":
            pieces += ["<p>", None, f"{_tail(rng)}</p>"]
        elif kind == "list":
            tag = "ul" if rng.random() < 0.6 else "ol"
            pieces.append(f"<{tag}>")
            for _ in range(1 + int(5 * rng.random() ** 1.5)):
                pieces += ["<li>", None, "</li>"]
            pieces.append(f"</{tag}>")
        elif kind == "quote":
            # inside out: each depth quotes the text it answers, then says its own
            depth = 1 + int(3 * rng.random() ** 2)
            pieces.append("<blockquote>" * depth)
            for _ in range(depth):
                pieces += ["<p>", None, f"{_tail(rng)}</p></blockquote>"]
        elif kind == "pre":
            lines = "\n".join(_CODE[int(rng.random() * len(_CODE))] for _ in range(1 + int(3 * rng.random())))
            pieces.append(f"<pre><code>{lines}</code></pre>")
        else:
            pieces.append(f"<img src=\"/static/img/{int(rng.random() * _IMAGES)}.png\" alt=\"\">")
    parts, run = [], ""
    for piece in pieces:
        if piece is None:
            parts.append(run)
            run = ""
        else:
            run += piece
    fillers = tuple(_PHRASE_HTML[int(rng.random() * len(_PHRASE_HTML))] for _ in parts)
    return _Skeleton((*parts, run), fillers)


def _tail(rng: random.Random) -> str:
    """What a paragraph may add after its text: a phrase after a space or a ``<br/>``, a word of it bold
    (a quarter of the time) or italic (a fifth)."""
    if rng.random() < 0.45:
        return ""
    words = _PHRASE_HTML[int(rng.random() * len(_PHRASE_HTML))].split(" ")
    for tag, share in (("b", 0.25), ("i", 0.2)):
        if rng.random() < share:
            at = int(rng.random() * len(words))
            words[at] = f"<{tag}>{words[at]}</{tag}>"
    return ("<br/>" if rng.random() < 0.55 else " ") + " ".join(words)


def _author(rng: random.Random) -> tuple[str, str]:
    """An author's look, (head, signature): an avatar (70% of authors) and 0–5 badges in an ``author``
    block, empty when they have neither; a signature sentence (30% of authors), else empty."""
    avatar = f"<img class=\"avatar\" src=\"/static/img/{int(rng.random() * _IMAGES)}.png\" alt=\"\">" \
        if rng.random() < 0.7 else ""
    first = int(rng.random() * 8)
    badges = "".join(f"<span class=\"badge\">{badge}</span>" for badge in _BADGES[first:first + int(6 * rng.random())])
    head = f"<div class=\"author\">{avatar}{badges}</div>" if avatar or badges else ""
    sentence = _SENTENCE_HTML[int(rng.random() * len(_SENTENCE_HTML))]
    return head, f"<div class=\"signature\"><p>{sentence}</p></div>" if rng.random() < 0.3 else ""


# Drawn once, at import, from a fixed generator: a body costs one hash and a join, not a
# generator per body, and the pools are the same in every process.
_POOL = random.Random(20250601)
_SKELETONS = tuple(tuple(_skeleton(_POOL, kinds) for _ in range(512)) for kinds in _MOODS.values())
_AUTHORS = tuple(_author(_POOL) for _ in range(1024))


def user_html(rand: Rand, sentences: int, *key: object, author: object = None, topic: object = None) -> str:
    """The HTML of a user-written text: the sentences ``rand.text(sentences, *key)`` gives, marked up.

    The markup is one of the skeletons of a mood (see :data:`_MOODS`, :func:`_skeleton`) chosen
    by a hash of the key; the mood is the ``topic``'s (what the text is written in, e.g. a
    thread) when given, else the ``author``'s, else the text's own. The sentences fill the
    skeleton's text slots in order, and slots beyond them hold short phrases, so a one-line
    message can still be a list. With ``author`` (whoever wrote an item shown with its author)
    the body comes after that author's avatar and badges and before an "edited" note
    (:data:`EDITED_SHARE` of the items) and the author's signature: one of 1,024 looks chosen by
    a hash of the author, so all their items agree. A pure function of the site's seed and the
    arguments. It writes no ``<a>``.
    """
    h = rand.hash("user-html", *key)
    if topic is not None:
        skeletons = _SKELETONS[rand.hash("mood", topic) % len(_MOODS)]
    elif author is not None:
        skeletons = _SKELETONS[rand.hash("mood", author) % len(_MOODS)]
    else:
        skeletons = _SKELETONS[(h >> 48) % len(_MOODS)]
    texts = [_SENTENCE_HTML[rand.below(len(SENTENCES), *key, i)] for i in range(sentences)]
    body = skeletons[h % len(skeletons)].fill(texts)
    if author is None:
        return body
    head, signature = _AUTHORS[rand.hash("author", author) % len(_AUTHORS)]
    edited = "<em class=\"edited\">edited</em>" if (h >> 32) % 1000 < EDITED_SHARE * 1000 else ""
    return f"{head}{body}{edited}{signature}"


@dataclass
class Entry:
    """One user-created item inside a page (a comment, a message, a review): its own block with links.

    ``anchor`` is the element id a fragment names (``c-1042``); ``depth`` indents nested replies;
    ``body`` is the item's HTML from :func:`user_html`, with its author. A link with no role of
    its own carries the entry's class.
    """

    anchor: str
    css: str
    body: str
    links: list[Link] = field(default_factory=list)
    depth: int = 0

    def add(self, href: str, text: str, role: str = "") -> Entry:
        self.links.append((href, text, role))
        return self


def render_entries(page: Page, layout: Layout, entries: Sequence[Entry]) -> tuple[str, tuple[str, ...]]:
    """The page's HTML with ``entries`` at the end of its main part, and every link as a parser finds it.

    An entry's hrefs and anchor texts are written as they are (only ``&`` escaped in hrefs): lab
    URLs are URL-safe and anchor texts are names and titles, and this is the hot loop of a page.

    Links are in document order (header, blocks, entries, footer), absolute, with repeats and
    with fragments cut off.
    """
    html = render(page, layout)
    if entries:
        tail = f"</{layout.outer}>\n{_block(page.footer, 'footer')}</body></html>\n"
        body = "".join(
            f"<div class=\"{e.css} depth-{e.depth}\" id=\"{e.anchor}\">{e.body}"
            + "".join(f" <a class=\"{r or e.css}\" href=\"{h.replace('&', '&amp;')}\">{t}</a>" for h, t, r in e.links)
            + "</div>\n"
            for e in entries)
        html = html[:-len(tail)] + body + tail
    hrefs = [link[0] for g in (page.header, *page.groups) for link in g.links]
    hrefs += [link[0] for e in entries for link in e.links]
    hrefs += [link[0] for link in page.footer.links]
    return html, tuple(h.partition("#")[0] for h in hrefs)


def number(text: str, low: int, high: int) -> int | None:
    """``text`` as a decimal in [low, high), written canonically (no sign, no leading zero); else None.

    Only the canonical spelling is a page, so ``?page=02`` is a 404 rather than an alias.
    """
    if not text.isdigit() or text != str(int(text)):
        return None
    value = int(text)
    return value if low <= value < high else None


def page_param(params: dict[str, str]) -> int | None:
    """Pops ``page``: 1 when absent, None unless it is 2 or more (page 1 is never written)."""
    if "page" not in params:
        return 1
    return number(params.pop("page"), 2, 1 << 31)


def pagination(page: Page, at: int, last: int, link: Callable[[int], str]) -> None:
    """A ``pagination`` block for page ``at`` of ``last``: prev, first, neighbours, last, next."""
    if last <= 1:
        return
    group = page.group("pagination")
    if at > 1:
        group.add(link(at - 1), "prev")
    for p in sorted({1, max(1, at - 1), at, min(last, at + 1), last}):
        group.add(link(p), str(p))
    if at < last:
        group.add(link(at + 1), "next")
