/* Internal state of the dragonfly fabric, shared by its parts:
 *   dragonfly.c  topology (presets, subsets, port arithmetic), configuration, build, zero-load times
 *   routing.c    minimal / Valiant / UGAL-like route choice and the next hop at every switch
 *   endpoint.c   the NIC edge: packetization, per-(src, dst, tc) flows, injection, acks, endpoint CC
 *   ../switch/rosetta.c  the Rosetta switch: VOQs, credits, traffic-class arbitration, links
 *   telemetry.c  lazily registered per-port counters and the metrics.json summary
 *
 * Topology is pure arithmetic (no per-port tables), so the Aurora preset costs almost nothing to build.
 * Dynamic state (switches, output ports, endpoints' flow tables) is allocated on first use, so the memory
 * of a run is proportional to the part of the machine its traffic touches.
 *
 * Ports of a switch: [0, p) endpoints, [p, p + (a-1)*llp) local links (all-to-all inside the group),
 * then h global ports.  Switch ids run group-major: sw = group * a + index; endpoint ids sw * p + port.
 */
#ifndef CXISIM_DRAGONFLY_H
#define CXISIM_DRAGONFLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../engine.h"
#include "../pool.h"
#include "../rng.h"
#include "fabric.h"

#define DF_MAX_TC 8
#define DF_MAX_VC 5   /* l g l g l: a Valiant path has at most five switch-to-switch hops */
#define DF_MAX_RADIX 255
#define DF_NONE 0xffffu

enum df_routing { DF_ROUTE_MINIMAL, DF_ROUTE_VALIANT, DF_ROUTE_ADAPTIVE };
enum df_arrangement { DF_ARR_ABSOLUTE, DF_ARR_RELATIVE, DF_ARR_ROUND_ROBIN };
enum df_arbitration { DF_ARB_AGE, DF_ARB_ROUND_ROBIN };
enum df_bulk_mode { DF_BULK_PACKET, DF_BULK_CHUNK };
enum df_port_kind { DF_OP_INJECT, DF_OP_SWITCH, DF_OP_EJECT };

/* df_pkt.flags */
enum {
	DF_PKT_ORDERED = 1 << 0,
	DF_PKT_ROUTED = 1 << 1,     /* the first switch has chosen the route */
	DF_PKT_VIA_GROUP = 1 << 2,  /* still heading for intermediate group `via` */
	DF_PKT_VIA_SWITCH = 1 << 3, /* still heading for intermediate switch `via` of the current group */
	DF_PKT_RESV = 1 << 4,       /* the credit it holds upstream came from the reserved per-VC slot */
	DF_PKT_NONMIN = 1 << 5,
};

struct df;
struct df_msg;
struct df_oport;

/* One packet, or one chunk (a train of packets that moves as a unit) in coarse bulk mode.  64 bytes. */
struct df_pkt {
	struct df_pkt *next;    /* VOQ FIFO link (the pool's free-list link when free) */
	struct df_msg *msg;
	struct df_oport *up;    /* transmitter that holds credits for our buffer slot */
	simtime_t birth;        /* injection time: age arbitration */
	uint32_t wire;          /* bytes on the wire: payload + headers; credits are counted in these */
	uint32_t sw;            /* switch it is at (or heading to) */
	uint32_t sel;           /* random bits that fix the parallel-link choices of its route */
	uint16_t dgrp;          /* destination switch: its group and its index in the group (kept apart so */
	uint8_t didx;           /* that no hop divides) */
	uint8_t dport;          /* destination's port on that switch */
	uint16_t via;           /* intermediate group (local index) or intermediate switch (index in group) */
	uint8_t in_port;
	uint8_t tc;
	uint8_t hops;           /* switch-to-switch hops taken: the VC of the next one */
	uint8_t ghops;          /* global hops taken */
	uint8_t flags;
	uint8_t upvc;           /* VC of the upstream credit */
	uint16_t rate16;        /* congestion control: its flow's paced rate, in link rate / 65535 */
	uint16_t rmin16;        /* congestion control, fabric scope: lowest fair rate met on its path */
};

/* A message in flight: from fabric_send until its last unit has been ejected. */
struct df_msg {
	struct df_msg *next;     /* FIFO of the flow while being packetized */
	struct fabric_msg *m;
	struct df_flow *flow;
	uint32_t left;           /* payload bytes not yet packetized */
	uint32_t unsent;         /* units not yet injected */
	uint32_t units;          /* units in all */
	uint32_t remaining;      /* units not yet ejected */
	uint32_t seq;            /* per-flow message sequence: reorder detection */
	uint8_t chunked;
	uint8_t first_seen;
};

enum df_flow_state { DF_FLOW_IDLE, DF_FLOW_ACTIVE, DF_FLOW_PARKED };

/* A message's acknowledgement on its way back to its source (endpoint.c): applied, like feedback, when
 * the source next looks at the flow. */
struct df_ack {
	struct df_ack *next;
	simtime_t at;            /* when it reaches the source */
	uint32_t seq;            /* the message's sequence in its flow */
	uint32_t units;          /* its units; DF_ACK_ORDERED: it was ordered */
};
#define DF_ACK_ORDERED 0x80000000u

/* Congestion feedback on its way back to a flow's source (congestion.c): the source applies it when it
 * next looks at the flow; only a parked flow is woken for it. */
struct df_fb {
	struct df_fb *next;
	simtime_t at;            /* when it reaches the source */
	uint32_t rate1024;       /* the fair rate, in 1/1024 Gb/s */
	uint32_t wire;           /* bytes it retires from the flow's in-flight count */
};

/* Per (source endpoint, destination, traffic class): the message queue, the paced rate and in-flight
 * bytes of endpoint congestion control, the pinned route of ordered traffic, and reorder detection.  Exists
 * while it has messages queued or unacknowledged, or congestion feedback on its way. */
struct df_flow {
	struct df_flow *next, *prev; /* ring of the endpoint's sendable flows, or its list of idle flows */
	struct df_msg *head, *tail;
	struct df_ep *ep;
	uint32_t dst;
	uint32_t inflight;           /* units of messages whose ack has not reached the source */
	uint32_t in_net;             /* units injected whose message's ack has not left the destination */
	uint32_t routed_ordered;     /* ordered units routed (pinned) and not yet acknowledged */
	uint32_t feedback;           /* congestion feedback records on their way (fb_head...) */
	uint64_t inflight_bytes;     /* CC: bytes not yet in the destination's egress queue */
	double rate;                 /* CC: fair rate last fed back, Gb/s */
	uint32_t window;             /* CC: in-flight cap, bytes */
	uint32_t last_wire;
	simtime_t last_send, next_send; /* CC: pacing at `rate` */
	simtime_t ack_lat;           /* zero-load latency of the reverse path (acks, feedback) */
	uint32_t seq_next;
	uint32_t seq_max, seq_max_ordered; /* highest delivered message sequence, all / ordered */
	uint32_t pin_sel;
	uint16_t pin_via;
	uint8_t pin_flags;
	uint8_t tc, state;
	uint8_t seen_any, seen_ordered;
	uint8_t fb_wake;             /* a wake-up for the head feedback record is scheduled (parked flow) */
	uint8_t idle_listed;         /* idle, last ack on its way: on the endpoint's idle list (next/prev) */
	struct df_fb *fb_head, *fb_tail;
	struct df_ack *ack_head, *ack_tail;
};

/* One non-empty virtual output queue: the packets from one input port on one VC for one (output, class),
 * with its head's size and age kept here so arbitration scans a compact array, not the packets. */
struct df_voq {
	struct df_pkt *head, *tail;
	simtime_t head_birth;
	uint32_t head_wire;
	uint16_t key;               /* in_port << 3 | vc */
};

/* One traffic class of an output port: its non-empty VOQs, and the credits it holds for the downstream
 * input buffer of that class.  The VOQs form the arbiter's round-robin ring: array order from vq[cur].
 * Two cache lines: what arbitration and credits use, then fair queueing, telemetry and congestion control.
 * Telemetry is kept here (the hot path adds to memory it already holds) and published to the stats
 * registry by df_tel_publish (telemetry.c) at the end of the run. */
struct __attribute__((aligned(64))) df_otc {
	struct df_voq *vq;
	uint16_t nvq, cap, cur;
	uint8_t nvoq_vc[DF_MAX_VC]; /* VOQs per VC: lets arbitration skip a class whose VCs have no credit */
	uint8_t used;             /* the class carried traffic on this port: its telemetry is published */
	uint32_t need;            /* after a scan found nothing: the smallest head packet; 0 = unknown */
	uint32_t queued;          /* bytes waiting in this class's VOQs */
	uint32_t shared;          /* downstream shared credits (bytes) */
	uint32_t avail;           /* shared + reserved: free downstream space */
	uint32_t resv[DF_MAX_VC]; /* downstream reserved credits per VC (one unit each: deadlock freedom) */
	uint32_t queue_hwm;       /* telemetry: high-water of queued */
	/* second line */
	uint64_t vtime;           /* fair-share virtual time between classes */
	simtime_t stall_since;    /* queued but blocked for credits since (SIM_TIME_MAX: not stalled) */
	uint64_t tx_bytes, tx_pkts, stall_ps; /* telemetry */
	/* endpoint congestion control, on ports to an endpoint: the fair rate offered to its sources */
	double cc_rate;           /* Gb/s */
	simtime_t cc_t0;          /* start of the current measurement interval */
	double cc_send_ps;        /* since cc_t0: sum of units' wire times at their sources' rates */
};

/* A credit on its way back over a link: it reaches the transmitter at `at`. */
struct df_credit {
	simtime_t at;
	uint32_t wire;
	uint8_t tc, vc, resv;
};

/* A link transmitter: a switch output port, or an endpoint's injection port.  The first cache line holds
 * what every packet touches: a packet's arrival and departure and a superseded kick read that line only (at
 * a million endpoints the ports are cold, and each line is a miss).
 *
 * Credits come back through the link's credit channel `cr` (a ring ordered by arrival time) rather than as
 * one event each: the transmitter takes in those that have arrived whenever it looks at its credits, and
 * only a transmitter blocked on credits (credit_wait) needs a wake-up, which the downstream end arms when
 * it returns a credit.  Decisions see exactly the credits an event per credit would have delivered. */
struct __attribute__((aligned(64))) df_oport {
	simtime_t link_free;
	simtime_t cr_next;      /* arrival of the first credit on its way back (SIM_TIME_MAX: none) */
	struct df_credit *cr;   /* credits on their way back, by arrival time: ring of cr_mask + 1 */
	uint64_t vclock;        /* virtual time of the last class served */
	uint32_t link_lat;      /* ps (at most 1 ms) */
	uint32_t kick_gen;      /* a kick event whose arg differs was superseded */
	uint32_t cr_head, cr_n, cr_mask;
	uint32_t peer;          /* downstream switch, or endpoint for DF_OP_EJECT */
	uint8_t active;         /* bit per class with queued bytes (DF_MAX_TC bits) */
	uint8_t kind;
	uint8_t kick_armed;
	uint8_t credit_wait;    /* link free, packets waiting, none fits the credits: wake on a credit */
	uint8_t global;         /* a global link (counts global hops) */
	uint8_t peer_port;
	/* second line: what a kick that runs (not a superseded one), adaptive routing's depth estimate and
	 * a re-arm of an armed kick read */
	simtime_t kick_at;      /* when the armed kick fires */
	struct df *df;
	void *owner;            /* struct df_rsw * or struct df_ep * */
	uint32_t credit_rtt;    /* bytes of credit a busy link holds: a credit round trip at line rate + a unit */
	uint8_t port;
	struct df_otc tc[];
};
_Static_assert(offsetof(struct df_oport, peer_port) < 64, "the hot part of df_oport is its first cache line");
_Static_assert(DF_MAX_TC <= 8, "df_oport.active has a bit per class");

/* A Rosetta switch, allocated when traffic first reaches it. */
struct df_rsw {
	uint32_t id, group, idx;
	struct rng rng;
	struct df_oport *port[];    /* radix entries, allocated on first use */
};

struct df_ftent {
	uint32_t key; /* dst << 3 | tc */
	struct df_flow *f; /* NULL: empty */
};

/* An endpoint's edge of the fabric (NIC side), allocated on its first send. */
struct df_ep {
	uint32_t id, sw;
	struct df_oport *tx;
	struct df_ftent *ft;        /* flows by (dst, tc), open addressing */
	uint32_t ft_mask, ft_n;
	struct df_flow *ring;       /* next sendable flow */
	uint32_t nactive;
	struct df_flow *idle_head, *idle_tail; /* idle flows whose last ack has left, oldest first */
	simtime_t idle_at;          /* when the head's last ack is in (0: not known yet) */
	/* What the last round of the ring that sent nothing found, while still true (sum_valid): per class
	 * the smallest unit held back by credits (UINT32_MAX: none), and the earliest paced flow.  Until
	 * credits reach one of those or time reaches `wake`, a kick cannot send and skips the round. */
	uint8_t sum_valid;
	uint32_t need[DF_MAX_TC];
	simtime_t wake;
	simtime_t fb_min;           /* earliest feedback due to a flow of the ring: a round must look again */
	simtime_t lf_skip;          /* see df_inject_kick: the link-free time a paced flow's kick skipped */
};

struct df_attach {
	fabric_deliver_fn fn;
	void *nic;
};

struct df_counters {
	uint64_t *msgs_sent, *msgs_delivered, *pkts_injected, *pkts_delivered, *bytes_delivered, *hops;
	uint64_t *route_local, *route_minimal, *route_nonminimal, *route_pinned;
	uint64_t *cc_marks, *reordered, *reordered_ordered, *flows_created;
};

struct df {
	struct fabric base;
	struct sim *sim;
	const char *preset;
	/* topology */
	uint32_t gm;                /* groups of the full machine (global-link arrangement) */
	uint32_t g;                 /* groups instantiated (a subset, or all) */
	uint32_t a, p, h, lpp, llp, radix;
	uint32_t nsw, nep;
	uint32_t local0, global0;   /* first local and first global port */
	enum df_arrangement arr;
	uint32_t *gid;              /* local group -> machine group */
	int32_t *glocal;            /* machine group -> local group, or -1 */
	uint8_t *gwtab;             /* (G, T, r) -> gateway switch index and port; NULL: compute */
	/* links and switches */
	double ps_per_byte;
	simtime_t sw_lat, lat_edge, lat_local, lat_global;
	uint32_t mtu, hdr;
	/* traffic classes and buffers */
	uint32_t ntc;
	uint32_t buf[DF_MAX_TC];    /* input buffer per port per class */
	uint32_t resv;              /* reserved bytes per VC (the largest unit) */
	uint64_t wfq_inc[DF_MAX_TC];/* virtual-time cost per byte, inverse of the class share */
	/* routing */
	enum df_routing routing;
	enum df_arbitration arb;
	uint32_t candidates;
	uint32_t ugal_bias;
	/* endpoint congestion control */
	bool cc;
	bool cc_fabric;             /* every switch output computes a fair rate, not only endpoint ports */
	uint32_t cc_threshold, cc_max_win;
	double cc_gain, cc_drain, cc_min_gbps, line_gbps;
	simtime_t cc_interval;
	/* coarse bulk */
	enum df_bulk_mode bulk;
	uint32_t chunk, chunk_threshold;
	/* state */
	struct df_attach *att;
	fabric_deliver_fn rx_pf_fn;          /* deliveries to endpoints attached with this handler ... */
	fabric_deliver_prefetch_fn rx_pf;    /* ... are prefetched by this hook (fabric_deliver_prefetch) */
	struct df_ep **ep;
	struct df_rsw **sw;
	struct pool pkts, msgs, flows, fbs, acks;
	struct arena recs;      /* switch records, their ports, endpoints with their injection ports */
	size_t port_bytes;          /* size of one df_oport */
	uint64_t ports_alloc, switches_alloc, eps_alloc;
	struct df_counters c;
};

/* --- dragonfly.c: topology arithmetic --- */
static inline uint32_t df_group_of_sw(const struct df *d, uint32_t sw) { return sw / d->a; }
static inline uint32_t df_idx_of_sw(const struct df *d, uint32_t sw) { return sw % d->a; }
static inline uint32_t df_local_port(const struct df *d, uint32_t si, uint32_t sj, uint32_t r)
{
	return d->local0 + (sj < si ? sj : sj - 1) * d->llp + r;
}
/* The r-th global link from local group G to local group T: switch index in G and port (from the table
 * when there is one: routing asks at every hop). */
void df_gateway_arith(const struct df *d, uint32_t G, uint32_t T, uint32_t r, uint32_t *sw_idx, uint32_t *port);
static inline void df_gateway(const struct df *d, uint32_t G, uint32_t T, uint32_t r, uint32_t *sw_idx,
			      uint32_t *port)
{
	if (__builtin_expect(d->gwtab != NULL, 1)) {
		const uint8_t *e = &d->gwtab[((size_t)(G * d->g + T) * d->lpp + r) * 2];
		*sw_idx = e[0];
		*port = e[1];
		return;
	}
	df_gateway_arith(d, G, T, r, sw_idx, port);
}
/* Downstream end of (switch, port): switch id and its input port; false when the port is unconnected. */
bool df_port_peer(const struct df *d, uint32_t sw, uint32_t port, uint32_t *peer_sw, uint32_t *peer_port);
/* Serialization of `wire` bytes on one link. */
static inline simtime_t df_ser(const struct df *d, uint32_t wire)
{
	return (simtime_t)((double)wire * d->ps_per_byte + 0.5);
}
/* Wire bytes of a unit carrying `payload` (one header per packet it spans). */
uint32_t df_unit_wire(const struct df *d, uint32_t payload);
/* Minimal route between endpoints with the fewest switches: counts of local and global hops and switches. */
void df_min_hops(const struct df *d, uint32_t src, uint32_t dst, uint32_t *nlocal, uint32_t *nglobal,
		 uint32_t *nsw);
simtime_t df_path_latency(const struct df *d, uint32_t nlocal, uint32_t nglobal, uint32_t nsw);
/* The zero-load (minimal, fewest switches) route: the switches it crosses and the output port taken at
 * each, the last one being the destination's port.  Returns the number of switches. */
uint32_t df_min_route(const struct df *d, uint32_t src, uint32_t dst, uint32_t *sw, uint32_t *port, uint32_t max);

/* --- routing.c --- */
static inline uint32_t df_mix(uint32_t sel, uint32_t k)
{
	uint32_t x = sel ^ (k * 0x9e3779b9u);
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}
/* x (32 well-mixed bits) scaled to [0, n): a multiply, not a division, on every hop. */
static inline uint32_t df_pick(uint32_t x, uint32_t n)
{
	return (uint32_t)(((uint64_t)x * n) >> 32);
}
void df_route_first(struct df *d, struct df_rsw *s, struct df_pkt *pkt);
/* The output port of a routed packet at switch (group G, index si); clears the via flags it reaches. */
uint32_t df_next_port_at(const struct df *d, uint32_t G, uint32_t si, struct df_pkt *pkt);
static inline uint32_t df_next_port(const struct df *d, const struct df_rsw *s, struct df_pkt *pkt)
{
	return df_next_port_at(d, s->group, s->idx, pkt);
}

/* --- rosetta.c --- */
struct df_rsw *df_switch(struct df *d, uint32_t id);
struct df_oport *df_port(struct df *d, struct df_rsw *s, uint32_t port);
/* A port at `mem` (df->port_bytes, 64-byte aligned), or a new one from the fabric's arena if mem is NULL. */
struct df_oport *df_oport_init(struct df *d, void *mem, enum df_port_kind kind, void *owner, uint32_t port);
/* Free what the port owns (the port itself is the arena's or its endpoint's). */
void df_oport_release(struct df *d, struct df_oport *op);
uint32_t df_port_depth(struct df *d, const struct df_rsw *s, uint32_t port, uint32_t tc);
void df_ev_arrive(struct sim *sim, void *obj, uint64_t arg);
/* Prefetch hooks (sim_prefetch_hook) of the busiest fabric handlers: a packet's next switch record, a
 * delivered message's NIC packet. */
void df_switch_prefetch_hooks(struct sim *sim);
void df_endpoint_prefetch_hooks(struct sim *sim);
/* fabric_send_prefetch: the source endpoint's slot in the endpoint table, then its record, then its flow
 * table slot for the message's (destination, class). */
void df_send_prefetch(const struct fabric *f, const struct fabric_msg *m, unsigned stage);
void df_ev_kick(struct sim *sim, void *obj, uint64_t arg);
/* Credits for a unit of `wire` bytes on VC vc: take shared space first, then the VC's reserved slot. */
static inline bool df_credit_ok(const struct df_otc *t, uint32_t vc, uint32_t wire)
{
	return t->shared >= wire || t->resv[vc] >= wire;
}
/* Take in the credits that have reached op by now. */
void df_credits_absorb_due(struct df_oport *op, simtime_t now);
static inline void df_credits_absorb(struct df_oport *op, simtime_t now)
{
	if (op->cr_next <= now)
		df_credits_absorb_due(op, now);
}
/* A blocked transmitter (credit_wait) wants to be woken when its next credit arrives. */
static inline simtime_t df_next_credit(const struct df_oport *op)
{
	return op->cr_next;
}
void df_arm_kick(struct df *d, struct df_oport *op, simtime_t at);

/* --- endpoint.c --- */
void df_send(struct sim *sim, struct fabric *f, struct fabric_msg *m);
void df_inject_kick(struct df *d, struct df_ep *ep);
void df_eject(struct df *d, struct df_oport *op, struct df_pkt *pkt, simtime_t tx_end);
void df_acks_absorb_due(struct df *d, struct df_flow *f, simtime_t now);
void df_cc_absorb_due(struct df *d, struct df_flow *f, simtime_t now);
/* Apply the feedback and acks that have reached the flow's source by now: whoever reads a flow's state
 * calls this first, so the state is what an event per record would have made it. */
static inline void df_flow_absorb(struct df *d, struct df_flow *f, simtime_t now)
{
	if (__builtin_expect(f->fb_head != NULL, 0) && f->fb_head->at <= now)
		df_cc_absorb_due(d, f, now);
	if (f->ack_head && f->ack_head->at <= now)
		df_acks_absorb_due(d, f, now);
}
/* At the end of a run: apply every record due by now (reorder counters). */
void df_flows_settle(struct df *d);

/* --- congestion.c --- */
/* A unit joined the egress queue `t` of an endpoint port: update that port's fair rate and feed it back to
 * the unit's source. */
void df_cc_egress(struct df *d, struct df_otc *t, struct df_pkt *pkt, simtime_t now);
/* Fabric scope: a unit joined a switch-to-switch output's queue: update its fair rate, stamp the unit. */
void df_cc_link(struct df *d, struct df_otc *t, struct df_pkt *pkt, simtime_t now);
/* Source side: recompute a flow's in-flight cap from its rate; account a unit sent (pacing). */
void df_cc_window(const struct df *d, struct df_flow *f);
void df_cc_sent(const struct df *d, struct df_flow *f, uint32_t wire, simtime_t now);

/* A parked flow with feedback on its way is woken when the next record arrives. */
void df_cc_wake_parked(struct df *d, struct df_flow *f);
/* The flow got feedback: wake it if it was parked (and its cap now allows). */
void df_flow_feedback_done(struct df *d, struct df_flow *f);

/* --- telemetry.c --- */
/* Register every (port, class) that carried traffic in the stats registry, with its current values
 * (idempotent: run before the stats are written). */
void df_tel_publish(struct df *d);
void df_counters_init(struct df *d);
void df_summary(struct sim *sim, FILE *f);

#endif
