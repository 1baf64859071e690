/* The frame of the clock test programs that run one set of checks in three modes (clock_timers,
 * clock_syscalls):
 *   PROG owner CHECK...   virtual time of a test owner (clock_owner.so, no daemon; LD_PRELOAD the
 *                         interposer): sleeps jump to their deadline, waits step 10 ms at most;
 *   PROG fabric CHECK...  under `cxisim exec` (virtual time, cpu_scale 0): the process opens an endpoint
 *                         first, so its main thread's clock is the provider's;
 *   PROG none CHECK...    never attaches: every call is the kernel's, on the real clock.
 * Each check prints "ok CHECK" or names the failed expectation and exits 1; "measure CHECK virtual=NS
 * wall=NS" lines give the virtual time (CLOCK_MONOTONIC through the interposer) and the wall time (a raw
 * system call) of the timed part.  In owner and fabric modes virtual time is exact: with cpu_scale 0 (and
 * the owner) CPU time costs none, so a 10 ms timer is 10,000,000 ns of CLOCK_MONOTONIC to the ns. */
#ifndef CLOCK_TEST_H
#define CLOCK_TEST_H

#include <sys/timerfd.h>

#include "../provider/common.h"
#include "clock_owner.h"


static const char *g_mode;
static int g_virtual; /* owner or fabric: virtual time is exact */

static inline uint64_t mono(void)
{
	return t_mono_ns();
}

static inline uint64_t wall(void)
{
	return t_raw_clock_ns(CLOCK_MONOTONIC);
}

static inline void measure(const char *what, uint64_t virt, uint64_t w)
{
	printf("measure %s virtual=%" PRIu64 " wall=%" PRIu64 "\n", what, virt, w);
}

/* Exactly `want` ns of virtual time; at least that much of real time when not attached. */
static inline void expect_elapsed(const char *what, uint64_t got, uint64_t want)
{
	if (g_virtual)
		CHECK(got == want, "%s: %" PRIu64 " ns of virtual time, want %" PRIu64, what, got, want);
	else
		CHECK(got >= want, "%s: %" PRIu64 " ns of real time, want >= %" PRIu64, what, got, want);
}

static inline struct itimerspec its(uint64_t value_ns, uint64_t interval_ns)
{
	struct itimerspec v;
	v.it_value.tv_sec = (time_t)(value_ns / S);
	v.it_value.tv_nsec = (long)(value_ns % S);
	v.it_interval.tv_sec = (time_t)(interval_ns / S);
	v.it_interval.tv_nsec = (long)(interval_ns % S);
	return v;
}

/* A misuse case's outcome, "misuse WHAT RET ERRNO-NAME", compared line by line with the real call's. */
static inline void show(const char *what, long r, int e)
{
	printf("misuse %s %ld %s\n", what, r, r < 0 ? strerrorname_np(e) : "-");
}

#define SHOW(what, call)                                                                                 \
	do {                                                                                             \
		errno = 0;                                                                               \
		long _r = (long)(call);                                                                  \
		show(what, _r, errno);                                                                   \
	} while (0)

struct clock_test {
	const char *name;
	void (*fn)(void);
};

static struct t_ep g_clock_test_ep;

static inline void clock_test_attach(void)
{
	if (!strcmp(g_mode, "owner")) {
		CHECK(clock_owner_start(2 * S, 10 * MS) == 0, "no interposer preloaded");
		g_virtual = 1;
	} else if (!strcmp(g_mode, "fabric")) {
		t_open(&g_clock_test_ep, FI_MSG);
		struct fi_cq_tagged_entry e;
		CHECK(fi_cq_read(g_clock_test_ep.cq, &e, 1) == -FI_EAGAIN, "empty CQ"); /* a provider user now */
		g_virtual = 1;
		uint64_t v0 = mono();
		struct timespec d = {0, 10 * MS};
		nanosleep(&d, NULL);
		CHECK(mono() - v0 == 10 * MS, "not in virtual time at cpu_scale 0: a 10 ms sleep took %" PRIu64,
		      mono() - v0);
	} else {
		CHECK(!strcmp(g_mode, "none"), "mode %s", g_mode);
	}
}

/* main(): PROG MODE CHECK... runs the named checks in order. */
static inline int clock_test_main(int argc, char **argv, const struct clock_test *checks, size_t n)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: %s owner|fabric|none CHECK...\n", argv[0]);
		return 2;
	}
	g_mode = argv[1];
	clock_test_attach();
	for (int a = 2; a < argc; a++) {
		size_t i = 0;
		while (i < n && strcmp(argv[a], checks[i].name))
			i++;
		if (i == n) {
			fprintf(stderr, "%s: no check %s\n", argv[0], argv[a]);
			return 2;
		}
		checks[i].fn();
		printf("ok %s\n", argv[a]);
	}
	if (!strcmp(g_mode, "fabric"))
		t_close(&g_clock_test_ep);
	return 0;
}

#endif
