"""The ``crawl`` command: ``crawl run`` crawls, ``crawl invitro`` serves the in-vitro web.

With no seeds, ``crawl run`` starts the in-vitro web (``python -m bench.invitro``) in a
child process, points DNS at its loopback DNS server, allows 127.0.0.0/8 (saying so), and
crawls it for a short while. Configuration errors print one line naming the key and exit 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from engine import config as configuration
from engine.config import Config, ConfigError

DEMO_SECONDS = 30.0
DEMO_HOSTS = 400


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"crawl: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="crawl", description="A BUbiNG-style polite web crawler.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="crawl (the in-vitro web when no seeds are given)")
    run.add_argument("-c", "--config", type=Path, help="a crawl.toml file; built-in defaults are those listed in crawl.toml")
    run.add_argument("--seeds", type=Path, help="file of seed URLs, one per line (# starts a comment)")
    run.add_argument("--out", help="output folder (store.dir)")
    run.add_argument("--proxy", help="HTTP proxy URL (network.proxy)")
    run.add_argument("--dns", help="DNS server HOST:PORT (dns.servers)")
    run.add_argument("--max-pages", type=int, help="stop after N pages (engine.max_pages)")
    run.add_argument("--max-seconds", type=float, help="stop after S seconds (engine.max_seconds)")
    run.add_argument("--control", metavar="HOST:PORT", help="serve the control API there (control.listen)")
    run.add_argument("--processes", type=int, help="agent processes (engine.processes; 0 = one per core)")
    run.add_argument("--resume", action="store_true",
                     help="continue the crawl in the output folder (after a stop, a crash or a reboot); "
                          "starts a new one if the folder holds none")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a crawl.toml key")
    invitro = commands.add_parser("invitro", help="serve the in-vitro web and its DNS on loopback", add_help=False)
    invitro.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def read_seeds(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ConfigError("--seeds", f"cannot read {path}: {e.strerror}") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def make_config(args: argparse.Namespace) -> Config:
    overrides = list(args.set)
    flags = {
        "store.dir": args.out,
        "network.proxy": args.proxy,
        "engine.max_pages": args.max_pages,
        "engine.max_seconds": args.max_seconds,
        "engine.processes": args.processes,
        "control.listen": args.control,
    }
    for key, value in flags.items():
        if value is not None:
            overrides.insert(0, f"{key}={orjson.dumps(value).decode()}")
    if args.dns is not None:
        overrides.insert(0, f"dns.servers={orjson.dumps([args.dns]).decode()}")
    return configuration.load(args.config, overrides)


def start_invitro(out: Path) -> tuple[subprocess.Popen[bytes], dict]:
    """Start the in-vitro web in a child process (the demo crawl's target)."""
    from bench.invitro.process import spawn

    folder = out / "invitro"
    try:
        return spawn(folder, ["--hosts", str(DEMO_HOSTS), "--seeds", str(DEMO_HOSTS),
                              "--log", str(folder / "requests.jsonl")])
    except RuntimeError as e:
        raise SystemExit(f"crawl: error: {e}") from None


def run(args: argparse.Namespace) -> int:
    from engine.supervisor import CrawlFolderError, prepare_folder, supervise

    try:
        config = make_config(args)
        seeds = list(config.engine.seeds) + (read_seeds(args.seeds) if args.seeds else [])
        config.store.dir = str(config.out_dir.resolve())
        agents, resuming = prepare_folder(config.out_dir, config.engine.processes, args.resume)
    except ConfigError as e:
        sys.stderr.write(f"crawl: config error: {e}\n")
        return 2
    except CrawlFolderError as e:
        sys.stderr.write(f"crawl: error: {e}\n")
        return 2
    child = None
    if not seeds:
        child, web = start_invitro(config.out_dir)
        seeds = web["seeds"]
        config.dns.servers = [web["dns"]]
        config.network.allow_networks = [*config.network.allow_networks, "127.0.0.0/8"]
        if not config.engine.max_seconds and not config.engine.max_pages:
            config.engine.max_seconds = DEMO_SECONDS
        print(
            f"no seeds given: crawling the in-vitro web ({web['hosts']} hosts on {len(web['ips'])} loopback IPs, "
            f"DNS {web['dns']}) for {config.engine.max_seconds or '-'} s; network.allow_networks += 127.0.0.0/8",
            file=sys.stderr,
        )
    from engine.progress import summary_text

    try:
        summary, status = supervise(config, seeds, agents, resuming=resuming)
        print(summary_text(summary), file=sys.stderr)
        print(f"output: {config.out_dir}/warc (WARC files), {config.out_dir}/stats.json", file=sys.stderr)
    finally:
        if child is not None:
            child.send_signal(signal.SIGTERM)
            child.wait(timeout=30)
    return status  # 0, 1 (an agent kept failing) or 3 (the store is full: engine/supervisor.py)


def invitro(argv: list[str]) -> int:
    os.execv(sys.executable, [sys.executable, "-m", "bench.invitro", *argv])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["invitro"]:
        return invitro(argv[1:])
    if argv[:1] == ["warc"]:
        from engine.warc_cli import main as warc_main
        return warc_main(argv[1:])
    args = build_parser().parse_args(argv)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
