/* Atomics (FI_ATOMIC): fi_atomic, fi_fetch_atomic, fi_compare_atomic and their v/msg/inject forms,
 * fi_query_atomic and the *valid calls.  Cassini executes atomics in the NIC on single elements; the
 * (operation, datatype) pairs offered are upstream prov/cxi's (cxip_atomic.c), per request kind, and each
 * call maps fi_op/fi_datatype onto the NIC's AMO codes as upstream does:
 *   FI_ATOMIC_READ   -> SUM of zero, fetching
 *   FI_ATOMIC_WRITE  -> CSWAP NE with op1 = op2 = value (so SWAP stays free for the PCIe remap upstream has)
 *   FI_CSWAP_*       -> CSWAP with the comparison; op2 = compare
 *   FI_MSWAP         -> AXOR with op1 = value & mask, op2 = mask
 * The operands travel in the command (struct cxs_amo); a fetching atomic's previous value is written by the
 * NIC model into the result buffer.  count must be 1 (the NIC has no vector atomics; *valid reports 1). */
#include <string.h>

#include "../sim/nic/cassini.h"
#include "cxip.h"

enum amo_kind { AMO_PLAIN, AMO_FETCH, AMO_SWAP, AMO_KINDS };

/* Valid datatypes per (kind, op), one bit per enum fi_datatype (FI_INT8 = bit 0 ... FI_UINT128 = bit 15),
 * as upstream's table: integers 0x00ff, + float/double 0x03ff, + complex 0x0fff, + 128-bit (CSWAP) 0xcfff. */
static const uint16_t amo_valid[AMO_KINDS][FI_ATOMIC_OP_LAST] = {
	[AMO_PLAIN] = { [FI_MIN] = 0x03ff, [FI_MAX] = 0x03ff, [FI_SUM] = 0x0fff, [FI_LOR] = 0x00ff,
			[FI_LAND] = 0x00ff, [FI_LXOR] = 0x00ff, [FI_BOR] = 0x00ff, [FI_BAND] = 0x00ff,
			[FI_BXOR] = 0x00ff, [FI_ATOMIC_WRITE] = 0x0fff },
	[AMO_FETCH] = { [FI_MIN] = 0x03ff, [FI_MAX] = 0x03ff, [FI_SUM] = 0x0fff, [FI_LOR] = 0x00ff,
			[FI_LAND] = 0x00ff, [FI_LXOR] = 0x00ff, [FI_BOR] = 0x00ff, [FI_BAND] = 0x00ff,
			[FI_BXOR] = 0x00ff, [FI_ATOMIC_WRITE] = 0x0fff, [FI_ATOMIC_READ] = 0x0fff },
	[AMO_SWAP] = { [FI_CSWAP] = 0xcfff, [FI_CSWAP_NE] = 0x0fff, [FI_CSWAP_LE] = 0x03ff, [FI_CSWAP_LT] = 0x03ff,
		       [FI_CSWAP_GE] = 0x03ff, [FI_CSWAP_GT] = 0x03ff, [FI_MSWAP] = 0x00ff },
};

static const uint8_t amo_type_code[] = {
	[FI_INT8] = C_AMO_TYPE_INT8_T,
	[FI_UINT8] = C_AMO_TYPE_UINT8_T,
	[FI_INT16] = C_AMO_TYPE_INT16_T,
	[FI_UINT16] = C_AMO_TYPE_UINT16_T,
	[FI_INT32] = C_AMO_TYPE_INT32_T,
	[FI_UINT32] = C_AMO_TYPE_UINT32_T,
	[FI_INT64] = C_AMO_TYPE_INT64_T,
	[FI_UINT64] = C_AMO_TYPE_UINT64_T,
	[FI_FLOAT] = C_AMO_TYPE_FLOAT_T,
	[FI_DOUBLE] = C_AMO_TYPE_DOUBLE_T,
	[FI_FLOAT_COMPLEX] = C_AMO_TYPE_FLOAT_COMPLEX_T,
	[FI_DOUBLE_COMPLEX] = C_AMO_TYPE_DOUBLE_COMPLEX_T,
	[FI_LONG_DOUBLE] = C_AMO_TYPE_LAST, /* never valid */
	[FI_LONG_DOUBLE_COMPLEX] = C_AMO_TYPE_LAST,
	[FI_INT128] = C_AMO_TYPE_UINT128_T, /* only CSWAP EQ: signedness does not matter */
	[FI_UINT128] = C_AMO_TYPE_UINT128_T,
};

static const uint8_t amo_type_size[] = {
	[FI_INT8] = 1,	   [FI_UINT8] = 1,	    [FI_INT16] = 2,	     [FI_UINT16] = 2,
	[FI_INT32] = 4,	   [FI_UINT32] = 4,	    [FI_INT64] = 8,	     [FI_UINT64] = 8,
	[FI_FLOAT] = 4,	   [FI_DOUBLE] = 8,	    [FI_FLOAT_COMPLEX] = 8, [FI_DOUBLE_COMPLEX] = 16,
	[FI_INT128] = 16,  [FI_UINT128] = 16,
};

struct amo_code {
	uint8_t op, cswap, type, size;
};

/* The NIC codes of a request: -FI_EINVAL for values outside the enums, -FI_EOPNOTSUPP for a pair the
 * kind does not offer. */
static int amo_opcode(enum amo_kind kind, enum fi_datatype dt, enum fi_op op, struct amo_code *c)
{
	if ((int)dt < 0 || dt > FI_UINT128 || (int)op < 0 || op >= FI_ATOMIC_OP_LAST)
		return -FI_EINVAL;
	if (!(amo_valid[kind][op] & (1u << dt)))
		return -FI_EOPNOTSUPP;
	if (!c)
		return 0;
	c->type = amo_type_code[dt];
	c->size = amo_type_size[dt];
	c->cswap = 0;
	switch (op) {
	case FI_MIN: c->op = C_AMO_OP_MIN; break;
	case FI_MAX: c->op = C_AMO_OP_MAX; break;
	case FI_SUM:
	case FI_ATOMIC_READ: c->op = C_AMO_OP_SUM; break;
	case FI_LOR: c->op = C_AMO_OP_LOR; break;
	case FI_LAND: c->op = C_AMO_OP_LAND; break;
	case FI_LXOR: c->op = C_AMO_OP_LXOR; break;
	case FI_BOR: c->op = C_AMO_OP_BOR; break;
	case FI_BAND: c->op = C_AMO_OP_BAND; break;
	case FI_BXOR: c->op = C_AMO_OP_BXOR; break;
	case FI_MSWAP: c->op = C_AMO_OP_AXOR; break;
	case FI_ATOMIC_WRITE: c->op = C_AMO_OP_CSWAP; c->cswap = C_AMO_OP_CSWAP_NE; break;
	case FI_CSWAP: c->op = C_AMO_OP_CSWAP; c->cswap = C_AMO_OP_CSWAP_EQ; break;
	case FI_CSWAP_NE: c->op = C_AMO_OP_CSWAP; c->cswap = C_AMO_OP_CSWAP_NE; break;
	case FI_CSWAP_LE: c->op = C_AMO_OP_CSWAP; c->cswap = C_AMO_OP_CSWAP_LE; break;
	case FI_CSWAP_LT: c->op = C_AMO_OP_CSWAP; c->cswap = C_AMO_OP_CSWAP_LT; break;
	case FI_CSWAP_GE: c->op = C_AMO_OP_CSWAP; c->cswap = C_AMO_OP_CSWAP_GE; break;
	case FI_CSWAP_GT: c->op = C_AMO_OP_CSWAP; c->cswap = C_AMO_OP_CSWAP_GT; break;
	default: return -FI_EOPNOTSUPP;
	}
	return 0;
}

int cxip_query_atomic(enum fi_datatype dt, enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	enum amo_kind kind = (flags & FI_COMPARE_ATOMIC) ? AMO_SWAP : (flags & FI_FETCH_ATOMIC) ? AMO_FETCH : AMO_PLAIN;
	struct amo_code c;
	int ret = amo_opcode(kind, dt, op, &c);
	if (ret)
		return ret;
	if (attr) {
		attr->count = 1;
		attr->size = c.size;
	}
	return 0;
}

/* One atomic request, as every entry point reduces to it. */
struct amo_req {
	enum amo_kind kind;
	const void *buf;
	size_t count;
	const void *compare;
	void *result;
	fi_addr_t dest;
	uint64_t addr, key;
	enum fi_datatype dt;
	enum fi_op op;
	void *context;
	uint64_t flags;
};

static ssize_t amo_submit(struct cxip_ep *ep, const struct amo_req *r)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	uint64_t need = FI_ATOMIC | (r->kind == AMO_PLAIN ? FI_WRITE : FI_READ);
	if ((ep->caps & need) != need)
		return -FI_EINVAL;
	if (r->flags & ~((CXIP_TX_CALL_FLAGS & ~FI_REMOTE_CQ_DATA) | CXIP_NO_COMPLETION))
		return -FI_EBADFLAGS;
	struct amo_code c;
	int ret = amo_opcode(r->kind, r->dt, r->op, &c);
	if (ret)
		return ret;
	/* Single-element atomics only (as Cassini). */
	if (r->count != 1)
		return -FI_EINVAL;
	if (!r->buf && r->op != FI_ATOMIC_READ)
		return -FI_EINVAL;
	if (r->kind != AMO_PLAIN && !r->result)
		return -FI_EINVAL;
	if (r->kind == AMO_SWAP && !r->compare)
		return -FI_EINVAL;
	bool prov_keys = (ep->dom->mr_mode & FI_MR_PROV_KEY) != 0;
	if ((!prov_keys && r->key >= (1ULL << 32)) || !sw_mr_key_valid(r->key))
		return -FI_EKEYREJECTED; /* as upstream: a key no MR can have */
	struct cxs_amo a;
	memset(&a, 0, sizeof(a));
	a.op = c.op;
	a.cswap = c.cswap;
	a.type = c.type;
	a.fetch = r->kind != AMO_PLAIN;
	uint8_t *op1 = a.operands, *op2 = a.operands + C_AMO_OPERAND_BYTES;
	if (r->op != FI_ATOMIC_READ)
		memcpy(op1, r->buf, c.size); /* FI_ATOMIC_READ: a sum of zero */
	if (r->op == FI_ATOMIC_WRITE)
		memcpy(op2, r->buf, c.size);
	else if (r->kind == AMO_SWAP)
		memcpy(op2, r->compare, c.size);
	if (r->op == FI_MSWAP)
		for (unsigned i = 0; i < c.size; i++)
			op1[i] &= op2[i];
	struct cxs_cmd cmd = { .op = CXS_CMD_ATOMIC, .context = (uint64_t)(uintptr_t)r->context,
			       .addr = a.fetch ? (uint64_t)(uintptr_t)r->result : 0, .len = c.size, .tag = r->key,
			       .aux = r->addr };
	ret = cxip_ep_cmd_peer(ep, r->dest, &cmd);
	if (ret)
		return ret;
	cmd.flags |= cxip_tx_cmd_flags(r->flags);
	if (cxip_ep_want_completion(ep, r->flags, true))
		cmd.flags |= CXS_F_COMPLETION;
	return cxip_ep_emit(ep, &cmd, &a, sizeof(a));
}

/* The single element of an ioc vector (count 1 of one entry, as upstream checks). */
static int one_ioc(const struct fi_ioc *v, size_t n, const void **buf, size_t *count)
{
	if (n != 1 || !v)
		return -FI_EINVAL;
	*buf = v[0].addr;
	*count = v[0].count;
	return 0;
}

static int one_rma_ioc(const struct fi_msg_atomic *m)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov || m->rma_iov[0].count != 1)
		return -FI_EINVAL;
	return 0;
}

#define EP(fid) ((struct cxip_ep *)(fid))

static ssize_t a_write(struct fid_ep *e, const void *b, size_t c, void *d, fi_addr_t da, uint64_t a, uint64_t k,
		       enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)d;
	struct amo_req r = { .kind = AMO_PLAIN, .buf = b, .count = c, .dest = da, .addr = a, .key = k, .dt = dt,
			     .op = op, .context = ctx, .flags = EP(e)->tx_op_flags };
	return amo_submit(EP(e), &r);
}

static ssize_t a_writev(struct fid_ep *e, const struct fi_ioc *iov, void **d, size_t c, fi_addr_t da, uint64_t a,
			uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)d;
	struct amo_req r = { .kind = AMO_PLAIN, .dest = da, .addr = a, .key = k, .dt = dt, .op = op, .context = ctx,
			     .flags = EP(e)->tx_op_flags };
	int ret = one_ioc(iov, c, &r.buf, &r.count);
	return ret ? ret : amo_submit(EP(e), &r);
}

static ssize_t a_writemsg(struct fid_ep *e, const struct fi_msg_atomic *m, uint64_t f)
{
	int ret = one_rma_ioc(m);
	if (ret)
		return ret;
	struct amo_req r = { .kind = AMO_PLAIN, .dest = m->addr, .addr = m->rma_iov[0].addr, .key = m->rma_iov[0].key,
			     .dt = m->datatype, .op = m->op, .context = m->context, .flags = f };
	ret = one_ioc(m->msg_iov, m->iov_count, &r.buf, &r.count);
	return ret ? ret : amo_submit(EP(e), &r);
}

static ssize_t a_inject(struct fid_ep *e, const void *b, size_t c, fi_addr_t da, uint64_t a, uint64_t k,
			enum fi_datatype dt, enum fi_op op)
{
	struct amo_req r = { .kind = AMO_PLAIN, .buf = b, .count = c, .dest = da, .addr = a, .key = k, .dt = dt,
			     .op = op, .flags = FI_INJECT | CXIP_NO_COMPLETION };
	return amo_submit(EP(e), &r);
}

static ssize_t a_rw(struct fid_ep *e, const void *b, size_t c, void *d, void *res, void *rd, fi_addr_t da,
		    uint64_t a, uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)d, (void)rd;
	struct amo_req r = { .kind = AMO_FETCH, .buf = b, .count = c, .result = res, .dest = da, .addr = a, .key = k,
			     .dt = dt, .op = op, .context = ctx, .flags = EP(e)->tx_op_flags };
	return amo_submit(EP(e), &r);
}

static ssize_t a_rwv(struct fid_ep *e, const struct fi_ioc *iov, void **d, size_t c, struct fi_ioc *rv, void **rd,
		     size_t rc, fi_addr_t da, uint64_t a, uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)d, (void)rd;
	struct amo_req r = { .kind = AMO_FETCH, .dest = da, .addr = a, .key = k, .dt = dt, .op = op, .context = ctx,
			     .flags = EP(e)->tx_op_flags };
	const void *res;
	size_t rcount;
	int ret = one_ioc(iov, c, &r.buf, &r.count);
	if (!ret)
		ret = one_ioc(rv, rc, &res, &rcount);
	if (ret || rcount != 1)
		return ret ? ret : -FI_EINVAL;
	r.result = (void *)res;
	return amo_submit(EP(e), &r);
}

static ssize_t a_rwmsg(struct fid_ep *e, const struct fi_msg_atomic *m, struct fi_ioc *rv, void **rd, size_t rc,
		       uint64_t f)
{
	(void)rd;
	int ret = one_rma_ioc(m);
	if (ret)
		return ret;
	struct amo_req r = { .kind = AMO_FETCH, .dest = m->addr, .addr = m->rma_iov[0].addr, .key = m->rma_iov[0].key,
			     .dt = m->datatype, .op = m->op, .context = m->context, .flags = f };
	const void *res;
	size_t rcount;
	/* FI_ATOMIC_READ needs no operand: its msg_iov may be empty. */
	if (m->op == FI_ATOMIC_READ && m->iov_count == 0)
		r.count = 1;
	else
		ret = one_ioc(m->msg_iov, m->iov_count, &r.buf, &r.count);
	if (!ret)
		ret = one_ioc(rv, rc, &res, &rcount);
	if (ret || rcount != 1)
		return ret ? ret : -FI_EINVAL;
	r.result = (void *)res;
	return amo_submit(EP(e), &r);
}


/* A compare atomic's operand, comparand and result each take exactly one element. */
static ssize_t cswap_submit(struct cxip_ep *ep, struct amo_req *r, const struct fi_ioc *iov, size_t c,
			    const struct fi_ioc *cv, size_t cc, struct fi_ioc *rv, size_t rc)
{
	const void *res;
	size_t ccount, rcount;
	int ret = one_ioc(iov, c, &r->buf, &r->count);
	if (!ret)
		ret = one_ioc(cv, cc, &r->compare, &ccount);
	if (!ret)
		ret = one_ioc(rv, rc, &res, &rcount);
	if (ret || ccount != 1 || rcount != 1)
		return ret ? ret : -FI_EINVAL;
	r->result = (void *)res;
	return amo_submit(ep, r);
}

static ssize_t a_cw(struct fid_ep *e, const void *b, size_t c, void *d, const void *cmp, void *cd, void *res,
		    void *rd, fi_addr_t da, uint64_t a, uint64_t k, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)d, (void)cd, (void)rd;
	struct amo_req r = { .kind = AMO_SWAP, .buf = b, .count = c, .compare = cmp, .result = res, .dest = da,
			     .addr = a, .key = k, .dt = dt, .op = op, .context = ctx, .flags = EP(e)->tx_op_flags };
	return amo_submit(EP(e), &r);
}

static ssize_t a_cwv(struct fid_ep *e, const struct fi_ioc *iov, void **d, size_t c, const struct fi_ioc *cv,
		     void **cd, size_t cc, struct fi_ioc *rv, void **rd, size_t rc, fi_addr_t da, uint64_t a, uint64_t k,
		     enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)d, (void)cd, (void)rd;
	struct amo_req r = { .kind = AMO_SWAP, .dest = da, .addr = a, .key = k, .dt = dt, .op = op, .context = ctx,
			     .flags = EP(e)->tx_op_flags };
	return cswap_submit(EP(e), &r, iov, c, cv, cc, rv, rc);
}

static ssize_t a_cwmsg(struct fid_ep *e, const struct fi_msg_atomic *m, const struct fi_ioc *cv, void **cd, size_t cc,
		       struct fi_ioc *rv, void **rd, size_t rc, uint64_t f)
{
	(void)cd, (void)rd;
	int ret = one_rma_ioc(m);
	if (ret)
		return ret;
	struct amo_req r = { .kind = AMO_SWAP, .dest = m->addr, .addr = m->rma_iov[0].addr, .key = m->rma_iov[0].key,
			     .dt = m->datatype, .op = m->op, .context = m->context, .flags = f };
	return cswap_submit(EP(e), &r, m->msg_iov, m->iov_count, cv, cc, rv, rc);
}

static int valid_kind(struct fid_ep *e, enum amo_kind kind, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	(void)e;
	int ret = amo_opcode(kind, dt, op, NULL);
	if (!ret && count)
		*count = 1;
	return ret;
}

static int a_writevalid(struct fid_ep *e, enum fi_datatype dt, enum fi_op op, size_t *c)
{
	return valid_kind(e, AMO_PLAIN, dt, op, c);
}

static int a_readwritevalid(struct fid_ep *e, enum fi_datatype dt, enum fi_op op, size_t *c)
{
	return valid_kind(e, AMO_FETCH, dt, op, c);
}

static int a_compwritevalid(struct fid_ep *e, enum fi_datatype dt, enum fi_op op, size_t *c)
{
	return valid_kind(e, AMO_SWAP, dt, op, c);
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
	.writevalid = a_writevalid,
	.readwritevalid = a_readwritevalid,
	.compwritevalid = a_compwritevalid,
};
