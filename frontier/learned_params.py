"""The parameters of an offline learner's model, settable as text: the base of each learner's ``Params``.

A learner (``frontier/clustergraph/``, ``frontier/source/``) declares its parameters as a
frozen dataclass that inherits :class:`LearnedParams`, with a default for every field and a
``__post_init__`` that range-checks them (raising ``ValueError("key: problem")``). This
module gives it the rest: ``crawl learn METHOD --set key=value`` parsing (:meth:`parse`, an
error naming the key), and the plain form a model file keeps (:meth:`to_data`, floats rounded
so that the last bits of a quotient never change a model's bytes; :meth:`from_data`).
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Self


class LearnedParams:
    """Mixin for a frozen dataclass of parameters (see the module docstring)."""

    @classmethod
    def parse(cls, settings: Mapping[str, str], base: Self | None = None) -> Self:
        """``base`` (the defaults) with ``settings`` given as text; ValueError naming the key otherwise."""
        defaults = cls()
        kinds = {f.name: type(getattr(defaults, f.name)) for f in dataclasses.fields(defaults)}  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        for key, text in settings.items():
            if key not in kinds:
                raise ValueError(f"{key}: unknown parameter (known: {', '.join(sorted(kinds))})")
            values[key] = _convert(key, text, kinds[key])
        return dataclasses.replace(base or defaults, **values)  # type: ignore[type-var]

    def require(self, checks: Mapping[str, bool]) -> None:
        """For ``__post_init__``: ValueError naming the first parameter whose check is False."""
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"{name}: {getattr(self, name)!r} is out of range")

    def to_data(self) -> dict[str, object]:
        return {name: rounded(value) for name, value in dataclasses.asdict(self).items()}  # type: ignore[call-overload]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        if unknown:
            raise ValueError(f"{min(unknown)}: unknown parameter in the model")
        return cls(**data)


def _convert(key: str, text: str, kind: type) -> object:
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{key}: {text!r} is not a boolean")
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{key}: {text!r} is not {'an' if kind is int else 'a'} {kind.__name__}") from None


def rounded(value: object) -> object:
    """Floats rounded to 6 places: the last bits of a quotient must not change the bytes."""
    return round(value, 6) if isinstance(value, float) else value
