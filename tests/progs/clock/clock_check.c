/* Checks of libcxisim-clock.so against a virtual-time owner of its own (clock_owner.so): run as
 * `LD_PRELOAD=libcxisim-clock.so clock_check CHECK`; prints "ok CHECK" and exits 0, or names the failed
 * expectation and exits 1 (77: not applicable on this machine).  CXISIM_CLOCK_EPOCH (set by the test) puts
 * virtual MONOTONIC/REALTIME/BOOTTIME an hour ahead of the real clocks, so a real read cannot pass for a
 * virtual one. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock_owner.h"

static uint64_t epoch[3]; /* realtime, monotonic, boottime */
static const uint64_t START_NS = 2 * S;

/* The real clock through the system call instruction itself: nothing can interpose it. */
static uint64_t raw_ns(clockid_t c)
{
	struct timespec ts;
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(SYS_clock_gettime), "D"(c), "S"(&ts) : "rcx", "r11", "memory");
	return r == 0 ? (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec : 0;
}

/* A sanitizer runtime preloaded before the interposer intercepts the clock functions itself. */
static int intercepted(void)
{
	const char *p = getenv("LD_PRELOAD");
	return p && strstr(p, "libasan");
}

static uint64_t read_ns(clockid_t c)
{
	struct timespec ts;
	CHECK(clock_gettime(c, &ts) == 0, "clock %d", (int)c);
	return ts_ns(&ts);
}

static uint64_t vt(void)
{
	return clock_owner_vt_ns();
}

static void attach(void)
{
	CHECK(clock_owner_start(START_NS, 10 * MS) == 0, "no interposer preloaded");
}

static void check_reads(void)
{
	attach();
	uint64_t v = vt();
	CHECK(read_ns(CLOCK_MONOTONIC) == epoch[1] + v, "%llu vs %llu", (unsigned long long)read_ns(CLOCK_MONOTONIC),
	      (unsigned long long)(epoch[1] + v));
	CHECK(read_ns(CLOCK_MONOTONIC_RAW) == epoch[1] + v, "raw");
	CHECK(read_ns(CLOCK_MONOTONIC_COARSE) == epoch[1] + v, "coarse");
	CHECK(read_ns(CLOCK_REALTIME) == epoch[0] + v, "realtime");
	CHECK(read_ns(CLOCK_REALTIME_COARSE) == epoch[0] + v, "realtime coarse");
	CHECK(read_ns(CLOCK_BOOTTIME) == epoch[2] + v, "boottime");
	struct timeval tv;
	CHECK(gettimeofday(&tv, NULL) == 0, "gettimeofday");
	CHECK((uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec == (epoch[0] + v) / 1000u, "gettimeofday value");
	time_t t2, t1 = time(&t2);
	CHECK((uint64_t)t1 == (epoch[0] + v) / S && t1 == t2, "time()");
	struct timespec ts;
	CHECK(timespec_get(&ts, TIME_UTC) == TIME_UTC && ts_ns(&ts) == epoch[0] + v, "timespec_get");
	/* The ways around the clock_gettime symbol that go through libc's syscall(). */
	CHECK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) == 0 && ts_ns(&ts) == epoch[1] + v, "syscall clock_gettime");
	CHECK(syscall(SYS_gettimeofday, &tv, NULL) == 0 &&
		      (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec == (epoch[0] + v) / 1000u,
	      "syscall gettimeofday");
	CHECK(syscall(SYS_time, NULL) == (long)((epoch[0] + v) / S), "syscall time");
	/* Other system calls still pass through syscall() unchanged. */
	CHECK(syscall(SYS_getpid) == getpid(), "syscall getpid");
	/* The registering library reads the real clock; a raw system call too. */
	uint64_t real = raw_ns(CLOCK_MONOTONIC), owner = clock_owner_real_ns(CLOCK_MONOTONIC);
	/* (Under ASan its clock_gettime interceptor calls ours from libasan for every caller, so the caller
	 * cannot be told apart there: the provider reads its clocks with raw system calls.) */
	CHECK(intercepted() || (owner + 10 * S > real && owner < real + 10 * S), "owner's read is real: %llu vs %llu",
	      (unsigned long long)owner, (unsigned long long)real);
	CHECK(vt() == v, "reads do not move virtual time");
}

static void check_continuity(void)
{
	/* No epoch (unset by the test): a process that read the real clock before it attached continues from
	 * it; virtual time starts lower than the real clock, so the offset lifts it. */
	uint64_t before = read_ns(CLOCK_MONOTONIC), before_rt = read_ns(CLOCK_REALTIME);
	attach();
	uint64_t after = read_ns(CLOCK_MONOTONIC), after_rt = read_ns(CLOCK_REALTIME);
	CHECK(after >= before && after_rt >= before_rt, "time went backwards at attach");
	CHECK(after - before < 10 * S, "jumped forward by %llu ns", (unsigned long long)(after - before));
	struct timespec d = {0, 5 * MS};
	nanosleep(&d, NULL);
	CHECK(read_ns(CLOCK_MONOTONIC) == after + 5 * MS, "virtual after the lift");
}

static void check_sleeps(void)
{
	attach();
	uint64_t w0 = raw_ns(CLOCK_MONOTONIC), v = vt(), m0 = read_ns(CLOCK_MONOTONIC);
	struct timespec d = {0, 10 * MS};
	CHECK(nanosleep(&d, NULL) == 0, "nanosleep");
	CHECK(vt() == v + 10 * MS && read_ns(CLOCK_MONOTONIC) == m0 + 10 * MS, "10 ms exactly: %llu",
	      (unsigned long long)(vt() - v));
	CHECK(usleep(2500) == 0 && vt() == v + 12500000ull, "usleep");
	CHECK(sleep(1) == 0 && vt() == v + 12500000ull + S, "sleep");
	v = vt();
	d.tv_nsec = 3 * MS;
	CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL) == 0 && vt() == v + 3 * MS, "clock_nanosleep rel");
	struct timespec abs;
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += 4 * MS;
	if (abs.tv_nsec >= (long)S) {
		abs.tv_sec++;
		abs.tv_nsec -= S;
	}
	CHECK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL) == 0 && vt() == v + 7 * MS,
	      "clock_nanosleep abs");
	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_sec -= 1; /* in the past: returns at once */
	CHECK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &abs, NULL) == 0 && vt() == v + 7 * MS, "abs past");
	d.tv_nsec = 5 * MS;
	CHECK(syscall(SYS_nanosleep, &d, NULL) == 0 && vt() == v + 12 * MS, "syscall nanosleep");
	CHECK(syscall(SYS_clock_nanosleep, CLOCK_BOOTTIME, 0, &d, NULL) == 0 && vt() == v + 17 * MS,
	      "syscall clock_nanosleep");
	struct timespec bad = {0, 2000000000L};
	errno = 0;
	CHECK(nanosleep(&bad, NULL) == -1 && errno == EINVAL, "nanosleep EINVAL");
	CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL) == EINVAL, "clock_nanosleep EINVAL");
	CHECK(vt() == v + 17 * MS, "invalid sleeps do not move time");
	uint64_t wall = raw_ns(CLOCK_MONOTONIC) - w0;
	CHECK(wall < 500 * MS, "1.03 s of virtual sleep took %llu ns of wall time", (unsigned long long)wall);
	printf("sleeps: virtual %llu ns, wall %llu ns\n", (unsigned long long)(vt() - v + 12500000ull + S),
	       (unsigned long long)wall);
}

static int pipefd[2];

static void *late_writer(void *arg)
{
	struct timespec d = {0, (long)(uintptr_t)arg};
	clock_owner_real_ns(CLOCK_MONOTONIC);
	/* A real wait: this thread's nanosleep is virtual too, so spin on the raw clock instead. */
	uint64_t until = raw_ns(CLOCK_MONOTONIC) + (uint64_t)d.tv_nsec;
	while (raw_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	CHECK(write(pipefd[1], "x", 1) == 1, "write");
	return NULL;
}

static void check_waits(void)
{
	CHECK(pipe(pipefd) == 0, "pipe");
	attach();
	struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
	uint64_t v = vt();
	CHECK(poll(&p, 1, 200) == 0 && vt() == v + 200 * MS, "poll timeout: %llu", (unsigned long long)(vt() - v));
	struct timespec t = {0, 70 * MS};
	v = vt();
	CHECK(ppoll(&p, 1, &t, NULL) == 0 && vt() == v + 70 * MS, "ppoll timeout");
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(pipefd[0], &rs);
	struct timeval tv = {0, 150000};
	v = vt();
	CHECK(select(pipefd[0] + 1, &rs, NULL, NULL, &tv) == 0 && vt() == v + 150 * MS, "select timeout");
	CHECK(!FD_ISSET(pipefd[0], &rs) && tv.tv_sec == 0 && tv.tv_usec == 0, "select clears on timeout");
	FD_SET(pipefd[0], &rs);
	v = vt();
	CHECK(pselect(pipefd[0] + 1, &rs, NULL, NULL, &t, NULL) == 0 && vt() == v + 70 * MS, "pselect timeout");
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN}, out;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev) == 0, "epoll_ctl");
	v = vt();
	CHECK(epoll_wait(ep, &out, 1, 120) == 0 && vt() == v + 120 * MS, "epoll_wait timeout");
	v = vt();
	CHECK(epoll_pwait(ep, &out, 1, 30, NULL) == 0 && vt() == v + 30 * MS, "epoll_pwait timeout");
	/* Ready at once: no virtual time passes. */
	CHECK(write(pipefd[1], "y", 1) == 1, "write");
	v = vt();
	CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN) && vt() == v, "poll ready");
	FD_SET(pipefd[0], &rs);
	tv.tv_sec = 5;
	CHECK(select(pipefd[0] + 1, &rs, NULL, NULL, &tv) == 1 && FD_ISSET(pipefd[0], &rs) && vt() == v,
	      "select ready");
	CHECK(tv.tv_sec == 5 && tv.tv_usec == 0, "select time left");
	CHECK(epoll_wait(ep, &out, 1, 5000) == 1 && vt() == v, "epoll ready");
	char c;
	CHECK(read(pipefd[0], &c, 1) == 1, "read");
	/* Ready later, from outside the simulation (another thread's write): seen at the next return of
	 * ops->wait, long before the virtual deadline. */
	pthread_t th;
	pthread_create(&th, NULL, late_writer, (void *)(uintptr_t)(20 * MS));
	v = vt();
	CHECK(poll(&p, 1, 600000) == 1, "poll late");
	CHECK(vt() - v < 100 * S, "virtual time passed %llu", (unsigned long long)(vt() - v));
	pthread_join(th, NULL);
	CHECK(read(pipefd[0], &c, 1) == 1, "read");
	pthread_create(&th, NULL, late_writer, (void *)(uintptr_t)(20 * MS));
	CHECK(epoll_wait(ep, &out, 1, 600000) == 1, "epoll late");
	pthread_join(th, NULL);
	/* Ready at once: no wait, whatever the timeout; a zero timeout is the real call. */
	uint64_t waits = clock_owner_calls("wait");
	CHECK(poll(&p, 1, -1) == 1 && poll(&p, 1, 0) == 1 && clock_owner_calls("wait") == waits, "ready poll");
	CHECK(read(pipefd[0], &c, 1) == 1, "read");
	/* No timeout: the thread waits idle (ops->wait without a deadline) until the fd is ready. */
	pthread_create(&th, NULL, late_writer, (void *)(uintptr_t)(20 * MS));
	CHECK(poll(&p, 1, -1) == 1 && clock_owner_calls("wait") > waits, "infinite poll waits idle");
	pthread_join(th, NULL);
	CHECK(read(pipefd[0], &c, 1) == 1, "read");
	waits = clock_owner_calls("wait");
	pthread_create(&th, NULL, late_writer, (void *)(uintptr_t)(20 * MS));
	FD_ZERO(&rs);
	FD_SET(pipefd[0], &rs);
	CHECK(select(pipefd[0] + 1, &rs, NULL, NULL, NULL) == 1 && FD_ISSET(pipefd[0], &rs) &&
		      clock_owner_calls("wait") > waits,
	      "select without timeout");
	pthread_join(th, NULL);
	CHECK(read(pipefd[0], &c, 1) == 1, "read");
	waits = clock_owner_calls("wait");
	pthread_create(&th, NULL, late_writer, (void *)(uintptr_t)(20 * MS));
	CHECK(epoll_wait(ep, &out, 1, -1) == 1 && clock_owner_calls("wait") > waits, "epoll without timeout");
	pthread_join(th, NULL);
	printf("waits: %llu calls of ops->wait\n", (unsigned long long)waits);
}

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int flag;
static sem_t sem;

static void *late_signal(void *arg)
{
	(void)arg;
	uint64_t until = raw_ns(CLOCK_MONOTONIC) + 20 * MS;
	while (raw_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	pthread_mutex_lock(&mtx);
	flag = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&mtx);
	sem_post(&sem);
	return NULL;
}

/* As callers do: wait again after a spurious wakeup (a return before the deadline without a signal). */
static int timedwait_loop(pthread_cond_t *c, const struct timespec *abs)
{
	int r;
	while ((r = pthread_cond_timedwait(c, &mtx, abs)) == 0 && !flag)
		;
	return r;
}

static void check_cond(void)
{
	attach();
	sem_init(&sem, 0, 0);
	pthread_mutex_lock(&mtx);
	uint64_t v = vt();
	struct timespec abs = abs_after(CLOCK_REALTIME, 50 * MS);
	CHECK(timedwait_loop(&cond, &abs) == ETIMEDOUT && vt() == v + 50 * MS, "REALTIME cond: %llu",
	      (unsigned long long)(vt() - v));
	pthread_condattr_t ca;
	pthread_cond_t mc;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&mc, &ca);
	v = vt();
	abs = abs_after(CLOCK_MONOTONIC, 30 * MS);
	CHECK(timedwait_loop(&mc, &abs) == ETIMEDOUT && vt() == v + 30 * MS, "MONOTONIC cond");
	v = vt();
	abs = abs_after(CLOCK_MONOTONIC, 40 * MS);
	int r;
	while ((r = pthread_cond_clockwait(&cond, &mtx, CLOCK_MONOTONIC, &abs)) == 0)
		;
	CHECK(r == ETIMEDOUT && vt() == v + 40 * MS, "clockwait");
	CHECK(pthread_mutex_trylock(&mtx) == EBUSY, "the mutex is held after a timeout");
	pthread_t th;
	pthread_create(&th, NULL, late_signal, NULL);
	abs = abs_after(CLOCK_REALTIME, 600 * S);
	v = vt();
	r = 0;
	while (!flag && r == 0)
		r = pthread_cond_timedwait(&cond, &mtx, &abs);
	CHECK(flag && r == 0 && vt() - v < 100 * S, "signalled wait: r=%d", r);
	pthread_mutex_unlock(&mtx);
	pthread_join(th, NULL);
	v = vt();
	abs = abs_after(CLOCK_REALTIME, 40 * MS);
	CHECK(sem_timedwait(&sem, &abs) == 0 && vt() == v, "posted semaphore");
	CHECK(sem_timedwait(&sem, &abs) == -1 && errno == ETIMEDOUT && vt() == v + 40 * MS, "semaphore timeout");
}

static void burn(uint64_t ns)
{
	uint64_t t0 = raw_ns(CLOCK_THREAD_CPUTIME_ID);
	volatile uint64_t x = 0;
	while (raw_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < ns)
		x++;
}

static void check_cpu(void)
{
	attach();
	uint64_t c0 = read_ns(CLOCK_THREAD_CPUTIME_ID), r0 = raw_ns(CLOCK_THREAD_CPUTIME_ID);
	burn(20 * MS);
	uint64_t c1 = read_ns(CLOCK_THREAD_CPUTIME_ID), r1 = raw_ns(CLOCK_THREAD_CPUTIME_ID);
	double scale = atof(getenv("CXISIM_CPU_SCALE"));
	double ratio = (double)(c1 - c0) / (double)(r1 - r0);
	CHECK(ratio > scale * 0.9 && ratio < scale * 1.1, "virtual/real CPU %.3f, scale %.3f", ratio, scale);
	CHECK(read_ns(CLOCK_PROCESS_CPUTIME_ID) >= (uint64_t)(scale * 0.9 * (double)r1), "process CPU clock");
}

static void check_detach(void)
{
	attach();
	CHECK(read_ns(CLOCK_MONOTONIC) >= epoch[1], "virtual while attached");
	clock_owner_stop();
	uint64_t m = read_ns(CLOCK_MONOTONIC), r = raw_ns(CLOCK_MONOTONIC);
	CHECK(m <= r && r - m < S, "real after detach");
	uint64_t w0 = raw_ns(CLOCK_MONOTONIC);
	struct timespec d = {0, 20 * MS};
	nanosleep(&d, NULL);
	CHECK(raw_ns(CLOCK_MONOTONIC) - w0 >= 20 * MS, "real sleep after detach");
}

static void check_fork(void)
{
	attach();
	CHECK(read_ns(CLOCK_MONOTONIC) >= epoch[1], "virtual in the parent");
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t m = read_ns(CLOCK_MONOTONIC), r = raw_ns(CLOCK_MONOTONIC);
		_exit(m <= r && r - m < S ? 0 : 3);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the forked child reads the real clock (status %d)", st);
}

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static void check_tsc(void)
{
	attach();
	uint64_t w0 = raw_ns(CLOCK_MONOTONIC), t0 = rdtsc();
	struct timespec d = {1, 0};
	nanosleep(&d, NULL);
	uint64_t t1 = rdtsc(), w = raw_ns(CLOCK_MONOTONIC) - w0;
	/* Trapped: the counter advanced by 1 s of virtual time at the TSC rate while far less wall time passed. */
	double khz = (double)(t1 - t0) / 1e3; /* counts per virtual second / 1000 */
	if (w < 200 * MS && khz < 100000.0) {
		printf("tsc: not trapped on this machine (the counter advanced %.0f kHz x 1 s in %llu ns)\n", khz,
		       (unsigned long long)w);
		exit(77);
	}
	CHECK(khz > 100000.0 && khz < 10000000.0, "TSC rate %.0f kHz", khz);
}

static void check_noattach(void)
{
	/* Nothing registered: everything is real. */
	uint64_t m = read_ns(CLOCK_MONOTONIC), r = raw_ns(CLOCK_MONOTONIC);
	CHECK(m <= r && r - m < S, "real clock");
	uint64_t w0 = raw_ns(CLOCK_MONOTONIC);
	struct timespec d = {0, 20 * MS};
	nanosleep(&d, NULL);
	struct pollfd p = {.fd = 0, .events = 0};
	poll(&p, 1, 20);
	CHECK(raw_ns(CLOCK_MONOTONIC) - w0 >= 40 * MS, "real sleeps");
	CHECK(clock_owner_calls("now") == 0, "no op called");
}

/* NULL where the kernel takes it (a legal "no time value", or EFAULT): the wrappers return what the real
 * calls do (each case checked outside the interposer too), never crash.  libc declares most of these
 * arguments nonnull, and with that attribute the compiler had deleted the wrappers' own NULL checks:
 * gettimeofday(NULL, tz), legal on Linux, crashed (provider/clock/module.mk). */
static void expect(const char *what, long r, long want, int want_errno)
{
	int e = errno;
	CHECK(r == want && (want >= 0 || e == want_errno), "%s: %ld errno %d, want %ld errno %d", what, r, e, want,
	      want_errno);
}

/* Passes NULL where libc declares nonnull on purpose: not for UBSan to stop (SANITIZE=1). */
__attribute__((no_sanitize_undefined)) static void check_nulls(void)
{
	if (getenv("CXISIM_CLOCK_EPOCH"))
		attach();
	void *volatile null = NULL; /* opaque to the compiler: the calls below really pass NULL */
	struct timezone tz;
	expect("gettimeofday(NULL, NULL)", gettimeofday(null, null), 0, 0);
	expect("gettimeofday(NULL, tz)", gettimeofday(null, &tz), 0, 0);
	expect("nanosleep(NULL)", nanosleep(null, null), -1, EFAULT);
	expect("clock_nanosleep(NULL) == EFAULT", clock_nanosleep(CLOCK_MONOTONIC, 0, null, null) == EFAULT, 1, 0);
	expect("poll(NULL, 1)", poll(null, 1, 10), -1, EFAULT);
	expect("poll(NULL, 0)", poll(null, 0, 10), 0, 0);
	struct timespec ts = {0, 1000};
	expect("ppoll(NULL, 1)", ppoll(null, 1, &ts, null), -1, EFAULT);
	expect("sigtimedwait(NULL set)", sigtimedwait(null, null, &ts), -1, EFAULT);
	expect("sigwaitinfo(NULL set)", sigwaitinfo(null, null), -1, EFAULT);
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	CHECK(fd >= 0, "timerfd_create");
	expect("timerfd_settime(NULL)", timerfd_settime(fd, 0, null, null), -1, EFAULT);
	expect("timerfd_gettime(NULL)", timerfd_gettime(fd, null), -1, EFAULT);
	close(fd);
	expect("getitimer(NULL)", getitimer(ITIMER_REAL, null), -1, EFAULT);
	expect("setitimer(NULL, NULL)", setitimer(ITIMER_REAL, null, null), 0, 0);
	int ep = epoll_create1(0);
	expect("epoll_wait(NULL events)", epoll_wait(ep, null, 1, 10), 0, 0);
	close(ep);
	expect("time(NULL) > 0", time(null) > 0, 1, 0);
}

static const struct {
	const char *name;
	void (*fn)(void);
} checks[] = {{"reads", check_reads},	{"continuity", check_continuity}, {"sleeps", check_sleeps},
	      {"waits", check_waits},	{"cond", check_cond},		  {"cpu", check_cpu},
	      {"detach", check_detach}, {"fork", check_fork},		  {"tsc", check_tsc},
	      {"noattach", check_noattach}, {"nulls", check_nulls}};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *e = getenv("CXISIM_CLOCK_EPOCH");
	if (e) {
		unsigned long long a, b, c;
		if (sscanf(e, "%llu,%llu,%llu", &a, &b, &c) == 3) {
			/* The interposer rounds the offsets up to whole seconds (REALTIME) and milliseconds. */
			epoch[0] = (a + S - 1) / S * S;
			epoch[1] = (b + MS - 1) / MS * MS;
			epoch[2] = (c + MS - 1) / MS * MS;
		}
	}
	for (size_t i = 0; argc > 1 && i < sizeof(checks) / sizeof(checks[0]); i++)
		if (!strcmp(argv[1], checks[i].name)) {
			checks[i].fn();
			printf("ok %s\n", argv[1]);
			return 0;
		}
	fprintf(stderr, "usage: clock_check CHECK\n");
	return 2;
}
