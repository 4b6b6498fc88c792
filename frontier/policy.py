"""The crawl-policy seam: the one place a crawl strategy plugs into the frontier.

A policy is a subclass of :class:`CrawlPolicy` that overrides only the hooks it needs; the
defaults do nothing, and a policy that overrides none of them costs the crawl nothing. A
policy never does I/O (it may read its ``model`` once, in ``__init__``), never reads a clock
(time comes in as ``now``), never decides control flow and never sees the workbench:
politeness, robots.txt, the sieve's exactly-once guarantee and scope are enforced around it.

**Declaring a policy** (class attributes)

* ``name``: its registry key, chosen with ``policy.name`` in crawl.toml or ``--policy``.
  Defining the class registers it; see *Finding policies* below.
* ``Options``: a frozen dataclass of the policy's own keys with their defaults (the other
  keys of crawl.toml's ``[policy]`` table, or ``--set policy.KEY=VALUE``). Field types are
  ``int``, ``float``, ``bool``, ``str`` or a ``list`` of one of those; an int is accepted for
  a float. Default: no keys.
* ``wants_context``: links come with their :class:`~frontier.page.LinkContext` (the engine
  computes it only then). ``wants_document``: a fetched page comes with its parsed lxml
  document. ``ranks_urls``: the policy orders URLs (``priority`` and ``lane_rank``).
  ``needs_model``: the crawl's configuration is refused (``policy.model``) unless
  ``policy.model`` names an existing file or folder.
* ``judges_new_links_only`` (a class or instance attribute, read once by the frontier):
  ``accept_link`` is asked after the URL cache instead of before it, and only about links
  the cache does not hold; the cache then remembers a link only once it is accepted, so a
  link refused under one parent is judged again under the next (the "dg" order of
  ``frontier/policies/clustergraph.py``). Default: judge every link, then look it up.
* ``__init__(options, model)``: ``options`` is an instance of its ``Options``, validated;
  ``model`` the path of ``policy.model`` (a file or folder an offline learner wrote), or None.

**Hooks** (the frontier calls them; all pure)

1. ``accept_link(url, parent, context) -> str | None``, for every canonical link of a fetched
   page (``parent`` is the page's URL), for seeds (``parent=None``) and for a redirect
   target (``parent`` is the URL that redirected, whose ``on_fetched`` came just before with
   ``page.redirect`` set), after scope and before the URL cache and the sieve (after the
   cache with ``judges_new_links_only``). ``None`` accepts; a short reason string drops the
   link and is counted under that reason in the crawl's drops.
2. ``priority(url, parent, context) -> int``, only with ``ranks_urls``, for each accepted new
   link: its *lane*, 0–65535, stored with the URL through the sieve and the virtualizer.
   Each host keeps one first-in-first-out queue per lane, in memory and on disk.
3. ``lane_rank(scheme_authority, lane) -> float``, only with ``ranks_urls``, asked each time the
   frontier chooses a host's next URL (the lane of lowest rank that has URLs goes first) and
   which host goes next among those polite now (the best rank of each). Lower goes first;
   the default is ``float(lane)``. Ranks may change as the policy learns: they are never
   stored.
   ``site_of(scheme_authority) -> str | None``, only with ``ranks_urls``: the site a host
   belongs to, for the engine's rank gate (``engine/todo.py``): a host is not fetched while
   a better-ranked host of its site is, so the policy's order holds across a site's hosts (a
   host per user), not only within each. Default None: hosts are not grouped, and among
   those polite now the best-ranked goes first, as fast as fetchers are idle.
4. ``on_fetched(page, now) -> Iterable[Revisit]``, for every response to a page URL (any
   status; a redirect has ``page.redirect``, its canonical target), before the page's links
   are offered to ``accept_link``, so a policy has classified a page before it judges its
   links.
5. ``on_failed(url, error, now, final) -> Iterable[Revisit]``: a fetch of ``url`` failed with
   ``error`` (an ``engine.errors`` kind such as ``"connect"``); ``final`` is True when no
   retry is left.
6. ``state() -> bytes`` and ``restore(state)``: what the policy has learned, saved in the
   frontier's checkpoint and given back when the crawl resumes (defaults: nothing).
7. ``counters() -> {name: {label: count}}``: labelled counters the policy keeps (pages per
   cluster, drops per reason, ...), read with the frontier's statistics. They reach each
   agent's stats.json under ``policy`` (added up across agents), ``GET /status`` and
   ``/metrics`` as ``crawl_policy_<name>`` (``engine/metrics.py``). Counters that should
   survive a resume belong in ``state()`` too. Default: none.

8. ``join(agent, agents)``: the crawl runs ``agents`` agents and this policy is agent
   ``agent``'s; called once, before ``restore``. Default: nothing (every agent's policy then
   works alone, on the URLs the host hash gives its agent).
9. ``owner(url) -> int | None``, only asked when overridden, for every link and seed of a
   several-agent crawl: the agent that must fetch ``url``; None routes it by its host (the
   hash ring, or the agent a ``[[credentials]]`` group is pinned to). A policy that splits one
   host's URLs over agents (``frontier/policies/freshness.py``: users of one API) answers here.
10. ``messages(now) -> [(agent, bytes)]``, asked every few tens of milliseconds in a
   several-agent crawl when overridden: messages to other agents, delivered in order to their
   ``on_message(sender, message, now) -> Iterable[Revisit]`` (the engine carries them in spool
   files, ``engine/link_exchange.py``). ``tick(now) -> Iterable[Revisit]`` is asked with it
   (and, when overridden, on the same period in a one-agent crawl): the policy's timer, for
   revisits it could not ask for at a fetch.
11. ``busy() -> bool``: True while the policy holds back revisits it will ask for at a later
   tick; an agent whose policy is busy is not idle, so the crawl does not end. Default: False.

A :class:`Revisit` asks for ``url`` to be fetched again at ``at``, a time on the frontier's
clock: the ``now`` the hooks receive (monotonic seconds; never the page's ``fetched_at``,
which is wall-clock). It bypasses the sieve (which would drop a seen URL) and, once due,
goes ahead of its host's backlog, still under host and IP politeness.

**Finding policies.** A subclass with a ``name`` registers itself when its module is
imported. Asked for a name not registered yet, :func:`build` and :func:`check` import the module
of :mod:`frontier.policies` named after it (``breadth-first``: ``breadth_first``), and if that does
not register it, every module of the package and every entry point of the
``crawl.policies`` group (another package's ``[project.entry-points."crawl.policies"]``), so
adding a policy takes one new module and no edit here or in the engine. Two modules may not
register the same name. A learner that writes ``model`` keeps its pure core beside the policy
(``frontier/clustergraph/``) and its fetching in the engine (``crawl learn``, ``engine/learn.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import pkgutil
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from frontier.page import FetchedPage, LinkContext

ENTRY_POINTS = "crawl.policies"
MAX_LANE = 0xFFFF


class PolicyError(ValueError):
    """A policy name or option is wrong; ``key`` names it (``name`` or the option)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Revisit:
    """Fetch ``url`` again once the frontier's clock (the hooks' ``now``) reaches ``at``."""

    url: str
    at: float


@dataclass(frozen=True, slots=True)
class NoOptions:
    """The options of a policy that has none."""


class CheckpointMismatch(ValueError):
    """The checkpoint was taken with another crawl policy: its queues and state are that policy's."""


def policy_name(policy: CrawlPolicy) -> str:
    """The name a checkpoint records for ``policy`` (its class's, for one that never registered)."""
    return getattr(policy, "name", type(policy).__qualname__)


class CrawlPolicy:
    """A crawl strategy; every hook defaults to doing nothing. See the module docstring."""

    name: ClassVar[str]
    Options: ClassVar[type] = NoOptions
    wants_context: ClassVar[bool] = False
    wants_document: ClassVar[bool] = False
    ranks_urls: ClassVar[bool] = False
    needs_model: ClassVar[bool] = False
    judges_new_links_only: bool = False  # an instance may set it from its options

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            _register(cls)

    def __init__(self, options: object, model: Path | None) -> None:
        self.options = options
        self.model = model

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None:
        return None

    def priority(self, url: str, parent: str | None, context: LinkContext | None) -> int:
        return 0

    def lane_rank(self, scheme_authority: str, lane: int) -> float:
        return float(lane)

    def site_of(self, scheme_authority: str) -> str | None:
        return None

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        return ()

    def on_failed(self, url: str, error: str, now: float, final: bool) -> Iterable[Revisit]:
        return ()

    def state(self) -> bytes:
        return b""

    def restore(self, state: bytes) -> None:
        pass

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        return {}

    def join(self, agent: int, agents: int) -> None:
        pass

    def owner(self, url: str) -> int | None:
        return None

    def messages(self, now: float) -> Sequence[tuple[int, bytes]]:
        return ()

    def on_message(self, sender: int, message: bytes, now: float) -> Iterable[Revisit]:
        return ()

    def tick(self, now: float) -> Iterable[Revisit]:
        return ()

    def busy(self) -> bool:
        return False


# -- the registry ------------------------------------------------------------------------

_registry: dict[str, type[CrawlPolicy]] = {}
_searched = False


def _register(cls: type[CrawlPolicy]) -> None:
    taken = _registry.get(cls.name)
    # a module imported again (a test's reload) replaces its own class; another module may not
    if taken is not None and (taken.__module__, taken.__qualname__) != (cls.__module__, cls.__qualname__):
        raise TypeError(f"policy name {cls.name!r} of {cls.__module__}.{cls.__qualname__} is taken by "
                        f"{taken.__module__}.{taken.__qualname__}")
    _registry[cls.name] = cls


def _search() -> None:
    """Import every module that may hold a policy, once: frontier/policies/ and the entry points."""
    global _searched
    if _searched:
        return
    import importlib.metadata  # here, not at the top: ~0.03 CPU-s a process, and only a policy not built in needs it

    import frontier.policies as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINTS):
        entry_point.load()  # a module or a class: importing it registers its policies
    _searched = True


def known() -> list[str]:
    """The names of every policy that can be built."""
    _search()
    return sorted(_registry)


def _policy_class(name: str) -> type[CrawlPolicy]:
    cls = _registry.get(name)
    module = name.replace("-", "_")
    if cls is None and module.isidentifier():  # the whole search imports numpy's users: ~0.1 CPU-s a process
        with contextlib.suppress(ImportError):
            importlib.import_module(f"frontier.policies.{module}")
        cls = _registry.get(name)
    if cls is None:
        _search()
        cls = _registry.get(name)
    if cls is None:
        raise PolicyError("name", f"unknown policy {name!r}; known: {', '.join(known())}")
    return cls


# -- options -------------------------------------------------------------------------------

# each option type: how an error names one value of it, and a list of them
_SCALARS: dict[type, tuple[str, str]] = {
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    bool: ("true or false", "booleans"),
    str: ("a string", "strings"),
}


def _fits(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _convert(cls: type[CrawlPolicy], key: str, kind: Any, value: Any) -> Any:
    """``value`` as the field's type wants it (an int becomes a float); PolicyError if it does not fit."""
    if kind in _SCALARS:
        if not _fits(value, kind):
            raise PolicyError(key, f"expected {_SCALARS[kind][0]}, got {value!r}")
        return float(value) if kind is float else value
    if typing.get_origin(kind) is list and typing.get_args(kind)[0] in _SCALARS:
        item = typing.get_args(kind)[0]
        if not isinstance(value, list) or not all(_fits(v, item) for v in value):
            raise PolicyError(key, f"expected a list of {_SCALARS[item][1]}, got {value!r}")
        return [float(v) for v in value] if item is float else list(value)
    raise TypeError(f"policy {cls.name!r}: option {key!r} has type {kind!r}; "
                    f"options are int, float, bool, str or a list of one of those")


def _options(cls: type[CrawlPolicy], given: Mapping[str, Any]) -> object:
    """The policy's ``Options`` built from ``given``, each key checked against its declared type."""
    fields = {f.name: f for f in dataclasses.fields(cls.Options)}
    types = typing.get_type_hints(cls.Options)
    for key in given:
        if key not in fields and fields:
            raise PolicyError(key, f"unknown key for policy {cls.name!r} (known: {', '.join(sorted(fields))})")
        if key not in fields:
            raise PolicyError(key, f"unknown key: policy {cls.name!r} has no keys of its own")
    values = {}
    for key, f in fields.items():
        if key in given:
            values[key] = _convert(cls, key, types[key], given[key])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PolicyError(key, f"policy {cls.name!r} needs this key")
    return cls.Options(**values)


def check(name: str, options: Mapping[str, Any], model: Path | None = None) -> None:
    """Raise PolicyError if ``name`` is no policy, ``options`` do not fit it, or it needs a ``model`` not there.

    Nothing is built or read: the model's content is judged when the policy is built."""
    cls = _policy_class(name)
    _options(cls, options)
    if cls.needs_model and (model is None or not model.exists()):
        raise PolicyError("model", f"policy {name!r} needs a model (a folder or file its learner wrote); "
                                   + ("none given" if model is None else f"{model} does not exist"))


def build(name: str, model: Path | None, options: Mapping[str, Any]) -> CrawlPolicy:
    """The policy registered as ``name``, with its options validated and its model read."""
    cls = _policy_class(name)
    return cls(_options(cls, options), model)
