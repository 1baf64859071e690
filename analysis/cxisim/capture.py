"""Reader of cxisim capture files (`cxisim capture`, format version 1; specified in docs/replay.md, layout in
sim/workload/capture.h).

    from cxisim.capture import read_capture
    cap = read_capture("run.cxcap")          # CaptureError on a foreign, truncated or corrupt file
    for ep in cap.endpoints.values(): ...    # nic, pid, vni, process
    for m in cap.sends: ...                  # t, think, ep, dst, tag, data, len, payload
    cap.summary()                            # a dict: processes, endpoints, per-endpoint traffic, think times

Same checks as the C reader: magic, version, every record inside the file and long enough for its type,
the end record present with the right record count and CRC-32.
"""
import struct
import zlib
from collections import namedtuple

MAGIC = b"CXSIMCAP"
VERSION = 1
HEADER = struct.Struct("<8sIIQQ")
REC = struct.Struct("<HHI")

PROC, EP, SEND, RECV, COMP, RMA, MR, MR_IMAGE, MR_CLOSE, END = 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xFFFF

# Flags (enum cap_flags)
TAGGED, CQ_DATA, INJECT, TRUNCATED, MULTI_RECV, DIRECTED, READ, ERROR = (1 << i for i in range(8))

Proc = namedtuple("Proc", "proc rank os_pid node progname")
Endpoint = namedtuple("Endpoint", "ep proc nic pid vni caps ep_flags match_mode")
Send = namedtuple("Send", "ep flags t think dst_nic dst_pid dst_vni tag data len payload")
Recv = namedtuple("Recv", "ep flags t tag ignore len")
Comp = namedtuple("Comp", "ep flags t tag data len src_nic src_pid err")
Rma = namedtuple("Rma", "ep flags t dst_nic dst_pid dst_vni key offset len data")
Mr = namedtuple("Mr", "mr ep t key addr len access reserved")
MrImage = namedtuple("MrImage", "mr kind t flags reserved data")
MrClose = namedtuple("MrClose", "mr reserved t")

# type: (struct of the fixed part, namedtuple, index of the variable length field or None)
LAYOUTS = {
    PROC: (struct.Struct("<IiiI64s"), Proc, None),
    EP: (struct.Struct("<IIIHHQII"), Endpoint, None),
    SEND: (struct.Struct("<IIQQIHHQQQQ"), Send, 10),
    RECV: (struct.Struct("<IIQQQQ"), Recv, None),
    COMP: (struct.Struct("<IIQQQQIHH"), Comp, None),
    RMA: (struct.Struct("<IIQIHHQQQQ"), Rma, None),
    MR: (struct.Struct("<IIQQQQII"), Mr, None),
    MR_IMAGE: (struct.Struct("<IIQIIQ"), MrImage, 5),
    MR_CLOSE: (struct.Struct("<IIQ"), MrClose, None),
}
END_REC = struct.Struct("<QII")


class CaptureError(Exception):
    """A file that is not a readable capture; the message says why."""


def _pad8(n):
    return (n + 7) & ~7


class Capture:
    def __init__(self):
        self.version = VERSION
        self.processes = {}
        self.endpoints = {}
        self.sends, self.recvs, self.comps, self.rmas = [], [], [], []
        self.mrs, self.images, self.closes = {}, [], []
        self.records = 0

    def _add(self, rtype, rec):
        if rtype == PROC:
            rec = rec._replace(progname=rec.progname.split(b"\0", 1)[0].decode(errors="replace"))
            self.processes[rec.proc] = rec
        elif rtype == EP:
            self.endpoints[rec.ep] = rec
        elif rtype == SEND:
            self.sends.append(rec)
        elif rtype == RECV:
            self.recvs.append(rec)
        elif rtype == COMP:
            self.comps.append(rec)
        elif rtype == RMA:
            self.rmas.append(rec)
        elif rtype == MR:
            self.mrs[rec.mr] = rec
        elif rtype == MR_IMAGE:
            self.images.append(rec)
        elif rtype == MR_CLOSE:
            self.closes.append(rec)

    def endpoint_at(self, nic, pid):
        for e in self.endpoints.values():
            if e.nic == nic and e.pid == pid:
                return e
        return None

    def program(self, ep):
        e = self.endpoints.get(ep)
        p = self.processes.get(e.proc) if e else None
        return p.progname if p else "?"

    def summary(self):
        """Per endpoint: its process, what it sent to whom (messages, bytes), receives posted, MRs; think
        times of its sends (ns)."""
        eps = {}
        for e in self.endpoints.values():
            eps[e.ep] = {"process": self.program(e.ep), "nic": e.nic, "pid": e.pid, "vni": e.vni, "sent": {},
                         "bytes_sent": 0, "receives_posted": 0, "receive_completions": 0, "mrs": 0,
                         "think_ns": []}
        for m in self.sends:
            d = eps.get(m.ep)
            if d is None:
                continue
            dst = self.endpoint_at(m.dst_nic, m.dst_pid)
            key = f"{self.program(dst.ep)}@{m.dst_nic}:{m.dst_pid}" if dst else f"?@{m.dst_nic}:{m.dst_pid}"
            d["sent"][key] = d["sent"].get(key, 0) + 1
            d["bytes_sent"] += m.len
            d["think_ns"].append(m.think / 1000.0)
        for r in self.recvs:
            if r.ep in eps:
                eps[r.ep]["receives_posted"] += 1
        for c in self.comps:
            if c.ep in eps:
                eps[c.ep]["receive_completions"] += 1
        for m in self.mrs.values():
            if m.ep in eps:
                eps[m.ep]["mrs"] += 1
        for d in eps.values():
            t = sorted(d.pop("think_ns"))
            d["think_ns"] = ({"count": len(t), "mean": sum(t) / len(t), "p50": t[len(t) // 2], "max": t[-1]}
                             if t else {"count": 0})
        return {"version": self.version, "records": self.records, "processes": len(self.processes),
                "endpoints": eps, "messages": len(self.sends), "rma": len(self.rmas), "mrs": len(self.mrs)}


def parse_capture(data, name="capture"):
    """Parse and check capture bytes; returns a Capture.  CaptureError names the problem."""
    if len(data) < 8 or data[:8] != MAGIC:
        raise CaptureError(f"{name}: not a cxisim capture file (no {MAGIC.decode()} magic)")
    if len(data) < HEADER.size:
        raise CaptureError(f"{name}: truncated capture: {len(data)} bytes, shorter than its header")
    _, version, hbytes, _, _ = HEADER.unpack_from(data, 0)
    if version != VERSION:
        raise CaptureError(f"{name}: capture format version {version}; this reader reads version {VERSION}")
    if hbytes != HEADER.size:
        raise CaptureError(f"{name}: corrupt capture: header size {hbytes}")
    cap = Capture()
    off, n = HEADER.size, 0
    while True:
        if off + REC.size > len(data):
            raise CaptureError(f"{name}: truncated capture: no end record after {n} records "
                               f"(byte {off} of {len(data)})")
        rtype, _, rlen = REC.unpack_from(data, off)
        body = off + REC.size
        if rtype == END:
            if rlen != END_REC.size or body + END_REC.size > len(data):
                raise CaptureError(f"{name}: truncated capture: incomplete end record at byte {off}")
            records, crc, _ = END_REC.unpack_from(data, body)
            if records != n:
                raise CaptureError(f"{name}: corrupt capture: end record counts {records} records, "
                                   f"the file has {n}")
            if crc != zlib.crc32(data[:off]) & 0xFFFFFFFF:
                raise CaptureError(f"{name}: corrupt capture: checksum mismatch")
            if body + END_REC.size != len(data):
                raise CaptureError(f"{name}: corrupt capture: {len(data) - body - END_REC.size} bytes after "
                                   "the end record")
            cap.records = n
            return cap
        if body + _pad8(rlen) > len(data):
            raise CaptureError(f"{name}: truncated capture: record {n} (type {rtype}) at byte {off} ends past "
                               "the end of the file")
        layout = LAYOUTS.get(rtype)
        if layout:
            st, cls, var_field = layout
            if rlen < st.size:
                raise CaptureError(f"{name}: corrupt capture: record {n} (type {rtype}) at byte {off} has "
                                   f"{rlen} bytes")
            fields = list(st.unpack_from(data, body))
            if var_field is not None:
                if rlen - st.size != fields[var_field]:
                    raise CaptureError(f"{name}: corrupt capture: record {n} (type {rtype}) at byte {off} has "
                                       f"{rlen} bytes")
                fields[var_field] = bytes(data[body + st.size:body + rlen])
            elif rlen != st.size:
                raise CaptureError(f"{name}: corrupt capture: record {n} (type {rtype}) at byte {off} has "
                                   f"{rlen} bytes")
            cap._add(rtype, cls(*fields))
        off = body + _pad8(rlen)
        n += 1


def read_capture(path):
    """Read and check a capture file; CaptureError (with the path) when it is not a valid one."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CaptureError(f"{path}: cannot read: {e.strerror}") from None
    return parse_capture(data, path)
