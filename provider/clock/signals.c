/* libcxisim-clock.so, part 5: waits for a signal in virtual time -- pause, sigsuspend, sigtimedwait,
 * sigwaitinfo, sigwait.
 *
 * The signal such a thread waits for is often a timer's, and a virtual timer fires only when some thread's
 * virtual clock passes its expiry: a real pause() would hold virtual time back until the stall rule gives
 * up on the thread, and never see the timer.  So the thread waits idle in virtual time (ops->wait, until
 * the earliest timer's expiry or its own deadline), with every signal blocked while it is idle -- a signal
 * sent meanwhile, by a timer or from outside, stays pending -- and between idles looks for one: a signal of
 * the waited set is taken (sigtimedwait with a zero timeout), any other the wait's mask lets through runs
 * its handler and ends the wait with EINTR (a zero-timeout ppoll with that mask, which is what makes
 * sigsuspend atomic in the kernel too).  A signal from outside the simulation is seen within
 * park_timeout_us of wall time (ops->wait returns then). */
#include "interposer.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>

#define RA __builtin_return_address(0)
#define NEVER UINT64_MAX

CLK_REAL(int, pause, void)
CLK_REAL(int, sigsuspend, const sigset_t *)
CLK_REAL(int, sigtimedwait, const sigset_t *, siginfo_t *, const struct timespec *)
CLK_REAL(int, sigwaitinfo, const sigset_t *, siginfo_t *)
CLK_REAL(int, sigwait, const sigset_t *, int *)
CLK_REAL(int, ppoll, struct pollfd *, nfds_t, const struct timespec *, const sigset_t *)

/* Waits until a signal of `set` is pending (returned, its siginfo in *info), a signal `intr` lets through
 * ran its handler (-1, EINTR), or rel_ns of virtual time passed (-1, EAGAIN; rel_ns < 0: none).  intr and
 * aim NULL: the thread's mask.  A timer's signal is aimed at this thread when `aim` lets it through.
 * -2: not in virtual time (the caller makes the real call). */
static int sig_wait(const struct cxisim_clock_ops *o, int64_t rel_ns, const sigset_t *set, siginfo_t *info,
		    const sigset_t *intr, const sigset_t *aim)
{
	uint64_t now;
	if (clk_now_ps(o, &now) != 0)
		return -2;
	uint64_t deadline = rel_ns < 0 ? NEVER : clk_sat_add(now, clk_ns_to_ps((uint64_t)rel_ns));
	sigset_t all, old, aimed;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!intr)
		intr = &old;
	if (!aim) {
		aimed = old;
		if (set) /* sigtimedwait: a timer's signal of the set is for this thread */
			for (int s = 1; s < NSIG; s++)
				if (sigismember(set, s) == 1)
					sigdelset(&aimed, s);
		aim = &aimed;
	}
	struct timespec zero = {0, 0};
	int r, e = 0;
	for (;;) {
		if (set) {
			r = get_real_sigtimedwait()(set, info, &zero);
			if (r > 0 || errno != EAGAIN) {
				e = errno;
				break;
			}
		}
		if (get_real_ppoll()(NULL, 0, &zero, intr) < 0 && errno == EINTR) {
			r = -1;
			e = EINTR;
			break;
		}
		if (now >= deadline) {
			r = -1;
			e = EAGAIN;
			break;
		}
		if (clk_wait_step(o, deadline, aim, &now) < 0) {
			r = -2;
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}

static int pause_o(const struct cxisim_clock_ops *o)
{
	if (o && sig_wait(o, -1, NULL, NULL, NULL, NULL) != -2)
		return -1;
	return get_real_pause()();
}

CLK_EXPORT int pause(void)
{
	return pause_o(clk_active(RA));
}

static int sigsuspend_o(const struct cxisim_clock_ops *o, const sigset_t *mask)
{
	if (o && mask && sig_wait(o, -1, NULL, NULL, mask, mask) != -2)
		return -1;
	return get_real_sigsuspend()(mask);
}

CLK_EXPORT int sigsuspend(const sigset_t *mask)
{
	return sigsuspend_o(clk_active(RA), mask);
}

static int sigtimedwait_o(const struct cxisim_clock_ops *o, const sigset_t *set, siginfo_t *info,
			  const struct timespec *tmo)
{
	if (o && set && (!tmo || (clk_valid_ts(tmo) && (tmo->tv_sec || tmo->tv_nsec)))) {
		int r = sig_wait(o, tmo ? (int64_t)clk_ts_to_ns(tmo) : -1, set, info, NULL, NULL);
		if (r != -2)
			return r;
	}
	return get_real_sigtimedwait()(set, info, tmo);
}

CLK_EXPORT int sigtimedwait(const sigset_t *restrict set, siginfo_t *restrict info,
			    const struct timespec *restrict tmo)
{
	return sigtimedwait_o(clk_active(RA), set, info, tmo);
}

CLK_EXPORT int sigwaitinfo(const sigset_t *restrict set, siginfo_t *restrict info)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && set) {
		int r = sig_wait(o, -1, set, info, NULL, NULL);
		if (r != -2)
			return r;
	}
	return get_real_sigwaitinfo()(set, info);
}

/* sigwait never fails with EINTR (glibc retries): a handler that ran meanwhile only restarts the wait. */
CLK_EXPORT int sigwait(const sigset_t *restrict set, int *restrict sig)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && set && sig) {
		int r;
		while ((r = sig_wait(o, -1, set, NULL, NULL, NULL)) == -1 && errno == EINTR)
			;
		if (r > 0) {
			*sig = r;
			return 0;
		}
		if (r == -1)
			return errno;
	}
	return get_real_sigwait()(set, sig);
}

/* pause, rt_sigsuspend and rt_sigtimedwait (sigwaitinfo is the latter without a timeout) through
 * syscall(2); a signal-set size other than the kernel's is left to the real call (EINVAL). */
long clk_signals_syscall(const struct cxisim_clock_ops *o, long nr, const long *a, int *handled)
{
	*handled = 1;
	switch (nr) {
	case SYS_pause:
		return pause_o(o);
	case SYS_rt_sigsuspend:
		if ((size_t)a[1] == _NSIG / 8)
			return sigsuspend_o(o, (const sigset_t *)a[0]);
		break;
	case SYS_rt_sigtimedwait:
		if ((size_t)a[3] == _NSIG / 8)
			return sigtimedwait_o(o, (const sigset_t *)a[0], (siginfo_t *)a[1], (const struct timespec *)a[2]);
		break;
	default:
		break;
	}
	*handled = 0;
	return 0;
}
