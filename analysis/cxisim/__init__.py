"""cxisim's Python side: scenario rendering, running the engine, sweeps, plots and reports."""
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


class InputError(Exception):
    """Bad user input: the message names the file, the field and the problem; the CLI exits with 2."""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like Ctrl-C (KeyboardInterrupt), so every cleanup runs; the CLI exits 143."""


def engine_path():
    """The engine binary: $CXISIM_ENGINE, else $CXISIM_BUILD/bin/cxisim-engine (build/ by default)."""
    if os.environ.get("CXISIM_ENGINE"):
        return os.environ["CXISIM_ENGINE"]
    build = os.environ.get("CXISIM_BUILD", "build")
    return os.path.join(REPO, build, "bin", "cxisim-engine")
