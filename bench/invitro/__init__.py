"""The in-vitro web: a synthetic web served over real sockets on loopback, with its own DNS.

Role: what the crawler's tests and benchmarks crawl (ARCHITECTURE.md, ``bench/invitro/``),
after BUbiNG's ``NamedGraphServerHttpProxy`` (peers.md §1.3, §6 item 1), improved: named hosts
sharing IPs, a real DNS server, keep-alive, gzip, redirects, robots.txt variants, binary
files, slow responses and a request log with monotonic times.

Modules, by role:

- :mod:`~bench.invitro.model`: the web itself, pure and deterministic (``WebParams``,
  ``WebModel.respond``); any process with the same parameters and port computes the same bytes;
- :mod:`~bench.invitro.page`: writes one HTML page, its links and markup in one pass (hot path);
- :mod:`~bench.invitro.html`: the prebuilt text blocks, head and footer that pages are made of;
- :mod:`~bench.invitro.spam`: spam hosts with ground truth (``spam_share``): link farms, keyword
  stuffing and generated text on farms of hosts that share IPs; ``python -m bench.invitro labels``
  writes the truth as a CSV;
- :mod:`~bench.invitro.server`: the HTTP/1.1 origin server and forward proxy (asyncio.Protocol);
- :mod:`~bench.invitro.dns`: A records for the model's hosts, UDP and TCP;
- :mod:`~bench.invitro.requestlog`: the JSON-lines request log and ``read_log``;
- :mod:`~bench.invitro.app`: ``start_invitro`` puts them together in-process;
- ``python -m bench.invitro``: the same as a process with a ready file (see ``__main__``);
- ``python -m bench.invitro.loadtest``: how many requests/s, and how much CPU each, it costs;
- :mod:`~bench.invitro.posting`: a population of social-network users who post over time (issue
  15), the ground truth of the freshness simulator (``bench/freshness``) and the lab's posting mode;
- :mod:`~bench.invitro.timeline`: the posting lab, an API host whose users post on a lab clock
  (timelines with ETag and 304, per-token rate limits with 429), served with
  ``start_invitro(posting=TimelineParams(...))`` or ``python -m bench.invitro --posting USERS``;
- :mod:`~bench.invitro.social`: the social lab, synthetic social websites with a ground truth,
  served instead of the synthetic web with ``start_invitro(social=SocialParams(...))`` or
  ``python -m bench.invitro --social blog,forum``.

All traffic stays on 127.0.0.0/8: the model's IPs are checked to lie there.
"""

from bench.invitro.app import InVitro, start_invitro
from bench.invitro.dns import DnsServer, start_dns
from bench.invitro.model import HostInfo, Response, WebModel, WebParams, ip_addresses
from bench.invitro.requestlog import LogRecord, read_log
from bench.invitro.server import ServerOptions, ServerStatistics

__all__ = [
    "DnsServer",
    "HostInfo",
    "InVitro",
    "LogRecord",
    "Response",
    "ServerOptions",
    "ServerStatistics",
    "WebModel",
    "WebParams",
    "ip_addresses",
    "read_log",
    "start_dns",
    "start_invitro",
]
