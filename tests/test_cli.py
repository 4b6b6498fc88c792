"""``crawl run``'s flags become config overrides, and the demo crawl aims the config at the in-vitro web."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from engine import cli, demo
from engine.config import Config


def test_policy_and_model_flags_override_the_policy_table() -> None:
    args = cli.build_parser().parse_args(["run", "--policy", "best-first", "--model", "models/m v1.bin"])
    assert args.policy == "best-first" and args.model == "models/m v1.bin"
    assignments = cli.overrides(args)
    assert 'policy.name="best-first"' in assignments and 'policy.model="models/m v1.bin"' in assignments


def test_target_examples_come_from_repeated_flags_and_another_policy_refuses_them(tmp_path: Path) -> None:
    urls = ["http://www.forum.test/t/1", 'http://www.forum.test/u/2?x="y"']
    args = cli.build_parser().parse_args(["run", "--target-example", urls[0], "--target-example", urls[1]])
    assert tomllib.loads(cli.overrides(args)[0].replace("policy.target_examples", "v", 1))["v"] == urls
    proc = subprocess.run([sys.executable, "-m", "engine.cli", "run", "--target-example", urls[0]],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "target_examples" in proc.stderr, proc.stderr


def test_without_the_flags_the_policy_table_is_left_alone() -> None:
    assignments = cli.overrides(cli.build_parser().parse_args(["run", "--max-pages", "5"]))
    assert assignments == ["engine.max_pages=5"]


def test_set_comes_last_so_it_wins_over_a_flag() -> None:
    args = cli.build_parser().parse_args(["run", "--policy", "a", "--set", "policy.name=b"])
    assert cli.overrides(args) == ['policy.name="a"', "policy.name=b"]


def test_a_bad_policy_is_one_config_error_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "engine.cli", "run", "--policy", "no-such-policy"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crawl: config error: policy"), proc.stderr


def test_the_demo_aims_at_the_web_and_allows_loopback() -> None:
    config = Config()
    config.network.allow_networks = ["10.0.0.0/8"]
    demo.aim_at(config, {"dns": "127.0.0.1:5353"})
    assert config.dns.servers == ["127.0.0.1:5353"]
    assert config.network.allow_networks == ["10.0.0.0/8", "127.0.0.0/8"]
    assert config.engine.max_seconds == demo.DEMO_SECONDS


def test_the_demo_keeps_a_limit_the_user_set() -> None:
    for limit in ("max_seconds", "max_pages"):
        config = Config()
        setattr(config.engine, limit, 5)
        demo.aim_at(config, {"dns": "127.0.0.1:5353"})
        assert config.engine.max_seconds == (5 if limit == "max_seconds" else 0)
