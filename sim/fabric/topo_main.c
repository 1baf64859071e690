/* cxisim-fabric-topo: print a scenario's dragonfly as JSON (its links and the zero-load route of every
 * endpoint pair), for rendering into other simulators' platform descriptions (the SimGrid cross-check
 * renders it with sim/fabric/simgrid/platform.xml.j2).
 *
 * Links: every endpoint has an injection link "e<N>i" and an ejection link "e<N>o"; every switch-to-switch
 * cable is "s<S>p<P>" named after its end with the lower (switch, port), full duplex, "UP" leaving that
 * end.  Latencies fold each switch's traversal into the link that enters it, so a route's latencies add
 * up to the fabric's zero-load latency; bandwidth is the payload rate (link rate x mtu / (mtu + header)).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../scenario.h"
#include "dragonfly.h"

static void print_link(FILE *f, bool *first, const char *id, double lat_ns, const char *kind)
{
	fprintf(f, "%s\n    {\"id\": \"%s\", \"latency_ns\": %.3f, \"kind\": \"%s\"}", *first ? "" : ",", id, lat_ns, kind);
	*first = false;
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "--config")) {
		fprintf(stderr, "usage: cxisim-fabric-topo --config SCENARIO.json\n");
		return 2;
	}
	struct scenario *sc = scenario_load(argv[2], NULL);
	struct df *d = sim_world_get(sc->sim, "fabric.dragonfly");
	if (!d) {
		fprintf(stderr, "%s: fabric.topology is not dragonfly\n", argv[2]);
		return 2;
	}
	double sw_ns = (double)d->sw_lat * 1e-3;
	printf("{\"endpoints\": %u, \"switches\": %u, \"payload_gbps\": %.9g,\n \"links\": [", d->nep, d->nsw,
	       8000.0 / d->ps_per_byte * d->mtu / (d->mtu + d->hdr));
	bool first = true;
	char id[64];
	for (uint32_t e = 0; e < d->nep; e++) {
		snprintf(id, sizeof(id), "e%ui", e);
		print_link(stdout, &first, id, (double)d->lat_edge * 1e-3 + sw_ns, "inject");
		snprintf(id, sizeof(id), "e%uo", e);
		print_link(stdout, &first, id, (double)d->lat_edge * 1e-3, "eject");
	}
	for (uint32_t s = 0; s < d->nsw; s++)
		for (uint32_t p = d->local0; p < d->global0 + d->h; p++) {
			uint32_t ps, pp;
			if (!df_port_peer(d, s, p, &ps, &pp) || ps < s || (ps == s && pp < p))
				continue;
			bool global = p >= d->global0;
			snprintf(id, sizeof(id), "s%up%u", s, p);
			print_link(stdout, &first, id,
				   (double)(global ? d->lat_global : d->lat_local) * 1e-3 + sw_ns, global ? "global" : "local");
		}
	printf("\n ],\n \"routes\": [");
	uint32_t sw[16], port[16];
	first = true;
	for (uint32_t a = 0; a < d->nep; a++)
		for (uint32_t b = 0; b < d->nep; b++) {
			if (a == b)
				continue;
			uint32_t n = df_min_route(d, a, b, sw, port, 16);
			printf("%s\n  {\"src\": %u, \"dst\": %u, \"links\": [[\"e%ui\", null]", first ? "" : ",", a, b, a);
			first = false;
			for (uint32_t i = 0; i + 1 < n; i++) {
				uint32_t ps, pp;
				df_port_peer(d, sw[i], port[i], &ps, &pp);
				bool up = sw[i] < ps || (sw[i] == ps && port[i] < pp);
				printf(", [\"s%up%u\", \"%s\"]", up ? sw[i] : ps, up ? port[i] : pp, up ? "UP" : "DOWN");
			}
			printf(", [\"e%uo\", null]]}", b);
		}
	printf("\n ]}\n");
	scenario_free(sc);
	return 0;
}
