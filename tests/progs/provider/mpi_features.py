"""Point-to-point and collective MPI features over cxi (mpi4py), results verified: Sendrecv around a ring at
every size that crosses a protocol boundary (inject 192 B, eager part 2,048 B, get minimum 2,049 B, rendezvous
threshold 16 KiB) up to 64 MiB; synchronous send; nonblocking collectives; 200 receives posted with
MPI_ANY_SOURCE before their messages arrive in reverse tag order; a vector datatype; Comm_split and
Alltoallv; Probe of a 3 MiB message; a cancelled receive.  Prints "FAIL ..." per failed check and
"PASSED mpi_features on N ranks" when every rank passed."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
ok = True


def check(cond, what):
    global ok
    if not cond:
        ok = False
        print(f"rank {rank}: FAIL {what}", flush=True)


left, right = (rank - 1) % size, (rank + 1) % size
for n in (0, 1, 8, 191, 192, 193, 2048, 2049, 16383, 16384, 16385, 1 << 20, 64 << 20):
    a, b = np.full(n, rank % 251, dtype=np.uint8), np.empty(n, dtype=np.uint8)
    comm.Sendrecv(a, dest=right, sendtag=n % 32000, recvbuf=b, source=left, recvtag=n % 32000)
    check(n == 0 or (b == left % 251).all(), f"Sendrecv of {n} B")
    m = min(n, 4096)
    if rank == 0:
        comm.Ssend(a[:m], dest=1, tag=5)
    elif rank == 1:
        x = np.empty(m, dtype=np.uint8)
        comm.Recv(x, source=0, tag=5)
        check((x == 0).all(), f"Ssend of {m} B")

mine, total = np.array([rank], dtype=np.int64), np.empty(1, dtype=np.int64)
comm.Iallreduce(mine, total, op=MPI.SUM).Wait()
check(total[0] == size * (size - 1) // 2, "Iallreduce")
every = np.empty(size, dtype=np.int64)
comm.Iallgather(mine, every).Wait()
check((every == np.arange(size)).all(), "Iallgather")
comm.Ibarrier().Wait()

bufs = [np.empty(64, dtype=np.int32) for _ in range(200)]
recvs = [comm.Irecv(bufs[k], source=MPI.ANY_SOURCE, tag=1000 + k) for k in range(200)]
comm.Barrier()  # every receive is posted before any message leaves
sends = [comm.Isend(np.full(64, k, dtype=np.int32), dest=left, tag=1000 + k) for k in reversed(range(200))]
MPI.Request.Waitall(recvs)
MPI.Request.Waitall(sends)
check(all((bufs[k] == k).all() for k in range(200)), "200 MPI_ANY_SOURCE receives, messages in reverse order")

vec = MPI.INT.Create_vector(100, 1, 3).Commit()
if rank == 0:
    comm.Send([np.arange(300, dtype=np.int32), 1, vec], dest=size - 1, tag=77)
if rank == size - 1:
    got = np.empty(100, dtype=np.int32)
    comm.Recv(got, source=0, tag=77)
    check((got == np.arange(0, 300, 3)).all(), "vector datatype")
vec.Free()

sub = comm.Split(rank % 2, rank)
s, me = sub.Get_size(), sub.Get_rank()
counts = np.arange(1, s + 1, dtype=np.int32)
sendbuf = np.concatenate([np.full(int(counts[i]), me, dtype=np.int32) for i in range(s)])
rcounts = np.full(s, counts[me], dtype=np.int32)
recvbuf = np.empty(int(rcounts.sum()), dtype=np.int32)
sub.Alltoallv([sendbuf, (counts, None)], [recvbuf, (rcounts, None)])
check(recvbuf.tolist() == [i for i in range(s) for _ in range(int(counts[me]))], "Comm_split + Alltoallv")
sub.Free()

if rank == 0:
    comm.Send(np.ones(3 << 20, dtype=np.uint8), dest=1, tag=99)
elif rank == 1:
    st = MPI.Status()
    comm.Probe(0, 99, st)
    n = st.Get_count(MPI.BYTE)
    x = np.empty(n, dtype=np.uint8)
    comm.Recv(x, 0, 99)
    check(n == 3 << 20 and int(x.sum()) == 3 << 20, "Probe + Recv of 3 MiB")

if rank == 0:
    rq = comm.Irecv(np.empty(4, dtype=np.int32), source=MPI.ANY_SOURCE, tag=4242)
    rq.Cancel()
    st = MPI.Status()
    rq.Wait(st)
    check(st.Is_cancelled(), "cancelled receive")

if comm.allreduce(1 if ok else 0, op=MPI.MIN) and rank == 0:
    print(f"PASSED mpi_features on {size} ranks", flush=True)
