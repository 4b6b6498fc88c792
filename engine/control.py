"""The control API: steer a running crawl over HTTP (BUbiNG's JMX, Heritrix's REST console).

Off unless asked for (``crawl run --control HOST:PORT`` or ``control.listen``). Every request
needs ``Authorization: Bearer <token>``, the token from ``control.token`` or the
``CRAWL_CONTROL_TOKEN`` environment variable (:func:`token_for`); the server refuses to start
without one. It listens on loopback only unless ``control.allow_remote = true``: the address
is checked before anything is bound.

=======  ===========  ==============================================================
method   path         what
=======  ===========  ==============================================================
GET      /            the live dashboard (``engine/dashboard/``), for a browser
GET      /status      the status dict (``engine/metrics.py``) as JSON
GET      /metrics     Prometheus text exposition of the same
GET      /timeline    ``?since=T``: the points of the crawl's timeline after ``t = T`` (the last
                      :data:`TIMELINE_POINTS` at most), sampled once a second by the supervisor
GET      /hosts       the hosts with the most pages fetched: ``[{"host", "pages", "queued", "agent"}]``
GET      /config      the current values of :data:`LIVE_KEYS`
POST     /pause       start no more fetches; answers once none is in flight → ``{"paused": true}``
POST     /resume      start again; → ``{"paused": false}``
POST     /seeds       ``{"urls": [...]}`` → ``{"received": n, "accepted": k}``
PATCH    /config      ``{"politeness.host_delay": 1.5, ...}`` (keys of :data:`LIVE_KEYS`)
                      → the new values; 422 ``{"error", "key"}`` for a bad key or value
POST     /stop        end the crawl as SIGTERM does; → ``{"stopping": true}``
=======  ===========  ==============================================================

Errors are JSON ``{"error": "..."}``: 400 for a body that is not the JSON expected, 401
without the right token, 403 for a change the cookie alone authorizes (below), 404/405 for
unknown paths and methods, 422 for a :class:`~engine.config.ConfigError` (with its ``key``).

A browser gets in without the header (``engine/dashboard/__init__.py``): ``/?token=T`` once, or
the login form that ``/`` answers with a 401, sets an ``HttpOnly; SameSite=Strict`` cookie and
redirects to ``/``. The cookie is accepted for every path; a request that changes something
must also carry the header ``X-Crawl-Dashboard`` (the page's own ``fetch`` sends it), which no
other page can send without a CORS preflight this server never grants: SameSite=Strict keeps
other sites out, but not another port of the same host, which browsers count as the same site.

The server drives a :class:`Controllable`: an agent in a one-process crawl, or the parent
that fans each call out to its agents.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import orjson
from aiohttp import web

from engine import config as configuration
from engine import dashboard
from engine.config import Config, ConfigError
from engine.metrics import CONTENT_TYPE

__all__ = ["LIVE_KEYS", "TIMELINE_POINTS", "TOKEN_ENV", "Controllable", "ControlServer", "live_changes",
           "live_values", "token_for"]

TOKEN_ENV = "CRAWL_CONTROL_TOKEN"
TIMELINE_POINTS = 900  # at most this many points per GET /timeline: the last quarter of an hour
DASHBOARD_HEADER = "X-Crawl-Dashboard"  # what a cookie-authenticated change must carry (no other page can send it)

# What PATCH /config may change while the crawl runs; everything else needs a restart.
LIVE_KEYS = (
    "engine.fetchers",
    "engine.max_pages",
    "engine.max_seconds",
    "politeness.host_delay",
    "politeness.ip_delay",
    "filters.schedule",
    "filters.fetch",
    "filters.parse",
    "filters.follow",
    "filters.store",
)


class Controllable(Protocol):
    """What the control API steers: the crawl's parent process (or a lone agent).

    ``pause`` returns once no fetch is in flight anywhere (fetches in progress complete and
    are stored); ``patch_config`` once every agent applies the changes (checked by
    :func:`live_changes` already), returning the new values; ``add_seeds`` routes each URL
    to the agent owning its host and returns how many were valid; ``stop`` ends the crawl
    as SIGTERM does. ``top_hosts`` asks the agents for their hosts with the most pages
    (work done only while someone asks), ``config`` and ``timeline`` are read as they are.
    """

    @property
    def config(self) -> Config: ...

    @property
    def timeline(self) -> Sequence[Mapping[str, float]]: ...  # engine.progress.sample, once a second, t ascending

    def status(self) -> dict[str, Any]: ...  # JSON-able, the shape engine/metrics.py reads

    def metrics(self) -> bytes: ...  # Prometheus text exposition (engine.metrics.Exporter)

    async def top_hosts(self) -> list[dict[str, Any]]: ...  # [{"host", "pages", "queued", "agent"}], most pages first

    async def pause(self) -> None: ...

    async def resume(self) -> None: ...

    async def add_seeds(self, urls: list[str]) -> int: ...

    async def patch_config(self, changes: dict[str, Any]) -> dict[str, Any]: ...

    async def stop(self) -> None: ...


class _BadRequest(Exception):
    """A request body that is not what the endpoint expects (400)."""


def token_for(configured: str, environ: Mapping[str, str] = os.environ) -> str:
    """The bearer token: ``control.token`` if set, else ``$CRAWL_CONTROL_TOKEN``, else empty."""
    return configured or environ.get(TOKEN_ENV, "")


def live_changes(changes: object) -> dict[str, Any]:
    """Check a PATCH /config body: known live keys, values of the right type and range.

    Returns the values as the configuration holds them (``3`` → ``3.0`` for a float key);
    raises :class:`ConfigError` naming the first bad key (a 400 if ``changes`` is no JSON
    object). Ranges and filter syntax are checked by ``engine.config.validate`` on a default
    configuration carrying the changes, so no check is written twice; the target applies
    the changes to its own configuration.
    """
    if not isinstance(changes, dict) or not changes:
        raise _BadRequest('expected a JSON object of settings, e.g. {"politeness.host_delay": 1.5}')
    probe = Config()
    for key, value in changes.items():
        if key not in LIVE_KEYS:
            raise ConfigError(key, f"cannot be changed while the crawl runs (live keys: {', '.join(LIVE_KEYS)})")
        section, name = key.split(".")
        configuration.apply(probe, {section: {name: value}}, "PATCH /config")
    configuration.validate(probe)
    return live_values(probe, list(changes))


def live_values(config: Config, keys: Sequence[str] = LIVE_KEYS) -> dict[str, Any]:
    """``{"section.name": value}`` of ``config`` for ``keys``, as ``crawl.toml`` would write them."""
    tables = configuration.describe(config)
    return {key: tables[key.split(".")[0]][key.split(".")[1]] for key in keys}


def _split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    host = host.strip("[]")  # [::1]:8080
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError("control.listen", f"expected HOST:PORT such as 127.0.0.1:8089, got {listen!r}")
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost could resolve anywhere


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


class ControlServer:
    """The control API on ``listen`` (HOST:PORT; port 0 picks a free one, see ``address``)."""

    def __init__(self, listen: str, token: str, target: Controllable, *, allow_remote: bool = False) -> None:
        self.host, self.port = _split_listen(listen)
        if not token:
            raise ConfigError("control.token", f"the control API needs a bearer token: set control.token or {TOKEN_ENV}")
        if not allow_remote and not _is_loopback(self.host):
            raise ConfigError(
                "control.listen",
                f"{self.host} is not a loopback address; set control.allow_remote = true to serve the control API "
                "beyond this machine",
            )
        self._token = token.encode()
        self._cookie = dashboard.cookie_value(self._token).encode()
        self.target = target
        app = web.Application(middlewares=[self._errors, self._authorize])
        app.add_routes([
            web.get("/", self._page),
            web.post("/login", self._login),
            web.get("/dashboard/{name}", self._asset),
            web.get("/status", self._status),
            web.get("/metrics", self._metrics),
            web.get("/timeline", self._timeline),
            web.get("/hosts", self._hosts),
            web.get("/config", self._get_config),
            web.post("/pause", self._pause),
            web.post("/resume", self._resume),
            web.post("/seeds", self._seeds),
            web.patch("/config", self._config),
            web.post("/stop", self._stop),
        ])
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        self.address: tuple[str, int] | None = None  # (host, port) once started

    @property
    def url(self) -> str:
        assert self.address is not None, "not started"
        host, port = self.address
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.address = (host, port)

    async def close(self) -> None:
        await self._runner.cleanup()

    # -- middleware --------------------------------------------------------------------------

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every error as JSON, whatever raised it."""
        try:
            return await handler(request)
        except web.HTTPException as e:  # the router's 404 and 405, and 401 below
            if e.status < 400:
                raise
            response = _json({"error": e.reason}, e.status)
            if e.status == 401:
                response.headers["WWW-Authenticate"] = 'Bearer realm="crawl"'
            return response
        except _BadRequest as e:
            return _json({"error": str(e)}, 400)
        except ConfigError as e:
            return _json({"error": str(e), "key": e.key}, 422)

    @web.middleware
    async def _authorize(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/dashboard/") or request.path == "/login":
            return await handler(request)  # the page's files hold no data; /login checks the token itself
        if "token" in request.query and request.path == "/":
            return self._enter(request.query["token"])
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self._right(token.strip()):
            return await handler(request)
        cookie = request.cookies.get(dashboard.cookie_name(self.port_bound), "")
        if cookie and hmac.compare_digest(cookie.encode(), self._cookie):
            if request.method in ("GET", "HEAD") or DASHBOARD_HEADER in request.headers:
                return await handler(request)
            raise web.HTTPForbidden(reason=f"a change authorized by the cookie must carry {DASHBOARD_HEADER}")
        if request.path == "/" and request.method == "GET":
            return self._login_page()
        raise web.HTTPUnauthorized(reason="a valid bearer token is required")

    def _right(self, token: str) -> bool:
        # compare_digest: the time taken does not tell how much of a guess was right
        return hmac.compare_digest(token.encode(), self._token)

    @property
    def port_bound(self) -> int:
        assert self.address is not None, "not started"
        return self.address[1]

    def _enter(self, token: str) -> web.Response:
        """The answer to a browser showing ``token``: the cookie and a redirect to ``/`` (which takes
        the token off the address bar), or the form again."""
        if not self._right(token):
            return self._login_page("That token is not the control API's.")
        response = web.Response(status=303, headers={"Location": "/", **dashboard.HEADERS})
        response.headers["Set-Cookie"] = dashboard.session_cookie(self.port_bound, self._token)
        return response

    def _login_page(self, problem: str = "") -> web.Response:
        return web.Response(body=dashboard.login_page(problem), status=401, content_type="text/html",
                            headers={**dashboard.HEADERS, "WWW-Authenticate": 'Bearer realm="crawl"'})

    # -- handlers ----------------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(body=dashboard.asset("index.html"), content_type="text/html", headers=dashboard.HEADERS)

    async def _login(self, request: web.Request) -> web.Response:
        form = await request.post()
        token = form.get("token")
        return self._enter(token if isinstance(token, str) else "")

    async def _asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in dashboard.ASSETS:
            raise web.HTTPNotFound(reason=f"no file {name} in the dashboard")
        return web.Response(body=dashboard.asset(name), content_type=dashboard.ASSETS[name], headers=dashboard.HEADERS)

    async def _status(self, request: web.Request) -> web.Response:
        return _json(self.target.status())

    async def _timeline(self, request: web.Request) -> web.Response:
        try:
            since = float(request.query.get("since", "-inf"))
        except ValueError:
            raise _BadRequest("since: expected a number of seconds, e.g. ?since=12.5") from None
        timeline = self.target.timeline
        start = len(timeline)  # the points are in time order: walk back from the end, never over the whole crawl
        while start > 0 and timeline[start - 1]["t"] > since and len(timeline) - start < TIMELINE_POINTS:
            start -= 1
        return _json(list(timeline[start:]))

    async def _hosts(self, request: web.Request) -> web.Response:
        return _json(await self.target.top_hosts())

    async def _get_config(self, request: web.Request) -> web.Response:
        return _json(live_values(self.target.config))

    async def _metrics(self, request: web.Request) -> web.Response:
        response = web.Response(body=self.target.metrics())
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    async def _pause(self, request: web.Request) -> web.Response:
        await self.target.pause()
        return _json({"paused": True})

    async def _resume(self, request: web.Request) -> web.Response:
        await self.target.resume()
        return _json({"paused": False})

    async def _seeds(self, request: web.Request) -> web.Response:
        body = await _body(request)
        urls = body.get("urls") if isinstance(body, dict) else None
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise _BadRequest('expected {"urls": ["http://...", ...]}')
        accepted = await self.target.add_seeds(urls)
        return _json({"received": len(urls), "accepted": accepted})

    async def _config(self, request: web.Request) -> web.Response:
        changes = live_changes(await _body(request))
        return _json(await self.target.patch_config(changes))

    async def _stop(self, request: web.Request) -> web.Response:
        await self.target.stop()
        return _json({"stopping": True})


async def _body(request: web.Request) -> Any:
    try:
        return orjson.loads(await request.read())
    except orjson.JSONDecodeError as e:
        raise _BadRequest(f"the body is not JSON: {e}") from None

