/* emulation.keep_cores_awake (virtual time, cpu_scale > 0; off by default): while processes are attached,
 * one SCHED_IDLE spinner per CPU the daemon may use (docs/provider.md "What the model predicts").
 *
 * At cpu_scale 1 an application thread's charged CPU time depends on what its core was doing: NetPIPE's
 * 8-byte figure was 20-30% higher on an idle host than under two CPU hogs, with 2-4x more involuntary
 * context switches of the ranks.  With a spinner on every core (SCHED_IDLE: it runs only when nothing else
 * on that core wants to, a waking thread preempts it at once, and wake-up placement counts its core as
 * idle) the cores never go idle and the idle host behaves like a loaded one: NetPIPE 8 B idle 2.19 ->
 * 1.52 us (2 hogs 1.68), 20x fewer involuntary switches (medians of 6 alternating runs).  Why exactly
 * (a halted virtual CPU, or where wake-ups land) is not settled: spinners in a session of their own at
 * autogroup nice 19 keep the cores just as awake and gave nothing (2.24 us).
 *
 * Off by default, for what it costs: SCHED_IDLE only ranks a thread within its scheduling group, and with
 * autogroups (one group per session) the daemon's session then competes with other sessions at full
 * weight whenever a spinner is runnable (~50% of both cores taken from other sessions' jobs here); and
 * wall time under CPU hogs (below).
 *
 * The spinners are a small process of their own (this binary started with AWAKE_ARG): posix_spawn (no copy
 * of a large daemon's page tables); it takes SCHED_IDLE itself at once, dies with the daemon
 * (PR_SET_PDEATHSIG) and is killed, not waited for, when the last process detaches.  The daemon never waits
 * for an idle-class task, which gets CPU time only when the cores have nothing else to do (joining spinner
 * threads, waiting for the killed process, or a spawn whose child is SCHED_IDLE before its execve would
 * stand the emulation still under CPU hogs).  Under CPU hogs fi_pingpong's wall time still grows 15-60%
 * with the spinners, in every variant tried (threads of the daemon, this process, waited for or not),
 * while spinners started beside the run, outside the daemon, cost nothing: not explained. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"

extern char **environ;

static void *spin(void *arg)
{
	(void)arg;
	for (;;) {
#if defined(__x86_64__) || defined(__i386__)
		__asm__ volatile("pause" ::: "memory");
#endif
	}
	return NULL;
}

static int awake_cpus(cpu_set_t *set)
{
	return sched_getaffinity(0, sizeof(*set), set) ? 0 : CPU_COUNT(set);
}

int awake_main(pid_t parent)
{
	struct sched_param sp = { 0 };
	/* Never spin in a class that competes with anyone; never outlive the daemon. */
	if (sched_setscheduler(0, SCHED_IDLE, &sp) || prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		return 1;
	cpu_set_t set, one;
	if (!awake_cpus(&set))
		return 1;
	int first = -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (first < 0) {
			first = cpu; /* this thread's */
			continue;
		}
		pthread_attr_t a;
		pthread_t t;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_init(&a); /* threads inherit SCHED_IDLE */
		pthread_attr_setaffinity_np(&a, sizeof(one), &one);
		pthread_attr_setstacksize(&a, 64 * 1024);
		if (pthread_create(&t, &a, spin, NULL))
			fprintf(stderr, "cxisimd: keep_cores_awake: no spinner on CPU %d\n", cpu);
		pthread_attr_destroy(&a);
	}
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	sched_setaffinity(0, sizeof(one), &one);
	spin(NULL);
	return 0;
}

/* Spinners run while a process is attached (vclock_attach .. vclock_detach), so a daemon with nobody to
 * charge burns nothing. */
static unsigned awake_clients;
static pid_t awake_pid, awake_last;

void awake_attach(struct daemon *d)
{
	if (!d->emu->keep_cores_awake || d->emu->cpu_scale <= 0 || awake_clients++)
		return;
	if (awake_last > 0)
		waitpid(awake_last, NULL, WNOHANG);
	char parent[24];
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	char *argv[] = { "cxisimd", AWAKE_ARG, parent, NULL };
	/* Spawned in the daemon's class: posix_spawn suspends the daemon until the child has called execve,
	 * which a child already SCHED_IDLE (POSIX_SPAWN_SETSCHEDULER) reaches only when the cores are free.  The
	 * child takes SCHED_IDLE itself, first thing. */
	if (posix_spawn(&awake_pid, "/proc/self/exe", NULL, NULL, argv, environ)) {
		awake_pid = 0;
		fprintf(stderr, "cxisimd: keep_cores_awake: cannot start the spinners\n");
		return;
	}
	cpu_set_t set;
	uint64_t n = (uint64_t)awake_cpus(&set);
	if (n > *d->st_awake_spinners)
		*d->st_awake_spinners = n; /* metrics.json: the spinners at once */
	if (!d->quiet)
		fprintf(stderr, "cxisimd: keep_cores_awake: %d idle-class spinners (pid %d)\n", (int)n, (int)awake_pid);
}

void awake_detach(struct daemon *d)
{
	if (!d->emu->keep_cores_awake || d->emu->cpu_scale <= 0 || !awake_clients || --awake_clients)
		return;
	/* Not waited for (see above): libev's SIGCHLD handler reaps it; the next start reaps it otherwise. */
	if (awake_pid > 0)
		kill(awake_pid, SIGKILL);
	awake_last = awake_pid;
	awake_pid = 0;
}
