/* Fabric benchmark: build the Aurora preset (175 groups x 32 switches x 16 endpoints) from a scenario and
 * attach a NIC to every endpoint, as the NIC model does; print the build time and the process's peak RSS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../sim/fabric/fabric.h"
#include "../../sim/scenario.h"

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void deliver(struct sim *sim, void *nic, struct fabric_msg *m)
{
	(void)sim;
	(void)nic;
	(void)m;
}

/* VmHWM of this address space (getrusage's ru_maxrss would include the high-water mark of a parent that
 * forked us: Linux keeps it across execve). */
static long peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	const char *preset = argc > 1 ? argv[1] : "aurora";
	char path[] = "/tmp/bench_fabric_XXXXXX", json[256];
	snprintf(json, sizeof(json), "{\"name\": \"bench\", \"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"%s\"}}",
		 preset);
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json))
		return 1;
	close(fd);
	double t0 = wall();
	struct scenario *sc = scenario_load(path, NULL);
	struct fabric *f = fabric_of(sc->sim);
	uint32_t n = fabric_num_endpoints(f);
	for (uint32_t i = 0; i < n; i++)
		fabric_attach(f, i, deliver, NULL);
	double dt = wall() - t0;
	unlink(path);
	printf("fabric build: preset=%s endpoints=%u attached=%u build=%.4f s peak_rss=%.1f MB\n", preset, n, n, dt,
	       (double)peak_rss_kb() / 1024.0);
	scenario_free(sc);
	return 0;
}
