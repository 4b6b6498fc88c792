"""robots.txt on the wire: redirects are followed politely (RFC 9309), one hop per polite access."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.invitro_harness import run_crawl

HOST_DELAY = 0.2
PAGES = {
    "/robots.txt": (301, b"", {"Location": "/policies/robots-moved.txt"}),
    "/policies/robots-moved.txt": (302, b"", {"Location": "http://127.0.0.1:{port}/robots-final.txt"}),
    "/robots-final.txt": (200, b"User-agent: *\nDisallow: /secret\n", {"Content-Type": "text/plain"}),
    "/": (200, b'<a href="/open">open</a> <a href="/secret/page">secret</a>', {"Content-Type": "text/html"}),
    "/open": (200, b"<p>nothing here</p>", {"Content-Type": "text/html"}),
    "/secret/page": (200, b"<p>hidden</p>", {"Content-Type": "text/html"}),
}


class Handler(BaseHTTPRequestHandler):
    log: list[tuple[float, float, str]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        start = time.monotonic()
        status, body, headers = PAGES.get(self.path, (404, b"", {}))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value.format(port=self.server.server_address[1]))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        end = time.monotonic()  # before the body is written: the client cannot finish earlier
        self.end_headers()
        self.wfile.write(body)
        Handler.log.append((start, end, self.path))

    def log_message(self, format: str, *args: object) -> None:
        return


def test_robots_redirects_are_followed_one_polite_hop_at_a_time(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        result = run_crawl(tmp_path / "out", [f"http://127.0.0.1:{port}/"], dns=None,
                           settings=[f"politeness.host_delay={HOST_DELAY}", "politeness.ip_delay=0"])
    finally:
        server.shutdown()
        server.server_close()
    paths = [p for _, _, p in sorted(Handler.log)]
    assert paths == ["/robots.txt", "/policies/robots-moved.txt", "/robots-final.txt", "/", "/open"]
    gaps = [b[0] - a[1] for a, b in zip(sorted(Handler.log), sorted(Handler.log)[1:])]
    assert min(gaps) >= HOST_DELAY, "each redirect hop must be a polite access"
    assert result.stats["robots_disallowed"] == 1 and result.stats["robots"] == 3
