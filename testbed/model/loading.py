"""Shared helpers for loading YAML/TOML definitions into pydantic models.

Contract: every failure raises `InputError(file, field, problem)`; pydantic's error
locations become dotted field paths (list items by the item's `name` where it has one).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from testbed.errors import InputError

M = TypeVar("M", bound=BaseModel)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys instead of keeping the last one."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping; syntax errors and non-mapping documents are `InputError`s."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror}") from exc
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise InputError(path, None, f"invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(path, None, "expected a mapping at the top level")
    return data


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML document; syntax errors are `InputError`s."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, None, f"invalid TOML: {exc}") from exc


def field_path(loc: tuple[int | str, ...], data: Any) -> str:
    """Render a pydantic location as `nodes[web].memory`, naming list items by `name`."""
    parts: list[str] = []
    cursor: Any = data
    for item in loc:
        if isinstance(item, int):
            name = None
            if isinstance(cursor, list) and 0 <= item < len(cursor):
                entry = cursor[item]
                if isinstance(entry, dict):
                    name = entry.get("name") or entry.get("id")
                cursor = entry
            else:
                cursor = None
            label = f"[{name}]" if name else f"[{item}]"
            if parts:
                parts[-1] += label
            else:
                parts.append(label)
        else:
            parts.append(str(item))
            cursor = cursor.get(item) if isinstance(cursor, dict) else None
    return ".".join(parts)


def validate(model: type[M], data: dict[str, Any], path: Path, context: dict[str, Any] | None = None) -> M:
    """Validate `data` as `model`; the first error becomes an `InputError` for `path`."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(x for x in err["loc"] if x != "__root__")
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(path, field_path(loc, data) or None, msg + extra) from exc
