/* libcxisim-clock.so: the clock interposer's internal interface (shared by its source files).
 *
 * The library is LD_PRELOADed by `cxisim exec` into every process it runs.  Until the provider registers its
 * ops (a process attached in virtual time), every interposed function is the real one.  Afterwards, calls
 * from the application read and spend virtual time through the ops; calls from the registering library
 * itself (the provider) and calls made while inside an op stay real, so the provider never recurses into
 * itself through its own clock reads.  See docs/provider.md "Time". */
#ifndef CXISIM_CLOCK_INTERPOSER_H
#define CXISIM_CLOCK_INTERPOSER_H

#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "../cxisim_clock.h"

#define CLK_EXPORT __attribute__((visibility("default")))

/* Clock families: the clocks of one family share an offset (virtual ns + offset = the clock's value). */
enum clk_family { CLK_F_REALTIME, CLK_F_MONOTONIC, CLK_F_BOOTTIME, CLK_F_TAI, CLK_F_N };

/* The active ops for a call whose return address is `ra`, or NULL when the call must be real (no ops,
 * the caller is the registering library, or this thread is inside an op). */
const struct cxisim_clock_ops *clk_active(const void *ra);

/* Virtual time of the calling thread in ns of family f (offset applied); 0 on success, -1: use real. */
int clk_virtual_ns(const struct cxisim_clock_ops *o, int family, uint64_t *ns);
/* clk_virtual_ns for a trapped instruction (cxisim_clock_ops.now_trapped; plain now with version-1 ops). */
int clk_trap_virtual_ns(const struct cxisim_clock_ops *o, int family, uint64_t span_end_cpu_ns, uint64_t post_ns,
			uint64_t *ns);
/* clk_now_ps that also enters the emulation (cxisim_clock_ops.enter): what follows, up to clk_leave, is the
 * interposer's own work (a virtual wait), not charged.  Only on paths that are virtual (after the decision
 * not to make the real call), and every return after a successful enter passes clk_leave. */
int clk_enter_now(const struct cxisim_clock_ops *o, uint64_t *ps);
void clk_leave(const struct cxisim_clock_ops *o);
/* CXISIM_CPU_SCALE, else the registered ops' cpu_scale (< 0: neither, CPU clocks stay real). */
double clk_cpu_scale(void);
/* The calling thread's virtual time in ps (no offset). */
int clk_now_ps(const struct cxisim_clock_ops *o, uint64_t *ps);
/* Offset in ns of family f (valid after the first successful clk_virtual_ns/clk_now_ps). */
uint64_t clk_offset_ns(int family);
/* The family of a clock id, or -1 for clocks that are not virtualised this way (CPU clocks). */
int clk_family_of(clockid_t c);
/* ops->sleep_until / ops->wait with the re-entrancy guard held. */
int clk_sleep_until(const struct cxisim_clock_ops *o, uint64_t deadline_ps, uint64_t *now_ps);
int clk_wait(const struct cxisim_clock_ops *o, uint64_t deadline_ps, uint64_t *now_ps);

/* The real function `name` below this library: CLK_REAL(ret, name, argument types...) defines
 * get_real_name(), which resolves it with dlsym(RTLD_NEXT) on first use (the one mechanism for every
 * interposed function of the library). */
#define CLK_REAL(ret, name, ...)                                                                          \
	static ret (*clk_real_ptr_##name)(__VA_ARGS__);                                                  \
	static ret (*get_real_##name(void))(__VA_ARGS__)                                                 \
	{                                                                                                \
		ret (*f)(__VA_ARGS__) = __atomic_load_n(&clk_real_ptr_##name, __ATOMIC_RELAXED);         \
		if (!f) {                                                                                \
			f = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);                                \
			__atomic_store_n(&clk_real_ptr_##name, f, __ATOMIC_RELAXED);                     \
		}                                                                                        \
		return f;                                                                                \
	}

/* Real libc functions shared by the library's files. */
int clk_real_clock_gettime(clockid_t c, struct timespec *ts);
long clk_real_syscall6(long nr, long a, long b, long c, long d, long e, long f);

/* The cycle counter (tsc.c): trap rdtsc/rdtscp when the CPU honours PR_SET_TSC, emulate it. */
void clk_tsc_init(void);
/* 1 if rdtsc traps in this process (probe succeeded), 0 if it does not, -1 if trapping is off. */
int clk_tsc_state(void);
/* Around a call that may replace the process image (exec*, posix_spawn, system, popen): the trap is a
 * per-thread flag that survives execve, and the new program's loader reads the counter before any handler of
 * ours is installed, so the calling thread lets the counter run during the call (a thread cloned meanwhile
 * inherits that) and traps it again afterwards. */
void clk_tsc_exec_begin(void);
void clk_tsc_exec_end(void);

/* Interval timers in virtual time (timers.c): timerfd, POSIX timers, alarm/ITIMER_REAL.  Timers are the
 * process's; each expires when the virtual clock of a thread that reads a clock, sleeps or waits passes its
 * expiry (a virtual sleep or wait ends at the earliest armed expiry to let it fire). */
#define CLK_TICK_SIGNALLED 1 /* a timer's signal ran a handler in the calling thread */
#define CLK_TICK_NORESTART 2 /* one of those handlers has no SA_RESTART */
/* The earliest armed expiry in virtual ps (UINT64_MAX: none); of timerfds only. */
uint64_t clk_timers_next(void);
uint64_t clk_timers_next_fd(void);
/* Fires the timers due at now_ps (only timerfds unless may_signal): a timerfd's count grows, a signal is
 * sent -- to the calling thread when `mask` (NULL: its signal mask) lets it through, else to the process.
 * Returns CLK_TICK_* flags.  Never call it inside the emulation (clk_enter_now .. clk_leave) or with a lock
 * the application's handler could need. */
int clk_timers_tick(uint64_t now_ps, int may_signal, const sigset_t *mask);
/* In a forked child: the parent's timers are not the child's (timers.c). */
void clk_timers_forget_in_child(void);
/* One idle step of a virtual wait (waits.c): idle until deadline_ps, the next timer's expiry, or anything
 * that changes for the process (ops->wait; it also returns after park_timeout_us of wall time), then fire
 * the timers due.  Returns the tick's CLK_TICK_* flags, or -1 when the thread is not in virtual time. */
int clk_wait_step(const struct cxisim_clock_ops *o, uint64_t deadline_ps, const sigset_t *mask, uint64_t *now_ps);

/* The calls of each file reached through syscall(2) (interposer.c's syscall): a[0..5] the system call's
 * arguments; *handled = 1 when served (the return value and errno are the system call's), else 0 and the
 * caller forwards it.  o: the active ops (clk_timers_syscall also runs with NULL: creations and closes are
 * recorded attached or not). */
long clk_waits_syscall(const struct cxisim_clock_ops *o, long nr, const long *a, int *handled);
long clk_timers_syscall(const struct cxisim_clock_ops *o, long nr, const long *a, int *handled);
long clk_signals_syscall(const struct cxisim_clock_ops *o, long nr, const long *a, int *handled);

/* ps <-> ns / timespec helpers (saturating). */
static inline uint64_t clk_ts_to_ns(const struct timespec *ts)
{
	if (ts->tv_sec < 0)
		return 0;
	if ((uint64_t)ts->tv_sec > UINT64_MAX / 1000000000u - 1)
		return UINT64_MAX / 1000u;
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static inline uint64_t clk_ns_to_ps(uint64_t ns)
{
	return ns > UINT64_MAX / 1000u - 1 ? UINT64_MAX - 1 : ns * 1000u;
}

static inline void clk_ns_to_ts(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

static inline uint64_t clk_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - 1 - b ? UINT64_MAX - 1 : a + b;
}

static inline int clk_valid_ts(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}

/* A deadline given on a clock of family f as an absolute time: the virtual deadline in ps (offsets known
 * after clk_now_ps succeeded). */
static inline uint64_t clk_abs_deadline_ps(int family, const struct timespec *abs)
{
	uint64_t a = clk_ts_to_ns(abs), off = clk_offset_ns(family);
	return a > off ? clk_ns_to_ps(a - off) : 0;
}

#endif
