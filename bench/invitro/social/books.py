"""The lab's book community (Shelfari-like, digest §4.3): users, shelves, books, reviews, groups.

Role: one :class:`~bench.invitro.social.site.Site` of the social lab (``www.books.test``, users
in the path). It reads nothing but its seed, port and knobs, keeps no state between requests
(the shelf and review indexes are computed once from the seed) and never touches sockets.

URL scheme and truth (type: category):

- ``/`` home: valuable; ``/USER`` profile: valuable, UCC (bio, the latest shelf books, reviews,
  friends, groups); ``/USER/shelf?page=N&sort=added|title|stars``: duplicate listings (linked
  from the profile once the shelf outgrows it);
- ``/books/$/SLUG`` book: valuable; ``?tab=editions|quotes|similar`` (tabs shown when the book
  has that content) and ``?ref=R&utm_source=S`` (tracking, on the home page's and groups' book
  blocks): duplicates of the book page;
- ``/books/$/SLUG/reviews``: the book's reviews, valuable, UCC; past 20 reviews the variants
  ``?page=N&sort=helpful|stars`` (``page=1&sort=helpful`` is an exact alias), ``?sort=newest``
  and its cursor ``?after=RID&sort=newest``: duplicate listings;
- ``/review/$``: one review with its comments, valuable, UCC; ``/groups/$``: valuable, UCC;
- uninformative: ``/actions/addbook?bookid=$`` (disallowed in robots.txt), ``/invite``, ``/login``
  and ``/login?ReturnUrl=...`` (on book, reviews and group pages, naming the page itself, so
  unique per page; a tab or tracking view names its book page, as a canonical link would),
  ``/about``, ``/terms-of-use``, ``/privacy``, ``/help``.

User-written HTML (``kit.user_html``, no links in it): reviews (on their page and in listings,
with the reviewer's avatar, badges and signature), comments on a review (one mood per review),
profile bios and group descriptions. Book descriptions and tabs are the site's: plain paragraphs.

What makes it hard: header and footer links on every page, the same target several times per
page (avatar and name, a book in several blocks), sort, page and cursor pagination, tracking
parameters, tabs as alternative views, per-page login URLs, all-digit user names among
path-based users, numeric book ids and some numeric slugs, power-law shelves and friends, a
template per user (customised profiles) and A/B variants per page type. No calendar, no mirror.
"""

from __future__ import annotations

import functools
from urllib.parse import quote

from bench.invitro.social import kit
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Answer, Site, Truth

DEFAULTS = {"users": 3000.0, "books": 1500.0, "reviews": 6.0, "groups": 150.0, "shelf": 12.0, "friends": 40.0,
            "tab_share": 0.4}
"""knobs: user, book and group counts, mean reviews per book, mean shelf size, mean friends per
user, share of books that have each tab"""
TABS = ("editions", "quotes", "similar")
SHELF_SORTS = ("added", "title", "stars")
TRACKING = {"home": "frontpage", "group": "groups"}
"""``ref`` → ``utm_source`` of the blocks that tag their book links"""
STATIC = ("/about", "/terms-of-use", "/privacy", "/help", "/invite")
SHOWN = 40
"""shelf books on a profile, and books per shelf page"""
REVIEWS_PAGE = 20
NOT_FOUND = Answer(404, Truth("not_found", ERROR))


class BooksSite(Site):
    """A book-cataloguing community; see the module docstring for its URLs and truth."""

    name = "books"
    defaults = DEFAULTS
    domain = "books.test"
    host = "www.books.test"

    def __init__(self, seed: int, port: int, **knobs: float) -> None:
        super().__init__(seed, port, **knobs)
        k = self.k
        self.rand = r = kit.Rand(seed * 1_000_003 + 3)
        self.o = self.origin(self.host)
        self.users = [kit.user_name(r, u) for u in range(int(k["users"]))]
        self.user_index = {name: u for u, name in enumerate(self.users)}
        n = int(k["books"])
        self.slugs = [str(1900 + r.below(120, "year", b)) if r.chance(0.05, "numeric", b) else kit.slug(r, "b", b)
                      for b in range(n)]
        counts = [int(r.lognormal(k["reviews"], 1.2, "reviews", b)) for b in range(n)]
        self.first_review = [0]
        for c in counts:
            self.first_review.append(self.first_review[-1] + c)
        self.review_book = [b for b, c in enumerate(counts) for _ in range(c)]
        self.n_groups = int(k["groups"])
        self.layouts = kit.layouts(r, 24)

    # -- the model -------------------------------------------------------------------------------

    def shelf(self, u: int) -> list[int]:
        """User ``u``'s books in the order added (popular books likelier)."""
        size = int(self.rand.lognormal(self.k["shelf"], 1.0, "shelf", u))
        return list(dict.fromkeys(kit.ranked(self.rand, len(self.slugs), 2.0, "shelved", u, i) for i in range(size)))

    @functools.cached_property
    def readers(self) -> list[list[int]]:
        """Who shelved each book (computed once, on the first book page asked)."""
        readers: list[list[int]] = [[] for _ in self.slugs]
        for u in range(len(self.users)):
            for b in self.shelf(u):
                readers[b].append(u)
        return readers

    @functools.cached_property
    def reviews_by(self) -> list[list[int]]:
        """Each user's reviews (review indexes), oldest first."""
        by: list[list[int]] = [[] for _ in self.users]
        for i in range(len(self.review_book)):
            by[self.reviewer(i)].append(i)
        return by

    def reviewer(self, i: int) -> int:
        return kit.ranked(self.rand, len(self.users), 2.5, "reviewer", i)

    def reviews_of(self, b: int, sort: str) -> list[int]:
        """Book ``b``'s review indexes: ``helpful`` (the default), ``stars`` or ``newest`` first."""
        ids = range(self.first_review[b], self.first_review[b + 1])
        if sort == "newest":
            return list(reversed(ids))
        return sorted(ids, key=lambda i: -self.rand.unit(sort, i))

    def has_tab(self, b: int, tab: str) -> bool:
        return self.rand.chance(self.k["tab_share"], "tab", tab, b)

    def friends(self, u: int) -> list[int]:
        count = min(len(self.users), int(self.rand.lognormal(self.k["friends"], 1.1, "friends", u)))
        picks = (kit.ranked(self.rand, len(self.users), 2.5, "friend", u, i) for i in range(count))
        return [f for f in dict.fromkeys(picks) if f != u]

    # -- URLs ------------------------------------------------------------------------------------

    def user_url(self, u: int) -> str:
        return f"{self.o}/{self.users[u]}"

    def book_url(self, b: int, suffix: str = "", **params: object) -> str:
        return kit.url(self.o, f"/books/{1000 + b}/{self.slugs[b]}{suffix}", **params)

    def review_url(self, i: int) -> str:
        return f"{self.o}/review/{50_000 + i}"

    def group_url(self, g: int) -> str:
        return f"{self.o}/groups/{200 + g}"

    # -- the Site interface ----------------------------------------------------------------------

    def owns(self, host: str) -> bool:
        return host == self.host

    def seeds(self) -> list[str]:
        return [f"{self.o}/"]

    def robots(self, host: str) -> str:
        return "User-agent: *\nDisallow: /actions/\n"

    def answer(self, host: str, target: str) -> Answer:
        split = kit.split_target(target)
        if host != self.host or split is None or not split[0].startswith("/"):
            return NOT_FOUND
        path, params = split
        parts = path.split("/")[1:]
        got: Answer | None = None
        if path == "/" and not params:
            got = self._home()
        elif len(parts) in (3, 4) and parts[0] == "books":
            b = kit.number(parts[1], 1000, 1000 + len(self.slugs))
            if b is not None and parts[2] == self.slugs[b - 1000]:
                got = self._book(b - 1000, params) if len(parts) == 3 else \
                    self._reviews(b - 1000, params) if parts[3] == "reviews" else None
        elif len(parts) == 2 and parts[0] == "review" and not params:
            i = kit.number(parts[1], 50_000, 50_000 + len(self.review_book))
            got = None if i is None else self._review(i - 50_000)
        elif len(parts) == 2 and parts[0] == "groups" and not params:
            g = kit.number(parts[1], 200, 200 + self.n_groups)
            got = None if g is None else self._group(g - 200)
        elif parts[0] in self.user_index and (len(parts) == 1 and not params or parts[1:] == ["shelf"]):
            u = self.user_index[parts[0]]
            got = self._profile(u) if len(parts) == 1 else self._shelf(u, params)
        else:
            got = self._action(path, params)
        return got or NOT_FOUND

    # -- pages -----------------------------------------------------------------------------------

    def _page(self, title: str, kind: str, key: object, login_back: str = "") -> tuple[kit.Page, kit.Layout]:
        """A page with the site's header and footer, in its type's template (A/B) or its user's."""
        page = kit.Page(title)
        page.header.add(f"{self.o}/", "Books").add(f"{self.o}/invite", "Invite friends", "invite")
        login = f"{self.o}/login?ReturnUrl={quote(login_back, safe='')}" if login_back else f"{self.o}/login"
        page.header.add(login, "Sign in", "login")
        for path in STATIC[:4]:
            page.footer.add(self.o + path, path[1:].title())
        if kind == "user":
            return page, self.layouts[12 + self.rand.below(12, "user-layout", key)]
        kinds = ("home", "book", "reviews", "review", "group", "action")
        return page, self.layouts[2 * kinds.index(kind) + self.rand.below(2, "variant", kind, key)]

    def _home(self) -> Answer:
        page, layout = self._page("Books", "home", "")
        popular = page.group("popular-books")
        for b in range(20):
            popular.add(self.book_url(b, ref="home", utm_source=TRACKING["home"]), self.rand.title("title", b))
        newest = page.group("newest-reviews")
        for i in range(len(self.review_book) - 1, max(-1, len(self.review_book) - 11), -1):
            newest.add(self.review_url(i), "review", "review")
            newest.add(self.user_url(self.reviewer(i)), self.users[self.reviewer(i)], "user")
        groups = page.group("group-directory")
        for g in range(self.n_groups):
            groups.add(self.group_url(g), self.rand.title("group", g))
        return _done(Truth("home", VALUABLE, "home"), page, layout)

    def _profile(self, u: int) -> Answer:
        page, layout = self._page(self.users[u], "user", u)
        page.user_text("bio", kit.user_html(self.rand, 2, "bio", u, author=u))
        shelf = self.shelf(u)
        books = page.group("shelf-preview")
        for b in reversed(shelf[-SHOWN:]):
            books.add(self.book_url(b), self.rand.title("title", b))
        if len(shelf) > SHOWN:
            books.add(kit.url(self.user_url(u), "/shelf", page=1, sort="added"), f"All {len(shelf)} books", "shelf")
        reviews = page.group("user-reviews")
        for i in self.reviews_by[u][-10:]:
            reviews.add(self.review_url(i), "review", "review").add(self.book_url(self.review_book[i]), "book", "book")
        friends = page.group("friends")
        for f in self.friends(u):
            friends.add(self.user_url(f), self.users[f])
        groups = page.group("member-of")
        for i in range(self.rand.below(5, "groups", u)):
            groups.add(self.group_url(kit.ranked(self.rand, self.n_groups, 2.0, "member", u, i)), "group")
        return _done(Truth("profile", VALUABLE, f"user:{self.users[u]}", True), page, layout)

    def _shelf(self, u: int, params: dict[str, str]) -> Answer | None:
        shelf = self.shelf(u)
        last = -(-len(shelf) // SHOWN)
        page_no = kit.number(params.pop("page", ""), 1, last + 1)
        sort = params.pop("sort", "")
        if params or page_no is None or sort not in SHELF_SORTS or len(shelf) <= SHOWN:
            return None
        if sort == "added":
            shelf = shelf[::-1]
        elif sort == "title":
            shelf = sorted(shelf, key=self.slugs.__getitem__)
        else:
            shelf = sorted(shelf, key=lambda b: self.rand.unit("stars", b))
        page, layout = self._page(f"{self.users[u]}'s shelf", "user", u)
        page.group("shelf-owner").add(self.user_url(u), self.users[u])
        sorts = page.group("shelf-sort")
        for s in SHELF_SORTS:
            sorts.add(kit.url(self.user_url(u), "/shelf", page=1, sort=s), s)
        rows = page.group("shelf-books")
        for b in shelf[(page_no - 1) * SHOWN:page_no * SHOWN]:
            rows.add(self.book_url(b), self.rand.title("title", b), "book")
            rows.add(f"{self.o}/actions/addbook?bookid={1000 + b}", "add", "add")
        kit.pagination(page, page_no, last, lambda p: kit.url(self.user_url(u), "/shelf", page=p, sort=sort))
        return _done(Truth("shelf", DUPLICATE, "", True), page, layout)

    def _book(self, b: int, params: dict[str, str]) -> Answer | None:
        tab = params.pop("tab", None)
        tracking = (params.pop("ref", None), params.pop("utm_source", None))
        if params or (tab is not None and (tab not in TABS or not self.has_tab(b, tab) or tracking != (None, None))):
            return None
        if tracking != (None, None) and TRACKING.get(tracking[0] or "") != tracking[1]:
            return None
        title = self.rand.title("title", b)
        page, layout = self._page(title, "book", b, login_back=self.book_url(b)[len(self.o):])
        page.text("description", self.rand.text(3, "description", b))
        tools = page.group("book-tools")
        tools.add(self.book_url(b), "Overview", "book")
        for t in TABS:
            if self.has_tab(b, t):
                tools.add(self.book_url(b, tab=t), t.title(), "tab")
        tools.add(f"{self.o}/actions/addbook?bookid={1000 + b}", "Add to my shelf", "add")
        tools.add(self.book_url(b, "/reviews"), "Reviews", "reviews")
        top = page.group("top-reviews")
        for i in self.reviews_of(b, "helpful")[:5]:
            top.add(self.review_url(i), "review", "review")
            top.add(self.user_url(self.reviewer(i)), "avatar", "avatar")
            top.add(self.user_url(self.reviewer(i)), "reviewer", "user")
        self._readers(page, b, 40)
        similar = page.group("similar-books")
        for s in self.rand.sample(len(self.slugs), 20 if tab == "similar" else 8, "similar", b):
            similar.add(self.book_url(s), self.rand.title("title", s))
        if tab is not None:
            page.text(f"tab-{tab}", self.rand.text(4, tab, b))
            truth = Truth("book_tab", DUPLICATE, f"book:{1000 + b}", True)
        elif tracking != (None, None):
            truth = Truth("book_tracking", DUPLICATE, f"book:{1000 + b}", True)
        else:
            truth = Truth("book", VALUABLE, f"book:{1000 + b}", True)
        return _done(truth, page, layout)

    def _readers(self, page: kit.Page, b: int, n: int) -> None:
        readers = page.group("readers")
        for u in self.readers[b][-n:]:
            readers.add(self.user_url(u), self.users[u])

    def _reviews(self, b: int, params: dict[str, str]) -> Answer | None:
        helpful = self.reviews_of(b, "helpful")
        many, last = len(helpful) > REVIEWS_PAGE, max(1, -(-len(helpful) // REVIEWS_PAGE))
        sort = params.pop("sort", None)
        start: int | None = 0
        order = helpful
        if sort is not None and not many:
            return None
        if sort == "newest":
            order = self.reviews_of(b, "newest")
            after = params.pop("after", None)
            start = 0 if after is None else _cursor(after, order)
        elif sort in ("helpful", "stars"):
            page_no = kit.number(params.pop("page", ""), 1, last + 1)
            order = helpful if sort == "helpful" else self.reviews_of(b, "stars")
            start = None if page_no is None else (page_no - 1) * REVIEWS_PAGE
        elif sort is not None:
            return None
        if params or start is None:
            return None
        page_no = start // REVIEWS_PAGE + 1
        page, layout = self._page(f"Reviews of {self.rand.title('title', b)}", "reviews", b,
                                  login_back=self.book_url(b, "/reviews")[len(self.o):])
        page.group("review-book").add(self.book_url(b), self.rand.title("title", b))
        self._readers(page, b, 20)
        shown = order[start:start + REVIEWS_PAGE]
        if many:
            sorts = page.group("review-sort")
            sorts.add(self.book_url(b, "/reviews", page=1, sort="helpful"), "most helpful")
            sorts.add(self.book_url(b, "/reviews", page=1, sort="stars"), "rating")
            sorts.add(self.book_url(b, "/reviews", sort="newest"), "newest")
            if sort != "newest":
                by = sort or "helpful"
                kit.pagination(page, page_no, last, lambda p: self.book_url(b, "/reviews", page=p, sort=by))
            elif start + REVIEWS_PAGE < len(order):
                page.group("cursor").add(self.book_url(b, "/reviews", after=50_000 + shown[-1], sort="newest"), "older")
        key = f"reviews:{1000 + b}"
        if sort is None:
            truth = Truth("reviews", VALUABLE, key, True)
        else:
            truth = Truth("reviews_sorted", DUPLICATE, key if (sort, page_no) == ("helpful", 1) else "", True)
        html, links = kit.render_entries(page, layout, [self._review_entry(i) for i in shown])
        return Answer(200, truth, html, links=links)

    def _review_entry(self, i: int) -> kit.Entry:
        u = self.reviewer(i)
        entry = kit.Entry(f"r-{50_000 + i}", "review", kit.user_html(self.rand, 1, "review", i, author=u))
        return entry.add(self.review_url(i), "Read", "title").add(self.user_url(u), "avatar", "avatar") \
            .add(self.user_url(u), self.users[u], "user")

    def _review(self, i: int) -> Answer:
        b, u = self.review_book[i], self.reviewer(i)
        page, layout = self._page(f"Review of {self.rand.title('title', b)}", "review", i)
        page.user_text("review-text", kit.user_html(self.rand, 4, "review", i, author=u))
        about = page.group("review-about")
        about.add(self.book_url(b), self.rand.title("title", b), "book").add(self.user_url(u), "avatar", "avatar")
        about.add(self.user_url(u), self.users[u], "user")
        about.add(f"{self.o}/actions/addbook?bookid={1000 + b}", "Add", "add")
        more = page.group("more-reviews")
        others = self.reviews_of(b, "helpful")
        for k in self.rand.sample(len(others), 10, "others", i):
            if others[k] != i:
                more.add(self.review_url(others[k]), "review")
        more.add(self.book_url(b, "/reviews"), "All reviews", "reviews")
        by = page.group("more-by-reviewer")
        for j in self.reviews_by[u][-11:]:
            if j != i:
                by.add(self.review_url(j), "review")
        shelf = page.group("reviewer-shelf")
        for s in self.shelf(u)[-20:]:
            shelf.add(self.book_url(s), self.rand.title("title", s))
        friends = page.group("reviewer-friends")
        for f in self.friends(u)[:12]:
            friends.add(self.user_url(f), self.users[f])
        popular = page.group("popular-books")
        for s in range(10):
            popular.add(self.book_url(s), self.rand.title("title", s))
        liked = page.group("liked-by")
        for k in range(int(self.rand.lognormal(10.0, 1.0, "likes", i))):
            who = kit.ranked(self.rand, len(self.users), 2.0, "liker", i, k)
            liked.add(self.user_url(who), self.users[who])
        entries = []
        for c in range(int(self.rand.lognormal(2.0, 1.0, "comments", i))):
            who = kit.ranked(self.rand, len(self.users), 2.5, "commenter", i, c)
            body = kit.user_html(self.rand, 1, "comment", i, c, author=who, topic=("review", i))
            entries.append(kit.Entry(f"c-{c}", "comment", body)
                           .add(self.user_url(who), self.users[who], "user"))
        html, links = kit.render_entries(page, layout, entries)
        return Answer(200, Truth("review", VALUABLE, f"review:{50_000 + i}", True), html, links=links)

    def _group(self, g: int) -> Answer:
        page, layout = self._page(self.rand.title("group", g), "group", g, login_back=f"/groups/{200 + g}")
        page.user_text("group-about", kit.user_html(self.rand, 2, "group-about", g))
        reading = page.group("group-reads")
        for b in self.rand.sample(len(self.slugs), 8, "reads", g):
            reading.add(self.book_url(b, ref="group", utm_source=TRACKING["group"]), self.rand.title("title", b))
        members = page.group("members")
        for i in range(min(len(self.users), int(self.rand.lognormal(40, 1.0, "members", g)))):
            u = kit.ranked(self.rand, len(self.users), 2.0, "in-group", g, i)
            members.add(self.user_url(u), self.users[u])
        others = page.group("other-groups")
        for h in self.rand.sample(self.n_groups, 5, "other-groups", g):
            others.add(self.group_url(h), self.rand.title("group", h))
        return _done(Truth("group", VALUABLE, f"group:{200 + g}", True), page, layout)

    def _action(self, path: str, params: dict[str, str]) -> Answer | None:
        """Static pages, invite, login and the add-book action: uninformative."""
        if path in STATIC and not params:
            kind = "static" if path != "/invite" else "invite"
        elif path == "/login" and params.keys() <= {"ReturnUrl"}:
            kind = "login"
        elif path == "/actions/addbook" and params.keys() == {"bookid"}:
            if kit.number(params["bookid"], 1000, 1000 + len(self.slugs)) is None:
                return None
            kind = "addbook"
        else:
            return None
        page, layout = self._page(kind.title(), "action", path)
        page.forms.append(self.o + path)
        return _done(Truth(kind, UNINFORMATIVE), page, layout)


def _cursor(after: str, order: list[int]) -> int | None:
    """Where the newest-first listing goes on after review ``after``: only the cursors the site hands out
    (the last review of a page that is not the last page) are valid."""
    rid = kit.number(after, 50_000, 1 << 31)
    at = order.index(rid - 50_000) + 1 if rid is not None and rid - 50_000 in order else 0
    return at if at % REVIEWS_PAGE == 0 and 0 < at < len(order) else None


def _done(truth: Truth, page: kit.Page, layout: kit.Layout) -> Answer:
    html, links = kit.render_entries(page, layout, [])
    return Answer(200, truth, html, links=links)
