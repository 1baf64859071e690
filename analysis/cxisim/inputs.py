"""Input rules every command applies: what a resolved scenario may hold, names, seeds.

A resolved scenario is what JSON and the engine's reader (json-c, sim/cfg.c) can hold without loss: mappings
with string keys, lists, strings without NUL, integers of 64 bits (-2^63 .. 2^64-1), finite numbers, booleans
and null, at most MAX_DEPTH mappings and lists deep and MAX_VALUES values in all (aliases counted as often as
they are used).  Each violation is an InputError naming the file, the field and the problem.
"""
import datetime
import hashlib
import math
import re

from . import InputError

MAX_DEPTH = 32          # mappings and lists nested in a resolved config; sim/cfg.c CFG_MAX_DEPTH reads as deep
MAX_VALUES = 1_000_000  # values after alias expansion (a billion-laughs document stops here)
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # what the engine's 64-bit fields can hold
SEED_MAX = (1 << 64) - 1

# A scenario's `name` and a run directory's name: one path component, never hidden, never `..`.
NAME_MAX_BYTES = 255
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=+-]*")
NAME_RULE = "letters, digits and '_.=+-', not starting with '.', '=', '+' or '-', at most 255 bytes"


def show(v):
    """A value as the user wrote it (YAML-ish), for messages."""
    if v is True or v is False:
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return repr(v if len(v) <= 60 else v[:57] + "...")
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, (list, tuple)):
        return "a list"
    return str(v)


def _kind(v):
    if isinstance(v, bytes):
        return "binary data (!!binary)"
    if isinstance(v, (datetime.date, datetime.datetime)):
        return "a timestamp (write it in quotes to keep it as text)"
    if isinstance(v, (set, frozenset)):
        return "a set (!!set)"
    return f"a value of type {type(v).__name__}"


def _join(field, key):
    return f"{field}.{key}" if field else str(key)


class _Walk:
    def __init__(self, where):
        self.where = where
        self.count = 0
        self.active = set()

    def fail(self, field, problem):
        raise InputError(f"{self.where}: field '{field}': {problem}")

    def value(self, v, field, depth):
        self.count += 1
        if self.count > MAX_VALUES:
            self.fail(field, f"the scenario holds more than {MAX_VALUES:,} values (an alias used too often?)")
        if v is None or v is True or v is False:
            return v
        if isinstance(v, int):
            if not INT_MIN <= v <= INT_MAX:
                self.fail(field, f"integer {show(v)} does not fit in 64 bits")
            return v
        if isinstance(v, float):
            if not math.isfinite(v):
                self.fail(field, f"{v} is not a finite number")
            return v
        if isinstance(v, str):
            return self.string(v, field, "value")
        if isinstance(v, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                self.fail(field, f"nested more than {MAX_DEPTH} mappings and lists deep")
            if id(v) in self.active:
                self.fail(field, "contains itself (a recursive alias)")
            self.active.add(id(v))
            try:
                if isinstance(v, dict):
                    out = {}
                    for k, x in v.items():
                        if not isinstance(k, str):
                            self.fail(_join(field, show(k)), f"key {show(k)} is not a string (write it in quotes)")
                        self.string(k, _join(field, k), "key")
                        out[k] = self.value(x, _join(field, k), depth + 1)
                    return out
                return [self.value(x, f"{field}[{i}]", depth + 1) for i, x in enumerate(v)]
            finally:
                self.active.discard(id(v))
        self.fail(field, f"{_kind(v)}: JSON cannot hold it")

    def string(self, s, field, what):
        if "\0" in s:
            self.fail(field, f"the {what} contains a NUL character")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            self.fail(field, f"the {what} is not valid Unicode (a lone surrogate)")
        return s


def jsonable(doc, where):
    """A copy of `doc` that JSON and the engine hold exactly (aliases expanded); InputError otherwise."""
    return _Walk(where).value(doc, "", 0)


def check_value(v, where, field):
    """`v` (a --set value for `field`) under the same rules."""
    w = _Walk(where)
    return w.value(v, field, field.count(".") + 1)


def as_int(v):
    """An integer, or an integral finite float as one (`1e12`); None for anything else."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v == math.floor(v):
        return int(v)
    return None


def check_seed(v, where):
    """The seed `v` as an int in [0, 2^64-1]; `where` starts the message (`FILE: field 'seed'`, `--seed X`)."""
    x = as_int(v)
    if x is None:
        raise InputError(f"{where}: expected a non-negative integer, got {show(v)}")
    if not 0 <= x <= SEED_MAX:
        raise InputError(f"{where}: value {show(v)} out of range [0, {SEED_MAX}]")
    return x


def seed_option(raw):
    """--seed N as given on the command line (None when absent): the same rule as a scenario's `seed`."""
    if raw is None:
        return None
    from .scenario import parse_value
    return check_seed(parse_value(raw, raw, "--seed"), f"--seed {raw}")


def check_name(v, where):
    """A scenario `name` or a --run name: one safe path component (NAME_RULE)."""
    if not isinstance(v, str):
        raise InputError(f"{where}: expected a name ({NAME_RULE}), got {show(v)}")
    if not _NAME_RE.fullmatch(v) or len(v.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES:
        raise InputError(f"{where}: {show(v)} is not a valid name ({NAME_RULE})")
    return v


CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def has_control(text):
    """Whether TEXT holds a control character (a line break among them): what must not reach one line of a
    generated script."""
    return CONTROL_RE.search(text) is not None


def dir_name(text, max_len=80):
    """`text` made a safe directory name: other characters become '-'; longer than max_len, a short hash."""
    name = re.sub(r"[^A-Za-z0-9_.=+-]", "-", text)
    if len(name) > max_len:
        name = hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    if not _NAME_RE.fullmatch(name):
        name = "_" + name
    return name
