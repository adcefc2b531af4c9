"""Typed reads of a JSON object, each refusal one line: the file, the key, what is allowed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pfslab.errors import KitError


class ModelError(KitError):
    """A lab file or inventory that is not what the kit wrote: one line."""


class Fields:
    """The keys of one JSON object of ``source`` (a file, or what was given), at ``where``
    (a dotted key path, '' at the top)."""

    def __init__(self, data: object, source: str, where: str = "") -> None:
        if not isinstance(data, dict):
            raise ModelError(f"{source}: {where or 'the top level'} is {kind(data)}; allowed: a JSON object")
        self.data: dict[str, Any] = data
        self.source = source
        self.where = where

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def _wrong(self, name: str, value: object, allowed: str) -> ModelError:
        return ModelError(f"{self.source}: key '{self.key(name)}' is {kind(value)}; allowed: {allowed}")

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def require(self, name: str, allowed: str) -> object:
        if self.data.get(name) is None:
            raise ModelError(f"{self.source}: key '{self.key(name)}' is missing; allowed: {allowed}")
        return self.data[name]

    def text(self, name: str, default: str | None = None) -> str:
        value = self.data.get(name) if default is not None else self.require(name, "a string")
        if value is None:
            return default or ""
        if not isinstance(value, str):
            raise self._wrong(name, value, "a string")
        return value

    def optional_text(self, name: str) -> str | None:
        return self.text(name) if self.has(name) else None

    def texts(self, name: str) -> tuple[str, ...]:
        value = self.data.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._wrong(name, value, "a list of strings")
        return tuple(value)

    def text_map(self, name: str) -> dict[str, str]:
        value = self.data.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self._wrong(name, value, "an object of strings")
        return dict(value)

    def obj(self, name: str) -> Fields:
        return Fields(self.require(name, "a JSON object"), self.source, self.key(name))

    def optional_obj(self, name: str) -> Fields | None:
        return self.obj(name) if self.has(name) else None

    def items(self, name: str, required: bool = False) -> list[Fields] | None:
        """The objects of a list (None when absent and not required)."""
        if not self.has(name):
            if required:
                self.require(name, "a list of JSON objects")
            return None
        value = self.data[name]
        if not isinstance(value, list):
            raise self._wrong(name, value, "a list of JSON objects")
        return [Fields(v, self.source, f"{self.key(name)}[{i}]") for i, v in enumerate(value)]


def kind(value: object) -> str:
    """How a JSON value is named in a refusal."""
    if value is None:
        return "null"
    names = {bool: "a boolean", str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object"}
    shown = json.dumps(value)
    return f"{names.get(type(value), type(value).__name__)} ({shown if len(shown) <= 40 else shown[:37] + '...'})"


def read_object(path: Path, what: str) -> object:
    """A JSON file's content; unreadable or not JSON: one line."""
    try:
        return json.loads(path.read_text())
    except OSError as err:
        raise ModelError(f"cannot read {what} {path}: {err.strerror}") from None
    except ValueError as err:
        raise ModelError(f"{path} is not {what} (JSON): {err}") from None
