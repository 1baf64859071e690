/* What an application thread's virtual clock sees between messages over the cxi provider (run under
 * `cxisim exec`, virtual time): a ping-pong of 8-byte messages between two processes where, before each
 * ping, the pinger
 *   burn:  burns 1 ms of CPU time (measured on the thread's CPU clock through a raw system call), or
 *   sleep: sleeps 10 ms with nanosleep,
 *   spin:  spins on CLOCK_MONOTONIC (virtual) until 1 ms has passed (a busy wait outside the provider),
 * and reads CLOCK_MONOTONIC (virtual, through the interposer) around it; or
 *   rt:     measures each round trip (receive posted before the send, as fi_pingpong does);
 *   reg:   burns 1 ms of CPU time, then registers and closes a memory region (two control requests, which
 *          take effect at the thread's virtual time: no virtual time passes for them), or
 *   rt-mpi: the same with a blocking send's order (each side waits for its send's completion, then posts
 *           its receive: what MPI_Send + MPI_Recv do over Open MPI's OFI MTL);
 *   tsc:   reads the cycle counter TSC_READS times (x86-64; trapped and emulated where the CPU honours
 *          PR_SET_TSC: each read costs the thread a fault and a signal, which is not charged);
 *   poll:  POLLS calls of poll() with a 1 ms timeout on a pipe nobody writes (virtual waits: their
 *          readiness checks are the interposer's work, not charged);
 *   excursion: a round trip whose echo sleeps ECHO_SLEEP_NS (virtual) and burns ECHO_BURN_NS of CPU before
 *          it replies, while the pinger
 *          polls its CQ and burns EXCURSION_NS of CPU after every empty poll but the first after its send:
 *          only a park that ended by its wall-clock timeout (emulation.park_timeout_us) hands it such a
 *          poll, and that CPU must not move its clock (provider/vtime.c "excursion");
 *   tail:  TAIL_SPANS spans between consecutive clock reads (one site for the span clip), each burning
 *          TAIL_SHORT_NS of CPU, every TAIL_EVERY-th TAIL_LONG_NS; then one span burning 1 ms at the same
 *          site (emulation.span_clip_ns: the long short spans are charged the site's median, the 1 ms burn
 *          1 ms - clip; prints "tail <virtual ns> <long: 0|1> 0" per span, "tailburn <virtual ns> <cpu ns> 0");
 *   tailq: as tail, but only every TAIL_EVERY_Q-th span is short and the others long: the site's median is
 *          the long span, its low quantiles the short one (emulation.span_clip_quantile);
 *   signal: the main thread sleeps in poll() on its CQ's wait fd (fi_trywait first, before the second
 *          thread starts; a 100 ms timeout)
 *          while a second thread, SIGNAL_NS (virtual) after both are ready, calls fi_cq_signal on it: the
 *          poll must return then, not at its timeout.
 * Prints one line per iteration: "<mode> <virtual ns> <cpu ns> <wall ns>", then "PASSED clock_work" when
 * every message arrived. */
#include <poll.h>
#include <sys/syscall.h>

#include "../provider/common.h"

#define ITERS 20
#define TSC_READS 200
#define POLLS 50
#define ECHO_SLEEP_NS 100000
#define EXCURSION_NS 1000000
#define ECHO_BURN_NS 50000
#define SIGNAL_NS 1000000
#define TAIL_SPANS 200
#define TAIL_EVERY 10
#define TAIL_SHORT_NS 1000
#define TAIL_LONG_NS 3000
#define TAIL_EVERY_Q 4

static pthread_barrier_t signal_ready;

static void *signaller(void *arg)
{
	struct t_ep *t = arg;
	/* A provider user from here on (its sleep is virtual, it holds virtual time while busy): a signal to a
	 * CQ of its own, which never idles it.  (A memory registration does not make it one: without an
	 * endpoint bound it never reaches the daemon.) */
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD, .size = 16};
	struct fid_cq *own;
	T_OK(fi_cq_open(t->dom, &ca, &own, NULL));
	T_OK(fi_cq_signal(own));
	pthread_barrier_wait(&signal_ready);
	struct timespec d = {0, SIGNAL_NS};
	nanosleep(&d, NULL);
	T_OK(fi_cq_signal(t->cq));
	T_OK(fi_close(&own->fid));
	return NULL;
}

/* Virtual ns the main thread spends in poll() on the CQ's fd until the other thread's fi_cq_signal. */
static uint64_t signal_wait(struct t_ep *t)
{
	int fd = -1;
	struct fid *f = &t->cq->fid;
	T_OK(fi_control(f, FI_GETWAIT, &fd));
	/* fi_trywait drains the fd (a signal before it is lost, as upstream), so it comes before the signaller
	 * exists.  After the barrier it would race with the signal: a thread blocked in the barrier is stalled
	 * (time goes on without it at the wall clock's pace), and on a loaded host the signaller's 1 ms can
	 * pass before the main thread, released but not yet running, reaches fi_trywait. */
	int n = fi_trywait(t->fab, &f, 1);
	T_CHECK(n == 0, "fi_trywait %d", n);
	pthread_t th;
	pthread_barrier_init(&signal_ready, NULL, 2);
	T_CHECK(pthread_create(&th, NULL, signaller, t) == 0, "pthread_create");
	pthread_barrier_wait(&signal_ready);
	uint64_t v0 = t_mono_ns();
	struct pollfd p = {fd, POLLIN, 0};
	n = poll(&p, 1, 100);
	uint64_t v = t_mono_ns() - v0;
	T_CHECK(n == 1, "poll on the CQ fd returned %d", n);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&signal_ready);
	uint64_t drain;
	ssize_t r = read(fd, &drain, sizeof(drain));
	(void)r;
	return v;
}

static bool mpi_order;
static bool echo_sleeps; /* excursion: the echo replies ECHO_SLEEP_NS (virtual) after the ping */

/* The pinger's side of an excursion round trip: virtual ns from the send to the reply's completion. */
static uint64_t excursion_rt(struct t_ep *t, fi_addr_t peer, uint64_t *n)
{
	char buf[8] = "ping";
	struct fi_cq_tagged_entry e;
	T_OK(fi_recv(t->ep, buf, sizeof(buf), NULL, peer, NULL));
	uint64_t v0 = t_mono_ns();
	T_OK(fi_inject(t->ep, buf, sizeof(buf), peer));
	uint64_t empties = 0;
	ssize_t r;
	while ((r = fi_cq_read(t->cq, &e, 1)) == -FI_EAGAIN)
		if (empties++) /* the first empty poll after the send returns at once; any later one is an excursion */
			t_burn_cpu(EXCURSION_NS);
	T_CHECK(r == 1, "excursion: fi_cq_read %zd", r);
	*n = empties;
	return t_mono_ns() - v0;
}

static void msg(struct t_ep *t, fi_addr_t peer, bool send_first)
{
	if (mpi_order) { /* send, its completion, then the receive */
		char buf[8] = "ping";
		struct fi_cq_tagged_entry e;
		if (send_first) {
			T_OK(fi_send(t->ep, buf, sizeof(buf), NULL, peer, NULL));
			t_cq_expect(t->cq, &e, "send");
		}
		T_OK(fi_recv(t->ep, buf, sizeof(buf), NULL, peer, NULL));
		t_cq_expect(t->cq, &e, "recv");
		if (!send_first) {
			T_OK(fi_send(t->ep, buf, sizeof(buf), NULL, peer, NULL));
			t_cq_expect(t->cq, &e, "send");
		}
		return;
	}
	char buf[8] = "ping";
	struct fi_cq_tagged_entry e;
	T_OK(fi_recv(t->ep, buf, sizeof(buf), NULL, peer, NULL));
	if (send_first) {
		T_OK(fi_send(t->ep, buf, sizeof(buf), NULL, peer, NULL));
		t_cq_expect(t->cq, &e, "send");
	}
	if (echo_sleeps && !send_first) {
		ssize_t r; /* a polling loop, never the wait fd (a poll with a 100 ms timeout) */
		while ((r = fi_cq_read(t->cq, &e, 1)) == -FI_EAGAIN)
			;
		T_CHECK(r == 1, "echo: fi_cq_read %zd", r);
	} else {
		t_cq_expect(t->cq, &e, "recv");
	}
	if (!send_first) {
		if (echo_sleeps) {
			struct timespec d = {0, ECHO_SLEEP_NS};
			nanosleep(&d, NULL);
			t_burn_cpu(ECHO_BURN_NS); /* wall time for the pinger's parks to time out in */
			T_OK(fi_inject(t->ep, buf, sizeof(buf), peer));
			return;
		}
		T_OK(fi_send(t->ep, buf, sizeof(buf), NULL, peer, NULL));
		t_cq_expect(t->cq, &e, "send");
	}
}

struct args {
	struct t_link link;
	const char *mode;
};

static int echo(void *p)
{
	struct args *a = p;
	struct t_chan c = t_link_b(&a->link);
	struct t_ep t;
	t_open(&t, FI_MSG);
	t_send(c, t.name, sizeof(t.name));
	char name[8];
	t_recv(c, name, sizeof(name));
	fi_addr_t peer = t_insert(&t, name);
	for (int i = 0; i < ITERS + 1; i++) /* the warm-up message, then one per iteration */
		msg(&t, peer, false);
	t_close(&t);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = {.mode = argc > 1 ? argv[1] : "burn"};
	if (strcmp(a.mode, "burn") && strcmp(a.mode, "sleep") && strcmp(a.mode, "rt") && strcmp(a.mode, "rt-mpi") &&
	    strcmp(a.mode, "reg") && strcmp(a.mode, "tsc") && strcmp(a.mode, "poll") && strcmp(a.mode, "excursion") &&
	    strcmp(a.mode, "signal") && strcmp(a.mode, "tail") && strcmp(a.mode, "tailq") && strcmp(a.mode, "spin")) {
		fprintf(stderr, "usage: clock_work burn|sleep|spin|reg|rt|rt-mpi|tsc|poll|excursion|signal|tail|tailq\n");
		return 2;
	}
	mpi_order = !strcmp(a.mode, "rt-mpi");
	echo_sleeps = !strcmp(a.mode, "excursion");
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_link_init(&a.link);
	pid_t child = t_fork(echo, &a, "echo");
	struct t_chan c = t_link_a(&a.link);
	struct t_ep t;
	t_open(&t, FI_MSG);
	char name[8];
	t_recv(c, name, sizeof(name));
	t_send(c, t.name, sizeof(t.name));
	fi_addr_t peer = t_insert(&t, name);
	msg(&t, peer, true); /* both sides attached and warm */
	if (!strcmp(a.mode, "signal")) {
		for (int i = 0; i < ITERS; i++)
			printf("signal %" PRIu64 " 0 0\n", signal_wait(&t));
		for (int i = 0; i < ITERS; i++)
			msg(&t, peer, true); /* the echo's messages */
		t_close(&t);
		t_join(child, "echo");
		return t_finish("clock_work");
	}
	if (!strcmp(a.mode, "tail") || !strcmp(a.mode, "tailq")) {
		static uint64_t v[TAIL_SPANS + 1];
		bool q = !strcmp(a.mode, "tailq");
		v[0] = t_mono_ns();
		for (int i = 1; i <= TAIL_SPANS; i++) {
			bool longer = q ? i % TAIL_EVERY_Q != 0 : i % TAIL_EVERY == 0;
			t_burn_cpu(longer ? TAIL_LONG_NS : TAIL_SHORT_NS);
			v[i] = t_mono_ns();
		}
		uint64_t c0 = t_raw_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		t_burn_cpu(1000000);
		uint64_t c1 = t_raw_clock_ns(CLOCK_THREAD_CPUTIME_ID), vb = t_mono_ns();
		for (int i = 1; i <= TAIL_SPANS; i++)
			printf("tail %" PRIu64 " %d 0\n", v[i] - v[i - 1], q ? i % TAIL_EVERY_Q != 0 : i % TAIL_EVERY == 0);
		printf("tailburn %" PRIu64 " %" PRIu64 " 0\n", vb - v[TAIL_SPANS], c1 - c0);
		for (int i = 0; i < ITERS; i++) /* the echo's messages */
			msg(&t, peer, true);
		t_close(&t);
		t_join(child, "echo");
		return t_finish("clock_work");
	}
	if (echo_sleeps) {
		for (int i = 0; i < ITERS; i++) {
			uint64_t n, v = excursion_rt(&t, peer, &n);
			printf("excursion %" PRIu64 " %" PRIu64 " 0\n", v, n); /* virtual ns, empty polls (> 1: excursions) */
		}
		t_close(&t);
		t_join(child, "echo");
		return t_finish("clock_work");
	}
	for (int i = 0; i < ITERS; i++) {
		uint64_t v0 = t_mono_ns(), c0 = t_raw_clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = t_raw_clock_ns(CLOCK_MONOTONIC);
		if (!strcmp(a.mode, "burn")) {
			t_burn_cpu(1000000);
		} else if (!strcmp(a.mode, "spin")) {
			while (t_mono_ns() - v0 < 1000000)
				;
		} else if (!strcmp(a.mode, "reg")) {
			static char region[4096];
			struct fid_mr *mr;
			t_burn_cpu(1000000);
			T_OK(fi_mr_reg(t.dom, region, sizeof(region), FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
			T_OK(fi_close(&mr->fid));
		} else if (!strcmp(a.mode, "tsc")) {
#if defined(__x86_64__)
			for (int k = 0; k < TSC_READS; k++) {
				uint32_t lo, hi;
				__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
			}
#endif
		} else if (!strcmp(a.mode, "poll")) {
			static int quiet[2] = {-1, -1};
			if (quiet[0] < 0)
				T_OK(pipe(quiet));
			int early = 0;
			for (int k = 0; k < POLLS; k++) {
				struct pollfd p = {.fd = quiet[0], .events = POLLIN};
				early += poll(&p, 1, 1) != 0;
			}
			if (early)
				T_CHECK(false, "poll on a quiet pipe returned %d times before its timeout", early);
		} else if (!strcmp(a.mode, "sleep")) {
			struct timespec d = {0, 10000000};
			nanosleep(&d, NULL);
		} else {
			msg(&t, peer, true);
		}
		uint64_t w1 = t_raw_clock_ns(CLOCK_MONOTONIC), c1 = t_raw_clock_ns(CLOCK_THREAD_CPUTIME_ID), v1 = t_mono_ns();
		printf("%s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", a.mode, v1 - v0, c1 - c0, w1 - w0);
		if (strncmp(a.mode, "rt", 2))
			msg(&t, peer, true);
	}
	t_close(&t);
	t_join(child, "echo");
	return t_finish("clock_work");
}
