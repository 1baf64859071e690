"""Command-line entry: `cxisim <command> ...`.

Commands live in modules named cmd_<command>.py in this package; each defines HELP (one line),
add_arguments(parser) and main(args) -> exit status.  They are discovered, so adding a command touches no
central list.

Every command ends with status 0, 1 (the run failed) or 2 (bad input), and a failure prints one line: the
message of an InputError or RuntimeError, argparse's complaint, or an I/O error.  SIGTERM unwinds like
Ctrl-C, so a command's cleanup (a run's hidden temporary directory, its engine processes) runs for both.
"""
import argparse
import importlib
import pkgutil
import signal
import sys

from . import InputError, Terminated
from . import inputs


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not the usage block
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _commands():
    pkg = importlib.import_module(__package__)
    names = sorted(m.name[4:] for m in pkgutil.iter_modules(pkg.__path__) if m.name.startswith("cmd_"))
    return {n: importlib.import_module(f"{__package__}.cmd_{n}") for n in names}


def build_parser():
    p = _Parser(
        prog="cxisim",
        description="cxisim: discrete-event model of the HPE Cassini NIC and a dragonfly fabric of Rosetta "
        "switches.  Renders scenario templates, runs the engine, sweeps, plots and reports.",
        epilog="Run `cxisim COMMAND --help` for a command's options.  Exit status: 0 success, 1 run failure, "
        "2 bad input (the message names the file, the field and the problem).")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    cmds = _commands()
    for name, mod in cmds.items():
        sp = sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP))
        mod.add_arguments(sp)
        sp.set_defaults(_main=mod.main)
    return p


def one_line(msg):
    """A message as one printable line: control characters (a newline in a key) written as escapes."""
    return inputs.CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], str(msg))


def _terminate(signum, frame):
    raise Terminated()


def main(argv=None):
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Commands that take an optional trailing command after their own positionals (`cxisim sweep S -- CMD`)
    # get it split off here: argparse cannot place a second, optional positional list after options.
    trailing = None
    if argv and "--" in argv and getattr(_commands().get(argv[0]), "TRAILING_COMMAND", False):
        i = argv.index("--")
        argv, trailing = argv[:i], argv[i + 1:]
    args = parser.parse_args(argv)
    if trailing is not None:
        args.command = trailing
    if not getattr(args, "_main", None):
        parser.print_help(sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    if hasattr(sys.stdout, "reconfigure"):  # a path given in bytes that are not UTF-8 prints as given
        sys.stdout.reconfigure(errors="surrogateescape")
    try:
        return args._main(args) or 0
    except InputError as e:
        if str(e):  # empty: the engine already printed the message
            print(one_line(e), file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"cxisim: {one_line(e)}", file=sys.stderr)
        return 1
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"cxisim: {one_line(where)}{e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 128 + signal.SIGTERM
