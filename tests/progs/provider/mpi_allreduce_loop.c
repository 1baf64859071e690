/* An Allreduce loop for the virtual-time benchmark: ITERS MPI_Allreduce of COUNT doubles (sum), checked,
 * timed with MPI_Wtime (virtual time under `cxisim exec`).  Rank 0 prints
 * "allreduce ranks=R iters=I count=C mpi_wtime=<s> per_iter_us=<us>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int iters = argc > 1 ? atoi(argv[1]) : 1000, count = argc > 2 ? atoi(argv[2]) : 1;
	double *in = malloc(sizeof(double) * (size_t)count), *out = malloc(sizeof(double) * (size_t)count);
	for (int i = 0; i < count; i++)
		in[i] = rank + i;
	MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	int bad = 0;
	for (int it = 0; it < iters; it++) {
		MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		double want = (double)size * (size - 1) / 2 + (double)size * (count - 1);
		if (out[count - 1] != want)
			bad++;
	}
	double t = MPI_Wtime() - t0;
	if (rank == 0)
		printf("allreduce ranks=%d iters=%d count=%d mpi_wtime=%.9f per_iter_us=%.3f\n", size, iters, count, t,
		       t / iters * 1e6);
	if (bad)
		printf("FAIL rank %d: %d wrong results\n", rank, bad);
	free(in);
	free(out);
	MPI_Finalize();
	return bad ? 1 : 0;
}
