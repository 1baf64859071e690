/* libcxisim-clock.so, part 2: sleeps and timed waits in virtual time.
 *
 * Sleeps (nanosleep, clock_nanosleep, usleep, sleep, and the same through syscall(2)) make the thread idle
 * until its virtual clock reaches the deadline (ops->sleep_until): they take virtual time, not wall time.
 *
 * Timed waits on things the daemon does not own -- poll/ppoll/select/pselect/epoll_wait/epoll_pwait(2) on
 * any fds, pthread_cond_timedwait/clockwait, sem_timedwait/clockwait -- alternate a non-blocking check with
 * ops->wait(deadline): the thread is idle until its deadline, until something changes for the process
 * (a completion becomes visible, which rings the provider's wait fds), or until ops->wait returns early.
 * The check runs after each return, so readiness caused outside the simulation (a pipe, a TCP socket,
 * another thread's pthread_cond_signal) is seen at the next return.  A zero timeout is the real call (it
 * never waits); an infinite one is the same loop without a deadline, so the thread is idle in the daemon's
 * eyes while it waits (a real blocking call would hold virtual time back until the daemon's stall rule
 * gives up on it). */
#include "interposer.h"

#include <dlfcn.h>
#include <errno.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define RA __builtin_return_address(0)

CLK_REAL(int, nanosleep, const struct timespec *, struct timespec *)
CLK_REAL(int, clock_nanosleep, clockid_t, int, const struct timespec *, struct timespec *)
CLK_REAL(int, usleep, useconds_t)
CLK_REAL(unsigned int, sleep, unsigned int)
CLK_REAL(int, poll, struct pollfd *, nfds_t, int)
CLK_REAL(int, ppoll, struct pollfd *, nfds_t, const struct timespec *, const sigset_t *)
CLK_REAL(int, select, int, fd_set *, fd_set *, fd_set *, struct timeval *)
CLK_REAL(int, pselect, int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *)
CLK_REAL(int, epoll_wait, int, struct epoll_event *, int, int)
CLK_REAL(int, epoll_pwait, int, struct epoll_event *, int, int, const sigset_t *)
CLK_REAL(int, pthread_cond_timedwait, pthread_cond_t *, pthread_mutex_t *, const struct timespec *)
CLK_REAL(int, pthread_cond_clockwait, pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *)
CLK_REAL(int, sem_timedwait, sem_t *, const struct timespec *)
CLK_REAL(int, sem_clockwait, sem_t *, clockid_t, const struct timespec *)

/* ---- sleeps ---- */

static uint64_t ps_to_ns_up(uint64_t ps)
{
	return ps / 1000u + (ps % 1000u != 0);
}

/* The thread is idle until its virtual clock reaches the deadline -- rel_ns from now, or `abs` on a clock
 * of family abs_family (>= 0) -- and the timers due on the way fire (an interval timer's signal wakes it
 * at its expiry, as a real one would interrupt the sleep).  0: slept; EINTR: a timer's signal ran a
 * handler in this thread before the deadline (*rem_ns: what was left, rounded up to the ns); -1: not in
 * virtual time (the caller sleeps for real). */
static int vsleep(const struct cxisim_clock_ops *o, uint64_t rel_ns, int abs_family, const struct timespec *abs,
		  uint64_t *rem_ns)
{
	uint64_t now;
	if (clk_enter_now(o, &now) != 0)
		return -1;
	uint64_t deadline = abs_family >= 0 ? clk_abs_deadline_ps(abs_family, abs) : clk_sat_add(now, clk_ns_to_ps(rel_ns));
	for (;;) {
		uint64_t next = clk_timers_next();
		if (now < deadline && now < next && clk_sleep_until(o, deadline < next ? deadline : next, &now) != 0) {
			clk_leave(o);
			return -1;
		}
		clk_leave(o);
		int t = clk_timers_tick(now, 1, NULL);
		if (now >= deadline)
			return 0;
		if (t & CLK_TICK_SIGNALLED) {
			if (rem_ns)
				*rem_ns = ps_to_ns_up(deadline - now);
			return EINTR;
		}
		if (clk_enter_now(o, &now) != 0)
			return -1;
	}
}

/* clock_nanosleep's semantics in virtual time: an error number, or -1 to fall back to the real call. */
static int vclock_nanosleep(const struct cxisim_clock_ops *o, clockid_t c, int flags, const struct timespec *req,
			    struct timespec *rem)
{
	int f = clk_family_of(c);
	if (f < 0)
		return -1;
	if (!clk_valid_ts(req))
		return EINVAL;
	uint64_t left;
	int abs = flags & TIMER_ABSTIME, r = vsleep(o, abs ? 0 : clk_ts_to_ns(req), abs ? f : -1, req, &left);
	if (r == EINTR && rem && !abs)
		clk_ns_to_ts(left, rem);
	return r;
}

CLK_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && req) {
		if (!clk_valid_ts(req)) {
			errno = EINVAL;
			return -1;
		}
		uint64_t left;
		int r = vsleep(o, clk_ts_to_ns(req), -1, NULL, &left);
		if (r == 0)
			return 0;
		if (r == EINTR) {
			if (rem)
				clk_ns_to_ts(left, rem);
			errno = EINTR;
			return -1;
		}
	}
	return get_real_nanosleep()(req, rem);
}

CLK_EXPORT int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && req) {
		int r = vclock_nanosleep(o, c, flags, req, rem);
		if (r >= 0)
			return r;
	}
	return get_real_clock_nanosleep()(c, flags, req, rem);
}

CLK_EXPORT int usleep(useconds_t us)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && us > 0) {
		int r = vsleep(o, (uint64_t)us * 1000u, -1, NULL, NULL);
		if (r == 0)
			return 0;
		if (r == EINTR) {
			errno = EINTR;
			return -1;
		}
	}
	return get_real_usleep()(us);
}

/* Interrupted, sleep returns the whole seconds left (glibc: the remaining timespec's tv_sec). */
CLK_EXPORT unsigned int sleep(unsigned int s)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && s > 0) {
		uint64_t left;
		int r = vsleep(o, (uint64_t)s * 1000000000u, -1, NULL, &left);
		if (r == 0)
			return 0;
		if (r == EINTR)
			return (unsigned int)(left / 1000000000u);
	}
	return get_real_sleep()(s);
}

/* syscall(SYS_nanosleep / SYS_clock_nanosleep, ...) (clk_waits_syscall below). */
static long clk_syscall_sleep(const struct cxisim_clock_ops *o, long nr, long a, long b, long c, long d, int *handled)
{
	int r;
	if (nr == SYS_nanosleep) {
		const struct timespec *req = (const struct timespec *)a;
		if (!req)
			return 0;
		uint64_t left;
		if (!clk_valid_ts(req))
			r = EINVAL;
		else if ((r = vsleep(o, clk_ts_to_ns(req), -1, NULL, &left)) < 0)
			return 0;
		else if (r == EINTR && b)
			clk_ns_to_ts(left, (struct timespec *)b);
	} else {
		const struct timespec *req = (const struct timespec *)c;
		if (!req)
			return 0;
		r = vclock_nanosleep(o, (clockid_t)a, (int)b, req, (struct timespec *)d);
		if (r < 0)
			return 0;
	}
	*handled = 1;
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

/* ---- waits for readiness ---- */

/* Calls check() (non-blocking) until it reports something (> 0, or < 0 an error) or the virtual clock
 * reaches deadline_ps (returns 0).  *real_fallback = 1 when the process left virtual mode.  Entered
 * (clk_enter_now) by the caller: the checks are the interposer's work, not charged; it leaves on return.
 * now_ps (if not NULL): the virtual time when entered (in), last seen (out). */
static int wait_ready_at(const struct cxisim_clock_ops *o, uint64_t deadline_ps, int (*check)(void *), void *arg,
			 int *real_fallback, uint64_t *now_ps)
{
	*real_fallback = 0;
	uint64_t now = now_ps ? *now_ps : 0;
	int r;
	for (;;) {
		r = check(arg);
		if (r != 0)
			break;
		if (clk_now_ps(o, &now) != 0) {
			*real_fallback = 1;
			break;
		}
		uint64_t next = clk_timers_next();
		if (now >= next) {
			/* Timers due: they fire outside the emulation (a handler is the application's work); a
			 * timerfd among the fds is then readable, and a handler run here ends the wait (EINTR). */
			clk_leave(o);
			if (clk_timers_tick(now, 1, NULL) & CLK_TICK_SIGNALLED) {
				errno = EINTR;
				r = -1;
				goto out;
			}
			if (clk_enter_now(o, &now) != 0) {
				*real_fallback = 1;
				goto out;
			}
			continue;
		}
		if (now >= deadline_ps)
			break;
		if (clk_wait(o, deadline_ps < next ? deadline_ps : next, &now) != 0) {
			*real_fallback = 1;
			break;
		}
	}
	clk_leave(o);
out:
	if (now_ps)
		*now_ps = now;
	return r;
}

/* One idle step (interposer.h). */
int clk_wait_step(const struct cxisim_clock_ops *o, uint64_t deadline_ps, const sigset_t *mask, uint64_t *now_ps)
{
	uint64_t now, next = clk_timers_next(), until = deadline_ps < next ? deadline_ps : next;
	if (clk_enter_now(o, &now) != 0)
		return -1;
	if (now < until && clk_wait(o, until, &now) != 0) {
		clk_leave(o);
		return -1;
	}
	clk_leave(o);
	*now_ps = now;
	return clk_timers_tick(now, 1, mask);
}

static int wait_ready(const struct cxisim_clock_ops *o, uint64_t deadline_ps, int (*check)(void *), void *arg,
		      int *real_fallback)
{
	return wait_ready_at(o, deadline_ps, check, arg, real_fallback, NULL);
}

/* The virtual deadline rel_ns from now (rel_ns < 0: none, UINT64_MAX), or -1 when not in virtual mode.
 * Enters the emulation: wait_ready leaves it. */
static int rel_deadline_now(const struct cxisim_clock_ops *o, int64_t rel_ns, uint64_t *deadline, uint64_t *now_ps)
{
	uint64_t now;
	if (clk_enter_now(o, &now) != 0)
		return -1;
	*now_ps = now;
	*deadline = rel_ns < 0 ? UINT64_MAX : clk_sat_add(now, clk_ns_to_ps((uint64_t)rel_ns));
	return 0;
}

static int rel_deadline(const struct cxisim_clock_ops *o, int64_t rel_ns, uint64_t *deadline)
{
	uint64_t now;
	return rel_deadline_now(o, rel_ns, deadline, &now);
}

/* A poll(2)-style timeout in ms as ns (< 0: infinite). */
static int64_t ms_ns(int timeout)
{
	return timeout < 0 ? -1 : (int64_t)timeout * 1000000;
}

struct poll_args {
	struct pollfd *fds;
	nfds_t n;
	const sigset_t *mask;
	int use_ppoll;
};

static int poll_check(void *p)
{
	struct poll_args *a = p;
	if (a->use_ppoll) {
		struct timespec zero = {0, 0};
		return get_real_ppoll()(a->fds, a->n, &zero, a->mask);
	}
	return get_real_poll()(a->fds, a->n, 0);
}

/* Waits until check() reports or rel_ns of virtual time passed (rel_ns < 0: none); *left_ns: the time left
 * to the deadline when it returns (0 at or past it, or without one), which ppoll, pselect6 and select
 * write back as the kernel does.  *fb = 1: not virtual (the caller makes the real call). */
static int wait_left(const struct cxisim_clock_ops *o, int64_t rel_ns, int (*check)(void *), void *arg,
		     uint64_t *left_ns, int *fb)
{
	uint64_t deadline, now;
	*left_ns = 0;
	if (rel_deadline_now(o, rel_ns, &deadline, &now) != 0) {
		*fb = 1;
		return 0;
	}
	int r = wait_ready_at(o, deadline, check, arg, fb, &now);
	if (!*fb && deadline != UINT64_MAX && now < deadline)
		*left_ns = (deadline - now) / 1000u;
	return r;
}

static int poll_o(const struct cxisim_clock_ops *o, struct pollfd *fds, nfds_t n, int timeout)
{
	uint64_t deadline;
	if (!o || timeout == 0 || rel_deadline(o, ms_ns(timeout), &deadline) != 0)
		return get_real_poll()(fds, n, timeout);
	struct poll_args a = {fds, n, NULL, 0};
	int fb, r = wait_ready(o, deadline, poll_check, &a, &fb);
	return fb ? get_real_poll()(fds, n, timeout) : r;
}

CLK_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	return poll_o(clk_active(RA), fds, n, timeout);
}

/* A timespec timeout that makes the call wait: NULL (none) or valid and not zero.  Otherwise the real
 * call answers (EINVAL, or a check that never waits). */
static int waits_for(const struct timespec *tmo)
{
	return !tmo || (clk_valid_ts(tmo) && (tmo->tv_sec || tmo->tv_nsec));
}

/* ppoll; `left` (not NULL): the raw system call's way, which writes the time left back into *tmo. */
static int ppoll_o(const struct cxisim_clock_ops *o, struct pollfd *fds, nfds_t n, struct timespec *tmo,
		   const sigset_t *mask, int raw)
{
	if (!o || !waits_for(tmo))
		goto real;
	struct poll_args a = {fds, n, mask, 1};
	uint64_t left;
	int fb, r = wait_left(o, tmo ? (int64_t)clk_ts_to_ns(tmo) : -1, poll_check, &a, &left, &fb);
	if (fb)
		goto real;
	if (raw && tmo)
		clk_ns_to_ts(left, tmo);
	return r;
real:
	if (raw)
		return (int)clk_real_syscall6(SYS_ppoll, (long)fds, (long)n, (long)tmo, (long)mask, _NSIG / 8, 0);
	return get_real_ppoll()(fds, n, tmo, mask);
}

CLK_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	return ppoll_o(clk_active(RA), fds, n, (struct timespec *)tmo, mask, 0);
}

struct epoll_args {
	int epfd, max;
	struct epoll_event *ev;
	const sigset_t *mask;
	int use_pwait;
};

static int epoll_check(void *p)
{
	struct epoll_args *a = p;
	if (a->use_pwait)
		return get_real_epoll_pwait()(a->epfd, a->ev, a->max, 0, a->mask);
	return get_real_epoll_wait()(a->epfd, a->ev, a->max, 0);
}

/* epoll_wait (use_pwait 0) and epoll_pwait with a timeout in ms. */
static int epoll_o(const struct cxisim_clock_ops *o, int epfd, struct epoll_event *ev, int max, int timeout,
		   const sigset_t *mask, int use_pwait)
{
	uint64_t deadline;
	struct epoll_args a = {epfd, max, ev, mask, use_pwait};
	int fb = 1, r = 0;
	if (o && timeout != 0 && rel_deadline(o, ms_ns(timeout), &deadline) == 0)
		r = wait_ready(o, deadline, epoll_check, &a, &fb);
	if (!fb)
		return r;
	return use_pwait ? get_real_epoll_pwait()(epfd, ev, max, timeout, mask)
			 : get_real_epoll_wait()(epfd, ev, max, timeout);
}

CLK_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	return epoll_o(clk_active(RA), epfd, ev, max, timeout, NULL, 0);
}

CLK_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	return epoll_o(clk_active(RA), epfd, ev, max, timeout, mask, 1);
}

/* epoll_pwait2 (glibc 2.35, Linux 5.11): a timespec timeout, never written back.  Its real call is the
 * system call itself (ENOSYS on older kernels, as glibc's). */
static int epoll_pwait2_o(const struct cxisim_clock_ops *o, int epfd, struct epoll_event *ev, int max,
			  const struct timespec *tmo, const sigset_t *mask)
{
	if (o && waits_for(tmo)) {
		struct epoll_args a = {epfd, max, ev, mask, 1};
		uint64_t left;
		int fb, r = wait_left(o, tmo ? (int64_t)clk_ts_to_ns(tmo) : -1, epoll_check, &a, &left, &fb);
		if (!fb)
			return r;
	}
	return (int)clk_real_syscall6(SYS_epoll_pwait2, epfd, (long)ev, max, (long)tmo, (long)mask, _NSIG / 8);
}

CLK_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
			    const sigset_t *mask)
{
	return epoll_pwait2_o(clk_active(RA), epfd, ev, max, tmo, mask);
}

/* select(2) overwrites its sets: every check starts from the caller's sets. */
struct select_args {
	int nfds;
	fd_set *set[3];
	fd_set saved[3];
	const sigset_t *mask;
	int use_pselect;
};

static int select_check(void *p)
{
	struct select_args *a = p;
	for (int i = 0; i < 3; i++)
		if (a->set[i])
			*a->set[i] = a->saved[i];
	struct timespec zts = {0, 0};
	struct timeval ztv = {0, 0};
	if (a->use_pselect)
		return get_real_pselect()(a->nfds, a->set[0], a->set[1], a->set[2], &zts, a->mask);
	return get_real_select()(a->nfds, a->set[0], a->set[1], a->set[2], &ztv);
}

static int select_virtual(const struct cxisim_clock_ops *o, struct select_args *a, int64_t rel_ns,
			  uint64_t *left_ns, int *fb)
{
	if (a->nfds < 0 || a->nfds > FD_SETSIZE) {
		*fb = 1;
		return 0;
	}
	for (int i = 0; i < 3; i++)
		if (a->set[i])
			a->saved[i] = *a->set[i];
	int r = wait_left(o, rel_ns, select_check, a, left_ns, fb);
	if (*fb) /* give the caller its sets back for the real call */
		for (int i = 0; i < 3; i++)
			if (a->set[i])
				*a->set[i] = a->saved[i];
	return r;
}

static int select_o(const struct cxisim_clock_ops *o, int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	if (!o || (tv && (tv->tv_sec < 0 || tv->tv_usec < 0 || (tv->tv_sec == 0 && tv->tv_usec == 0))))
		return get_real_select()(nfds, r, w, e, tv);
	struct select_args a = {.nfds = nfds, .set = {r, w, e}};
	uint64_t left;
	int64_t rel = tv ? (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000 : -1;
	int fb, n = select_virtual(o, &a, rel, &left, &fb);
	if (fb)
		return get_real_select()(nfds, r, w, e, tv);
	if (tv && n >= 0) { /* Linux reports the time left */
		tv->tv_sec = (time_t)(left / 1000000000u);
		tv->tv_usec = (suseconds_t)(left % 1000000000u / 1000u);
	}
	return n;
}

CLK_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	return select_o(clk_active(RA), nfds, r, w, e, tv);
}

/* pselect; raw: the system call pselect6's way, which writes the time left back into *ts. */
static int pselect_o(const struct cxisim_clock_ops *o, int nfds, fd_set *r, fd_set *w, fd_set *e, struct timespec *ts,
		     const sigset_t *mask, int raw, long raw_sig)
{
	if (o && waits_for(ts)) {
		struct select_args a = {.nfds = nfds, .set = {r, w, e}, .mask = mask, .use_pselect = 1};
		uint64_t left;
		int fb, n = select_virtual(o, &a, ts ? (int64_t)clk_ts_to_ns(ts) : -1, &left, &fb);
		if (!fb) {
			if (raw && ts && n >= 0)
				clk_ns_to_ts(left, ts);
			return n;
		}
	}
	if (raw)
		return (int)clk_real_syscall6(SYS_pselect6, nfds, (long)r, (long)w, (long)e, (long)ts, raw_sig);
	return get_real_pselect()(nfds, r, w, e, ts, mask);
}

CLK_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *mask)
{
	return pselect_o(clk_active(RA), nfds, r, w, e, (struct timespec *)ts, mask, 0, 0);
}

/* The waits above reached through syscall(2) (interposer.c): 1 in *handled when served here.  The kernel's
 * argument checks that the wrappers do not make (a signal-set size other than the kernel's 8 bytes) are
 * left to the real system call. */
long clk_waits_syscall(const struct cxisim_clock_ops *o, long nr, const long *a, int *handled)
{
	const size_t kset = _NSIG / 8;
	*handled = 1;
	switch (nr) {
	case SYS_poll:
		return poll_o(o, (struct pollfd *)a[0], (nfds_t)a[1], (int)a[2]);
	case SYS_ppoll:
		if (!a[3] || (size_t)a[4] == kset)
			return ppoll_o(o, (struct pollfd *)a[0], (nfds_t)a[1], (struct timespec *)a[2],
				       (const sigset_t *)a[3], 1);
		break;
	case SYS_select:
		return select_o(o, (int)a[0], (fd_set *)a[1], (fd_set *)a[2], (fd_set *)a[3], (struct timeval *)a[4]);
	case SYS_pselect6: {
		/* The sixth argument points to {const sigset_t *set; size_t size}. */
		const struct {
			const sigset_t *set;
			size_t size;
		} *sig = (const void *)a[5];
		if (!sig || !sig->set || sig->size == kset)
			return pselect_o(o, (int)a[0], (fd_set *)a[1], (fd_set *)a[2], (fd_set *)a[3],
					 (struct timespec *)a[4], sig ? sig->set : NULL, 1, a[5]);
		break;
	}
	case SYS_epoll_wait:
		return epoll_o(o, (int)a[0], (struct epoll_event *)a[1], (int)a[2], (int)a[3], NULL, 0);
	case SYS_epoll_pwait:
		if (!a[4] || (size_t)a[5] == kset)
			return epoll_o(o, (int)a[0], (struct epoll_event *)a[1], (int)a[2], (int)a[3],
				       (const sigset_t *)a[4], 1);
		break;
	case SYS_epoll_pwait2:
		if (!a[4] || (size_t)a[5] == kset)
			return epoll_pwait2_o(o, (int)a[0], (struct epoll_event *)a[1], (int)a[2],
					      (const struct timespec *)a[3], (const sigset_t *)a[4]);
		break;
	case SYS_nanosleep:
	case SYS_clock_nanosleep: {
		*handled = 0;
		long r = clk_syscall_sleep(o, nr, a[0], a[1], a[2], a[3], handled);
		if (*handled)
			return r;
		break;
	}
	default:
		break;
	}
	*handled = 0;
	return 0;
}

/* ---- condition variables and semaphores ---- */

/* glibc keeps the condition variable's clock in bit 1 of __wrefs (pthread_condattr_setclock). */
static clockid_t cond_clock(const pthread_cond_t *c)
{
	return (c->__data.__wrefs & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

/* The mutex is released while the thread is idle in virtual time and taken back before returning; a
 * return before the deadline is a spurious wakeup (POSIX allows it; callers re-check their predicate),
 * so a pthread_cond_signal meanwhile is seen at the next return of ops->wait at the latest. */
static int cond_virtual(const struct cxisim_clock_ops *o, pthread_mutex_t *m, clockid_t c,
			const struct timespec *abs)
{
	int f = clk_family_of(c);
	uint64_t now;
	if (f < 0 || clk_enter_now(o, &now) != 0)
		return -1;
	if (!clk_valid_ts(abs)) {
		clk_leave(o);
		return EINVAL;
	}
	uint64_t deadline = clk_abs_deadline_ps(f, abs);
	if (now >= deadline) {
		clk_leave(o);
		return ETIMEDOUT;
	}
	uint64_t next = clk_timers_next();
	pthread_mutex_unlock(m);
	int r = clk_wait(o, deadline < next ? deadline : next, &now);
	pthread_mutex_lock(m);
	clk_leave(o);
	if (r != 0)
		return 0; /* left virtual mode: a spurious wakeup, the caller waits again for real */
	clk_timers_tick(now, 1, NULL); /* a timer due ends the wait early: a spurious wakeup */
	return now >= deadline ? ETIMEDOUT : 0;
}

CLK_EXPORT int pthread_cond_timedwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
				      const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = cond_virtual(o, m, cond_clock(c), abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_cond_timedwait()(c, m, abs);
}

CLK_EXPORT int pthread_cond_clockwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m, clockid_t clk,
				      const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = cond_virtual(o, m, clk, abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_cond_clockwait()(c, m, clk, abs);
}

struct sem_args {
	sem_t *sem;
};

static int sem_check(void *p)
{
	struct sem_args *a = p;
	if (sem_trywait(a->sem) == 0)
		return 1;
	return errno == EAGAIN ? 0 : -1;
}

/* A wait until check() (> 0 done, < 0 an error with errno, 0 not yet) or an absolute deadline on clock c:
 * 0 done, an error number (EINVAL, ETIMEDOUT, check's errno, EINTR when a timer's handler ran and `intr`;
 * without it the wait goes on), or -1: not virtual (the caller makes the real call).  try_first: one check
 * before the deadline is validated (a lock free at once is taken whatever the deadline, as glibc does). */
static int timed_check(const struct cxisim_clock_ops *o, clockid_t c, const struct timespec *abs,
		       int (*check)(void *), void *arg, int intr, int try_first)
{
	int f = clk_family_of(c);
	uint64_t now;
	if (f < 0)
		return -1;
	if (!clk_valid_ts(abs)) {
		int r = try_first ? check(arg) : 0;
		return r > 0 ? 0 : r < 0 ? errno : EINVAL;
	}
	for (;;) {
		if (clk_enter_now(o, &now) != 0)
			return -1;
		int fb, r = wait_ready(o, clk_abs_deadline_ps(f, abs), check, arg, &fb);
		if (fb)
			return -1;
		if (r > 0)
			return 0;
		if (r == 0)
			return ETIMEDOUT;
		if (errno != EINTR || intr)
			return errno;
	}
}

static int sem_virtual(const struct cxisim_clock_ops *o, sem_t *sem, clockid_t c, const struct timespec *abs)
{
	struct sem_args a = {sem};
	int r = timed_check(o, c, abs, sem_check, &a, 1, 0);
	if (r < 0)
		return -2;
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

CLK_EXPORT int sem_timedwait(sem_t *restrict sem, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = sem_virtual(o, sem, CLOCK_REALTIME, abs);
		if (r != -2)
			return r;
	}
	return get_real_sem_timedwait()(sem, abs);
}

CLK_EXPORT int sem_clockwait(sem_t *restrict sem, clockid_t c, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = sem_virtual(o, sem, c, abs);
		if (r != -2)
			return r;
	}
	return get_real_sem_clockwait()(sem, c, abs);
}

/* ---- mutexes, read-write locks, message queues ---- */

CLK_REAL(int, pthread_mutex_timedlock, pthread_mutex_t *, const struct timespec *)
CLK_REAL(int, pthread_mutex_clocklock, pthread_mutex_t *, clockid_t, const struct timespec *)
CLK_REAL(int, pthread_rwlock_timedrdlock, pthread_rwlock_t *, const struct timespec *)
CLK_REAL(int, pthread_rwlock_timedwrlock, pthread_rwlock_t *, const struct timespec *)
CLK_REAL(int, pthread_rwlock_clockrdlock, pthread_rwlock_t *, clockid_t, const struct timespec *)
CLK_REAL(int, pthread_rwlock_clockwrlock, pthread_rwlock_t *, clockid_t, const struct timespec *)
CLK_REAL(ssize_t, mq_timedreceive, mqd_t, char *, size_t, unsigned int *, const struct timespec *)
CLK_REAL(int, mq_timedsend, mqd_t, const char *, size_t, unsigned int, const struct timespec *)

/* A lock attempt: kind 0 mutex, 1 read lock, 2 write lock; rc: the try's result when it took the lock
 * (0, or EOWNERDEAD for a robust mutex whose owner died). */
struct lock_args {
	void *lock;
	int kind, rc;
};

static int lock_check(void *p)
{
	struct lock_args *a = p;
	int r = a->kind == 0 ? pthread_mutex_trylock(a->lock)
		: a->kind == 1 ? pthread_rwlock_tryrdlock(a->lock)
			       : pthread_rwlock_trywrlock(a->lock);
	if (r == EBUSY)
		return 0;
	if (r == 0 || r == EOWNERDEAD) {
		a->rc = r;
		return 1;
	}
	errno = r;
	return -1;
}

/* A timed lock in virtual time (a lock is never interrupted by a signal): an error number, or -1 for the
 * real call.  Another thread's unlock is seen at the next return of ops->wait (park_timeout_us at most). */
static int lock_virtual(const struct cxisim_clock_ops *o, void *lock, int kind, clockid_t c,
			const struct timespec *abs)
{
	struct lock_args a = {lock, kind, 0};
	int r = timed_check(o, c, abs, lock_check, &a, 0, 1);
	return r == 0 ? a.rc : r;
}

CLK_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *restrict m, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = lock_virtual(o, m, 0, CLOCK_REALTIME, abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_mutex_timedlock()(m, abs);
}

CLK_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *restrict m, clockid_t c, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = lock_virtual(o, m, 0, c, abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_mutex_clocklock()(m, c, abs);
}

CLK_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict l, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = lock_virtual(o, l, 1, CLOCK_REALTIME, abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_rwlock_timedrdlock()(l, abs);
}

CLK_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict l, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = lock_virtual(o, l, 2, CLOCK_REALTIME, abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_rwlock_timedwrlock()(l, abs);
}

CLK_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *restrict l, clockid_t c, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = lock_virtual(o, l, 1, c, abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_rwlock_clockrdlock()(l, c, abs);
}

CLK_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *restrict l, clockid_t c, const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		int r = lock_virtual(o, l, 2, c, abs);
		if (r >= 0)
			return r;
	}
	return get_real_pthread_rwlock_clockwrlock()(l, c, abs);
}

/* A message queue operation tried with a deadline already past: the kernel does it if it can, else says
 * ETIMEDOUT at once (EAGAIN for a queue opened O_NONBLOCK, which the real call would say as well). */
struct mq_args {
	mqd_t q;
	char *rbuf;
	const char *sbuf;
	size_t len;
	unsigned int *rprio, sprio;
	ssize_t n;
};

static int mq_check(void *p)
{
	struct mq_args *a = p;
	struct timespec past = {0, 0};
	a->n = a->rbuf ? get_real_mq_timedreceive()(a->q, a->rbuf, a->len, a->rprio, &past)
		       : get_real_mq_timedsend()(a->q, a->sbuf, a->len, a->sprio, &past);
	if (a->n >= 0)
		return 1;
	return errno == ETIMEDOUT ? 0 : -1;
}

CLK_EXPORT ssize_t mq_timedreceive(mqd_t q, char *restrict buf, size_t len, unsigned int *restrict prio,
				   const struct timespec *restrict abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		struct mq_args a = {.q = q, .rbuf = buf, .len = len, .rprio = prio};
		int r = timed_check(o, CLOCK_REALTIME, abs, mq_check, &a, 1, 0);
		if (r == 0)
			return a.n;
		if (r > 0) {
			errno = r;
			return -1;
		}
	}
	return get_real_mq_timedreceive()(q, buf, len, prio, abs);
}

CLK_EXPORT int mq_timedsend(mqd_t q, const char *buf, size_t len, unsigned int prio, const struct timespec *abs)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && abs) {
		struct mq_args a = {.q = q, .sbuf = buf, .len = len, .sprio = prio};
		int r = timed_check(o, CLOCK_REALTIME, abs, mq_check, &a, 1, 0);
		if (r == 0)
			return 0;
		if (r > 0) {
			errno = r;
			return -1;
		}
	}
	return get_real_mq_timedsend()(q, buf, len, prio, abs);
}
