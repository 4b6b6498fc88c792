"""``[[credentials]]``: the token bucket, which credential a host's fetch takes, how credentials are
split over agents, Retry-After, and the errors a malformed table gets."""

from __future__ import annotations

from email.utils import formatdate
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given

from engine import config as configuration
from engine.config import ConfigError, CredentialConfig
from engine.credentials import Credential, Credentials, check_spread, credential_groups, pinned_hosts
from engine.errors import TOO_MANY_REQUESTS_WAIT, retry_after


def credential(name: str, hosts: list[str], per_hour: float = 3600.0, burst: int = 1) -> CredentialConfig:
    return CredentialConfig(name=name, token=f"t-{name}", calls_per_hour=per_hour, burst=burst, hosts=hosts)


@given(per_second=st.integers(1, 50), burst=st.integers(1, 5), steps=st.lists(st.integers(0, 40), max_size=60))
def test_a_bucket_never_gives_more_than_burst_plus_rate_times_time(per_second: int, burst: int, steps: list[int]) -> None:
    """Over any run of takes, calls ≤ burst + rate × elapsed; and one is refused only when the bucket is empty."""
    bucket = Credential("c", "t", float(per_second), burst)
    now, taken = 0.0, 0
    for step in steps:
        now += step / 100
        ready = bucket.ready_at(now)
        got = bucket.take(now)
        assert got == (ready <= now)
        taken += got
        assert taken <= burst + per_second * now + 1e-9
    if steps:
        assert bucket.take(bucket.ready_at(now)), "a call is there at ready_at"


def test_a_host_takes_the_first_credential_with_a_call_and_waits_when_none_has_one() -> None:
    credentials = Credentials([credential("a", ["api.test"]), credential("b", ["api.test"])])  # one call a second each
    assert Credentials([]).take("api.test", 0.0) == (None, 0.0) and not Credentials([])
    assert credentials.take("other.test", 5.0) == (None, 5.0), "a host no credential is for needs none"
    first, _ = credentials.take("api.test", 0.0)
    second, _ = credentials.take("api.test", 0.0)
    assert (first and first.name, second and second.name) == ("a", "b")
    assert credentials.take("api.test", 0.5) == (None, 1.0), "both empty: come back when the first refills"
    assert second is not None
    second.hold(10.0)  # a 429 on b
    got, _ = credentials.take("api.test", 1.0)
    assert got is first and credentials.take("api.test", 2.5)[0] is first
    assert credentials.take("api.test", 2.6) == (None, 3.5)
    assert credentials.statistics() == {"a": {"calls": 3, "refused": 0}, "b": {"calls": 1, "refused": 1}}


def test_spread_credentials_are_dealt_one_to_each_agent_and_their_host_is_not_pinned() -> None:
    def spread(name: str, hosts: list[str]) -> CredentialConfig:
        config = credential(name, hosts)
        config.spread = True
        return config

    configs = [spread("a", ["api.test"]), credential("x", ["x.test"]), spread("b", ["api.test"]),
               spread("c", ["api.test"])]
    assert pinned_hosts(configs, 2) == {"x.test": 1}, "the group of a, b and c is first, x.test second"
    held = [Credentials(configs, i, 2).by_host for i in range(2)]
    assert [[c.name for c in h["api.test"]] for h in held] == [["a", "c"], ["b"]]
    assert "x.test" in held[1] and "x.test" not in held[0]
    check_spread(configs, 3)
    with pytest.raises(ConfigError, match=r"credentials\[0\]\.spread: 3 credential\(s\) for api.test cannot be dealt to 4"):
        check_spread(configs, 4)
    with pytest.raises(ConfigError, match=r"credentials\[1\]\.spread: credentials sharing a host must all spread"):
        check_spread([spread("a", ["api.test"]), credential("b", ["api.test"])], 2)
    check_spread([spread("a", ["api.test"])], 1)  # one agent: nothing to deal


def test_credentials_sharing_a_host_go_to_one_agent_which_owns_their_hosts() -> None:
    configs = [credential("a", ["x.test"]), credential("b", ["y.test"]), credential("c", ["x.test", "z.test"])]
    assert [[c.name for c in group] for group in credential_groups(configs)] == [["a", "c"], ["b"]]
    assert pinned_hosts(configs, 2) == {"x.test": 0, "z.test": 0, "y.test": 1}
    assert set(Credentials(configs, 0, 2).by_host) == {"x.test", "z.test"}
    assert set(Credentials(configs, 1, 2).by_host) == {"y.test"}


def test_retry_after_takes_seconds_or_an_http_date() -> None:
    assert retry_after("120", 0.0) == 120.0
    assert retry_after(formatdate(1_000_030, usegmt=True), 1_000_000.0) == 30.0
    assert retry_after(formatdate(1_000_000, usegmt=True), 1_000_030.0) == 0.0
    assert retry_after(None, 0.0) == retry_after("soon", 0.0) == TOO_MANY_REQUESTS_WAIT


def _load(tmp_path: Path, text: str) -> configuration.Config:
    path = tmp_path / "crawl.toml"
    path.write_text(text)
    return configuration.load(path)


GOOD = 'name = "a"\ntoken = "secret"\ncalls_per_hour = 100\nhosts = ["api.test"]\n'


def test_a_credentials_table_is_read_and_its_token_kept_out_of_stats(tmp_path: Path) -> None:
    config = _load(tmp_path, f"[[credentials]]\n{GOOD}")
    assert config.credentials == [CredentialConfig("a", "secret", 100.0, 1, ["api.test"])]
    assert configuration.describe(config)["credentials"][0]["token"] == "secret"  # the manifest agents read
    assert configuration.describe(config, redact=True)["credentials"][0]["token"] == "<redacted>"
    assert "credentials" not in configuration.describe(configuration.Config())


@pytest.mark.parametrize(("text", "key", "problem"), [
    ('credentials = "x"\n', "credentials", "expected an array of tables"),
    ("[[credentials]]\n" + GOOD.replace('token = "secret"\n', ""), "credentials[0].token", "is required"),
    ("[[credentials]]\n" + GOOD.replace("100", "0"), "credentials[0].calls_per_hour", "must be positive"),
    ("[[credentials]]\n" + GOOD.replace("100", '"many"'), "credentials[0].calls_per_hour", "expected a number"),
    ("[[credentials]]\n" + GOOD + "burst = 0\n", "credentials[0].burst", "at least 1"),
    ("[[credentials]]\n" + GOOD.replace('"api.test"', '"api.test:80"'), "credentials[0].hosts", "without port"),
    ("[[credentials]]\n" + GOOD + "rate = 3\n", "credentials[0].rate", "unknown key"),
    ("[[credentials]]\n" + GOOD + "[[credentials]]\n" + GOOD, "credentials[1].name", "earlier credential"),
])
def test_a_malformed_credentials_table_is_named_in_the_error(tmp_path: Path, text: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, text)
    assert error.value.key == key and problem in error.value.problem
