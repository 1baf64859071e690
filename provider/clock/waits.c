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

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - 1 - b ? UINT64_MAX - 1 : a + b;
}

static int valid_ts(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}

/* ---- sleeps ---- */

/* Idle for rel_ns of virtual time: 0, or -1 when not in virtual mode (the caller sleeps for real). */
static int vsleep_rel(const struct cxisim_clock_ops *o, uint64_t rel_ns)
{
	uint64_t now;
	if (clk_enter_now(o, &now) != 0)
		return -1;
	int r = clk_sleep_until(o, sat_add(now, clk_ns_to_ps(rel_ns)), &now);
	clk_leave(o);
	return r;
}

/* A deadline given on clock c as an absolute time: the virtual deadline in ps (offsets known after
 * clk_now_ps succeeded). */
static uint64_t abs_deadline_ps(int family, const struct timespec *abs)
{
	uint64_t a = clk_ts_to_ns(abs), off = clk_offset_ns(family);
	return a > off ? clk_ns_to_ps(a - off) : 0;
}

/* clock_nanosleep's semantics in virtual time: an error number, or -1 to fall back to the real call. */
static int vclock_nanosleep(const struct cxisim_clock_ops *o, clockid_t c, int flags, const struct timespec *req)
{
	int f = clk_family_of(c);
	if (f < 0)
		return -1;
	if (!valid_ts(req))
		return EINVAL;
	if (!(flags & TIMER_ABSTIME))
		return vsleep_rel(o, clk_ts_to_ns(req)) == 0 ? 0 : -1;
	uint64_t now;
	if (clk_enter_now(o, &now) != 0)
		return -1;
	uint64_t deadline = abs_deadline_ps(f, req);
	int r = deadline <= now ? 0 : clk_sleep_until(o, deadline, &now) == 0 ? 0 : -1;
	clk_leave(o);
	return r;
}

CLK_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && req) {
		if (!valid_ts(req)) {
			errno = EINVAL;
			return -1;
		}
		if (vsleep_rel(o, clk_ts_to_ns(req)) == 0)
			return 0;
	}
	return get_real_nanosleep()(req, rem);
}

CLK_EXPORT int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && req) {
		int r = vclock_nanosleep(o, c, flags, req);
		if (r >= 0)
			return r;
	}
	return get_real_clock_nanosleep()(c, flags, req, rem);
}

CLK_EXPORT int usleep(useconds_t us)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && us > 0 && vsleep_rel(o, (uint64_t)us * 1000u) == 0)
		return 0;
	return get_real_usleep()(us);
}

CLK_EXPORT unsigned int sleep(unsigned int s)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (o && s > 0 && vsleep_rel(o, (uint64_t)s * 1000000000u) == 0)
		return 0;
	return get_real_sleep()(s);
}

/* syscall(SYS_nanosleep / SYS_clock_nanosleep, ...) (interposer.c forwards them here). */
long clk_syscall_sleep(const struct cxisim_clock_ops *o, long nr, long a, long b, long c, long d, int *handled);
long clk_syscall_sleep(const struct cxisim_clock_ops *o, long nr, long a, long b, long c, long d, int *handled)
{
	(void)d;
	int r;
	if (nr == SYS_nanosleep) {
		const struct timespec *req = (const struct timespec *)a;
		(void)b;
		if (!req)
			return 0;
		if (!valid_ts(req))
			r = EINVAL;
		else if (vsleep_rel(o, clk_ts_to_ns(req)) != 0)
			return 0;
		else
			r = 0;
	} else {
		const struct timespec *req = (const struct timespec *)c;
		if (!req)
			return 0;
		r = vclock_nanosleep(o, (clockid_t)a, (int)b, req);
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
		if (now >= deadline_ps)
			break;
		if (clk_wait(o, deadline_ps, &now) != 0) {
			*real_fallback = 1;
			break;
		}
	}
	clk_leave(o);
	if (now_ps)
		*now_ps = now;
	return r;
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
	*deadline = rel_ns < 0 ? UINT64_MAX : sat_add(now, clk_ns_to_ps((uint64_t)rel_ns));
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

CLK_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	uint64_t deadline;
	if (!o || timeout == 0 || rel_deadline(o, ms_ns(timeout), &deadline) != 0)
		return get_real_poll()(fds, n, timeout);
	struct poll_args a = {fds, n, NULL, 0};
	int fb, r = wait_ready(o, deadline, poll_check, &a, &fb);
	return fb ? get_real_poll()(fds, n, timeout) : r;
}

CLK_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	uint64_t deadline;
	if (!o || (tmo && (!valid_ts(tmo) || (tmo->tv_sec == 0 && tmo->tv_nsec == 0))) ||
	    rel_deadline(o, tmo ? (int64_t)clk_ts_to_ns(tmo) : -1, &deadline) != 0)
		return get_real_ppoll()(fds, n, tmo, mask);
	struct poll_args a = {fds, n, mask, 1};
	int fb, r = wait_ready(o, deadline, poll_check, &a, &fb);
	return fb ? get_real_ppoll()(fds, n, tmo, mask) : r;
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

CLK_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	uint64_t deadline;
	if (!o || timeout == 0 || rel_deadline(o, ms_ns(timeout), &deadline) != 0)
		return get_real_epoll_wait()(epfd, ev, max, timeout);
	struct epoll_args a = {epfd, max, ev, NULL, 0};
	int fb, r = wait_ready(o, deadline, epoll_check, &a, &fb);
	return fb ? get_real_epoll_wait()(epfd, ev, max, timeout) : r;
}

CLK_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	uint64_t deadline;
	if (!o || timeout == 0 || rel_deadline(o, ms_ns(timeout), &deadline) != 0)
		return get_real_epoll_pwait()(epfd, ev, max, timeout, mask);
	struct epoll_args a = {epfd, max, ev, mask, 1};
	int fb, r = wait_ready(o, deadline, epoll_check, &a, &fb);
	return fb ? get_real_epoll_pwait()(epfd, ev, max, timeout, mask) : r;
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
	uint64_t deadline, now;
	if (a->nfds < 0 || a->nfds > FD_SETSIZE || rel_deadline_now(o, rel_ns, &deadline, &now) != 0) {
		*fb = 1;
		return 0;
	}
	for (int i = 0; i < 3; i++)
		if (a->set[i])
			a->saved[i] = *a->set[i];
	int r = wait_ready_at(o, deadline, select_check, a, fb, &now);
	*left_ns = 0;
	if (!*fb && r > 0 && deadline != UINT64_MAX && now < deadline)
		*left_ns = (deadline - now) / 1000u;
	if (*fb) /* give the caller its sets back for the real call */
		for (int i = 0; i < 3; i++)
			if (a->set[i])
				*a->set[i] = a->saved[i];
	return r;
}

CLK_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
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

CLK_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *mask)
{
	const struct cxisim_clock_ops *o = clk_active(RA);
	if (!o || (ts && (!valid_ts(ts) || (ts->tv_sec == 0 && ts->tv_nsec == 0))))
		return get_real_pselect()(nfds, r, w, e, ts, mask);
	struct select_args a = {.nfds = nfds, .set = {r, w, e}, .mask = mask, .use_pselect = 1};
	uint64_t left;
	int fb, n = select_virtual(o, &a, ts ? (int64_t)clk_ts_to_ns(ts) : -1, &left, &fb);
	return fb ? get_real_pselect()(nfds, r, w, e, ts, mask) : n;
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
	if (!valid_ts(abs)) {
		clk_leave(o);
		return EINVAL;
	}
	uint64_t deadline = abs_deadline_ps(f, abs);
	if (now >= deadline) {
		clk_leave(o);
		return ETIMEDOUT;
	}
	pthread_mutex_unlock(m);
	int r = clk_wait(o, deadline, &now);
	pthread_mutex_lock(m);
	clk_leave(o);
	if (r != 0)
		return 0; /* left virtual mode: a spurious wakeup, the caller waits again for real */
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

static int sem_virtual(const struct cxisim_clock_ops *o, sem_t *sem, clockid_t c, const struct timespec *abs)
{
	int f = clk_family_of(c);
	uint64_t now;
	if (f < 0 || clk_enter_now(o, &now) != 0)
		return -2;
	if (!valid_ts(abs)) {
		clk_leave(o);
		errno = EINVAL;
		return -1;
	}
	struct sem_args a = {sem};
	int fb, r = wait_ready(o, abs_deadline_ps(f, abs), sem_check, &a, &fb);
	if (fb)
		return -2;
	if (r > 0)
		return 0;
	if (r == 0)
		errno = ETIMEDOUT;
	return -1;
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
