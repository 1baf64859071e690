/* Interval timers, signals and timed waits of libcxisim-clock.so in virtual time, in the three modes of
 * clock_test.h (owner, fabric, none). */
#include <mqueue.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/times.h>

#include "clock_test.h"

static int tfd_armed(int clock, int flags, uint64_t ns, uint64_t interval)
{
	int fd = timerfd_create(clock, flags);
	CHECK(fd >= 0, "timerfd_create: %s", strerror(errno));
	struct itimerspec v = its(ns, interval);
	CHECK(timerfd_settime(fd, 0, &v, NULL) == 0, "timerfd_settime: %s", strerror(errno));
	return fd;
}

static uint64_t tfd_count(int fd)
{
	uint64_t n = 0;
	CHECK(read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n), "read: %s", strerror(errno));
	return n;
}

/* ---- timerfd ---- */

static void check_tfd_poll(void)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint64_t w0 = wall(), v0 = mono();
	struct itimerspec v = its(10 * MS, 0);
	CHECK(timerfd_settime(fd, 0, &v, NULL) == 0, "settime");
	CHECK(poll(&p, 1, -1) == 1 && (p.revents & POLLIN), "poll");
	uint64_t v1 = mono(), w1 = wall();
	measure("tfd_poll", v1 - v0, w1 - w0);
	expect_elapsed("poll", v1 - v0, 10 * MS);
	CHECK(tfd_count(fd) == 1, "one expiration");
	CHECK(poll(&p, 1, 0) == 0, "read clears it");
	close(fd);
}

static void check_tfd_epoll(void)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int ep = epoll_create1(0);
	struct epoll_event e = {.events = EPOLLIN, .data.fd = fd}, got;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) == 0, "epoll_ctl");
	for (int i = 0; i < 3; i++) { /* re-armed: the registration stays valid */
		uint64_t w0 = wall(), v0 = mono();
		struct itimerspec v = its(10 * MS, 0);
		CHECK(timerfd_settime(fd, 0, &v, NULL) == 0, "settime");
		CHECK(epoll_wait(ep, &got, 1, 1000) == 1 && got.data.fd == fd, "epoll_wait");
		uint64_t v1 = mono(), w1 = wall();
		measure("tfd_epoll", v1 - v0, w1 - w0);
		expect_elapsed("epoll_wait", v1 - v0, 10 * MS);
		CHECK(tfd_count(fd) == 1, "one expiration");
	}
	close(ep);
	close(fd);
}

static void check_tfd_read(void)
{
	uint64_t w0 = wall(), v0 = mono();
	int fd = tfd_armed(CLOCK_MONOTONIC, 0, 10 * MS, 0);
	CHECK(tfd_count(fd) == 1, "blocking read: one expiration");
	uint64_t v1 = mono(), w1 = wall();
	measure("tfd_read", v1 - v0, w1 - w0);
	expect_elapsed("blocking read", v1 - v0, 10 * MS);
	close(fd);
}

/* An interval timer: 3.5 periods of sleep give 3 expirations, and the next is half a period away. */
static void check_tfd_interval(void)
{
	int fd = tfd_armed(CLOCK_MONOTONIC, TFD_NONBLOCK, 10 * MS, 10 * MS);
	uint64_t v0 = mono();
	struct timespec d = {0, 35 * MS};
	CHECK(nanosleep(&d, NULL) == 0, "nanosleep");
	CHECK(mono() - v0 == 35 * MS || !g_virtual, "the sleep is not cut short by a timerfd");
	uint64_t n = tfd_count(fd);
	struct itimerspec cur;
	CHECK(timerfd_gettime(fd, &cur) == 0, "gettime");
	printf("measure tfd_interval count=%" PRIu64 " left=%" PRIu64 "\n", n, ts_ns(&cur.it_value));
	if (g_virtual) {
		CHECK(n == 3, "3 expirations in 3.5 periods, got %" PRIu64, n);
		CHECK(ts_ns(&cur.it_value) == 5 * MS && ts_ns(&cur.it_interval) == 10 * MS, "gettime: %" PRIu64,
		      ts_ns(&cur.it_value));
	} else {
		CHECK(n >= 3, "at least 3 expirations, got %" PRIu64, n);
	}
	uint64_t x;
	errno = 0;
	CHECK(read(fd, &x, sizeof(x)) == -1 && errno == EAGAIN, "non-blocking read before the next: EAGAIN");
	CHECK(nanosleep(&d, NULL) == 0, "nanosleep");
	n = tfd_count(fd);
	CHECK(n == 4 || (!g_virtual && n >= 3), "4 more at 70 ms: %" PRIu64, n);
	close(fd);
}

static void check_tfd_disarm(void)
{
	int fd = tfd_armed(CLOCK_MONOTONIC, 0, 10 * MS, 0);
	struct itimerspec zero = its(0, 0), old;
	CHECK(timerfd_settime(fd, 0, &zero, &old) == 0, "disarm");
	CHECK(ts_ns(&old.it_value) > 0 && ts_ns(&old.it_value) <= 10 * MS, "old value %" PRIu64, ts_ns(&old.it_value));
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint64_t v0 = mono();
	CHECK(poll(&p, 1, 50) == 0, "a disarmed timer never fires");
	expect_elapsed("poll timeout", mono() - v0, 50 * MS);
	struct itimerspec cur;
	CHECK(timerfd_gettime(fd, &cur) == 0 && ts_ns(&cur.it_value) == 0, "gettime: disarmed");
	/* Expired but not read, then disarmed: the count goes, as the kernel's settime resets it. */
	struct itimerspec v = its(5 * MS, 0);
	CHECK(timerfd_settime(fd, 0, &v, NULL) == 0, "arm");
	struct timespec d = {0, 8 * MS};
	nanosleep(&d, NULL);
	CHECK(poll(&p, 1, 0) == 1, "expired");
	CHECK(timerfd_settime(fd, 0, &zero, NULL) == 0 && poll(&p, 1, 0) == 0, "disarm clears the count");
	close(fd);
}

static void check_tfd_abstime(void)
{
	static const struct {
		clockid_t c;
		const char *name;
		uint64_t after;
	} clocks[] = {{CLOCK_MONOTONIC, "monotonic", 10 * MS}, {CLOCK_REALTIME, "realtime", 7 * MS},
		      {CLOCK_BOOTTIME, "boottime", 3 * MS}};
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		int fd = timerfd_create(clocks[i].c, 0);
		struct timespec now;
		clock_gettime(clocks[i].c, &now);
		uint64_t v0 = mono(), at = ts_ns(&now) + clocks[i].after;
		struct itimerspec v = its(at, 0);
		CHECK(timerfd_settime(fd, TFD_TIMER_ABSTIME, &v, NULL) == 0, "settime abs %s", clocks[i].name);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		CHECK(poll(&p, 1, -1) == 1, "poll %s", clocks[i].name);
		expect_elapsed(clocks[i].name, mono() - v0, clocks[i].after);
		CHECK(tfd_count(fd) == 1, "one expiration");
		/* An absolute time already past: readable at once. */
		v = its(ts_ns(&now) - 1 * MS, 0);
		v0 = mono();
		CHECK(timerfd_settime(fd, TFD_TIMER_ABSTIME, &v, NULL) == 0 && poll(&p, 1, 0) == 1, "past %s",
		      clocks[i].name);
		CHECK(tfd_count(fd) == 1 && (mono() == v0 || !g_virtual), "past: at once");
		close(fd);
	}
}

/* Wall time for many virtual seconds: 20 waits of 1 s each. */
static void check_tfd_wall(void)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint64_t w0 = wall(), v0 = mono();
	for (int i = 0; i < 20; i++) {
		struct itimerspec v = its(1 * S, 0);
		CHECK(timerfd_settime(fd, 0, &v, NULL) == 0 && poll(&p, 1, -1) == 1 && tfd_count(fd) == 1, "wait %d", i);
	}
	uint64_t v1 = mono(), w1 = wall();
	measure("tfd_wall", v1 - v0, w1 - w0);
	expect_elapsed("20 x 1 s", v1 - v0, 20 * S);
	close(fd);
}

/* ---- signals ---- */

static volatile sig_atomic_t g_hits;
static volatile uint64_t g_hit_at; /* virtual CLOCK_MONOTONIC in the handler */
static volatile int g_hit_code;
static volatile int g_hit_value;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	g_hits++;
	g_hit_at = mono();
	g_hit_code = si->si_code;
	g_hit_value = si->si_value.sival_int;
}

static void handle(int sig, int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(sig, &sa, NULL) == 0, "sigaction");
}

/* alarm(1), then a 10 s nanosleep: the handler runs at 1 s, the sleep returns EINTR with 9 s left. */
static void check_alarm(void)
{
	handle(SIGALRM, 0);
	g_hits = 0;
	uint64_t w0 = wall(), v0 = mono();
	CHECK(alarm(1) == 0, "no alarm before");
	struct timespec d = {10, 0}, rem = {0, 0};
	int r = nanosleep(&d, &rem);
	int e = errno;
	uint64_t v1 = mono(), w1 = wall();
	measure("alarm", g_hit_at - v0, w1 - w0);
	printf("measure alarm_rem rem=%" PRIu64 "\n", ts_ns(&rem));
	CHECK(r == -1 && e == EINTR, "nanosleep: %d %s", r, strerror(e));
	CHECK(g_hits == 1, "one SIGALRM, got %d", (int)g_hits);
	expect_elapsed("handler", g_hit_at - v0, 1 * S);
	expect_elapsed("nanosleep", v1 - v0, 1 * S);
	if (g_virtual)
		CHECK(ts_ns(&rem) == 9 * S, "9 s left, got %" PRIu64, ts_ns(&rem));
	else
		CHECK(ts_ns(&rem) > 8 * S && ts_ns(&rem) < 10 * S, "~9 s left, got %" PRIu64, ts_ns(&rem));
	/* alarm reports what was left of the previous one, rounded. */
	CHECK(alarm(5) == 0, "none left");
	CHECK(alarm(0) == 5 || !g_virtual, "5 s left");
	/* sleep() returns the whole seconds left. */
	alarm(2);
	unsigned int left = sleep(10);
	CHECK(left == 8 || (!g_virtual && left <= 8), "sleep left %u", left);
	CHECK(g_hits == 2, "second SIGALRM");
}

static void check_pause(void)
{
	handle(SIGALRM, SA_RESTART);
	g_hits = 0;
	uint64_t v0 = mono();
	alarm(1);
	int r = pause();
	CHECK(r == -1 && errno == EINTR && g_hits == 1, "pause: %d %s, %d hits", r, strerror(errno), (int)g_hits);
	measure("pause", g_hit_at - v0, 0);
	expect_elapsed("pause", g_hit_at - v0, 1 * S);
	/* sigsuspend: SIGALRM blocked outside, let through by the suspend mask. */
	sigset_t block, old, during;
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, &old);
	during = old;
	sigdelset(&during, SIGALRM);
	struct itimerval it = {{0, 0}, {0, 250000}};
	v0 = mono();
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
	r = sigsuspend(&during);
	CHECK(r == -1 && errno == EINTR && g_hits == 2, "sigsuspend: %d, %d hits", r, (int)g_hits);
	expect_elapsed("sigsuspend", g_hit_at - v0, 250 * MS);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* setitimer periodic and timer_create + SIGEV_SIGNAL periodic: N signals in N periods. */
/* A POSIX timer on clock c that delivers signo with value (SIGEV_SIGNAL). */
static timer_t signal_timer(clockid_t c, int signo, int value)
{
	timer_t id;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = signo;
	sev.sigev_value.sival_int = value;
	CHECK(timer_create(c, &sev, &id) == 0, "timer_create");
	return id;
}

static void check_periodic(void)
{
	handle(SIGALRM, SA_RESTART);
	g_hits = 0;
	uint64_t v0 = mono();
	struct itimerval it = {{0, 20000}, {0, 20000}}, cur;
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
	while (g_hits < 5)
		pause();
	expect_elapsed("5 x 20 ms itimer", g_hit_at - v0, 100 * MS);
	CHECK(getitimer(ITIMER_REAL, &cur) == 0 && cur.it_interval.tv_usec == 20000, "getitimer");
	if (g_virtual)
		CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_usec == 20000, "next in 20 ms: %ld",
		      (long)cur.it_value.tv_usec);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK(g_hit_code == (g_virtual ? SI_KERNEL : g_hit_code), "SIGALRM's si_code %d", g_hit_code);

	handle(SIGUSR1, 0);
	g_hits = 0;
	timer_t id = signal_timer(CLOCK_MONOTONIC, SIGUSR1, 4242);
	struct itimerspec v = its(10 * MS, 10 * MS);
	v0 = mono();
	uint64_t w0 = wall();
	CHECK(timer_settime(id, 0, &v, NULL) == 0, "timer_settime");
	/* Sleeps interrupted by each signal, resumed with what was left: 35 ms in all. */
	struct timespec d = {0, 35 * MS}, rem;
	int interrupted = 0;
	while (nanosleep(&d, &rem) == -1 && errno == EINTR) {
		interrupted++;
		d = rem;
	}
	uint64_t v1 = mono();
	measure("posix_periodic", v1 - v0, wall() - w0);
	expect_elapsed("35 ms of interrupted sleeps", v1 - v0, 35 * MS);
	if (g_virtual) {
		CHECK(g_hits == 3 && interrupted == 3, "3 signals in 3.5 periods: %d, %d interruptions", (int)g_hits,
		      interrupted);
		CHECK(g_hit_at - v0 == 30 * MS, "the third at 30 ms");
		CHECK(g_hit_code == SI_TIMER && g_hit_value == 4242, "si_code %d, value %d", g_hit_code, g_hit_value);
	}
	struct itimerspec c;
	CHECK(timer_gettime(id, &c) == 0, "timer_gettime");
	if (g_virtual)
		CHECK(ts_ns(&c.it_value) == 5 * MS && ts_ns(&c.it_interval) == 10 * MS, "next in 5 ms: %" PRIu64,
		      ts_ns(&c.it_value));
	CHECK(timer_getoverrun(id) == 0 || !g_virtual, "no overrun");
	CHECK(timer_delete(id) == 0, "timer_delete");
}

/* sigtimedwait takes a timer's signal blocked in every thread; with none, it times out in virtual time. */
static void check_sigwait(void)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	timer_t id = signal_timer(CLOCK_REALTIME, SIGUSR2, 77);
	struct itimerspec v = its(20 * MS, 0);
	uint64_t v0 = mono();
	CHECK(timer_settime(id, 0, &v, NULL) == 0, "timer_settime");
	struct timespec tmo = {1, 0};
	siginfo_t si;
	int r = sigtimedwait(&set, &si, &tmo);
	CHECK(r == SIGUSR2 && si.si_code == SI_TIMER && si.si_value.sival_int == 77, "sigtimedwait: %d", r);
	expect_elapsed("sigtimedwait", mono() - v0, 20 * MS);
	tmo.tv_sec = 0;
	tmo.tv_nsec = 30 * MS;
	v0 = mono();
	errno = 0;
	CHECK(sigtimedwait(&set, &si, &tmo) == -1 && errno == EAGAIN, "sigtimedwait times out");
	expect_elapsed("sigtimedwait timeout", mono() - v0, 30 * MS);
	CHECK(timer_settime(id, 0, &v, NULL) == 0, "timer_settime");
	int sig = 0;
	v0 = mono();
	CHECK(sigwait(&set, &sig) == 0 && sig == SIGUSR2, "sigwait");
	expect_elapsed("sigwait", mono() - v0, 20 * MS);
	timer_delete(id);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static volatile int g_thread_value;

static void on_thread(union sigval v)
{
	g_thread_value = v.sival_int;
}

static void check_sigev_thread(void)
{
	timer_t id;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = on_thread;
	sev.sigev_value.sival_int = 31;
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, &id) == 0, "timer_create");
	struct itimerspec v = its(10 * MS, 0);
	CHECK(timer_settime(id, 0, &v, NULL) == 0, "timer_settime");
	struct timespec d = {0, 5 * MS};
	nanosleep(&d, NULL);
	CHECK(g_thread_value == 0, "not before its time");
	d.tv_nsec = 10 * MS;
	nanosleep(&d, NULL);
	/* The function runs in a thread of its own: wait for it on the real clock (at most 30 s). */
	uint64_t until = wall() + 30 * S;
	while (g_thread_value != 31 && wall() < until)
		sched_yield();
	CHECK(g_thread_value == 31, "SIGEV_THREAD's function ran");
	timer_delete(id);
}

/* A forked child has none of its parent's POSIX timers or alarm (the kernel's rule), also once it attaches
 * itself (owner mode: it registers the test owner again); the parent's go on. */
static void check_fork(void)
{
	handle(SIGALRM, 0);
	handle(SIGUSR1, 0);
	g_hits = 0;
	timer_t id = signal_timer(CLOCK_MONOTONIC, SIGUSR1, 0);
	struct itimerspec v = its(300 * MS, 0);
	CHECK(timer_settime(id, 0, &v, NULL) == 0, "timer_settime");
	alarm(1);
	pid_t p = fork();
	CHECK(p >= 0, "fork");
	if (p == 0) {
		struct itimerval cur;
		if (getitimer(ITIMER_REAL, &cur) != 0 || cur.it_value.tv_sec || cur.it_value.tv_usec)
			_exit(3);
		if (strcmp(g_mode, "owner")) /* not attached: the kernel's timers, which it cleared */
			_exit(0);
		if (clock_owner_start(2 * S, 10 * MS) != 0)
			_exit(4);
		struct timespec d = {2, 0};
		if (nanosleep(&d, NULL) != 0 || g_hits != 0)
			_exit(5);
		_exit(0);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status 0x%x", st);
	struct timespec d = {2, 0};
	while (g_hits < 2 && nanosleep(&d, &d) == -1 && errno == EINTR)
		;
	CHECK(g_hits == 2, "the parent's two timers fired: %d", (int)g_hits);
	timer_delete(id);
}

/* A timer's signal ends every interruptible virtual wait at its expiry with EINTR (SA_RESTART or not, as
 * the kernel: poll, epoll_wait, select and sem_timedwait are never restarted); a blocking read of a
 * timerfd is restarted under SA_RESTART; a condition wait wakes (spuriously).  SIGEV_THREAD_ID aims the
 * signal at the named thread. */
static void check_intr(void)
{
	int p[2];
	CHECK(pipe(p) == 0, "pipe");
	handle(SIGALRM, SA_RESTART);
	g_hits = 0;
	struct pollfd pf = {.fd = p[0], .events = POLLIN};
	uint64_t v0 = mono();
	alarm(1);
	errno = 0;
	CHECK(poll(&pf, 1, 5000) == -1 && errno == EINTR && g_hits == 1, "poll: EINTR");
	expect_elapsed("poll EINTR", mono() - v0, 1 * S);
	int ep = epoll_create1(0);
	struct epoll_event e = {.events = EPOLLIN}, got;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e) == 0, "epoll_ctl");
	v0 = mono();
	alarm(1);
	errno = 0;
	CHECK(epoll_wait(ep, &got, 1, -1) == -1 && errno == EINTR && g_hits == 2, "epoll_wait: EINTR");
	expect_elapsed("epoll_wait EINTR", mono() - v0, 1 * S);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	v0 = mono();
	alarm(1);
	errno = 0;
	CHECK(select(p[0] + 1, &rs, NULL, NULL, NULL) == -1 && errno == EINTR && g_hits == 3, "select: EINTR");
	expect_elapsed("select EINTR", mono() - v0, 1 * S);
	sem_t sem;
	sem_init(&sem, 0, 0);
	struct timespec abs = abs_after(CLOCK_REALTIME, 5 * S);
	v0 = mono();
	alarm(1);
	errno = 0;
	CHECK(sem_timedwait(&sem, &abs) == -1 && errno == EINTR && g_hits == 4, "sem_timedwait: EINTR");
	expect_elapsed("sem_timedwait EINTR", mono() - v0, 1 * S);
	sem_destroy(&sem);
	/* A blocking read of a disarmed timerfd: restarted under SA_RESTART, EINTR without. */
	int fd = timerfd_create(CLOCK_MONOTONIC, 0);
	uint64_t n;
	v0 = mono();
	alarm(1);
	struct itimerspec later = its(3 * S, 0);
	CHECK(timerfd_settime(fd, 0, &later, NULL) == 0, "settime");
	CHECK(read(fd, &n, sizeof(n)) == 8 && n == 1 && g_hits == 5, "read restarted, then the timerfd: %d", (int)g_hits);
	expect_elapsed("read restarted", mono() - v0, 3 * S);
	handle(SIGALRM, 0);
	v0 = mono();
	alarm(1);
	errno = 0;
	CHECK(read(fd, &n, sizeof(n)) == -1 && errno == EINTR && g_hits == 6, "read: EINTR");
	expect_elapsed("read EINTR", mono() - v0, 1 * S);
	close(fd);
	/* A condition wait: woken at the signal, which POSIX lets it report as a spurious wakeup. */
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	pthread_mutex_lock(&m);
	abs = abs_after(CLOCK_REALTIME, 5 * S);
	v0 = mono();
	alarm(1);
	int r;
	do /* as callers do: a return before the predicate holds is a spurious wakeup */
		r = pthread_cond_timedwait(&c, &m, &abs);
	while (r == 0 && g_hits == 6);
	CHECK((r == 0 || r == ETIMEDOUT) && g_hits == 7, "cond: %d, %d hits", r, (int)g_hits);
	if (g_virtual)
		CHECK(r == 0 && mono() - v0 == 1 * S, "cond woken at the signal");
	pthread_mutex_unlock(&m);
	/* SIGEV_THREAD_ID: to this thread, with its value. */
	handle(SIGUSR1, 0);
	timer_t id;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_value.sival_int = 99;
	sev._sigev_un._tid = gettid();
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, &id) == 0, "timer_create SIGEV_THREAD_ID");
	struct itimerspec v = its(20 * MS, 0);
	v0 = mono();
	CHECK(timer_settime(id, 0, &v, NULL) == 0, "settime");
	struct timespec d = {1, 0}, rem;
	CHECK(nanosleep(&d, &rem) == -1 && errno == EINTR && g_hits == 8 && g_hit_value == 99, "thread id: %d",
	      (int)g_hits);
	expect_elapsed("SIGEV_THREAD_ID", g_hit_at - v0, 20 * MS);
	timer_delete(id);
	close(ep);
	close(p[0]);
	close(p[1]);
}

/* ---- timed waits: locks, message queues; clock(), times() ---- */

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t g_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static int g_hold[2];

static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g_mutex);
	pthread_rwlock_wrlock(&g_rwlock);
	char c;
	CHECK(write(g_hold[1], "h", 1) == 1, "holder ready");
	CHECK(read(g_hold[0], &c, 1) == 1, "holder released"); /* a real blocking read */
	pthread_rwlock_unlock(&g_rwlock);
	pthread_mutex_unlock(&g_mutex);
	return NULL;
}


static void check_locks(void)
{
	int up[2], down[2];
	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipes");
	g_hold[0] = down[0];
	g_hold[1] = up[1];
	pthread_t th;
	CHECK(pthread_create(&th, NULL, holder, NULL) == 0, "pthread_create");
	char c;
	CHECK(read(up[0], &c, 1) == 1, "holder has the locks");
	uint64_t v0 = mono();
	struct timespec abs = abs_after(CLOCK_REALTIME, 30 * MS);
	CHECK(pthread_mutex_timedlock(&g_mutex, &abs) == ETIMEDOUT, "mutex_timedlock times out");
	expect_elapsed("mutex_timedlock", mono() - v0, 30 * MS);
	v0 = mono();
	abs = abs_after(CLOCK_MONOTONIC, 20 * MS);
	CHECK(pthread_mutex_clocklock(&g_mutex, CLOCK_MONOTONIC, &abs) == ETIMEDOUT, "mutex_clocklock times out");
	expect_elapsed("mutex_clocklock", mono() - v0, 20 * MS);
	v0 = mono();
	abs = abs_after(CLOCK_REALTIME, 40 * MS);
	CHECK(pthread_rwlock_timedrdlock(&g_rwlock, &abs) == ETIMEDOUT, "rwlock_timedrdlock times out");
	expect_elapsed("rwlock_timedrdlock", mono() - v0, 40 * MS);
	v0 = mono();
	abs = abs_after(CLOCK_REALTIME, 10 * MS);
	CHECK(pthread_rwlock_timedwrlock(&g_rwlock, &abs) == ETIMEDOUT, "rwlock_timedwrlock times out");
	expect_elapsed("rwlock_timedwrlock", mono() - v0, 10 * MS);
	/* The holder is outside the simulation (a thread blocked in a real read does not hold virtual time):
	 * a timed wait for its unlock could pass its virtual deadline before the unlock on a loaded host.  So
	 * it is joined first, and the lock is then free. */
	CHECK(write(down[1], "r", 1) == 1, "release");
	pthread_join(th, NULL);
	abs = abs_after(CLOCK_REALTIME, 3600 * S);
	v0 = mono();
	CHECK(pthread_mutex_timedlock(&g_mutex, &abs) == 0 && (mono() == v0 || !g_virtual), "taken at once when free");
	pthread_mutex_unlock(&g_mutex);
	CHECK(pthread_rwlock_timedwrlock(&g_rwlock, &abs) == 0 && (mono() == v0 || !g_virtual), "rwlock taken at once when free");
	pthread_rwlock_unlock(&g_rwlock);
	/* A free lock is taken whatever the deadline, as glibc does; a bad one is EINVAL when it must wait. */
	struct timespec bad = {0, 2000000000L};
	CHECK(pthread_mutex_timedlock(&g_mutex, &bad) == 0, "free mutex, bad deadline");
	pthread_mutex_unlock(&g_mutex);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
}

static void check_mq(void)
{
	char name[64];
	snprintf(name, sizeof(name), "/cxisim-clock-timers-%d", (int)getpid());
	struct mq_attr at = {.mq_maxmsg = 1, .mq_msgsize = 8};
	mqd_t q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &at);
	if (q == (mqd_t)-1) {
		printf("measure mq skipped: %s\n", strerror(errno));
		return;
	}
	mq_unlink(name);
	char buf[8];
	uint64_t v0 = mono();
	struct timespec abs = abs_after(CLOCK_REALTIME, 25 * MS);
	errno = 0;
	CHECK(mq_timedreceive(q, buf, sizeof(buf), NULL, &abs) == -1 && errno == ETIMEDOUT, "empty: times out");
	expect_elapsed("mq_timedreceive", mono() - v0, 25 * MS);
	CHECK(mq_timedsend(q, "a", 1, 0, &abs) == 0, "send");
	v0 = mono();
	abs = abs_after(CLOCK_REALTIME, 15 * MS);
	errno = 0;
	CHECK(mq_timedsend(q, "b", 1, 0, &abs) == -1 && errno == ETIMEDOUT, "full: times out");
	expect_elapsed("mq_timedsend", mono() - v0, 15 * MS);
	CHECK(mq_timedreceive(q, buf, sizeof(buf), NULL, &abs) == 1 && buf[0] == 'a', "receive");
	mq_close(q);
}

/* clock() and times() in virtual time: the CPU time scaled by CXISIM_CPU_SCALE; times()'s return value
 * counts virtual clock ticks. */
static void check_cpu_reads(void)
{
	const char *s = getenv("CXISIM_CPU_SCALE");
	double scale = s && g_virtual ? atof(s) : 1;
	uint64_t r0 = t_raw_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	clock_t c0 = clock();
	uint64_t r0b = t_raw_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	t_burn_cpu(20 * MS);
	uint64_t r1a = t_raw_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	clock_t c1 = clock();
	uint64_t r1 = t_raw_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	double got = (double)(c1 - c0) * (1e9 / CLOCKS_PER_SEC), lo = scale * (double)(r1a - r0b),
	       hi = scale * (double)(r1 - r0);
	printf("measure clock got=%.0f lo=%.0f hi=%.0f\n", got, lo, hi);
	CHECK(got >= lo - 2000 && got <= hi + 2000, "clock(): %.0f ns, want %.0f..%.0f", got, lo, hi);
	long hz = sysconf(_SC_CLK_TCK);
	struct tms b0, b1;
	clock_t t0 = times(&b0);
	struct timespec d = {1, 0};
	nanosleep(&d, NULL);
	clock_t t1 = times(&b1);
	if (g_virtual)
		CHECK(t1 - t0 == hz, "times(): %ld ticks for a 1 s sleep, want %ld", (long)(t1 - t0), hz);
	else
		CHECK(t1 - t0 >= hz, "times(): %ld ticks", (long)(t1 - t0));
}

/* ---- misuse: the same answer as the real call ---- */

static void check_misuse(void)
{
	struct itimerspec good = its(10 * MS, 0), bad = its(0, 0), out;
	bad.it_value.tv_nsec = 1000000000L;
	int p[2];
	CHECK(pipe(p) == 0, "pipe");
	SHOW("timerfd_create_clock", timerfd_create(12345, 0));
	SHOW("timerfd_create_cpu_clock", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0));
	SHOW("timerfd_create_flags", timerfd_create(CLOCK_MONOTONIC, 0x1234));
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	SHOW("timerfd_settime_badfd", timerfd_settime(1000, 0, &good, NULL));
	SHOW("timerfd_settime_pipe", timerfd_settime(p[0], 0, &good, NULL));
	SHOW("timerfd_settime_flags", timerfd_settime(fd, 0x10, &good, NULL));
	SHOW("timerfd_settime_value", timerfd_settime(fd, 0, &bad, NULL));
	SHOW("timerfd_gettime_badfd", timerfd_gettime(1000, &out));
	uint64_t n;
	SHOW("read_short", read(fd, &n, 4));
	SHOW("read_unarmed", read(fd, &n, 8));
	close(fd);
	SHOW("timerfd_settime_closed", timerfd_settime(fd, 0, &good, NULL));
	timer_t id;
	SHOW("timer_create_clock", timer_create(12345, NULL, &id));
	CHECK(timer_create(CLOCK_MONOTONIC, NULL, &id) == 0, "timer_create");
	SHOW("timer_settime_value", timer_settime(id, 0, &bad, NULL));
	timer_delete(id);
	struct itimerval badv = {{0, 0}, {0, 1000000}};
	SHOW("setitimer_value", setitimer(ITIMER_REAL, &badv, NULL));
	SHOW("setitimer_which", setitimer(7, &badv, NULL));
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	struct timespec badts = {0, -1};
	SHOW("sigtimedwait_value", sigtimedwait(&set, NULL, &badts));
	int r = clock_nanosleep(12345, 0, &good.it_value, NULL);
	show("clock_nanosleep_clock", r ? -1 : 0, r);
	SHOW("nanosleep_value", nanosleep(&badts, NULL));
	close(p[0]);
	close(p[1]);
}

static const struct clock_test checks[] = {{"tfd_poll", check_tfd_poll},     {"tfd_epoll", check_tfd_epoll},   {"tfd_read", check_tfd_read},
	      {"tfd_interval", check_tfd_interval}, {"tfd_disarm", check_tfd_disarm}, {"tfd_abstime", check_tfd_abstime},
	      {"tfd_wall", check_tfd_wall},     {"alarm", check_alarm},           {"pause", check_pause},
	      {"periodic", check_periodic},     {"sigwait", check_sigwait},       {"sigev_thread", check_sigev_thread},
	      {"locks", check_locks},           {"mq", check_mq},                 {"cpu_reads", check_cpu_reads},
	      {"fork", check_fork},             {"intr", check_intr},             {"misuse", check_misuse}};

int main(int argc, char **argv)
{
	return clock_test_main(argc, argv, checks, sizeof(checks) / sizeof(checks[0]));
}
