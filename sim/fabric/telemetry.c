/* Dragonfly telemetry.
 *
 * Per output port and traffic class: bytes and packets sent (wire bytes, headers included), queue
 * high-water (bytes waiting in its VOQs) and stall time (time it held packets, with the link free, but had
 * no credits).  Names:
 *   fabric.sw.<switch>.port.<port>.tc.<tc>.{tx_bytes,tx_pkts,queue_hwm_bytes,stall_ps}
 *   fabric.ep.<endpoint>.tc.<tc>.{...}         (the endpoint's injection port)
 * Only the ports and classes that carried traffic appear, so a run's telemetry covers what it used (an
 * Aurora-size fabric does not register millions of idle counters).  The values live in the port records
 * (the hot path adds to memory it already holds, and registering names costs nothing per packet) and are
 * published to the stats registry when the fabric writes its summary, which precedes the stats in
 * metrics.json and telemetry.csv; df_tel_publish may be called again at any time to refresh them.  Fabric-wide counters, registered
 * at build: messages and packets, hops, route kinds (local / minimal / nonminimal / pinned), congestion
 * control feedback that throttled a source, reordered messages.
 */
#include "../stats.h"
#include "../util.h"
#include "dragonfly.h"

/* One counter block per port and class (8 bytes a counter, where names of their own cost ~120). */
static void publish(struct stats *st, const struct df_otc *t, const char *pfx)
{
	static const char *const names[] = { "tx_bytes", "tx_pkts", "queue_hwm_bytes", "stall_ps" };
	uint64_t *v = stats_counter_block(st, names, ARRAY_SIZE(names), "%s", pfx);
	v[0] = t->tx_bytes;
	v[1] = t->tx_pkts;
	v[2] = t->queue_hwm;
	v[3] = t->stall_ps;
}

void df_tel_publish(struct df *d)
{
	struct stats *st = sim_stats(d->sim);
	char pfx[96];
	for (uint32_t i = 0; i < d->nsw; i++) {
		const struct df_rsw *s = d->sw[i];
		for (uint32_t p = 0; s && p < d->radix; p++)
			for (uint32_t tc = 0; s->port[p] && tc < d->ntc; tc++) {
				if (!s->port[p]->tc[tc].used)
					continue;
				snprintf(pfx, sizeof(pfx), "fabric.sw.%u.port.%u.tc.%u", i, p, tc);
				publish(st, &s->port[p]->tc[tc], pfx);
			}
	}
	for (uint32_t i = 0; i < d->nep; i++)
		for (uint32_t tc = 0; d->ep[i] && tc < d->ntc; tc++) {
			if (!d->ep[i]->tx->tc[tc].used)
				continue;
			snprintf(pfx, sizeof(pfx), "fabric.ep.%u.tc.%u", i, tc);
			publish(st, &d->ep[i]->tx->tc[tc], pfx);
		}
}

void df_counters_init(struct df *d)
{
	struct stats *st = sim_stats(d->sim);
	struct df_counters *c = &d->c;
	c->msgs_sent = stats_counter(st, "fabric.msgs_sent");
	c->msgs_delivered = stats_counter(st, "fabric.msgs_delivered");
	c->pkts_injected = stats_counter(st, "fabric.pkts_injected");
	c->pkts_delivered = stats_counter(st, "fabric.pkts_delivered");
	c->bytes_delivered = stats_counter(st, "fabric.payload_bytes_delivered");
	c->hops = stats_counter(st, "fabric.switch_traversals");
	c->route_local = stats_counter(st, "fabric.route.local_pkts");
	c->route_minimal = stats_counter(st, "fabric.route.minimal_pkts");
	c->route_nonminimal = stats_counter(st, "fabric.route.nonminimal_pkts");
	c->route_pinned = stats_counter(st, "fabric.route.pinned_pkts");
	c->cc_marks = stats_counter(st, "fabric.cc.throttle_feedback");
	c->reordered = stats_counter(st, "fabric.reordered_msgs");
	c->reordered_ordered = stats_counter(st, "fabric.reordered_ordered_msgs");
	c->flows_created = stats_counter(st, "fabric.flows_created");
}

static const char *routing_name(enum df_routing r)
{
	return r == DF_ROUTE_MINIMAL ? "minimal" : r == DF_ROUTE_VALIANT ? "valiant" : "adaptive";
}

static const char *arrangement_name(enum df_arrangement a)
{
	return a == DF_ARR_ABSOLUTE ? "absolute" : a == DF_ARR_RELATIVE ? "relative" : "round_robin";
}

void df_summary(struct sim *sim, FILE *f)
{
	struct df *d = sim_world_get(sim, "fabric.dragonfly");
	df_flows_settle(d);
	df_tel_publish(d); /* the summary is written before the stats */
	fprintf(f, "{\"topology\": \"dragonfly\", \"preset\": \"%s\", \"machine_groups\": %u, \"groups\": %u, "
		   "\"switches_per_group\": %u, \"endpoints_per_switch\": %u, \"global_ports_per_switch\": %u, "
		   "\"global_links_per_pair\": %u, \"local_links_per_pair\": %u, \"global_arrangement\": \"%s\", "
		   "\"switches\": %u, \"endpoints\": %u,\n",
		d->preset, d->gm, d->g, d->a, d->p, d->h, d->lpp, d->llp, arrangement_name(d->arr), d->nsw, d->nep);
	fprintf(f, "    \"routing\": \"%s\", \"arbitration\": \"%s\", \"congestion_control\": %s, \"cc_scope\": \"%s\", "
		   "\"bulk_mode\": \"%s\", \"traffic_classes\": %u,\n",
		routing_name(d->routing), d->arb == DF_ARB_AGE ? "age" : "round_robin", d->cc ? "true" : "false",
		d->cc_fabric ? "fabric" : "endpoint",
		d->bulk == DF_BULK_CHUNK ? "chunk" : "packet", d->ntc);
	fprintf(f, "    \"switches_touched\": %llu, \"ports_touched\": %llu, \"endpoints_sending\": %llu, "
		   "\"packet_records\": %llu, \"packets_in_flight\": %llu, \"messages_in_flight\": %llu}",
		(unsigned long long)d->switches_alloc, (unsigned long long)d->ports_alloc,
		(unsigned long long)d->eps_alloc, (unsigned long long)d->pkts.allocated,
		(unsigned long long)d->pkts.live, (unsigned long long)d->msgs.live);
}
