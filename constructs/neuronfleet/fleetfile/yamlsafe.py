"""Read a fleet file's YAML so that no input can crash the reader or exhaust the machine.

``load_yaml_text(data, source=...)`` and ``load_yaml_file(path)`` return plain Python (dict, list, str, int,
float, bool, None, date/datetime) or raise :class:`YamlProblem`, whose ``problem`` is a
:class:`neuronfleet.core.problems.Problem` naming where (``line 4, column 3``, or ``(file)``), what was found and
what is allowed:

- at most :data:`MAX_BYTES` of UTF-8 (a leading BOM is allowed); a non-UTF-8 byte is reported with its line,
  column and value;
- a key used twice in one mapping is refused (merge keys ``<<`` still work, and may be overridden);
- aliases are bounded: the document, with every alias expanded, may hold at most :data:`MAX_NODES` values
  (a "billion laughs" document is refused before anything is constructed), and no recursive alias;
- nesting is at most :data:`MAX_DEPTH` levels (PyYAML's composer recurses);
- syntax errors carry PyYAML's ``problem_mark``, reported 1-based.

PyYAML's YAML 1.1 scalars are kept (``yes`` is ``True``): refusing ``count: yes`` is the schema's job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..core.problems import Problem

MAX_BYTES = 1 << 20
"""1 MiB: a fleet file is a few kilobytes."""
MAX_NODES = 10_000
"""Values in the document after expanding every alias (config/prod.yaml has a few hundred)."""
MAX_DEPTH = 64
"""Nesting levels of mappings and sequences."""

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlProblem(ValueError):
    """A fleet file that cannot be read as YAML; ``problem`` says where, what and what is allowed."""

    def __init__(self, problem: Problem, source: str = "<yaml>") -> None:
        self.problem = problem
        self.source = source
        super().__init__(f"{source}: {problem}")


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _line_text(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line].strip() if 0 <= line < len(lines) else ""


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, deep nesting and values that crash PyYAML's constructors."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _Refused(Problem(_where(mark), f"nesting deeper than {MAX_DEPTH} levels",
                                       f"mappings and lists nested at most {MAX_DEPTH} levels deep"))
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.get(key)
                except TypeError:  # unhashable: the base class reports it with its mark
                    continue
                if seen is not None:
                    raise _Refused(Problem(_where(key_node.start_mark), key,
                                           f"a key used once in this mapping (first at line {seen + 1})"))
                first[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # e.g. more digits than int() accepts
            raise _Refused(Problem(_where(node.start_mark), _short(node.value),
                                   "a whole number of at most 4300 digits")) from None

    def construct_yaml_timestamp(self, node: ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError):  # 2026-02-30 matches YAML's timestamp pattern
            raise _Refused(Problem(_where(node.start_mark), _short(node.value),
                                   "a real date YYYY-MM-DD (or date and time)")) from None

    def construct_plain_only(self, node: Node) -> Any:
        raise _Refused(Problem(_where(node.start_mark), node.tag,
                               "plain YAML: mappings, lists, text, numbers, true/false, null and dates"))


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)
for _tag in ("binary", "set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _Loader.construct_plain_only)


class _Refused(Exception):
    """Internal: a Problem found while composing or constructing (not a YAMLError, so PyYAML won't wrap it)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_expanded_size(root: Node) -> None:
    """Count the values of the document with every alias expanded, without expanding anything.

    Aliases make PyYAML share one node; the expanded size of a node is 1 + the sizes of its children,
    memoised per node, so this is linear in the distinct nodes even for a billion-laughs document.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            if isinstance(node, SequenceNode):
                children: list[Node] = list(node.value)
            elif isinstance(node, MappingNode):
                children = [n for pair in node.value for n in pair]
            else:
                children = []
            size = 1 + sum(sizes[id(c)] for c in children)
            sizes[key] = size
            if size > MAX_NODES:
                raise _Refused(Problem(_where(node.start_mark), f"{size:,} values once aliases are expanded",
                                       f"at most {MAX_NODES:,} values with every alias (*name) expanded"))
            continue
        if key in sizes:
            continue
        if key in active:
            raise _Refused(Problem(_where(node.start_mark), "an alias inside its own anchor",
                                   "aliases (*name) that refer to a completed anchor, not recursive ones"))
        active.add(key)
        stack.append((node, True))
        if isinstance(node, SequenceNode):
            stack.extend((c, False) for c in node.value)
        elif isinstance(node, MappingNode):
            stack.extend((c, False) for pair in node.value for c in pair)


def _decode(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1:].decode("utf-8", errors="replace")) + 1
        bad = data[exc.start: exc.start + 1]
        raise _Refused(Problem(f"line {line}, column {column}", f"byte 0x{bad.hex()}",
                               "UTF-8 text (save the file as UTF-8)")) from None


def load_yaml_text(data: bytes, *, source: str = "<yaml>") -> Any:
    """Parse one YAML document from ``data`` into plain Python; raise :class:`YamlProblem` if it cannot be used."""
    try:
        if len(data) > MAX_BYTES:
            raise _Refused(Problem("(file)", f"{len(data):,} bytes", f"a file of at most {MAX_BYTES:,} bytes"))
        text = _decode(data)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_expanded_size(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except _Refused as exc:
        raise YamlProblem(exc.problem, source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = (exc.problem or "").strip()
        if mark is None:
            raise YamlProblem(Problem("(file)", what, "valid YAML"), source) from None
        found = _line_text(mark.buffer or "", mark.line) if mark.buffer else ""
        if "could not determine a constructor" in what:
            raise YamlProblem(Problem(_where(mark), _short(found or what),
                                      "plain YAML without language tags (!!python/..., !ruby/...): mappings, "
                                      "lists, text, numbers, true/false, null and dates"), source) from None
        hint = "; indent with spaces, not tabs" if "\\t" in what or "tab" in what else ""
        raise YamlProblem(Problem(_where(mark), _short(found or what),
                                  f"valid YAML here (the parser says: {what}){hint}"), source) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, e.g. a control character
        before = text[: exc.position]
        line = before.count("\n") + 1
        column = exc.position - (before.rfind("\n") + 1) + 1
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        shown = f"character U+{ord(char):04X}" if len(char) == 1 else char
        raise YamlProblem(Problem(f"line {line}, column {column}", shown,
                                  "printable characters (YAML forbids control characters)"), source) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(Problem("(file)", _short(str(exc).splitlines()[0] if str(exc) else ""), "valid YAML"),
                          source) from None
    except RecursionError:
        raise YamlProblem(Problem("(file)", "deeply nested YAML",
                                  f"mappings and lists nested at most {MAX_DEPTH} levels deep"), source) from None


def load_yaml_file(path: str | Path) -> Any:
    """Read at most :data:`MAX_BYTES` (+1, to tell a longer file) from ``path`` and parse it (:func:`load_yaml_text`)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise YamlProblem(Problem("(file)", str(path), f"a readable file ({exc.strerror or exc})"), str(path)) from None
    if len(data) > MAX_BYTES:
        raise YamlProblem(Problem("(file)", f"more than {MAX_BYTES:,} bytes", f"a file of at most {MAX_BYTES:,} bytes"),
                          str(path))
    return load_yaml_text(data, source=str(path))
