"""crawl.toml and engine/config.py agree; bad configuration gives one clear line and exit status 2."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from engine import config as configuration

ROOT = Path(__file__).resolve().parent.parent


def test_crawl_toml_lists_every_key_with_its_default() -> None:
    table = tomllib.loads((ROOT / "crawl.toml").read_text())
    defaults = dataclasses.asdict(configuration.Config())
    assert table == defaults


def test_every_key_is_documented_where_declared() -> None:
    for section in dataclasses.fields(configuration.Config):
        for field in dataclasses.fields(section.default_factory()):  # type: ignore[misc]
            assert field.metadata.get("doc"), f"{section.name}.{field.name} has no doc"


def test_set_takes_toml_values_and_bare_strings() -> None:
    c = configuration.load(
        None,
        ["politeness.host_delay=1.5", 'network.allow_networks=["127.0.0.0/8"]', "store.dir=/tmp/x",
         "frontier.workbench_bytes=\"2MiB\"", "engine.fetchers=7"],
    )
    assert c.politeness.host_delay == 1.5
    assert c.network.allow_networks == ["127.0.0.0/8"]
    assert c.store.dir == "/tmp/x"
    assert c.frontier.workbench_bytes == 2 << 20
    assert c.engine.fetchers == 7


@pytest.mark.parametrize(
    ("override", "key", "problem"),
    [
        ("politeness.host_delay=abc", "politeness.host_delay", "expected a number"),
        ("politeness.hostdelay=1", "politeness.hostdelay", "unknown key"),
        ("nosuch.key=1", "nosuch", "unknown section"),
        ("engine.fetchers=0", "engine.fetchers", "must be positive"),
        ("engine.fetchers=1.5", "engine.fetchers", "expected an integer"),
        ('network.allow_networks=["nonsense"]', "network.allow_networks", "not a network"),
        ("frontier.sieve_bucket_bytes=\"lots\"", "frontier.sieve_bucket_bytes", "expected a size"),
        ("politeness.ip_delay=-1", "politeness.ip_delay", "must not be negative"),
        ("scope.mode=\"galaxy\"", "scope.mode", "must be any, host or domain"),
        ('scope.link_rels=["next page"]', "scope.link_rels", "is not one rel value"),
        ("urls.sort_query=1", "urls.sort_query", "expected true or false"),
        ("noequals", "noequals", "expected section.key=value"),
    ],
)
def test_bad_values_name_the_key(override: str, key: str, problem: str) -> None:
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(None, [override])
    assert info.value.key == key
    assert problem in info.value.problem


def test_bad_file_names_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[politeness]\nhost_delay = \"soon\"\n")
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(bad)
    assert info.value.key == "politeness.host_delay"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--set", "politeness.host_delay=abc"], "politeness.host_delay: expected a number"),
        (["run", "--max-pages", "many"], "argument --max-pages: invalid int value: 'many'"),
        (["run", "--dns", "localhost"], "dns.servers: 'localhost' is not an address"),
        (["run", "--bogus"], "unrecognized arguments: --bogus"),
        (["run", "-c", "/nonexistent/crawl.toml"], "no such config file"),
    ],
)
def test_cli_prints_one_line_and_exits_2(argv: list[str], expected: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "engine.cli", *argv], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
