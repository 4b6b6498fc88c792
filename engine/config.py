"""Configuration: dataclasses that mirror crawl.toml's tables one to one.

Every key is declared once, here, with its default and a one-line description (the
``doc`` metadata); crawl.toml at the repository root lists the same keys with the same
defaults, and ``tests/test_config.py`` checks that the two agree. Unknown keys, wrong
types and bad values raise :class:`ConfigError` naming the dotted key, which the CLI
prints as one line before exiting with status 2.

Sizes (``*_bytes``) accept an integer or a string with a unit: ``"64MiB"``, ``"2GB"``.

``[policy]`` is the one open table: besides ``name`` and ``model``, its keys are the chosen
crawl policy's own (``frontier/policy.py``), kept in ``policy.options`` and checked against
that policy's declared options by :func:`validate`, with errors that name ``policy.KEY``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.ownership import NODE_NAME
from engine.parse import PAGE_RELS, LinkRules
from frontier.filters import PhaseFilterError, PhaseFilters
from frontier.policy import PolicyError, check as check_policy
from frontier.quality import ACTIONS as QUALITY_ACTIONS, MODEL_FILE as QUALITY_MODEL_FILE
from frontier.shapes import MAX_LIMIT as MAX_SHAPE_LIMIT


DEPARTURES = ("adopt", "take_over")  # cluster.departure (engine/machines.py)
MAX_FETCHERS = 65536  # per process; each fetcher has an 8-byte slot in a file of this many


class ConfigError(ValueError):
    """A configuration key is unknown, of the wrong type or out of range."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


def _doc(default: Any, doc: str) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


@dataclass
class EngineConfig:
    fetchers: int = _doc(1000, "fetch coroutines per process")
    max_pages: int = _doc(0, "stop after this many pages (robots.txt not counted); 0 = no limit")
    max_seconds: float = _doc(0.0, "stop after this many seconds; 0 = no limit")
    seeds: list[str] = _doc([], "seed URLs (added to those of --seeds FILE)")
    user_agent: str = _doc("crawl/0.1 (BUbiNG-style research crawler)", "User-Agent header and robots.txt agent")
    progress: str = _doc("auto", "progress display: auto (live on a terminal, periodic log lines otherwise), live, log, off")
    processes: int = _doc(0, "agent processes, each with its own event loop, frontier and WARC files; 0 = one per core")
    checkpoint_interval: float = _doc(60.0, "seconds between checkpoints of each agent's frontier (also taken on stop)")


@dataclass
class PolitenessConfig:
    host_delay: float = _doc(4.0, "seconds between the end of a fetch and the start of the next to the same host")
    ip_delay: float = _doc(0.5, "seconds between the end of a fetch and the start of the next to the same IP")
    max_crawl_delay: float = _doc(30.0, "robots.txt Crawl-delay is honoured up to this many seconds")


@dataclass
class NetworkConfig:
    allow_networks: list[str] = _doc(
        [], "CIDRs of non-public addresses the crawler may connect to (private, loopback, ... are refused otherwise)"
    )
    proxy: str = _doc("", "HTTP proxy URL for every request, e.g. http://127.0.0.1:8080; empty = direct")
    connect_timeout: float = _doc(10.0, "seconds to establish a connection")
    first_byte_timeout: float = _doc(30.0, "seconds of silence allowed before the first byte (and between reads)")
    total_timeout: float = _doc(60.0, "seconds for a whole request and response")
    max_body_bytes: int = _doc(16 << 20, "response bodies are truncated beyond this size (marked so in the WARC, counted by kind in stats.json)")
    keepalive: bool = _doc(False, "reuse connections; off by default so every fetch is one polite access")
    client: str = _doc("lean", "HTTP client: lean (asyncio + httptools, https through aiohttp) or aiohttp")


@dataclass
class DnsConfig:
    servers: list[str] = _doc([], "DNS servers as ip or ip:port; empty = the system's resolv.conf")
    cache_entries: int = _doc(100_000, "positive and negative entries kept in the resolver cache")
    min_ttl: float = _doc(300.0, "seconds a host's address is kept (cache and visit state) at least, whatever its TTL; each answer is kept up to twice its TTL, so hosts resolved together do not expire together")
    max_ttl: float = _doc(86400.0, "seconds a host's address is kept at most; then it is resolved again before its next fetch")
    negative_ttl: float = _doc(60.0, "failed lookups are cached this long")
    timeout: float = _doc(5.0, "seconds per DNS query attempt")
    concurrency: int = _doc(100, "DNS queries in flight at once")


@dataclass
class RobotsConfig:
    expiry: float = _doc(86400.0, "seconds before a host's robots.txt is fetched again (counted across resumes)")


@dataclass
class ScopeConfig:
    mode: str = _doc("any", "any | host (seed hosts only) | domain (seed hosts and their subdomains)")
    max_urls_per_host: int = _doc(100_000, "URLs scheduled per host (scheme+authority) at most")
    follow_nofollow: bool = _doc(False, "follow links marked rel=nofollow")
    max_url_length: int = _doc(2083, "longer URLs (seeds, links, redirect targets) are dropped, as Heritrix does; 0 = no limit")
    max_path_depth: int = _doc(20, "URLs whose path has more slashes are dropped (Heritrix's TooManyPathSegments); 0 = no limit")
    max_repeated_segments: int = _doc(2, "a run of path segments may occur this many times in a row; once more is the trap /a/b/a/b/a/b/ (Heritrix's PathologicalPath); 0 = no limit")
    max_urls_per_shape: int = _doc(1000, "URLs per host that differ only in their digits (a calendar's /2027/01/, ?month=2027-01) at most; 0 = no limit")
    link_rels: list[str] = _doc(list(PAGE_RELS), "a <link href> is followed for these rel values (and an HTML type, if any); [\"*\"] = every <link>")


@dataclass
class UrlsConfig:
    sort_query: bool = _doc(True, "canonical URLs (fetched and fingerprinted) have their query parameters sorted by name, stably, values untouched")


@dataclass
class FrontierConfig:
    workbench_bytes: int = _doc(512 << 20, "memory budget for queued path+queries; the backlog beyond spills to disk")
    sieve_bucket_bytes: int = _doc(16 << 20, "in-memory bucket of the Mercator sieve, 16 bytes per URL; a flush stops the loop about 0.5 s per 1M URLs")
    url_cache_bytes: int = _doc(64 << 20, "cache of recently seen URL fingerprints in front of the sieve")
    virtualizer_segment_bytes: int = _doc(64 << 20, "size of the on-disk segment files of per-host backlogs")
    required_front: int = _doc(1000, "initial required front (IPs with work); grows while fetchers wait")
    front_step: int = _doc(1000, "growth of the required front each time a fetcher finds nothing to do")
    sieve_flush_interval: float = _doc(1.0, "minimum seconds between forced sieve flushes (also >= 10x a flush's cost)")
    max_fetch_retries: int = _doc(5, "retries of a URL after network errors, with doubling back-off")


@dataclass
class StoreConfig:
    dir: str = _doc("out", "output folder: WARC files, frontier state, stats.json")
    prefix: str = _doc("crawl", "WARC file name prefix")
    warc_max_bytes: int = _doc(1 << 30, "WARC files are rotated beyond this size")
    gzip_level: int = _doc(1, "gzip level of WARC records (1 compresses these pages nearly as well as 9)")
    dedup: str = _doc("near", "content dedup: near (identical payloads are revisits; near-duplicates, i.e. the same HTML but for attributes, digits, case, whitespace, are marked), exact (identical payloads only), off")
    near_duplicates: str = _doc("store", "a near-duplicate (dedup = near, other bytes) is stored in full with its metadata naming the capture it nearly repeats (store), or not written at all (skip)")
    follow_duplicates: bool = _doc(False, "extract and follow the links of duplicates: identical payloads (revisit records) and near-duplicates, stored or skipped")
    dedup_capacity: int = _doc(10_000_000, "keys the dedup Bloom filter holds at dedup_error_rate (two per page stored in full with dedup = near, one with exact; sizes its mmap file: 36 MB at the defaults)")
    dedup_error_rate: float = _doc(1e-6, "false-positive rate of the dedup Bloom filter at capacity (a false positive costs one table lookup)")
    link_graph: bool = _doc(True, "write the page and host link graph beside the WARC files (.graph segments)")


@dataclass
class FiltersConfig:
    schedule: str = _doc("", "filter over discovered URLs before they are queued (frontier/filters/); empty = all")
    fetch: str = _doc("", "filter over URLs just before they are fetched; empty = all")
    parse: str = _doc("", "filter over responses whose links are extracted; empty = all")
    follow: str = _doc("", "filter over each extracted link before it is discovered; empty = all")
    store: str = _doc("", "filter over responses written to the WARC files; empty = all")


@dataclass
class PolicyConfig:
    name: str = _doc("breadth-first", "crawl policy: breadth-first, shallow-first, clustergraph, or any module of frontier/policies/ or crawl.policies entry point")
    model: str = _doc("", "the policy's model, a file or folder its learner wrote; empty = none")
    options: dict[str, Any] = _doc({}, "the policy's own keys, written beside name and model in [policy] (see its module)")


@dataclass
class QualityConfig:
    model: str = _doc("", "the host quality model, the folder `crawl learn quality` wrote; empty = the filter is off")
    threshold: float = _doc(0.5, "a host whose score (probability of spam, 0 to 1) is at least this is stopped or deprioritized")
    pages: int = _doc(0, "a host is scored once this many of its HTML pages are fetched (as many of them are read, evenly spread, as the model was trained on reading: crawl learn quality --read, default 20); 0 = as many as the model was trained on (crawl learn quality --pages, default 100)")
    action: str = _doc("stop", "stop (the host's queued URLs and later links are dropped) or deprioritize (fetched at most every max(60 s, 10 x host_delay))")


@dataclass
class ControlConfig:
    listen: str = _doc("", "HOST:PORT of the control API (GET /status, /metrics; POST /pause ...); empty = off")
    token: str = _doc("", "bearer token the control API requires; empty = take CRAWL_CONTROL_TOKEN from the environment")
    allow_remote: bool = _doc(False, "let control.listen be an address other than loopback (anyone who can reach it and holds the token steers the crawl)")


@dataclass
class ClusterConfig:
    url: str = _doc("", "nats://HOST:PORT of the NATS JetStream server of a crawl over several machines (engine/cluster.py); empty = this machine alone")
    node: str = _doc("", "this machine's name in the crawl (letters, digits, - and _), unique among its machines")
    size: int = _doc(0, "how many machines the crawl has: each waits for them all before it crawls (the same on every machine)")
    crawl_id: str = _doc("crawl", "the crawl's name on the server (letters, digits, - and _): the same on every machine of one crawl")
    join_timeout: float = _doc(300.0, "seconds to wait for the other machines to join before giving up")
    ttl: float = _doc(10.0, "seconds a machine's entry lives without a beat (every 0.5 s): a machine silent that long has left, and a survivor adopts it or the others take its hosts (the same on every machine; above the host delay)")
    machines_root: str = _doc("", "the shared folder holding every machine's output folder, each named after its node, where a survivor resumes a machine that left (adopt) or the survivors read its WARC files (take_over); empty = the parent of this machine's --out")
    departure: str = _doc("adopt", "what the survivors do when a machine leaves: adopt (one resumes its agents from its folder under machines_root, until it comes back: no host moves, a cost of one checkpoint interval) or take_over (each takes a share of its hosts, reading every machine's archive: no survivor runs two machines' agents; the same on every machine)")


@dataclass
class CredentialConfig:
    """One ``[[credentials]]`` table: an API credential, a politeness resource beside host and IP."""

    name: str = _doc("", "what logs and stats call it (required, unique)")
    token: str = _doc("", "sent as Authorization: Bearer TOKEN on every fetch of its hosts but robots.txt (required)")
    calls_per_hour: float = _doc(0.0, "fetches it may make per hour, refilled continuously (required, > 0)")
    burst: int = _doc(1, "fetches it may make back to back after an idle spell (the token bucket's size)")
    hosts: list[str] = _doc([], "the host names it is for, without port (required)")
    spread: bool = _doc(False, "with several agents, deal the credentials of its hosts one to each agent, and let the crawl policy say which agent fetches each URL of them (--policy freshness: its users), instead of one agent for all")


def parse_credentials(value: Any, source: str) -> list[CredentialConfig]:
    """``[[credentials]]`` as :class:`CredentialConfig` objects; ConfigError naming ``credentials[I].KEY``."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError("credentials", f"expected an array of tables, [[credentials]], in {source}")
    types = _section_types(CredentialConfig())
    out: list[CredentialConfig] = []
    for i, table in enumerate(value):
        credential = CredentialConfig()
        for key, item in table.items():
            dotted = f"credentials[{i}].{key}"
            if key not in types:
                raise ConfigError(dotted, f"unknown key in {source} (known: {', '.join(sorted(types))})")
            setattr(credential, key, _coerce(dotted, types[key], item))
        for key in ("name", "token", "hosts"):
            if not getattr(credential, key):
                raise ConfigError(f"credentials[{i}].{key}", f"is required in {source}")
        if not credential.calls_per_hour > 0:
            raise ConfigError(f"credentials[{i}].calls_per_hour", f"must be positive, got {credential.calls_per_hour}")
        if credential.burst < 1:
            raise ConfigError(f"credentials[{i}].burst", f"must be at least 1, got {credential.burst}")
        if any(not host or ":" in host or "/" in host or host != host.strip() for host in credential.hosts):
            raise ConfigError(f"credentials[{i}].hosts", f"expected host names without port, got {credential.hosts!r}")
        credential.hosts = [host.lower() for host in credential.hosts]
        if credential.name in (c.name for c in out):
            raise ConfigError(f"credentials[{i}].name", f"{credential.name!r} is the name of an earlier credential")
        out.append(credential)
    return out


@dataclass
class Config:
    engine: EngineConfig = field(default_factory=EngineConfig)
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    dns: DnsConfig = field(default_factory=DnsConfig)
    robots: RobotsConfig = field(default_factory=RobotsConfig)
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    urls: UrlsConfig = field(default_factory=UrlsConfig)
    frontier: FrontierConfig = field(default_factory=FrontierConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    control: ControlConfig = field(default_factory=ControlConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    credentials: list[CredentialConfig] = field(
        default_factory=list, metadata={"doc": "API credentials, [[credentials]] tables (engine/credentials.py); none by default"}
    )

    @property
    def out_dir(self) -> Path:
        return Path(self.store.dir)

    @property
    def machines_root(self) -> Path:
        """The folder holding every machine's output folder, each named after its node (``cluster.machines_root``)."""
        return Path(self.cluster.machines_root) if self.cluster.machines_root else self.out_dir.parent


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def parse_size(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and (m := _SIZE.match(value)):
        unit = (m.group(2) or "").lower().rstrip("b")
        factor = 1024 ** "kmgt".index(unit[0]) * 1024 if unit.endswith("i") else _UNITS[unit]
        return int(float(m.group(1)) * factor)
    raise ValueError(f"expected a size such as 67108864 or \"64MiB\", got {value!r}")


def _coerce(key: str, annotation: str, value: Any) -> Any:
    """Check one value against its declared type; the error names the key."""
    if key.endswith("_bytes"):
        try:
            return parse_size(value)
        except ValueError as e:
            raise ConfigError(key, str(e)) from None
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "list[str]": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }[annotation]
    if not ok:
        expected = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false",
                    "list[str]": "a list of strings"}[annotation]
        raise ConfigError(key, f"expected {expected}, got {value!r}")
    return float(value) if annotation == "float" else value


def _section_types(section: Any) -> dict[str, str]:
    return {f.name: f.type if isinstance(f.type, str) else f.type.__name__ for f in dataclasses.fields(section)}


# keys an earlier version had, and where they went: named in the error, not merely "unknown"
MOVED = {"engine.policy": "policy.name (the [policy] table)"}


def apply(config: Config, table: dict[str, Any], source: str) -> None:
    """Merge a parsed TOML document into ``config``; unknown tables and keys are errors."""
    sections = {f.name for f in dataclasses.fields(config)}
    for name, values in table.items():
        if name == "credentials":
            config.credentials = parse_credentials(values, source)
            continue
        if name not in sections:
            raise ConfigError(name, f"unknown section in {source} (known: {', '.join(sorted(sections))})")
        if not isinstance(values, dict):
            raise ConfigError(name, f"expected a table of settings in {source}")
        section = getattr(config, name)
        types = _section_types(section)
        for key, value in values.items():
            dotted = f"{name}.{key}"
            if isinstance(section, PolicyConfig) and key not in ("name", "model"):
                section.options[key] = value  # the policy's own key: validate() checks it against the policy
                continue
            if dotted in MOVED:
                raise ConfigError(dotted, f"in {source}: this key is now {MOVED[dotted]}")
            if key not in types:
                raise ConfigError(dotted, f"unknown key in {source} (known: {', '.join(sorted(types))})")
            setattr(section, key, _coerce(dotted, types[key], value))


def set_value(config: Config, assignment: str) -> None:
    """Apply one ``section.key=value`` override; the value is TOML (bare words are taken as strings)."""
    dotted, sep, raw = assignment.partition("=")
    dotted = dotted.strip()
    if not sep or "." not in dotted:
        raise ConfigError(dotted or assignment, "expected section.key=value, e.g. politeness.host_delay=1.5")
    name, key = dotted.split(".", 1)
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()  # a bare string such as store.dir=/tmp/x; the type check below still applies
    apply(config, {name: {key: value}}, "--set")


def validate(config: Config) -> None:
    """Range checks that types alone cannot express."""
    positive = {
        "engine.fetchers": config.engine.fetchers,
        "dns.concurrency": config.dns.concurrency,
        "dns.cache_entries": config.dns.cache_entries,
        "dns.min_ttl": config.dns.min_ttl,  # 0 would re-resolve a host before every fetch
        "frontier.workbench_bytes": config.frontier.workbench_bytes,
        "frontier.sieve_bucket_bytes": config.frontier.sieve_bucket_bytes,
        "frontier.url_cache_bytes": config.frontier.url_cache_bytes,
        "frontier.required_front": config.frontier.required_front,
        "network.max_body_bytes": config.network.max_body_bytes,
        "network.connect_timeout": config.network.connect_timeout,
        "network.first_byte_timeout": config.network.first_byte_timeout,
        "network.total_timeout": config.network.total_timeout,
    }
    for key, value in positive.items():
        if value <= 0:
            raise ConfigError(key, f"must be positive, got {value}")
    non_negative = {
        "engine.max_pages": config.engine.max_pages,
        "engine.max_seconds": config.engine.max_seconds,
        "engine.processes": config.engine.processes,
        "engine.checkpoint_interval": config.engine.checkpoint_interval,
        "politeness.host_delay": config.politeness.host_delay,
        "politeness.ip_delay": config.politeness.ip_delay,
        "politeness.max_crawl_delay": config.politeness.max_crawl_delay,
        "frontier.front_step": config.frontier.front_step,
        "dns.negative_ttl": config.dns.negative_ttl,
        "robots.expiry": config.robots.expiry,
        "frontier.max_fetch_retries": config.frontier.max_fetch_retries,
    }
    for key, value in non_negative.items():
        if value < 0:
            raise ConfigError(key, f"must not be negative, got {value}")
    if config.engine.fetchers > MAX_FETCHERS:
        raise ConfigError("engine.fetchers", f"at most {MAX_FETCHERS} per process, got {config.engine.fetchers}")
    for key in ("max_url_length", "max_path_depth", "max_repeated_segments"):
        if getattr(config.scope, key) < 0:
            raise ConfigError(f"scope.{key}", f"must not be negative (0 = no limit), got {getattr(config.scope, key)}")
    if not 0 <= config.scope.max_urls_per_shape <= MAX_SHAPE_LIMIT:
        raise ConfigError("scope.max_urls_per_shape",
                          f"must lie between 0 (no limit) and {MAX_SHAPE_LIMIT}, got {config.scope.max_urls_per_shape}")
    if config.dns.max_ttl < config.dns.min_ttl:
        raise ConfigError("dns.max_ttl", f"must be at least dns.min_ttl ({config.dns.min_ttl}), got {config.dns.max_ttl}")
    if config.scope.mode not in ("any", "host", "domain"):
        raise ConfigError("scope.mode", f"must be any, host or domain, got {config.scope.mode!r}")
    for rel in config.scope.link_rels:
        if not rel or any(c.isspace() or c == "," for c in rel):
            raise ConfigError("scope.link_rels", f"{rel!r} is not one rel value such as \"next\" (or \"*\" for any)")
    if config.network.client not in ("lean", "aiohttp"):
        raise ConfigError("network.client", f"must be lean or aiohttp, got {config.network.client!r}")
    if config.engine.progress not in ("auto", "live", "log", "off"):
        raise ConfigError("engine.progress", f"must be auto, live, log or off, got {config.engine.progress!r}")
    if config.store.dedup not in ("near", "exact", "off"):
        raise ConfigError("store.dedup", f"must be near, exact or off, got {config.store.dedup!r}")
    if config.store.near_duplicates not in ("store", "skip"):
        raise ConfigError("store.near_duplicates", f"must be store or skip, got {config.store.near_duplicates!r}")
    if config.store.dedup_capacity <= 0:
        raise ConfigError("store.dedup_capacity", f"must be positive, got {config.store.dedup_capacity}")
    if not 0 < config.store.dedup_error_rate < 1:
        raise ConfigError("store.dedup_error_rate", f"must lie strictly between 0 and 1, got {config.store.dedup_error_rate}")
    if not 0 <= config.store.gzip_level <= 9:
        raise ConfigError("store.gzip_level", f"must be between 0 and 9, got {config.store.gzip_level}")
    for cidr in config.network.allow_networks:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise ConfigError("network.allow_networks", f"{cidr!r} is not a network such as 127.0.0.0/8") from None
    if config.network.proxy and not re.match(r"^http://[^/]+:\d+/?$", config.network.proxy):
        raise ConfigError("network.proxy", f"expected http://HOST:PORT, got {config.network.proxy!r}")
    for server in config.dns.servers:
        host, _, port = server.rpartition(":") if server.count(":") == 1 else (server, "", "")
        try:
            ipaddress.ip_address(host or server)
            if port and not 0 < int(port) < 65536:
                raise ValueError
        except ValueError:
            raise ConfigError("dns.servers", f"{server!r} is not an address such as 127.0.0.1 or 127.0.0.1:5353") from None
    try:  # compiling reads host_in() files, relative to the working directory like store.dir
        PhaseFilters.from_config(config.filters)
    except PhaseFilterError as e:
        raise ConfigError(f"filters.{e.phase}", str(e)) from None
    _validate_quality(config.quality)
    _validate_cluster(config.cluster)
    try:  # the policy's model is not read here: only building the policy does
        check_policy(config.policy.name, config.policy.options, Path(config.policy.model) if config.policy.model else None)
    except PolicyError as e:
        raise ConfigError(f"policy.{e.key}", e.problem) from None


def _validate_cluster(cluster: ClusterConfig) -> None:
    if not cluster.url:
        return
    if not re.match(r"^nats://[^/\s]+:\d+/?$", cluster.url):
        raise ConfigError("cluster.url", f"expected nats://HOST:PORT, got {cluster.url!r}")
    if not NODE_NAME.match(cluster.node):
        raise ConfigError("cluster.node", f"a crawl over machines needs --node NAME (letters, digits, - and _), got {cluster.node!r}")
    if cluster.size < 1:
        raise ConfigError("cluster.size", f"a crawl over machines needs --cluster-size K (K >= 1), got {cluster.size}")
    if not NODE_NAME.match(cluster.crawl_id):
        raise ConfigError("cluster.crawl_id", f"letters, digits, - and _ only, got {cluster.crawl_id!r}")
    if cluster.join_timeout <= 0:
        raise ConfigError("cluster.join_timeout", f"must be positive, got {cluster.join_timeout}")
    if cluster.departure not in DEPARTURES:
        raise ConfigError("cluster.departure", f"must be {' or '.join(DEPARTURES)}, got {cluster.departure!r}")
    if cluster.ttl < 1.0:  # a few heartbeats at least, or a busy machine would be taken for gone
        raise ConfigError("cluster.ttl", f"must be at least 1 second (a beat every 0.5 s), got {cluster.ttl}")


def _validate_quality(quality: QualityConfig) -> None:
    if not 0 <= quality.threshold <= 1:
        raise ConfigError("quality.threshold", f"must lie between 0 and 1, got {quality.threshold}")
    if quality.pages < 0:
        raise ConfigError("quality.pages", f"must be 0 (the model's) or more, got {quality.pages}")
    if quality.action not in QUALITY_ACTIONS:
        raise ConfigError("quality.action", f"must be {' or '.join(QUALITY_ACTIONS)}, got {quality.action!r}")
    if quality.model and not (Path(quality.model) / QUALITY_MODEL_FILE).is_file():
        problem = "does not exist" if not Path(quality.model).exists() else f"holds no {QUALITY_MODEL_FILE}"
        raise ConfigError("quality.model", f"{quality.model} {problem} (a folder `crawl learn quality` wrote)")


def load(path: Path | None, overrides: Sequence[str] = ()) -> Config:
    """Defaults, then the file (if any), then ``--set`` overrides, then range checks."""
    config = Config()
    if path is not None:
        try:
            table = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(str(path), "no such config file") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(str(path), f"not valid TOML: {e}") from None
        apply(config, table, str(path))
    for assignment in overrides:
        set_value(config, assignment)
    validate(config)
    return config


def link_rules(config: Config) -> LinkRules:
    """``[scope]``'s and ``[urls]``'s say on which links of a page are followed and how they are written."""
    rels = config.scope.link_rels
    return LinkRules(
        follow_nofollow=config.scope.follow_nofollow,
        link_rels=None if "*" in rels else frozenset(rel.lower() for rel in rels),
        sort_query=config.urls.sort_query,
    )


def describe(config: Config, *, redact: bool = False) -> dict[str, Any]:
    """The configuration as plain tables, as crawl.toml writes them (for stats.json, the WARC
    warcinfo digest and the manifest an agent :func:`apply`-s): the policy's options sit beside
    ``policy.name`` and ``policy.model``. ``redact`` leaves the credentials' tokens out (stats.json)."""
    tables = dataclasses.asdict(config)
    if not tables["credentials"]:  # crawl.toml shows [[credentials]] as a comment: an empty array is no table
        del tables["credentials"]
    elif redact:
        for credential in tables["credentials"]:
            credential["token"] = "<redacted>"
    policy = tables["policy"]
    policy.update(policy.pop("options"))
    return tables


__all__ = ["Config", "ConfigError", "describe", "load", "parse_size", "set_value"]
