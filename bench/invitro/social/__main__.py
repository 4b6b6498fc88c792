"""``python -m bench.invitro.social``: a lab site's census, or a crawl's score, as JSON.

Role: the command-line face of :mod:`~bench.invitro.social.census` and
:mod:`~bench.invitro.social.score`, for reports and for checking a site by hand. It reads the
lab's parameters and request logs; it serves nothing and opens no socket.

    python -m bench.invitro.social census blog --knob blog.reply_share=1
    python -m bench.invitro.social score requests.jsonl --site blog --baseline bfs.jsonl --census
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from bench.invitro.requestlog import read_log
from bench.invitro.social.census import census
from bench.invitro.social.score import score
from bench.invitro.social.web import SocialParams, SocialWeb, parse_knobs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.invitro.social", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    count = commands.add_parser("census", help="what a site holds: sizes, mix, degrees, ms per page")
    count.add_argument("site")
    judge = commands.add_parser("score", help="a crawl's quality from the server's request log")
    judge.add_argument("log", type=Path)
    judge.add_argument("--site", required=True)
    judge.add_argument("--baseline", type=Path, help="the request log of a BFS crawl of the same budget (FN)")
    judge.add_argument("--census", action="store_true", help="also take a census (UCC recall)")
    judge.add_argument("--curve", action="store_true", help="include the valuable-new curve")
    for command in (count, judge):
        command.add_argument("--seed", type=int, default=1, help="the lab's seed")
        command.add_argument("--knob", action="append", default=[], metavar="SITE.KEY=VALUE")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        web = SocialWeb(SocialParams((args.site,), args.seed, parse_knobs(args.knob)), 80)  # truth ignores the port
    except ValueError as e:
        parser.error(str(e))
    site = web.site_named(args.site)
    if args.command == "census":
        result = census(site).as_dict()
    else:
        baseline = read_log(args.baseline) if args.baseline else None
        result = score(read_log(args.log), web, args.site, baseline=baseline,
                       census=census(site) if args.census else None).as_dict()
        if not args.curve:
            del result["curve"]
    sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
