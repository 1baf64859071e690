/* Interface between the provider's virtual time and the clock interposer (libcxisim-clock.so).
 *
 * In virtual time (`cxisim exec`'s default) the daemon owns time: every application thread that uses the
 * provider has a virtual clock in its slot of the process's `struct pcb_shm`.  The interposer, preloaded by
 * `cxisim exec`, answers the program's clock reads and sleeps from those clocks through these ops; the
 * provider registers them at attach (see docs/provider.md "Time").
 *
 * Rules both sides keep:
 * - Virtual time 0 = the daemon's start.  The interposer maps CLOCK_REALTIME (gettimeofday, time) to a
 *   fixed epoch + virtual time and MONOTONIC/MONOTONIC_RAW/BOOTTIME to a fixed offset + virtual time, the
 *   offsets chosen so that a program that read the real clock before attach never sees time go backwards.
 * - Processes that never attach (mpirun, orted, shells) and realtime mode keep the real clocks, untouched.
 * - The provider's own internal timing never goes through the interposer in a way that recurses: it reads
 *   real clocks through paths it controls, or virtual time through these ops directly.
 */
#ifndef CXISIM_CLOCK_H
#define CXISIM_CLOCK_H

#include <stdint.h>

/* Registered by the provider with the clock interposer when a process attaches in virtual time. */
#define CXISIM_CLOCK_OPS_VERSION 3
struct cxisim_clock_ops {
	uint32_t version;
	/* The calling thread's virtual time in picoseconds (the thread gets its slot on first use, its CPU
	 * time since its last charge is charged first). 0 on success, -1 when the process is no longer
	 * attached in virtual mode (then the caller uses the real clock). */
	int (*now)(uint64_t *ps);
	/* The calling thread is idle until its virtual clock reaches deadline_ps; returns 0 then, with
	 * the virtual time reached in *now_ps. -1: not in virtual mode (caller sleeps for real). */
	int (*sleep_until)(uint64_t deadline_ps, uint64_t *now_ps);
	/* Idle until deadline_ps (UINT64_MAX = none) or until anything changes for this process (an event
	 * or completion becomes visible to it, another of its threads wakes it), whichever is first.
	 * Used by poll/epoll_wait/select/pthread_cond_timedwait with timeouts: the caller re-polls its
	 * real fds with a 0 timeout after each return. 0 on success with *now_ps, -1: not virtual. */
	int (*wait)(uint64_t deadline_ps, uint64_t *now_ps);
	/* Version 2.  `now` for an emulated instruction (a trapped rdtsc): the CPU the trap costs the thread is
	 * not charged.  span_end_cpu_ns: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) where the application's
	 * code stopped -- the caller's first read in its handler less the calibrated cost of the fault and
	 * the signal's delivery (0: the op reads it, as `now`); post_ns: the calibrated cost of the way back
	 * (the rest of the handler, sigreturn), by which the next charged span starts later. */
	int (*now_trapped)(uint64_t span_end_cpu_ns, uint64_t post_ns, uint64_t *ps);
	/* Version 2.  `now`, and the thread is inside the emulation until `leave`: the interposer's own work in
	 * a virtual wait (its readiness checks, the real poll(0)s between idles) is not charged.  Calls of
	 * the other ops in between read no CPU clock.  A thread that is not a busy provider user gets `now`'s
	 * answer and nothing else (leave is then a no-op). */
	int (*enter)(uint64_t *ps);
	void (*leave)(void);
	/* Version 3.  The daemon's emulation.cpu_scale, the rate at which the provider charges CPU time: the
	 * CPU clocks (clock(), times(), the CPU-time clock ids) read the real CPU time times this, so they agree
	 * with what the thread is charged whatever scenario set it (or left it at its default). */
	double cpu_scale;
};
/* Exported by libcxisim-clock.so (LD_PRELOADed by `cxisim exec`, so its symbols are global). The
 * provider finds it with dlsym(RTLD_DEFAULT, "cxisim_clock_register") at attach; absent = no
 * interposer, nothing to do. ops == NULL unregisters (detach, exit). */
void cxisim_clock_register(const struct cxisim_clock_ops *ops);

#endif
