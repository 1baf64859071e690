/* Collectives are not offered (FI_COLLECTIVE is not in the caps), but their op table must exist: libfabric's
 * inline wrappers call through it unconditionally, and misuse must give -FI_ENOSYS, not a crash. */
#include <rdma/fi_collective.h>

#include "cxip.h"

#define NOSYS return -FI_ENOSYS

static ssize_t c_barrier(struct fid_ep *e, fi_addr_t a, void *ctx)
{
	(void)e, (void)a, (void)ctx;
	NOSYS;
}

static ssize_t c_bcast(struct fid_ep *e, void *b, size_t c, void *d, fi_addr_t ca, fi_addr_t ra, enum fi_datatype dt,
		       uint64_t f, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)ca, (void)ra, (void)dt, (void)f, (void)ctx;
	NOSYS;
}

static ssize_t c_a2a(struct fid_ep *e, const void *b, size_t c, void *d, void *r, void *rd, fi_addr_t ca,
		     enum fi_datatype dt, uint64_t f, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)r, (void)rd, (void)ca, (void)dt, (void)f, (void)ctx;
	NOSYS;
}

static ssize_t c_ared(struct fid_ep *e, const void *b, size_t c, void *d, void *r, void *rd, fi_addr_t ca,
		      enum fi_datatype dt, enum fi_op op, uint64_t f, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)r, (void)rd, (void)ca, (void)dt, (void)op, (void)f, (void)ctx;
	NOSYS;
}

static ssize_t c_red(struct fid_ep *e, const void *b, size_t c, void *d, void *r, void *rd, fi_addr_t ca, fi_addr_t ra,
		     enum fi_datatype dt, enum fi_op op, uint64_t f, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)r, (void)rd, (void)ca, (void)ra, (void)dt, (void)op, (void)f, (void)ctx;
	NOSYS;
}

static ssize_t c_scat(struct fid_ep *e, const void *b, size_t c, void *d, void *r, void *rd, fi_addr_t ca,
		      fi_addr_t ra, enum fi_datatype dt, uint64_t f, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)r, (void)rd, (void)ca, (void)ra, (void)dt, (void)f, (void)ctx;
	NOSYS;
}

static ssize_t c_msg(struct fid_ep *e, const struct fi_msg_collective *m, struct fi_ioc *rv, void **rd, size_t rc,
		     uint64_t f)
{
	(void)e, (void)m, (void)rv, (void)rd, (void)rc, (void)f;
	NOSYS;
}

static ssize_t c_barrier2(struct fid_ep *e, fi_addr_t a, uint64_t f, void *ctx)
{
	(void)e, (void)a, (void)f, (void)ctx;
	NOSYS;
}

struct fi_ops_collective cxip_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = c_barrier,
	.broadcast = c_bcast,
	.alltoall = c_a2a,
	.allreduce = c_ared,
	.allgather = c_a2a,
	.reduce_scatter = c_ared,
	.reduce = c_red,
	.scatter = c_scat,
	.gather = c_scat,
	.msg = c_msg,
	.barrier2 = c_barrier2,
};
