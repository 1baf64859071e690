"""YAML as scenarios and `--set` values are read: the YAML 1.2 core schema, no duplicate keys.

PyYAML implements YAML 1.1, whose implicit types surprise: `1e12` is a string (1.1 wants `1.0e+12`), `yes`,
`no`, `on` and `off` are booleans, `0777` is octal, `1:20` is sexagesimal and `2020-01-01` a date JSON cannot
hold.  The core schema of YAML 1.2 reads plain scalars as null (`null`, `~`, empty), booleans (`true`,
`false`), integers (`12`, `0o17`, `0x1f`), floats (`1e12`, `.5`, `.inf`, `.nan`) or strings, nothing else.
Explicit tags (`!!binary`, `!!timestamp`, `!!set`) still construct their types; the front end then rejects
the values JSON cannot hold, naming the field.  A key written twice in one mapping is an error (1.1 and 1.2
both say so; PyYAML silently keeps the last).
"""
import math
import re

import yaml
from yaml.constructor import ConstructorError

_CORE = [
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", list("~nN") + [""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
     r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", list("-+0123456789.")),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", ["<"]),
]


class Loader(yaml.SafeLoader):
    """SafeLoader with the YAML 1.2 core schema's implicit types and no duplicate keys."""

    yaml_implicit_resolvers = {}

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if (key.tag, key.value) in seen:
                    raise ConstructorError("while constructing a mapping", node.start_mark,
                                           f"duplicate key '{key.value}'", key.start_mark)
                seen.add((key.tag, key.value))
        return super().construct_mapping(node, deep)


for _tag, _regexp, _first in _CORE:
    Loader.add_implicit_resolver(_tag, re.compile(_regexp), _first)


def _bad(node, what):
    return ConstructorError(None, None, f"'{node.value}' is not {what}", node.start_mark)


def _int(loader, node):
    v = loader.construct_scalar(node)
    try:
        if v.startswith("0o"):
            return int(v[2:], 8)
        if v.startswith("0x"):
            return int(v[2:], 16)
        return int(v, 10)
    except ValueError:
        raise _bad(node, "an integer") from None


def _float(loader, node):
    v = loader.construct_scalar(node).lower()
    if v.lstrip("+-") == ".inf":
        return -math.inf if v.startswith("-") else math.inf
    if v == ".nan":
        return math.nan
    try:
        return float(v)
    except ValueError:
        raise _bad(node, "a number") from None


def _bool(loader, node):
    v = loader.construct_scalar(node)
    if v.lower() not in ("true", "false"):
        raise _bad(node, "true or false")
    return v.lower() == "true"


def _timestamp(loader, node):
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except (ValueError, AttributeError, TypeError):
        raise _bad(node, "a timestamp") from None


Loader.add_constructor("tag:yaml.org,2002:int", _int)
Loader.add_constructor("tag:yaml.org,2002:float", _float)
Loader.add_constructor("tag:yaml.org,2002:bool", _bool)
Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def load(text):
    """The one document in `text`.  Raises yaml.YAMLError (with a mark when it has one) or RecursionError."""
    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def error_line(e):
    """(1-based line or None, problem) of a yaml.YAMLError."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    return (mark.line + 1 if mark else None), problem
