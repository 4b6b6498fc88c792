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
    defaults = configuration.describe(configuration.Config())
    assert table == defaults


def test_every_key_is_documented_where_declared() -> None:
    for section in dataclasses.fields(configuration.Config):
        if section.name == "credentials":  # an array of tables, [[credentials]]: each is a CredentialConfig
            assert section.metadata.get("doc")
            tables = configuration.CredentialConfig()
        else:
            tables = section.default_factory()  # type: ignore[misc]
        for field in dataclasses.fields(tables):
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
        ("policy.name=nosuch", "policy.name", "unknown policy 'nosuch'; known: breadth-first, clustergraph, freshness, shallow-first"),
        ("policy.max_depth=3", "policy.max_depth", "unknown key: policy 'breadth-first' has no keys of its own"),
    ],
)
def test_bad_values_name_the_key(override: str, key: str, problem: str) -> None:
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(None, [override])
    assert info.value.key == key
    assert problem in info.value.problem


@pytest.mark.parametrize(
    ("overrides", "key", "problem"),
    [
        (["policy.max_depth=\"deep\""], "policy.max_depth", "expected an integer, got 'deep'"),
        (["policy.max_depth=2.5"], "policy.max_depth", "expected an integer"),
        (["policy.max_depth=true"], "policy.max_depth", "expected an integer"),
        (["policy.depth=3"], "policy.depth", "unknown key for policy 'shallow-first' (known: max_depth)"),
    ],
)
def test_a_bad_policy_option_names_the_key(overrides: list[str], key: str, problem: str) -> None:
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(None, ["policy.name=shallow-first", *overrides])
    assert info.value.key == key
    assert problem in info.value.problem


@pytest.mark.parametrize(("model", "problem"), [(None, "none given"), ("/nonexistent/model", "does not exist")])
def test_a_policy_that_needs_a_model_is_refused_without_one(model: str | None, problem: str) -> None:
    overrides = ['policy.name="clustergraph"'] + ([f'policy.model="{model}"'] if model else [])
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(None, overrides)
    assert info.value.key == "policy.model"
    assert problem in info.value.problem


def test_policy_options_come_from_the_file_and_set_and_survive_describe(tmp_path: Path) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text('[policy]\nname = "shallow-first"\nmodel = "models/x"\nmax_depth = 2\n')
    c = configuration.load(path, ["policy.max_depth=3"])
    assert (c.policy.name, c.policy.model, c.policy.options) == ("shallow-first", "models/x", {"max_depth": 3})
    tables = configuration.describe(c)
    assert tables["policy"] == {"name": "shallow-first", "model": "models/x", "max_depth": 3}
    again = configuration.Config()  # what an agent process does with the manifest
    configuration.apply(again, tables, "manifest")
    assert again.policy == c.policy


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
        (["run", "--policy", "nosuch"], "policy.name: unknown policy 'nosuch'"),
    ],
)
def test_cli_prints_one_line_and_exits_2(argv: list[str], expected: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "engine.cli", *argv], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]


def test_a_key_that_moved_says_where_it_went(tmp_path: Path) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text('[engine]\npolicy = "breadth-first"\n')
    with pytest.raises(configuration.ConfigError) as error:
        configuration.load(path)
    assert error.value.key == "engine.policy" and "policy.name" in str(error.value)
