"""`cxisim capture`: run a real client and server under `cxisim exec` and record what they do on the fabric
(docs/replay.md), for the replay workload; or show what a capture holds."""
import json
import os
import sys

from . import InputError
from . import cmd_exec
from . import run as runmod
from .capture import CaptureError, read_capture

HELP = "record a real run (messages, payloads, memory regions) for the replay workload"
DESCRIPTION = ("Run CMD under `cxisim exec` (same options) with the emulation daemon recording every message "
               "sent (payload, tag, immediate data, think time), receive posted and completed, RMA, and "
               "memory region (key, contents) of the attached processes into a capture file (format version 1, "
               "docs/replay.md).  A scenario's `replay` section replays it with thousands of simulated clients "
               "against a real server.  With --show FILE, print a summary of a capture instead (exit 2 when "
               "the file is not a valid capture).")


def add_arguments(p):
    cmd_exec.add_arguments(p)
    p.add_argument("-o", "--output", default="capture.cxcap", metavar="FILE",
                   help="the capture file to write (default capture.cxcap)")
    p.add_argument("--max-payload", type=int, default=1 << 16, metavar="BYTES",
                   help="payload bytes recorded per message (default 65536; longer ones are marked truncated)")
    p.add_argument("--max-image", type=int, default=64 << 20, metavar="BYTES",
                   help="bytes recorded per memory region image (default 64 MiB)")
    p.add_argument("--show", default=None, metavar="FILE", help="print a summary of FILE (JSON) and exit")
    # CMD is optional with --show.
    for a in p._actions:
        if a.dest == "command":
            a.nargs = "*"


def main(args):
    if args.show:
        try:
            cap = read_capture(args.show)
        except CaptureError as e:
            raise InputError(str(e))
        json.dump(cap.summary(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if not args.command:
        raise InputError("cxisim capture: no command to run (put it after --)")
    out = os.path.abspath(args.output)
    # Written whole or not at all, as exec's --out: the daemon records into a file beside OUT, renamed onto
    # it once the capture reads back; bad input (exit 2) or a failed run leaves OUT as it was.
    part = runmod.staging_path(out)
    args.daemon_args = ["--capture", part, "--capture-max-payload", str(args.max_payload),
                        "--capture-max-image", str(args.max_image)]
    try:
        open(part, "wb").close()  # an unusable --output is bad input, named as the user gave it
    except OSError as e:
        raise InputError(f"--output {args.output}: {e.strerror}") from None
    try:
        rc = cmd_exec.main(args)
        try:
            cap = read_capture(part)
        except CaptureError as e:
            raise RuntimeError(f"the capture is unreadable: {e}")
        os.replace(part, out)
    finally:
        if os.path.exists(part):
            os.unlink(part)
    print(f"cxisim capture: {out}: {len(cap.processes)} processes, {len(cap.endpoints)} endpoints, "
          f"{len(cap.sends)} messages, {len(cap.mrs)} memory regions", file=sys.stderr)
    return rc
