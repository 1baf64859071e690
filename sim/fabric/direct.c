/* The "direct" fabric: every endpoint hangs off one ideal, non-blocking crossbar.  Only the endpoint's
 * injection link and the destination's ejection link serialize traffic, so it models NIC-to-NIC
 * back-to-back runs and incast at a receiver, with no switch contention.  Used for NIC-level tests and when
 * the fabric is not the object of study. */
#include <stdlib.h>

#include "../mem.h"
#include "../model.h"
#include "../stats.h"
#include "../util.h"
#include "fabric.h"

struct direct_ep {
	fabric_deliver_fn fn;
	void *nic;
	simtime_t inject_free, eject_free;
	uint64_t *tx_bytes, *rx_bytes;
};

struct direct {
	struct fabric base;
	uint32_t n;
	struct direct_ep *ep;
	double ps_per_byte;
	uint32_t mtu, header;
	simtime_t latency;
};

static const struct param direct_params[] = {
	{ "endpoints", "count", 2, 1, FABRIC_MAX_NICS, "scenario size" },
	{ "link_gbps", "Gb/s", 200, 0.001, 1e6, "Slingshot 200 Gb/s links (cassini-reference: Fabric facts)" },
	{ "latency_ns", "ns", 350, 0, 1e9, "one Rosetta traversal, ~350 ns (cassini-reference: Fabric facts)" },
	{ "mtu_bytes", "bytes", 2048, 64, 1 << 20, "~2 KiB per packet implied by 186.4 Gb/s at 11.37 Mpkt/s" },
	{ "header_bytes", "bytes", 64, 0, 4096, "assumed per-packet header and framing overhead" },
};

static simtime_t wire_time(const struct direct *d, uint32_t bytes)
{
	uint64_t pkts = bytes ? (bytes + d->mtu - 1) / d->mtu : 1;
	return (simtime_t)(((double)bytes + (double)(pkts * d->header)) * d->ps_per_byte + 0.5);
}

static void direct_attach(struct fabric *f, uint32_t nic, fabric_deliver_fn fn, void *nic_obj)
{
	struct direct *d = (struct direct *)f;
	if (nic >= d->n)
		die("direct fabric: NIC %u attached beyond %u endpoints", nic, d->n);
	d->ep[nic].fn = fn;
	d->ep[nic].nic = nic_obj;
}

static void direct_deliver(struct sim *sim, void *obj, uint64_t arg)
{
	struct direct *d = obj;
	struct fabric_msg *m = (struct fabric_msg *)(uintptr_t)arg;
	d->ep[m->dst].fn(sim, d->ep[m->dst].nic, m);
}

static void direct_arrive(struct sim *sim, void *obj, uint64_t arg)
{
	struct direct *d = obj;
	struct fabric_msg *m = (struct fabric_msg *)(uintptr_t)arg;
	struct direct_ep *e = &d->ep[m->dst];
	/* The first packet reached the ejection link now; the message completes after its serialization. */
	simtime_t now = sim_now(sim), start = now > e->eject_free ? now : e->eject_free;
	simtime_t wt = wire_time(d, m->bytes);
	e->eject_free = start + wt;
	m->first_arrival = start;
	*e->rx_bytes += m->bytes;
	if (!e->fn)
		die("direct fabric: message to unattached NIC %u", m->dst);
	sim_schedule_at(sim, start + wt, direct_deliver, d, arg);
}

static void direct_send(struct sim *sim, struct fabric *f, struct fabric_msg *m)
{
	struct direct *d = (struct direct *)f;
	if (m->src >= d->n || m->dst >= d->n)
		die("direct fabric: message %u -> %u outside %u endpoints", m->src, m->dst, d->n);
	struct direct_ep *e = &d->ep[m->src];
	simtime_t now = sim_now(sim), start = now > e->inject_free ? now : e->inject_free;
	simtime_t wt = wire_time(d, m->bytes);
	e->inject_free = start + wt;
	m->sent = now;
	*e->tx_bytes += m->bytes;
	/* Cut-through: the head reaches the destination's ejection link one latency after it left. */
	sim_schedule_at(sim, start + d->latency, direct_arrive, d, (uint64_t)(uintptr_t)m);
}

static uint32_t direct_num(const struct fabric *f)
{
	return ((const struct direct *)f)->n;
}

static simtime_t direct_zero_load(const struct fabric *f, uint32_t src, uint32_t dst, uint32_t bytes)
{
	const struct direct *d = (const struct direct *)f;
	(void)src;
	(void)dst;
	return d->latency + wire_time(d, bytes);
}

static simtime_t direct_wire_time(const struct fabric *f, uint32_t bytes)
{
	return wire_time((const struct direct *)f, bytes);
}

static uint32_t direct_mtu_bytes(const struct fabric *f)
{
	return ((const struct direct *)f)->mtu;
}

static const struct fabric_ops direct_ops = { direct_attach, direct_send, direct_num, direct_zero_load,
					      direct_wire_time, direct_mtu_bytes, NULL, NULL };

void direct_memory(struct sim *sim, struct mem_report *r);
void direct_memory(struct sim *sim, struct mem_report *r)
{
	struct direct *d = (struct direct *)fabric_of(sim);
	mem_add(r, "fabric.endpoint", d->n, sizeof(*d) + (uint64_t)d->n * sizeof(*d->ep));
}

static void direct_free(void *p)
{
	struct direct *d = p;
	free(d->ep);
	free(d);
}

void fabric_direct_build(struct sim *sim, const struct cfg *c);
void fabric_direct_build(struct sim *sim, const struct cfg *c)
{
	struct direct *d = xcalloc(1, sizeof(*d));
	d->base.ops = &direct_ops;
	d->n = (uint32_t)param_get_u64(c, &direct_params[0]);
	d->ps_per_byte = 8000.0 / param_get(c, &direct_params[1]); /* 8 bits / (Gb/s) = 8000/Gbps ps */
	d->latency = (simtime_t)(param_get(c, &direct_params[2]) * 1000.0 + 0.5);
	d->mtu = (uint32_t)param_get_u64(c, &direct_params[3]);
	d->header = (uint32_t)param_get_u64(c, &direct_params[4]);
	d->ep = xcalloc(d->n, sizeof(*d->ep));
	for (uint32_t i = 0; i < d->n; i++) {
		d->ep[i].tx_bytes = stats_counter(sim_stats(sim), "fabric.ep.%u.tx_bytes", i);
		d->ep[i].rx_bytes = stats_counter(sim_stats(sim), "fabric.ep.%u.rx_bytes", i);
	}
	sim_world_set(sim, "fabric", d);
	sim_on_destroy(sim, direct_free, d);
}

const struct param *fabric_direct_params(size_t *n);
const struct param *fabric_direct_params(size_t *n)
{
	*n = ARRAY_SIZE(direct_params);
	return direct_params;
}
