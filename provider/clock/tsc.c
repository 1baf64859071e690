/* libcxisim-clock.so, part 3: the x86 cycle counter.
 *
 * rdtsc/rdtscp bypass every library call.  At start the interposer asks the kernel to fault them
 * (prctl(PR_SET_TSC, PR_TSC_SIGSEGV): every thread created afterwards inherits it) and emulates the faulting
 * instruction in a SIGSEGV handler: the counter reads (MONOTONIC offset + virtual ns) x the TSC rate once
 * the process is attached in virtual time, and the real counter otherwise (re-enabled for one instruction).
 * A fault from the vDSO (which reads the TSC for clock_gettime on TSC clocksources) is served the real
 * counter too.
 *
 * A trap is the emulation's cost, not the application's: a fault, a signal delivered and a sigreturn cost
 * the thread ~3 us of CPU time here (an rdtsc costs nanoseconds), and Open MPI reads the counter in its
 * progress loop.  The handler reads the thread's CPU clock first thing and hands the provider that time
 * less what the fault and the delivery cost before it (trap_pre_ns); the provider charges the span up to
 * there and starts the next one trap_post_ns (the way back: the handler's end, sigreturn) after its own
 * last read.  Both are calibrated per process at start (calibrate(): medians of trapped reads with CPU
 * clock reads around them and at both ends of the handler).  The counter stays trapped while the handler
 * works: re-enabling it costs two prctl calls, each a CR4 write the hypervisor traps (~3.8 us each here,
 * 11 us a trap with them against 3 us without); nothing on the emulated path reads it (the interposer's
 * real clock reads use the system call while trapping; the provider reads raw system calls), and should
 * anything fault again inside the handler (SA_NODEFER), the nested fault is served the real counter.  The application's own SIGSEGV handler keeps working: sigaction()/signal() for SIGSEGV are
 * recorded and called for every fault that is not a trapped counter read.
 *
 * Some hypervisors do not honour the CPU's time-stamp-disable bit (Firecracker guests: the prctl succeeds and
 * rdtsc still runs).  A probe rdtsc at start tells; trapping is then switched off (clk_tsc_state() == 0) and
 * the counter is the real one.  CXISIM_CLOCK_TSC=real turns trapping off. */
#include "interposer.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)

CLK_REAL(int, sigaction, int, const struct sigaction *, struct sigaction *)
CLK_REAL(sighandler_t, signal, int, sighandler_t)
static int g_state = -1;	 /* -1 off, 0 probe failed (no trap), 1 trapping */
static uint64_t g_tsc_khz;	 /* emulated counter rate */
static struct sigaction g_app; /* the application's SIGSEGV disposition */
static volatile sig_atomic_t g_probe_hit;
static uintptr_t g_vdso_lo, g_vdso_hi;
/* Calibrated CPU cost of a trap before the handler's first instruction and after its last (see above). */
static uint64_t g_trap_pre_ns, g_trap_post_ns;
#define CALIBRATION_TRAPS 15
static volatile int g_calibrating;
static volatile uint64_t g_calib_h0, g_calib_h1;

/* The calling thread's CPU time by a raw system call (libc's path may be interposed, or read the counter). */
static uint64_t raw_thread_cpu_ns(void)
{
	struct timespec ts;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_clock_gettime), "D"((long)CLOCK_THREAD_CPUTIME_ID), "S"((long)&ts)
			 : "rcx", "r11", "memory");
	return ret ? 0 : (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int clk_tsc_state(void)
{
	return g_state;
}

/* The real counter: let it run for one read (two prctl calls, the expensive path: the vDSO's reads, and
 * every read before the process attaches). */
static uint64_t real_tsc(void)
{
	uint32_t lo, hi;
	prctl(PR_SET_TSC, PR_TSC_ENABLE);
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	prctl(PR_SET_TSC, PR_TSC_SIGSEGV);
	return ((uint64_t)hi << 32) | lo;
}

/* cpu0: the thread's CPU time at the handler's start (0: not read). */
static uint64_t emulated_tsc(uintptr_t ip, uint64_t cpu0)
{
	if (ip >= g_vdso_lo && ip < g_vdso_hi)
		return real_tsc();
	const struct cxisim_clock_ops *o = clk_active(NULL);
	uint64_t ns, end = cpu0 > g_trap_pre_ns ? cpu0 - g_trap_pre_ns : 0;
	if (!o || clk_trap_virtual_ns(o, CLK_F_MONOTONIC, end, g_trap_post_ns, &ns) != 0)
		return real_tsc();
	return (uint64_t)((unsigned __int128)ns * g_tsc_khz / 1000000u);
}

/* The application's handler runs with the mask it asked for: ours runs SA_NODEFER (a nested counter fault
 * is served), so SIGSEGV itself is blocked here unless the application asked for SA_NODEFER too. */
static void call_app(struct sigaction *app, int sig, siginfo_t *si, void *uc)
{
	sigset_t mask = app->sa_mask, old;
	if (!(app->sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	if (app->sa_flags & SA_SIGINFO)
		app->sa_sigaction(sig, si, uc);
	else
		app->sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction app = g_app;
	if (app.sa_flags & SA_SIGINFO) {
		if (app.sa_sigaction) {
			call_app(&app, sig, si, uc);
			return;
		}
	} else if (app.sa_handler == SIG_IGN) {
		return;
	} else if (app.sa_handler != SIG_DFL) {
		call_app(&app, sig, si, uc);
		return;
	}
	/* Default action: restore it and return; the faulting instruction faults again and kills us.  A SIGSEGV
	 * that no instruction caused -- sent by kill, tgkill or sigqueue (si_code <= 0) -- would not come back:
	 * it is raised again, or the process would live on as if nothing had been sent. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	get_real_sigaction()(SIGSEGV, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	/* First thing: where the application's span ended (plus the fault's cost, taken off by the provider). */
	uint64_t cpu0 = g_calibrating || (g_state == 1 && clk_cpu_scale() != 0) ? raw_thread_cpu_ns() : 0;
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	/* A disabled counter read is a general-protection fault: SI_KERNEL, the instruction at RIP. */
	if (si->si_code == SI_KERNEL && g[REG_RIP]) {
		const unsigned char *ip = (const unsigned char *)g[REG_RIP];
		int len = ip[0] == 0x0f && ip[1] == 0x31			     ? 2
			  : ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xf9 ? 3
									     : 0;
		if (len && g_calibrating) {
			g_calib_h0 = cpu0;
			g[REG_RAX] = g[REG_RDX] = 0;
			g[REG_RIP] += len;
			g_calib_h1 = raw_thread_cpu_ns();
			return;
		}
		if (len) {
			if (g_state < 1) { /* the start-up probe */
				g_probe_hit = 1;
				g[REG_RAX] = g[REG_RDX] = 0;
			} else {
				int saved = errno;
				uint64_t t = emulated_tsc((uintptr_t)ip, cpu0);
				g[REG_RAX] = (greg_t)(t & 0xffffffffu);
				g[REG_RDX] = (greg_t)(t >> 32);
				if (len == 3) /* rdtscp: IA32_TSC_AUX, which Linux sets to the cpu (and node << 12) */
					g[REG_RCX] = sched_getcpu();
				errno = saved;
			}
			g[REG_RIP] += len;
			return;
		}
	}
	chain(sig, si, ucv);
}

/* The application's SIGSEGV handler is recorded, ours stays installed. */
CLK_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig != SIGSEGV || g_state != 1)
		return get_real_sigaction()(sig, act, old);
	if (old)
		*old = g_app;
	if (act)
		g_app = *act;
	return 0;
}

CLK_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	if (sig != SIGSEGV || g_state != 1)
		return get_real_signal()(sig, h);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART; /* glibc's signal(): BSD semantics */
	sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

static uint64_t tsc_khz(void)
{
	const char *e = getenv("CXISIM_CLOCK_TSC_KHZ");
	if (e && atoll(e) > 0)
		return (uint64_t)atoll(e);
	/* What Open MPI's linux timer also reads: the first "cpu MHz" of /proc/cpuinfo. */
	FILE *f = fopen("/proc/cpuinfo", "r");
	double mhz = 0;
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "cpu MHz", 7) == 0 && sscanf(strchr(line, ':') + 1, "%lf", &mhz) == 1)
				break;
		fclose(f);
	}
	return mhz > 0 ? (uint64_t)(mhz * 1000) : 2000000u;
}

static void vdso_range(void)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	uintptr_t hi = base;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && base + ph[i].p_vaddr + ph[i].p_memsz > hi)
			hi = base + ph[i].p_vaddr + ph[i].p_memsz;
	g_vdso_lo = base;
	g_vdso_hi = hi;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* What a trap costs the thread's CPU clock before the handler's first read and after its last: trapped
 * reads with CPU clock reads around them, less the cost of a read (back to back), medians (an interrupt
 * lands in one sample, not in the median). */
static void calibrate(void)
{
	uint64_t pre[CALIBRATION_TRAPS], post[CALIBRATION_TRAPS], rc[CALIBRATION_TRAPS];
	g_calibrating = 1;
	for (int i = 0; i < CALIBRATION_TRAPS; i++) {
		uint32_t lo, hi;
		uint64_t a = raw_thread_cpu_ns();
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		uint64_t b = raw_thread_cpu_ns(), c = raw_thread_cpu_ns();
		pre[i] = g_calib_h0 - a;
		post[i] = b - g_calib_h1;
		rc[i] = c - b;
	}
	g_calibrating = 0;
	uint64_t r = median(rc, CALIBRATION_TRAPS), p = median(pre, CALIBRATION_TRAPS), q = median(post, CALIBRATION_TRAPS);
	g_trap_pre_ns = p > r ? p - r : 0;
	g_trap_post_ns = q > r ? q - r : 0;
	if (getenv("CXISIM_CLOCK_DEBUG"))
		fprintf(stderr, "cxisim-clock: trap costs %llu ns before the handler, %llu after (read %llu)\n",
			(unsigned long long)g_trap_pre_ns, (unsigned long long)g_trap_post_ns, (unsigned long long)r);
}

void clk_tsc_init(void)
{
	int (*real_sigaction)(int, const struct sigaction *, struct sigaction *) = get_real_sigaction();
	const char *e = getenv("CXISIM_CLOCK_TSC");
	/* Only processes that may attach (run by `cxisim exec`) trap the counter. */
	if (!real_sigaction || (e && strcmp(e, "real") == 0) || !getenv("CXISIM_SOCKET"))
		return;
	g_tsc_khz = tsc_khz();
	vdso_range();
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (real_sigaction(SIGSEGV, &sa, &g_app) != 0)
		return;
	g_state = 0;
	if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV) == 0) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		(void)lo;
		(void)hi;
	}
	if (g_probe_hit) {
		g_state = 1;
		calibrate();
		return;
	}
	/* No trap on this machine: put everything back. */
	prctl(PR_SET_TSC, PR_TSC_ENABLE);
	real_sigaction(SIGSEGV, &g_app, NULL);
}

void clk_tsc_exec_begin(void)
{
	if (g_state == 1)
		prctl(PR_SET_TSC, PR_TSC_ENABLE);
}

void clk_tsc_exec_end(void)
{
	if (g_state == 1)
		prctl(PR_SET_TSC, PR_TSC_SIGSEGV);
}

#else /* not x86-64: no cycle counter to trap */

int clk_tsc_state(void)
{
	return -1;
}

void clk_tsc_init(void)
{
}

void clk_tsc_exec_begin(void)
{
}

void clk_tsc_exec_end(void)
{
}

#endif
