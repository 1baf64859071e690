/* emulation.cpu_latency_qos_us (virtual time; default 0): while processes are attached, the daemon holds a
 * Linux PM QoS CPU latency request (/dev/cpu_dma_latency) so that idle CPUs poll instead of halting, and it
 * reports the host's idle configuration in run.json ("host_idle").
 *
 * Why at cpu_scale 0 (the default, nothing charged): wall time.  Every empty poll parks the thread on a futex
 * and the daemon wakes it at its completion; waking a halted vCPU is a VM exit and an interrupt.  fi_pingpong
 * 8 B took 152 us of wall per round trip without the request against 54 with it (3 alternating trials each,
 * Nov 28; realtime mode 49 us): without it, the cpu_scale 0 default missed the 2x-of-realtime target.
 *
 * Why: at cpu_scale 1 a thread is charged its CPU time, and what one span of it costs depends on what the
 * core did just before.  A CPU that halts when idle (HLT; in a virtual machine a VM exit, after which the
 * physical core runs something else) starts the next span with cold caches, TLB and branch predictors, and
 * waking a halted CPU takes an interrupt where a polling one notices the wake-up by itself.  So on an idle
 * host the benchmarks printed MORE than under CPU hogs (which keep every core busy): NetPIPE 8 B 1.91 us
 * idle against 1.64 / 1.80 under 2 / 3 hogs, fi_pingpong 1.655 against 1.320 / 1.335 (8 alternating runs,
 * docs/provider.md "What the model predicts").  With the request held: NetPIPE 1.57, fi_pingpong 1.27 idle
 * (loaded figures unchanged: a busy core never idles), and each run took ~20% less wall time.
 *
 * A latency limit of 0 makes every cpuidle governor (haltpoll, menu, teo, ladder) pick the polling state;
 * the polling loop is the idle task's and ends as soon as anything is runnable, so no task waits for it (unlike
 * keep_cores_awake's spinners, which took ~50% of both cores from other sessions).  Still, a CPU-bound loop
 * beside the run was 6-12% slower per second (a polling vCPU may share a physical core with it; not
 * separated from the emulation simply finishing sooner).  Its cost is power, and in a virtual machine
 * the physical cores the idle vCPUs keep: a host kernel that halts its idle vCPUs at once
 * (haltpoll.guest_halt_poll_ns=0, this machine's setting) does so to give them back.  The request is the
 * kernel's per-open-file one: it ends when the daemon closes the file or dies, and it is held only while
 * processes are attached.  Writing /dev/cpu_dma_latency needs root (mode 0600 on most systems): without it
 * nothing is held and run.json and a warning say so.  -1 asks for nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon.h"

#define QOS_DEV "/dev/cpu_dma_latency"
#define CPUIDLE "/sys/devices/system/cpu/cpuidle"
#define HALT_POLL "/sys/module/haltpoll/parameters/guest_halt_poll_ns"

static struct {
	int fd;            /* the held request, -1 if none */
	unsigned clients;  /* attached processes (the request is held while > 0) */
	bool tried;        /* a request was attempted (the report says how it went) */
	int err;           /* errno of the failed attempt, 0 if held */
	long limit_us;     /* the kernel's limit read back while held (-1: not read) */
	uint64_t poll0;    /* polling-state entries of all CPUs when the request was taken */
	uint64_t polls;    /* polling-state entries while held, summed over the attach periods */
	bool warned;
} q = { .fd = -1, .limit_us = -1 };

static int read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *s = fgets(buf, (int)n, f);
	fclose(f);
	if (!s)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* Entries into each CPU's polling idle state (state0 named "POLL"), summed; -1 if there is none. */
static int64_t poll_entries(void)
{
	int64_t sum = -1;
	char path[128], buf[64];
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	for (long cpu = 0; cpu < ncpu; cpu++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/cpuidle/state0/name", cpu);
		if (read_line(path, buf, sizeof(buf)) || strcmp(buf, "POLL"))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/cpuidle/state0/usage", cpu);
		if (!read_line(path, buf, sizeof(buf)))
			sum = (sum < 0 ? 0 : sum) + strtoll(buf, NULL, 10);
	}
	return sum;
}

static bool wanted(const struct daemon *d)
{
	return d->emu->cpu_latency_qos_us >= 0;
}

void hostidle_attach(struct daemon *d)
{
	if (q.clients++)
		return;
	if (!wanted(d))
		return; /* asked for nothing: run.json says what that means (charged_cpu_time_host_dependent) */
	q.tried = true;
	int32_t v = (int32_t)d->emu->cpu_latency_qos_us;
	q.fd = open(QOS_DEV, O_RDWR | O_CLOEXEC);
	if (q.fd >= 0 && write(q.fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		q.err = errno;
		close(q.fd);
		q.fd = -1;
	} else if (q.fd < 0) {
		q.err = errno;
	}
	if (q.fd < 0) {
		/* What halting CPUs cost (see the top): charged time at cpu_scale > 0, wall time at 0. */
		bool charged = d->emu->cpu_scale > 0;
		if (!d->emu->keep_cores_awake && !q.warned && (q.warned = true))
			fprintf(stderr, "cxisimd: warning: cannot hold a CPU latency request (%s: %s): idle CPUs may halt, "
				"and %s; run as root or let the user write %s%s (docs/provider.md \"Time\")\n", QOS_DEV,
				strerror(q.err),
				charged ? "charged CPU time may then depend on host load"
					: "the run may take up to ~3x the wall time (the figures do not change)",
				QOS_DEV, charged ? ", or use cpu_scale 0" : "");
		return;
	}
	q.err = 0;
	int32_t limit;
	/* Reading the file gives the kernel's limit now: the least of all requests, ours included. */
	if (pread(q.fd, &limit, sizeof(limit), 0) == (ssize_t)sizeof(limit))
		q.limit_us = limit;
	int64_t p = poll_entries();
	q.poll0 = p > 0 ? (uint64_t)p : 0;
}

static void release(void)
{
	if (q.fd < 0)
		return;
	int64_t p = poll_entries();
	if (p >= 0 && (uint64_t)p >= q.poll0)
		q.polls += (uint64_t)p - q.poll0;
	close(q.fd);
	q.fd = -1;
}

void hostidle_detach(struct daemon *d)
{
	(void)d;
	if (!q.clients || --q.clients)
		return;
	release();
}

char *hostidle_report(struct daemon *d)
{
	release(); /* a daemon stopping with processes attached lets go of the request here */
	struct json_object *o = json_object_new_object();
	char buf[64];
	json_object_object_add(o, "cpuidle_driver",
			       read_line(CPUIDLE "/current_driver", buf, sizeof(buf)) ? NULL : json_object_new_string(buf));
	json_object_object_add(o, "cpuidle_governor",
			       read_line(CPUIDLE "/current_governor", buf, sizeof(buf)) &&
					       read_line(CPUIDLE "/current_governor_ro", buf, sizeof(buf))
				       ? NULL
				       : json_object_new_string(buf));
	json_object_object_add(o, "guest_halt_poll_ns",
			       read_line(HALT_POLL, buf, sizeof(buf)) ? NULL : json_object_new_int64(strtoll(buf, NULL, 10)));
	json_object_object_add(o, "polling_state", json_object_new_boolean(poll_entries() >= 0));
	json_object_object_add(o, "cpu_latency_qos_us", json_object_new_int64((int64_t)d->emu->cpu_latency_qos_us));
	json_object_object_add(o, "request_held", json_object_new_boolean(q.tried && !q.err));
	json_object_object_add(o, "request_error", q.err ? json_object_new_string(strerror(q.err)) : NULL);
	json_object_object_add(o, "limit_us_while_held", q.limit_us >= 0 ? json_object_new_int64(q.limit_us) : NULL);
	json_object_object_add(o, "poll_entries_while_held", json_object_new_int64((int64_t)q.polls));
	/* Charged CPU time can depend on host load when CPU time is charged and idle CPUs may halt. */
	bool dependent = daemon_virtual(d) && d->emu->cpu_scale > 0 && !(q.tried && !q.err && q.limit_us == 0) && !d->emu->keep_cores_awake;
	json_object_object_add(o, "charged_cpu_time_host_dependent", json_object_new_boolean(dependent));
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s) + 32;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "\"host_idle\": %s", s);
	json_object_put(o);
	return out;
}
