/* The fabric interface: how NICs hand messages to the network and get them back.
 *
 * A NIC attaches to the fabric under its 20-bit NIC address and sends messages; the fabric packetizes them
 * (payload MTU, header bytes), moves them through its links and switches, and delivers each message to the
 * destination NIC's callback when its last byte has arrived (first_arrival records when its first packet
 * did, so a NIC can start matching on the header).  Messages marked FABRIC_ORDERED between the same
 * (src, dst, tc) are delivered in send order; FABRIC_BULK messages may take per-packet adaptive routes and
 * may be carried in the coarse (chunk-train or fluid) mode.
 *
 * The message record belongs to the sender until fabric_send and to the receiver after delivery; the
 * fabric never frees it.  Implementations: "direct" (every endpoint on one ideal crossbar: only the
 * injection and ejection links serialize) and "dragonfly" (Rosetta switches).  Select with
 * fabric.topology in the scenario.
 */
#ifndef CXISIM_FABRIC_H
#define CXISIM_FABRIC_H

#include <stdint.h>

#include "../engine.h"

#define FABRIC_NIC_BITS 20
#define FABRIC_MAX_NICS (1u << FABRIC_NIC_BITS)

enum fabric_msg_flags {
	FABRIC_ORDERED = 1 << 0, /* message headers / MPI-style ordered traffic: per-flow routing */
	FABRIC_BULK = 1 << 1,    /* RMA / bulk data: per-packet routing, may use the coarse mode */
};

struct fabric_msg {
	uint32_t src, dst;  /* NIC addresses */
	uint16_t vni;
	uint8_t tc;         /* traffic class */
	uint8_t flags;      /* enum fabric_msg_flags */
	uint32_t bytes;     /* payload bytes (the fabric adds per-packet headers) */
	simtime_t sent;           /* set by fabric_send */
	simtime_t first_arrival;  /* set by the fabric at delivery */
	void *ctx;          /* the NIC's own descriptor; opaque to the fabric */
	uint64_t ctx_arg;
};

struct fabric;

/* Called (as an event of the destination) when a message has fully arrived. */
typedef void (*fabric_deliver_fn)(struct sim *sim, void *nic, struct fabric_msg *m);
/* A delivery's prefetch hook (see sim_prefetch_hook_stage): stage k (0, 1, 2, one pop apart) may only
 * prefetch what `fn` will touch for m, one record deeper per stage. */
typedef void (*fabric_deliver_prefetch_fn)(const void *nic, const struct fabric_msg *m, unsigned stage);

struct fabric_ops {
	void (*attach)(struct fabric *f, uint32_t nic, fabric_deliver_fn fn, void *nic_obj);
	void (*send)(struct sim *sim, struct fabric *f, struct fabric_msg *m);
	uint32_t (*num_endpoints)(const struct fabric *f);
	/* Zero-load one-way time of a message of `bytes` payload from src to dst (minimal route), for tests and
	 * for models that need an estimate (e.g. timeouts). */
	simtime_t (*zero_load_time)(const struct fabric *f, uint32_t src, uint32_t dst, uint32_t bytes);
	/* Optional (may be NULL): time to serialize a message of `bytes` payload, headers included, on one
	 * link: its injection time at line rate.  Traffic generators use it to define offered load. */
	simtime_t (*wire_time)(const struct fabric *f, uint32_t bytes);
	/* Optional (may be NULL): the payload bytes of one full packet.  A NIC writes an arriving message to
	 * host memory packet by packet, so the last packet's payload is what remains to write after the
	 * message's last byte has arrived. */
	uint32_t (*mtu_bytes)(const struct fabric *f);
	/* Optional (may be NULL): shortly before a message is delivered to an endpoint attached with `fn`,
	 * with that endpoint's record in cache, call pf(nic_obj, m, k) for stages k = 0, 1, 2 on three
	 * consecutive pops (a prefetch hook: changes nothing). */
	void (*deliver_prefetch)(struct fabric *f, fabric_deliver_fn fn, fabric_deliver_prefetch_fn pf);
	/* Optional (may be NULL): for a sender's prefetch hook, stage k (0 .. 3: one pop apart, see
	 * sim_prefetch_hook_stage) of what fabric_send(m) will touch first.  Prefetches only. */
	void (*send_prefetch)(const struct fabric *f, const struct fabric_msg *m, unsigned stage);
};

struct fabric {
	const struct fabric_ops *ops;
};

/* The fabric of a simulation ("fabric" world entry), or NULL when the scenario has none. */
static inline struct fabric *fabric_of(struct sim *sim)
{
	return (struct fabric *)sim_world_get(sim, "fabric");
}

static inline void fabric_attach(struct fabric *f, uint32_t nic, fabric_deliver_fn fn, void *nic_obj)
{
	f->ops->attach(f, nic, fn, nic_obj);
}

static inline void fabric_deliver_prefetch(struct fabric *f, fabric_deliver_fn fn, fabric_deliver_prefetch_fn pf)
{
	if (f->ops->deliver_prefetch)
		f->ops->deliver_prefetch(f, fn, pf);
}

static inline void fabric_send_prefetch(const struct fabric *f, const struct fabric_msg *m, unsigned stage)
{
	if (f->ops->send_prefetch)
		f->ops->send_prefetch(f, m, stage);
}

static inline void fabric_send(struct sim *sim, struct fabric *f, struct fabric_msg *m)
{
	f->ops->send(sim, f, m);
}

static inline uint32_t fabric_num_endpoints(const struct fabric *f)
{
	return f->ops->num_endpoints(f);
}

static inline simtime_t fabric_zero_load_time(const struct fabric *f, uint32_t src, uint32_t dst, uint32_t bytes)
{
	return f->ops->zero_load_time(f, src, dst, bytes);
}

static inline simtime_t fabric_wire_time(const struct fabric *f, uint32_t bytes)
{
	return f->ops->wire_time ? f->ops->wire_time(f, bytes) : 0;
}

/* The payload of one full packet; 0 when the fabric does not packetize (or says nothing). */
static inline uint32_t fabric_mtu_bytes(const struct fabric *f)
{
	return f && f->ops->mtu_bytes ? f->ops->mtu_bytes(f) : 0;
}

#endif
