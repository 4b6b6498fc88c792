"""The filter language (frontier/filters/): parsing, precedence, short circuit, built-ins, errors, traps."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import config as configuration
from frontier.filters import (
    BUILTINS,
    FilterError,
    PhaseFilterError,
    PhaseFilters,
    Response,
    compile_filter,
    parse,
)
from frontier.filters.builtins import Builtin
from frontier.filters.language import And, Call, Constant, Not, Or
from frontier.filters.segments import _has_power, repeats


def url_filter(text: str, base_dir: Path | None = None):  # type: ignore[no-untyped-def]
    return compile_filter(text, kind="url", base_dir=base_dir)


def response_filter(text: str):  # type: ignore[no-untyped-def]
    return compile_filter(text, kind="response")


def a(arg: str) -> Call:
    return Call("host_is", (arg,))


# -- parsing and precedence ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("host_is(x)", a("x")),
        ("host_is(x) or host_is(y) and not host_is(z)", Or((a("x"), And((a("y"), Not(a("z"))))))),
        ("not host_is(x) and host_is(y)", And((Not(a("x")), a("y")))),
        ("not (host_is(x) and host_is(y))", Not(And((a("x"), a("y"))))),
        ("(host_is(x) or host_is(y)) and host_is(z)", And((Or((a("x"), a("y"))), a("z")))),
        ("host_is(x) and (host_is(y) and host_is(z))", And((a("x"), a("y"), a("z")))),
        ("host_is(x) or host_is(y) or host_is(z)", Or((a("x"), a("y"), a("z")))),
        ("not not host_is(x)", Not(Not(a("x")))),
        ("NOT host_is(x) AND true Or FALSE", Or((And((Not(a("x")), Constant(True))), Constant(False)))),
        ("  ( ( host_is( x ) ) )  ", a("x")),
        ("path_ends_with(.jpg, .PNG,.gif)", Call("path_ends_with", (".jpg", ".PNG", ".gif"))),
        ("looks_binary()", Call("looks_binary", ())),
        (r'url_matches("a\"b\\c\d", ' + r"'x\'y')", Call("url_matches", ('a"b\\c\\d', "x'y"))),
        ('host_is("and", or)', Call("host_is", ("and", "or"))),
    ],
)
def test_parse_builds_the_tree_with_not_over_and_over_or(text: str, tree: object) -> None:
    assert parse(text) == tree
    assert parse(str(parse(text))) == tree


def test_str_is_canonical_and_quotes_only_what_needs_it() -> None:
    expression = parse("not(host_is(x)or host_is(y))and url_matches( \"a b(c)\" ) or false")
    assert str(expression) == 'not (host_is(x) or host_is(y)) and url_matches("a b(c)") or false'


# Random expressions over probes: the same text is valid Python with the same precedence, so
# Python's evaluation is the reference truth table and its call sequence the short circuit.
leaves = st.sampled_from(["probe(0)", "probe(1)", "probe(2)", "true", "false"])
expressions = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" and ", " or "]), inner).map("".join),
        inner.map(lambda e: f"not {e}"),
        inner.map(lambda e: f"({e})"),
    ),
    max_leaves=12,
)


@contextmanager
def probe_builtin(calls: list[int]) -> Iterator[None]:
    """A built-in `probe(K)` that records K and answers K == 1 (0 and 2 are false)."""

    def make(args: tuple[str, ...], base_dir: Path | None):  # type: ignore[no-untyped-def]
        k = int(args[0])

        def probe(url: str) -> bool:
            calls.append(k)
            return k == 1

        return probe

    BUILTINS["probe"] = Builtin("probe", "url", "probe(K)", make, 1, 1)
    try:
        yield
    finally:
        del BUILTINS["probe"]


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_evaluation_matches_python_truth_table_and_short_circuit(text: str) -> None:
    ours: list[int] = []
    reference: list[int] = []

    def probe(k: int) -> bool:
        reference.append(k)
        return k == 1

    with probe_builtin(ours):
        f = url_filter(text)
        result = f("http://a.test/")
        again = url_filter(str(f))("http://a.test/")
    expected = eval(text, {"probe": probe, "true": True, "false": False})  # noqa: S307 - our own generated text
    assert result is bool(expected)
    assert again is result
    assert ours == reference * 2, "evaluated operands differ from Python's short circuit"


def test_short_circuit_skips_a_builtin_that_would_fail() -> None:
    f = response_filter("status(404) and looks_binary()")
    # looks_binary() would fail on a body of None: it is never reached
    assert f(Response("http://a.test/", 200, {}, None)) is False  # type: ignore[arg-type]
    g = response_filter("status(200) or looks_binary()")
    assert g(Response("http://a.test/", 200, {}, None)) is True  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        response_filter("looks_binary() or status(200)")(Response("http://a.test/", 200, {}, None))  # type: ignore[arg-type]


# -- built-ins ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "url", "expected"),
    [
        ("host_is(www.example.com)", "http://www.example.com/x", True),
        ("host_is(WWW.Example.COM.)", "http://www.example.com:8080/x", True),
        ("host_is(example.com, other.org)", "http://www.example.com/", False),
        ("host_ends_with(example.com)", "https://www.example.com/a?b=c", True),
        ("host_ends_with(example.com)", "http://example.com/", True),
        ("host_ends_with(example.com)", "http://badexample.com/", True),  # a plain suffix, as BUbiNG's
        ("host_ends_with(.example.com)", "http://example.com/", False),
        ("host_ends_with(.org, .net)", "http://user@a.net:81/", True),
        ("host_is(::1)", "http://[::1]:8080/", True),
        ("scheme_is(https)", "https://a.test/", True),
        ("scheme_is(https)", "http://a.test/", False),
        ("scheme_is(HTTP, https)", "http://a.test/", True),
        ("path_ends_with(.jpg, .png)", "http://a.test/photo.PNG", True),
        ("path_ends_with(.jpg)", "http://a.test/photo.jpg?size=2", True),
        ("path_ends_with(.jpg)", "http://a.test/view?file=photo.jpg", False),
        ("path_ends_with(/)", "http://a.test/", True),
        (r'url_matches("\?(.*&)?sessionid=")', "http://a.test/x?a=1&sessionid=9", True),
        (r'url_matches("\?(.*&)?sessionid=")', "http://a.test/sessionid=9", False),
        ("url_matches(^https:)", "https://a.test/", True),
        ("max_depth(2)", "http://a.test/a/b.html", True),
        ("max_depth(2)", "http://a.test/a/b/", False),
        ("max_depth(1)", "http://a.test/?q=/x/y/z", True),
        ("max_url_length(20)", "http://a.test/123456", True),
        ("max_url_length(20)", "http://a.test/1234567", False),
        ("duplicate_segments(3)", "http://a.test/a/b/a/b/a/b/", True),
        ("duplicate_segments(3)", "http://a.test/a/b/a/b/", False),
        ("duplicate_segments(2)", "http://a.test/a/b/a/b/", True),
        ("duplicate_segments(3)", "http://a.test/x?p=/a/a/a", False),
        ("true", "http://a.test/", True),
        ("false", "http://a.test/", False),
    ],
)
def test_url_builtins(text: str, url: str, expected: bool) -> None:
    assert url_filter(text)(url) is expected


def page(status: int = 200, content_type: str | None = "text/html; charset=utf-8", body: bytes = b"<html>",
         url: str = "http://a.test/x.html") -> Response:
    return Response(url, status, {} if content_type is None else {"content-type": content_type}, body)


@pytest.mark.parametrize(
    ("text", "response", "expected"),
    [
        ("status(200)", page(), True),
        ("status(200, 404)", page(404), True),
        ("status(3xx)", page(301), True),
        ("status(3XX)", page(200), False),
        ("content_type(text/html)", page(), True),
        ("content_type(TEXT/HTML)", page(content_type=" Text/Html ;charset=x"), True),
        ("content_type(application/xhtml+xml)", page(), False),
        ("content_type(text/*)", page(content_type="text/plain"), True),
        ("content_type(text/*)", page(content_type="image/png"), False),
        ("content_type(*/*)", page(content_type=None), False),
        ("content_type(*/*)", page(content_type="image/png"), True),
        ("content_type(text/html)", page(content_type=None), False),
        ("looks_binary()", page(body=b"<html>\n\t<p>text</p>\r\n"), False),
        ("looks_binary()", page(body="caf\u00e9 \u2014 ok".encode()), False),
        ("looks_binary()", page(body=b"%PDF-1.4\n\x00\x01"), True),
        ("looks_binary()", page(body=b"\x01\x02\x03abcdefgh"), True),  # 3 of 11 are control bytes
        ("looks_binary()", page(body=b"a" * 8192 + b"\x00"), False),  # beyond the sniffed 8 KiB
        ("looks_binary()", page(body=b""), False),
        ("max_size(6)", page(body=b"123456"), True),
        ("max_size(5)", page(body=b"123456"), False),
        ("min_size(1)", page(body=b""), False),
        ("min_size(0)", page(body=b""), True),
        # URL predicates apply to the response's URL
        ("host_is(a.test) and path_ends_with(.html)", page(), True),
        ("status(2xx) and not looks_binary() and max_depth(1)", page(url="http://a.test/a/b"), False),
    ],
)
def test_response_builtins(text: str, response: Response, expected: bool) -> None:
    assert response_filter(text)(response) is expected


def test_needs_body_only_when_a_predicate_reads_it() -> None:
    assert not response_filter("status(200) and content_type(text/html) and max_depth(3)").needs_body
    assert response_filter("status(200) or not looks_binary()").needs_body
    assert response_filter("max_size(10)").needs_body


def test_host_in_reads_hosts_and_domains_relative_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "blocked.txt").write_text(
        "# blocked hosts\n\nexample.com\n  Tracker.Example.ORG.  # trailing comment\nb\u00fccher.test\n[::1]\n10.0.0.1\n"
    )
    f = url_filter("host_in(lists/blocked.txt)", base_dir=tmp_path)
    assert f("http://example.com/")
    assert f("http://www.example.com/a")  # a subdomain of a listed domain
    assert not f("http://notexample.com/")
    assert f("https://tracker.example.org/")
    assert not f("https://example.org/")
    assert f("http://xn--bcher-kva.test/")
    assert f("http://[::1]:8080/")
    assert f("http://10.0.0.1/") and not f("http://0.0.1/")
    combined = url_filter("(host_ends_with(.com, .org) and not host_in(lists/blocked.txt)) or max_depth(1)", tmp_path)
    assert combined("http://fine.com/a/b") and not combined("http://www.example.com/a/b")
    assert combined("http://www.example.com/")


@pytest.mark.parametrize(
    ("content", "problem"),
    [(None, "cannot read the host list"), ("ok.test\nhttp://x.test/\n", "line 2: 'http://x.test/' is not a host name"),
     ("a.test:8080\n", "line 1"), (b"\xff\xfe", "cannot read the host list")],
)
def test_host_in_errors_point_at_the_file_argument(tmp_path: Path, content: str | bytes | None, problem: str) -> None:
    if isinstance(content, bytes):
        (tmp_path / "hosts.txt").write_bytes(content)
    elif content is not None:
        (tmp_path / "hosts.txt").write_text(content)
    with pytest.raises(FilterError) as info:
        url_filter("true and host_in( hosts.txt )", base_dir=tmp_path)
    assert info.value.column == 19
    assert problem in info.value.problem


# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "column", "problem"),
    [
        ("", "url", 1, "expected a filter such as host_ends_with(example.com), found the end"),
        ("   ", "url", 4, "found the end of the expression"),
        ("host_is(a", "url", 10, "expected ',' or ')' in host_is(), found the end"),
        ("host_is(a) and", "url", 15, "expected a filter"),
        ("host_is(a) host_is(b)", "url", 12, "expected 'and', 'or' or the end, found 'host_is'"),
        ("(host_is(a) or (true)", "url", 22, "expected ')' to close the '(' at column 1"),
        ("host_is(a))", "url", 11, "found ')'"),
        ("nope(x)", "url", 1, "unknown filter 'nope' (known: content_type, duplicate_segments"),
        ("true and Host_Is(x)", "url", 10, "'Host_Is' is not a filter name"),
        ("host_is(a) or status(200)", "url", 15, "status() tests a response"),
        ("max_depth(x)", "url", 11, "max_depth(): expected a whole number, got 'x'"),
        ("max_depth(0)", "url", 11, "must be at least 1"),
        ("max_depth(1, 2)", "url", 1, "max_depth(N) takes one argument, got 2"),
        ("host_is()", "url", 1, "host_is(HOST, ...) takes at least 1 argument, got 0"),
        ("looks_binary(x)", "response", 1, "looks_binary() takes no arguments, got 1"),
        ('url_matches("(")', "url", 13, "url_matches(): not a regular expression"),
        ("host_is('x)", "url", 9, "unterminated string: no closing '"),
        ("and host_is(x)", "url", 1, "expected a filter before 'and'"),
        ("not", "url", 4, "found the end"),
        ("host_is", "url", 8, "expected '(' after 'host_is'"),
        ("host_is(x,)", "url", 11, "expected an argument of host_is(), found ')'"),
        ("host_is(x y)", "url", 11, "expected ',' or ')'"),
        ("'quoted'", "url", 1, "found 'quoted'"),
        ("duplicate_segments(1)", "url", 20, "must be at least 2"),
        ("true or\nstatus(600)", "response", 16, "status(): expected a status such as 200"),
        ("content_type(text/html, html)", "response", 25, "expected a media type"),
    ],
)
def test_errors_name_the_column(text: str, kind: str, column: int, problem: str) -> None:
    with pytest.raises(FilterError) as info:
        compile_filter(text, kind=kind)  # type: ignore[arg-type]
    assert info.value.column == column
    assert problem in info.value.problem
    assert isinstance(info.value, ValueError)


def test_error_message_shows_the_text_and_a_caret() -> None:
    with pytest.raises(FilterError) as info:
        url_filter("host_ends_with(a.com) and\tnot hots_in(x)")
    first, shown, caret = str(info.value).splitlines()
    assert first.startswith("unknown filter 'hots_in'") and first.endswith("at column 31")
    assert shown == "    host_ends_with(a.com) and not hots_in(x)"
    assert caret == "    " + " " * 30 + "^"


# -- phases and configuration -------------------------------------------------------------------


class Phases:
    def __init__(self, **texts: str) -> None:
        self.schedule = self.fetch = self.parse = self.follow = self.store = ""
        self.__dict__.update(texts)


def test_phase_filters_compile_each_phase_and_empty_is_none() -> None:
    phases = PhaseFilters.from_config(Phases(schedule="max_depth(3)", store=" status(200) ", follow="  "))
    assert phases.fetch is None and phases.parse is None and phases.follow is None
    assert phases.schedule is not None and phases.schedule.kind == "url"
    assert phases.store is not None and phases.store.kind == "response"
    assert phases.store(page()) and not phases.store(page(404))


def test_phase_errors_name_the_phase() -> None:
    with pytest.raises(PhaseFilterError) as info:
        PhaseFilters.from_config(Phases(parse="status(200)", follow="status(200)"))
    assert info.value.phase == "follow" and info.value.column == 1


def test_config_errors_name_the_filter_key(tmp_path: Path) -> None:
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(None, ['filters.schedule="max_depth(3) and"'])
    assert info.value.key == "filters.schedule"
    assert "at column 17" in info.value.problem and "^" in info.value.problem
    config = configuration.load(None, ['filters.store="status(2xx) and not looks_binary()"'])
    assert config.filters.store == "status(2xx) and not looks_binary()"


# -- the duplicate-segment (trap) filter ---------------------------------------------------------


def brute_force(segments: list, times: int) -> bool:  # type: ignore[type-arg]
    n = len(segments)
    return any(
        segments[i : i + p] * times == segments[i : i + p * times]
        for p in range(1, n // times + 1)
        for i in range(n - p * times + 1)
    )


def regex_oracle(path: str, times: int) -> bool:
    """BUbiNG's definition (bubing-nadine.md T30)."""
    return re.fullmatch(rf".*(/.*)\1{{{times - 1},}}(/.*)?", path) is not None


@pytest.mark.parametrize(
    "path",
    ["/a/b/a/b/a/b/", "/a/a/a", "/x/cal/2021/cal/2021/cal/2021", "/p/q/r/s/q/r/s/q/r/s/t?x=1", "/a////",
     "/shop/item/shop/item/shop/item/shop/item/index.html"],
)
def test_traps_are_caught(path: str) -> None:
    assert repeats(path, 3) and regex_oracle(path, 3)


@pytest.mark.parametrize(
    "path",
    ["/", "/index.html", "/2020/01/01/new-year.html", "/a/b/a/b/", "/en/en/", "/docs/v1/docs/v2/docs/v3/",
     "/a/b/c/a/b/c/d", "/wiki/Category:Trees/wiki/Trees", "/aa/aaa/aaaa/", "/a/ab/abab/ababab"],
)
def test_legitimate_paths_pass(path: str) -> None:
    assert not repeats(path, 3) and not regex_oracle(path, 3)


def thue_morse(n: int) -> list[int]:
    """Cube-free (overlap-free) but full of squares: the hard case for a repetition finder."""
    return [bin(i).count("1") % 2 for i in range(n)]


def test_long_cube_free_path_is_not_a_trap_but_holds_squares() -> None:
    path = "/" + "/".join("ab"[x] for x in thue_morse(2000))
    assert not repeats(path, 3)
    assert repeats(path, 2)


segments = st.lists(st.sampled_from(["a", "b", "c", "", "ab"]), max_size=24)


@settings(max_examples=1500, deadline=None)
@given(segments, st.integers(2, 4))
def test_repeats_agree_with_brute_force_and_the_regex_oracle(parts: list[str], times: int) -> None:
    path = "/" + "/".join(parts)
    expected = brute_force(parts, times)
    assert repeats(path, times) is expected
    assert regex_oracle(path, times) is expected


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=150), st.integers(2, 5))
def test_power_finder_agrees_with_brute_force_on_long_sequences(sequence: list[int], times: int) -> None:
    assert _has_power(sequence, times) is brute_force(sequence, times)
