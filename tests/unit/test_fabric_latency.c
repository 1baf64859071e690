/* Zero-load latency through the fabric interface NICs use: one message alone in the fabric arrives exactly
 * at the analytic sum of its links' latencies, its switches' latencies and its serialization (virtual
 * cut-through: a message pays serialization once, all links running at the same rate), for every route
 * length from 1 to 6 switches.  The expected values are computed here from the parameters and the hop
 * structure of each route, not from the fabric's own functions. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../sim/fabric/fabric.h"
#include "../../sim/scenario.h"

/* Parameters given explicitly to the fabric below. */
#define LE 7000ULL   /* edge link, ps */
#define LL 13000ULL  /* local link */
#define LG 101000ULL /* global link */
#define SW 350000ULL /* switch */
#define MTU 2048u
#define HDR 64u
/* 200 Gb/s: 40 ps per byte */
static uint64_t ser(uint32_t bytes)
{
	uint64_t t = 0;
	for (uint32_t left = bytes;; left -= left < MTU ? left : MTU) {
		uint32_t pl = left < MTU ? left : MTU;
		t += 40ULL * (pl + HDR);
		if (left <= MTU)
			break;
	}
	return t;
}

static struct scenario *load(const char *preset, const char *routing)
{
	char path[64] = "/tmp/test_fabric_lat_XXXXXX", json[512];
	snprintf(json, sizeof(json),
		 "{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"%s\", \"routing\": \"%s\", "
		 "\"edge_latency_ns\": 7, \"local_latency_ns\": 13, \"global_latency_ns\": 101, "
		 "\"switch_latency_ns\": 350, \"link_gbps\": 200, \"mtu_bytes\": 2048, \"header_bytes\": 64}}",
		 preset, routing);
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	struct scenario *sc = scenario_load(path, NULL);
	unlink(path);
	return sc;
}

static simtime_t got;
static int ndelivered;

static void deliver(struct sim *sim, void *nic, struct fabric_msg *m)
{
	(void)nic;
	got = sim_now(sim) - m->sent;
	ndelivered++;
}

/* Send one message from src to dst into an empty fabric; return its one-way time. */
static simtime_t one(struct scenario *sc, uint32_t src, uint32_t dst, uint32_t bytes)
{
	struct fabric *f = fabric_of(sc->sim);
	fabric_attach(f, dst, deliver, NULL);
	struct fabric_msg m = { .src = src, .dst = dst, .bytes = bytes };
	ndelivered = 0;
	fabric_send(sc->sim, f, &m);
	sim_run(sc->sim);
	cr_assert_eq(ndelivered, 1);
	return got;
}

struct route {
	uint32_t src, dst, nsw, nlocal, nglobal;
	const char *what;
};

static void check(const char *preset, const char *routing, const struct route *r, int n, bool zero_load_fn)
{
	static const uint32_t sizes[] = { 0, 1, 2048, 5000 };
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			struct scenario *sc = load(preset, routing);
			uint64_t want = 2 * LE + r[i].nlocal * LL + r[i].nglobal * LG + r[i].nsw * SW + ser(sizes[k]);
			simtime_t t = one(sc, r[i].src, r[i].dst, sizes[k]);
			cr_assert_eq(t, want, "%s %s (%u switches), %u bytes: %llu ps, expected %llu", routing, r[i].what,
				     r[i].nsw, sizes[k], (unsigned long long)t, (unsigned long long)want);
			if (zero_load_fn)
				cr_assert_eq(fabric_zero_load_time(fabric_of(sc->sim), r[i].src, r[i].dst, sizes[k]), want);
			scenario_free(sc);
		}
}

/* small: 9 groups x 4 switches x 2 endpoints, one global link per pair, absolute arrangement (h = 2): the
 * link between groups 0 and 1 joins switch 0 (endpoints 0, 1) and switch 4 (endpoints 8, 9). */
Test(fabric_latency, minimal_routes_1_to_4_switches)
{
	static const struct route r[] = {
		{ 0, 1, 1, 0, 0, "same switch" },
		{ 0, 2, 2, 1, 0, "same group" },
		{ 0, 8, 2, 0, 1, "gateway to gateway" },
		{ 0, 10, 3, 1, 1, "gateway, global, local" },
		{ 2, 10, 4, 2, 1, "local, global, local" },
	};
	check("small", "minimal", r, 5, true);
	check("small", "adaptive", r, 5, true); /* an idle fabric: adaptive takes the minimal route */
}

/* tiny: 3 groups x 4 switches x 2 endpoints, h = 1: group 0's link to group 2 is on switch 1, group 2's
 * links to groups 0 and 1 on switches 8 and 9, group 1's link to group 2 on switch 5.  Valiant from group 0
 * to group 1 must go through group 2. */
Test(fabric_latency, valiant_routes_3_to_6_switches)
{
	static const struct route r[] = {
		{ 0, 2, 3, 2, 0, "same group, via a third switch" },
		{ 2, 10, 4, 1, 2, "gateway, g, l, g, entry switch is the destination" },
		{ 2, 8, 5, 2, 2, "gateway, g, l, g, l" },
		{ 0, 8, 6, 3, 2, "l, g, l, g, l" },
	};
	check("tiny", "valiant", r, 4, false);
}
