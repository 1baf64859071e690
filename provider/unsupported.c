/* Atomics and collectives are not offered (neither FI_ATOMIC nor FI_COLLECTIVE is in the caps), but their
 * op tables must exist: libfabric's inline wrappers call through them unconditionally, and misuse must give
 * -FI_ENOSYS, not a crash. */
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>

#include "cxip.h"

#define NOSYS return -FI_ENOSYS

static ssize_t a_write(struct fid_ep *e, const void *b, size_t c, void *d, fi_addr_t da, uint64_t a, uint64_t k,
		       enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)da, (void)a, (void)k, (void)dt, (void)op, (void)ctx;
	NOSYS;
}

static ssize_t a_writev(struct fid_ep *e, const struct fi_ioc *iov, void **d, size_t c, fi_addr_t da, uint64_t a,
			uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)e, (void)iov, (void)d, (void)c, (void)da, (void)a, (void)k, (void)dt, (void)op, (void)ctx;
	NOSYS;
}

static ssize_t a_writemsg(struct fid_ep *e, const struct fi_msg_atomic *m, uint64_t f)
{
	(void)e, (void)m, (void)f;
	NOSYS;
}

static ssize_t a_inject(struct fid_ep *e, const void *b, size_t c, fi_addr_t da, uint64_t a, uint64_t k,
			enum fi_datatype dt, enum fi_op op)
{
	(void)e, (void)b, (void)c, (void)da, (void)a, (void)k, (void)dt, (void)op;
	NOSYS;
}

static ssize_t a_rw(struct fid_ep *e, const void *b, size_t c, void *d, void *r, void *rd, fi_addr_t da, uint64_t a,
		    uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)r, (void)rd, (void)da, (void)a, (void)k, (void)dt, (void)op, (void)ctx;
	NOSYS;
}

static ssize_t a_rwv(struct fid_ep *e, const struct fi_ioc *iov, void **d, size_t c, struct fi_ioc *rv, void **rd,
		     size_t rc, fi_addr_t da, uint64_t a, uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)e, (void)iov, (void)d, (void)c, (void)rv, (void)rd, (void)rc, (void)da, (void)a, (void)k, (void)dt;
	(void)op, (void)ctx;
	NOSYS;
}

static ssize_t a_rwmsg(struct fid_ep *e, const struct fi_msg_atomic *m, struct fi_ioc *rv, void **rd, size_t rc,
		       uint64_t f)
{
	(void)e, (void)m, (void)rv, (void)rd, (void)rc, (void)f;
	NOSYS;
}

static ssize_t a_cw(struct fid_ep *e, const void *b, size_t c, void *d, const void *cmp, void *cd, void *r, void *rd,
		    fi_addr_t da, uint64_t a, uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)e, (void)b, (void)c, (void)d, (void)cmp, (void)cd, (void)r, (void)rd, (void)da, (void)a, (void)k;
	(void)dt, (void)op, (void)ctx;
	NOSYS;
}

static ssize_t a_cwv(struct fid_ep *e, const struct fi_ioc *iov, void **d, size_t c, const struct fi_ioc *cv,
		     void **cd, size_t cc, struct fi_ioc *rv, void **rd, size_t rc, fi_addr_t da, uint64_t a, uint64_t k,
		     enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)e, (void)iov, (void)d, (void)c, (void)cv, (void)cd, (void)cc, (void)rv, (void)rd, (void)rc, (void)da;
	(void)a, (void)k, (void)dt, (void)op, (void)ctx;
	NOSYS;
}

static ssize_t a_cwmsg(struct fid_ep *e, const struct fi_msg_atomic *m, const struct fi_ioc *cv, void **cd, size_t cc,
		       struct fi_ioc *rv, void **rd, size_t rc, uint64_t f)
{
	(void)e, (void)m, (void)cv, (void)cd, (void)cc, (void)rv, (void)rd, (void)rc, (void)f;
	NOSYS;
}

static int a_valid(struct fid_ep *e, enum fi_datatype dt, enum fi_op op, size_t *c)
{
	(void)e, (void)dt, (void)op, (void)c;
	NOSYS;
}

struct fi_ops_atomic cxip_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = a_write,
	.writev = a_writev,
	.writemsg = a_writemsg,
	.inject = a_inject,
	.readwrite = a_rw,
	.readwritev = a_rwv,
	.readwritemsg = a_rwmsg,
	.compwrite = a_cw,
	.compwritev = a_cwv,
	.compwritemsg = a_cwmsg,
	.writevalid = a_valid,
	.readwritevalid = a_valid,
	.compwritevalid = a_valid,
};

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
