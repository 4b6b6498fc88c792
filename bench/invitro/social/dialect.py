"""Unseen sites from seen ones: a bijective renaming of a lab site's fixed URL words.

Role: the lab's held-out variants. A learner tuned on the lab's sites could learn their
vocabulary (``/profile``, ``?mode=reply``) rather than their structure; a :class:`Dialect`
renames every fixed word of the URLs (path and query tokens between ``/ . ? & =``) to a
synonym chosen by the dialect's number, so a site keeps its structure, its pages and its
ground truth but names its URLs as the project has never seen them. Dialect 0 is the site
itself.

It sits at the URL boundary only: an incoming target is translated back to the site's own
words before the site answers, and every URL going out (hrefs and form actions in the HTML,
``Answer.links``, ``Location``, robots.txt rules) is translated forward. Variable tokens (user
names, slugs, ids) never collide with the table: the synonyms are checked against the lab's
text vocabulary and user-name syllables by the tests.
"""

from __future__ import annotations

import re

import xxhash

from bench.invitro.social.site import Answer

# fixed URL words of the lab's sites → synonyms (none of them a word of bench.invitro.html's vocabulary)
SYNONYMS: dict[str, tuple[str, ...]] = {
    "profile": ("userinfo", "aboutme", "bio"),
    "tag": ("label", "topicword", "hashtag"),
    "tags": ("labels", "topicwords", "hashtags"),
    "friends": ("buddies", "circle", "mates"),
    "tools": ("utils", "extras", "toolbox"),
    "tellafriend": ("sharepage", "recommend", "spreadword"),
    "addfriend": ("befriend", "connectwith", "follow-user"),
    "journal": ("blogname", "diary", "jname"),
    "itemid": ("entry", "eid", "postnum"),
    "mode": ("act", "cmd", "op"),
    "reply": ("respond", "answerform", "writecomment"),
    "format": ("fmt", "view", "output"),
    "light": ("lite", "plain", "printable"),
    "skip": ("start", "fromidx", "shift"),
    "legal": ("policies", "terms-area", "lawyers"),
    "tos": ("terms", "conditions", "useterms"),
    "privacy": ("dataprotection", "privacypolicy", "yourdata"),
    "support": ("helpdesk", "assist", "customer-care"),
    "login": ("signin", "auth", "logon"),
    "returnto": ("nexturl", "redirect_uri", "backto"),
    "board": ("section", "subforum", "category"),
    "t": ("topic", "thr", "discussion"),
    "comment": ("cmt", "remark", "note"),
    "print": ("printer", "pdfview", "paper"),
    "showthread": ("viewtopic", "oldthread", "legacythread"),
    "php": ("asp", "cgi", "jsp"),
    "u": ("member", "folks", "user"),
    "posts": ("messages", "contribs", "writings"),
    "post": ("write", "submit", "compose"),
    "report": ("flag", "complain", "abuse"),
    "quote": ("cite", "requote", "citeit"),
    "register": ("signup", "join", "enrol"),
    "search": ("find", "lookup", "query"),
    "rules": ("guidelines", "conduct", "etiquette"),
    "faq": ("questions", "qa", "howto"),
    "contact": ("reachus", "mailus", "feedback"),
    "sid": ("sess", "session_id", "s"),
    "books": ("titles", "works", "volumes"),
    "shelf": ("mylibrary", "bookcase", "collection"),
    "tab": ("pane", "section_tab", "show"),
    "editions": ("printings", "versions", "releases"),
    "quotes": ("excerpts", "passages", "lines"),
    "similar": ("related", "alike", "morelike"),
    "reviews": ("opinions", "critiques", "ratings"),
    "review": ("opinion", "critique", "rating"),
    "after": ("cursor", "since", "afterid"),
    "groups": ("clubs", "circles", "teams"),
    "actions": ("do-it", "ops", "act-on"),
    "addbook": ("shelve", "addtitle", "putonshelf"),
    "bookid": ("titleid", "workid", "bid"),
    "invite": ("refer", "bring", "invitation"),
    "ReturnUrl": ("continue", "goto", "thenurl"),
    "presence": ("status", "jot", "update"),
    "contacts": ("mynetwork", "following", "peers"),
    "feed": ("stream", "syndication", "subscribe"),
    "rss": ("atom", "xml", "rdf"),
    "channel": ("room", "hashroom", "space"),
    "offset": ("pos", "begin", "shiftby"),
    "before": ("older", "until", "max_id"),
    "email": ("mail", "mailto-form", "byemail"),
    "sort": ("order", "orderby", "arrange"),
    "page": ("p", "pg", "pagenum"),
    "html": ("htm", "shtml", "xhtml"),
}

_TOKEN = re.compile(r"[^/.?&=#:]+")
_URL_ATTRIBUTE = re.compile(r'(href|action)="([^"]*)"')


class Dialect:
    """Dialect ``number`` of the lab: each fixed word renamed to one of its synonyms (0: none renamed)."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.forward: dict[str, str] = {}
        if number:
            for word, synonyms in SYNONYMS.items():
                self.forward[word] = synonyms[xxhash.xxh3_64_intdigest(f"{number}:{word}".encode()) % len(synonyms)]
        self.backward = {synonym: word for word, synonym in self.forward.items()}
        if len(self.backward) != len(self.forward):
            raise ValueError(f"dialect {number} renames two words to one synonym")

    def to_site(self, target: str) -> str:
        """An incoming path and query in the site's own words."""
        return _TOKEN.sub(lambda m: self.backward.get(m.group(), m.group()), target) if self.number else target

    def from_site(self, url: str) -> str:
        """An outgoing URL (absolute or a path) in the dialect's words; the scheme and authority untouched."""
        if not self.number:
            return url
        start = url.find("/", url.find("//") + 2) if "//" in url else 0
        if start < 0:
            return url
        return url[:start] + _TOKEN.sub(lambda m: self.forward.get(m.group(), m.group()), url[start:])

    def answer(self, answer: Answer) -> Answer:
        """``answer`` with every URL it holds translated (the truth is the site's, unchanged)."""
        if not self.number:
            return answer
        html = _URL_ATTRIBUTE.sub(lambda m: f'{m.group(1)}="{self.from_site(m.group(2))}"', answer.html)
        return Answer(answer.status, answer.truth, html, self.from_site(answer.location) if answer.location else "",
                      tuple(self.from_site(link) for link in answer.links), answer.content_type)

    def robots(self, text: str) -> str:
        """robots.txt with its Allow/Disallow paths translated."""
        if not self.number:
            return text
        lines = []
        for line in text.splitlines():
            field, colon, value = line.partition(":")
            if colon and field.strip().lower() in ("allow", "disallow") and value.strip():
                line = f"{field}: {self.from_site(value.strip())}"
            lines.append(line)
        return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
