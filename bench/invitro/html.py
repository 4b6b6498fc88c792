"""Markup for the in-vitro web: prebuilt text blocks, page head and footer, small pages.

Role: the static half of page generation. :mod:`bench.invitro.page` writes a page's links
and splices them between the byte strings built here once, at import, from a fixed
vocabulary and a fixed generator, so every process has the same blocks.

Everything is ``bytes`` already encoded as UTF-8 (the text has a few non-ASCII words, as real
pages do): a page is then one ``b"".join``, with no 15 KB ``str.encode`` per page.
"""

from __future__ import annotations

import random

_WORDS = (
    "the of and to in is was for on are with as at by from that this be have it not or an which but all were "
    "when there can more one been has their if would about out up what so its time only new some could these "
    "two may first then do any like other how after year years most over also back well where much through "
    "garden river station market library museum harbour valley bridge council festival orchard village "
    "railway lighthouse meadow quarry windmill bakery archive chapel cottage forest journey lantern mountain "
    "network protocol crawler archive frontier sieve politeness workbench parser storage compression index "
    "measure report survey season weather climate history science travel review guide people events music "
    "café naïve façade Zürich São Paulo Kraków smörgåsbord jalapeño résumé coöperate fiancée Malmö "
    "ancient modern quiet bright narrow wide early late northern southern local public annual weekly "
    "visitors residents engineers readers authors editors students farmers sailors walkers builders"
).split()
_GEN = random.Random(20240607)


def _sentence(gen: random.Random) -> str:
    words = [gen.choice(_WORDS) for _ in range(gen.randint(6, 18))]
    return words[0].capitalize() + " " + " ".join(words[1:]) + gen.choice((".", ".", ".", "?", "!", ";"))


SENTENCES = tuple(_sentence(_GEN) for _ in range(1024))
"""1024 sentences (str)"""
ANCHORS = tuple(" ".join(_GEN.choice(_WORDS) for _ in range(_GEN.randint(1, 4))) for _ in range(512))
"""512 anchor texts of one to four words (str)"""
TITLES = tuple(" ".join(_GEN.choice(_WORDS).capitalize() for _ in range(_GEN.randint(2, 6))) for _ in range(512))
"""512 titles (str)"""

_PARAGRAPHS = tuple(
    f"<p>{' '.join(_GEN.choice(SENTENCES) for _ in range(_GEN.randint(3, 8)))}</p>\n" for _ in range(512)
)
_HEADINGS = tuple(f"<h2>{title}</h2>\n" for title in TITLES)
_LISTS = tuple(
    "<ul>\n" + "".join(f"<li>{_GEN.choice(SENTENCES)}</li>\n" for _ in range(_GEN.randint(3, 7))) + "</ul>\n"
    for _ in range(128)
)
PADDING = tuple(
    "".join(
        _GEN.choice(_HEADINGS) if x < 0.1 else _GEN.choice(_LISTS) if x < 0.2 else _GEN.choice(_PARAGRAPHS)
        for x in (_GEN.random() for _ in range(4))
    ).encode()
    for _ in range(2048)
)
"""2048 runs of text of about 2 KB (4 MB in all): a 15 KB page takes about five, so two pages rarely share one"""
del _GEN

FUNCTION_WORDS = frozenset(_WORDS[: _WORDS.index("garden")])
"""The function words of the vocabulary (articles, prepositions, pronouns…): about 40 % of good text"""
CONTENT_WORDS = tuple(w for w in _WORDS if w not in FUNCTION_WORDS)
"""The rest of the vocabulary, in order (spam's word salad draws from it)"""

# The pieces around an <a href="…"> in a paragraph: text before it, and its end with an anchor text.
LEADS = tuple(f'{sentence} <a href="'.encode() for sentence in SENTENCES)  # 1024
CLOSES = tuple(f'">{anchor}</a> '.encode() for anchor in ANCHORS)  # 512
CLOSES_NOFOLLOW = tuple(f'" rel="nofollow">{anchor}</a> '.encode() for anchor in ANCHORS)  # 512
PARAGRAPH_ENDS = tuple(f"{sentence}</p>\n".encode() for sentence in SENTENCES)  # 1024
# The same in a "related" list.
ITEM_START = b'<li><a href="'
ITEM_CLOSES = tuple(f'">{anchor}</a></li>\n'.encode() for anchor in ANCHORS)  # 512
ITEM_CLOSES_NOFOLLOW = tuple(f'" rel="nofollow">{anchor}</a></li>\n'.encode() for anchor in ANCHORS)  # 512
LIST_STARTS = tuple(f'<h2>{title}</h2>\n<ul class="related">\n'.encode() for title in TITLES)  # 512

STYLESHEET_CSS = (
    b"body{font-family:Georgia,serif;margin:0 auto;max-width:48rem;line-height:1.5;color:#222}\n"
    b"header.site{border-bottom:1px solid #ccc;padding:1rem 0}\n.brand{font-weight:bold;font-size:1.4rem}\n"
    b"nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.75rem}\n"
    b"article p{margin:0 0 1rem}\nul.related li{margin:.25rem 0}\nfooter{font-size:.85rem;color:#666}\n"
)
HEAD_START = (
    b'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    b'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
)
HEAD_END = (
    b"<style>\n:root{--accent:#0b5394;--muted:#6b6b6b}\n"
    b"a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}\n"
    b".byline{color:var(--muted);font-size:.9rem}\n.breadcrumbs{font-size:.85rem}\n"
    b"figure{margin:1rem 0}figcaption{font-size:.8rem;color:var(--muted)}\n</style>\n"
    b"<script>\nwindow.dataLayer=window.dataLayer||[];function track(e){dataLayer.push({event:e,t:Date.now()})}\n"
    b'document.addEventListener("DOMContentLoaded",function(){track("view")});\n</script>\n'
    b"</head>\n<body>\n"
)


def escape(href: str) -> bytes:
    """An href as attribute bytes: model URLs have no quotes or brackets, only '&' needs escaping."""
    return href.replace("&", "&amp;").encode() if "&" in href else href.encode()


def element(tag: str, href: bytes, anchor: str) -> bytes:
    """An <area> (in its <map>) or an <iframe>; <a> elements are assembled from the pieces above."""
    if tag == "area":
        return b'<map name="site-map"><area shape="rect" coords="0,0,120,40" href="%s" alt="%s"></map> ' % (
            href,
            anchor.encode(),
        )
    return b'<iframe src="%s" title="%s" width="300" height="150"></iframe> ' % (href, anchor.encode())


def footer(host: str) -> bytes:
    """The end of a page; its mailto: and javascript: hrefs are not links a crawler should follow."""
    return (
        f'</article>\n</main>\n<footer>\n<p>© {host} · <a href="mailto:webmaster@{host}">Contact</a>'
        ' · <a href="javascript:window.print()">Print</a></p>\n</footer>\n</body>\n</html>\n'
    ).encode()


def small_page(title: str, text: str, href: str | None = None) -> bytes:
    """A short HTML page for errors and redirects (no links unless ``href``)."""
    link = b'<p><a href="%s">moved here</a></p>\n' % escape(href) if href else b""
    return (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n"
        f"<body>\n<h1>{title}</h1>\n<p>{text}</p>\n".encode()
        + link
        + b"</body></html>\n"
    )
