/* MPI semantics over the cxi provider (Open MPI's cm PML with the OFI MTL): ping-pong with data checks
 * across the eager and rendezvous thresholds, MPI_ANY_SOURCE, MPI_Probe / MPI_Iprobe / MPI_Mprobe,
 * MPI_Allreduce and MPI_Alltoall results.  Run with 2 to 8 ranks; prints one line per check on rank 0 and
 * exits non-zero on any failure. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                 \
		int _ok = (cond) ? 1 : 0, _all;                                                              \
		MPI_Allreduce(&_ok, &_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);                            \
		if (rank == 0) {                                                                             \
			printf("%s ", _all ? "ok  " : "FAIL");                                               \
			printf(__VA_ARGS__);                                                                 \
			printf("\n");                                                                        \
			fflush(stdout);                                                                      \
		}                                                                                            \
		if (!_all)                                                                                   \
			failures++;                                                                          \
	} while (0)

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 7;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

static int verify(const unsigned char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 7;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != (unsigned char)(x >> 16))
			return 0;
	}
	return 1;
}

/* Sizes around the inject (192 B), eager (16 KiB + 2 KiB) and rendezvous thresholds, up to 4 MiB. */
static const size_t sizes[] = { 0, 1, 8, 191, 192, 193, 1024, 2048, 2049, 8192, 16384, 18432, 18433, 65536,
				262144, 1 << 20, 4 << 20 };

static void pingpong(void)
{
	size_t max = 4 << 20;
	unsigned char *buf = malloc(max);
	int bad = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		for (int it = 0; it < 3; it++) {
			unsigned seed = (unsigned)(i * 16 + it);
			if (rank == 0) {
				fill(buf, n, seed);
				MPI_Send(buf, (int)n, MPI_BYTE, 1, 100 + it, MPI_COMM_WORLD);
				memset(buf, 0, n);
				MPI_Status st;
				MPI_Recv(buf, (int)n, MPI_BYTE, 1, 200 + it, MPI_COMM_WORLD, &st);
				int cnt;
				MPI_Get_count(&st, MPI_BYTE, &cnt);
				if (!verify(buf, n, seed + 1000) || (size_t)cnt != n)
					bad++;
			} else if (rank == 1) {
				MPI_Status st;
				MPI_Recv(buf, (int)n, MPI_BYTE, 0, 100 + it, MPI_COMM_WORLD, &st);
				if (!verify(buf, n, seed))
					bad++;
				fill(buf, n, seed + 1000);
				MPI_Send(buf, (int)n, MPI_BYTE, 0, 200 + it, MPI_COMM_WORLD);
			}
		}
	}
	CHECK(bad == 0, "ping-pong 0 B..4 MiB across the eager and rendezvous thresholds (%d bad)", bad);
	free(buf);
}

static void any_source_and_probe(void)
{
	/* Every rank but 0 sends its rank; 0 receives with MPI_ANY_SOURCE after probing the size. */
	int bad = 0;
	if (rank == 0) {
		int seen = 0;
		for (int i = 1; i < size; i++) {
			MPI_Status st;
			MPI_Probe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
			int cnt;
			MPI_Get_count(&st, MPI_INT, &cnt);
			int *v = malloc(sizeof(int) * (size_t)cnt);
			MPI_Status st2;
			MPI_Recv(v, cnt, MPI_INT, st.MPI_SOURCE, 7, MPI_COMM_WORLD, &st2);
			if (cnt != st.MPI_SOURCE + 1 || st2.MPI_SOURCE != st.MPI_SOURCE || v[0] != st.MPI_SOURCE)
				bad++;
			seen |= 1 << st.MPI_SOURCE;
			free(v);
		}
		if (seen != ((1 << size) - 2))
			bad++;
	} else {
		int *v = malloc(sizeof(int) * (size_t)(rank + 1));
		for (int i = 0; i <= rank; i++)
			v[i] = rank;
		MPI_Send(v, rank + 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
		free(v);
	}
	CHECK(bad == 0, "MPI_Probe + MPI_ANY_SOURCE from %d senders (%d bad)", size - 1, bad);

	/* MPI_Iprobe loop and matched probe (MPI_Mprobe / MPI_Mrecv). */
	bad = 0;
	if (rank == 1) {
		int x = 4242;
		MPI_Send(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
		MPI_Send(&x, 1, MPI_INT, 0, 10, MPI_COMM_WORLD);
	} else if (rank == 0) {
		int flag = 0;
		MPI_Status st;
		while (!flag)
			MPI_Iprobe(1, 9, MPI_COMM_WORLD, &flag, &st);
		int x = 0;
		MPI_Recv(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (x != 4242 || st.MPI_TAG != 9)
			bad++;
		MPI_Message msg;
		MPI_Mprobe(MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, &msg, &st);
		x = 0;
		MPI_Mrecv(&x, 1, MPI_INT, &msg, &st);
		if (x != 4242 || st.MPI_SOURCE != 1)
			bad++;
	}
	CHECK(bad == 0, "MPI_Iprobe and MPI_Mprobe/MPI_Mrecv (%d bad)", bad);
}

static void collectives(void)
{
	long n = 100000;
	double *in = malloc(sizeof(double) * (size_t)n), *out = malloc(sizeof(double) * (size_t)n);
	for (long i = 0; i < n; i++)
		in[i] = (double)(rank + 1) * (double)i;
	MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double f = (double)size * (size + 1) / 2.0;
	int bad = 0;
	for (long i = 0; i < n; i++)
		if (out[i] != f * (double)i)
			bad++;
	CHECK(bad == 0, "MPI_Allreduce of %ld doubles on %d ranks (%d bad)", n, size, bad);
	int small_in = rank, small_out = -1;
	MPI_Allreduce(&small_in, &small_out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	CHECK(small_out == size - 1, "MPI_Allreduce MAX = %d", small_out);
	free(in);
	free(out);

	int per = 3000;
	int *sb = malloc(sizeof(int) * (size_t)per * (size_t)size), *rb = malloc(sizeof(int) * (size_t)per * (size_t)size);
	for (int d = 0; d < size; d++)
		for (int j = 0; j < per; j++)
			sb[d * per + j] = rank * 1000000 + d * 10000 + j;
	MPI_Alltoall(sb, per, MPI_INT, rb, per, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int s = 0; s < size; s++)
		for (int j = 0; j < per; j++)
			if (rb[s * per + j] != s * 1000000 + rank * 10000 + j)
				bad++;
	CHECK(bad == 0, "MPI_Alltoall of %d ints per pair (%d bad)", per, bad);
	free(sb);
	free(rb);
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		fprintf(stderr, "needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	pingpong();
	any_source_and_probe();
	collectives();
	if (rank == 0)
		printf("%s mpi_checks on %d ranks\n", failures ? "FAILED" : "PASSED", size);
	MPI_Finalize();
	return failures ? 1 : 0;
}
