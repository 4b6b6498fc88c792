"""The filter language: text → expression tree → text. Pure string work, no I/O.

Grammar (BUbiNG's, with its precedence spelled out; bubing-nadine.md §4 #21)::

    expression := term ("or" term)*
    term       := factor ("and" factor)*
    factor     := "not" factor | "(" expression ")" | "true" | "false" | NAME "(" [arg ("," arg)*] ")"
    arg        := WORD | '"' ... '"' | "'" ... "'"

``not`` binds tighter than ``and``, which binds tighter than ``or`` (as in Python); the
operators are case-insensitive. A bare WORD argument is any run of characters other than
space, parentheses, comma and quotes (``example.com``, ``.jpg``, ``text/*``); anything else
is quoted, with ``\\"`` (``\\'``) for the quote and ``\\\\`` for a backslash; every other
backslash stands for itself, so ``url_matches("\\d+(\\.html)?$")`` needs no doubling.

``str()`` of every node is valid input: ``parse(str(e)) == parse(text)`` for ``e = parse(text)``
(positions are kept for error messages but are not part of equality).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

__all__ = ["And", "Call", "Constant", "Expression", "FilterError", "Not", "Or", "parse", "quote"]


class FilterError(ValueError):
    """A filter expression that cannot be parsed or compiled, with the 1-based column at fault.

    ``str()`` shows the problem, the text, and a caret under the column.
    """

    def __init__(self, problem: str, text: str, column: int) -> None:
        self.problem = problem
        self.text = text
        self.column = column
        # one character per character, so the caret stays under the column
        shown = re.sub(r"\s", " ", text)
        super().__init__(f"{problem} at column {column}\n    {shown}\n    {' ' * (column - 1)}^")


@dataclass(frozen=True, slots=True)
class Constant:
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True, slots=True)
class Call:
    """A built-in predicate applied to its arguments, e.g. ``host_ends_with(example.com)``."""

    name: str
    args: tuple[str, ...]
    column: int = field(default=0, compare=False)
    arg_columns: tuple[int, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(quote, self.args))})"


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expression

    def __str__(self) -> str:
        inner = str(self.operand)
        return f"not ({inner})" if isinstance(self.operand, (And, Or)) else f"not {inner}"


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Expression, ...]  # two or more, none an And

    def __str__(self) -> str:
        return " and ".join(f"({o})" if isinstance(o, Or) else str(o) for o in self.operands)


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Expression, ...]  # two or more, none an Or

    def __str__(self) -> str:
        return " or ".join(map(str, self.operands))


Expression = Union[Constant, Call, Not, And, Or]

_BARE = re.compile(r"[^\s(),\"']+")
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<punct>[(),])
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<word>[^\s(),"']+)
      | (?P<open>["'])""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(r"\\([\\\"'])")


def quote(arg: str) -> str:
    """An argument as the parser reads it back: bare when it can be, else double-quoted."""
    if _BARE.fullmatch(arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "(", ")", ",", "string", "word", "end"
    text: str  # the value: a word, or a string with its quotes and escapes removed
    column: int  # 1-based


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        assert match is not None  # the alternatives cover every character
        kind, value = match.lastgroup, match.group()
        if kind == "open":
            raise FilterError(f"unterminated string: no closing {value}", text, position + 1)
        if kind == "punct":
            tokens.append(_Token(value, value, position + 1))
        elif kind == "string":
            tokens.append(_Token("string", _ESCAPE.sub(r"\1", value[1:-1]), position + 1))
        elif kind == "word":
            tokens.append(_Token("word", value, position + 1))
        position = match.end()
    tokens.append(_Token("end", "", len(text) + 1))
    return tokens


def _describe(token: _Token) -> str:
    return "the end of the expression" if token.kind == "end" else repr(token.text)


def _keyword(token: _Token, *words: str) -> bool:
    return token.kind == "word" and token.text.lower() in words


class _Parser:
    """Recursive descent over the token list; each method parses one grammar rule."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.at = 0

    def fail(self, problem: str, token: _Token) -> FilterError:
        return FilterError(problem, self.text, token.column)

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def whole(self) -> Expression:
        expression = self.expression()
        token = self.peek()
        if token.kind != "end":
            raise self.fail(f"expected 'and', 'or' or the end, found {_describe(token)}", token)
        return expression

    def expression(self) -> Expression:
        operands = [self.term()]
        while _keyword(self.peek(), "or"):
            self.take()
            operands.append(self.term())
        return _join(Or, operands)

    def term(self) -> Expression:
        operands = [self.factor()]
        while _keyword(self.peek(), "and"):
            self.take()
            operands.append(self.factor())
        return _join(And, operands)

    def factor(self) -> Expression:
        token = self.take()
        if _keyword(token, "not"):
            return Not(self.factor())
        if token.kind == "(":
            inner = self.expression()
            if self.peek().kind != ")":
                raise self.fail(
                    f"expected ')' to close the '(' at column {token.column}, found {_describe(self.peek())}",
                    self.peek(),
                )
            self.take()
            return inner
        if token.kind == "word" and self.peek().kind == "(":
            return self.call(token)
        if _keyword(token, "true", "false"):
            return Constant(token.text.lower() == "true")
        if _keyword(token, "and", "or"):
            raise self.fail(f"expected a filter before '{token.text}'", token)
        if token.kind == "word" and _NAME.fullmatch(token.text):
            raise self.fail(f"expected '(' after {token.text!r}", self.peek())
        raise self.fail(f"expected a filter such as host_ends_with(example.com), found {_describe(token)}", token)

    def call(self, name: _Token) -> Call:
        if not _NAME.fullmatch(name.text):
            raise self.fail(f"{name.text!r} is not a filter name (lower-case letters, digits and _)", name)
        self.take()  # "("
        args: list[str] = []
        columns: list[int] = []
        if self.peek().kind == ")":
            self.take()
            return Call(name.text, (), name.column, ())
        while True:
            token = self.take()
            if token.kind not in ("word", "string"):
                raise self.fail(f"expected an argument of {name.text}(), found {_describe(token)}", token)
            args.append(token.text)
            columns.append(token.column)
            token = self.take()
            if token.kind == ")":
                return Call(name.text, tuple(args), name.column, tuple(columns))
            if token.kind != ",":
                raise self.fail(f"expected ',' or ')' in {name.text}(), found {_describe(token)}", token)


def _join(kind: type[And] | type[Or], operands: list[Expression]) -> Expression:
    """One operand stays itself; nested operators of the same kind are flattened."""
    if len(operands) == 1:
        return operands[0]
    flat: list[Expression] = []
    for operand in operands:
        flat.extend(operand.operands if isinstance(operand, kind) else (operand,))
    return kind(tuple(flat))


def parse(text: str) -> Expression:
    """The expression tree of ``text``; raises :class:`FilterError` at the offending column."""
    return _Parser(text).whole()
