/* RPC workloads shared between rpc_server.c, rpc_client.c and bulk.c.
 *
 * Simulated processes are engine state machines.  They reach the NIC only through the cxi provider's
 * software layer (sim/nic/sw.h), as Mercury reaches a real Cassini through libfabric.  Each process models
 * its own host CPU as one serial core: Mercury/CaRT work (progress, handlers, posting) takes modelled time,
 * during which completions queue behind it.
 *
 * Wire format.  A request is an untagged message (multi-recv buffers only take untagged messages) whose
 * 64-bit immediate data (FI_REMOTE_CQ_DATA) is the RPC header: the client's index, the in-flight slot and
 * the slot's generation.  The response is a tagged message whose tag is (slot, generation), so it can only
 * match the receive the client posted for that very attempt (as Mercury's expected messages).  The body of
 * a bulk request (the MR descriptor: key, address, length, deadline) is the content of the client's send
 * buffer for that slot; the server reads it from the slot record once the request has been delivered,
 * which is what parsing the delivered bytes would give (the slot is not reused before its response).
 */
#ifndef CXISIM_WORKLOAD_RPC_H
#define CXISIM_WORKLOAD_RPC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../engine.h"
#include "../nic/sw.h"
#include "../stats.h"

#define RPC_SLOT_BITS 8
#define RPC_MAX_INFLIGHT (1u << RPC_SLOT_BITS)
#define RPC_CLIENT_BITS 24
#define RPC_MAX_CLIENTS (1u << RPC_CLIENT_BITS)
#define RPC_GEN_BITS 32

static inline uint64_t rpc_hdr(uint32_t client, uint32_t slot, uint32_t gen)
{
	return ((uint64_t)client << (RPC_SLOT_BITS + RPC_GEN_BITS)) | ((uint64_t)slot << RPC_GEN_BITS) | gen;
}
static inline uint32_t rpc_hdr_client(uint64_t h) { return (uint32_t)(h >> (RPC_SLOT_BITS + RPC_GEN_BITS)); }
static inline uint32_t rpc_hdr_slot(uint64_t h) { return (uint32_t)(h >> RPC_GEN_BITS) & (RPC_MAX_INFLIGHT - 1); }
static inline uint32_t rpc_hdr_gen(uint64_t h) { return (uint32_t)h; }
/* The response tag: slot and generation (40 bits, within the RNR protocol's tag width). */
static inline uint64_t rpc_resp_tag(uint64_t h) { return h & ((1ULL << (RPC_SLOT_BITS + RPC_GEN_BITS)) - 1); }

enum rpc_strategy { RPC_STANDARD, RPC_MULTI_RECV };
enum rpc_src_lookup { RPC_SRC_FI_SOURCE_USER_ID, RPC_SRC_FI_SOURCE, RPC_SRC_HEADER };
enum bulk_op { BULK_NONE, BULK_WRITE, BULK_READ }; /* seen from the client: write = server pulls (RMA read) */
enum mr_method { MR_OPTIMIZED, MR_STANDARD, MR_PROV_KEY_CACHE, MR_MATCH_EVENTS };

/* The bulk descriptor a client sends with a bulk RPC (the body of its request). */
struct bulk_desc {
	uint64_t key;       /* MR key */
	uint64_t addr;      /* offset of the transfer within the MR */
	uint32_t len;
	uint8_t op;         /* enum bulk_op */
	simtime_t start;    /* T: when the client started the RPC */
	simtime_t timeout;  /* T_timeout (0: none) */
};

struct rpc_server;
struct rpc_client_set;

/* Fatal provider conditions (sw_ep_attr.on_fatal) seen by a set of endpoints. */
struct rpc_fatal {
	uint64_t count;
	char msg[200];
};
void rpc_on_fatal(void *ctx, struct sw_ep *ep, const char *msg);
void rpc_put_fatal(FILE *f, const struct rpc_fatal *fa);

/* What servers publish for clients (world entry "rpc"): the target endpoints, in node, engine, thread
 * order, and the measurement window that the clients define. */
struct rpc_world {
	uint32_t ntargets;
	struct sw_addr *targets;
	struct rpc_server *server;
	struct rpc_client_set *clients;
	simtime_t win_start, win_end; /* measurement window [start, end) */
	/* Reading a bulk request's body: the client slot's descriptor (see the header comment). */
	const struct bulk_desc *(*bulk_desc_of)(struct rpc_client_set *cs, uint32_t client, uint32_t slot,
						uint32_t gen);
	/* Header parsing: the client's address, as packed into the request header by Mercury's original scheme. */
	bool (*client_addr_of)(struct rpc_client_set *cs, uint32_t client, struct sw_addr *out);
};

static inline bool rpc_in_window(const struct rpc_world *w, simtime_t t)
{
	return t >= w->win_start && t < w->win_end;
}

/* One serial host core: work items run one after another.  `busy` is set while an item's modelled time
 * elapses; `ready` is the next time the core is free. */
struct host_core {
	simtime_t free_at;
	uint64_t busy_ps; /* total modelled busy time (utilization) */
};

/* Charge `cost` on the core starting no earlier than now; returns when the work completes. */
static inline simtime_t host_core_charge(struct host_core *c, simtime_t now, simtime_t cost)
{
	simtime_t start = c->free_at > now ? c->free_at : now;
	c->free_at = start + cost;
	c->busy_ps += cost;
	return c->free_at;
}

/* Time parameters read in ns, kept in ps. */
static inline simtime_t ns_to_ps(double ns)
{
	return (simtime_t)(ns * 1000.0 + 0.5);
}

/* Placement: NIC address of NIC `nic` of node `node` (nodes laid out from first_nic, node_stride apart). */
static inline uint32_t rpc_node_nic(uint32_t first_nic, uint32_t node_stride, uint32_t node, uint32_t nic)
{
	return first_nic + node * node_stride + nic;
}

/* Client processes placed as on Aurora compute nodes (rpc_client.c has the rules); shared by every
 * workload of client processes (rpc_client, replay), whose parameter tables hold RPC_PLACEMENT_PARAMS. */
struct cfg;
struct param;
struct rpc_placement {
	uint32_t ppn, nics_per_node, first_nic, node_stride, spread_groups, group_stride;
};
/* Rows of the model's parameter table (FABRIC_MAX_NICS from fabric/fabric.h). */
#define RPC_PLACEMENT_ROWS                                                                                  \
	{ "processes_per_node", "count", 104, 1, 4096, "seed 000 3.2.2: 104 processes per Aurora node" },          \
	{ "nics_per_node", "count", 8, 1, 64, "seed 000 2.1: 8 Slingshot NICs per Aurora compute node" },         \
	{ "first_nic", "addr", 0, 0, FABRIC_MAX_NICS - 1, "placement (scenario)" },                                \
	{ "node_stride", "count", 0, 0, FABRIC_MAX_NICS,                                                           \
	  "placement: NIC addresses between nodes (0: nics_per_node)" },                                           \
	{ "spread_groups", "count", 1, 1, 65535,                                                                   \
	  "placement: nodes dealt round-robin over this many blocks (dragonfly groups), as a large allocation "   \
	  "spans groups" },                                                                                        \
	{ "group_stride", "count", 512, 1, FABRIC_MAX_NICS, "placement: NIC addresses between blocks (Aurora group: 512)" }
#define RPC_PLACEMENT_NPARAMS 6
/* Reads the placement fields of a section whose table includes rpc_placement_params. */
void rpc_placement_read(struct rpc_placement *p, const struct cfg *sec);
/* NIC address of client process i. */
uint32_t rpc_placement_nic(const struct rpc_placement *p, uint32_t i);

#endif
