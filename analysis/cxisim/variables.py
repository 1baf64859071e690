"""Template variables: the types and ranges a scenario template declares, checked before it is rendered.

A template declares its variables in a Jinja2 comment that starts with `variables:` (so the rendered text
does not change; the rest of that line is free text), one per line:

    {#- variables: types and ranges, checked before rendering
        clients: int 1..1104896
        load: number 0..1
        strategy: word
        mr_method: one of optimized, standard, prov_key_cache, match_events
        victim: bool
        capture: path
        vnis: list of int 0..65535
    #}

`int LO..HI` takes an integer (or an integral number such as 1e6), `number LO..HI` any finite number,
`bool` true or false, `word` a string of letters, digits and `_.+-` (a name the engine checks, safe to
write unquoted into YAML), `path` a file name (those and `/~=,@`), `one of A, B` one of those words,
`list of int LO..HI` a list of such integers (`--set vnis=[10, 11]`).  A value given with --set (or a sweep) to a
template with such a block must be for a declared variable and is checked before anything is rendered, so
a template never divides by a zero or loops over a range it was not meant to.  Templates without a block
take any value (rendering errors are still reported as one line).  tests/py/test_frontend_inputs.py checks
that every shipped template declares every variable it reads from outside (inputs_of).
"""
import math
import re

from . import InputError
from .inputs import as_int, show

_BLOCK_RE = re.compile(r"\{#-?\s*variables:[^\n]*\n(.*?)-?#\}", re.S)
_DECL_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*?)\s*")
_RANGE_RE = re.compile(r"(list of int|int|number)\s+(\S+?)\s*\.\.\s*(\S+)")
WORD_RE = re.compile(r"[A-Za-z0-9_.+-]{1,255}")
PATH_RE = re.compile(r"[A-Za-z0-9_.+/~=,@-]{1,4096}")
LIST_MAX = 4096  # elements of a `list of int` value


class Var:
    def __init__(self, name, kind, lo=None, hi=None, choices=None):
        self.name, self.kind, self.lo, self.hi, self.choices = name, kind, lo, hi, choices

    def check(self, v):
        """The value, normalised (an integral float as int); raises ValueError(problem)."""
        if self.kind == "list of int":
            if not isinstance(v, list) or len(v) > LIST_MAX:
                raise ValueError(f"expected a list of at most {LIST_MAX} integers, got {show(v)}")
            item = Var(self.name, "int", self.lo, self.hi)
            out = []
            for i, x in enumerate(v):
                try:
                    out.append(item.check(x))
                except ValueError as e:
                    raise ValueError(f"[{i}]: {e}") from None
            return out
        if self.kind == "int":
            x = as_int(v)
            if x is None:
                raise ValueError(f"expected an integer, got {show(v)}")
        elif self.kind == "number":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"expected a number, got {show(v)}")
            x = v
        elif self.kind == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"expected true or false, got {show(v)}")
            return v
        elif self.kind == "word":
            if not isinstance(v, str) or not WORD_RE.fullmatch(v):
                raise ValueError(f"expected a word (letters, digits, '_', '.', '+', '-'), got {show(v)}")
            return v
        elif self.kind == "path":
            if not isinstance(v, str) or not PATH_RE.fullmatch(v):
                raise ValueError(f"expected a file name (letters, digits, '_.+/~=,@-'), got {show(v)}")
            return v
        else:
            if v not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}, got {show(v)}")
            return v
        if not self.lo <= x <= self.hi:
            raise ValueError(f"value {show(v)} out of range [{show(self.lo)}, {show(self.hi)}]")
        return x


def _number(s, kind):
    from .yaml12 import load
    try:
        v = load(s)
    except Exception:
        v = None
    x = v if kind == "number" else as_int(v)
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(s)
    return x


def _parse_decl(name, spec):
    m = _RANGE_RE.fullmatch(spec)
    if m:
        kind = m.group(1)
        lo, hi = _number(m.group(2), kind), _number(m.group(3), kind)  # (a list's elements: ints)
        if lo > hi:
            raise ValueError(spec)
        return Var(name, kind, lo, hi)
    if spec in ("bool", "word", "path"):
        return Var(name, spec)
    if spec.startswith("one of "):
        choices = [c.strip() for c in spec[7:].split(",")]
        if all(WORD_RE.fullmatch(c) for c in choices):
            return Var(name, "choice", choices=choices)
    raise ValueError(spec)


def declared(path, text):
    """{name: Var} of the template's `variables:` block; None when it has none."""
    m = _BLOCK_RE.search(text)
    if not m:
        return None
    line0 = text.count("\n", 0, m.start(1)) + 1
    out = {}
    for i, line in enumerate(m.group(1).split("\n")):
        if not line.strip():
            continue
        d = _DECL_RE.fullmatch(line.strip())
        try:
            if not d:
                raise ValueError(line.strip())
            if d.group(1) in out:
                raise ValueError(f"{d.group(1)} declared twice")
            out[d.group(1)] = _parse_decl(d.group(1), d.group(2))
        except ValueError as e:
            raise InputError(f"{path}:{line0 + i}: variables: cannot read declaration '{e}' (expected NAME: "
                             f"int LO..HI, number LO..HI, bool, word, path, one of A, B, ... or list of int "
                             f"LO..HI)") from None
    return out


_SET_RE = re.compile(r"\{%-?\s*set\s+([A-Za-z_][A-Za-z0-9_]*)\s*=")
_DEFAULT_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\|\s*default\b")


def inputs_of(text, used):
    """The variables a template reads from outside (what its block must declare): of those Jinja2 reports
    as used, the ones it never sets itself, or reads with `| default(...)` (`{% set n = n | default(1) %}`).
    Names it only sets and then reads (in a branch Jinja2 cannot follow) are its own."""
    own = set(_SET_RE.findall(text)) - set(_DEFAULT_RE.findall(text))
    return set(used) - own


def check(path, decl, tvars):
    """Check the template variables given (`tvars`, {name: value}) against the declarations: with a block,
    every one must be declared (so a --set cannot reach a template's own intermediate values either)."""
    if decl is None:
        return tvars
    out = {}
    for k, v in tvars.items():
        if k not in decl:
            raise InputError(f"{path}: template variable '{k}': not declared in the template's variables block "
                             f"(declared: {', '.join(sorted(decl)) or 'none'})")
        try:
            out[k] = decl[k].check(v)
        except ValueError as e:
            raise InputError(f"{path}: template variable '{k}': {e}") from None
    return out
