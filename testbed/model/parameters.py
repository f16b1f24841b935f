"""Seeded task parameters (`[parameters]` in task.toml) and the `{{ name }}` templates
that use them.

    [parameters]
    port = { type = "port", min = 20000, max = 29999, avoid = [22, 80] }
    workers = { type = "int", min = 2, max = 8 }
    flavour = { type = "choice", values = ["alpha", "beta"] }
    account = { type = "name", pattern = "svc-[a-z]{4}[0-9]{2}" }
    swap = { type = "size", min = "128M", max = "256M", step = "64M" }

Generators (`type`):
- `port`: an integer in [min, max] (1..65535), never one of `avoid` and never a port an
  earlier `port` parameter of the task drew (declaration order), so the ports of one task
  never collide;
- `int`: an integer in [min, max];
- `choice`: one of `values` (strings or integers, at least one, no duplicates);
- `name`: a string from `pattern`, a tiny regular language: literal characters
  (`a-z A-Z 0-9 - _ .`), classes `[a-z0-9_]` of characters and ranges, each optionally
  repeated `{n}` or `{m,n}` times; at most 64 characters;
- `size`: a size `min + k * step` <= `max` (K, M, G: powers of 1024), rendered in the
  largest unit that divides it (`"192M"`); the extra values `NAME_bytes`, `NAME_kib` and
  `NAME_mib` hold it as integers.

Contracts:
- `draw(parameters, seed, task_id)` is a pure function of its arguments: each parameter's
  value comes from its own stream (SHA-256 of the task id, the parameter's name, the seed
  and a counter), so adding or removing a parameter does not change the others, and no
  Python version changes a scenario (Python's `random` is not used).
- A template is `{{ name }}` (spaces optional) where name is an identifier; `render` puts
  the value in; a string that is exactly one template of an integer value renders to the
  integer itself (`port = "{{ port }}"` in a check becomes an int). Text without `{{ ident
  }}` is unchanged; `names_in(text)` lists the names a text uses, so a loader can refuse
  names the task does not declare.
- Every problem is a `ValueError` with a message that names the field; the task loader
  turns it into an `InputError` (file, field, problem).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TEMPLATE_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
WHOLE_TEMPLATE_RE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
PARAMETER_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
SIZE_RE = re.compile(r"^([1-9][0-9]*)([KMG])$")
SIZE_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}
NAME_LITERAL = re.compile(r"[A-Za-z0-9_.-]")
MAX_NAME_LENGTH = 64

Value = int | str


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PortParam(_Spec):
    type: Literal["port"]
    min: int = Field(ge=1, le=65535)
    max: int = Field(ge=1, le=65535)
    avoid: list[int] = []

    @model_validator(mode="after")
    def _range(self) -> PortParam:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        if len({p for p in self.avoid if self.min <= p <= self.max}) >= self.max - self.min + 1:
            raise ValueError("every port of the range is avoided")
        return self


class IntParam(_Spec):
    type: Literal["int"]
    min: int
    max: int

    @model_validator(mode="after")
    def _range(self) -> IntParam:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class ChoiceParam(_Spec):
    type: Literal["choice"]
    values: list[Value] = Field(min_length=1)

    @field_validator("values")
    @classmethod
    def _unique(cls, values: list[Value]) -> list[Value]:
        if len(set(values)) != len(values):
            raise ValueError("values must not repeat")
        return values


class NameParam(_Spec):
    type: Literal["name"]
    pattern: str = Field(min_length=1)

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, pattern: str) -> str:
        atoms = parse_name_pattern(pattern)
        longest = sum(high for _chars, _low, high in atoms)
        if longest > MAX_NAME_LENGTH:
            raise ValueError(f"names from this pattern can be {longest} characters long (at most {MAX_NAME_LENGTH})")
        return pattern


class SizeParam(_Spec):
    type: Literal["size"]
    min: str
    max: str
    step: str

    @field_validator("min", "max", "step")
    @classmethod
    def _size(cls, value: str) -> str:
        parse_size(value)
        return value

    @model_validator(mode="after")
    def _range(self) -> SizeParam:
        if parse_size(self.min) > parse_size(self.max):
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


Parameter = Annotated[PortParam | IntParam | ChoiceParam | NameParam | SizeParam, Field(discriminator="type")]


def parse_size(text: str) -> int:
    """Bytes of a size such as `128M` (K, M, G are powers of 1024)."""
    m = SIZE_RE.match(text)
    if not m:
        raise ValueError(f"'{text}' is not a size (a positive integer with K, M or G: 64M, 2G)")
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def format_size(size: int) -> str:
    """`size` bytes in the largest unit that divides it (`192M`)."""
    for unit in ("G", "M", "K"):
        if size % SIZE_UNITS[unit] == 0:
            return f"{size // SIZE_UNITS[unit]}{unit}"
    raise ValueError(f"{size} bytes is not a whole number of KiB")


def parse_name_pattern(pattern: str) -> list[tuple[str, int, int]]:
    """The atoms of a name pattern: (characters to choose from, least, most repeats)."""
    atoms: list[tuple[str, int, int]] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            end = pattern.find("]", i)
            if end < 0:
                raise ValueError(f"pattern '{pattern}': '[' at {i} is not closed")
            chars = _class_chars(pattern[i + 1 : end], pattern)
            i = end + 1
        elif NAME_LITERAL.fullmatch(pattern[i]):
            chars = pattern[i]
            i += 1
        else:
            raise ValueError(f"pattern '{pattern}': '{pattern[i]}' is not allowed (letters, digits, - _ . and [...])")
        low = high = 1
        repeat = re.match(r"\{(\d+)(?:,(\d+))?\}", pattern[i:])
        if repeat:
            low = int(repeat.group(1))
            high = int(repeat.group(2)) if repeat.group(2) is not None else low
            if low > high or high == 0:
                raise ValueError(f"pattern '{pattern}': bad repetition {repeat.group(0)}")
            i += len(repeat.group(0))
        atoms.append((chars, low, high))
    return atoms


def _class_chars(body: str, pattern: str) -> str:
    chars: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            first, last = body[i], body[i + 2]
            if not (NAME_LITERAL.fullmatch(first) and NAME_LITERAL.fullmatch(last)) or first > last:
                raise ValueError(f"pattern '{pattern}': bad range {first}-{last}")
            chars += [chr(c) for c in range(ord(first), ord(last) + 1) if NAME_LITERAL.fullmatch(chr(c))]
            i += 3
        elif NAME_LITERAL.fullmatch(body[i]):
            chars.append(body[i])
            i += 1
        else:
            raise ValueError(f"pattern '{pattern}': '{body[i]}' is not allowed in a class")
    if not chars:
        raise ValueError(f"pattern '{pattern}': empty class []")
    return "".join(dict.fromkeys(chars))


class _Stream:
    """Deterministic integers for one parameter (see the module contract)."""

    def __init__(self, task_id: str, name: str, seed: int) -> None:
        self.prefix = f"testbed-parameter\0{task_id}\0{name}\0{seed}\0".encode()
        self.counter = 0

    def _next64(self) -> int:
        digest = hashlib.sha256(self.prefix + str(self.counter).encode()).digest()
        self.counter += 1
        return int.from_bytes(digest[:8], "big")

    def below(self, n: int) -> int:
        """A uniform integer in [0, n) (rejection sampling: no modulo bias)."""
        if n <= 0:
            raise ValueError("empty range")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            value = self._next64()
            if value < limit:
                return value % n


def _draw_one(spec: Any, stream: _Stream, taken_ports: set[int]) -> Value:
    if isinstance(spec, PortParam):
        banned = set(spec.avoid) | taken_ports
        free = spec.max - spec.min + 1 - len({p for p in banned if spec.min <= p <= spec.max})
        if free <= 0:
            raise ValueError("no port of the range is free (avoid list and the task's other ports)")
        index = stream.below(free)
        for port in range(spec.min, spec.max + 1):
            if port in banned:
                continue
            if index == 0:
                return port
            index -= 1
        raise AssertionError("unreachable")
    if isinstance(spec, IntParam):
        return spec.min + stream.below(spec.max - spec.min + 1)
    if isinstance(spec, ChoiceParam):
        return spec.values[stream.below(len(spec.values))]
    if isinstance(spec, NameParam):
        out = []
        for chars, low, high in parse_name_pattern(spec.pattern):
            for _ in range(low + stream.below(high - low + 1)):
                out.append(chars[stream.below(len(chars))])
        return "".join(out)
    if isinstance(spec, SizeParam):
        low, high, step = parse_size(spec.min), parse_size(spec.max), parse_size(spec.step)
        return format_size(low + step * stream.below((high - low) // step + 1))
    raise TypeError(f"unknown parameter {spec!r}")


def draw(parameters: Mapping[str, Any], seed: int, task_id: str) -> dict[str, Value]:
    """The values of `parameters` for `seed` (see the module contract), with the extra
    values of `size` parameters."""
    values: dict[str, Value] = {}
    taken: set[int] = set()
    for name, spec in parameters.items():
        try:
            value = _draw_one(spec, _Stream(task_id, name, seed), taken)
        except ValueError as exc:
            raise ValueError(f"parameters.{name}: {exc}") from exc
        values[name] = value
        if isinstance(spec, PortParam):
            assert isinstance(value, int)
            taken.add(value)
        if isinstance(spec, SizeParam):
            assert isinstance(value, str)
            size = parse_size(value)
            values[f"{name}_bytes"], values[f"{name}_kib"], values[f"{name}_mib"] = size, size // 1024, size // 1024**2
    return values


def value_names(parameters: Mapping[str, Any]) -> set[str]:
    """Every template name the parameters provide (size parameters' extras included)."""
    names = set(parameters)
    for name, spec in parameters.items():
        if isinstance(spec, SizeParam):
            names |= {f"{name}_bytes", f"{name}_kib", f"{name}_mib"}
    return names


def names_in(text: str) -> set[str]:
    """The template names `text` uses."""
    return set(TEMPLATE_RE.findall(text))


def render(text: str, values: Mapping[str, Value]) -> str:
    """`text` with every `{{ name }}` replaced by its value (`KeyError` for an unknown name)."""
    return TEMPLATE_RE.sub(lambda m: str(values[m.group(1)]), text)


def render_value(value: Any, values: Mapping[str, Value]) -> Any:
    """`value` (a JSON-like tree) with every string rendered; a string that is exactly one
    template of an integer value becomes that integer."""
    if isinstance(value, str):
        whole = WHOLE_TEMPLATE_RE.match(value)
        if whole and isinstance(values.get(whole.group(1)), int):
            return values[whole.group(1)]
        return render(value, values)
    if isinstance(value, list):
        return [render_value(v, values) for v in value]
    if isinstance(value, tuple):
        return tuple(render_value(v, values) for v in value)
    if isinstance(value, dict):
        return {k: render_value(v, values) for k, v in value.items()}
    return value


def strings_in(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(dotted field path, string) of every string in a JSON-like tree."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            label = item.get("id") or item.get("name") if isinstance(item, dict) else None
            yield from strings_in(item, f"{path}[{label or i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(item, f"{path}.{key}" if path else str(key))


def check_parameter_names(parameters: Mapping[str, Any]) -> None:
    """Parameter names are lowercase identifiers (`ValueError` naming the first bad one)."""
    for name in parameters:
        if not PARAMETER_NAME_RE.match(name):
            raise ValueError(f"parameter name '{name}' must be a lowercase identifier (a-z, 0-9, _; 40 characters)")
