/* The dragonfly topology: presets, group subsets, validation, port arithmetic and zero-load times.
 *
 * A dragonfly has g groups of a switches; each switch serves p endpoints, has (a-1) x llp local ports (all
 * to all inside its group) and h global ports.  Each pair of groups is joined by lpp global links.  The
 * global-link arrangement maps "the r-th link from group G to group H" to a switch and port of G:
 *   absolute     peers in group-id order, slots filled switch by switch (h consecutive slots per switch);
 *   relative     peers in order of offset (H - G) mod g (the "palm tree"), switch by switch;
 *   round_robin  peers in group-id order, slots striped across the switches, so the lpp parallel links of
 *                a pair land on different switches (more minimal-path diversity).
 * Both ends compute the same link from their own side, so no table is stored: a subset of groups keeps
 * exactly the links the full machine has between those groups, and ports towards absent groups are dark.
 */
#include "dragonfly.h"

#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "../model.h"
#include "../stats.h"
#include "../util.h"

/* Parameter rows.  Topology rows' defaults are those of the "small" preset; a preset replaces them. */
static const struct param df_params[] = {
	{ "groups", "count", 9, 1, 65535, "preset (aurora: 166 compute + 8 storage + 1 service; cassini-reference)" },
	{ "switches_per_group", "count", 4, 1, DF_MAX_RADIX, "preset (aurora and frontier: 32; cassini-reference)" },
	{ "endpoints_per_switch", "count", 2, 1, DF_MAX_RADIX, "preset (aurora: 16; cassini-reference)" },
	{ "global_ports_per_switch", "count", 2, 0, DF_MAX_RADIX, "preset (aurora: 11 = ceil(174 x 2 / 32))" },
	{ "global_links_per_pair", "count", 1, 0, DF_MAX_RADIX, "preset (aurora: 2, frontier: 4; cassini-reference)" },
	{ "local_links_per_pair", "count", 1, 1, DF_MAX_RADIX, "preset; all-to-all inside a group" },
	{ "ports", "count", 64, 2, DF_MAX_RADIX, "Rosetta has 64 ports (cassini-reference: Fabric facts)" },
	{ "subset_groups", "count", 0, 0, 65535, "scenario: take the first N groups of the preset (0 = all)" },
	{ "link_gbps", "Gb/s", 200, 0.001, 1e6, "Slingshot 200 Gb/s links (cassini-reference: Fabric facts)" },
	{ "mtu_bytes", "bytes", 2048, 256, 65536, "~2 KiB per packet implied by 186.4 Gb/s at 11.37 Mpkt/s" },
	{ "header_bytes", "bytes", 64, 0, 4096, "assumed per-packet header and framing overhead" },
	{ "switch_latency_ns", "ns", 350, 0, 1e6, "Rosetta: about 350 ns per switch (cassini-reference)" },
	{ "edge_latency_ns", "ns", 10, 0, 1e6, "assumed: ~2 m NIC-to-switch copper cable at 5 ns/m" },
	{ "local_latency_ns", "ns", 15, 0, 1e6, "assumed: ~3 m in-group electrical cable" },
	{ "global_latency_ns", "ns", 100, 0, 1e6, "assumed: ~20 m optical cable between groups" },
	{ "traffic_classes", "count", 4, 1, DF_MAX_TC, "assumed: libfabric's four FI_TC classes in use" },
	{ "buffer_bytes", "bytes", 131072, 1024, 1 << 30, "assumed input buffer per port and traffic class" },
	{ "adaptive_candidates", "count", 4, 2, 8, "up to 4 minimal and non-minimal candidates (cassini-reference)" },
	{ "ugal_bias_bytes", "bytes", 4224, 0, 1 << 30, "assumed bias toward minimal: two full packets" },
	{ "cc_threshold_bytes", "bytes", 16384, 0, 1 << 30, "assumed endpoint-queue depth congestion control aims at" },
	{ "cc_max_window_bytes", "bytes", 262144, 4096, 1 << 30, "assumed in-flight cap per pair, above the ~100 KB BDP" },
	{ "cc_interval_ns", "ns", 4000, 10, 1e9, "assumed: about one inter-group round trip (~3 us) per rate update" },
	{ "cc_gain", "factor", 0.25, 0.01, 1, "assumed damping of the fair-rate update (stable with 20 flows, 8 seeds)" },
	{ "cc_drain", "intervals", 4, 0.1, 1e6, "assumed: drain the queue above threshold within this many intervals" },
	{ "cc_min_gbps", "Gb/s", 0.05, 0.0001, 1e6, "assumed floor of a throttled pair's rate" },
	{ "chunk_bytes", "bytes", 8192, 256, 4 << 20, "coarse bulk: payload per chunk train; 8 KiB stays within 3% of packets" },
	{ "chunk_threshold_bytes", "bytes", 65536, 0, 1ULL << 32, "coarse bulk: smallest message sent in chunks" },
};

const struct param *fabric_dragonfly_params(size_t *n);
const struct param *fabric_dragonfly_params(size_t *n)
{
	*n = ARRAY_SIZE(df_params);
	return df_params;
}

static const struct param *row(const char *key)
{
	return param_find(df_params, ARRAY_SIZE(df_params), key);
}

struct df_preset {
	const char *name;
	uint32_t g, a, p, h, lpp;
	enum df_arrangement arr;
};

/* aurora: 10,624 nodes x 8 NICs fill 166 compute groups of 32 x 16 endpoints; 175 groups x 32 = 5,600
 * switches.  frontier: 9,408 nodes x 4 NICs fill 73.5 groups of 128 nodes; 74 groups, 4 links per pair. */
static const struct df_preset presets[] = {
	{ "aurora", 175, 32, 16, 11, 2, DF_ARR_ROUND_ROBIN },
	{ "frontier", 74, 32, 16, 10, 4, DF_ARR_ROUND_ROBIN },
	{ "medium", 17, 8, 4, 2, 1, DF_ARR_ABSOLUTE },
	{ "small", 9, 4, 2, 2, 1, DF_ARR_ABSOLUTE },
	{ "tiny", 3, 4, 2, 1, 1, DF_ARR_ABSOLUTE },
};

/* ---- topology arithmetic ---- */

/* Position of machine group H in machine group G's list of peers. */
static uint32_t peer_index(const struct df *d, uint32_t G, uint32_t H)
{
	if (d->arr == DF_ARR_RELATIVE)
		return (H + d->gm - G) % d->gm - 1;
	return H < G ? H : H - 1;
}

static uint32_t peer_of_index(const struct df *d, uint32_t G, uint32_t ph)
{
	if (d->arr == DF_ARR_RELATIVE)
		return (G + ph + 1) % d->gm;
	return ph < G ? ph : ph + 1;
}

static void slot_place(const struct df *d, uint32_t slot, uint32_t *sw_idx, uint32_t *port)
{
	if (d->arr == DF_ARR_ROUND_ROBIN) {
		*sw_idx = slot % d->a;
		*port = d->global0 + slot / d->a;
	} else {
		*sw_idx = slot / d->h;
		*port = d->global0 + slot % d->h;
	}
}

void df_gateway_arith(const struct df *d, uint32_t G, uint32_t T, uint32_t r, uint32_t *sw_idx, uint32_t *port)
{
	slot_place(d, peer_index(d, d->gid[G], d->gid[T]) * d->lpp + r, sw_idx, port);
}

/* Routing asks for gateways at every hop; a table of (switch, port) per group pair and link saves the
 * divisions (122 KB for Aurora).  Huge custom fabrics fall back to the arithmetic. */
static void build_gateway_table(struct df *d)
{
	size_t n = (size_t)d->g * d->g * d->lpp;
	if (n > (1u << 22))
		return;
	uint8_t *t = xcalloc(n ? n * 2 : 1, 1);
	for (uint32_t G = 0; G < d->g; G++)
		for (uint32_t T = 0; T < d->g; T++)
			for (uint32_t r = 0; T != G && r < d->lpp; r++) {
				uint32_t sw, port;
				slot_place(d, peer_index(d, d->gid[G], d->gid[T]) * d->lpp + r, &sw, &port);
				t[((size_t)(G * d->g + T) * d->lpp + r) * 2] = (uint8_t)sw;
				t[((size_t)(G * d->g + T) * d->lpp + r) * 2 + 1] = (uint8_t)port;
			}
	d->gwtab = t;
}

bool df_port_peer(const struct df *d, uint32_t sw, uint32_t port, uint32_t *peer_sw, uint32_t *peer_port)
{
	uint32_t G = df_group_of_sw(d, sw), si = df_idx_of_sw(d, sw);
	if (port < d->local0)
		return false; /* an endpoint port */
	if (port < d->global0) {
		uint32_t k = port - d->local0, pj = k / d->llp, r = k % d->llp;
		uint32_t sj = pj < si ? pj : pj + 1;
		*peer_sw = G * d->a + sj;
		*peer_port = df_local_port(d, sj, si, r);
		return true;
	}
	uint32_t k = port - d->global0;
	if (k >= d->h)
		return false;
	uint32_t slot = d->arr == DF_ARR_ROUND_ROBIN ? k * d->a + si : si * d->h + k;
	if (slot >= (d->gm - 1) * d->lpp)
		return false;
	uint32_t Hm = peer_of_index(d, d->gid[G], slot / d->lpp);
	int32_t T = d->glocal[Hm];
	if (T < 0)
		return false; /* that group is not part of this subset */
	uint32_t tsw, tport;
	df_gateway(d, (uint32_t)T, G, slot % d->lpp, &tsw, &tport);
	*peer_sw = (uint32_t)T * d->a + tsw;
	*peer_port = tport;
	return true;
}

uint32_t df_unit_wire(const struct df *d, uint32_t payload)
{
	uint32_t npk = payload ? (payload + d->mtu - 1) / d->mtu : 1;
	return payload + npk * d->hdr;
}

void df_min_hops(const struct df *d, uint32_t src, uint32_t dst, uint32_t *nl, uint32_t *ng, uint32_t *nsw)
{
	uint32_t ssw = src / d->p, dsw = dst / d->p;
	uint32_t G = df_group_of_sw(d, ssw), Gd = df_group_of_sw(d, dsw);
	*ng = 0;
	if (ssw == dsw) {
		*nl = 0;
		*nsw = 1;
		return;
	}
	if (G == Gd) {
		*nl = 1;
		*nsw = 2;
		return;
	}
	uint32_t best = UINT32_MAX;
	for (uint32_t r = 0; r < d->lpp; r++) {
		uint32_t gw, ent, port;
		df_gateway(d, G, Gd, r, &gw, &port);
		df_gateway(d, Gd, G, r, &ent, &port);
		uint32_t l = (gw != df_idx_of_sw(d, ssw)) + (ent != df_idx_of_sw(d, dsw));
		if (l < best)
			best = l;
	}
	*nl = best;
	*ng = 1;
	*nsw = best + 2;
}

uint32_t df_min_route(const struct df *d, uint32_t src, uint32_t dst, uint32_t *sw, uint32_t *port, uint32_t max)
{
	uint32_t ssw = src / d->p, dsw = dst / d->p, G = df_group_of_sw(d, ssw), Gd = df_group_of_sw(d, dsw);
	struct df_pkt pkt = { .dgrp = (uint16_t)Gd, .didx = (uint8_t)df_idx_of_sw(d, dsw), .dport = (uint8_t)(dst % d->p),
			      .via = DF_NONE };
	if (G != Gd && d->lpp > 1) {
		/* the parallel link with the fewest local hops, as df_min_hops chooses it */
		uint32_t best = UINT32_MAX, rbest = 0;
		for (uint32_t r = 0; r < d->lpp; r++) {
			uint32_t gw, ent, pt;
			df_gateway(d, G, Gd, r, &gw, &pt);
			df_gateway(d, Gd, G, r, &ent, &pt);
			uint32_t l = (gw != df_idx_of_sw(d, ssw)) + (ent != df_idx_of_sw(d, dsw));
			if (l < best) {
				best = l;
				rbest = r;
			}
		}
		while (df_pick(df_mix(pkt.sel, 0), d->lpp) != rbest)
			pkt.sel++;
	}
	uint32_t n = 0;
	for (uint32_t s = ssw; n < max;) {
		struct df_rsw at = { .id = s, .group = df_group_of_sw(d, s), .idx = df_idx_of_sw(d, s) };
		uint32_t out = df_next_port(d, &at, &pkt), psw, pport;
		sw[n] = s;
		port[n++] = out;
		if (out < d->local0 || !df_port_peer(d, s, out, &psw, &pport))
			break;
		pkt.hops++;
		pkt.ghops += out >= d->global0;
		s = psw;
	}
	return n;
}

simtime_t df_path_latency(const struct df *d, uint32_t nl, uint32_t ng, uint32_t nsw)
{
	return 2 * d->lat_edge + nl * d->lat_local + ng * d->lat_global + nsw * d->sw_lat;
}

/* ---- fabric ops ---- */

static void df_attach(struct fabric *f, uint32_t nic, fabric_deliver_fn fn, void *nic_obj)
{
	struct df *d = (struct df *)f;
	if (nic >= d->nep)
		die("dragonfly fabric: NIC %u attached beyond %u endpoints", nic, d->nep);
	d->att[nic].fn = fn;
	d->att[nic].nic = nic_obj;
}

static uint32_t df_num(const struct fabric *f)
{
	return ((const struct df *)f)->nep;
}

static simtime_t df_wire_time(const struct fabric *f, uint32_t bytes)
{
	const struct df *d = (const struct df *)f;
	uint32_t full = bytes / d->mtu, rest = bytes % d->mtu;
	simtime_t ser = (simtime_t)full * df_ser(d, d->mtu + d->hdr);
	if (rest || !bytes)
		ser += df_ser(d, rest + d->hdr);
	return ser;
}

static simtime_t df_zero_load(const struct fabric *f, uint32_t src, uint32_t dst, uint32_t bytes)
{
	const struct df *d = (const struct df *)f;
	uint32_t nl, ng, nsw;
	df_min_hops(d, src, dst, &nl, &ng, &nsw);
	return df_path_latency(d, nl, ng, nsw) + df_wire_time(f, bytes);
}

static uint32_t df_mtu_bytes(const struct fabric *f)
{
	return ((const struct df *)f)->mtu;
}

static void df_deliver_prefetch(struct fabric *f, fabric_deliver_fn fn, fabric_deliver_prefetch_fn pf)
{
	struct df *d = (struct df *)f;
	d->rx_pf_fn = fn;
	d->rx_pf = pf;
}

static const struct fabric_ops df_ops = { df_attach, df_send, df_num, df_zero_load, df_wire_time, df_mtu_bytes,
					  df_deliver_prefetch, df_send_prefetch };

/* ---- build ---- */

/* ---- memory accounting ---- */

static uint64_t oport_extra(const struct df *d, const struct df_oport *op)
{
	uint64_t b = op->cr ? (uint64_t)(op->cr_mask + 1) * sizeof(*op->cr) : 0;
	for (uint32_t t = 0; t < d->ntc; t++)
		b += (uint64_t)op->tc[t].cap * sizeof(*op->tc[t].vq);
	return b;
}

void df_memory(struct sim *sim, struct mem_report *r)
{
	struct df *d = sim_world_get(sim, "fabric.dragonfly");
	uint64_t sw = 0, ep = 0;
	for (uint32_t i = 0; i < d->nsw; i++) {
		const struct df_rsw *s = d->sw[i];
		if (!s)
			continue;
		sw += sizeof(*s) + d->radix * sizeof(s->port[0]);
		for (uint32_t p = 0; p < d->radix; p++)
			if (s->port[p])
				sw += ((d->port_bytes + 63) & ~(uint64_t)63) + oport_extra(d, s->port[p]);
	}
	for (uint32_t i = 0; i < d->nep; i++) {
		const struct df_ep *e = d->ep[i];
		if (e)
			ep += ((((sizeof(*e) + 63) & ~(uint64_t)63) + d->port_bytes + 63) & ~(uint64_t)63) +
			      oport_extra(d, e->tx) + (uint64_t)(e->ft_mask + 1) * sizeof(*e->ft);
	}
	uint64_t core = sizeof(*d) + (uint64_t)d->nep * (sizeof(*d->att) + sizeof(*d->ep)) +
			(uint64_t)d->nsw * sizeof(*d->sw) + (uint64_t)d->gm * sizeof(*d->glocal) +
			(uint64_t)d->g * sizeof(*d->gid);
	if (d->gwtab)
		core += (uint64_t)d->g * d->g * d->lpp * 2;
	core += arena_bytes(&d->recs) - d->recs.used; /* the arena's unused tail and chunk table */
	mem_add(r, "fabric.switch", d->switches_alloc, sw);
	mem_unit(r, "switch", d->switches_alloc, sw);
	mem_add(r, "fabric.endpoint", d->eps_alloc, ep);
	mem_add(r, "fabric.core", 1, core);
	mem_add(r, "fabric.records", d->pkts.allocated + d->msgs.allocated + d->flows.allocated,
		pool_bytes(&d->pkts) + pool_bytes(&d->msgs) + pool_bytes(&d->flows) + pool_bytes(&d->fbs) +
			pool_bytes(&d->acks));
}

static void df_free(void *obj)
{
	struct df *d = obj;
	for (uint32_t i = 0; i < d->nsw; i++) {
		struct df_rsw *s = d->sw[i];
		if (!s)
			continue;
		for (uint32_t p = 0; p < d->radix; p++)
			df_oport_release(d, s->port[p]);
	}
	for (uint32_t i = 0; i < d->nep; i++) {
		struct df_ep *e = d->ep[i];
		if (!e)
			continue;
		df_oport_release(d, e->tx);
		free(e->ft);
	}
	arena_free(&d->recs);
	pool_free_all(&d->pkts);
	pool_free_all(&d->msgs);
	pool_free_all(&d->flows);
	pool_free_all(&d->fbs);
	pool_free_all(&d->acks);
	free(d->sw);
	free(d->ep);
	free(d->att);
	free(d->gid);
	free(d->glocal);
	free(d->gwtab);
	free(d);
}

static uint32_t topo_u32(const struct cfg *c, const char *key, uint32_t def)
{
	const struct param *p = row(key);
	return (uint32_t)cfg_u64(c, key, def, (uint64_t)p->min, (uint64_t)p->max);
}

static void read_topology(struct df *d, const struct cfg *c)
{
	static const char *const preset_names[] = { "aurora", "frontier", "medium", "small", "tiny", NULL };
	static const char *const arrangements[] = { "absolute", "relative", "round_robin", NULL };
	int pi = cfg_enum(c, "preset", 3, preset_names);
	const struct df_preset *pr = &presets[pi];
	d->preset = pr->name;
	d->gm = topo_u32(c, "groups", pr->g);
	d->a = topo_u32(c, "switches_per_group", pr->a);
	d->p = topo_u32(c, "endpoints_per_switch", pr->p);
	d->h = topo_u32(c, "global_ports_per_switch", pr->h);
	d->lpp = topo_u32(c, "global_links_per_pair", pr->lpp);
	d->llp = topo_u32(c, "local_links_per_pair", 1);
	d->radix = topo_u32(c, "ports", 64);
	d->arr = cfg_enum(c, "global_arrangement", pr->arr, arrangements);

	uint64_t ports = (uint64_t)d->p + (uint64_t)(d->a - 1) * d->llp + d->h;
	if (ports > d->radix)
		cfg_fail(c, d->h ? "global_ports_per_switch" : "endpoints_per_switch",
			 "a switch needs %u endpoint + %u local (%u switches x %u links) + %u global = %llu ports, "
			 "but has only %u ('ports')",
			 d->p, (d->a - 1) * d->llp, d->a - 1, d->llp, d->h, (unsigned long long)ports, d->radix);
	if (d->gm > 1 && d->lpp == 0)
		cfg_fail(c, "global_links_per_pair", "0 links between each pair of groups leaves %u groups disconnected",
			 d->gm);
	uint64_t need = (uint64_t)(d->gm - 1) * d->lpp, have = (uint64_t)d->a * d->h;
	if (need > have)
		cfg_fail(c, "global_links_per_pair",
			 "%u groups x %u links per pair need %llu global ports per group, but %u switches x %u "
			 "global ports ('global_ports_per_switch') give only %llu",
			 d->gm, d->lpp, (unsigned long long)need, d->a, d->h, (unsigned long long)have);
	d->local0 = d->p;
	d->global0 = d->p + (d->a - 1) * d->llp;
}

/* Validates the subset; the arrays are filled by fill_subset once every field has been read, so that a
 * configuration error (which may unwind through a test's error hook) leaves nothing allocated. */
static void read_subset(struct df *d, const struct cfg *c)
{
	uint32_t first_n = topo_u32(c, "subset_groups", 0);
	int nids = cfg_array_len(c, "subset_group_ids");
	if (first_n && nids)
		cfg_fail(c, "subset_group_ids", "give either subset_groups or subset_group_ids, not both");
	if (first_n > d->gm)
		cfg_fail(c, "subset_groups", "%u groups asked of a machine with %u", first_n, d->gm);
	d->g = nids ? (uint32_t)nids : first_n ? first_n : d->gm;
	uint64_t seen[65536 / 64] = { 0 };
	for (int i = 0; i < nids; i++) {
		uint32_t id = (uint32_t)cfg_array_u64(c, "subset_group_ids", i, 0, d->gm - 1);
		if (seen[id / 64] >> (id % 64) & 1) {
			char key[64];
			snprintf(key, sizeof(key), "subset_group_ids[%d]", i);
			cfg_fail(c, key, "group %u listed twice", id);
		}
		seen[id / 64] |= 1ULL << (id % 64);
	}
	d->nsw = d->g * d->a;
	uint64_t nep = (uint64_t)d->nsw * d->p;
	if (nep > FABRIC_MAX_NICS)
		cfg_fail(c, d->g == d->gm ? "groups" : "subset_groups",
			 "%llu endpoints exceed the 20-bit NIC address space (%u)", (unsigned long long)nep,
			 FABRIC_MAX_NICS);
	d->nep = (uint32_t)nep;
}

static void fill_subset(struct df *d, const struct cfg *c)
{
	int nids = cfg_array_len(c, "subset_group_ids");
	d->glocal = xmalloc(d->gm * sizeof(*d->glocal));
	for (uint32_t i = 0; i < d->gm; i++)
		d->glocal[i] = -1;
	d->gid = xmalloc(d->g * sizeof(*d->gid));
	for (uint32_t i = 0; i < d->g; i++) {
		d->gid[i] = nids ? (uint32_t)cfg_array_u64(c, "subset_group_ids", (int)i, 0, d->gm - 1) : i;
		d->glocal[d->gid[i]] = (int32_t)i;
	}
}

static void read_links(struct df *d, const struct cfg *c)
{
	d->line_gbps = param_get(c, row("link_gbps"));
	d->ps_per_byte = 8000.0 / d->line_gbps;
	d->mtu = (uint32_t)param_get_u64(c, row("mtu_bytes"));
	d->hdr = (uint32_t)param_get_u64(c, row("header_bytes"));
	d->sw_lat = cfg_time_ps(c, "switch_latency_ns", row("switch_latency_ns")->def, 1000, 1e6);
	d->lat_edge = cfg_time_ps(c, "edge_latency_ns", row("edge_latency_ns")->def, 1000, 1e6);
	d->lat_local = cfg_time_ps(c, "local_latency_ns", row("local_latency_ns")->def, 1000, 1e6);
	d->lat_global = cfg_time_ps(c, "global_latency_ns", row("global_latency_ns")->def, 1000, 1e6);
}

static void read_switch(struct df *d, const struct cfg *c)
{
	static const char *const routings[] = { "minimal", "valiant", "adaptive", NULL };
	static const char *const arbs[] = { "age", "round_robin", NULL };
	static const char *const bulks[] = { "packet", "chunk", NULL };
	d->routing = cfg_enum(c, "routing", DF_ROUTE_ADAPTIVE, routings);
	d->arb = cfg_enum(c, "arbitration", DF_ARB_AGE, arbs);
	d->candidates = (uint32_t)param_get_u64(c, row("adaptive_candidates"));
	d->ugal_bias = (uint32_t)param_get_u64(c, row("ugal_bias_bytes"));
	if (d->routing == DF_ROUTE_VALIANT && (d->g == 2 || (d->g == 1 && d->a < 3)))
		cfg_fail(c, "routing", "valiant needs an intermediate group (3 or more groups) or, in one group, "
				       "an intermediate switch (3 or more switches); this fabric has %u groups of %u",
			 d->g, d->a);
	d->bulk = cfg_enum(c, "bulk_mode", DF_BULK_PACKET, bulks);
	d->chunk = (uint32_t)param_get_u64(c, row("chunk_bytes"));
	d->chunk_threshold = (uint32_t)param_get_u64(c, row("chunk_threshold_bytes"));
	uint32_t unit = d->bulk == DF_BULK_CHUNK ? df_unit_wire(d, d->chunk) : d->mtu + d->hdr;
	d->resv = unit;

	d->ntc = (uint32_t)param_get_u64(c, row("traffic_classes"));
	uint32_t buf = (uint32_t)param_get_u64(c, row("buffer_bytes"));
	uint32_t nvc = d->routing == DF_ROUTE_MINIMAL ? 3 : DF_MAX_VC;
	if (buf < (nvc + 1) * unit)
		cfg_fail(c, "buffer_bytes",
			 "%u bytes cannot hold one %u-byte unit per VC (%u VCs) plus one shared unit; need at least %u",
			 buf, unit, nvc, (nvc + 1) * unit);
	int nshares = cfg_array_len(c, "tc_shares");
	if (nshares && (uint32_t)nshares != d->ntc)
		cfg_fail(c, "tc_shares", "%d shares given for %u traffic classes", nshares, d->ntc);
	for (uint32_t t = 0; t < d->ntc; t++) {
		uint64_t share = nshares ? cfg_array_u64(c, "tc_shares", (int)t, 1, 1000000) : 1;
		d->buf[t] = buf;
		d->wfq_inc[t] = 1000000 / share; /* virtual time per byte: classes get bytes in ratio of shares */
	}

	static const char *const scopes[] = { "endpoint", "fabric", NULL };
	d->cc = cfg_bool(c, "congestion_control", true);
	d->cc_fabric = cfg_enum(c, "cc_scope", 0, scopes) == 1;
	d->cc_threshold = (uint32_t)param_get_u64(c, row("cc_threshold_bytes"));
	d->cc_max_win = (uint32_t)param_get_u64(c, row("cc_max_window_bytes"));
	d->cc_interval = cfg_time_ps(c, "cc_interval_ns", row("cc_interval_ns")->def, 1000, row("cc_interval_ns")->max);
	d->cc_gain = param_get(c, row("cc_gain"));
	d->cc_drain = param_get(c, row("cc_drain"));
	d->cc_min_gbps = param_get(c, row("cc_min_gbps"));
	if (d->cc_min_gbps >= d->line_gbps)
		cfg_fail(c, "cc_min_gbps", "%g is not below the link rate (%g Gb/s)", d->cc_min_gbps, d->line_gbps);
}

void fabric_dragonfly_build(struct sim *sim, const struct cfg *c);
void fabric_dragonfly_build(struct sim *sim, const struct cfg *c)
{
	struct df tmp = { 0 };
	read_topology(&tmp, c);
	read_subset(&tmp, c);
	read_links(&tmp, c);
	read_switch(&tmp, c);
	/* Everything is valid: only now allocate. */
	struct df *d = xmalloc(sizeof(*d));
	*d = tmp;
	d->base.ops = &df_ops;
	d->sim = sim;
	fill_subset(d, c);
	build_gateway_table(d);

	d->att = xcalloc(d->nep, sizeof(*d->att));
	d->ep = xcalloc(d->nep, sizeof(*d->ep));
	d->sw = xcalloc(d->nsw, sizeof(*d->sw));
	d->port_bytes = sizeof(struct df_oport) + d->ntc * sizeof(struct df_otc); /* multiples of 64 */
	pool_init(&d->pkts, sizeof(struct df_pkt), 4096);
	pool_init(&d->msgs, sizeof(struct df_msg), 1024);
	pool_init(&d->flows, sizeof(struct df_flow), 1024);
	pool_init(&d->fbs, sizeof(struct df_fb), 1024);
	pool_init(&d->acks, sizeof(struct df_ack), 1024);
	df_counters_init(d);
	sim_world_set(sim, "fabric", d);
	sim_world_set(sim, "fabric.dragonfly", d);
	df_switch_prefetch_hooks(sim);
	df_endpoint_prefetch_hooks(sim);
	sim_on_destroy(sim, df_free, d);
}
