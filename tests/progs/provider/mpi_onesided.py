"""MPI one-sided communication (mpi4py) with results verified: Put, Get, Accumulate (MPI_SUM, concurrent from
every rank), Fetch_and_op, Compare_and_swap (a lock word every rank takes in turn), in fence and passive-target
(lock/unlock) epochs.  Prints one "ok" line per check and "PASSED mpi_onesided on N ranks"."""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failures = 0


def check(cond, what):
    global failures
    ok = comm.allreduce(1 if cond else 0, op=MPI.MIN) == 1
    if rank == 0:
        print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1


N = 1024
mem = np.zeros(N + 8, dtype=np.int64)
win = MPI.Win.Create(mem, disp_unit=8, comm=comm)

# Put: every rank writes its block into the next rank's window.
right, left = (rank + 1) % size, (rank - 1) % size
block = np.arange(N, dtype=np.int64) + 1000 * rank
win.Fence()
win.Put(block, right, target=0)
win.Fence()
check(np.array_equal(mem[:N], np.arange(N, dtype=np.int64) + 1000 * left), "MPI_Put of 1024 int64 in a fence epoch")

# Get: read the left neighbour's window back (it holds the block of the rank before it).
got = np.zeros(N, dtype=np.int64)
win.Fence()
win.Get(got, left, target=0)
win.Fence()
check(np.array_equal(got, np.arange(N, dtype=np.int64) + 1000 * ((left - 1) % size)), "MPI_Get of 1024 int64")

# Accumulate: every rank adds (rank + 1) to 8 counters on rank 0, 50 times, in passive-target epochs.
mem[N:] = 0
comm.Barrier()
one = np.full(8, rank + 1, dtype=np.int64)
for _ in range(50):
    win.Lock(0, MPI.LOCK_SHARED)
    win.Accumulate(one, 0, target=N, op=MPI.SUM)
    win.Unlock(0)
comm.Barrier()
win.Lock(0, MPI.LOCK_SHARED)
tot = np.zeros(8, dtype=np.int64)
win.Get(tot, 0, target=N)
win.Unlock(0)
want = 50 * size * (size + 1) // 2
check(np.all(tot == want), f"MPI_Accumulate(MPI_SUM) from {size} ranks concurrently: {tot[0]} == {want}")

# Fetch_and_op: 100 fetch-adds per rank on one counter; the values fetched are all distinct.
comm.Barrier()
if rank == 0:
    mem[N] = 0
comm.Barrier()
fetched = []
one1, res = np.ones(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
for _ in range(100):
    win.Lock(0, MPI.LOCK_SHARED)
    win.Fetch_and_op(one1, res, 0, target_disp=N, op=MPI.SUM)
    win.Unlock(0)
    fetched.append(int(res[0]))
allf = sorted(sum(comm.allgather(fetched), []))
check(allf == list(range(100 * size)), f"MPI_Fetch_and_op: {100 * size} fetch-adds returned 0..{100 * size - 1} once each")

# Compare_and_swap: a lock word on the last rank (0 free, r + 1 held) guarding a read-modify-write of a
# counter there; every other rank contends for it.  (Open MPI 4.1.4's btl/ofi dereferences a NULL remote
# handle for a compare-and-swap a rank issues on its own window, so the owner does not take part.)
owner = size - 1
comm.Barrier()
if rank == owner:
    mem[N + 1] = 0
    mem[N + 2] = 0
comm.Barrier()
me, free_, old = (np.array([rank + 1], dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
cnt = np.zeros(1, dtype=np.int64)
swaps_ok = True
if rank != owner:
    for _ in range(10):
        while True:
            win.Lock(owner, MPI.LOCK_SHARED)
            win.Compare_and_swap(me, free_, old, owner, target_disp=N + 1)
            win.Unlock(owner)
            if old[0] == 0:
                break
        win.Lock(owner, MPI.LOCK_SHARED)
        win.Get(cnt, owner, target=N + 2)
        win.Flush(owner)
        cnt[0] += 1
        win.Put(cnt, owner, target=N + 2)
        win.Flush(owner)
        win.Compare_and_swap(free_, me, old, owner, target_disp=N + 1)
        win.Unlock(owner)
        swaps_ok &= bool(old[0] == rank + 1)
comm.Barrier()
if rank == owner:
    cnt[0] = mem[N + 2]
cnt = comm.bcast(int(cnt[0]), root=owner)
want = 10 * (size - 1)
check(swaps_ok and cnt == want, f"MPI_Compare_and_swap lock: {want} exclusive increments counted {cnt}")

win.Free()
if rank == 0:
    print(("PASSED" if not failures else "FAILED") + f" mpi_onesided on {size} ranks", flush=True)
sys.exit(1 if failures else 0)
