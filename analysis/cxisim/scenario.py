"""Scenario templates: Jinja2 over YAML, rendered with `--set` parameters into a resolved config.

A `--set key=value` is applied in one of two ways, decided by the template itself:
- if the template uses `key` (its first dotted component) as a variable, the value is passed to Jinja2
  (checked first against the template's declared type and range, see variables.py);
- otherwise `key` is a dotted path into the rendered document, whose parent mapping must exist there
  (the engine then checks the field's name, type and range).
A key that is neither is an error.  Values are read as YAML 1.2 scalars, so `--set clients=208` is an int
and `--set x=1e12` a number.

Rendering, YAML parsing and the checks of inputs.py run in a forked child with a memory and time budget
(RENDER_*), in a sandboxed Jinja2 environment: whatever a template computes, the command ends with one
line naming the file and the problem.
"""
import json
import os
import resource
import select
import signal
import time

from . import InputError
from . import inputs
from . import variables
from . import yaml12

# Top-level keys the front end consumes itself; they never reach the engine.
FRONT_END_KEYS = ("sweep",)

TEMPLATE_MAX_BYTES = 16 << 20  # a template larger than this is not a scenario (and /dev/zero is not one)
RENDER_MAX_BYTES = 64 << 20    # rendered text; sim/cfg.c reads at most CFG_MAX_BYTES (64 MiB) of config
RENDER_MEMORY = 2 << 30        # address space the rendering child may add to what it inherits
RENDER_TIMEOUT_S = 30          # wall time to render, parse and check (the shipped templates take < 0.1 s)


def parse_value(item, raw, what="--set"):
    """A command-line value as a YAML 1.2 scalar (or flow collection); '' stays ''."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} '{item}': the value is not UTF-8") from None
    if not raw.strip():
        return ""
    try:
        return yaml12.load(raw)
    except Exception as e:  # a YAML error, or nesting deep enough for RecursionError
        raise InputError(f"{what} '{item}': value is not a YAML scalar: {yaml12.error_line(e)[1]}") from None


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
        out[key] = parse_value(item, raw)
    return out


def _nest(flat):
    tree = {}
    for key, value in flat.items():
        node = tree
        parts = key.split(".")
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise InputError(f"--set '{key}': '{p}' is also given a value of its own")
            node = nxt
        if isinstance(node.get(parts[-1]), dict):
            raise InputError(f"--set '{key}': also given fields of its own")
        node[parts[-1]] = value
    return tree


def _read(path):
    try:
        with open(path, "rb") as f:
            data = f.read(TEMPLATE_MAX_BYTES + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read scenario: {e.strerror}") from None
    if len(data) > TEMPLATE_MAX_BYTES:
        raise InputError(f"{path}: cannot read scenario: larger than {TEMPLATE_MAX_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at column {col})") from None


POWER_MAX_BITS = 1 << 16  # `a ** b` of integers: a larger result is refused rather than computed for minutes


_env = None


def _environment():
    """The one Jinja2 environment (built, with its lexer, before the first fork: children share it)."""
    global _env
    if _env is not None:
        return _env
    import jinja2
    import jinja2.sandbox

    class Sandbox(jinja2.sandbox.SandboxedEnvironment):
        """No attribute access to internals (the sandbox), range() of at most 100,000 items (the sandbox),
        no lipsum(), no integer powers of more than POWER_MAX_BITS bits."""
        intercepted_binops = frozenset(["**"])

        def call_binop(self, context, operator, left, right):
            if operator == "**" and all(isinstance(x, int) for x in (left, right)) and abs(left) > 1 \
                    and right > 0 and right * (abs(left).bit_length() - 1) > POWER_MAX_BITS:
                raise jinja2.sandbox.SecurityError(f"{left} ** {right} is too large")
            return super().call_binop(context, operator, left, right)

    env = Sandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    del env.globals["lipsum"]
    env.lexer  # noqa: B018  (compiles the lexer's expressions now, once)
    _env = env
    return env


def template_variables(path, text=None):
    """The undeclared variables a template uses."""
    import jinja2
    import jinja2.meta
    text = _read(path) if text is None else text
    try:
        return jinja2.meta.find_undeclared_variables(_environment().parse(text))
    except jinja2.TemplateSyntaxError as e:
        raise InputError(f"{path}:{e.lineno}: template syntax error: {e.message}") from None
    except (RecursionError, MemoryError):
        raise InputError(f"{path}: template syntax error: nested too deeply") from None


def _render_text(path, text, context):
    import jinja2
    env = _environment()
    try:
        out, n = [], 0
        for chunk in env.from_string(text).generate(**context):
            n += len(chunk)
            if n > RENDER_MAX_BYTES:
                raise InputError(f"{path}: template error: the rendered scenario is larger than "
                                 f"{RENDER_MAX_BYTES >> 20} MiB")
            out.append(chunk)
        return "".join(out)
    except jinja2.TemplateSyntaxError as e:
        raise InputError(f"{path}:{e.lineno}: template syntax error: {e.message}") from None
    except jinja2.UndefinedError as e:
        raise InputError(f"{path}: template error: {e.message} (give it with --set or a default)") from None
    except jinja2.TemplateError as e:
        raise InputError(f"{path}: template error: {e}") from None
    except RecursionError:
        raise InputError(f"{path}: template error: recursion too deep") from None
    except MemoryError:
        raise InputError(f"{path}: template error: out of memory (a value too large?)") from None
    except InputError:
        raise
    except Exception as e:  # what a template's own expression raised: 1/0, 'a' + 1, a missing key...
        raise InputError(f"{path}: template error: {type(e).__name__}: {e}") from None


def _render_doc(path, text, sets):
    """Render, parse and check; returns (resolved dict, the --set keys left for dotted paths)."""
    decl = variables.declared(path, text)
    used = template_variables(path, text)
    tvars = {k: v for k, v in sets.items() if k.split(".")[0] in used}
    paths = [k for k in sets if k not in tvars]
    rendered = _render_text(path, text, variables.check(path, decl, _nest(tvars)))
    try:
        doc = yaml12.load(rendered)
    except RecursionError:
        raise InputError(f"{path}: YAML error in rendered scenario: nested too deeply") from None
    except Exception as e:
        line, problem = yaml12.error_line(e) if hasattr(e, "problem") else (None, f"{type(e).__name__}: {e}")
        raise InputError(f"{path}{f':{line}' if line else ''}: YAML error in rendered scenario: {problem}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise InputError(f"{path}: the scenario must be a mapping, got {inputs.show(doc)}")
    if "seed" in doc:  # before the general rules, so that the message is --seed's
        doc["seed"] = inputs.check_seed(doc["seed"], f"{path}: field 'seed'")
    if "name" in doc:
        inputs.check_name(doc["name"], f"{path}: field 'name'")
    return inputs.jsonable(doc, path), paths


def _limit_child():
    with open("/proc/self/statm") as f:
        vsz = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (vsz + RENDER_MEMORY, vsz + RENDER_MEMORY))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _in_child(fn, *args):
    """fn(*args) in a forked child under the render budget; returns its JSON-able result or raises its
    InputError.  Anything else the child meets becomes an InputError naming `args[0]` (the path)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.close(rfd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _limit_child()
            try:
                msg = {"ok": fn(*args)}
            except InputError as e:
                msg = {"error": str(e)}
            except MemoryError:
                msg = {"error": f"{args[0]}: template error: out of memory (a value too large?)"}
            except RecursionError:
                msg = {"error": f"{args[0]}: template error: nested too deeply"}
            data = json.dumps(msg).encode()
            while data:
                data = data[os.write(wfd, data):]
        except BaseException:
            status = 3
        finally:
            os._exit(status)
    os.close(wfd)
    chunks, deadline = [], time.monotonic() + RENDER_TIMEOUT_S
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise InputError(f"{args[0]}: template error: rendering took longer than {RENDER_TIMEOUT_S} s")
            ready, _, _ = select.select([rfd], [], [], left)
            if ready:
                chunk = os.read(rfd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    except BaseException:  # a timeout, or Ctrl-C / SIGTERM while waiting: the child goes too
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(rfd)
        _, status = os.waitpid(pid, 0)
    try:
        msg = json.loads(b"".join(chunks))
    except ValueError:
        code = os.waitstatus_to_exitcode(status)
        why = f"signal {-code}" if code < 0 else f"status {code}"
        raise InputError(f"{args[0]}: template error: rendering failed ({why}; out of memory?)") from None
    if "error" in msg:
        raise InputError(msg["error"])
    return msg["ok"]


def render(path, sets=None):
    """Render the template at `path` with `sets` ({dotted key: value}); returns the resolved dict."""
    sets = dict(sets or {})
    text = _read(path)
    _environment()
    doc, paths = _in_child(_render_doc, path, text, sets)
    for key in paths:
        value = inputs.check_value(sets[key], path, key)
        if key == "seed":
            value = inputs.check_seed(value, f"{path}: field 'seed'")
        elif key == "name":
            inputs.check_name(value, f"{path}: field 'name'")
        _set_path(path, doc, key, value)
    return doc


def _set_path(path, doc, key, value):
    """A dotted --set key names a field of the rendered scenario; the sections on its way that the template
    left out are made (`--set engine.time_limit_us=500` on a scenario without `engine:`), and the engine then
    refuses an unknown section or field as it does in a file."""
    node = doc
    parts = key.split(".")
    for i, p in enumerate(parts[:-1]):
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise InputError(f"{path}: field '{key}': '{'.'.join(parts[:i + 1])}' is a value, not a section")
    node[parts[-1]] = value


def resolved(doc, seed=None):
    """The engine's view: front-end keys removed, seed applied."""
    out = {k: json.loads(json.dumps(v)) for k, v in doc.items() if k not in FRONT_END_KEYS}
    if seed is not None:
        out["seed"] = seed
    return out


def dump_json(doc, fp):
    json.dump(doc, fp, indent=2, sort_keys=True)
    fp.write("\n")


def scenario_name(path, doc):
    """The scenario's `name` (checked by render), else the template's file name made a safe name."""
    name = doc.get("name")
    if isinstance(name, str):
        return name
    base = os.path.basename(path)
    for ext in (".yaml.j2", ".yml.j2", ".j2", ".yaml", ".yml"):
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    return inputs.dir_name(base, inputs.NAME_MAX_BYTES)
