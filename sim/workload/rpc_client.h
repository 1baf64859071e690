/* rpc_client internals shared with bulk.c. */
#ifndef CXISIM_WORKLOAD_RPC_CLIENT_H
#define CXISIM_WORKLOAD_RPC_CLIENT_H

#include <stdio.h>

#include "../cfg.h"
#include "../fabric/fabric.h"
#include "../rng.h"
#include "rpc.h"
#include "rpc_server.h"

enum slot_state { S_IDLE, S_THINK, S_REG, S_QUEUED, S_FWD, S_WAIT, S_DEREG };

/* One in-flight position of a client process (an RPC and its attempts). */
struct rpc_slot {
	uint32_t gen;       /* attempt number: part of the header and of the response tag */
	uint32_t target;
	simtime_t t_start;  /* the RPC's start (first attempt, before any MR registration) */
	sim_timer timer;
	uint32_t req_bytes;
	uint8_t state;      /* enum slot_state */
	uint8_t retries;
	uint8_t pending;    /* completions the attempt still waits for */
	uint8_t qnext;      /* background queue link */
	bool timed_out, failed;
};

/* One cache line (the array starts on one): every RPC of a million-client run finds its process cold, and
 * at 72 bytes each record was two lines (cachegrind, docs/workloads.md Round 9). */
struct rpc_proc {
	struct sw_ep *ep;
	struct host_core core;
	struct rng rng;
	uint32_t rr;        /* RPCs started: round-robin position */
	uint8_t inflight;   /* dispatched and not finished (counts against quota and credits; <= in_flight < 256) */
	uint8_t qhead, qtail, qlen;
};
_Static_assert(sizeof(struct rpc_proc) == 64, "a client process's record is one cache line");

struct rpc_client_stats {
	uint64_t started, attempts, attempts_at_open, completed, completed_in_window, timeouts, retries, failed;
	uint64_t unexpected, send_errors, recv_errors, server_errors, canceled, queued, eagain, vni_drops;
	uint64_t bulk_bytes_in_window;
	uint64_t fc_host_ps, rnr_host_ps, fc_send_drops, fc_send_replays, fc_send_eagain; /* provider host work */
	uint64_t active;        /* slots not idle */
	uint64_t outstanding;   /* gauge: dispatched RPCs */
	uint64_t queued_now;    /* gauge: RPCs in background queues */
	uint32_t max_inflight, max_per_target, max_queue;
	struct batch_means rate; /* RPCs completed in the window, by batch */
};

struct bulk_client;

struct rpc_client_set {
	struct sim *sim;
	struct rpc_world *w;
	const struct cfg *section;
	uint32_t n, W, T;
	struct rpc_placement place;
	uint32_t req_bytes, req_bytes_max, resp_max;
	uint32_t credits, quota, max_retries, cq_size;
	simtime_t think, timeout, fwd, complete, warmup, measure, spread, eagain;
	bool drain, stopping;
	uint16_t vni;
	struct sw_env env;
	struct rpc_proc *procs;
	struct rpc_slot *slots;  /* n x W */
	uint8_t *per_target;     /* n x T in-flight counts (credits on) */
	struct bulk_client *bulk; /* NULL: plain RPCs */
	struct rpc_client_stats st;
	struct rpc_fatal fatal;
	struct histogram *lat;
};

void rpc_client_ready_to_send(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s);
void rpc_client_attempt_over(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s);
void rpc_client_put_hist_ns(FILE *f, const char *name, const struct histogram *h);

/* bulk.c, client side */
struct bulk_client {
	uint32_t bytes;
	enum bulk_op op;
	enum mr_method method;
	bool deadlines;
	struct bulk_slot *slots; /* n x W */
	struct histogram *reg, *dereg;
	uint64_t reg_fail, regs, deregs;
};
void bulk_client_read_cfg(struct rpc_client_set *cs, const struct cfg *client_section);
void bulk_client_build(struct sim *sim, struct rpc_client_set *cs);
void bulk_client_free(struct rpc_client_set *cs);
uint64_t bulk_client_bytes(const struct rpc_client_set *cs);
void bulk_client_register(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s);
/* Deregister the attempt's MR; false when there is none (the caller continues at once). */
bool bulk_client_release(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s);
simtime_t bulk_client_timeout(const struct rpc_client_set *cs);
void bulk_client_summary(struct rpc_client_set *cs, FILE *f, double window_s);

#endif
