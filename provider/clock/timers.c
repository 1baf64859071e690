/* libcxisim-clock.so, part 4: interval timers in virtual time -- timerfd, POSIX timers (timer_create),
 * alarm and setitimer/getitimer(ITIMER_REAL).
 *
 * A timer armed while the process is attached in virtual time expires in virtual time: its expiry is a
 * point of the process's virtual timeline (ps, as the threads' clocks), and it fires when the virtual clock
 * of a thread that reads a clock, sleeps or waits through the interposer reaches it.  Every virtual sleep
 * and wait ends at the earliest armed expiry (clk_timers_next), fires what is due (clk_timers_tick) and goes
 * on, so a program that arms a 10 ms timer and waits for it wakes at exactly 10 ms of virtual time, however
 * long that takes on the wall clock.
 *
 * A timerfd stays a real timerfd, created by the kernel, whose kernel timer is kept disarmed: when the
 * virtual timer expires, the interposer sets the fd's expiration count (ioctl TFD_IOC_SET_TICKS), which
 * makes the fd readable to poll/epoll/select and gives any read -- ours or a raw system call's -- the
 * kernel's own 8-byte count, with the kernel's semantics (settime and disarm reset it, read clears it).
 * Where the ioctl is missing (kernels without CONFIG_CHECKPOINT_RESTORE) the fd is made readable by a
 * one-shot kernel expiry in the past, and the interposed read reports the virtual count instead of the
 * kernel's 1.  Why not an eventfd: the fd keeps being a timerfd for everything the interposer does not see
 * (fstat, /proc/self/fdinfo, a settime before attach, which stays real), and a timer created before the
 * process attached -- event loops create theirs at start -- becomes virtual at its first settime after.
 *
 * POSIX timers and ITIMER_REAL keep their kernel timer too (disarmed while virtual; the id stays the
 * kernel's): a due timer sends its signal -- SIGEV_SIGNAL with si_code SI_TIMER, si_value, si_timerid and
 * si_overrun; ITIMER_REAL's SIGALRM with SI_KERNEL -- to the calling thread when its mask lets the signal
 * through (so the handler runs at once, and the virtual sleep or wait it interrupts ends with EINTR), else
 * to the process (the kernel picks a thread that does not block it, or it stays pending).  SIGEV_THREAD
 * calls the notification function in a new detached thread (default attributes).
 *
 * Timers armed while the process is not attached (mpirun, a shell, before MPI_Init) are real, and stay real
 * until their next settime while attached. */
#include "interposer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#define RA __builtin_return_address(0)

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

#define VT_MAX 256      /* timers of one process the interposer can keep virtual; more stay real */
#define VT_FDS 65536    /* timerfds above this number stay real */
#define VT_DELIVER 16   /* signals sent per tick; the rest at the next */
#define NEVER UINT64_MAX

CLK_REAL(int, timerfd_create, int, int)
CLK_REAL(int, timerfd_settime, int, int, const struct itimerspec *, struct itimerspec *)
CLK_REAL(int, timerfd_gettime, int, struct itimerspec *)
CLK_REAL(int, timer_create, clockid_t, struct sigevent *, timer_t *)
CLK_REAL(int, timer_settime, timer_t, int, const struct itimerspec *, struct itimerspec *)
CLK_REAL(int, timer_gettime, timer_t, struct itimerspec *)
CLK_REAL(int, timer_getoverrun, timer_t)
CLK_REAL(int, timer_delete, timer_t)
CLK_REAL(unsigned int, alarm, unsigned int)
CLK_REAL(int, setitimer, __itimer_which_t, const struct itimerval *, struct itimerval *)
CLK_REAL(int, getitimer, __itimer_which_t, struct itimerval *)
CLK_REAL(ssize_t, read, int, void *, size_t)
CLK_REAL(ssize_t, readv, int, const struct iovec *, int)
CLK_REAL(int, close, int)
CLK_REAL(int, dup2, int, int)
CLK_REAL(int, dup3, int, int, int)
CLK_REAL(int, poll, struct pollfd *, nfds_t, int)

enum vt_kind { VT_FREE, VT_TFD, VT_POSIX, VT_ITIMER };

struct vtimer {
	enum vt_kind kind;
	int family;           /* clock family (interposer.h) */
	int virt;             /* last set while attached: the kernel timer is disarmed, this one runs */
	uint64_t expiry_ps;   /* virtual time of the next expiration; NEVER: disarmed */
	uint64_t interval_ps; /* 0: one-shot */
	int fd;               /* VT_TFD */
	uint64_t pending;     /* VT_TFD: expirations in the fd's count not read yet */
	timer_t id;           /* VT_POSIX */
	struct sigevent sev;  /* VT_POSIX (VT_ITIMER: SIGALRM) */
	int overrun;          /* VT_POSIX: timer_getoverrun */
};

static struct vtimer g_tab[VT_MAX];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_next = NEVER, g_next_fd = NEVER;
static _Atomic uint64_t g_fd_bits[VT_FDS / 64]; /* fds recorded as timerfds */
static _Atomic int g_nfds;
static int g_set_ticks = 1; /* TFD_IOC_SET_TICKS works (cleared at its first failure) */

uint64_t clk_timers_next(void)
{
	return atomic_load_explicit(&g_next, memory_order_acquire);
}

uint64_t clk_timers_next_fd(void)
{
	return atomic_load_explicit(&g_next_fd, memory_order_acquire);
}

/* ---- the table (g_lock held; every signal blocked, so a handler that arms a timer cannot deadlock) ---- */

static void lock(sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	pthread_mutex_lock(&g_lock);
}

static void unlock(const sigset_t *old)
{
	pthread_mutex_unlock(&g_lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void recompute_next(void)
{
	uint64_t n = NEVER, nfd = NEVER;
	for (int i = 0; i < VT_MAX; i++) {
		const struct vtimer *t = &g_tab[i];
		if (t->kind == VT_FREE || !t->virt || t->expiry_ps == NEVER)
			continue;
		if (t->expiry_ps < n)
			n = t->expiry_ps;
		if (t->kind == VT_TFD && t->expiry_ps < nfd)
			nfd = t->expiry_ps;
	}
	atomic_store_explicit(&g_next, n, memory_order_release);
	atomic_store_explicit(&g_next_fd, nfd, memory_order_release);
}

static struct vtimer *alloc_timer(enum vt_kind kind)
{
	for (int i = 0; i < VT_MAX; i++)
		if (g_tab[i].kind == VT_FREE) {
			memset(&g_tab[i], 0, sizeof(g_tab[i]));
			g_tab[i].kind = kind;
			g_tab[i].expiry_ps = NEVER;
			return &g_tab[i];
		}
	return NULL;
}

static struct vtimer *find_fd(int fd)
{
	for (int i = 0; i < VT_MAX; i++)
		if (g_tab[i].kind == VT_TFD && g_tab[i].fd == fd)
			return &g_tab[i];
	return NULL;
}

static struct vtimer *find_id(timer_t id)
{
	for (int i = 0; i < VT_MAX; i++)
		if (g_tab[i].kind == VT_POSIX && g_tab[i].id == id)
			return &g_tab[i];
	return NULL;
}

static struct vtimer *find_itimer(void)
{
	for (int i = 0; i < VT_MAX; i++)
		if (g_tab[i].kind == VT_ITIMER)
			return &g_tab[i];
	return NULL;
}

static int fd_marked(int fd)
{
	if (!atomic_load_explicit(&g_nfds, memory_order_relaxed) || fd < 0 || fd >= VT_FDS)
		return 0;
	return (atomic_load_explicit(&g_fd_bits[fd / 64], memory_order_relaxed) >> (fd % 64)) & 1;
}

static void mark_fd(int fd, int on)
{
	uint64_t bit = 1ull << (fd % 64);
	if (on) {
		if (!(atomic_fetch_or(&g_fd_bits[fd / 64], bit) & bit))
			atomic_fetch_add(&g_nfds, 1);
	} else if (atomic_fetch_and(&g_fd_bits[fd / 64], ~bit) & bit) {
		atomic_fetch_sub(&g_nfds, 1);
	}
}

/* The fd no longer names the timerfd (close, dup2/dup3 over it). */
static void forget_fd(int fd)
{
	sigset_t old;
	lock(&old);
	struct vtimer *t = find_fd(fd);
	if (t) {
		t->kind = VT_FREE;
		recompute_next();
	}
	mark_fd(fd, 0);
	unlock(&old);
}

/* A forked child (interposer.c's atfork handler): it has no POSIX timers or alarm of its parent's (the
 * kernel's rule), and the timerfds it shares with its parent are the parent's to run: they stay recorded,
 * disarmed, until the child sets them itself.  Single-threaded here: the lock may have been held by a thread
 * that does not exist in the child. */
void clk_timers_forget_in_child(void)
{
	pthread_mutex_init(&g_lock, NULL);
	for (int i = 0; i < VT_MAX; i++) {
		struct vtimer *t = &g_tab[i];
		if (t->kind == VT_POSIX || t->kind == VT_ITIMER)
			t->kind = VT_FREE;
		t->virt = 0;
		t->expiry_ps = NEVER;
	}
	recompute_next();
}

/* ---- arming ---- */

static uint64_t ps_to_ns_up(uint64_t ps)
{
	return ps / 1000u + (ps % 1000u != 0);
}

/* The timer's current setting as the kernel reports it: time to the next expiration (0: disarmed). */
static void current(const struct vtimer *t, uint64_t now, struct itimerspec *cur)
{
	uint64_t left = t->expiry_ps == NEVER ? 0 : t->expiry_ps > now ? ps_to_ns_up(t->expiry_ps - now) : 1;
	clk_ns_to_ts(left, &cur->it_value);
	clk_ns_to_ts(t->expiry_ps == NEVER ? 0 : ps_to_ns_up(t->interval_ps), &cur->it_interval);
}

static void arm(struct vtimer *t, int abs, const struct itimerspec *v, uint64_t now)
{
	uint64_t value = clk_ts_to_ns(&v->it_value);
	t->virt = 1;
	t->overrun = 0;
	if (value == 0) {
		t->expiry_ps = NEVER;
		t->interval_ps = 0;
		return;
	}
	t->expiry_ps = abs ? clk_abs_deadline_ps(t->family, &v->it_value) : clk_sat_add(now, clk_ns_to_ps(value));
	if (t->expiry_ps == NEVER)
		t->expiry_ps = NEVER - 1;
	t->interval_ps = clk_ns_to_ps(clk_ts_to_ns(&v->it_interval));
}

/* The calling thread's virtual time, or -1 when it must use the real timers. */
static int attached_now(const struct cxisim_clock_ops *o, uint64_t *now)
{
	return o ? clk_now_ps(o, now) : -1;
}

/* ---- expiry ---- */

/* A timerfd's count grows by k: the kernel's count is set (readable at once), or, without the ioctl, the
 * kernel timer expires once in the past (the interposed read reports `pending`). */
static void tfd_add(struct vtimer *t, uint64_t k)
{
	struct pollfd p = {.fd = t->fd, .events = POLLIN};
	if (get_real_poll()(&p, 1, 0) != 1)
		t->pending = 0; /* read since (perhaps not through the interposer) */
	t->pending = clk_sat_add(t->pending, k);
	if (g_set_ticks) {
		uint64_t v = t->pending;
		if (ioctl(t->fd, TFD_IOC_SET_TICKS, &v) == 0)
			return;
		g_set_ticks = 0;
	}
	struct itimerspec past = {.it_value = {0, 1}};
	get_real_timerfd_settime()(t->fd, TFD_TIMER_ABSTIME, &past, NULL);
	get_real_poll()(&p, 1, 100); /* the expired kernel timer fires at the next interrupt */
}

struct delivery {
	int sig, notify, overrun, timerid;
	enum vt_kind kind;
	pid_t tid;
	union sigval value;
	void (*fn)(union sigval);
};

struct thread_call {
	void (*fn)(union sigval);
	union sigval value;
};

static void *notify_thread(void *p)
{
	struct thread_call c = *(struct thread_call *)p;
	free(p);
	c.fn(c.value);
	return NULL;
}

/* CLK_TICK_* for a signal that runs a handler in the calling thread. */
static int handler_flags(int sig)
{
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) != 0 || sa.sa_handler == SIG_IGN || sa.sa_handler == SIG_DFL)
		return 0;
	return CLK_TICK_SIGNALLED | (sa.sa_flags & SA_RESTART ? 0 : CLK_TICK_NORESTART);
}

static int deliver(const struct delivery *d, const sigset_t *mask)
{
	if (d->notify == SIGEV_NONE)
		return 0;
	if (d->notify == SIGEV_THREAD) {
		struct thread_call *c = malloc(sizeof(*c));
		pthread_attr_t a;
		pthread_t th;
		if (!c || !d->fn) {
			free(c);
			return 0;
		}
		c->fn = d->fn;
		c->value = d->value;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &a, notify_thread, c) != 0)
			free(c);
		pthread_attr_destroy(&a);
		return 0;
	}
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = d->sig;
	if (d->kind == VT_ITIMER) {
		si.si_code = SI_KERNEL;
	} else {
		si.si_code = SI_TIMER;
		si.si_timerid = d->timerid;
		si.si_overrun = d->overrun;
		si.si_value = d->value;
	}
	pid_t pid = getpid(), self = gettid();
	if (d->notify == (SIGEV_SIGNAL | SIGEV_THREAD_ID)) {
		int h = d->tid == self ? handler_flags(d->sig) : 0;
		clk_real_syscall6(SYS_rt_tgsigqueueinfo, pid, d->tid, d->sig, (long)&si, 0, 0);
		return h;
	}
	sigset_t cur;
	if (!mask) {
		pthread_sigmask(SIG_BLOCK, NULL, &cur);
		mask = &cur;
	}
	if (!sigismember(mask, d->sig)) {
		int h = handler_flags(d->sig);
		if (clk_real_syscall6(SYS_rt_tgsigqueueinfo, pid, self, d->sig, (long)&si, 0, 0) == 0)
			return h;
	}
	if (d->kind == VT_ITIMER)
		kill(pid, d->sig);
	else
		clk_real_syscall6(SYS_rt_sigqueueinfo, pid, d->sig, (long)&si, 0, 0, 0);
	return 0;
}

int clk_timers_tick(uint64_t now, int may_signal, const sigset_t *mask)
{
	if (now < (may_signal ? clk_timers_next() : clk_timers_next_fd()))
		return 0;
	struct delivery d[VT_DELIVER];
	int nd = 0;
	sigset_t old;
	lock(&old);
	for (int i = 0; i < VT_MAX; i++) {
		struct vtimer *t = &g_tab[i];
		if (t->kind == VT_FREE || !t->virt || t->expiry_ps > now)
			continue;
		if (t->kind != VT_TFD && (!may_signal || nd == VT_DELIVER))
			continue;
		uint64_t k = 1;
		if (t->interval_ps) {
			k += (now - t->expiry_ps) / t->interval_ps;
			uint64_t step = k > (NEVER - 1) / t->interval_ps ? NEVER - 1 : k * t->interval_ps;
			t->expiry_ps = clk_sat_add(t->expiry_ps, step);
			if (t->expiry_ps == NEVER)
				t->expiry_ps = NEVER - 1;
		} else {
			t->expiry_ps = NEVER;
		}
		if (t->kind == VT_TFD) {
			tfd_add(t, k);
			continue;
		}
		t->overrun = k - 1 > DELAYTIMER_MAX ? DELAYTIMER_MAX : (int)(k - 1);
		d[nd++] = (struct delivery){.sig = t->sev.sigev_signo,
					    .notify = t->sev.sigev_notify,
					    .overrun = t->overrun,
					    .timerid = (int)(intptr_t)t->id,
					    .kind = t->kind,
					    .tid = t->sev._sigev_un._tid,
					    .value = t->sev.sigev_value,
					    .fn = t->sev.sigev_notify_function};
	}
	recompute_next();
	unlock(&old);
	int flags = 0;
	for (int i = 0; i < nd; i++)
		flags |= deliver(&d[i], mask);
	return flags;
}

/* ---- timerfd ---- */

static int tfd_create(int c, int flags)
{
	int fd = get_real_timerfd_create()(c, flags);
	if (fd < 0 || fd >= VT_FDS || clk_family_of(c) < 0)
		return fd;
	sigset_t old;
	lock(&old);
	struct vtimer *t = find_fd(fd); /* an earlier one closed behind the interposer's back */
	if (t)
		t->kind = VT_FREE;
	t = alloc_timer(VT_TFD);
	if (t) {
		t->fd = fd;
		t->family = clk_family_of(c);
		mark_fd(fd, 1);
	}
	recompute_next();
	unlock(&old);
	return fd;
}

CLK_EXPORT int timerfd_create(int c, int flags)
{
	return tfd_create(c, flags);
}

static int bad_setting(const struct itimerspec *v)
{
	return !clk_valid_ts(&v->it_value) || !clk_valid_ts(&v->it_interval);
}

static int tfd_settime_o(const struct cxisim_clock_ops *o, int fd, int flags, const struct itimerspec *v,
			 struct itimerspec *old)
{
	uint64_t now;
	if (!fd_marked(fd) || !o)
		return get_real_timerfd_settime()(fd, flags, v, old);
	if (!v) {
		errno = EFAULT;
		return -1;
	}
	if ((flags & ~(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)) || bad_setting(v)) {
		errno = EINVAL;
		return -1;
	}
	if (attached_now(o, &now) != 0)
		return get_real_timerfd_settime()(fd, flags, v, old);
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_fd(fd);
	if (!t) {
		unlock(&mask);
		return get_real_timerfd_settime()(fd, flags, v, old);
	}
	struct itimerspec zero = {{0, 0}, {0, 0}}, was;
	get_real_timerfd_settime()(fd, 0, &zero, &was); /* the kernel timer stays disarmed, its count 0 */
	if (old) {
		if (t->virt)
			current(t, now, old);
		else
			*old = was;
	}
	t->pending = 0;
	arm(t, flags & TFD_TIMER_ABSTIME, v, now);
	recompute_next();
	unlock(&mask);
	clk_timers_tick(now, 1, NULL); /* an absolute time already past expires at once */
	return 0;
}

CLK_EXPORT int timerfd_settime(int fd, int flags, const struct itimerspec *v, struct itimerspec *old)
{
	return tfd_settime_o(clk_active(RA), fd, flags, v, old);
}

static int tfd_gettime_o(const struct cxisim_clock_ops *o, int fd, struct itimerspec *cur)
{
	uint64_t now;
	if (!fd_marked(fd) || !cur || attached_now(o, &now) != 0)
		return get_real_timerfd_gettime()(fd, cur);
	clk_timers_tick(now, 1, NULL);
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_fd(fd);
	int virt = t && t->virt;
	if (virt)
		current(t, now, cur);
	unlock(&mask);
	return virt ? 0 : get_real_timerfd_gettime()(fd, cur);
}

CLK_EXPORT int timerfd_gettime(int fd, struct itimerspec *cur)
{
	return tfd_gettime_o(clk_active(RA), fd, cur);
}

/* A read of a virtual timerfd: readable -> the kernel's read (the count, cleared); else EAGAIN for a
 * non-blocking fd, or the thread waits in virtual time until the timer expires.  Reads are serialised by
 * the lock, so the check and the read agree (a read by a raw system call can still race with them). */
struct tfd_io {
	int fd;
	void *buf;            /* read */
	const struct iovec *iov; /* readv */
	int iovcnt;
	size_t len;
};

static ssize_t tfd_io_real(const struct tfd_io *a)
{
	return a->iov ? get_real_readv()(a->fd, a->iov, a->iovcnt) : get_real_read()(a->fd, a->buf, a->len);
}

/* 1: done (*r set), 0: not readable. */
static int tfd_try(const struct tfd_io *a, ssize_t *r)
{
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_fd(a->fd);
	if (!t || !t->virt) {
		unlock(&mask);
		*r = tfd_io_real(a);
		return 1;
	}
	struct pollfd p = {.fd = a->fd, .events = POLLIN};
	if (get_real_poll()(&p, 1, 0) != 1) {
		unlock(&mask);
		return 0;
	}
	*r = tfd_io_real(a);
	int e = errno;
	if (*r == 8 && !g_set_ticks && t->pending) { /* the kernel counted 1: report the virtual count */
		if (a->iov) {
			uint64_t v = t->pending;
			const char *src = (const char *)&v;
			for (int i = 0, off = 0; i < a->iovcnt && off < 8; i++) {
				size_t n = a->iov[i].iov_len < (size_t)(8 - off) ? a->iov[i].iov_len : (size_t)(8 - off);
				memcpy(a->iov[i].iov_base, src + off, n);
				off += (int)n;
			}
		} else {
			memcpy(a->buf, &t->pending, 8);
		}
	}
	if (*r == 8)
		t->pending = 0;
	unlock(&mask);
	errno = e;
	return 1;
}

static ssize_t tfd_read(const struct cxisim_clock_ops *o, const struct tfd_io *a)
{
	uint64_t now;
	if (a->len < 8 || attached_now(o, &now) != 0)
		return tfd_io_real(a);
	clk_timers_tick(now, 1, NULL);
	for (;;) {
		ssize_t r;
		if (tfd_try(a, &r))
			return r;
		int fl = fcntl(a->fd, F_GETFL);
		if (fl < 0)
			return -1;
		if (fl & O_NONBLOCK) {
			errno = EAGAIN;
			return -1;
		}
		int t = clk_wait_step(o, NEVER, NULL, &now);
		if (t < 0)
			return tfd_io_real(a); /* no longer virtual: the real (blocking) read */
		if ((t & CLK_TICK_SIGNALLED) && (t & CLK_TICK_NORESTART)) {
			errno = EINTR;
			return -1;
		}
	}
}

static ssize_t read_o(const struct cxisim_clock_ops *o, int fd, void *buf, size_t len)
{
	if (!fd_marked(fd))
		return get_real_read()(fd, buf, len);
	struct tfd_io a = {.fd = fd, .buf = buf, .len = len};
	return tfd_read(o, &a);
}

CLK_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	return read_o(clk_active(RA), fd, buf, len);
}

static ssize_t readv_o(const struct cxisim_clock_ops *o, int fd, const struct iovec *iov, int iovcnt)
{
	if (!fd_marked(fd))
		return get_real_readv()(fd, iov, iovcnt);
	struct tfd_io a = {.fd = fd, .iov = iov, .iovcnt = iovcnt};
	for (int i = 0; iov && i < iovcnt && i >= 0; i++)
		a.len += iov[i].iov_len;
	return tfd_read(o, &a);
}

CLK_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	return readv_o(clk_active(RA), fd, iov, iovcnt);
}

CLK_EXPORT int close(int fd)
{
	if (fd_marked(fd))
		forget_fd(fd);
	return get_real_close()(fd);
}

/* `to` stops naming a timerfd when dup2/dup3 replace it. */
static void replaced(int from, int to)
{
	if (from != to && fd_marked(to) && fcntl(from, F_GETFD) >= 0)
		forget_fd(to);
}

CLK_EXPORT int dup2(int from, int to)
{
	replaced(from, to);
	return get_real_dup2()(from, to);
}

CLK_EXPORT int dup3(int from, int to, int flags)
{
	replaced(from, to);
	return get_real_dup3()(from, to, flags);
}

/* ---- POSIX timers ---- */

/* A POSIX timer the kernel created (id: glibc's timer_t, which for every kind but SIGEV_THREAD is the
 * kernel's id) is recorded. */
static void record_posix(clockid_t c, const struct sigevent *sev, timer_t id)
{
	if (clk_family_of(c) < 0)
		return;
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_id(id);
	if (t)
		t->kind = VT_FREE;
	t = alloc_timer(VT_POSIX);
	if (t) {
		t->id = id;
		t->family = clk_family_of(c);
		if (sev) {
			t->sev = *sev;
		} else { /* the kernel's default: SIGALRM with the timer's id as its value */
			t->sev.sigev_notify = SIGEV_SIGNAL;
			t->sev.sigev_signo = SIGALRM;
			t->sev.sigev_value.sival_int = (int)(intptr_t)id;
		}
	}
	recompute_next();
	unlock(&mask);
}

CLK_EXPORT int timer_create(clockid_t c, struct sigevent *restrict sev, timer_t *restrict id)
{
	int r = get_real_timer_create()(c, sev, id);
	if (r == 0)
		record_posix(c, sev, *id);
	return r;
}

static int timer_settime_o(const struct cxisim_clock_ops *o, timer_t id, int flags, const struct itimerspec *v,
			   struct itimerspec *old)
{
	uint64_t now;
	if (!o || !v || bad_setting(v) || attached_now(o, &now) != 0)
		return get_real_timer_settime()(id, flags, v, old);
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_id(id);
	if (!t) {
		unlock(&mask);
		return get_real_timer_settime()(id, flags, v, old);
	}
	struct itimerspec zero = {{0, 0}, {0, 0}}, was;
	get_real_timer_settime()(id, 0, &zero, &was);
	if (old) {
		if (t->virt)
			current(t, now, old);
		else
			*old = was;
	}
	arm(t, flags & TIMER_ABSTIME, v, now);
	recompute_next();
	unlock(&mask);
	clk_timers_tick(now, 1, NULL);
	return 0;
}

CLK_EXPORT int timer_settime(timer_t id, int flags, const struct itimerspec *restrict v,
			     struct itimerspec *restrict old)
{
	return timer_settime_o(clk_active(RA), id, flags, v, old);
}

static int timer_gettime_o(const struct cxisim_clock_ops *o, timer_t id, struct itimerspec *cur)
{
	uint64_t now;
	if (!cur || attached_now(o, &now) != 0)
		return get_real_timer_gettime()(id, cur);
	clk_timers_tick(now, 1, NULL);
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_id(id);
	int virt = t && t->virt;
	if (virt)
		current(t, now, cur);
	unlock(&mask);
	return virt ? 0 : get_real_timer_gettime()(id, cur);
}

CLK_EXPORT int timer_gettime(timer_t id, struct itimerspec *cur)
{
	return timer_gettime_o(clk_active(RA), id, cur);
}

CLK_EXPORT int timer_getoverrun(timer_t id)
{
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_id(id);
	int virt = t && t->virt, n = virt ? t->overrun : 0;
	unlock(&mask);
	return virt ? n : get_real_timer_getoverrun()(id);
}

CLK_EXPORT int timer_delete(timer_t id)
{
	int r = get_real_timer_delete()(id);
	if (r != 0)
		return r;
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_id(id);
	if (t)
		t->kind = VT_FREE;
	recompute_next();
	unlock(&mask);
	return r;
}

/* ---- alarm, setitimer(ITIMER_REAL) ---- */

static void tv_to_ts(const struct timeval *tv, struct timespec *ts)
{
	ts->tv_sec = tv->tv_sec;
	ts->tv_nsec = tv->tv_usec * 1000;
}

/* Remaining time as the kernel reports it in a timeval: rounded up to the microsecond. */
static void ts_to_tv_up(const struct timespec *ts, struct timeval *tv)
{
	uint64_t us = (clk_ts_to_ns(ts) + 999u) / 1000u;
	tv->tv_sec = (time_t)(us / 1000000u);
	tv->tv_usec = (suseconds_t)(us % 1000000u);
}

/* 0 done, -1 with errno, -2: not virtual (the caller makes the real call). */
static int vsetitimer(const struct cxisim_clock_ops *o, const struct itimerval *v, struct itimerval *old)
{
	uint64_t now;
	struct itimerspec set = {{0, 0}, {0, 0}}, was;
	if (v) {
		if (v->it_value.tv_sec < 0 || v->it_value.tv_usec < 0 || v->it_value.tv_usec >= 1000000 ||
		    v->it_interval.tv_sec < 0 || v->it_interval.tv_usec < 0 || v->it_interval.tv_usec >= 1000000) {
			errno = EINVAL;
			return -1;
		}
		tv_to_ts(&v->it_value, &set.it_value);
		tv_to_ts(&v->it_interval, &set.it_interval);
	}
	if (attached_now(o, &now) != 0)
		return -2;
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_itimer();
	if (!t && (t = alloc_timer(VT_ITIMER)) != NULL) {
		t->family = CLK_F_MONOTONIC;
		t->sev.sigev_notify = SIGEV_SIGNAL;
		t->sev.sigev_signo = SIGALRM;
	}
	if (!t) {
		unlock(&mask);
		return -2;
	}
	struct itimerval zero = {{0, 0}, {0, 0}}, real_was;
	get_real_setitimer()(ITIMER_REAL, &zero, &real_was);
	if (old) {
		if (t->virt) {
			current(t, now, &was);
			ts_to_tv_up(&was.it_value, &old->it_value);
			ts_to_tv_up(&was.it_interval, &old->it_interval);
		} else {
			*old = real_was;
		}
	}
	arm(t, 0, &set, now);
	recompute_next();
	unlock(&mask);
	return 0;
}

static int setitimer_o(const struct cxisim_clock_ops *o, int which, const struct itimerval *v, struct itimerval *old)
{
	if (which == ITIMER_REAL && o) {
		int r = vsetitimer(o, v, old);
		if (r != -2)
			return r;
	}
	return get_real_setitimer()(which, v, old);
}

CLK_EXPORT int setitimer(__itimer_which_t which, const struct itimerval *restrict v, struct itimerval *restrict old)
{
	return setitimer_o(clk_active(RA), which, v, old);
}

static int getitimer_o(const struct cxisim_clock_ops *o, int which, struct itimerval *cur)
{
	uint64_t now;
	if (which != ITIMER_REAL || !cur || attached_now(o, &now) != 0)
		return get_real_getitimer()(which, cur);
	clk_timers_tick(now, 1, NULL);
	sigset_t mask;
	lock(&mask);
	struct vtimer *t = find_itimer();
	int virt = t && t->virt;
	struct itimerspec c;
	if (virt) {
		current(t, now, &c);
		ts_to_tv_up(&c.it_value, &cur->it_value);
		ts_to_tv_up(&c.it_interval, &cur->it_interval);
	}
	unlock(&mask);
	return virt ? 0 : get_real_getitimer()(which, cur);
}

CLK_EXPORT int getitimer(__itimer_which_t which, struct itimerval *cur)
{
	return getitimer_o(clk_active(RA), which, cur);
}

static unsigned int alarm_o(const struct cxisim_clock_ops *o, unsigned int s)
{
	struct itimerval v = {{0, 0}, {(time_t)s, 0}}, old;
	if (!o || vsetitimer(o, &v, &old) != 0)
		return get_real_alarm()(s);
	/* The kernel's rounding: to the nearest second, and a remainder under one second counts as one. */
	unsigned int left = (unsigned int)old.it_value.tv_sec;
	if ((!left && old.it_value.tv_usec) || old.it_value.tv_usec >= 500000)
		left++;
	return left;
}

CLK_EXPORT unsigned int alarm(unsigned int s)
{
	return alarm_o(clk_active(RA), s);
}

/* ---- the same calls through syscall(2) (interposer.h) ---- */

/* The kernel's id of a POSIX timer as glibc's timer_t (the same number for every kind but SIGEV_THREAD,
 * which the system call cannot create). */
static timer_t kernel_timer(long id)
{
	return (timer_t)(intptr_t)(int)id;
}

long clk_timers_syscall(const struct cxisim_clock_ops *o, long nr, const long *a, int *handled)
{
	*handled = 1;
	switch (nr) {
	case SYS_timerfd_create:
		return tfd_create((int)a[0], (int)a[1]);
	case SYS_read:
		if (fd_marked((int)a[0]))
			return read_o(o, (int)a[0], (void *)a[1], (size_t)a[2]);
		break;
	case SYS_readv:
		if (fd_marked((int)a[0]))
			return readv_o(o, (int)a[0], (const struct iovec *)a[1], (int)a[2]);
		break;
	case SYS_close:
		if (fd_marked((int)a[0]))
			forget_fd((int)a[0]);
		break;
	case SYS_dup2:
		replaced((int)a[0], (int)a[1]);
		break;
	case SYS_dup3:
		replaced((int)a[0], (int)a[1]);
		break;
	case SYS_timer_create: {
		/* The system call writes the kernel's id (an int), not a timer_t. */
		long r = clk_real_syscall6(nr, a[0], a[1], a[2], 0, 0, 0);
		if (r == 0 && a[2])
			record_posix((clockid_t)a[0], (const struct sigevent *)a[1], kernel_timer(*(int *)a[2]));
		return r;
	}
	default:
		break;
	}
	if (o) {
		switch (nr) {
		case SYS_timerfd_settime:
			return tfd_settime_o(o, (int)a[0], (int)a[1], (const struct itimerspec *)a[2],
					     (struct itimerspec *)a[3]);
		case SYS_timerfd_gettime:
			return tfd_gettime_o(o, (int)a[0], (struct itimerspec *)a[1]);
		case SYS_timer_settime:
			return timer_settime_o(o, kernel_timer(a[0]), (int)a[1], (const struct itimerspec *)a[2],
					       (struct itimerspec *)a[3]);
		case SYS_timer_gettime:
			return timer_gettime_o(o, kernel_timer(a[0]), (struct itimerspec *)a[1]);
		case SYS_timer_getoverrun:
			return timer_getoverrun(kernel_timer(a[0]));
		case SYS_timer_delete:
			return timer_delete(kernel_timer(a[0]));
		case SYS_alarm:
			return alarm_o(o, (unsigned int)a[0]);
		case SYS_setitimer:
			return setitimer_o(o, (int)a[0], (const struct itimerval *)a[1], (struct itimerval *)a[2]);
		case SYS_getitimer:
			return getitimer_o(o, (int)a[0], (struct itimerval *)a[1]);
		default:
			break;
		}
	}
	*handled = 0;
	return 0;
}
