"""The live dashboard's web side: the page's files, the login form and the cookie (``engine/control.py``).

The page (``index.html``, ``dashboard.js``, ``chart.js``, ``dashboard.css`` in this package,
hand-written, no build step and nothing from a CDN) is served by the control API at ``/`` and
``/dashboard/NAME``, and draws the crawl from the API's own JSON: ``GET /status`` and
``GET /timeline`` once a second, ``GET /hosts`` every few seconds, ``GET /config`` for the
form, which sends ``PATCH /config`` (its errors are the API's, word for word). It polls only
while it is visible: a hidden tab, like no tab, costs the crawl nothing.

The files hold no data and are served to anyone; the data and the commands need the token.
A browser proves it holds the token once (``/?token=T``, or the form :func:`login_page`
posts to ``/login``) and gets a cookie, :func:`session_cookie`: a value derived from the token
(an HMAC, so the token itself never sits in the browser), ``HttpOnly`` (no script reads it),
``SameSite=Strict`` (no other site's page sends it), named after the port (two crawls on one
host keep their own; cookies do not tell ports apart).
"""

from __future__ import annotations

import hashlib
import hmac
from html import escape
from importlib import resources

__all__ = ["ASSETS", "HEADERS", "asset", "cookie_name", "cookie_value", "login_page", "session_cookie"]

# name -> content type of the files served under /dashboard/
ASSETS = {
    "index.html": "text/html",
    "dashboard.js": "text/javascript",
    "chart.js": "text/javascript",
    "dashboard.css": "text/css",
}
# on every page: scripts and styles from this server only, no framing (the buttons stop a crawl), no referrer
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def asset(name: str) -> bytes:
    """The bytes of one of :data:`ASSETS`, read from the installed package."""
    return resources.files(__name__).joinpath(name).read_bytes()


def cookie_name(port: int) -> str:
    return f"crawl-dashboard-{port}"


def cookie_value(token: bytes) -> str:
    """What the cookie holds: derived from the token, so whoever reads the cookie does not learn the token."""
    return hmac.new(token, b"crawl dashboard session", hashlib.sha256).hexdigest()


def session_cookie(port: int, token: bytes) -> str:
    """The ``Set-Cookie`` value that lets a browser in (a session cookie: it ends with the browser)."""
    return f"{cookie_name(port)}={cookie_value(token)}; Path=/; HttpOnly; SameSite=Strict"


def login_page(problem: str = "") -> bytes:
    """The form ``/`` answers a browser without the cookie with (status 401); it posts the token to ``/login``."""
    note = f'<p class="problem">{escape(problem)}</p>' if problem else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>crawl: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><link rel="stylesheet" href="/dashboard/dashboard.css"></head>
<body class="login"><form method="post" action="/login">
<h1>crawl</h1>{note}
<label>Control token <input type="password" name="token" autocomplete="current-password" autofocus required></label>
<button type="submit">Open the dashboard</button>
<p class="hint">The token of <code>control.token</code> or <code>CRAWL_CONTROL_TOKEN</code>.</p>
</form></body></html>
""".encode()
