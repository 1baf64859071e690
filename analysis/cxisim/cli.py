"""Command-line entry: `cxisim <command> ...`.

Commands live in modules named cmd_<command>.py in this package; each defines HELP (one line),
add_arguments(parser) and main(args) -> exit status.  They are discovered, so adding a command touches no
central list.
"""
import argparse
import importlib
import pkgutil
import sys

from . import InputError


def _commands():
    pkg = importlib.import_module(__package__)
    names = sorted(m.name[4:] for m in pkgutil.iter_modules(pkg.__path__) if m.name.startswith("cmd_"))
    return {n: importlib.import_module(f"{__package__}.cmd_{n}") for n in names}


def build_parser():
    p = argparse.ArgumentParser(
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
    try:
        return args._main(args) or 0
    except InputError as e:
        if str(e):  # empty: the engine already printed the message
            print(str(e), file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"cxisim: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
