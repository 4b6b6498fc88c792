"""``python -m bench.invitro``: serve the in-vitro web until SIGTERM or SIGINT.

Role: the process the crawler's CLI (``crawl run`` with no seeds, ``crawl invitro``) and
``bench/crawl_bench.py`` start. It prints one line per service address, writes the ready file
(``--ready-file``, JSON, atomically: its existence means "ready"), serves, and on
SIGTERM/SIGINT stops, flushes the request log, prints a statistics line (also written to
``--stats``) and exits 0.

    python -m bench.invitro --hosts 400 --ready-file /tmp/ready.json --log /tmp/requests.jsonl
    python -m bench.invitro --set frac_slow=0.05 --set robots_crawl_delay=2 --no-keepalive
    python -m bench.invitro --social blog,forum --social-seed 3 --site-knob blog.reply_share=1.0
    python -m bench.invitro labels --hosts 400 --spam-share 0.2 --out hosts.csv

``labels`` serves nothing: it writes the web's ground truth about spam, a CSV ``host,label,kind``
with one row per host (label 1 for spam, 0 for good; kind ``farm``, ``stuffed``, ``generated``
or empty), for the web the same options would serve.

With ``--social`` it serves the social lab (``bench/invitro/social/``) instead of the synthetic
web; the ready file then also holds ``sites: {name: {domain, seeds}}``.

With ``--posting USERS`` it serves the posting lab's API (``bench/invitro/timeline.py``) for a
population of USERS users drawn by ``bench/invitro/posting.py`` (``--posting-seed``); the ready
file then also holds ``posting: {users, t0, scale, calls_per_hour, origin}``:

    python -m bench.invitro --posting 500 --lab-scale 3600 --calls-per-hour 150 --log /tmp/api.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Coroutine
from dataclasses import fields
from pathlib import Path
from typing import Any

import orjson

from bench.invitro.app import InVitro, start_invitro
from bench.invitro.model import WebModel, WebParams
from bench.invitro.server import ServerOptions
from bench.invitro.social.web import SocialParams, SocialWeb, parse_knobs
from bench.invitro.timeline import PostSource, TimelineParams


_NAMED = ("hosts", "hosts_per_ip", "mean_pages", "mean_links", "seed", "spam_share")


def add_web_options(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("the web (any WebParams field can also be given with --set)")
    model.add_argument("--hosts", type=int)
    model.add_argument("--hosts-per-ip", type=int)
    model.add_argument("--mean-pages", type=float)
    model.add_argument("--mean-links", type=float)
    model.add_argument("--seed", type=int)
    model.add_argument("--spam-share", type=float, help="share of hosts that are spam (bench/invitro/spam.py)")
    model.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a WebParams field")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.invitro", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_web_options(parser)
    social = parser.add_argument_group("the social lab instead of the synthetic web")
    social.add_argument("--social", metavar="SITES", help="serve these lab sites, comma-separated (blog,forum,...)")
    social.add_argument("--social-seed", type=int, default=1, help="the lab's seed")
    social.add_argument("--site-knob", action="append", default=[], metavar="SITE.KEY=VALUE",
                        help="a site's knob, e.g. blog.reply_share=1.0")
    posting = parser.add_argument_group("the posting lab's API instead of the synthetic web")
    posting.add_argument("--posting", type=int, metavar="USERS", help="serve the timeline API of this many users")
    posting.add_argument("--posting-seed", type=int, default=0, help="the population's seed")
    posting.add_argument("--lab-t0", type=float, default=1_700_000_000.0, help="the lab clock's unix time at start")
    posting.add_argument("--lab-scale", type=float, default=3600.0, help="lab seconds per wall second")
    posting.add_argument("--calls-per-hour", type=int, default=150, help="timeline calls per token per lab hour")
    posting.add_argument("--max-count", type=int, default=200, help="the largest count a call may ask for")
    serve = parser.add_argument_group("serving")
    serve.add_argument("--port", type=int, default=0, help="port on every model IP (0: a free one)")
    serve.add_argument("--proxy-port", type=int, default=0, help="forward proxy port on 127.0.0.1 (0: a free one)")
    serve.add_argument("--no-proxy", action="store_true", help="no forward proxy listener")
    serve.add_argument("--dns-port", type=int, default=0, help="DNS port on 127.0.0.1, UDP and TCP (0: a free one)")
    serve.add_argument("--dns-ttl", type=int, default=300)
    serve.add_argument("--no-dns", action="store_true", help="no DNS server")
    serve.add_argument("--no-keepalive", action="store_true", help="Connection: close on every response")
    serve.add_argument("--no-gzip", action="store_true", help="never gzip bodies")
    serve.add_argument("--chunked", action="store_true", help="Transfer-Encoding: chunked bodies")
    serve.add_argument("--bandwidth", type=float, default=0.0, help="total bytes/s cap (0: none)")
    serve.add_argument("--idle-timeout", type=float, default=30.0, help="close idle connections after seconds")
    serve.add_argument("--stop-at-stdin-end", action="store_true",
                       help="stop as on SIGTERM once stdin ends (a parent holding a pipe to it died, even by kill -9)")
    out = parser.add_argument_group("output")
    out.add_argument("--log", type=Path, help="request log, JSON lines")
    out.add_argument("--ready-file", type=Path, help="JSON written when serving: port, ips, proxy, dns, seeds, …")
    out.add_argument("--stats", type=Path, help="JSON statistics written at exit")
    out.add_argument("--seeds", type=int, default=10, help="seeds listed: home pages of the first N hosts")
    return parser


def make_params(args: argparse.Namespace, parser: argparse.ArgumentParser) -> WebParams:
    """WebParams from the named flags and ``--set key=value`` (types from the dataclass)."""
    types = WebParams.field_types()
    values: dict[str, Any] = {}
    for flag in _NAMED:
        if getattr(args, flag) is not None:
            values[flag] = getattr(args, flag)
    for item in args.set:
        key, equals, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not equals or key not in types:
            known = ", ".join(f.name for f in fields(WebParams))
            parser.error(f"--set {item}: expected KEY=VALUE with KEY one of {known}")
        try:
            values[key] = types[key](text.strip())
        except ValueError:
            parser.error(f"--set {item}: {text!r} is not a {types[key].__name__}")
    try:
        return WebParams(**values)
    except ValueError as e:
        parser.error(str(e))


def make_social(args: argparse.Namespace, parser: argparse.ArgumentParser) -> SocialParams | None:
    """SocialParams from ``--social``, ``--social-seed`` and ``--site-knob``; None without ``--social``."""
    if not args.social:
        if args.site_knob:
            parser.error("--site-knob needs --social")
        return None
    try:
        social = SocialParams(tuple(s.strip() for s in args.social.split(",")), args.social_seed,
                              parse_knobs(args.site_knob))
        SocialWeb(social, 0)  # a site refuses an unknown knob here, not after binding
    except ValueError as e:
        parser.error(str(e))
    return social


def write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)


def describe(web: InVitro) -> list[str]:
    ips = web.ips
    span = ips[0] if len(ips) == 1 else f"{ips[0]} … {ips[-1]}"
    info = web.ready_info()
    if "sites" in info:
        what = f"sites {', '.join(info['sites'])}"
    elif "posting" in info:
        what = f"the posting API, {info['posting']['users']} users"
    else:
        what = f"{info['hosts']} hosts"
    lines = [f"invitro: http  {span} port {web.port}: {what} on {len(ips)} IPs"]
    if web.proxy_address:
        lines.append(f"invitro: proxy {web.proxy_address} (GET http://host:port/path)")
    if web.dns_address:
        lines.append(f"invitro: dns   {web.dns_address} (UDP and TCP, *.{web.model.domain})")
    if web.seeds:
        lines.append(f"invitro: seed  {web.seeds[0]} (+{len(web.seeds) - 1} more)")
    if web.log_path:
        lines.append(f"invitro: log   {web.log_path}")
    return lines


def make_posting(args: argparse.Namespace, parser: argparse.ArgumentParser) -> TimelineParams | None:
    """TimelineParams from ``--posting`` and its options over ``bench/invitro/posting.py``'s population."""
    if args.posting is None:
        return None
    if args.social:
        parser.error("--posting and --social: serve one lab at a time")
    try:  # imported by name: the population is a module of its own, maybe absent from a trimmed install
        module = importlib.import_module("bench.invitro.posting")
        source: PostSource = module.Population(module.PostingParams(users=args.posting, seed=args.posting_seed))
        return TimelineParams(source, t0=args.lab_t0, scale=args.lab_scale, calls_per_hour=args.calls_per_hour,
                              max_count=args.max_count)
    except (ImportError, ValueError) as e:
        parser.error(f"--posting: {e}")


async def serve(args: argparse.Namespace, params: WebParams | None, social: SocialParams | None = None,
                posting: TimelineParams | None = None) -> int:
    options = ServerOptions(
        keepalive=not args.no_keepalive,
        gzip=not args.no_gzip,
        chunked=args.chunked,
        bandwidth=args.bandwidth,
        idle_timeout=args.idle_timeout,
    )
    web = await start_invitro(
        params,
        log_path=args.log,
        proxy=not args.no_proxy,
        dns=not args.no_dns,
        port=args.port,
        proxy_port=args.proxy_port,
        dns_port=args.dns_port,
        dns_ttl=args.dns_ttl,
        options=options,
        seeds=args.seeds,
        social=social,
        posting=posting,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if args.stop_at_stdin_end:
        def read_stdin() -> None:
            if not os.read(sys.stdin.fileno(), 4096):
                loop.remove_reader(sys.stdin.fileno())
                stop.set()
        loop.add_reader(sys.stdin.fileno(), read_stdin)
    if args.ready_file:
        write_atomically(args.ready_file, orjson.dumps(web.ready_info(), option=orjson.OPT_INDENT_2))
    print("\n".join(describe(web)), flush=True)  # after the ready file: a reader of stdout may rely on it
    await stop.wait()
    stats = web.statistics()
    await web.close()
    line = orjson.dumps(stats)
    print(f"invitro: stats {line.decode()}", flush=True)
    if args.stats:
        write_atomically(args.stats, line)
    return 0


def run(main: Coroutine[Any, Any, int]) -> int:
    """Run on uvloop when it is installed (it is a project dependency), else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(main)
    return uvloop.run(main)


def labels(argv: list[str]) -> int:
    """``labels [web options] --out FILE``: the ground truth of the web, one CSV row per host."""
    parser = argparse.ArgumentParser(prog="python -m bench.invitro labels", description=labels.__doc__)
    add_web_options(parser)
    parser.add_argument("--out", type=Path, required=True, help="the CSV to write (host,label,kind)")
    args = parser.parse_args(argv)
    web = WebModel(make_params(args, parser), 0)
    kinds = {host: web.spam_kind(host) for host in web.hosts()}
    rows = ["host,label,kind", *(f"{host},{0 if kind is None else 1},{kind or ''}" for host, kind in kinds.items())]
    write_atomically(args.out, ("\n".join(rows) + "\n").encode())
    spam = sum(kind is not None for kind in kinds.values())
    print(f"invitro: labels {args.out}: {len(kinds)} hosts, {spam} spam", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["labels"]:
        return labels(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    social = make_social(args, parser)
    posting = make_posting(args, parser)
    params = make_params(args, parser)
    return run(serve(args, None if social or posting else params, social, posting))


if __name__ == "__main__":
    sys.exit(main())
