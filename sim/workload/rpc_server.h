/* rpc_server internals shared with bulk.c. */
#ifndef CXISIM_WORKLOAD_RPC_SERVER_H
#define CXISIM_WORKLOAD_RPC_SERVER_H

#include <stdio.h>

#include "../batch_means.h"
#include "../cfg.h"
#include "../fabric/fabric.h"
#include "../pool.h"
#include "rpc.h"

struct rpc_server_cfg {
	const struct cfg *section;
	enum rpc_strategy strategy;
	enum rpc_src_lookup src_lookup;
	enum sw_proto proto;
	uint32_t nodes, engines, threads, nics_per_node, first_nic, node_stride;
	uint32_t post_init, post_incr, recv_bytes, mr_bufs, copy_threshold, resp_bytes, rx_size, cq_size;
	uint64_t mr_bytes;
	simtime_t service, cq_event, respond, post_recv, src_uid, src_av, src_hdr, copy_base, eagain_retry;
	simtime_t prov_ux, prov_sw, map_lock, map_handoff;
	double copy_ps_per_byte;
	struct sw_env env;
	uint8_t num_vnis;
	uint16_t vnis[NIC_SVC_MAX_VNIS];
};

struct rpc_server_stats {
	uint64_t requests, requests_in_window, responses, posts, pool_extensions, mrecv_retired, mrecv_copies;
	uint64_t eagain, op_errors, recv_errors, canceled, duplicates, foreign, ux_posts, sw_matched;
	uint64_t fc_host_ps, rnr_host_ps, kernel_calls; /* provider host work priced by the cxi table */
	uint32_t posted_max, cq_backlog_max;
	uint64_t posted_now, in_use_now, backlog_now; /* timeseries gauges (sums over threads) */
	struct batch_means rate; /* requests taken in the window, by batch (set up at the first one) */
};

struct bulk_server;
struct srv_thread;
struct srv_engine;

struct rpc_server {
	struct rpc_server_cfg cfg;
	struct rpc_server_stats st;
	struct rpc_world world;
	struct srv_thread *threads;
	struct srv_engine *engines;
	uint32_t nthreads;
	struct nic *any_nic;
	struct pool req_pool;
	struct pool qchunks, qdescs; /* the threads' completion FIFOs: chunks of entries, and of bulk descriptors */
	struct bulk_server *bulk;
	struct rpc_fatal fatal;
	uint32_t *last_gen; /* per client slot: highest attempt generation delivered */
	uint32_t gen_n, gen_w;
};

/* rpc_client.c: the shape of the client set, for the server's exactly-once table. */
uint32_t rpc_client_count(const struct rpc_client_set *cs);
uint32_t rpc_client_window(const struct rpc_client_set *cs);

void rpc_server_nic_summary(struct sim *sim, struct rpc_server *s, FILE *f);

#endif
