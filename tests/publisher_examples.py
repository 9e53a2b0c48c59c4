"""Publishers' own examples (tests/data/aws_cli, tests/data/events) and botocore's output shapes.

- :func:`cli_outputs`: the JSON blocks after ``Output::`` in an AWS CLI example page (reStructuredText, the block
  indented under it), in order.
- :func:`shape_errors`: what botocore's model of an operation's output says is wrong with a response: members the
  shape does not have, required members missing, wrong types, values outside an enum. A fixture botocore's
  model contradicts fails.
- :func:`as_boto3`: a response as boto3 hands it to a parser (timestamps parsed into datetimes, as botocore's
  response parsers do), so the same fixture drives the adapters.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
from botocore.model import Shape
from botocore.utils import parse_timestamp

DATA = Path(__file__).parent / "data"
AWS_CLI = DATA / "aws_cli"
EVENTS = DATA / "events"


def git_blob_sha(path: Path) -> str:
    """The file's git blob id: equal to the id of the publisher's file at the commit its README names iff the copy
    is byte for byte the same."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's object id, not a security hash


def output_blocks(text: str) -> list[str]:
    """The literal blocks after each ``Output::`` line, dedented."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.rstrip().endswith("Output::"):
            block = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.startswith(" "):
                    break
                block.append(nxt)
            out.append(textwrap.dedent("\n".join(block)).strip())
    return out


def cli_outputs(name: str) -> list[Any]:
    """The example outputs of ``tests/data/aws_cli/<name>.rst`` as JSON."""
    return [json.loads(b) for b in output_blocks((AWS_CLI / f"{name}.rst").read_text())]


def event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{name}.json").read_text())  # type: ignore[no-any-return]


@cache
def _service(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


def output_shape(service: str, operation: str) -> Shape:
    shape = _service(service).operation_model(operation).output_shape
    assert shape is not None, f"{service} {operation} has no output shape"
    return shape


def shape_errors(value: Any, shape: Shape, path: str = "") -> list[str]:
    """Everything botocore's ``shape`` says is wrong with ``value`` (empty: it fits)."""
    where = path or shape.name
    if shape.type_name in ("structure", "list", "map"):
        return _container_errors(value, shape, where)
    return _scalar_errors(value, shape, where)


def _container_errors(value: Any, shape: Shape, where: str) -> list[str]:
    """A structure, a list or a map: the value's own kind, then each member against its shape."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{where}: got {type(value).__name__}; the shape is a structure"]
        errors = [f"{where}.{m}: required by {shape.name}, missing" for m in shape.required_members if m not in value]
        for key, item in value.items():
            if key not in shape.members:
                errors.append(f"{where}.{key}: not a member of {shape.name} ({', '.join(sorted(shape.members))})")
            else:
                errors += shape_errors(item, shape.members[key], f"{where}.{key}")
        return errors
    if kind == "list":
        if not isinstance(value, list):
            return [f"{where}: got {type(value).__name__}; the shape is a list"]
        return [e for i, item in enumerate(value) for e in shape_errors(item, shape.member, f"{where}[{i}]")]
    if not isinstance(value, dict):  # a map
        return [f"{where}: got {type(value).__name__}; the shape is a map"]
    return [e for k, v in value.items() for e in shape_errors(k, shape.key, f"{where} key {k!r}")
            + shape_errors(v, shape.value, f"{where}[{k!r}]")]


def _scalar_errors(value: Any, shape: Shape, where: str) -> list[str]:
    """A string (and its enum), a number, a boolean or a timestamp; blobs and documents are not checked."""
    kind = shape.type_name
    if kind == "string":
        if not isinstance(value, str):
            return [f"{where}: got {value!r}; the shape is a string"]
        enum = shape.enum
        return [f"{where}: got {value!r}; {shape.name} allows {enum}"] if enum and value not in enum else []
    if kind in ("integer", "long"):
        return [] if isinstance(value, int) and not isinstance(value, bool) else [
            f"{where}: got {value!r}; the shape is an {kind}"]
    if kind in ("double", "float"):
        return [] if isinstance(value, int | float) and not isinstance(value, bool) else [
            f"{where}: got {value!r}; the shape is a {kind}"]
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f"{where}: got {value!r}; the shape is a boolean"]
    if kind == "timestamp":
        if isinstance(value, datetime):
            return []
        try:
            parse_timestamp(value)
        except (ValueError, TypeError):
            return [f"{where}: got {value!r}; the shape is a timestamp"]
        return []
    return []  # blob, document: not in the outputs read here


def response_errors(service: str, operation: str, value: Any) -> list[str]:
    return shape_errors(value, output_shape(service, operation))


def as_boto3(value: Any, shape: Shape) -> Any:
    """``value`` as boto3 returns it: timestamps as datetimes, doubles as floats; the rest unchanged."""
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        return {k: as_boto3(v, shape.members[k]) if k in shape.members else v for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [as_boto3(v, shape.member) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: as_boto3(v, shape.value) for k, v in value.items()}
    if kind == "timestamp" and not isinstance(value, datetime):
        return parse_timestamp(value)
    if kind in ("double", "float") and isinstance(value, int):
        return float(value)
    return value


def response(service: str, operation: str, value: Any) -> Any:
    """``value`` checked against the operation's output shape and converted as boto3 would."""
    errors = response_errors(service, operation, value)
    assert not errors, "\n".join(errors)
    return as_boto3(value, output_shape(service, operation))
