"""The lab's blog: LiveJournal-like journals on per-user subdomains of ``blog.test`` (digest §4.3).

Role: one :class:`~bench.invitro.social.site.Site` of the social lab. It reads nothing but its
seed, port and knobs, keeps no state between requests (the caches only save time) and never
touches sockets (``web.py`` serves it).

URL scheme and truth (type: category):

- ``USER.blog.test/`` and ``/?skip=20k``: ``journal``, valuable, UCC (20 entries, newest first);
  ``/?utm_source=portal&utm_medium=web``, ``?utm_source=news&utm_medium=email``,
  ``?ref=friends``: ``journal_tracking``, duplicate of the first journal page;
- ``/profile``: ``profile``, valuable, UCC (friends, friend-of, communities, add-friend);
- ``/ITEMID.html`` (ITEMID = 256·(n+1) + a random byte): ``post``, valuable, UCC; with
  ``?page=K``: ``comments``, valuable (the post's further comment pages); ``?format=light``:
  ``light``, duplicate of the post; ``?mode=reply``: ``reply``, uninformative (linked on
  ``reply_share`` of the posts, each comment repeats the link);
- ``/tag``: ``taglist``, valuable; ``/tag?sort=count``: ``taglist_sort``, duplicate of it;
  ``/tag/TAG`` with ``?skip=``: ``tag``, duplicate listing; ``/friends``: ``friends``, duplicate
  listing (the newest entry of 20 friends);
- ``/YYYY/MM/DD/``: ``calendar``, duplicate listing for a day with entries, uninformative
  (empty) for any other date; prev/next go to the neighbouring days with entries, except that
  the first and last such day lead to the empty days beyond, whose prev/next are the adjacent
  dates: an endless calendar in both directions on every journal;
- ``www.blog.test/``: ``portal``, valuable; ``/N.html``: ``news``, valuable; ``/~USER/``:
  ``redirect`` (301 to ``USER.blog.test/``, the old URL scheme, linked from news, the portal
  and comments on older posts); ``/tools/tellafriend?journal=U&itemid=N``: ``tellafriend``,
  uninformative (on ``tellafriend_share`` of the posts); ``/manage/circle/add?user=U``:
  ``addfriend``; ``/login`` and ``/login?returnto=URL`` (a unique URL on every page):
  ``login``; ``/legal/tos``, ``/legal/privacy``, ``/support/``, ``/about``: ``static``; all
  uninformative;
- ``community.blog.test/NAME/``: ``community``, valuable, UCC (members and their entries).

Links (digest §4.3): every page has the site header (portal, latest news, its own login URL,
help) and footer (legal, support, about); every page of a journal also has its sidebar (menu,
the ten newest entries, its tags, this month's days, up to 60 friends). An entry on any listing
links its post, tags, comments, reply form and tell-a-friend page, as the post page does; a
post also links its previous and next posts, its day, its light view, each commenter's home and
profile, six related posts (half from friends' journals) and its further comment pages; a
profile links friends' and friends-of homes and profiles, communities and add-friend.

robots.txt: on www, ``/manage/`` and (knob ``login_robots`` ≥ 0.5, the default) ``/login``
are disallowed, tell-a-friend is not; on journals, reply forms are allowed unless knob
``reply_robots`` ≥ 0.5 (digest AT-34b).

User-written HTML (``kit.user_html``, no links in it): post bodies and their excerpts (one mood
per journal), comment text (one mood per post), profile bios (with the owner's avatar, badges
and signature) and community descriptions. The site's own texts (static pages, news, the portal
intro) and the light view are plain paragraphs.

What makes it hard: header and footer links on every page; the same target several times per
page (title, comments link and permalink of an entry; a reply link per comment); tracking
parameters and a sort variant; a print (light) view; alternative listings (tags, calendar,
friends feed); a redirect between URL schemes; action pages and a per-page login URL, some
disallowed; an endless calendar; page-number pagination (``?skip=``, ``?page=``); per-user
DOM templates (``layouts``, 60 by default, with shuffled block order) and A/B variants on www;
numeric item ids and some all-digit user names and tags; a power-law friend graph.
"""

from __future__ import annotations

import bisect
import datetime
import functools
import random
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from bench.invitro.social.kit import Group, Layout, Link, Page, Rand, layouts, render, slug, user_html, user_name
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Answer, Site, Truth

DEFAULTS: dict[str, float] = {
    "users": 340, "posts_mean": 30, "max_posts": 400, "friends_mean": 40, "comments_mean": 14,
    "communities": 30, "news": 40, "tags_mean": 3, "posts_per_day": 12, "reply_share": 0.1,
    "tellafriend_share": 0.12, "light_share": 0.08, "old_scheme_share": 0.2, "digit_share": 0.05,
    "layouts": 60, "login_robots": 1, "reply_robots": 0,
}
"""knobs: journals, mean posts per journal (log-normal) and their cap, mean friends (power law),
mean comments per post, communities, news items, mean tags per journal, mean posts per posting
day, shares of posts linking a reply form, a tell-a-friend page and a light view, share of
comments on older posts naming the commenter in the old scheme, share of all-digit user names,
journal templates, and the two robots.txt switches"""
PER_PAGE = 20
COMMENTS_PER_PAGE = 50
MAX_LISTED = 300
"""friend-of and community member lists show at most this many users"""
SIDEBAR_FRIENDS = 60
"""friends listed in every journal page's sidebar"""
STATIC = {"/legal/tos": "Terms of service", "/legal/privacy": "Privacy policy", "/support/": "Support",
          "/about": "About the blog service"}
TRACKING = (("utm_source=portal", "utm_medium=web"), ("utm_source=news", "utm_medium=email"), ("ref=friends",))
_EPOCH = datetime.date(2012, 1, 1).toordinal()
_DAYS = range(datetime.date(1900, 1, 1).toordinal(), datetime.date(2999, 12, 31).toordinal() + 1)
NOT_FOUND = Answer(404, Truth("not_found", ERROR))


@dataclass(frozen=True, slots=True, eq=False)  # hashed by identity: cache keys, one object per user
class User:
    number: int
    name: str
    posts: int
    first_day: int
    spacing: float
    """days between consecutive posts (bursty: often well under one)"""
    tags: tuple[str, ...]
    friends: tuple[int, ...]
    communities: tuple[int, ...]
    layout: int


@dataclass(frozen=True, slots=True, eq=False)
class Post:
    user: User
    n: int
    """0 is the oldest"""
    itemid: int
    title: str
    day: int
    tags: tuple[str, ...]
    comments: int
    reply: bool
    tellafriend: bool
    light: bool


class BlogSite(Site):
    """Journals, posts, tags, calendars, friends and communities; see the module docstring."""

    name = "blog"
    defaults = DEFAULTS
    domain = "blog.test"

    def __init__(self, seed: int, port: int, **knobs: float) -> None:
        super().__init__(seed, port, **knobs)
        k = self.k
        self.rand = r = Rand(seed * 1_000_003 + 1)
        self.www = self.origin("www.blog.test")
        self.community_origin = self.origin("community.blog.test")
        self.layouts = layouts(r, int(k["layouts"]) + 2)  # the last two: www's A/B variants
        vocabulary = sorted({w for t in range(300) for w in slug(r, "tag", t).split("-")} | {"2019", "42", "365"})
        self.users = _draw_users(r, k, vocabulary)
        self.by_name = {u.name: u for u in self.users}
        self.friend_of: list[list[int]] = [[] for _ in self.users]
        self.members: list[list[int]] = [[] for _ in range(int(k["communities"]))]
        for u in self.users:
            for f in u.friends:
                self.friend_of[f].append(u.number)
            for c in u.communities:
                self.members[c].append(u.number)
        self.community_names = [f"{slug(r, 'community', c).split('-')[0]}{'' if c % 7 else '-'}{c}"
                                for c in range(len(self.members))]
        self.community_of = {name: c for c, name in enumerate(self.community_names)}
        self.post = functools.lru_cache(maxsize=1 << 16)(self._post)
        self.days = functools.lru_cache(maxsize=4096)(self._days)
        self.tag_posts = functools.lru_cache(maxsize=4096)(self._tag_posts)
        self.sidebar = functools.lru_cache(maxsize=4096)(self._sidebar)
        # where a layout puts a link block: the blocks' order is the template's, not the page's
        self.block_rank = functools.lru_cache(maxsize=4096)(lambda layout, css: r.hash("order", layout, css))

    # The site's facts.

    def _post(self, u: User, n: int) -> Post:
        r, k, key = self.rand, self.k, (u.number, n)
        tags = tuple(dict.fromkeys(u.tags[min(len(u.tags) - 1, r.zipf(len(u.tags), 2.0, "ptag", *key, j))]
                                   for j in range(1 + r.below(3, "ntags", *key))))
        comments = min(400, int(r.lognormal(k["comments_mean"], 1.0, "comments", *key)))
        return Post(u, n, 256 * (n + 1) + r.below(256, "anum", *key), r.title("post", *key),
                    u.first_day + int(n * u.spacing), tags,
                    comments, r.chance(k["reply_share"], "reply", *key),
                    r.chance(k["tellafriend_share"], "tellafriend", *key), r.chance(k["light_share"], "light", *key))

    def post_of(self, u: User, itemid: int) -> Post | None:
        n = itemid // 256 - 1
        if not 0 <= n < u.posts:
            return None
        post = self.post(u, n)
        return post if post.itemid == itemid else None

    def _days(self, u: User) -> tuple[int, ...]:
        """The days of the user's posts, oldest first (one per post, so non-decreasing)."""
        return tuple(self.post(u, n).day for n in range(u.posts))

    def _tag_posts(self, u: User) -> dict[str, tuple[int, ...]]:
        """tag → the posts carrying it, newest first (only tags in use)."""
        index: dict[str, list[int]] = {}
        for n in reversed(range(u.posts)):
            for tag in self.post(u, n).tags:
                index.setdefault(tag, []).append(n)
        return {tag: tuple(posts) for tag, posts in sorted(index.items())}

    def home(self, u: User) -> str:
        return self.origin(f"{u.name}.{self.domain}") + "/"

    def post_url(self, p: Post) -> str:
        return f"{self.home(p.user)}{p.itemid}.html"

    def day_url(self, u: User, day: int) -> str:
        return self.home(u) + datetime.date.fromordinal(day).strftime("%Y/%m/%d/")

    # The Site interface.

    def owns(self, host: str) -> bool:
        label, _, rest = host.partition(".")
        return rest == self.domain and bool(label)

    def seeds(self) -> list[str]:
        return [self.www + "/"]

    def robots(self, host: str) -> str:
        lines = ["User-agent: *"]
        if host == "www.blog.test":
            lines += ["Disallow: /manage/"] + (["Disallow: /login"] if self.k["login_robots"] >= 0.5 else [])
        elif host != "community.blog.test" and self.k["reply_robots"] >= 0.5:
            lines.append("Disallow: /*?mode=reply")
        return "\n".join(lines + ["Allow: /", ""])

    def answer(self, host: str, target: str) -> Answer:
        path, _, qs = target.partition("?")
        params = dict(p.partition("=")[::2] for p in qs.split("&")) if qs else {}
        if qs and len(params) != qs.count("&") + 1:
            return NOT_FOUND  # a repeated parameter
        if host == "www.blog.test":
            return self._www(path, params)
        if host == "community.blog.test":
            c = self.community_of.get(path[1:-1]) if path.endswith("/") else None
            return NOT_FOUND if c is None or params else self._community(c)
        user = self.by_name.get(host[: -len(self.domain) - 1]) if self.owns(host) else None
        return NOT_FOUND if user is None else self._journal_host(user, path, params)

    # Pages on www.

    def _www(self, path: str, params: dict[str, str]) -> Answer:
        if path == "/login" and set(params) <= {"returnto"}:
            return self._login(params.get("returnto"))
        if path == "/tools/tellafriend" and set(params) == {"journal", "itemid"}:
            u, itemid = self.by_name.get(params["journal"]), params["itemid"]
            p = self.post_of(u, int(itemid)) if u and itemid.isdigit() and itemid[0] != "0" else None
            return NOT_FOUND if p is None else self._tellafriend(p)
        if path == "/manage/circle/add" and set(params) == {"user"} and params["user"] in self.by_name:
            return self._addfriend(self.by_name[params["user"]])
        if params:
            return NOT_FOUND
        if path in STATIC:
            page = self.page(STATIC[path], self.www + path)
            page.text("static-text", self.rand.text(6, "static", path))
            return self.done(page, Truth("static", UNINFORMATIVE), self.www_layout(path))
        if path == "/":
            return self._portal()
        if path.startswith("/~") and path.endswith("/") and path[2:-1] in self.by_name:
            home = self.home(self.by_name[path[2:-1]])
            return Answer(301, Truth("redirect", DUPLICATE, f"journal:{path[2:-1]}:0"), location=home, links=(home,))
        number = path[1:-5]
        if path.endswith(".html") and number.isdigit() and number[0] != "0" and 1 <= int(number) <= self.k["news"]:
            return self._news(int(number))
        return NOT_FOUND

    def _portal(self) -> Answer:
        page = self.page("Blogs: the portal", self.www + "/")
        latest = int(self.k["news"])
        news = page.group("portal-news")
        for n in range(latest, max(0, latest - 10), -1):
            news.add(f"{self.www}/{n}.html", self.rand.title("news", n))
        featured, popular, classic = page.group("featured"), page.group("popular"), page.group("classic")
        for u in self.users[:70]:  # the most friended journals, linked three ways
            if u.number < 30:
                featured.add(f"{self.home(u)}?{'&'.join(TRACKING[0])}", u.name)
            elif u.number < 60:
                popular.add(self.home(u), u.name).add(self.home(u) + "profile", "profile", "profile")
            else:
                classic.add(f"{self.www}/~{u.name}/", u.name)
        self.community_links(page, range(len(self.members)))
        page.text("portal-intro", self.rand.text(3, "portal"))
        return self.done(page, Truth("portal", VALUABLE, "portal"), self.www_layout("/"))

    def _news(self, n: int) -> Answer:
        r = self.rand
        page = self.page(r.title("news", n), f"{self.www}/{n}.html")
        nav = page.group("news-nav")
        for other in (n - 1, n + 1):
            if 1 <= other <= self.k["news"]:
                nav.add(f"{self.www}/{other}.html", r.title("news", other))
        mentions = page.group("news-mentions")
        for j in range(8):
            u = self.users[r.zipf(len(self.users), 2.0, "news-user", n, j)]
            if j < 5:
                mentions.add(f"{self.home(u)}?{'&'.join(TRACKING[1])}", u.name)
            else:
                mentions.add(f"{self.www}/~{u.name}/", u.name)
        self.community_links(page, [r.below(len(self.members), "news-community", n, j) for j in range(3)])
        page.text("news-text", r.text(8, "news-text", n))
        return self.done(page, Truth("news", VALUABLE, f"news:{n}"), self.www_layout(str(n)))

    def _login(self, returnto: str | None) -> Answer:
        page = self.page("Log in", f"{self.www}/login")
        back = unquote(returnto or "")
        parts = back.split("/")
        if back.startswith("http://") and len(parts) > 3 and self.owns(parts[2].rpartition(":")[0]):
            page.group("login-back").add(back, "back")
        page.forms.append(f"{self.www}/login.do")
        return self.done(page, Truth("login", UNINFORMATIVE), self.www_layout("login"))

    def _tellafriend(self, p: Post) -> Answer:
        u = p.user
        page = self.page("Tell a friend", f"{self.www}/tools/tellafriend?itemid={p.itemid}&journal={u.name}")
        page.group("tellafriend-entry").add(self.post_url(p), p.title, "title").add(self.home(u), u.name, "user")
        page.forms.append(f"{self.www}/tools/tellafriend.do")
        return self.done(page, Truth("tellafriend", UNINFORMATIVE), self.www_layout("tellafriend"))

    def _addfriend(self, u: User) -> Answer:
        page = self.page(f"Add {u.name} as a friend", f"{self.www}/manage/circle/add?user={u.name}")
        page.group("addfriend-user").add(self.home(u) + "profile", u.name)
        page.forms.append(f"{self.www}/manage/circle/add.do")
        return self.done(page, Truth("addfriend", UNINFORMATIVE), self.www_layout("addfriend"))

    def _community(self, c: int) -> Answer:
        r, name = self.rand, self.community_names[c]
        page = self.page(f"Community {name}", f"{self.community_origin}/{name}/")
        page.user_text("community-about", user_html(r, 3, "community", c))
        members = page.group("community-members")
        for member in (self.users[m] for m in self.members[c][:MAX_LISTED]):
            members.add(self.home(member), member.name).add(self.home(member) + "profile", "info", "info")
        for m in self.members[c][:10]:
            self.entry(page, self.post(self.users[m], self.users[m].posts - 1))
        self.community_links(page, [r.below(len(self.members), "related", c, j) for j in range(5)])
        return self.done(page, Truth("community", VALUABLE, f"community:{name}", ucc=True), self.www_layout(name))

    # Pages on a journal's host.

    def _journal_host(self, u: User, path: str, params: dict[str, str]) -> Answer:
        if path == "/":
            return self._journal(u, params)
        if path == "/profile" and not params:
            return self._profile(u)
        if path == "/friends" and not params:
            return self._friends(u)
        if path == "/tag" and params in ({}, {"sort": "count"}):
            return self._taglist(u, bool(params))
        if path.startswith("/tag/") and set(params) <= {"skip"}:
            return self._tag(u, path[5:], params.get("skip"))
        if path.endswith(".html") and path[1:-5].isdigit() and path[1] != "0":
            p = self.post_of(u, int(path[1:-5]))
            return NOT_FOUND if p is None else self._post_page(p, params)
        parts = path.split("/")
        if len(parts) == 5 and parts[4] == "" and all(x.isdigit() for x in parts[1:4]) and not params:
            try:
                day = datetime.date(int(parts[1]), int(parts[2]), int(parts[3])).toordinal()
            except ValueError:
                return NOT_FOUND
            if path == datetime.date.fromordinal(day).strftime("/%Y/%m/%d/") and day in _DAYS:
                return self._calendar(u, day)
        return NOT_FOUND

    def _journal(self, u: User, params: dict[str, str]) -> Answer:
        pairs = {f"{k}={v}" for k, v in params.items()}
        tracked = next((t for t in TRACKING if set(t) == pairs), None)
        s = offset(params["skip"], PER_PAGE, u.posts) if set(params) == {"skip"} else 0
        if s is None or s == 0 and params and tracked is None:
            return NOT_FOUND
        url = self.home(u) + (f"?{'&'.join(sorted(pairs))}" if params else "")
        page = self.page(f"{u.name}'s journal", url, u)
        newest = u.posts - 1 - s
        for n in range(newest, max(-1, newest - PER_PAGE), -1):
            self.entry(page, self.post(u, n))
        self.pager(page, self.home(u), s, u.posts, "skip", PER_PAGE)
        if tracked is None:
            truth = Truth("journal", VALUABLE, f"journal:{u.name}:{s}", ucc=True)
        else:
            truth = Truth("journal_tracking", DUPLICATE, f"journal:{u.name}:0", ucc=True)
        return self.done(page, truth, self.user_layout(u))

    def _profile(self, u: User) -> Answer:
        page = self.page(f"{u.name}: user info", self.home(u) + "profile", u)
        page.user_text("profile-bio", user_html(self.rand, 4, "bio", u.number, author=u.number))
        for css, numbers in (("profile-friends", u.friends), ("profile-friend-of", self.friend_of[u.number])):
            group = page.group(css)
            for friend in (self.users[f] for f in numbers[:MAX_LISTED]):
                group.add(self.home(friend), friend.name).add(self.home(friend) + "profile", "info", "info")
        self.community_links(page, u.communities)
        page.group("profile-actions").add(f"{self.www}/manage/circle/add?user={u.name}", "Add friend")
        return self.done(page, Truth("profile", VALUABLE, f"profile:{u.name}", ucc=True), self.user_layout(u))

    def _friends(self, u: User) -> Answer:
        page = self.page(f"{u.name}'s friends page", self.home(u) + "friends", u)
        who = page.group("friends-journals")
        for f in u.friends[:PER_PAGE]:
            friend = self.users[f]
            who.add(f"{self.home(friend)}?{TRACKING[2][0]}", friend.name)
            self.entry(page, self.post(friend, friend.posts - 1))
        return self.done(page, Truth("friends", DUPLICATE, "", ucc=True), self.user_layout(u))

    def _taglist(self, u: User, by_count: bool) -> Answer:
        index = self.tag_posts(u)
        page = self.page(f"{u.name}: tags", self.home(u) + ("tag?sort=count" if by_count else "tag"), u)
        tags = page.group("tag-cloud")
        for tag in sorted(index, key=lambda t: -len(index[t])) if by_count else index:
            tags.add(f"{self.home(u)}tag/{tag}", f"{tag} ({len(index[tag])})")
        page.group("tag-sort").add(self.home(u) + ("tag" if by_count else "tag?sort=count"), "other order")
        if by_count:
            return self.done(page, Truth("taglist_sort", DUPLICATE, f"taglist:{u.name}", True), self.user_layout(u))
        return self.done(page, Truth("taglist", VALUABLE, f"taglist:{u.name}", True), self.user_layout(u))

    def _tag(self, u: User, tag: str, skip: str | None) -> Answer:
        posts = self.tag_posts(u).get(tag, ())
        s = 0 if skip is None else offset(skip, PER_PAGE, len(posts))
        if not posts or s is None or skip is not None and s == 0:
            return NOT_FOUND
        base = f"{self.home(u)}tag/{tag}"
        page = self.page(f"{u.name}: {tag}", base + (f"?skip={s}" if s else ""), u)
        for n in posts[s : s + PER_PAGE]:
            self.entry(page, self.post(u, n))
        self.pager(page, base, s, len(posts), "skip", PER_PAGE)
        return self.done(page, Truth("tag", DUPLICATE, "", ucc=True), self.user_layout(u))

    def _calendar(self, u: User, day: int) -> Answer:
        days = self.days(u)
        first, last = bisect.bisect_left(days, day), bisect.bisect_right(days, day)
        page = self.page(f"{u.name}: {datetime.date.fromordinal(day)}", self.day_url(u, day), u)
        for n in range(last - 1, first - 1, -1):
            self.entry(page, self.post(u, n))
        if first == last:  # an empty day: the adjacent dates, endlessly
            before, after = day - 1, day + 1
        else:
            before = days[first - 1] if first > 0 else day - 1
            after = days[last] if last < len(days) else day + 1
        nav = page.group("calendar-nav")
        for other, text in ((before, "previous day"), (after, "next day")):
            if other in _DAYS:
                nav.add(self.day_url(u, other), text)
        truth = Truth("calendar", DUPLICATE, "", ucc=True) if last > first else Truth("calendar", UNINFORMATIVE)
        return self.done(page, truth, self.user_layout(u))

    def _post_page(self, p: Post, params: dict[str, str]) -> Answer:
        u, url = p.user, self.post_url(p)
        pages = max(1, -(-p.comments // COMMENTS_PER_PAGE))
        number = offset(params["page"], 1, pages + 1) if set(params) == {"page"} else 1
        if params in ({"mode": "reply"}, {"format": "light"}):
            return self._post_view(p, *next(iter(params.items())))
        if number is None or number < 2 and params:
            return NOT_FOUND
        this = url + (f"?page={number}" if number > 1 else "")
        page = self.page(p.title, this, u)
        nav = page.group("entry-nav")
        for other, text in ((p.n - 1, "previous entry"), (p.n + 1, "next entry")):
            if 0 <= other < u.posts:
                nav.add(self.post_url(self.post(u, other)), text)
        nav.add(self.day_url(u, p.day), str(datetime.date.fromordinal(p.day)), "date")
        self.entry(page, p, full=True)
        # one generator per post page: a hash per decision would cost more than the rest of the page
        rng = random.Random(self.rand.hash("post-page", u.number, p.n))
        self.comments(page, p, number, this, rng)
        self.pager(page, url, number, pages, "page", 1)
        related = page.group("related")
        for j in range(6):
            author = self.users[u.friends[int(rng.random() * len(u.friends))]] if j % 2 else u
            post = self.post(author, int(rng.random() * author.posts))
            related.add(self.post_url(post), post.title)
        # a journal's owner writes in one mood (its posts and their excerpts alike), a post's commenters in another
        page.user_text("entry-text", user_html(self.rand, 5, "post-text", u.number, p.n, topic=("journal", u.number)))
        if p.comments:
            page.user_text("comment-text", user_html(self.rand, min(8, p.comments), "comment-text", u.number, p.n,
                                                     number, topic=("post", u.number, p.n)))
        key = f"post:{u.name}:{p.itemid}"
        if number > 1:
            return self.done(page, Truth("comments", VALUABLE, f"{key}:p{number}", ucc=True), self.user_layout(u))
        return self.done(page, Truth("post", VALUABLE, key, ucc=True), self.user_layout(u))

    def _post_view(self, p: Post, name: str, value: str) -> Answer:
        """The reply form (``?mode=reply``) or the light view (``?format=light``) of a post."""
        u, url = p.user, self.post_url(p)
        page = self.page(p.title, f"{url}?{name}={value}", u)
        page.group("entry-back").add(url, p.title, "title").add(self.home(u), u.name, "user")
        if name == "mode":
            page.forms.append(f"{self.www}/talkpost_do")
            return self.done(page, Truth("reply", UNINFORMATIVE), self.user_layout(u))
        page.text("entry-text", self.rand.text(5, "post-text", u.number, p.n))
        return self.done(page, Truth("light", DUPLICATE, f"post:{u.name}:{p.itemid}"), self.layouts[0])

    def comments(self, page: Page, p: Post, number: int, this: str, rng: random.Random) -> None:
        """Comment page ``number`` of a post: each comment links its author (home, profile), its
        permalink (this page) and, when replies are open, the reply form."""
        u, url = p.user, self.post_url(p)
        group = page.group("comments")
        old = p.n < u.posts // 2
        friends, users, share = u.friends, self.users, self.k["old_scheme_share"]
        for c in range(min(p.comments, number * COMMENTS_PER_PAGE)):
            by_friend, pick, scheme = rng.random() < 0.7, rng.random(), rng.random()
            if c < (number - 1) * COMMENTS_PER_PAGE:
                continue  # drawn all the same, so that a comment has one author on every page
            # friends first, otherwise anyone, popular users likelier (as Rand.zipf with s = 2)
            rank = int(pick * len(friends)) if by_friend else min(len(users) - 1, int(1 / (1 - pick)) - 1)
            who = users[friends[rank]] if by_friend else users[rank]
            home = f"{self.www}/~{who.name}/" if old and scheme < share else self.home(who)
            # the old scheme's /~name/ link is the same author link as a template writes it: one role
            group.add(home, who.name, "user").add(self.home(who) + "profile", "info", "info")
            group.add(f"{this}#t{p.itemid * 1000 + c}", "link", "permalink")
            if p.reply:
                group.add(f"{url}?mode=reply#t{p.itemid * 1000 + c}", "reply", "reply")

    # Building blocks.

    def page(self, title: str, url: str, user: User | None = None) -> Page:
        """A page with the site's header and footer (and the journal's menu on a journal's pages)."""
        page = Page(title)
        # the login link returns to this page: a URL of its own on every page (but no login of a login)
        login = f"{self.www}/login"
        login += "" if url.startswith(login) else f"?returnto={quote(url, safe='')}"
        page.header.add(self.www + "/", "Blogs").add(f"{self.www}/{int(self.k['news'])}.html", "Site news", "news") \
            .add(login, "Log in", "login").add(f"{self.www}/support/", "Help", "help")
        for path, text in STATIC.items():
            page.footer.add(self.www + path, text)
        page.footer.add(self.www + "/", "Home", "home")
        if user is not None:
            page.groups += [Group(css, list(links)) for css, links in self.sidebar(user)]
        return page

    def _sidebar(self, u: User) -> tuple[tuple[str, tuple[Link, ...]], ...]:
        """The link blocks every page of a journal shows: menu, recent entries, tags, this month, friends."""
        home, days = self.home(u), self.days(u)
        # each menu item leads to a page of its own kind, so each has its own role
        menu = ((home, "Recent entries", "journal"), (home + "profile", "Profile", "profile"),
                (home + "friends", "Friends", "friends"), (home + "tag", "Tags", "tags"),
                (self.day_url(u, days[-1]), "Calendar", "calendar"))
        recent = tuple((self.post_url(post), post.title, "")
                       for post in (self.post(u, n) for n in range(u.posts - 1, max(-1, u.posts - 11), -1)))
        tags = tuple((f"{home}tag/{tag}", tag, "") for tag in self.tag_posts(u))
        month = tuple((self.day_url(u, d), datetime.date.fromordinal(d).strftime("%d"), "")
                      for d in sorted(set(days)) if d > days[-1] - 31)
        friends = tuple((self.home(self.users[f]), self.users[f].name, "") for f in u.friends[:SIDEBAR_FRIENDS])
        return (("journal-menu", menu), ("sidebar-recent", recent), ("sidebar-tags", tags),
                ("sidebar-calendar", month), ("sidebar-friends", friends))

    def entry(self, page: Page, p: Post, full: bool = False) -> None:
        """An entry's links as on a listing (or, ``full``, on its own page): the same links either way."""
        u, url = p.user, self.post_url(p)
        group = page.group("entry-full" if full else "entry")
        if not full:
            group.add(url, p.title, "title")
        for tag in p.tags:
            group.add(f"{self.home(u)}tag/{tag}", tag, "tag")
        group.add(f"{url}#comments", f"{p.comments} comments", "comments")
        if p.reply:
            group.add(f"{url}?mode=reply", "Leave a comment", "reply")
        if p.tellafriend:
            group.add(f"{self.www}/tools/tellafriend?journal={u.name}&itemid={p.itemid}", "Tell a friend", "share")
        if p.light and full:
            group.add(f"{url}?format=light", "Light format", "print")
        if not full:
            page.user_text("entry-excerpt", user_html(self.rand, 1, "excerpt", u.number, p.n,
                                                      topic=("journal", u.number)))

    def pager(self, page: Page, base: str, at: int, end: int, name: str, step: int) -> None:
        """Links to the previous and next pages of a listing: ``base`` is offset 0 or page 1."""
        first = 0 if step > 1 else 1
        group = page.group("pager")
        for other in (at - step, at + step):
            if first <= other < end + first:
                group.add(base if other == first else f"{base}?{name}={other}", f"{name} {other}")

    def community_links(self, page: Page, communities: Iterable[int]) -> None:
        group = page.group("communities")
        for c in communities:
            group.add(f"{self.community_origin}/{self.community_names[c]}/", self.community_names[c])

    def user_layout(self, u: User) -> Layout:
        return self.layouts[u.layout]

    def www_layout(self, key: str) -> Layout:
        return self.layouts[-1 - self.rand.below(2, "ab", key)]

    def done(self, page: Page, truth: Truth, layout: Layout) -> Answer:
        """The rendered answer: link blocks ordered by the layout, links without fragments."""
        page.groups.sort(key=lambda g: self.block_rank(layout.name, g.css))
        links = tuple(link.partition("#")[0] for link in page.links())
        return Answer(200, truth, render(page, layout), links=links)


def offset(text: str, step: int, end: int) -> int | None:
    """The number in a ``skip=`` or ``page=`` value if it is written canonically, a multiple of
    ``step`` and below ``end``; else None."""
    if not text.isdigit() or (text[0] == "0" and text != "0") or int(text) % step or int(text) >= end:
        return None
    return int(text)


def _draw_users(r: Rand, k: dict[str, float], vocabulary: list[str]) -> list[User]:
    """Every journal: the friend graph is power-law (popular users, small numbers, are friended more)."""
    count = int(k["users"])
    users = []
    for u in range(count):
        want = min(count - 1, max(1, int(r.lognormal(k["friends_mean"], 1.0, "friends", u))))
        friends: dict[int, None] = {}
        for attempt in range(4 * want):
            f = r.zipf(count, 1.8, "friend", u, attempt) if attempt % 2 else r.below(count, "friend", u, attempt)
            if f != u:
                friends.setdefault(f, None)
            if len(friends) >= want:
                break
        posts = min(int(k["max_posts"]), max(1, round(r.lognormal(k["posts_mean"], 1.0, "posts", u))))
        spacing = 1 / max(1.0, r.lognormal(k["posts_per_day"], 0.5, "per-day", u))
        tags = tuple(dict.fromkeys(vocabulary[r.below(len(vocabulary), "tag", u, j)]
                                   for j in range(1 + r.below(int(2 * k["tags_mean"] - 1), "ntags", u))))
        groups = tuple(dict.fromkeys(r.zipf(int(k["communities"]), 1.8, "community", u, j)
                                     for j in range(r.below(4, "ncommunities", u))))
        users.append(User(u, user_name(r, u, k["digit_share"]), posts, _EPOCH + r.below(2500, "start", u) - posts,
                          spacing, tags, tuple(friends), groups, r.below(int(k["layouts"]), "layout", u)))
    return users
