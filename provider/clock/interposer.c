/* libcxisim-clock.so, part 1: registration, the mapping from virtual time to the clocks, and the clock
 * reads (clock_gettime, gettimeofday, time, timespec_get, syscall(SYS_clock_gettime...)).
 *
 * Mapping (docs/provider.md "Time"): a clock of family F reads offset[F] + virtual ns, where
 *   offset[F] = max(epoch[F], real[F] - virtual ns), both taken at the process's first virtual read, rounded
 *   up to a whole second (REALTIME, TAI) or millisecond (MONOTONIC, BOOTTIME), so dates stay readable.
 * epoch[F] is the real clock when `cxisim exec` started (CXISIM_CLOCK_EPOCH), so the processes of a run
 * share one timeline and REALTIME reads as a date of the run; the max() keeps a process that read the
 * real clock before it attached from ever seeing time go backwards (it then continues from its real time).
 * CPU clocks read the real CPU time times CXISIM_CPU_SCALE (the scenario's cpu_scale), else the cpu_scale the
 * provider registers with its ops (the daemon's, default included): the rate at which the provider charges
 * CPU time to the thread's virtual clock; with neither they are real. */
#include "interposer.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <unistd.h>

static const struct cxisim_clock_ops *_Atomic g_ops;
/* Text segment of the library that registered the ops: its calls are never virtual. */
static _Atomic uintptr_t g_reg_lo, g_reg_hi;
/* > 0 while this thread is inside an op. */
static __thread int t_in_ops;

static uint64_t g_epoch[CLK_F_N];
static uint64_t g_offset[CLK_F_N];
static _Atomic int g_offset_state; /* 0 not computed, 1 being computed, 2 ready */
static double g_cpu_scale = -1; /* < 0: CPU clocks stay real */
static bool g_cpu_scale_given;  /* CXISIM_CPU_SCALE set it; else the registering provider does (ops v3) */

static const clockid_t family_clock[CLK_F_N] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_TAI};

/* ---- real functions ---- */

CLK_REAL(int, clock_gettime, clockid_t, struct timespec *)
CLK_REAL(long, syscall, long, ...)

/* While the cycle counter is trapped (tsc.c), libc's clock_gettime would fault in the vDSO on every call
 * (it reads the counter there): the system call is far cheaper than a trap. */
int clk_real_clock_gettime(clockid_t c, struct timespec *ts)
{
	int (*f)(clockid_t, struct timespec *) = get_real_clock_gettime();
	if (!f || clk_tsc_state() == 1)
		return (int)clk_real_syscall6(SYS_clock_gettime, c, (long)ts, 0, 0, 0, 0);
	return f(c, ts);
}

long clk_real_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	return get_real_syscall()(nr, a, b, c, d, e, f);
}

CLK_REAL(int, gettimeofday, struct timeval *, void *)
CLK_REAL(time_t, time, time_t *)
CLK_REAL(int, timespec_get, struct timespec *, int)

/* ---- registration ---- */

struct text_range {
	uintptr_t addr, lo, hi;
};

static int find_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct text_range *r = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (r->addr >= lo && r->addr < hi) {
			r->lo = lo;
			r->hi = hi;
			return 1;
		}
	}
	return 0;
}

static void forget_ops_in_child(void)
{
	/* A forked child is not attached: it reads real clocks until its own provider registers. */
	atomic_store(&g_ops, NULL);
	clk_timers_forget_in_child();
}

CLK_EXPORT void cxisim_clock_register(const struct cxisim_clock_ops *ops)
{
	if (!ops || ops->version < 1 || !ops->now || !ops->sleep_until || !ops->wait) {
		atomic_store(&g_ops, NULL);
		return;
	}
	struct text_range r = {.addr = (uintptr_t)ops->now};
	if (dl_iterate_phdr(find_segment, &r)) {
		atomic_store(&g_reg_lo, r.lo);
		atomic_store(&g_reg_hi, r.hi);
	}
	if (ops->version >= 3 && !g_cpu_scale_given && ops->cpu_scale >= 0)
		g_cpu_scale = ops->cpu_scale; /* before the ops are published: readers load them first */
	atomic_store(&g_ops, ops);
	if (getenv("CXISIM_CLOCK_DEBUG"))
		fprintf(stderr, "cxisim-clock: ops registered (pid %d), tsc trap %d\n", (int)getpid(),
			clk_tsc_state());
}

static int from_registrant(const void *ra)
{
	uintptr_t a = (uintptr_t)ra, lo = atomic_load_explicit(&g_reg_lo, memory_order_relaxed),
		  hi = atomic_load_explicit(&g_reg_hi, memory_order_relaxed);
	return a >= lo && a < hi;
}

const struct cxisim_clock_ops *clk_active(const void *ra)
{
	const struct cxisim_clock_ops *o = atomic_load_explicit(&g_ops, memory_order_acquire);
	if (!o || t_in_ops || from_registrant(ra))
		return NULL;
	return o;
}

/* ---- the mapping ---- */

int clk_family_of(clockid_t c)
{
	switch (c) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
	case CLOCK_REALTIME_ALARM:
		return CLK_F_REALTIME;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_MONOTONIC_COARSE:
		return CLK_F_MONOTONIC;
	case CLOCK_BOOTTIME:
	case CLOCK_BOOTTIME_ALARM:
		return CLK_F_BOOTTIME;
	case CLOCK_TAI:
		return CLK_F_TAI;
	default:
		return -1;
	}
}

/* Offsets are whole seconds (REALTIME, TAI) or whole milliseconds (MONOTONIC, BOOTTIME), rounded up (time
 * never goes back): a date printed by the program then shows virtual time in its fraction (virtual 807 ns
 * after the start reads HH:MM:SS.000000807). */
static uint64_t whole(uint64_t ns, int family)
{
	uint64_t unit = family == CLK_F_REALTIME || family == CLK_F_TAI ? 1000000000u : 1000000u;
	return ns % unit ? ns + (unit - ns % unit) : ns;
}

static void compute_offsets(uint64_t vt_ns)
{
	int expect = 0;
	if (atomic_compare_exchange_strong(&g_offset_state, &expect, 1)) {
		for (int f = 0; f < CLK_F_N; f++) {
			struct timespec ts;
			uint64_t real = clk_real_clock_gettime(family_clock[f], &ts) == 0 ? clk_ts_to_ns(&ts) : 0;
			uint64_t lift = real > vt_ns ? real - vt_ns : 0;
			g_offset[f] = whole(lift > g_epoch[f] ? lift : g_epoch[f], f);
		}
		if (g_epoch[CLK_F_TAI] == 0 && g_epoch[CLK_F_REALTIME] != 0) {
			/* TAI keeps its real distance from REALTIME (leap seconds). */
			struct timespec a, b;
			clk_real_clock_gettime(CLOCK_REALTIME, &a);
			clk_real_clock_gettime(CLOCK_TAI, &b);
			uint64_t d = whole(clk_ts_to_ns(&b) - clk_ts_to_ns(&a), CLK_F_TAI); /* whole s (leap seconds) */
			if (g_offset[CLK_F_REALTIME] + d > g_offset[CLK_F_TAI])
				g_offset[CLK_F_TAI] = g_offset[CLK_F_REALTIME] + d;
		}
		atomic_store(&g_offset_state, 2);
		return;
	}
	while (atomic_load(&g_offset_state) != 2)
		; /* another thread is computing them: a few clock reads */
}

uint64_t clk_offset_ns(int family)
{
	return g_offset[family];
}

/* The first virtual time any op returns fixes the offsets of the clock families. */
static int offsets_from(int r, const uint64_t *ps)
{
	if (r == 0 && atomic_load_explicit(&g_offset_state, memory_order_acquire) != 2)
		compute_offsets(*ps / 1000u);
	return r;
}

int clk_now_ps(const struct cxisim_clock_ops *o, uint64_t *ps)
{
	t_in_ops++;
	int r = o->now(ps);
	t_in_ops--;
	return offsets_from(r, ps);
}

/* A clock read is where a timer that came due fires at the latest (timers.c). */
int clk_virtual_ns(const struct cxisim_clock_ops *o, int family, uint64_t *ns)
{
	uint64_t ps;
	if (clk_now_ps(o, &ps) != 0)
		return -1;
	*ns = g_offset[family] + ps / 1000u;
	if (ps >= clk_timers_next())
		clk_timers_tick(ps, 1, NULL);
	return 0;
}

int clk_trap_virtual_ns(const struct cxisim_clock_ops *o, int family, uint64_t span_end_cpu_ns, uint64_t post_ns,
			uint64_t *ns)
{
	if (o->version < 2 || !o->now_trapped)
		return clk_virtual_ns(o, family, ns);
	uint64_t ps;
	t_in_ops++;
	int r = o->now_trapped(span_end_cpu_ns, post_ns, &ps);
	t_in_ops--;
	if (offsets_from(r, &ps) != 0)
		return -1;
	*ns = g_offset[family] + ps / 1000u;
	/* In the trap's handler only timerfds (their count): a timer's signal waits for the next clock read,
	 * sleep or wait, so that no application handler runs nested inside the counter's emulation. */
	if (ps >= clk_timers_next_fd())
		clk_timers_tick(ps, 0, NULL);
	return 0;
}

int clk_enter_now(const struct cxisim_clock_ops *o, uint64_t *ps)
{
	if (o->version < 2 || !o->enter || !o->leave)
		return clk_now_ps(o, ps);
	t_in_ops++;
	int r = o->enter(ps);
	t_in_ops--;
	return offsets_from(r, ps);
}

void clk_leave(const struct cxisim_clock_ops *o)
{
	if (o->version < 2 || !o->enter || !o->leave)
		return;
	int e = errno;
	t_in_ops++;
	o->leave();
	t_in_ops--;
	errno = e;
}

double clk_cpu_scale(void)
{
	return g_cpu_scale;
}

int clk_sleep_until(const struct cxisim_clock_ops *o, uint64_t deadline_ps, uint64_t *now_ps)
{
	t_in_ops++;
	int r = o->sleep_until(deadline_ps, now_ps);
	t_in_ops--;
	return r;
}

int clk_wait(const struct cxisim_clock_ops *o, uint64_t deadline_ps, uint64_t *now_ps)
{
	t_in_ops++;
	int r = o->wait(deadline_ps, now_ps);
	t_in_ops--;
	return r;
}

/* ---- clock reads ---- */

/* 0 done, 1 not handled here (the caller uses the real function). */
static int virtual_gettime(const struct cxisim_clock_ops *o, clockid_t c, struct timespec *ts)
{
	int f = clk_family_of(c);
	if (f < 0) {
		if ((c != CLOCK_PROCESS_CPUTIME_ID && c != CLOCK_THREAD_CPUTIME_ID) || g_cpu_scale < 0)
			return 1;
		struct timespec r;
		if (clk_real_clock_gettime(c, &r) != 0)
			return 1;
		clk_ns_to_ts((uint64_t)((double)clk_ts_to_ns(&r) * g_cpu_scale), ts);
		return 0;
	}
	uint64_t ns;
	if (clk_virtual_ns(o, f, &ns) != 0)
		return 1;
	clk_ns_to_ts(ns, ts);
	return 0;
}

CLK_EXPORT int clock_gettime(clockid_t c, struct timespec *ts)
{
	const struct cxisim_clock_ops *o = clk_active(__builtin_return_address(0));
	if (o && virtual_gettime(o, c, ts) == 0)
		return 0;
	return clk_real_clock_gettime(c, ts);
}

/* CLOCK_REALTIME in ns for the wrappers below: virtual with ops, else real -- by system call while the
 * counter is trapped (libc's path reads it in the vDSO).  -1: let libc answer. */
static int realtime_ns(const struct cxisim_clock_ops *o, uint64_t *ns)
{
	if (o && clk_virtual_ns(o, CLK_F_REALTIME, ns) == 0)
		return 0;
	struct timespec ts;
	if (clk_tsc_state() != 1 || clk_real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	*ns = clk_ts_to_ns(&ts);
	return 0;
}

CLK_EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	const struct cxisim_clock_ops *o = clk_active(__builtin_return_address(0));
	uint64_t ns;
	if (tv && realtime_ns(o, &ns) == 0) {
		tv->tv_sec = (time_t)(ns / 1000000000u);
		tv->tv_usec = (suseconds_t)(ns % 1000000000u / 1000u);
		return tz ? get_real_gettimeofday()(NULL, tz) : 0;
	}
	return get_real_gettimeofday()(tv, tz);
}

CLK_EXPORT time_t time(time_t *t)
{
	const struct cxisim_clock_ops *o = clk_active(__builtin_return_address(0));
	uint64_t ns;
	if (o && clk_virtual_ns(o, CLK_F_REALTIME, &ns) == 0) {
		time_t s = (time_t)(ns / 1000000000u);
		if (t)
			*t = s;
		return s;
	}
	return get_real_time()(t);
}

/* C11's timespec_get reads CLOCK_REALTIME inside libc, past the clock_gettime symbol. */
CLK_EXPORT int timespec_get(struct timespec *ts, int base)
{
	const struct cxisim_clock_ops *o = clk_active(__builtin_return_address(0));
	uint64_t ns;
	if (base == TIME_UTC && realtime_ns(o, &ns) == 0) {
		clk_ns_to_ts(ns, ts);
		return base;
	}
	return get_real_timespec_get()(ts, base);
}

/* clock() and times(): the process's CPU time, which glibc reads inside libc (past the clock_gettime
 * symbol), scaled as the CPU clocks above; times()'s return value counts clock ticks of virtual MONOTONIC
 * time (the kernel's counts them since boot: only differences mean anything). */
CLK_REAL(clock_t, clock, void)
CLK_REAL(clock_t, times, struct tms *)

CLK_EXPORT clock_t clock(void)
{
	const struct cxisim_clock_ops *o = clk_active(__builtin_return_address(0));
	struct timespec ts;
	if (o && g_cpu_scale >= 0 && clk_real_clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
		return (clock_t)((double)clk_ts_to_ns(&ts) * g_cpu_scale / (1000000000.0 / CLOCKS_PER_SEC));
	return get_real_clock()();
}

CLK_EXPORT clock_t times(struct tms *b)
{
	const struct cxisim_clock_ops *o = clk_active(__builtin_return_address(0));
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t ns;
	if (!o || g_cpu_scale < 0 || hz <= 0)
		return get_real_times()(b);
	if (b) {
		clock_t r = get_real_times()(b);
		if (r == (clock_t)-1)
			return r;
		b->tms_utime = (clock_t)((double)b->tms_utime * g_cpu_scale);
		b->tms_stime = (clock_t)((double)b->tms_stime * g_cpu_scale);
		b->tms_cutime = (clock_t)((double)b->tms_cutime * g_cpu_scale);
		b->tms_cstime = (clock_t)((double)b->tms_cstime * g_cpu_scale);
	}
	if (clk_virtual_ns(o, CLK_F_MONOTONIC, &ns) != 0)
		return get_real_times()(b);
	return (clock_t)(ns / (1000000000u / (uint64_t)hz));
}

/* syscall(SYS_clock_gettime, ...) and the other system calls that read time, sleep, wait or arm a timer
 * bypass the interposed symbols: serve them here and in the files that own those calls (waits.c,
 * timers.c, signals.c), with the system call's own conventions (-1 and errno; the time left written back
 * where the kernel writes it); forward everything else unchanged. */
CLK_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_execve || nr == SYS_execveat) { /* exec.c */
		clk_tsc_exec_begin();
		long r = clk_real_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		int e = errno;
		clk_tsc_exec_end();
		errno = e;
		return r;
	}
	const struct cxisim_clock_ops *o = clk_active(__builtin_return_address(0));
	if (o) {
		uint64_t ns;
		switch (nr) {
		case SYS_clock_gettime:
			if (a[1] && virtual_gettime(o, (clockid_t)a[0], (struct timespec *)a[1]) == 0)
				return 0;
			break;
		case SYS_gettimeofday:
			if (a[0] && clk_virtual_ns(o, CLK_F_REALTIME, &ns) == 0) {
				struct timeval *tv = (struct timeval *)a[0];
				tv->tv_sec = (time_t)(ns / 1000000000u);
				tv->tv_usec = (suseconds_t)(ns % 1000000000u / 1000u);
				return a[1] ? clk_real_syscall6(nr, 0, a[1], 0, 0, 0, 0) : 0;
			}
			break;
		case SYS_time:
			if (clk_virtual_ns(o, CLK_F_REALTIME, &ns) == 0) {
				if (a[0])
					*(time_t *)a[0] = (time_t)(ns / 1000000000u);
				return (long)(ns / 1000000000u);
			}
			break;
		default:
			break;
		}
	}
	/* timers.c first: it records timerfds and POSIX timers created, and forgets closed fds, attached or not. */
	int handled = 0;
	long r = clk_timers_syscall(o, nr, a, &handled);
	if (!handled && o)
		r = clk_waits_syscall(o, nr, a, &handled);
	if (!handled && o)
		r = clk_signals_syscall(o, nr, a, &handled);
	if (handled)
		return r;
	return clk_real_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* ---- start-up ---- */

__attribute__((constructor)) static void clk_init(void)
{
	const char *e = getenv("CXISIM_CLOCK_EPOCH");
	if (e) {
		unsigned long long v[3];
		if (sscanf(e, "%llu,%llu,%llu", &v[0], &v[1], &v[2]) == 3) {
			g_epoch[CLK_F_REALTIME] = v[0];
			g_epoch[CLK_F_MONOTONIC] = v[1];
			g_epoch[CLK_F_BOOTTIME] = v[2];
		}
	}
	const char *s = getenv("CXISIM_CPU_SCALE");
	if (s && *s) {
		char *end;
		double d = strtod(s, &end);
		if (*end == '\0' && d >= 0) {
			g_cpu_scale = d;
			g_cpu_scale_given = true;
		}
	}
	pthread_atfork(NULL, NULL, forget_ops_in_child);
	clk_tsc_init();
}
