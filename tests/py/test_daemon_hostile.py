"""A client that writes its own command ring however it likes -- garbage ops, flags, lengths, addresses,
destinations, slot counts, a corrupted head -- must not take the daemon down or hold up the other clients.  The commands go straight into the shared ring (as a buggy or
hostile process could write them), not through the provider, which would never send most of them."""
import ctypes
import errno
import mmap
import os
import random
import socket
import struct
import subprocess
import time

import pytest

from provider_helpers import DEFAULT_SCENARIO, Daemon, daemon_status
from test_provider_robust import _proto, prog

EP_FMT = "@IIII4HIII6IIIQIIIIIIIQQQQQQQQQQ"  # struct ctl_ep_open_req (sim/cxisimd/proto.h)
CMD_FMT = "<HHHHIIQQQQQQ"                   # struct cxs_cmd (sim/cxisimd/cmd.h)
SLOTS_OFF, HEAD_OFF, TAIL_OFF = 192, 64, 128  # struct ring_shm (sim/cxisimd/ring.h)
SEND, RECV, WRITE = 1, 2, 3
F_INJECT, F_COMPLETION = 1 << 2, 1 << 3
EVT_ERR = 2
C_RC_UNDELIVERABLE = 2


def _reply(s):
    msg, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(16 * 4))
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(struct.unpack(f"{len(data) // 4}i", data[:len(data) - len(data) % 4]))
    return struct.unpack("<IIiI", msg[:16])[2], msg[16:], fds


def _req(s, op, body=b""):
    s.send(struct.pack("<IIiI", op, 7, 0, len(body)) + body)
    return _reply(s)


class Client:
    """An attached control connection (realtime) with endpoints whose rings this test writes itself."""

    def __init__(self, d, virtual=False):
        self.version, self.ops = _proto()
        self.virtual = virtual
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(10)
        self.s.connect(d.sock)
        attach = struct.pack("<IiIiiiII64s64s", self.version, os.getpid(), os.getuid(), -1, -1, -1, int(virtual), 0,
                             b"h", b"hostile")
        st, rep, fds = _req(self.s, self.ops["CTL_ATTACH"], attach)
        assert st == 0, st
        for fd in fds:
            os.close(fd)
        self.nic_addr = struct.unpack("<I", rep[32:36])[0]
        self.eps = []

    def queue(self, kind, nslots):
        st, rep, fds = _req(self.s, self.ops["CTL_QUEUE_OPEN"], struct.pack("<II", kind, nslots))
        assert st == 0, st
        qid, n, size = struct.unpack("<IIQ", rep[:16])
        mem = mmap.mmap(fds[0], size)
        os.close(fds[0])
        return qid, n, mem, fds[1]

    def endpoint(self, evq_slots=256, mode=0, flags=0, caps=0):
        cid, cn, cmem, cdoor = self.queue(1, 64)
        eid, _, emem, edoor = self.queue(2, evq_slots)
        os.close(edoor)
        vals = [0, 511, 1, 1, 10, 0, 0, 0, cid, eid, eid, 0, 0, 0, 0, 0, 0, flags, 0, caps, mode, 256, 256, 50,
                1000, 1024, 0, 16384, 2048, 2048, 2 << 20, 3, 2 << 20, 4, 0, 500000, 64]
        st, rep, fds = _req(self.s, self.ops["CTL_EP_OPEN"], struct.pack(EP_FMT, *vals))
        for fd in fds:
            os.close(fd)
        if st:
            os.close(cdoor)
            return None
        ep = {"id": struct.unpack("<I", rep[:4])[0], "pid": struct.unpack("<I", rep[4:8])[0], "cmem": cmem,
              "cn": cn, "door": cdoor, "emem": emem, "head": 0}
        self.eps.append(ep)
        return ep

    def push(self, ep, entry, nslots, head=None):
        """Write one entry (padding to the ring's end as a producer must), publish, ring the doorbell."""
        h, cn = ep["head"], ep["cn"]
        if h % cn + nslots > cn:
            off = SLOTS_OFF + (h % cn) * 64
            ep["cmem"][off:off + 4] = struct.pack("<HH", 0xffff, cn - h % cn)
            h += cn - h % cn
        off = SLOTS_OFF + (h % cn) * 64
        entry = entry[:(cn - h % cn) * 64]
        ep["cmem"][off:off + len(entry)] = entry
        ep["head"] = h + nslots if head is None else head
        ep["cmem"][HEAD_OFF:HEAD_OFF + 8] = struct.pack("<Q", ep["head"] % (1 << 64))
        os.write(ep["door"], struct.pack("<Q", 1))

    def settle(self, ep, timeout=10):
        """Wait until the daemon has taken every command published."""
        deadline = time.monotonic() + timeout
        while struct.unpack("<Q", ep["cmem"][TAIL_OFF:TAIL_OFF + 8])[0] != ep["head"]:
            assert time.monotonic() < deadline, "commands not consumed"
            time.sleep(0.01)

    def command(self, ep, op, flags=0, peer=0, addr=0, length=0, tag=0, aux=0, ctx=0, vni=10, nslots=1,
                extra=b""):
        hdr = struct.pack(CMD_FMT, op, nslots, 0, vni, flags, peer, 0, ctx, addr, length, tag, aux)
        self.push(ep, hdr + extra.ljust((nslots - 1) * 64, b"\0"), nslots)

    def close(self):
        for ep in self.eps:
            os.close(ep["door"])
            ep["cmem"].close()
            ep["emem"].close()
        self.s.close()


def _first_event(ep, timeout=10):
    """The first entry of the endpoint's event ring: (kind, context, err, prov_errno)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if struct.unpack("<Q", ep["emem"][HEAD_OFF:HEAD_OFF + 8])[0]:
            kind, _, _, _, _, _, ctx = struct.unpack("<HHHHIIQ", ep["emem"][SLOTS_OFF:SLOTS_OFF + 24])
            err, prov = struct.unpack("<ii", ep["emem"][SLOTS_OFF + 64:SLOTS_OFF + 72])
            return kind, ctx, err, prov
        time.sleep(0.01)
    raise AssertionError("no event")


def _still_serves(d):
    assert d.proc.poll() is None, d.log_text()
    r = subprocess.run([prog("prov_errors")], capture_output=True, text=True, env=d.env(), timeout=60)
    assert r.returncode == 0, r.stdout + d.log_text()
    assert d.proc.poll() is None


def test_send_to_a_nic_the_fabric_does_not_have(tmp_path):
    """A destination address no NIC has (an AV entry made from any bytes): the send completes with
    FI_EHOSTUNREACH / C_RC_UNDELIVERABLE, as the machine's retries give up; the daemon died of it
    ("internal error: direct fabric: message ... outside 17 endpoints")."""
    d = Daemon(tmp_path)
    try:
        c = Client(d)
        ep = c.endpoint()
        c.command(ep, SEND, flags=F_INJECT | F_COMPLETION, peer=(0xfffff << 9) | 1, length=8, ctx=0x1234,
                  nslots=2, extra=b"x" * 8)
        assert _first_event(ep) == (EVT_ERR, 0x1234, errno.EHOSTUNREACH, C_RC_UNDELIVERABLE)
        c.close()
        _still_serves(d)
    finally:
        d.stop()


def test_a_corrupt_ring_with_operations_in_flight(tmp_path):
    """Receives posted and a rendezvous send in flight to a peer that has not posted its receive, then an
    entry of 0 slots: the endpoint fails (every operation in flight gets FI_EIO) and the process exits.  The
    failed operations used to be freed at once while the NIC model still held them, and freed again when it
    let go of them: the daemon crashed."""
    d = Daemon(tmp_path)
    try:
        c = Client(d)
        ep, peer = c.endpoint(), c.endpoint()
        buf = ctypes.create_string_buffer(1 << 17)
        for i in range(4):
            c.command(ep, RECV, flags=F_COMPLETION, addr=ctypes.addressof(buf) + 1024 * i, length=1024, ctx=i + 1)
        c.settle(ep)
        c.command(ep, SEND, flags=F_COMPLETION, peer=(c.nic_addr << 9) | peer["pid"],
                  addr=ctypes.addressof(buf) + 65536, length=65536, ctx=99)
        c.push(ep, struct.pack("<HH", 6, 0), 1)  # an entry that claims 0 slots
        kind, ctx, err, _ = _first_event(ep)
        assert kind == EVT_ERR and err == errno.EIO, (kind, ctx, err)
        time.sleep(0.3)
        c.command(peer, RECV, flags=F_COMPLETION, addr=ctypes.addressof(buf), length=65536, ctx=7)
        time.sleep(0.3)
        c.close()
        time.sleep(0.3)
        _still_serves(d)
    finally:
        d.stop()


@pytest.mark.parametrize("mode", ["realtime", "virtual"])
def test_random_commands_leave_the_daemon_serving(tmp_path, mode):
    """Seeded random commands: valid and unknown ops, every flag, lengths up to 2^64, addresses inside,
    outside and at the edge of the process's memory, destinations on and off the fabric, slot counts the
    entry does not have, now and then a corrupted head; each round the process dies or detaches with
    whatever is open; in virtual time the commands carry random stamps too.  The daemon stays up and
    serves a real client afterwards (it died of the two cases above; in realtime a process whose refused
    command waited for an event queue it never read held the daemon in a loop that never returned to its
    sockets -- endpoint.c's retry timer -- and in virtual time such a command moved the engine on by
    retry_ns forever, with nothing to hold it back, in a loop that never polled -- vclock.c's slice)."""
    scenario = dict(DEFAULT_SCENARIO, emulation=dict(DEFAULT_SCENARIO["emulation"], time_mode=mode))
    d = Daemon(tmp_path, scenario=scenario)
    buf = ctypes.create_string_buffer(1 << 20)
    base = ctypes.addressof(buf)
    try:
        for seed in range(6):
            rnd = random.Random(seed)
            c = Client(d, virtual=mode == "virtual")
            eps = [e for e in (c.endpoint(mode=rnd.choice([0, 1, 2]), flags=rnd.choice([0, 4, 1 << 9])),
                               c.endpoint()) if e]
            assert eps
            for _ in range(rnd.randrange(50, 200)):
                ep = rnd.choice(eps)
                other = rnd.choice(eps)["pid"]
                nslots = rnd.choice([1, 1, 2, 2, 3, 5])
                hdr = struct.pack(
                    CMD_FMT, rnd.choice([1, 2, 3, 4, 5, 6, 7, 0, 9, 0xffff, rnd.getrandbits(16)]),
                    nslots if rnd.random() > 0.05 else rnd.choice([0, 64, 0xffff]), rnd.choice([0, 5, 0xffff]),
                    rnd.choice([10, 0, 11, 0xffff]),
                    rnd.choice([0, 1, 2, 4, 8, 16, 32, 64, 128, 0x100, 0x200, 0xffffffff, rnd.getrandbits(32)]),
                    rnd.choice([(c.nic_addr << 9) | other, (c.nic_addr << 9) | 511, rnd.getrandbits(32), 0]),
                    rnd.choice([0, 1000, 10**9, rnd.getrandbits(64)]) if c.virtual else 0,
                    rnd.getrandbits(64),
                    rnd.choice([base, base + rnd.randrange(1 << 20), 0, 8, (1 << 47) - 8, rnd.getrandbits(64)]),
                    rnd.choice([0, 1, 8, 192, 193, 4096, 1 << 20, (1 << 20) + 1, 1 << 32, rnd.getrandbits(64)]),
                    rnd.getrandbits(64), rnd.choice([0, (1 << 64) - 1, rnd.getrandbits(64), base]))
                c.push(ep, hdr + bytes(rnd.getrandbits(8) for _ in range((nslots - 1) * 64)), nslots,
                       head=rnd.getrandbits(64) if rnd.random() < 0.02 else None)
                assert d.proc.poll() is None, d.log_text()
            time.sleep(0.05)
            if rnd.random() < 0.5:
                _req(c.s, c.ops["CTL_DETACH"])
            c.close()
        time.sleep(0.3)
        _still_serves(d)
        assert daemon_status(d.sock)["bad_commands"] > 0
    finally:
        d.stop()
