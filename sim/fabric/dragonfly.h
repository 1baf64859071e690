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
	uint32_t dsw;           /* destination switch */
	uint16_t via;           /* intermediate group (local index) or intermediate switch (index in group) */
	uint8_t dport;          /* destination's port on dsw */
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

/* Per (source endpoint, destination, traffic class): the message queue, the paced rate and in-flight
 * bytes of endpoint congestion control, the pinned route of ordered traffic, and reorder detection.  Exists
 * while it has messages queued or unacknowledged, or congestion feedback on its way. */
struct df_flow {
	struct df_flow *next, *prev; /* ring of the endpoint's sendable flows */
	struct df_msg *head, *tail;
	struct df_ep *ep;
	uint32_t dst;
	uint32_t inflight;           /* units of messages not yet acknowledged */
	uint32_t routed_ordered;     /* ordered units routed (pinned) and not yet acknowledged */
	uint32_t feedback;           /* congestion feedback events on their way */
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
};

struct df_tel {
	uint64_t *tx_bytes, *tx_pkts, *queue_hwm, *stall_ps;
};

/* One traffic class of an output port: its VOQs (a ring of the non-empty ones, one per input port and
 * VC), and the credits it holds for the downstream input buffer of that class. */
struct df_otc {
	struct df_voq *ring;
	uint32_t nvoq;
	uint16_t nvoq_vc[DF_MAX_VC]; /* VOQs per VC: lets arbitration skip a class whose VCs have no credit */
	uint32_t need;            /* after a scan found nothing: the smallest head packet; 0 = unknown */
	uint32_t queued;          /* bytes waiting in this class's VOQs */
	uint32_t shared;          /* downstream shared credits (bytes) */
	uint32_t avail;           /* shared + reserved: free downstream space */
	uint32_t resv[DF_MAX_VC]; /* downstream reserved credits per VC (one unit each: deadlock freedom) */
	simtime_t stall_since;    /* queued but blocked for credits since (0: not stalled) */
	uint64_t vtime;           /* fair-share virtual time between classes */
	struct df_tel tel;        /* registered on first use */
	/* endpoint congestion control, on ports to an endpoint: the fair rate offered to its sources */
	double cc_rate;           /* Gb/s */
	simtime_t cc_t0;          /* start of the current measurement interval */
	double cc_send_ps;        /* since cc_t0: sum of units' wire times at their sources' rates */
};

/* A link transmitter: a switch output port, or an endpoint's injection port. */
struct df_oport {
	struct df *df;
	simtime_t link_free;
	simtime_t kick_at;      /* when the armed kick fires */
	uint32_t kick_gen;      /* a kick event whose arg differs was superseded */
	simtime_t link_lat;
	void *owner;            /* struct df_rsw * or struct df_ep * */
	uint64_t vclock;        /* virtual time of the last class served */
	uint32_t peer;          /* downstream switch, or endpoint for DF_OP_EJECT */
	uint32_t active;        /* bit per class with queued bytes */
	uint32_t credit_rtt;    /* bytes of credit a busy link holds: a credit round trip at line rate + a unit */
	uint8_t peer_port;
	uint8_t kind;
	uint8_t port;
	uint8_t kick_armed;
	uint8_t global;         /* a global link (counts global hops) */
	struct df_otc tc[];
};

struct df_voq {
	struct df_pkt *head, *tail;
	struct df_voq *next, *prev; /* ring of the (output, class) arbiter */
	uint32_t key;               /* in_port << 16 | out << 8 | tc << 4 | vc */
	uint32_t head_wire;         /* the head packet's size and age, kept here so arbitration scans */
	simtime_t head_birth;       /* the VOQ records without touching the packets */
};

/* A Rosetta switch, allocated when traffic first reaches it. */
struct df_rsw {
	uint32_t id, group, idx;
	struct rng rng;
	struct df_voq **vh;         /* VOQ table: open addressing by key, only the non-empty VOQs */
	uint32_t vh_mask, vh_n;
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
	struct df_ep **ep;
	struct df_rsw **sw;
	struct pool pkts, msgs, flows, voqs;
	size_t port_bytes;          /* size of one df_oport */
	uint64_t ports_alloc, switches_alloc, eps_alloc;
	struct df_counters c;
};

/* --- dragonfly.c: topology arithmetic --- */
static inline uint32_t df_group_of_sw(const struct df *d, uint32_t sw) { return sw / d->a; }
static inline uint32_t df_idx_of_sw(const struct df *d, uint32_t sw) { return sw % d->a; }
uint32_t df_local_port(const struct df *d, uint32_t si, uint32_t sj, uint32_t r);
/* The r-th global link from local group G to local group T: switch index in G and port. */
void df_gateway(const struct df *d, uint32_t G, uint32_t T, uint32_t r, uint32_t *sw_idx, uint32_t *port);
/* Downstream end of (switch, port): switch id and its input port; false when the port is unconnected. */
bool df_port_peer(const struct df *d, uint32_t sw, uint32_t port, uint32_t *peer_sw, uint32_t *peer_port);
simtime_t df_ser(const struct df *d, uint32_t wire);
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
void df_route_first(struct df *d, struct df_rsw *s, struct df_pkt *pkt);
uint32_t df_next_port(const struct df *d, const struct df_rsw *s, struct df_pkt *pkt);

/* --- rosetta.c --- */
struct df_rsw *df_switch(struct df *d, uint32_t id);
struct df_oport *df_port(struct df *d, struct df_rsw *s, uint32_t port);
struct df_oport *df_oport_new(struct df *d, enum df_port_kind kind, void *owner, uint32_t port);
uint32_t df_port_depth(const struct df *d, const struct df_rsw *s, uint32_t port, uint32_t tc);
void df_ev_arrive(struct sim *sim, void *obj, uint64_t arg);
void df_ev_credit(struct sim *sim, void *obj, uint64_t arg);
void df_ev_kick(struct sim *sim, void *obj, uint64_t arg);
/* Credits for a unit of `wire` bytes on VC vc: take shared space first, then the VC's reserved slot. */
static inline bool df_credit_ok(const struct df_otc *t, uint32_t vc, uint32_t wire)
{
	return t->shared >= wire || t->resv[vc] >= wire;
}
static inline uint64_t df_credit_pack(uint32_t tc, uint32_t vc, bool resv, uint32_t wire)
{
	return (uint64_t)wire << 16 | (uint64_t)resv << 12 | (uint64_t)vc << 8 | tc;
}
void df_arm_kick(struct df *d, struct df_oport *op, simtime_t at);

/* --- endpoint.c --- */
void df_send(struct sim *sim, struct fabric *f, struct fabric_msg *m);
void df_inject_kick(struct df *d, struct df_ep *ep);
void df_eject(struct df *d, struct df_oport *op, struct df_pkt *pkt, simtime_t tx_end);

/* --- congestion.c --- */
/* A unit joined the egress queue `t` of an endpoint port: update that port's fair rate and feed it back to
 * the unit's source. */
void df_cc_egress(struct df *d, struct df_otc *t, struct df_pkt *pkt, simtime_t now);
/* Fabric scope: a unit joined a switch-to-switch output's queue: update its fair rate, stamp the unit. */
void df_cc_link(struct df *d, struct df_otc *t, struct df_pkt *pkt, simtime_t now);
/* Source side: recompute a flow's in-flight cap from its rate; account a unit sent (pacing). */
void df_cc_window(const struct df *d, struct df_flow *f);
void df_cc_sent(const struct df *d, struct df_flow *f, uint32_t wire, simtime_t now);
/* The flow got feedback: wake it if it was parked. */
void df_flow_feedback_done(struct df *d, struct df_flow *f);

/* --- telemetry.c --- */
void df_tel_register(struct df *d, struct df_oport *op, uint32_t tc);
static inline struct df_tel *df_tel(struct df *d, struct df_oport *op, uint32_t tc)
{
	if (__builtin_expect(!op->tc[tc].tel.tx_bytes, 0))
		df_tel_register(d, op, tc);
	return &op->tc[tc].tel;
}
void df_counters_init(struct df *d);
void df_summary(struct sim *sim, FILE *f);

#endif
