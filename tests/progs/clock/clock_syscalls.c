/* Sleeps, timed waits and timers reached through syscall(2) instead of their libc functions, and
 * epoll_pwait2, in virtual time: the same expectations as the functions' (clock_timers), with each system
 * call's own conventions (-1 and errno, the time left written back by ppoll and pselect6, the kernel's int
 * id of a POSIX timer).  Modes: clock_test.h (owner, fabric, none). */
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>

#include "clock_test.h"

#define KSET 8 /* the kernel's signal-set size */

static uint64_t sys_tfd_count(int fd)
{
	uint64_t n = 0;
	CHECK(syscall(SYS_read, fd, &n, sizeof(n)) == (long)sizeof(n), "read: %s", strerror(errno));
	return n;
}

static struct timespec rel_ts(uint64_t ns)
{
	struct timespec t = {(time_t)(ns / S), (long)(ns % S)};
	return t;
}

/* nanosleep and clock_nanosleep, relative and absolute. */
static void check_sys_sleeps(void)
{
	struct timespec d = rel_ts(10 * MS), rem;
	uint64_t w0 = wall(), v0 = mono();
	CHECK(syscall(SYS_nanosleep, &d, &rem) == 0, "nanosleep: %s", strerror(errno));
	uint64_t v1 = mono();
	measure("sys_nanosleep", v1 - v0, wall() - w0);
	expect_elapsed("nanosleep", v1 - v0, 10 * MS);
	d = rel_ts(7 * MS);
	v0 = mono();
	CHECK(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &d, NULL) == 0, "clock_nanosleep");
	expect_elapsed("clock_nanosleep", mono() - v0, 7 * MS);
	struct timespec now;
	CHECK(clock_gettime(CLOCK_REALTIME, &now) == 0, "clock_gettime");
	d = rel_ts(ts_ns(&now) + 5 * MS);
	v0 = mono();
	CHECK(syscall(SYS_clock_nanosleep, CLOCK_REALTIME, TIMER_ABSTIME, &d, NULL) == 0, "clock_nanosleep abs");
	if (g_virtual)
		CHECK(mono() - v0 == 5 * MS, "absolute: %" PRIu64, mono() - v0);
}

/* A timerfd created, armed, read and closed by system calls; ppoll writes the time left back. */
static void check_sys_timerfd(void)
{
	int fd = (int)syscall(SYS_timerfd_create, CLOCK_MONOTONIC, 0);
	CHECK(fd >= 0, "timerfd_create: %s", strerror(errno));
	struct itimerspec v = its(10 * MS, 0), cur;
	uint64_t w0 = wall(), v0 = mono();
	CHECK(syscall(SYS_timerfd_settime, fd, 0, &v, NULL) == 0, "settime: %s", strerror(errno));
	CHECK(syscall(SYS_timerfd_gettime, fd, &cur) == 0, "gettime");
	CHECK(ts_ns(&cur.it_value) > 0 && ts_ns(&cur.it_value) <= 10 * MS, "gettime %" PRIu64, ts_ns(&cur.it_value));
	if (g_virtual)
		CHECK(ts_ns(&cur.it_value) == 10 * MS, "gettime at once: %" PRIu64, ts_ns(&cur.it_value));
	CHECK(sys_tfd_count(fd) == 1, "a blocking read: one expiration");
	uint64_t v1 = mono();
	measure("sys_tfd_read", v1 - v0, wall() - w0);
	expect_elapsed("blocking read", v1 - v0, 10 * MS);
	v = its(20 * MS, 0);
	CHECK(syscall(SYS_timerfd_settime, fd, 0, &v, NULL) == 0, "settime");
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct timespec tmo = rel_ts(1 * S);
	v0 = mono();
	CHECK(syscall(SYS_ppoll, &p, 1, &tmo, NULL, KSET) == 1 && (p.revents & POLLIN), "ppoll");
	expect_elapsed("ppoll", mono() - v0, 20 * MS);
	if (g_virtual)
		CHECK(ts_ns(&tmo) == 980 * MS, "ppoll: time left %" PRIu64, ts_ns(&tmo));
	else
		CHECK(ts_ns(&tmo) < 980 * MS + 1, "ppoll: time left %" PRIu64, ts_ns(&tmo));
	CHECK(sys_tfd_count(fd) == 1, "one expiration");
	CHECK(syscall(SYS_close, fd) == 0, "close");
}

static volatile sig_atomic_t g_hits;

static void on_alarm(int sig)
{
	(void)sig;
	g_hits++;
}

/* A POSIX timer by the kernel's id, its signal taken by rt_sigtimedwait; ITIMER_REAL, alarm and pause. */
static void check_sys_timers(void)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	CHECK(sigprocmask(SIG_BLOCK, &set, &old) == 0, "block SIGUSR1");
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_value.sival_int = 42;
	int kid = -1;
	CHECK(syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &kid) == 0 && kid >= 0, "timer_create: %s",
	      strerror(errno));
	struct itimerspec v = its(15 * MS, 0), cur;
	uint64_t v0 = mono();
	CHECK(syscall(SYS_timer_settime, kid, 0, &v, NULL) == 0, "timer_settime: %s", strerror(errno));
	CHECK(syscall(SYS_timer_gettime, kid, &cur) == 0 && ts_ns(&cur.it_value) <= 15 * MS &&
		      (!g_virtual || ts_ns(&cur.it_value) == 15 * MS),
	      "timer_gettime %" PRIu64, ts_ns(&cur.it_value));
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	CHECK(syscall(SYS_rt_sigtimedwait, &set, &si, NULL, KSET) == SIGUSR1, "rt_sigtimedwait: %s", strerror(errno));
	expect_elapsed("timer signal", mono() - v0, 15 * MS);
	CHECK(si.si_code == SI_TIMER && si.si_value.sival_int == 42, "siginfo %d %d", si.si_code,
	      si.si_value.sival_int);
	CHECK(syscall(SYS_timer_getoverrun, kid) == 0, "overrun");
	CHECK(syscall(SYS_timer_delete, kid) == 0, "timer_delete");
	/* A timed rt_sigtimedwait with nothing coming: EAGAIN at its deadline. */
	struct timespec tmo = rel_ts(6 * MS);
	v0 = mono();
	CHECK(syscall(SYS_rt_sigtimedwait, &set, NULL, &tmo, KSET) == -1 && errno == EAGAIN, "times out");
	expect_elapsed("rt_sigtimedwait timeout", mono() - v0, 6 * MS);
	sigprocmask(SIG_SETMASK, &old, NULL);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
	g_hits = 0;
	struct itimerval it = {{0, 0}, {0, 30000}}, got;
	v0 = mono();
	CHECK(syscall(SYS_setitimer, ITIMER_REAL, &it, NULL) == 0, "setitimer");
	CHECK(syscall(SYS_getitimer, ITIMER_REAL, &got) == 0 && got.it_value.tv_usec <= 30000 &&
		      (!g_virtual || got.it_value.tv_usec == 30000),
	      "getitimer %ld", (long)got.it_value.tv_usec);
	CHECK(syscall(SYS_pause) == -1 && errno == EINTR && g_hits == 1, "pause: %d hits", (int)g_hits);
	expect_elapsed("pause", mono() - v0, 30 * MS);
	CHECK(syscall(SYS_alarm, 2) == 0, "no alarm left");
	CHECK(syscall(SYS_alarm, 0) == 2, "alarm: 2 s left");
}

/* Every readiness wait with nothing ready: it times out at its deadline, in virtual time. */
static void check_sys_polls(void)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0, "pipe");
	int ep = epoll_create1(0);
	struct epoll_event e = {.events = EPOLLIN, .data.fd = pfd[0]}, got;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &e) == 0, "epoll_ctl");
	struct pollfd p = {.fd = pfd[0], .events = POLLIN};
	sigset_t none;
	sigemptyset(&none);
	uint64_t w0 = wall(), v0 = mono();
	CHECK(syscall(SYS_poll, &p, 1, 25) == 0, "poll");
	uint64_t v1 = mono();
	measure("sys_poll", v1 - v0, wall() - w0);
	expect_elapsed("poll", v1 - v0, 25 * MS);
	struct timespec tmo = rel_ts(12 * MS);
	v0 = mono();
	CHECK(syscall(SYS_ppoll, &p, 1, &tmo, &none, KSET) == 0 && ts_ns(&tmo) == 0, "ppoll");
	expect_elapsed("ppoll", mono() - v0, 12 * MS);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(pfd[0], &rs);
	struct timeval tv = {0, 10000};
	v0 = mono();
	CHECK(syscall(SYS_select, pfd[0] + 1, &rs, NULL, NULL, &tv) == 0 && tv.tv_sec == 0 && tv.tv_usec == 0, "select");
	expect_elapsed("select", mono() - v0, 10 * MS);
	FD_SET(pfd[0], &rs);
	struct {
		const sigset_t *set;
		size_t size;
	} sig6 = {&none, KSET};
	tmo = rel_ts(8 * MS);
	v0 = mono();
	CHECK(syscall(SYS_pselect6, pfd[0] + 1, &rs, NULL, NULL, &tmo, &sig6) == 0 && ts_ns(&tmo) == 0, "pselect6");
	expect_elapsed("pselect6", mono() - v0, 8 * MS);
	v0 = mono();
	CHECK(syscall(SYS_epoll_wait, ep, &got, 1, 6) == 0, "epoll_wait");
	expect_elapsed("epoll_wait", mono() - v0, 6 * MS);
	v0 = mono();
	CHECK(syscall(SYS_epoll_pwait, ep, &got, 1, 4, &none, KSET) == 0, "epoll_pwait");
	expect_elapsed("epoll_pwait", mono() - v0, 4 * MS);
	tmo = rel_ts(3 * MS);
	v0 = mono();
	long r = syscall(SYS_epoll_pwait2, ep, &got, 1, &tmo, NULL, KSET);
	if (r == -1 && errno == ENOSYS) {
		printf("measure epoll_pwait2 skipped: ENOSYS\n");
	} else {
		CHECK(r == 0 && ts_ns(&tmo) == 3 * MS, "epoll_pwait2: %ld, its timeout is not written", r);
		expect_elapsed("epoll_pwait2", mono() - v0, 3 * MS);
		tmo = rel_ts(9 * MS);
		v0 = mono();
		CHECK(epoll_pwait2(ep, &got, 1, &tmo, &none) == 0, "epoll_pwait2()");
		expect_elapsed("epoll_pwait2()", mono() - v0, 9 * MS);
		/* Ready before its deadline: a timerfd due at 5 ms ends a 1 s epoll_pwait2 at 5 ms. */
		int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
		struct epoll_event te = {.events = EPOLLIN, .data.fd = fd};
		CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &te) == 0, "epoll_ctl timerfd");
		struct itimerspec v = its(5 * MS, 0);
		CHECK(timerfd_settime(fd, 0, &v, NULL) == 0, "settime");
		tmo = rel_ts(1 * S);
		v0 = mono();
		CHECK(syscall(SYS_epoll_pwait2, ep, &got, 1, &tmo, NULL, KSET) == 1 && got.data.fd == fd, "ready");
		expect_elapsed("epoll_pwait2 ready", mono() - v0, 5 * MS);
		close(fd);
	}
	close(ep);
	close(pfd[0]);
	close(pfd[1]);
}

/* ---- misuse: the same answer as the real system call ---- */

static void check_sys_misuse(void)
{
	struct pollfd p = {.fd = 0, .events = 0};
	struct timespec t10 = rel_ts(10 * MS), bad = {0, 2000000000L};
	struct itimerspec good = its(10 * MS, 0);
	sigset_t set;
	sigemptyset(&set);
	struct epoll_event ev;
	int ep = epoll_create1(0);
	SHOW("ppoll_setsize", syscall(SYS_ppoll, &p, 1, &t10, &set, 4));
	SHOW("ppoll_value", syscall(SYS_ppoll, &p, 1, &bad, NULL, KSET));
	SHOW("epoll_pwait_setsize", syscall(SYS_epoll_pwait, ep, &ev, 1, 10, &set, 4));
	SHOW("epoll_pwait2_value", syscall(SYS_epoll_pwait2, ep, &ev, 1, &bad, NULL, KSET));
	SHOW("epoll_pwait2_badfd", syscall(SYS_epoll_pwait2, 1000, &ev, 1, &t10, NULL, KSET));
	SHOW("epoll_pwait2_setsize", syscall(SYS_epoll_pwait2, ep, &ev, 1, &t10, &set, 4));
	SHOW("epoll_wait_badfd", syscall(SYS_epoll_wait, 1000, &ev, 1, 10));
	SHOW("nanosleep_value", syscall(SYS_nanosleep, &bad, NULL));
	SHOW("clock_nanosleep_clock", syscall(SYS_clock_nanosleep, 12345, 0, &t10, NULL));
	SHOW("timerfd_create_clock", syscall(SYS_timerfd_create, 12345, 0));
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	SHOW("timerfd_settime_flags", syscall(SYS_timerfd_settime, fd, 0x10, &good, NULL));
	SHOW("timerfd_settime_badfd", syscall(SYS_timerfd_settime, 1000, 0, &good, NULL));
	uint64_t n;
	SHOW("read_unarmed", syscall(SYS_read, fd, &n, 8));
	close(fd);
	SHOW("timer_settime_badid", syscall(SYS_timer_settime, 12345, 0, &good, NULL));
	SHOW("timer_delete_badid", syscall(SYS_timer_delete, 12345));
	SHOW("rt_sigtimedwait_setsize", syscall(SYS_rt_sigtimedwait, &set, NULL, &t10, 4));
	SHOW("rt_sigsuspend_setsize", syscall(SYS_rt_sigsuspend, &set, 4));
	SHOW("setitimer_which", syscall(SYS_setitimer, 7, NULL, NULL));
	close(ep);
}

static const struct clock_test checks[] = {{"sys_sleeps", check_sys_sleeps},
					   {"sys_timerfd", check_sys_timerfd},
					   {"sys_timers", check_sys_timers},
					   {"sys_polls", check_sys_polls},
					   {"sys_misuse", check_sys_misuse}};

int main(int argc, char **argv)
{
	return clock_test_main(argc, argv, checks, sizeof(checks) / sizeof(checks[0]));
}
