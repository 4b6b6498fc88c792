"""The lab's forum: boards, threads with nested comments, old and new URL schemes, guest sessions.

Role: one :class:`~bench.invitro.social.site.Site` of the social lab (``www.forum.test``, all
path-based), a vBulletin/Discourse-like board. It reads nothing but its seed, port and knobs
and keeps no state between requests; it never touches sockets (``web.py`` serves it).

URL scheme and truth (type: category):

- ``/`` home: valuable; ``/board/NAME`` with ``?page=N``: valuable (threads by latest activity);
  ``&sort=latest`` (the same order: an exact alias), ``sort=top|replies``: duplicate listings;
- ``/t/ID/SLUG`` with ``?page=N``: thread pages, valuable, UCC (20 comments each, nested
  replies shown indented with ``#c-CID`` anchors); ``?comment=CID``: comment permalink,
  duplicate of the thread page holding it (linked where a reply quotes its parent);
  ``/t/ID/print``: print view, duplicate of the first page;
- ``/showthread.php?t=ID``: the old scheme, a 301 to ``/t/ID/SLUG`` (for older threads, linked
  from older posts and from the footer's ``/archive``, a duplicate listing of old threads);
- ``/u/UID``: profile, valuable, UCC (friends, the 20 latest posts); ``/u/UID/posts?page=N``:
  the user's posts re-listed, duplicate (linked past 20 posts, at most three pages);
- guest sessions: on ``sid_share`` of the pages a guest lands on (home, boards in their default
  order) every internal link carries ``sid=HEX``. The sid is derived from the linked page, so a
  page has at most one alias and the site stays finite (a sid per *linking* page would multiply
  it by the out-degree); the alias is a duplicate of its page (an action page stays
  uninformative);
- uninformative: ``/post/reply?t=ID`` (linked from every comment of a thread), ``/post/quote?c=CID``
  and ``/post/report?c=CID`` (on permalink pages), ``/login?returnto=...`` (per board),
  ``/register``, ``/search?q=``, ``/rules``, ``/faq``, ``/contact``, ``/privacy``. robots.txt
  disallows ``/post/report`` and ``/search`` only.

User-written HTML (``kit.user_html``, no links in it): every comment (its author's avatar,
badges and signature, one mood per thread) and profile bios. The print view stays plain text.

What makes it hard: header and footer links on every page, the same target several times per
page (author avatar and name, the reply link per comment, anchors into the same page), sort and
session parameters, a print view, an alternative listing (archive, user posts), a redirect
between URL schemes, numeric ids and some numeric slugs and board names, a power-law author and
friend graph, per-type templates with A/B variants, forms. It has no calendar and no cursor.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from urllib.parse import quote

from bench.invitro.social import kit
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Answer, Site, Truth

BOARDS = ("general", "help", "showcase", "off-topic", "2024", "news", "hardware", "software",
          "games", "books", "travel", "marketplace")
STATIC = {"/rules": "Forum rules", "/faq": "Frequently asked questions", "/contact": "Contact us",
          "/privacy": "Privacy policy", "/register": "Register"}
DEFAULTS = {"threads": 1000.0, "users": 5000.0, "comments": 80.0, "per_page": 20.0, "board_page": 20.0,
            "sid_share": 0.15, "quote_share": 0.012, "old_share": 0.25, "old_link_share": 0.08,
            "friends": 40.0}
"""knobs: thread count, user count, mean comments per thread, comments per thread page, threads per
board page, share of listing pages served to guests with ``sid``, share of replies quoting their
parent, share of threads older than the scheme change, share of old posts linking an old thread,
mean friends per profile"""
POSTS_PER_PAGE = 50
RECENT_POSTS = 20
MAX_POST_PAGES = 3
NOT_FOUND = Answer(404, Truth("not_found", ERROR))


class ForumSite(Site):
    """A forum of boards, threads and users; see the module docstring for its URLs and truth."""

    name = "forum"
    defaults = DEFAULTS
    domain = "forum.test"
    host = "www.forum.test"

    def __init__(self, seed: int, port: int, **knobs: float) -> None:
        super().__init__(seed, port, **knobs)
        k = self.k
        self.rand = r = kit.Rand(seed * 1_000_003 + 2)
        self.o = self.origin(self.host)
        self.n_users = int(k["users"])
        n = int(k["threads"])
        self.old = int(n * k["old_share"])
        self.per_page = int(k["per_page"])
        self.sizes = [min(600, 1 + int(r.lognormal(k["comments"], 1.0, "comments", t))) for t in range(n)]
        self.boards = [kit.ranked(r, len(BOARDS), 2.0, "board", t) for t in range(n)]
        self.slugs = [str(1990 + r.below(40, "year", t)) if r.chance(0.06, "numeric", t) else kit.slug(r, "t", t)
                      for t in range(n)]
        self.users = [kit.user_name(r, u) for u in range(self.n_users)]
        self.layouts = kit.layouts(r, 16)
        # each board's threads in each sort order: latest activity (newer ids tend to be later), score, replies
        activity = [t + n * r.unit("active", t) for t in range(n)]
        score = [r.unit("score", t) for t in range(n)]
        orders: dict[str, Sequence[float]] = {"latest": activity, "top": score, "replies": self.sizes}
        self.listing = {(b, s): sorted((t for t in range(n) if self.boards[t] == b), key=lambda t: -v[t])
                        for b in range(len(BOARDS)) for s, v in orders.items()}

    # -- the model: who wrote what ---------------------------------------------------------------

    def tid(self, t: int) -> int:
        return 100 + t

    def cid(self, t: int, j: int) -> int:
        return self.tid(t) * 1000 + j

    def author(self, t: int, j: int) -> int:
        return kit.ranked(self.rand, self.n_users, 3.0, "author", t, j)

    def parent(self, t: int, j: int) -> int | None:
        if j == 0 or self.rand.chance(0.55, "top-level", t, j):
            return None
        return j - 1 - self.rand.below(min(j, 6), "parent", t, j)

    def depth(self, t: int, j: int, parents: dict[int, int | None]) -> int:
        """Nesting depth (at most 4) of comment ``j``; ``parents`` memoises parents within one page."""
        depth, p = 0, self._parent(t, j, parents)
        while p is not None and depth < 4:
            depth, p = depth + 1, self._parent(t, p, parents)
        return depth

    def _parent(self, t: int, j: int, parents: dict[int, int | None]) -> int | None:
        if j not in parents:
            parents[j] = self.parent(t, j)
        return parents[j]

    def pages(self, t: int) -> int:
        return (self.sizes[t] - 1) // self.per_page + 1

    @functools.cached_property
    def posts(self) -> list[list[tuple[int, int]]]:
        """Each user's posts (thread, comment), oldest first: computed once, on the first profile asked."""
        posts: list[list[tuple[int, int]]] = [[] for _ in range(self.n_users)]
        for t, size in enumerate(self.sizes):
            for j in range(size):
                posts[self.author(t, j)].append((t, j))
        return posts

    def friends(self, u: int) -> list[int]:
        r = self.rand
        count = min(self.n_users, int(r.lognormal(self.k["friends"], 1.1, "friends", u)))
        return [f for f in dict.fromkeys(kit.ranked(r, self.n_users, 2.5, "friend", u, i) for i in range(count))
                if f != u]

    # -- URLs ------------------------------------------------------------------------------------

    def thread_url(self, t: int, page: int = 1, fragment: str = "") -> str:
        path = f"/t/{self.tid(t)}/{self.slugs[t]}"
        return kit.url(self.o, path, fragment, page=page) if page > 1 else kit.url(self.o, path, fragment)

    def comment_url(self, t: int, j: int) -> str:
        return kit.url(self.o, f"/t/{self.tid(t)}/{self.slugs[t]}", f"c-{self.cid(t, j)}", comment=self.cid(t, j))

    def board_url(self, b: int, page: int = 1, sort: str = "") -> str:
        params = [("page", str(page))] if page > 1 else []
        return f"{self.o}/board/{BOARDS[b]}{kit.query(params + [('sort', sort)] if sort else params)}"

    def user_url(self, u: int) -> str:
        return f"{self.o}/u/{u + 1}"

    def login_url(self, back: str) -> str:
        return f"{self.o}/login?returnto={quote(back, safe='')}"

    def sid(self, target: str) -> str:
        return f"{self.rand.hash('sid', target) & 0xFFFFFFFF:08x}"

    # -- the Site interface ----------------------------------------------------------------------

    def owns(self, host: str) -> bool:
        return host == self.host

    def seeds(self) -> list[str]:
        return [f"{self.o}/"]

    def robots(self, host: str) -> str:
        return "User-agent: *\nDisallow: /post/report\nDisallow: /search\n"

    def answer(self, host: str, target: str) -> Answer:
        split = kit.split_target(target)
        if host != self.host or split is None:
            return NOT_FOUND
        path, params = split
        if "sid" in params:
            return self._alias(path, params)
        return self._route(path, params) or NOT_FOUND

    def _alias(self, path: str, params: dict[str, str]) -> Answer:
        sid = params.pop("sid")
        base = kit.url("", path, **params)
        got = self._route(path, params)
        if got is None or sid != self.sid(base):
            return NOT_FOUND
        if got.status != 200 or got.truth.category == UNINFORMATIVE:
            return got
        truth = Truth("session_alias", DUPLICATE, got.truth.content_key, got.truth.ucc)
        return Answer(200, truth, got.html, links=got.links)

    def _route(self, path: str, params: dict[str, str]) -> Answer | None:
        parts = path.split("/")
        if not path.startswith("/"):
            return None
        if path == "/" and not params:
            return self._home()
        if len(parts) == 3 and parts[1] == "board" and parts[2] in BOARDS:
            return self._board(BOARDS.index(parts[2]), params)
        if len(parts) == 4 and parts[1] == "t":
            t = kit.number(parts[2], 100, 100 + len(self.sizes))
            if t is not None and parts[3] == "print" and not params:
                return self._print(t - 100)
            if t is not None and parts[3] == self.slugs[t - 100]:
                return self._thread(t - 100, params)
        if parts[1] == "u" and 3 <= len(parts) <= 4:
            u = kit.number(parts[2], 1, self.n_users + 1)
            if u is not None and len(parts) == 3 and not params:
                return self._profile(u - 1)
            if u is not None and parts[3:] == ["posts"]:
                return self._user_posts(u - 1, params)
        if path == "/showthread.php" and params.keys() == {"t"}:
            t = kit.number(params["t"], 100, 100 + self.old)
            return None if t is None else self._redirect(t - 100)
        if path == "/archive":
            return self._archive(params)
        return self._action(path, params)

    # -- pages -----------------------------------------------------------------------------------

    def _page(self, title: str, kind: str, key: object, board: int | None = None) -> tuple[kit.Page, kit.Layout]:
        """A page with the forum's header and footer, in the template of its type (two A/B variants)."""
        page = kit.Page(title)
        back = f"/board/{BOARDS[board]}" if board is not None else "/"
        page.header.add(f"{self.o}/", "Forum").add(f"{self.o}/search?q=", "Search", "search")
        page.header.add(self.login_url(back), "Log in", "login").add(f"{self.o}/register", "Register", "register")
        for path in ("/rules", "/faq", "/contact", "/privacy"):
            page.footer.add(self.o + path, path[1:].title())
        page.footer.add(f"{self.o}/archive", "Archive", "archive")
        kinds = ("home", "board", "thread", "print", "profile", "posts", "archive", "action")
        layout = self.layouts[2 * kinds.index(kind) + self.rand.below(2, "variant", kind, key)]
        return page, layout

    def _done(self, truth: Truth, page: kit.Page, layout: kit.Layout, entries: list[kit.Entry] | None = None,
              guest_key: object = None) -> Answer:
        if guest_key is not None and self.rand.chance(self.k["sid_share"], "guest", guest_key):
            for group in (page.header, *page.groups, page.footer):
                group.links = [(self._with_sid(h), text, role) for h, text, role in group.links]
        html, links = kit.render_entries(page, layout, entries or [])
        return Answer(200, truth, html, links=links)

    def _with_sid(self, link: str) -> str:
        return kit.with_param(link, "sid", self.sid(link.partition("#")[0][len(self.o):]))

    def _home(self) -> Answer:
        page, layout = self._page("Forum", "home", "")
        boards = page.group("board-list")
        latest = page.group("latest-threads")
        for b, name in enumerate(BOARDS):
            boards.add(self.board_url(b), name)
            top = self.listing[b, "latest"][:1]
            for t in top:
                latest.add(self.thread_url(t, self.pages(t)), self.rand.title("title", t), "thread")
                latest.add(self.user_url(self.author(t, self.sizes[t] - 1)), "last poster", "last-poster")
        return self._done(Truth("home", VALUABLE, "home"), page, layout, guest_key="home")

    def _board(self, b: int, params: dict[str, str]) -> Answer | None:
        explicit = params.pop("sort", None)
        if explicit not in (None, "latest", "top", "replies"):
            return None
        sort = explicit or ""
        page_no = kit.page_param(params)
        order = self.listing[b, sort or "latest"]
        size = int(self.k["board_page"])
        last = max(1, -(-len(order) // size))
        if params or page_no is None or page_no > last:
            return None
        page, layout = self._page(f"{BOARDS[b]} - page {page_no}", "board", b, board=b)
        sorts = page.group("board-sort")
        for s in ("latest", "top", "replies"):
            sorts.add(self.board_url(b, 1, s), s)
        rows = page.group("thread-list")
        for t in order[(page_no - 1) * size:page_no * size]:
            rows.add(self.thread_url(t), self.rand.title("title", t), "thread")
            rows.add(self.user_url(self.author(t, 0)), self.users[self.author(t, 0)], "author")
            if self.pages(t) > 1:
                rows.add(self.thread_url(t, self.pages(t)), "last page", "last-page")
            rows.add(self.user_url(self.author(t, self.sizes[t] - 1)), "last post", "last-poster")
        kit.pagination(page, page_no, last, lambda p: self.board_url(b, p, sort))
        key = f"board:{BOARDS[b]}:{page_no}"
        if not sort:
            truth = Truth("board", VALUABLE, key, True)
        else:
            truth = Truth("board_sorted", DUPLICATE, key if sort == "latest" else "", True)
        return self._done(truth, page, layout, guest_key=None if sort else (b, page_no))

    def _thread(self, t: int, params: dict[str, str]) -> Answer | None:
        focus: int | None = None
        if "comment" in params:
            cid = kit.number(params.pop("comment"), self.cid(t, 0), self.cid(t, self.sizes[t]))
            if cid is None or params:
                return None
            focus = cid - self.cid(t, 0)
            page_no: int | None = focus // self.per_page + 1
        else:
            page_no = kit.page_param(params)
        if params or page_no is None or page_no > self.pages(t):
            return None
        title = self.rand.title("title", t)
        page, layout = self._page(f"{title} - page {page_no}", "thread", t, board=self.boards[t])
        crumbs = page.group("breadcrumbs")
        crumbs.add(self.board_url(self.boards[t]), BOARDS[self.boards[t]], "board")
        crumbs.add(self.thread_url(t), title, "thread")
        tools = page.group("thread-tools")
        tools.add(f"{self.o}/post/reply?t={self.tid(t)}", "Reply", "reply")
        tools.add(f"{self.o}/t/{self.tid(t)}/print", "Print", "print")
        if focus is not None:
            tools.add(f"{self.o}/post/quote?c={self.cid(t, focus)}", "Quote", "quote")
            tools.add(f"{self.o}/post/report?c={self.cid(t, focus)}", "Report", "report")
        kit.pagination(page, page_no, self.pages(t), lambda p: self.thread_url(t, p))
        related = page.group("related-threads")
        siblings = self.listing[self.boards[t], "top"]
        for i in self.rand.sample(len(siblings), 10, "related", t):
            related.add(self.thread_url(siblings[i]), self.rand.title("title", siblings[i]))
        first = (page_no - 1) * self.per_page
        parents: dict[int, int | None] = {}
        entries = [self._comment(t, j, parents) for j in range(first, min(self.sizes[t], first + self.per_page))]
        key = f"thread:{self.tid(t)}:{page_no}"
        truth = Truth("thread", VALUABLE, key, True) if focus is None else \
            Truth("comment_permalink", DUPLICATE, key, True)
        return self._done(truth, page, layout, entries)

    def _comment(self, t: int, j: int, parents: dict[int, int | None]) -> kit.Entry:
        r, cid, u = self.rand, self.cid(t, j), self.author(t, j)
        body = kit.user_html(r, 1 + r.below(3, "length", t, j), "comment", t, j, author=u, topic=("thread", t))
        entry = kit.Entry(f"c-{cid}", "comment", body, depth=self.depth(t, j, parents))
        entry.add(self.user_url(u), "avatar", "avatar").add(self.user_url(u), self.users[u], "user")
        entry.add(self.thread_url(t, j // self.per_page + 1, f"c-{cid}"), f"#{j + 1}", "permalink")
        parent = parents[j]
        if parent is not None:
            entry.add(self.thread_url(t, parent // self.per_page + 1, f"c-{self.cid(t, parent)}"), "in reply to",
                      "parent")
            if r.chance(self.k["quote_share"], "quote", t, j):
                entry.add(self.comment_url(t, parent), "quoted", "quoted")
        if t < self.old and r.chance(self.k["old_link_share"], "old-link", t, j):
            entry.add(f"{self.o}/showthread.php?t={self.tid(r.below(self.old, 'old', t, j))}", "see", "link")
        for i in range(r.below(4, "likes", t, j)):
            liker = kit.ranked(r, self.n_users, 2.0, "liker", t, j, i)
            entry.add(self.user_url(liker), f"liked by {self.users[liker]}", "liker")
        return entry.add(f"{self.o}/post/reply?t={self.tid(t)}", "reply", "reply")

    def _print(self, t: int) -> Answer:
        page, layout = self._page(self.rand.title("title", t), "print", t, board=self.boards[t])
        page.group("print-back").add(self.thread_url(t), "Back to the thread")
        for j in range(self.sizes[t]):
            page.text("print-comment", f"{self.users[self.author(t, j)]}: {self.rand.text(1, 'comment', t, j)}")
        return self._done(Truth("thread_print", DUPLICATE, f"thread:{self.tid(t)}:1"), page, layout)

    def _redirect(self, t: int) -> Answer:
        location = self.thread_url(t)
        return Answer(301, Truth("redirect", DUPLICATE, f"thread:{self.tid(t)}:1"), location=location,
                      links=(location,))

    def _profile(self, u: int) -> Answer:
        page, layout = self._page(self.users[u], "profile", u)
        page.user_text("bio", kit.user_html(self.rand, 2, "bio", u, author=u))
        friends = page.group("friends")
        for f in self.friends(u):
            friends.add(self.user_url(f), self.users[f])
        posts = self.posts[u]
        recent = page.group("recent-posts")
        for t, j in reversed(posts[-RECENT_POSTS:]):
            recent.add(self.thread_url(t, j // self.per_page + 1, f"c-{self.cid(t, j)}"),
                       self.rand.title("title", t))
        if len(posts) > RECENT_POSTS:
            page.group("all-posts").add(f"{self.user_url(u)}/posts", f"All {len(posts)} posts")
        return self._done(Truth("profile", VALUABLE, f"user:{u + 1}", True), page, layout)

    def _user_posts(self, u: int, params: dict[str, str]) -> Answer | None:
        posts = self.posts[u][::-1]
        last = min(MAX_POST_PAGES, -(-len(posts) // POSTS_PER_PAGE))
        page_no = kit.page_param(params)
        if params or page_no is None or len(posts) <= RECENT_POSTS or page_no > last:
            return None
        page, layout = self._page(f"Posts by {self.users[u]}", "posts", u)
        page.group("profile-link").add(self.user_url(u), self.users[u])
        rows = page.group("post-list")
        for t, j in posts[(page_no - 1) * POSTS_PER_PAGE:page_no * POSTS_PER_PAGE]:
            rows.add(self.thread_url(t, j // self.per_page + 1, f"c-{self.cid(t, j)}"), self.rand.title("title", t),
                     "post")
            rows.add(self.board_url(self.boards[t]), BOARDS[self.boards[t]], "board")
        base = f"{self.user_url(u)}/posts"
        kit.pagination(page, page_no, last, lambda p: kit.url(base, "", page=p) if p > 1 else base)
        return self._done(Truth("user_posts", DUPLICATE, "", True), page, layout)

    def _archive(self, params: dict[str, str]) -> Answer | None:
        page_no = kit.page_param(params)
        size = 50
        last = max(1, -(-self.old // size))
        if params or page_no is None or page_no > last:
            return None
        page, layout = self._page(f"Archive - page {page_no}", "archive", page_no)
        rows = page.group("archive-list")
        for t in range((page_no - 1) * size, min(self.old, page_no * size)):
            rows.add(f"{self.o}/showthread.php?t={self.tid(t)}", self.rand.title("title", t), "thread")
            rows.add(self.user_url(self.author(t, 0)), self.users[self.author(t, 0)], "author")
        kit.pagination(page, page_no, last, lambda p: kit.url(self.o, "/archive", page=p) if p > 1
                         else f"{self.o}/archive")
        return self._done(Truth("archive", DUPLICATE, "", True), page, layout)

    def _action(self, path: str, params: dict[str, str]) -> Answer | None:
        """Forms, login, search and the help pages: uninformative, each with a link back where it came from."""
        back: str | None = None
        kind = path[1:].replace("/", "_")
        if path in STATIC and not params:
            kind = "static"
        elif (path, set(params)) in (("/login", {"returnto"}), ("/search", {"q"})):
            pass
        elif path == "/post/reply" and params.keys() == {"t"}:
            t = kit.number(params["t"], 100, 100 + len(self.sizes))
            back = None if t is None else self.thread_url(t - 100)
        elif path in ("/post/quote", "/post/report") and params.keys() == {"c"}:
            c = kit.number(params["c"], 100_000, (100 + len(self.sizes)) * 1000)
            t, j = (c // 1000 - 100, c % 1000) if c is not None else (0, -1)
            back = self.thread_url(t, j // self.per_page + 1, f"c-{c}") if 0 <= j < self.sizes[t] else None
        else:
            return None
        if path.startswith("/post/") and back is None:
            return None
        page, layout = self._page(STATIC.get(path, kind.replace("_", " ")), "action", kind)
        if back is not None:
            page.group("back").add(back, "Back")
        page.forms.append(f"{self.o}/post/submit" if path.startswith("/post/") else self.o + path)
        return self._done(Truth(kind, UNINFORMATIVE), page, layout)

