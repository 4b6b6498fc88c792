"""One running in-vitro web: the model, its HTTP listeners, the proxy, DNS and the request log.

Role: the composition used in-process by tests (``await start_invitro(...)``) and by
``python -m bench.invitro`` (:mod:`bench.invitro.__main__`). Binding comes first, since the
model needs the port to write its links: every model IP gets a listening socket on one shared
port, then the model is built for that port. The model is the synthetic web of ``WebParams``
or, with ``social=SocialParams(...)``, the social lab (:mod:`bench.invitro.social.web`), or, with
``posting=TimelineParams(...)``, the posting lab's API (:mod:`bench.invitro.timeline`).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.invitro.dns import DnsServer, DnsService, start_dns
from bench.invitro.model import Web, WebModel, WebParams, ip_addresses
from bench.invitro.requestlog import RequestLog
from bench.invitro.server import HttpService, ServerOptions, bind_listeners, serve_sockets
from bench.invitro.social.web import SocialParams, SocialWeb, social_ips
from bench.invitro.timeline import IP as TIMELINE_IP
from bench.invitro.timeline import TimelineParams, TimelineWeb

PROXY_HOST = "127.0.0.1"


@dataclass
class InVitro:
    """A running in-vitro web. ``close()`` stops it and flushes the log."""

    model: Web
    """a :class:`WebModel`, a :class:`SocialWeb` when started with ``social=``, a :class:`TimelineWeb` with ``posting=``"""
    service: HttpService
    port: int
    """the port every model IP listens on"""
    ips: list[str]
    proxy_address: str | None
    """``127.0.0.1:PORT`` of the forward proxy, or None"""
    dns_address: str | None
    """``127.0.0.1:PORT`` of the DNS server (UDP and TCP), or None"""
    seeds: list[str]
    log_path: Path | None
    _servers: list[asyncio.AbstractServer] = field(default_factory=list, repr=False)
    _dns: DnsServer | None = field(default=None, repr=False)

    @property
    def dns(self) -> DnsService | None:
        """The DNS server's answers (``move`` a host) and its query log; None without DNS."""
        return self._dns.service if self._dns is not None else None

    def statistics(self) -> dict[str, Any]:
        """Requests, bytes, connections, statuses, CPU (and per request), DNS queries."""
        stats = asdict(self.service.statistics())
        stats["statuses"] = {str(status): count for status, count in sorted(stats["statuses"].items())}
        stats["cpu_us_per_request"] = 1e6 * stats["cpu_seconds"] / max(1, stats["requests"])
        if self._dns is not None:
            stats["dns"] = asdict(self._dns.service.statistics())
        return stats

    def ready_info(self) -> dict[str, Any]:
        """What ``--ready-file`` holds: how a crawler finds this web (a social lab adds ``sites``)."""
        info: dict[str, Any] = {
            "port": self.port,
            "ips": self.ips,
            "proxy": self.proxy_address,
            "dns": self.dns_address,
            "seeds": self.seeds,
            "domain": self.model.domain,
            "log": str(self.log_path) if self.log_path else None,
            "pid": os.getpid(),
        }
        if isinstance(self.model, WebModel):
            info |= {"hosts": self.model.params.hosts, "params": asdict(self.model.params)}
        elif isinstance(self.model, SocialWeb):
            info |= {"sites": self.model.sites_info(), "params": self.model.params.as_dict()}
        elif isinstance(self.model, TimelineWeb):
            p = self.model.params
            info |= {"posting": {"users": len(p.source.users), "t0": p.t0, "scale": p.scale,
                                 "calls_per_hour": p.calls_per_hour, "origin": self.model.origin}}
        return info

    async def close(self) -> None:
        """Stop listening, close connections, flush the log (calling it again does nothing more)."""
        for server in self._servers:
            server.close()
        if self._dns is not None:
            self._dns.close()
        self.service.close()  # closes open connections and flushes the log
        for server in self._servers:
            await server.wait_closed()
        if self._dns is not None:
            await self._dns.wait_closed()


async def start_invitro(
    params: WebParams | None = None,
    *,
    log_path: str | Path | None = None,
    proxy: bool = True,
    dns: bool = True,
    port: int = 0,
    proxy_port: int = 0,
    dns_port: int = 0,
    dns_ttl: int = 300,
    options: ServerOptions | None = None,
    seeds: int = 10,
    flush_interval: float = 0.5,
    social: SocialParams | None = None,
    posting: TimelineParams | None = None,
) -> InVitro:
    """Start serving the web of ``params`` on loopback (ports 0 = free ones) and return it.

    With ``social``, serve the social lab's sites instead (``params`` must then be None);
    ``seeds`` is then the number of seeds listed per site. With ``posting``, serve the posting
    lab's API instead (its lab clock reads ``posting.t0`` now).
    """
    model: Web
    if (params is not None) + (social is not None) + (posting is not None) > 1:
        raise ValueError("give one of params (the synthetic web), social (the social lab), posting (the posting lab)")
    if posting is not None:
        ips = [TIMELINE_IP]
        port, sockets = bind_listeners(ips, port)
        model = TimelineWeb(posting, port, time.monotonic())
    elif social is not None:
        ips = social_ips(social)
        port, sockets = bind_listeners(ips, port)
        model = SocialWeb(social, port)
    else:
        params = params or WebParams()
        ips = ip_addresses(params)
        port, sockets = bind_listeners(ips, port)
        model = WebModel(params, port)
    log = RequestLog(log_path, flush_interval)
    service = HttpService(model, options or ServerOptions(), log)
    proxy_address = None
    servers: list[asyncio.AbstractServer] = []
    try:
        servers += await serve_sockets(service, sockets)
        if proxy:
            chosen, proxy_sockets = bind_listeners([PROXY_HOST], proxy_port)
            servers += await serve_sockets(service, proxy_sockets)
            proxy_address = f"{PROXY_HOST}:{chosen}"
        dns_server = await start_dns(model, PROXY_HOST, dns_port, dns_ttl) if dns else None
    except BaseException:  # a port taken, say: release what was bound
        for server in servers:
            server.close()
        for sock in sockets:
            sock.close()
        log.close()
        raise
    service.start(asyncio.get_running_loop())
    return InVitro(
        model,
        service,
        port,
        ips,
        proxy_address,
        dns_server.address if dns_server else None,
        model.seeds(seeds),
        Path(log_path) if log_path is not None else None,
        servers,
        dns_server,
    )
