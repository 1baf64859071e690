/* The stall rule of virtual time (docs/provider.md "Time"): a process that attached and then neither calls
 * the provider nor blocks in it must not stop the others.  Process A opens an endpoint (its thread now has
 * a virtual clock and is busy), then, while B and C play 100 rounds of ping-pong, either blocks outside the
 * provider in a pipe read (`pipe`), or computes without calling the provider (`compute`), until they are
 * done.  B and C must finish; the daemon's metrics say which rule let them (the test reads them).
 * B and C start only once A has attached: started together on a loaded host, A's endpoint could open after
 * they were done, and no rule was needed (test_stall_rule[1-compute] saw no extrapolation, 2 runs in ~5). */
#include <sys/mman.h>
#include <sys/syscall.h>

#include "common.h"

#define ROUNDS 100

static volatile int *done_flag; /* shared with the children: B and C are done */
static int done_pipe[2];
static int ready_pipe[2]; /* A -> main: A's endpoint is open */
static bool compute;

static int staller(void *arg)
{
	(void)arg;
	struct t_ep t;
	t_open(&t, FI_TAGGED | FI_MSG);
	T_CHECK(write(ready_pipe[1], "r", 1) == 1, "told the others this process attached");
	if (compute) {
		/* Compute, never entering the provider, until the others are done (bounded: 60 s of wall time,
		 * read with a raw system call: under `cxisim exec` clock_gettime is virtual time, which this loop
		 * must not wait for). */
		double end = (t_raw_clock_ns(CLOCK_MONOTONIC) * 1e-9) + 60;
		volatile uint64_t x = 0;
		while (!*done_flag && (t_raw_clock_ns(CLOCK_MONOTONIC) * 1e-9) < end)
			for (int i = 0; i < 100000; i++)
				x += (uint64_t)i;
		T_CHECK(*done_flag, "the others finished while this process computed");
	} else {
		char c;
		T_CHECK(read(done_pipe[0], &c, 1) == 1, "the others finished while this process was blocked in a pipe read");
	}
	t_close(&t);
	return 0;
}

static int player(struct t_chan c, bool first)
{
	struct t_ep t;
	t_open(&t, FI_TAGGED | FI_MSG);
	char peer[8];
	t_send(c, t.name, 8);
	t_recv(c, peer, 8);
	fi_addr_t p = t_insert(&t, peer);
	t_sync(c);
	/* 20 ms of (virtual) sleep first: far past the staller's clock (its set-up CPU time), so the others
	 * can only finish once the stall rule lets time pass it. */
	struct timespec nap = {0, 20000000};
	nanosleep(&nap, NULL);
	int ok = 0;
	for (int i = 0; i < ROUNDS; i++) {
		uint32_t out = (uint32_t)i, in = ~0u;
		struct fi_cq_tagged_entry e;
		T_OK(fi_trecv(t.ep, &in, sizeof(in), NULL, p, 1, 0, &in));
		if (first) {
			T_OK(fi_tsend(t.ep, &out, sizeof(out), NULL, p, 1, &out));
			t_cq_expect(t.cq, &e, "send");
			t_cq_expect(t.cq, &e, "receive");
		} else {
			t_cq_expect(t.cq, &e, "receive");
			T_OK(fi_tsend(t.ep, &out, sizeof(out), NULL, p, 1, &out));
			t_cq_expect(t.cq, &e, "send");
		}
		ok += in == (uint32_t)i;
	}
	T_CHECK(ok == ROUNDS, "%d of %d rounds of ping-pong while a third process stalls", ok, ROUNDS);
	t_sync(c);
	t_close(&t);
	return 0;
}

static int player_b(void *arg)
{
	return player(t_link_a(arg), true);
}

static int player_c(void *arg)
{
	return player(t_link_b(arg), false);
}

int main(int argc, char **argv)
{
	compute = argc > 1 && !strcmp(argv[1], "compute");
	done_flag = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (done_flag == MAP_FAILED || pipe(done_pipe) || pipe(ready_pipe))
		return 1;
	struct t_link l;
	t_link_init(&l);
	pid_t a = t_fork(staller, NULL, "staller");
	char r;
	T_CHECK(read(ready_pipe[0], &r, 1) == 1, "the staller attached before the others started");
	pid_t b = t_fork(player_b, &l, "B");
	pid_t c = t_fork(player_c, &l, "C");
	t_join(b, "B");
	t_join(c, "C");
	*done_flag = 1;
	T_CHECK(write(done_pipe[1], "x", 1) == 1, "released the staller");
	t_join(a, "staller");
	return t_finish("prov_vtime_stall");
}
