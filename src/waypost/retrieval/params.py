"""Typed, per-strategy parameters, settable per query (API: a mapping; CLI: ``--param name=value``)."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from waypost.errors import InvalidInputError

P = TypeVar("P")


@dataclasses.dataclass(frozen=True)
class NoParams:
    """A strategy without parameters."""


def _convert(strategy: str, name: str, kind: Any, value: object) -> object:
    if isinstance(value, str) and value.strip().lower() in ("none", "null", "") and _optional(kind):
        return None
    base = _base(kind)
    try:
        if base is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if base is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(str(value)) if isinstance(value, str) else int(value)  # type: ignore[call-overload]
        if base is float:
            return float(value)  # type: ignore[arg-type]
        return str(value)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"strategy {strategy!r}: parameter {name!r} takes {getattr(base, '__name__', base)}, not {value!r}"
        ) from None


def _optional(kind: Any) -> bool:
    return type(None) in typing.get_args(kind)


def _base(kind: Any) -> Any:
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        return args[0] if args else str
    return kind


def parse_params(strategy: str, params_type: type[P], raw: Mapping[str, object] | None) -> P:
    """``raw`` values (strings from the CLI, or typed values from the API) checked against ``params_type``."""
    raw = dict(raw or {})
    hints = typing.get_type_hints(params_type)
    fields = {f.name: f for f in dataclasses.fields(params_type)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        known = ", ".join(fields) or "none"
        raise InvalidInputError(
            f"strategy {strategy!r} has no parameter {', '.join(map(repr, unknown))} (it takes: {known})"
        )
    values = {name: _convert(strategy, name, hints[name], value) for name, value in raw.items()}
    instance = params_type(**values)
    check = getattr(instance, "check", None)
    if callable(check):
        problem = check()
        if problem:
            raise InvalidInputError(f"strategy {strategy!r}: {problem}")
    return instance


def split_assignments(items: list[str]) -> dict[str, str]:
    """``["budget=1000", "top_k=3"]`` as a mapping; a clear error for anything else."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InvalidInputError(f"--param takes name=value, not {item!r}")
        out[name.strip()] = value.strip()
    return out


def describe(params_type: type[Any]) -> str:
    """``budget: int = 2000, ...`` for help texts."""
    hints = typing.get_type_hints(params_type)
    parts = []
    for f in dataclasses.fields(params_type):
        kind = hints[f.name]
        parts.append(f"{f.name}: {getattr(_base(kind), '__name__', kind)} = {f.default!r}")
    return ", ".join(parts)
