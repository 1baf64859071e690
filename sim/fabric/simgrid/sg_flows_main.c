/* sg-flows: run bulk flows on a SimGrid 3.32 platform (C API, Debian's libsimgrid) and print when each
 * completes.  The independent reference of the fabric cross-check: SimGrid shares bandwidth between flows
 * with its fluid max-min model, where cxisim moves packets through credited switches.
 *
 *   sg-flows PLATFORM.xml FLOWS.txt [--cfg=...]
 * FLOWS.txt: one flow per line, "src dst bytes start_seconds" (hosts are n<src>, n<dst>).
 * Output: one line per flow, "flow i src dst bytes start_s end_s", then "wall_s W".
 */
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct flow {
	int src, dst;
	double bytes, start, end;
};

static struct flow *flows;

/* argv: name, flow index */
static void sender(int argc, char **argv)
{
	struct flow *f = &flows[atoi(argv[argc - 1])];
	char mb[32];
	snprintf(mb, sizeof(mb), "f%s", argv[argc - 1]);
	if (f->start > 0)
		sg_actor_sleep_until(f->start);
	sg_mailbox_put(sg_mailbox_by_name(mb), f, (long)f->bytes);
}

static void receiver(int argc, char **argv)
{
	struct flow *f = &flows[atoi(argv[argc - 1])];
	char mb[32];
	snprintf(mb, sizeof(mb), "f%s", argv[argc - 1]);
	sg_mailbox_get(sg_mailbox_by_name(mb));
	f->end = simgrid_get_clock();
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PLATFORM.xml FLOWS.txt [--cfg=...]\n", argv[0]);
		return 2;
	}
	FILE *in = fopen(argv[2], "r");
	if (!in) {
		perror(argv[2]);
		return 2;
	}
	int n = 0, cap = 64;
	flows = malloc(sizeof(*flows) * (size_t)cap);
	struct flow f;
	while (fscanf(in, "%d %d %lf %lf", &f.src, &f.dst, &f.bytes, &f.start) == 4) {
		if (n == cap)
			flows = realloc(flows, sizeof(*flows) * (size_t)(cap *= 2));
		f.end = -1;
		flows[n++] = f;
	}
	fclose(in);
	const char *platform = argv[1];
	int sargc = argc - 2;
	argv[2] = argv[0];
	simgrid_init(&sargc, argv + 2);
	simgrid_load_platform(platform);
	char host[32], idx[16];
	for (int i = 0; i < n; i++) {
		snprintf(idx, sizeof(idx), "%d", i);
		char *av[] = { "flow", idx, NULL };
		snprintf(host, sizeof(host), "n%d", flows[i].src);
		sg_actor_create("sender", sg_host_by_name(host), sender, 2, av);
		snprintf(host, sizeof(host), "n%d", flows[i].dst);
		sg_actor_create("receiver", sg_host_by_name(host), receiver, 2, av);
	}
	double t0 = wall();
	simgrid_run();
	double dt = wall() - t0;
	for (int i = 0; i < n; i++)
		printf("flow %d %d %d %.0f %.12g %.12g\n", i, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start,
		       flows[i].end);
	printf("wall_s %.6f\n", dt);
	free(flows);
	return 0;
}
