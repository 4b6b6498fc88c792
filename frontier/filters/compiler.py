"""Expression tree → predicate: nested closures, built once, with no interpretation per call.

``and`` and ``or`` compile to Python's own short-circuit operators, left to right, so an
operand whose answer cannot change the result is not evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from frontier.filters.builtins import BUILTINS, ArgumentError, Kind, Predicate
from frontier.filters.language import And, Call, Expression, FilterError, Not, Or, parse

__all__ = ["PHASES", "Filter", "PhaseFilterError", "PhaseFilters", "compile_filter"]

# The crawl phases (BUbiNG's five filters) and what each one sees.
PHASES: dict[str, Kind] = {"schedule": "url", "fetch": "url", "follow": "url", "parse": "response", "store": "response"}


class Filter:
    """A compiled filter: ``f(subject)`` is True to accept.

    ``accepts`` is the bare predicate; hot loops bind it once and skip one call level.
    ``needs_body`` says whether a response filter reads the body (so the engine can avoid
    decoding it otherwise). ``str(f)`` is the expression in canonical form.
    """

    __slots__ = ("accepts", "expression", "kind", "needs_body")

    def __init__(self, expression: Expression, kind: Kind, accepts: Predicate, needs_body: bool) -> None:
        self.expression = expression
        self.kind = kind
        self.accepts = accepts
        self.needs_body = needs_body

    def __call__(self, subject: Any) -> bool:
        return self.accepts(subject)

    def __str__(self) -> str:
        return str(self.expression)

    def __repr__(self) -> str:
        return f"Filter({str(self)!r}, kind={self.kind!r})"


def compile_filter(text: str, *, kind: Literal["url", "response"], base_dir: Path | None = None) -> Filter:
    """Parse and compile ``text`` into a :class:`Filter` over URLs or responses.

    Relative file names (``host_in(FILE)``) are read from ``base_dir``, or the working
    directory when it is None. Raises :class:`FilterError` at the column at fault.
    """
    expression = parse(text)
    compiler = _Compiler(text, kind, base_dir)
    accepts = compiler.compile(expression)
    return Filter(expression, kind, accepts, compiler.needs_body)


@dataclass
class _Compiler:
    text: str
    kind: Kind
    base_dir: Path | None
    needs_body: bool = False

    def compile(self, node: Expression) -> Predicate:
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, Not):
            operand = self.compile(node.operand)
            return lambda x: not operand(x)
        if isinstance(node, And):
            return _fold(self, node.operands, _both)
        if isinstance(node, Or):
            return _fold(self, node.operands, _either)
        value = node.value
        return lambda x: value

    def call(self, node: Call) -> Predicate:
        builtin = BUILTINS.get(node.name)
        if builtin is None:
            raise FilterError(f"unknown filter {node.name!r} (known: {', '.join(sorted(BUILTINS))})", self.text,
                              node.column)
        if builtin.kind == "response" and self.kind == "url":
            raise FilterError(f"{node.name}() tests a response, but this filter sees only URLs "
                              "(the schedule, fetch and follow filters)", self.text, node.column)
        count = len(node.args)
        if count < builtin.min_args or (builtin.max_args is not None and count > builtin.max_args):
            raise FilterError(f"{builtin.usage} takes {_arity(builtin.min_args, builtin.max_args)}, got {count}",
                              self.text, node.column)
        try:
            predicate = builtin.make(node.args, self.base_dir)
        except ArgumentError as e:
            raise FilterError(f"{node.name}(): {e}", self.text, node.arg_columns[e.index]) from None
        self.needs_body |= builtin.needs_body
        if builtin.kind == "url" and self.kind == "response":
            url_predicate = predicate
            return lambda response: url_predicate(response.url)
        return predicate


def _both(first: Predicate, second: Predicate) -> Predicate:
    return lambda x: first(x) and second(x)


def _either(first: Predicate, second: Predicate) -> Predicate:
    return lambda x: first(x) or second(x)


def _fold(compiler: _Compiler, operands: Sequence[Expression],
          join: Callable[[Predicate, Predicate], Predicate]) -> Predicate:
    """``a op b op c`` as ``(a op b) op c``: evaluation stays left to right."""
    predicate: Predicate = compiler.compile(operands[0])
    for operand in operands[1:]:
        predicate = join(predicate, compiler.compile(operand))
    return predicate


def _arity(low: int, high: int | None) -> str:
    if high == low:
        return {0: "no arguments", 1: "one argument"}.get(low, f"{low} arguments")
    return f"at least {low} argument{'s' * (low != 1)}" if high is None else f"{low} to {high} arguments"


class _FiltersConfig(Protocol):
    """engine.config.FiltersConfig, as far as the frontier needs to know it."""

    schedule: str
    fetch: str
    parse: str
    follow: str
    store: str


@dataclass(frozen=True, slots=True)
class PhaseFilters:
    """The filter of each crawl phase; None accepts everything at no cost.

    ``schedule``: discovered URLs before they are queued; ``fetch``: a URL just before it is
    fetched; ``follow``: each link of a parsed page; ``parse``: responses whose links are
    extracted; ``store``: responses written to the WARC files.
    """

    schedule: Filter | None = None
    fetch: Filter | None = None
    follow: Filter | None = None
    parse: Filter | None = None
    store: Filter | None = None

    @classmethod
    def from_config(cls, filters: _FiltersConfig, base_dir: Path | None = None) -> PhaseFilters:
        """Compile each phase's text; raises :class:`PhaseFilterError` naming the phase."""
        compiled: dict[str, Filter | None] = {}
        for phase, kind in PHASES.items():
            text = getattr(filters, phase)
            try:
                compiled[phase] = compile_filter(text, kind=kind, base_dir=base_dir) if text.strip() else None
            except FilterError as e:
                raise PhaseFilterError(phase, e) from None
        return cls(**compiled)


class PhaseFilterError(FilterError):
    """A :class:`FilterError` in the filter of one phase (``phase``: schedule, fetch, ...)."""

    def __init__(self, phase: str, error: FilterError) -> None:
        super().__init__(error.problem, error.text, error.column)
        self.phase = phase
