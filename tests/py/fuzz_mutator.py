"""Seeded mutations of scenario templates and of resolved engine configs (tests/py/test_fuzz_inputs.py).

Every mutation is drawn from a random.Random the caller seeds, so a case is reproduced from (seed, index).
Mutations aim at the input rules the front end and the engine must hold (README "Running scenarios"):
non-UTF-8 bytes, Jinja2 errors and expensive expressions, YAML keys and values JSON cannot hold, aliases,
deep nesting, hostile `name`/`--run`/`seed` values, out-of-range and mistyped `--set` values, and plain
byte damage.  A mutated case may well be valid; what is checked is how it ends, not that it fails.
"""
import json
import random
import re

# Numbers at the edges of the types the front end and the engine use.
NUMBERS = ["0", "-1", "1", "2", "3", "7", "255", "256", "65535", "65536", "2147483648", "4294967296",
           "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
           "99999999999999999999999", "1e12", "1e23", "1.5e300", "1e400", "-1e308", "0.5", "-0.0", "1e-320",
           "0x10", "0o17", "017", "1_000", ".inf", "-.inf", ".nan", "1000000000000"]

# YAML scalars and small structures for a field's value.
VALUES = NUMBERS + ["abc", "''", '""', "null", "~", "true", "false", "yes", "no", "on", "2020-01-01",
                    "2020-01-01 10:00:00", "!!binary aGVsbG8=", "!!timestamp 2001-12-14", "!!float 1",
                    "!!str 3", "!!set {a, b}", "!!omap [a: 1]", "!!python/name:os.system", "&a [*a]", "[]",
                    "{}", "[1, [2, [3]]]", "{a: {b: {c: 1}}}", '"a\\0b"', '"\\x00"', '"a\\nb"', '"\\uD800"',
                    "'x' 'y'", "*undefined_alias", "<<: *a", "|\n  multi\n  line", ">-", "- a\n- b", "?", ":",
                    "'" + "x" * 300 + "'", "../../../escaped", "/tmp/abs", "\t1"]

# Whole top-level entries, inserted at a line that starts a mapping entry.
YAML_SNIPPETS = [
    "1: 2", "true: x", "null: 1", "~: 3", "1.5: y", "? [a, b]\n: 1", "? {a: 1}\n: 2", "2020-01-01: d",
    "name: ../../../escaped", "name: ../../escaped2", "name: /tmp/abs-escaped", "name: .", "name: ..",
    "name: ''", "name: \"a\\0b\"", "name: \"a\\nb\"", "name: " + "n" * 300, "name: [a]", "name: 12",
    "name: .hidden", "name: a/b", "name: \"\\u00e9t\\u00e9\"",
    "seed: 18446744073709551616", "seed: 18446744073709551615", "seed: 1e23", "seed: -1", "seed: 1.5",
    "seed: true", "seed: 99999999999999999999999", "seed: '3'",
    "description: 2020-01-01", "description: !!binary aGVsbG8=", "x: &x [*x]", "x: &x {a: *x}",
    "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
    "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]",
    "deep: " + "[" * 20000 + "]" * 20000, "deep: " + "{a: " * 3000 + "1" + "}" * 3000,
    "deep2: " + "[" * 40 + "]" * 40, "f: .nan", "f: .inf", "big: " + "9" * 5000, "s: " + "x" * 100000,
    "sweep: 3", "sweep: {clients: []}", "sweep: {clients: [1, [2]]}", "sweep: {1: [1]}",
    "engine: {event_limit: -1}", "engine: 5", "stats: {timeseries_interval_ns: 1e400}",
    "%YAML 1.1\n---", "---\na: 1\n---\nb: 2", "...", "\t: tab", "'key with\\ttab': 1", "\"\\x00\": 1",
    "\"\": empty", "nested: {\"\": 1}", "long_key_" + "k" * 400 + ": 1", "!!binary aGk=: 1",
]

# Jinja2 constructs, inserted at a line boundary or inside a line.
JINJA_SNIPPETS = [
    "{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 1 % 0 }}", "{{ undefined_thing }}", "{{ undefined_thing.attr }}",
    "{{ ''.__class__.__mro__ }}", "{{ cycler.__init__.__globals__ }}", "{{ self._TemplateReference__context }}",
    "{% for i in range(10 ** 12) %}{% endfor %}", "{% for i in range(99999999999) %}x{% endfor %}",
    "{{ 'a' * 10 ** 10 }}", "{{ [0] * 10 ** 10 }}", "{{ 9 ** 9 ** 9 }}", "{{ 2 ** 100000000 }}",
    "{{ '%s' % 'x' }}", "{{ 'x' | int }}", "{{ none + 1 }}", "{{ 'a' + 1 }}", "{{ [1][5] }}", "{{ {}['k'] }}",
    "{%- set nodes = 0 %}", "{%- set clients = 'abc' %}", "{% include 'other.j2' %}", "{% extends '/etc/passwd' %}",
    "{% import 'x' as y %}", "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}",
    "{{ " + "[" * 500 + "]" * 500 + " }}", "{% if %}", "{{", "}}", "{%", "%}", "{#", "{% raw %}", "{% endfor %}",
    "{{ range(3) | list }}", "{{ 1e400 }}", "{{ (2 ** 64) }}", "{{ 18446744073709551616 }}", "{{ '\\x00' }}",
    "{{ lipsum(10 ** 9) }}", "{{ 'x' | center(10 ** 10) }}", "{{ 'a' | indent(10 ** 9) }}",
    "{{ ('x' * 1000) | wordwrap(1) }}", "{{ range(100000) | join(',') }}", "{{ 10 ** 400 }}",
]

# --set values (argv strings; NUL cannot be passed) and --seed / --run values.
SET_VALUES = NUMBERS + ["abc", "", "[1", "{a: 1}", "[1, 2]", "x: y", "- a", "\"a", "'", "&a", "*a", "!!binary aGk=",
                        "2020-01-01", "true", "null", "../../../escaped", "a\nb", "\xff", "x" * 300, "{{ 1/0 }}",
                        "!!python/object/apply:os.system ['true']"]
SEED_VALUES = ["0", "1", "-1", "18446744073709551615", "18446744073709551616", "1e23", "abc", "99999999999999999999"]
RUN_VALUES = ["ok", "../../../escaped", "..", ".", "", "a/b", "/tmp/abs-run", "x" * 300, ".hidden", "a\nb"]
SET_KEYS_EXTRA = ["nosuch", "nosuch.field", "engine.event_limit", "hold.pending", "fabric.latency_ns", "seed", "name",
                  "sweep", "a..b", ".x", "x.", "engine", "stats.timeseries_interval_ns", "rpc_client.processes"]

SPECIAL_BYTES = b"\x00\xff\xfe\xc3\x80\n\t\r{}%#:-&*!|>'\"[],?@`\\ "

_NUMBER_RE = re.compile(rb"(?<![\w.])-?\d+(\.\d+)?(?![\w.])")
_FIELD_RE = re.compile(rb"^(\s*-?\s*[A-Za-z_][\w.]*:[ ]+)(.+)$", re.M)
_VAR_RE = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\|\s*default\(([^()]*)\)")


def template_variables(text):
    """{variable: its default as written} of a shipped-style template (`x | default(...)`)."""
    return dict(sorted(_VAR_RE.findall(text.decode("utf-8", "replace"))))


def nearby(rng, number):
    """A value near `number` (text): most often still valid where the original was."""
    try:
        x = float(number) if any(c in number for c in ".eE") else int(number)
    except ValueError:
        return number
    y = rng.choice((x + 1, x * 2, x // 2 if isinstance(x, int) else x / 2, x - 1, x * 10))
    return repr(y) if isinstance(y, float) else str(y)


def _line_starts(data, top_level=False):
    starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
    if top_level:
        starts = [s for s in starts if s < len(data) and data[s:s + 1].isalpha()] or [len(data)]
    return starts


class ScenarioMutator:
    """Mutates a template (bytes) and draws the command-line arguments of a `cxisim run` case."""

    def __init__(self, rng):
        self.rng = rng

    def _flip(self, d):
        if not d:
            return d
        i = self.rng.randrange(len(d))
        b = self.rng.choice(SPECIAL_BYTES) if self.rng.random() < 0.7 else self.rng.randrange(256)
        return d[:i] + bytes([b]) + d[i + 1:]

    def _delete(self, d):
        if not d:
            return d
        i = self.rng.randrange(len(d))
        return d[:i] + d[i + self.rng.randint(1, 40):]

    def _truncate(self, d):
        return d[:self.rng.randrange(len(d) + 1)]

    def _dup_line(self, d):
        lines = d.split(b"\n")
        i = self.rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return b"\n".join(lines)

    def _number(self, d):
        ms = list(_NUMBER_RE.finditer(d))
        if not ms:
            return self._flip(d)
        m = self.rng.choice(ms)
        return d[:m.start()] + self.rng.choice(NUMBERS).encode() + d[m.end():]

    def _nearby(self, d):
        ms = list(_NUMBER_RE.finditer(d))
        if not ms:
            return self._flip(d)
        m = self.rng.choice(ms)
        return d[:m.start()] + nearby(self.rng, m.group().decode()).encode() + d[m.end():]

    def _value(self, d):
        ms = list(_FIELD_RE.finditer(d))
        if not ms:
            return self._flip(d)
        m = self.rng.choice(ms)
        v = self.rng.choice(VALUES).encode()
        if b"\n" in v:  # a block scalar or sequence continues on indented lines
            indent = len(m.group(1)) - len(m.group(1).lstrip())
            v = v.replace(b"\n", b"\n" + b" " * (indent + 2))
        return d[:m.start(2)] + v + d[m.end(2):]

    def _insert_yaml(self, d):
        at = self.rng.choice(_line_starts(d, top_level=True))
        return d[:at] + self.rng.choice(YAML_SNIPPETS).encode() + b"\n" + d[at:]

    def _insert_jinja(self, d):
        s = self.rng.choice(JINJA_SNIPPETS).encode()
        if self.rng.random() < 0.5:
            at = self.rng.choice(_line_starts(d))
            return d[:at] + s + b"\n" + d[at:]
        at = self.rng.randrange(len(d) + 1)
        return d[:at] + s + d[at:]

    OPS = ("_flip", "_delete", "_truncate", "_dup_line", "_number", "_nearby", "_nearby", "_nearby", "_value",
           "_value", "_insert_yaml", "_insert_yaml", "_insert_jinja", "_insert_jinja")

    def mutate(self, text):
        """(mutated template bytes, extra argv) for one case."""
        d = text
        for _ in range(self.rng.choice((0, 1, 1, 1, 2, 3))):
            d = getattr(self, self.rng.choice(self.OPS))(d)
        args = []
        defaults = template_variables(text)
        for _ in range(self.rng.choice((0, 0, 1, 1, 2))):
            if defaults and self.rng.random() < 0.5:  # a variable of the template, near its default
                k = self.rng.choice(sorted(defaults))
                args += ["--set", f"{k}={nearby(self.rng, defaults[k].strip().strip(chr(34)))}"]
            else:
                keys = sorted(defaults) + SET_KEYS_EXTRA
                args += ["--set", f"{self.rng.choice(keys)}={self.rng.choice(SET_VALUES)}"]
        if self.rng.random() < 0.12:
            args += ["--seed", self.rng.choice(SEED_VALUES)]
        if self.rng.random() < 0.08:
            args += ["--run", self.rng.choice(RUN_VALUES)]
        if d == text and not args:  # every case changes something
            d = self._insert_yaml(d)
        return d, args


# JSON values for a field of a resolved config.
JSON_VALUES = [0, -1, 1, 2, 255, 65536, 2 ** 31, 2 ** 32, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 10 ** 23,
               1e308, -1e308, 0.5, -0.0, 1e-320, "", "x", "abc", "\u0000", "a\nb", "\x1b[2J", "\udcff", "x" * 5000,
               None, True, False, [], {}, [1, 2], [[]], {"a": 1}, "../../../escaped", "/tmp/abs"]
JSON_KEYS = ["nosuch", "", "\u0000", "a\nb", "é", "x" * 400, "1", "name", "seed", "processes"]
JSON_TEXT_SNIPPETS = [b"\x00", b"\xff", b"[" * 10000, b"{\"a\":" * 5000, b"9" * 5000, b"1e400", b"-1e400", b"NaN",
                      b"Infinity", b"/* c */", b"// c\n", b"'s'", b",", b"}", b"]", b"\"\\u0000\"", b"\"\\ud800\"",
                      b"18446744073709551616", b"-9223372036854775809", b"1.7976931348623157e309", b"\"\\x\"",
                      b"true", b"null", b"\n" * 3]


class ConfigMutator:
    """Mutates a resolved config (a dict) structurally or its JSON text bytewise; returns bytes.

    The `engine` section is left alone by the structural mutations, so that a mutated case keeps its
    event limit and stays short; byte damage may still hit it (then it is most often a parse error)."""

    def __init__(self, rng):
        self.rng = rng

    def _paths(self, node, prefix=()):
        out = []
        if isinstance(node, dict):
            for k, v in node.items():
                if not prefix and k == "engine":
                    continue
                out.append(prefix + (k,))
                out += self._paths(v, prefix + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                out.append(prefix + (i,))
                out += self._paths(v, prefix + (i,))
        return out

    @staticmethod
    def _get(doc, path):
        for p in path:
            doc = doc[p]
        return doc

    def _structural(self, doc):
        paths = self._paths(doc)
        if not paths:
            doc["nosuch"] = 1
            return doc
        path = self.rng.choice(paths)
        parent = self._get(doc, path[:-1])
        op = self.rng.random()
        if op < 0.6:
            parent[path[-1]] = self.rng.choice(JSON_VALUES)
        elif op < 0.75 and isinstance(parent, dict):
            del parent[path[-1]]
        elif op < 0.9 and isinstance(parent, dict):
            parent[self.rng.choice(JSON_KEYS)] = self.rng.choice(JSON_VALUES)
        else:
            parent[path[-1]] = json.loads(json.dumps(self._get(doc, path[:1])))  # a section where a value was
        return doc

    def _bytes(self, d):
        op = self.rng.random()
        if op < 0.3:
            i = self.rng.randrange(len(d))
            return d[:i] + bytes([self.rng.choice(SPECIAL_BYTES)]) + d[i + 1:]
        if op < 0.5:
            return d[:self.rng.randrange(len(d))]
        if op < 0.8:
            i = self.rng.randrange(len(d))
            return d[:i] + self.rng.choice(JSON_TEXT_SNIPPETS) + d[i:]
        ms = list(_NUMBER_RE.finditer(d))
        if not ms:
            return d + b"x"
        m = self.rng.choice(ms)
        return d[:m.start()] + self.rng.choice(JSON_TEXT_SNIPPETS[4:10] + [n.encode() for n in NUMBERS[8:20]]) + d[m.end():]

    def mutate(self, doc):
        doc = json.loads(json.dumps(doc))
        if self.rng.random() < 0.55:
            for _ in range(self.rng.choice((1, 1, 2, 3))):
                doc = self._structural(doc)
            return json.dumps(doc, indent=2, ensure_ascii=self.rng.random() < 0.5).encode("utf-8", "surrogatepass")
        d = json.dumps(doc, indent=2).encode()
        for _ in range(self.rng.choice((1, 1, 2))):
            d = self._bytes(d)
        return d
