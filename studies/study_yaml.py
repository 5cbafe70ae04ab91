"""Study files as YAML (studies/DESIGN.md, "Study files"): read safely with every node's line, and written back
in a fixed key order. Pure: no Django.

Reading composes the YAML into nodes (nothing is constructed, so no tag can run code) and turns them into
plain JSON values here: text, whole numbers, finite numbers, true/false, null, lists and mappings with text keys.
Anything else (an object tag such as `!!python/object`, any explicit tag, a date, binary, sets, merge keys,
anchors and aliases, duplicate keys) is a problem with its line, and every problem is reported, not just the first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml

Path = tuple[str | int, ...]

STR = "tag:yaml.org,2002:str"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
BOOL = "tag:yaml.org,2002:bool"
NULL = "tag:yaml.org,2002:null"
MAP = "tag:yaml.org,2002:map"
SEQ = "tag:yaml.org,2002:seq"
SCALARS = {STR, INT, FLOAT, BOOL, NULL}
# Values YAML would read as something JSON has no word for; said in terms a study author can act on.
NOT_JSON = {
    "tag:yaml.org,2002:timestamp": "a date or time: put it in quotes to keep it as text",
    "tag:yaml.org,2002:binary": "binary data is not allowed",
    "tag:yaml.org,2002:set": "a set is not allowed: use a list",
    "tag:yaml.org,2002:omap": "an ordered map is not allowed: use a mapping",
    "tag:yaml.org,2002:pairs": "pairs are not allowed: use a mapping",
    "tag:yaml.org,2002:merge": "merge keys (<<) are not allowed: write the keys out",
    "tag:yaml.org,2002:value": "the value key (=) is not allowed",
}


def path_text(path: Path) -> str:
    """("conditions", 1, "recipe") -> conditions[1].recipe; the empty path is the file itself."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(the file)"


@dataclass(frozen=True)
class Problem:
    line: int
    path: Path
    message: str

    @property
    def key(self) -> str:
        return path_text(self.path)

    def __str__(self) -> str:
        return f"line {self.line}, {self.key}: {self.message}"


class StudyFileError(Exception):
    """A study file with problems; nothing was created from it."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=lambda problem: problem.line)
        super().__init__("\n".join(str(problem) for problem in self.problems))


@dataclass
class Parsed:
    """The file's data and the line of every key and list item in it (by path)."""

    data: Any
    lines: dict[Path, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    unread: list[Path] = field(default_factory=list)  # values that could not be read, left as None

    def line(self, path: Path) -> int:
        """The line of `path`, or of the nearest enclosing key or item that has one."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path, 1)


class _Loader(yaml.SafeLoader):
    """The safe loader's scanner, parser, composer and resolver; nothing here constructs Python objects."""


def parse_yaml(text: str) -> Parsed:
    """The file's data with its lines; raises StudyFileError listing every problem found."""
    parsed = read_yaml(text)
    if parsed.problems:
        raise StudyFileError(parsed.problems)
    return parsed


def read_yaml(text: str) -> Parsed:
    """The file's data with its lines and the problems of the values it could not read (each left as None, so the
    rest can still be checked); raises StudyFileError when the text is not YAML at all."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise StudyFileError([Problem(line, (), f"not valid YAML: {error.problem or error.context}")]) from None
    except yaml.YAMLError as error:
        raise StudyFileError([Problem(1, (), f"not valid YAML: {error}")]) from None
    if root is None:
        raise StudyFileError([Problem(1, (), "the file is empty")])
    reader = _Reader()
    data = reader.value(root, ())
    return Parsed(data, reader.lines, reader.problems, reader.unread)


_SCALARS = yaml.constructor.SafeConstructor()  # used for plain scalars only, never for a tagged node


class _Reader:
    def __init__(self) -> None:
        self.lines: dict[Path, int] = {}
        self.problems: list[Problem] = []
        self.unread: list[Path] = []
        self.seen: set[int] = set()

    def problem(self, node: yaml.Node, path: Path, message: str, *, line: int | None = None) -> None:
        self.problems.append(Problem(line or node.start_mark.line + 1, path, message))

    def value(self, node: yaml.Node, path: Path) -> Any:
        problems = len(self.problems)
        value = self._value(node, path)
        if value is None and len(self.problems) > problems:
            self.unread.append(path)
        return value

    def _value(self, node: yaml.Node, path: Path) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if id(node) in self.seen:  # the composer hands an alias back as the anchored node itself
            message = "anchors and aliases (&name, *name) are not allowed: write the value out"
            self.problem(node, path, message, line=self.lines[path])
            return None
        self.seen.add(id(node))
        tag = node.tag
        if tag in NOT_JSON:
            self.problem(node, path, NOT_JSON[tag])
            return None
        if isinstance(node, yaml.ScalarNode) and tag in SCALARS:
            return self.scalar(node, path)
        if isinstance(node, yaml.SequenceNode) and tag == SEQ:
            return [self.value(item, (*path, index)) for index, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode) and tag == MAP:
            return self.mapping(node, path)
        if tag.startswith("tag:yaml.org,2002:python/"):
            kind = tag.removeprefix("tag:yaml.org,2002:")
            self.problem(node, path, f"the tag !!{kind} is refused: a study file holds data only, never objects")
        else:
            self.problem(node, path, f"the tag {tag} is not allowed: a study file holds plain data only")
        return None

    def scalar(self, node: yaml.ScalarNode, path: Path) -> Any:
        # A scalar's value by the safe loader's own rules for its (already resolved, plain) type.
        if node.tag == STR:
            return _SCALARS.construct_scalar(node)
        if node.tag == NULL:
            return None
        if node.tag == BOOL:
            return _SCALARS.construct_yaml_bool(node)
        if node.tag == INT:
            return _SCALARS.construct_yaml_int(node)
        number = _SCALARS.construct_yaml_float(node)
        if not math.isfinite(number):
            self.problem(node, path, "not a finite number (.inf and .nan are not allowed)")
            return None
        return number

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.tag == STR):
                if key_node.tag in NOT_JSON:
                    self.problem(key_node, path, NOT_JSON[key_node.tag])
                elif isinstance(key_node, yaml.ScalarNode):
                    self.problem(key_node, path, f"a key must be text, not {key_node.value}: put it in quotes")
                else:
                    self.problem(key_node, path, "a key must be text, not a list or mapping")
                continue
            key = key_node.value
            if key in result:
                first = self.lines.get((*path, key), "?")
                self.problem(key_node, (*path, key), f"the key {key!r} appears twice (first on line {first})")
                continue
            self.lines[(*path, key)] = key_node.start_mark.line + 1
            result[key] = self.value(value_node, (*path, key))
        return result


class _Dumper(yaml.SafeDumper):
    """Block style throughout; text of several lines as a literal block, so a description reads as written."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # never write anchors: the reader refuses them


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    if "\n" in text and not text.startswith((" ", "\n")) and text == text.rstrip(" ") and "\t" not in text:
        return dumper.represent_scalar(STR, text, style="|")
    return dumper.represent_scalar(STR, text)


_Dumper.add_representer(str, _represent_text)


def dump_yaml(data: Any) -> str:
    """`data` (plain JSON values, keys already in their order) as comment-free YAML."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
