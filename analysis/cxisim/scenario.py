"""Scenario templates: Jinja2 over YAML, rendered with `--set` parameters into a resolved config.

A `--set key=value` is applied in one of two ways, decided by the template itself:
- if the template uses `key` (its first dotted component) as a variable, the value is passed to Jinja2;
- otherwise `key` is a dotted path into the rendered document, whose parent mapping must exist there
  (the engine then checks the field's name, type and range).
A key that is neither is an error.  Values are parsed as YAML scalars, so `--set clients=208` is an int.
"""
import copy
import json
import os

import jinja2
import jinja2.meta
import yaml

from . import InputError

# Top-level keys the front end consumes itself; they never reach the engine.
FRONT_END_KEYS = ("sweep",)


def parse_sets(items):
    """['a.b=1', 'x=foo'] -> {'a.b': 1, 'x': 'foo'} (YAML scalars)."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"--set '{item}': expected key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise InputError(f"--set '{item}': empty field name")
        try:
            out[key] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as e:
            raise InputError(f"--set '{item}': value is not a YAML scalar: {e}") from None
    return out


def _nest(flat):
    tree = {}
    for key, value in flat.items():
        node = tree
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return tree


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read scenario: {e.strerror}") from None


def template_variables(path, text=None):
    """The undeclared variables a template uses."""
    text = _read(path) if text is None else text
    env = jinja2.Environment()
    try:
        return jinja2.meta.find_undeclared_variables(env.parse(text))
    except jinja2.TemplateSyntaxError as e:
        raise InputError(f"{path}:{e.lineno}: template syntax error: {e.message}") from None


def render(path, sets=None):
    """Render the template at `path` with `sets` ({dotted key: value}); returns the resolved dict."""
    sets = dict(sets or {})
    text = _read(path)
    used = template_variables(path, text)
    tvars = {k: v for k, v in sets.items() if k.split(".")[0] in used}
    paths = {k: v for k, v in sets.items() if k not in tvars}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    try:
        rendered = env.from_string(text).render(**_nest(tvars))
    except jinja2.TemplateSyntaxError as e:
        raise InputError(f"{path}:{e.lineno}: template syntax error: {e.message}") from None
    except jinja2.UndefinedError as e:
        raise InputError(f"{path}: template error: {e.message} (give it with --set or a default)") from None
    except jinja2.TemplateError as e:
        raise InputError(f"{path}: template error: {e}") from None
    try:
        doc = yaml.safe_load(rendered)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError(f"{path}{where}: YAML error in rendered scenario: {problem}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise InputError(f"{path}: the scenario must be a mapping, got {type(doc).__name__}")
    for key, value in paths.items():
        _set_path(path, doc, key, value)
    return doc


def _set_path(path, doc, key, value):
    node = doc
    parts = key.split(".")
    for i, p in enumerate(parts[:-1]):
        if not isinstance(node, dict) or p not in node or not isinstance(node[p], dict):
            raise InputError(f"{path}: field '{key}': unknown parameter (neither a template variable nor a "
                             f"field under an existing section '{'.'.join(parts[:i + 1])}')")
        node = node[p]
    node[parts[-1]] = value


def resolved(doc, seed=None):
    """The engine's view: front-end keys removed, seed applied."""
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k not in FRONT_END_KEYS}
    if seed is not None:
        out["seed"] = seed
    return out


def dump_json(doc, fp):
    json.dump(doc, fp, indent=2, sort_keys=True)
    fp.write("\n")


def scenario_name(path, doc):
    name = doc.get("name")
    if isinstance(name, str) and name:
        return name
    base = os.path.basename(path)
    for ext in (".yaml.j2", ".yml.j2", ".j2", ".yaml", ".yml"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base
