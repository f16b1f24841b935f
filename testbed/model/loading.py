"""Shared helpers for reading user files (YAML, TOML, JSON lines, scripts) into pydantic models.

Contracts:

- Every failure raises `InputError(file, field, problem)`; nothing here raises anything
  else on any input (no `UnicodeDecodeError`, `RecursionError` or `OSError` escapes).
- `read_text` reads a regular file of at most `MAX_FILE_BYTES` as UTF-8: a missing file, a
  directory, a device or FIFO, a file that is too large, or bytes that are not UTF-8 (named
  by line and column) are `InputError`s.
- Parsed documents (`read_yaml`, `read_toml`, `parse_json`) are checked by `check_shape`:
  at most `MAX_DEPTH` levels of nesting and `MAX_VALUES` values in all (YAML aliases are
  counted every time they are used, so an alias bomb is refused, not expanded).
- pydantic's error locations become dotted field paths as the user wrote them
  (`limits.agent_time_s`, `nodes[web].memory`: list items by the item's `name` or `id`
  where it has one, else by index); pydantic's own labels of union members and tags
  (`str`, `literal[...]`, `url`) never appear in a field path.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from testbed.errors import InputError

M = TypeVar("M", bound=BaseModel)

MAX_FILE_BYTES = 4 * 2**20
"""Largest definition, script or replay file read (4 MiB)."""

MAX_LOG_BYTES = 256 * 2**20
"""Largest JSONL log read whole (`analyze commands`, `replay:FILE`): 256 MiB."""

MAX_DEPTH = 32
"""Deepest nesting of lists and mappings accepted in a parsed document."""

MAX_VALUES = 200_000
"""Most values (scalars, lists, mappings) a parsed document may hold."""


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


def _decode_error(path: str | Path, data: bytes, exc: UnicodeDecodeError) -> InputError:
    line = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    return InputError(path, None, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column {column}")


def decode_text(data: bytes, path: str | Path) -> str:
    """`data` as UTF-8 text; bytes that are not UTF-8 are an `InputError` naming line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _decode_error(path, data, exc) from None


def read_text(path: Path, *, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file `path` (see the module contract)."""
    try:
        if not path.is_file():
            if path.is_dir():
                problem = "is a directory, not a file"
            else:
                problem = "is not a regular file" if path.exists() else "no such file"
            raise InputError(path, None, problem)
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(path, None, f"is larger than {limit // 2**20} MiB")
    return decode_text(data, path)


def check_shape(data: Any, path: str | Path, field: str | None = None) -> None:
    """Refuse documents nested deeper than `MAX_DEPTH` or holding more than `MAX_VALUES` values."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise InputError(path, field, f"holds more than {MAX_VALUES} values (YAML aliases count each time)")
        if isinstance(value, dict | list | tuple):
            if depth > MAX_DEPTH:
                raise InputError(path, field, f"is nested deeper than {MAX_DEPTH} levels")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)


def _parse(
    parse: Callable[[str], Any],
    text: str,
    source: str | Path,
    field: str | None,
    syntax: type[Exception],
    describe: Callable[[Any], str],
) -> Any:
    """`parse(text)`, checked by `check_shape`; a `syntax` error (described by `describe`)
    or a document too deep for the parser is an `InputError`."""
    try:
        value = parse(text)
    except syntax as exc:
        raise InputError(source, field, describe(exc)) from None
    except RecursionError:
        raise InputError(source, field, f"is nested deeper than {MAX_DEPTH} levels") from None
    check_shape(value, source, field)
    return value


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping; syntax errors and non-mapping documents are `InputError`s."""
    data = _parse(
        lambda text: yaml.load(text, Loader=_UniqueKeyLoader),
        read_text(path),
        path,
        None,
        yaml.YAMLError,
        lambda exc: f"invalid YAML: {exc}",
    )
    if not isinstance(data, dict):
        raise InputError(path, None, "expected a mapping at the top level")
    return data


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML document; syntax errors are `InputError`s."""
    data: dict[str, Any] = _parse(
        tomllib.loads, read_text(path), path, None, tomllib.TOMLDecodeError, lambda exc: f"invalid TOML: {exc}"
    )
    return data


def parse_json(text: str, source: str | Path, field: str | None = None) -> Any:
    """One JSON value (for example a line of a JSONL file); `field` names where it is."""
    return _parse(
        json.loads,
        text,
        source,
        field,
        json.JSONDecodeError,
        lambda exc: f"not valid JSON ({exc.msg} at column {exc.colno})",
    )


def _label(entry: Any, index: int) -> str:
    name = entry.get("name") or entry.get("id") if isinstance(entry, dict) else None
    return f"[{name}]" if isinstance(name, str | int) and not isinstance(name, bool) and name != "" else f"[{index}]"


def field_path(loc: tuple[int | str, ...], data: Any) -> str:
    """Render a pydantic location as `nodes[web].memory` (see the module contract).

    The location is walked together with the data: a string that does not name a key of
    the mapping at that point (a union member such as `str` or `literal['a']`, or the tag of
    a tagged union such as `url`) is pydantic's label, not the user's field, and is dropped;
    the last element is kept when it names a mapping's key (a missing or unknown field)."""
    parts: list[str] = []
    cursor: Any = data
    tag_used: set[int] = set()
    for position, item in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(item, int):
            if isinstance(cursor, list) and 0 <= item < len(cursor):
                label, cursor = _label(cursor[item], item), cursor[item]
            elif isinstance(cursor, dict) and item in cursor:
                label, cursor = f"[{item}]", cursor[item]
            else:
                label, cursor = f"[{item}]", None
            if parts:
                parts[-1] += label
            else:
                parts.append(label)
            continue
        if not isinstance(cursor, dict):
            continue  # a union member's label under a scalar or list
        if cursor.get("type") == item and id(cursor) not in tag_used and not last:
            tag_used.add(id(cursor))
            continue  # the tag of a tagged union (`source.url.sha256` is `source.sha256`)
        if item in cursor or last:
            parts.append(str(item))
            cursor = cursor.get(item)
    return ".".join(parts)


def _problem(err: Any) -> str:
    """pydantic's message without its prefixes (see `_got` for the offending value)."""
    kind = err.get("type", "")
    msg: str = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if kind == "extra_forbidden":
        return "unknown field (check its spelling; the format has no such field)"
    if kind == "missing":
        return "missing: this field is required"
    return msg


def _got(err: Any) -> str:
    """` (got 'lots')`: the offending value of a type or range error, when it is short."""
    value = err.get("input")
    scalar = isinstance(value, str | int | float | bool)
    if scalar and err.get("type") not in ("value_error", "assertion_error", "missing") and len(repr(value)) <= 60:
        return f" (got {value!r})"
    return ""


def _most_specific(fields: list[str]) -> str:
    """The first field that no other field lies under (`images[1]` rather than `images`,
    when a union's list member failed at an item and its literal member at the whole)."""
    for candidate in fields:
        if not any(other.startswith((candidate + ".", candidate + "[")) for other in fields):
            return candidate
    return fields[0]


def validate(
    model: type[M],
    data: dict[str, Any],
    path: str | Path | None,
    context: dict[str, Any] | None = None,
    *,
    prefix: str = "",
) -> M:
    """Validate `data` as `model`; the first error becomes an `InputError` for `path` (its
    field path after `prefix`, for a table validated on its own, such as `reward`).

    Several errors at one field (the alternatives of a union: a string, or a table) are
    joined with "or"; errors at other fields are counted as "(and N more)"."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        by_field: dict[str, list[str]] = {}
        got: dict[str, str] = {}
        for err in exc.errors():
            loc = tuple(x for x in err["loc"] if x != "__root__")
            where = field_path(loc, data)
            problems = by_field.setdefault(where, [])
            problem = _problem(err)
            if problem not in problems:
                problems.append(problem)
            got.setdefault(where, _got(err))
        field = _most_specific(list(by_field))
        extra = f" (and {len(by_field) - 1} more)" if len(by_field) > 1 else ""
        problem = " or ".join(by_field[field]) + got[field] + extra
        raise InputError(path, ".".join(p for p in (prefix, field) if p) or None, problem) from None
