/* Bulk RPCs (seed 000 section 4): the client registers an MR per RPC under an MR method, sends its
 * descriptor with the RPC, the server moves the data with an RMA and then responds, and the client
 * deregisters.  Transfer deadlines (section 4.3) keep a server from touching an MR the client may have
 * released after a timeout. */
#ifndef CXISIM_WORKLOAD_BULK_H
#define CXISIM_WORKLOAD_BULK_H

#include <stdio.h>

#include "rpc.h"

struct rpc_server;

/* Server side (rpc_server.c calls these). */
void bulk_server_read_cfg(struct rpc_server *s, const struct cfg *server_section);
void bulk_server_build(struct sim *sim, struct rpc_server *s);
void bulk_server_free(struct rpc_server *s);
/* The body of a just-delivered request: true and *out filled when it is a bulk RPC.  Called when the
 * request's completion is written, i.e. while the bytes the client sent are what its slot holds. */
bool bulk_snapshot(struct rpc_server *s, uint64_t hdr, struct bulk_desc *out);
simtime_t bulk_server_issue_cost(struct rpc_server *s);
/* Start the RMA for a bulk request (its completion comes back with `ctx`).  Returns 0 when started, or -1
 * when the server's deadline has passed (nothing is accessed; the RPC is answered with an error). */
int bulk_server_start(struct sim *sim, struct rpc_server *s, struct sw_ep *ep, const struct bulk_desc *d,
		      struct sw_addr client, void *ctx);
void bulk_server_done(struct rpc_server *s, int err);
void bulk_server_summary(struct rpc_server *s, FILE *f, double window_s);

/* Client side: the MR method's provider settings. */
void bulk_apply_mr_method(enum mr_method m, struct sw_env *env);
const char *bulk_mr_method_name(enum mr_method m);
const char *bulk_op_name(enum bulk_op op);

#endif
