"""The lab's microblog (Jaiku-like, digest §4.3): user streams on subdomains, messages, a mobile mirror.

Role: one :class:`~bench.invitro.social.site.Site` of the social lab (``micro.test``: ``www``,
one host per user, and the mobile host ``m``). It reads nothing but its seed, port and knobs,
keeps no state between requests (the channel index is computed once from the seed) and never
touches sockets.

URL scheme and truth (type: category):

- ``USER.micro.test/``: the user's stream, ten messages a page, valuable, UCC; older pages by
  cursor ``/?before=MSGID`` (valuable: the stream's own pagination) and by page-number widget
  ``/?offset=N`` (duplicate: exact aliases of the cursor pages);
- ``USER.micro.test/presence/$``: a message with its comments, valuable, UCC;
  ``/presence/$?comment=1``: the comment form, uninformative (disallowed in the desktop hosts'
  robots.txt, not in the mobile host's);
- ``USER.micro.test/contacts``: whom the user follows, valuable; ``/feed/rss``: the latest
  messages again as RSS (XML: no link a crawler follows), duplicate, not UCC (a feed, as the
  SOUrCe digest's §5.3 has it);
- ``www.micro.test/``: home, valuable; ``www.micro.test/channel/NAME``: a channel, valuable, UCC;
  ``/login`` and ``/invite/email/USER`` (linked from the user's pages; not disallowed):
  uninformative;
- ``m.micro.test/USER/`` and ``m.micro.test/USER/presence/$``: the mobile mirror, duplicates of the
  desktop stream and message in a template of its own. Every mobile page links its desktop
  twin; a desktop page links its mobile twin when its user has the newer template that shows
  the "mobile" link (knob ``mobile_share``; 1.0 makes every desktop page link its twin, at the
  price of a mirror as large as the site and a mix far from the paper's Table 3).

User-written HTML (``kit.user_html``, no links in it): messages (with their author's avatar,
badges and signature, one mood per author) and comments (one mood per message), alike on the
desktop and mobile pages.

What makes it hard: variables in the host (per-user subdomains) and a mirror host, header and
footer links on every page, the same target several times per page (the author on each
message, a message's link and its comments' link), cursor and page-number pagination of the same
listing, a feed that repeats the stream, forms allowed and disallowed, all-digit user names and
channel names, a power-law follower graph (a few users followed by thousands), a template per
user. No calendar.
"""

from __future__ import annotations

import bisect
import functools
from html import escape

from bench.invitro.social import kit
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Answer, Site, Truth

DEFAULTS = {"users": 1500.0, "messages": 7.0, "following": 50.0, "mobile_share": 0.2, "comment_share": 0.4,
            "channel_share": 0.2}
"""knobs: user count, mean messages per user, mean users followed, share of users whose desktop pages
link their mobile twins, share of messages open to comments, share of messages posted to a channel"""
CHANNELS = ("music", "news", "2024", "jaiku", "photos", "travel", "food", "science", "gaming", "books", "42",
            "football", "cinema", "design", "code", "cats", "running", "gardening", "weather", "politics")
PER_PAGE = 10
SIDEBAR = 30
MSG_BASE = 100_000
NOT_FOUND = Answer(404, Truth("not_found", ERROR))


class MicroblogSite(Site):
    """Activity streams on per-user hosts with a mobile mirror; see the module docstring."""

    name = "microblog"
    defaults = DEFAULTS
    domain = "micro.test"

    def __init__(self, seed: int, port: int, **knobs: float) -> None:
        super().__init__(seed, port, **knobs)
        k = self.k
        self.rand = r = kit.Rand(seed * 1_000_003 + 4)
        self.users = [kit.user_name(r, u) for u in range(int(k["users"]))]
        self.user_index = {name: u for u, name in enumerate(self.users)}
        self.first = [0]
        for u in range(len(self.users)):
            self.first.append(self.first[-1] + 1 + int(r.lognormal(k["messages"], 1.2, "messages", u)))
        self.layouts = kit.layouts(r, 32)
        self.www, self.m = self.origin(f"www.{self.domain}"), self.origin(f"m.{self.domain}")

    # -- the model -------------------------------------------------------------------------------

    def author(self, i: int) -> int:
        return bisect.bisect_right(self.first, i) - 1

    def commenter(self, i: int, k: int) -> int:
        """Who wrote comment ``k`` on message ``i``."""
        return kit.ranked(self.rand, len(self.users), 3.0, "commenter", i, k)

    def message_html(self, i: int, sentences: int) -> str:
        """Message ``i`` with its author's block: one sentence in a listing, two on its own page."""
        return kit.user_html(self.rand, sentences, "message", i, author=self.author(i))

    def comment_html(self, i: int, k: int, who: int) -> str:
        """Comment ``k`` on message ``i``, by ``who``, as its desktop and mobile pages show it."""
        return kit.user_html(self.rand, 1, "comment", i, k, author=who, topic=("message", i))

    def stream(self, u: int) -> list[int]:
        """User ``u``'s messages, newest first."""
        return list(range(self.first[u + 1] - 1, self.first[u] - 1, -1))

    def following(self, u: int) -> list[int]:
        count = min(len(self.users), int(self.rand.lognormal(self.k["following"], 1.1, "following", u)))
        picks = (kit.ranked(self.rand, len(self.users), 3.0, "follows", u, i) for i in range(count))
        return [f for f in dict.fromkeys(picks) if f != u]

    def channel(self, i: int) -> int | None:
        if not self.rand.chance(self.k["channel_share"], "in-channel", i):
            return None
        return kit.ranked(self.rand, len(CHANNELS), 2.0, "channel", i)

    @functools.cached_property
    def channel_posts(self) -> list[list[int]]:
        """Each channel's messages, newest first (computed once, on the first channel page asked)."""
        posts: list[list[int]] = [[] for _ in CHANNELS]
        for i in range(self.first[-1] - 1, -1, -1):
            c = self.channel(i)
            if c is not None:
                posts[c].append(i)
        return posts

    def mobile_linked(self, u: int) -> bool:
        return self.rand.chance(self.k["mobile_share"], "mobile", u)

    # -- URLs ------------------------------------------------------------------------------------

    def home(self, u: int) -> str:
        return self.origin(f"{self.users[u]}.{self.domain}")

    def presence(self, i: int, mobile: bool = False) -> str:
        u = self.author(i)
        return f"{self.m}/{self.users[u]}/presence/{MSG_BASE + i}" if mobile else \
            f"{self.home(u)}/presence/{MSG_BASE + i}"

    # -- the Site interface ----------------------------------------------------------------------

    def owns(self, host: str) -> bool:
        label, _, rest = host.partition(".")
        return rest == self.domain and (label in ("www", "m") or label in self.user_index)

    def seeds(self) -> list[str]:
        return [f"{self.www}/"]

    def robots(self, host: str) -> str:
        if host.startswith("m."):
            return "User-agent: *\nDisallow:\n"
        return "User-agent: *\nDisallow: /presence/*?comment=\n"

    def answer(self, host: str, target: str) -> Answer:
        split = kit.split_target(target)
        if split is None or not self.owns(host):
            return NOT_FOUND
        path, params = split
        label = host.partition(".")[0]
        if label == "www":
            got = self._www(path, params)
        elif label == "m":
            got = self._mobile(path, params)
        else:
            got = self._user_host(self.user_index[label], path, params)
        return got or NOT_FOUND

    def _www(self, path: str, params: dict[str, str]) -> Answer | None:
        parts = path.split("/")
        if params:
            return None
        if path == "/":
            return self._front()
        if len(parts) == 3 and parts[1] == "channel" and parts[2] in CHANNELS:
            return self._channel(CHANNELS.index(parts[2]))
        if path == "/login":
            return self._form("login", "")
        if len(parts) == 4 and parts[1:3] == ["invite", "email"] and parts[3] in self.user_index:
            return self._form("invite", self.home(self.user_index[parts[3]]) + "/")
        return None

    def _user_host(self, u: int, path: str, params: dict[str, str]) -> Answer | None:
        if path == "/":
            return self._stream(u, params)
        if path == "/contacts" and not params:
            return self._contacts(u)
        if path == "/feed/rss" and not params:
            return self._feed(u)
        i = self._message_of(u, path, "/presence/")
        if i is None:
            return None
        if not params:
            return self._presence(i)
        return self._form("comment_form", self.presence(i)) if params == {"comment": "1"} and self.open(i) else None

    def _mobile(self, path: str, params: dict[str, str]) -> Answer | None:
        user, _, rest = path[1:].partition("/")
        u = self.user_index.get(user)
        if u is None:
            return None
        if rest == "" and not params:
            return self._mobile_stream(u)
        i = self._message_of(u, "/" + rest, "/presence/")
        if i is None:
            return None
        if not params:
            return self._mobile_presence(i)
        if params == {"comment": "1"} and self.open(i):
            return self._form("mobile_comment_form", self.presence(i, mobile=True), mobile=True)
        return None

    def _message_of(self, u: int, path: str, prefix: str) -> int | None:
        if not path.startswith(prefix):
            return None
        i = kit.number(path[len(prefix):], MSG_BASE + self.first[u], MSG_BASE + self.first[u + 1])
        return None if i is None else i - MSG_BASE

    def open(self, i: int) -> bool:
        """Message ``i`` takes comments (its pages link the comment form)."""
        return self.rand.chance(self.k["comment_share"], "open", i)

    # -- pages -----------------------------------------------------------------------------------

    def _page(self, title: str, u: int | None, twin: str = "") -> tuple[kit.Page, kit.Layout]:
        """A desktop page: header, footer, the user's template (or the site's), the mobile link if shown."""
        page = kit.Page(title)
        page.header.add(f"{self.www}/", "Jaiku").add(f"{self.www}/login", "Sign in", "login")
        if u is not None:
            page.header.add(self.home(u) + "/", self.users[u], "user")
            page.header.add(self.home(u) + "/contacts", "Contacts", "contacts")
            page.header.add(f"{self.www}/invite/email/{self.users[u]}", "Invite by email", "invite")
            if twin and self.mobile_linked(u):
                page.header.add(twin, "Mobile", "mobile")
        for c in range(5):
            page.footer.add(f"{self.www}/channel/{CHANNELS[c]}", f"#{CHANNELS[c]}")
        layout = self.layouts[2 + self.rand.below(30, "layout", u)] if u is not None else self.layouts[0]
        return page, layout

    def _message_entry(self, i: int, mobile: bool = False) -> kit.Entry:
        u = self.author(i)
        entry = kit.Entry(f"m-{MSG_BASE + i}", "message", self.message_html(i, 1))
        entry.add(self.presence(i, mobile), "permalink", "permalink")
        if mobile:
            return entry
        entry.add(self.home(u) + "/", self.users[u], "user").add(self.presence(i) + "#comments", "comments", "comments")
        c = self.channel(i)
        if c is not None:
            entry.add(f"{self.www}/channel/{CHANNELS[c]}", f"#{CHANNELS[c]}", "channel")
        return entry

    def _sidebar(self, page: kit.Page, u: int, key: object) -> None:
        """The user's contacts, and a message of some of them ("activity from your contacts")."""
        following = self.following(u)
        contacts = page.group("contacts-sidebar")
        for f in following[:SIDEBAR]:
            contacts.add(self.home(f) + "/", self.users[f])
        activity = page.group("contacts-activity")
        for k in self.rand.sample(len(following), 12, "activity", key):
            f = following[k]
            i = self.first[f] + self.rand.below(self.first[f + 1] - self.first[f], "activity", key, k)
            activity.add(self.presence(i), "message", "message").add(self.home(f) + "/", self.users[f], "user")

    def _front(self) -> Answer:
        page, layout = self._page("Jaiku", None)
        channels = page.group("channel-directory")
        for c in CHANNELS:
            channels.add(f"{self.www}/channel/{c}", f"#{c}")
        popular = page.group("popular-users")
        for u in range(30):
            popular.add(self.home(u) + "/", self.users[u])
        featured = [self.rand.below(self.first[-1], "featured", k) for k in range(20)]
        html, links = kit.render_entries(page, layout, [self._message_entry(i) for i in featured])
        return Answer(200, Truth("home", VALUABLE, "home"), html, links=links)

    def _stream(self, u: int, params: dict[str, str]) -> Answer | None:
        ids = self.stream(u)
        start: int | None = 0
        if params.keys() == {"before"}:
            i = kit.number(params["before"], MSG_BASE + self.first[u], MSG_BASE + self.first[u + 1])
            at = ids.index(i - MSG_BASE) + 1 if i is not None else 0
            start = at if at % PER_PAGE == 0 and 0 < at < len(ids) else None
        elif params.keys() == {"offset"}:
            start = kit.number(params["offset"], PER_PAGE, len(ids))
            start = start if start is not None and start % PER_PAGE == 0 else None
        elif params:
            start = None
        if start is None:
            return None
        page_no, last = start // PER_PAGE + 1, -(-len(ids) // PER_PAGE)
        page, layout = self._page(f"{self.users[u]}'s stream", u, f"{self.m}/{self.users[u]}/" if not start else "")
        shown = ids[start:start + PER_PAGE]
        if start + PER_PAGE < len(ids):
            page.group("older").add(kit.url(self.home(u), "/", before=MSG_BASE + shown[-1]), "Older")
        kit.pagination(page, page_no, last, lambda p: kit.url(self.home(u), "/", offset=(p - 1) * PER_PAGE)
                       if p > 1 else self.home(u) + "/")
        page.group("feeds").add(self.home(u) + "/feed/rss", "RSS")
        self._sidebar(page, u, ("stream", u, start))
        key = f"stream:{self.users[u]}:{page_no}"
        kind, category = ("stream_offset", DUPLICATE) if "offset" in params else ("stream", VALUABLE)
        truth = Truth(kind, category, key, True)
        html, links = kit.render_entries(page, layout, [self._message_entry(i) for i in shown])
        return Answer(200, truth, html, links=links)

    def _presence(self, i: int) -> Answer:
        u = self.author(i)
        page, layout = self._page(f"{self.users[u]}: message {MSG_BASE + i}", u, self.presence(i, mobile=True))
        page.user_text("message-text", self.message_html(i, 2))
        about = page.group("message-nav")
        for j in (i - 1, i + 1):
            if self.first[u] <= j < self.first[u + 1]:
                about.add(self.presence(j), "older" if j < i else "newer")
        c = self.channel(i)
        if c is not None:
            about.add(f"{self.www}/channel/{CHANNELS[c]}", f"#{CHANNELS[c]}", "channel")
        if self.open(i):
            about.add(self.presence(i) + "?comment=1", "Comment", "comment")
        self._sidebar(page, u, i)
        entries = []
        for k in range(int(self.rand.lognormal(3.0, 1.2, "comments", i))):
            who = self.commenter(i, k)
            entry = kit.Entry(f"c-{k}", "comment", self.comment_html(i, k, who))
            entries.append(entry.add(self.home(who) + "/", self.users[who], "user")
                           .add(self.home(who) + "/contacts", "contacts", "contacts"))
        html, links = kit.render_entries(page, layout, entries)
        return Answer(200, Truth("presence", VALUABLE, f"msg:{MSG_BASE + i}", True), html, links=links)

    def _contacts(self, u: int) -> Answer:
        page, layout = self._page(f"{self.users[u]}'s contacts", u)
        contacts = page.group("following")
        for f in self.following(u):
            contacts.add(self.home(f) + "/", self.users[f], "user")
            contacts.add(self.home(f) + "/contacts", "contacts", "contacts")
        return _done(Truth("contacts", VALUABLE, f"contacts:{self.users[u]}", True), page, layout)

    def _feed(self, u: int) -> Answer:
        """The user's latest messages as RSS 2.0: XML, so a crawler takes no link from it."""
        items = "".join(f"<item><title>{escape(self.rand.title('message', i))}</title><link>{self.presence(i)}</link>"
                        f"<guid>{self.presence(i)}</guid></item>" for i in self.stream(u)[:PER_PAGE])
        xml = (f'<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel><title>{self.users[u]}</title>'
               f"<link>{self.home(u)}/</link>{items}</channel></rss>\n")
        return Answer(200, Truth("feed", DUPLICATE, f"stream:{self.users[u]}:1"), xml,
                      content_type="application/rss+xml; charset=utf-8")

    def _channel(self, c: int) -> Answer:
        page, layout = self._page(f"#{CHANNELS[c]}", None)
        members = page.group("channel-members")
        for k in range(20):
            u = kit.ranked(self.rand, len(self.users), 2.0, "member", c, k)
            members.add(self.home(u) + "/", self.users[u])
        entries = [self._message_entry(i) for i in self.channel_posts[c][:30]]
        html, links = kit.render_entries(page, layout, entries)
        return Answer(200, Truth("channel", VALUABLE, f"channel:{CHANNELS[c]}", True), html, links=links)

    def _form(self, kind: str, back: str, mobile: bool = False) -> Answer:
        page, layout = (kit.Page(kind.replace("_", " ")), self.layouts[1]) if mobile else self._page(kind, None)
        if back:
            page.group("back").add(back, "Back")
        page.forms.append(back or f"{self.www}/login")
        return _done(Truth(kind, UNINFORMATIVE), page, layout)

    def _mobile_page(self, title: str, u: int, desktop: str) -> tuple[kit.Page, kit.Layout]:
        page = kit.Page(title)
        page.header.add(f"{self.m}/{self.users[u]}/", self.users[u], "user").add(desktop, "Desktop version", "desktop")
        return page, self.layouts[1]

    def _mobile_stream(self, u: int) -> Answer:
        page, layout = self._mobile_page(self.users[u], u, self.home(u) + "/")
        entries = [self._message_entry(i, mobile=True) for i in self.stream(u)[:PER_PAGE]]
        html, links = kit.render_entries(page, layout, entries)
        return Answer(200, Truth("mobile_stream", DUPLICATE, f"stream:{self.users[u]}:1", True), html, links=links)

    def _mobile_presence(self, i: int) -> Answer:
        u = self.author(i)
        page, layout = self._mobile_page(f"{self.users[u]}: {MSG_BASE + i}", u, self.presence(i))
        page.user_text("message-text", self.message_html(i, 2))
        if self.open(i):
            page.group("comment").add(self.presence(i, mobile=True) + "?comment=1", "Comment")
        for k in range(int(self.rand.lognormal(3.0, 1.2, "comments", i))):
            page.user_text("comment", self.comment_html(i, k, self.commenter(i, k)))
        return _done(Truth("mobile_presence", DUPLICATE, f"msg:{MSG_BASE + i}", True), page, layout)


def _done(truth: Truth, page: kit.Page, layout: kit.Layout) -> Answer:
    html, links = kit.render_entries(page, layout, [])
    return Answer(200, truth, html, links=links)
