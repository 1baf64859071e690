/* RMA data path: fi_read/fi_write/fi_writedata and their inject forms.  A write of at most the IDC size
 * carries its payload inside the command; everything else is moved by the NIC model's DMA engine, and the
 * target side completes with no call from the target application (its NIC reads or writes its memory).
 *
 * Command layout: slot 0 is struct cxs_cmd (tag = remote key, aux = remote offset), slot 1 carries the
 * remote CQ data (uint64 at offset 0), the inline payload follows from slot 2. */
#include <string.h>

#include "cxip.h"

#define RMA_EXT_BYTES 64

static ssize_t do_rma(struct cxip_ep *ep, bool write, const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
		      uint64_t key, uint64_t data, void *context, uint64_t flags)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & FI_RMA) || !(ep->caps & (write ? FI_WRITE : FI_READ)))
		return -FI_EINVAL;
	if (len && !buf)
		return -FI_EINVAL;
	if (len > CXIP_EP_MAX_MSG_SZ)
		return -FI_EMSGSIZE;
	bool prov_keys = (ep->dom->mr_mode & FI_MR_PROV_KEY) != 0;
	if ((!prov_keys && key >= (1ULL << 32)) || !sw_mr_key_valid(key))
		return -FI_EKEYREJECTED; /* as upstream: a key no MR can have */
	if ((flags & FI_INJECT) && (!write || len > CXIP_INJECT_SIZE))
		return -FI_EMSGSIZE;
	/* Remote CQ data needs the domain's writedata support (FI_CXI_ENABLE_WRITEDATA, provider keys). */
	if ((flags & FI_REMOTE_CQ_DATA) && (!write || !ep->dom->writedata))
		return -FI_EBADFLAGS;
	struct cxs_cmd cmd = { .op = write ? CXS_CMD_WRITE : CXS_CMD_READ, .context = (uint64_t)(uintptr_t)context,
			       .addr = (uint64_t)(uintptr_t)buf, .len = len, .tag = key, .aux = addr };
	int ret = cxip_ep_cmd_peer(ep, dest, &cmd);
	if (ret)
		return ret;
	cmd.flags |= cxip_tx_cmd_flags(flags);
	if (cxip_ep_want_completion(ep, flags, true))
		cmd.flags |= CXS_F_COMPLETION;
	unsigned char payload[RMA_EXT_BYTES + CXIP_INJECT_SIZE];
	memset(payload, 0, RMA_EXT_BYTES);
	memcpy(payload, &data, sizeof(data));
	size_t extra = RMA_EXT_BYTES;
	if (write && ((flags & FI_INJECT) || (len <= CXIP_INJECT_SIZE && !cxip_tx_data_deferred(flags)))) {
		cmd.flags |= CXS_F_INJECT;
		if (len)
			memcpy(payload + RMA_EXT_BYTES, buf, len);
		extra += len;
	}
	return cxip_ep_emit(ep, &cmd, payload, extra);
}

/* fi_readv / fi_writev: at most one iovec, the endpoint's default op flags. */
static ssize_t rma_iov(struct fid_ep *fid, bool write, const struct iovec *iov, size_t count, fi_addr_t peer,
		       uint64_t addr, uint64_t key, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	void *buf;
	size_t len;
	int ret = cxip_one_iov(iov, count, &buf, &len);
	return ret ? ret : do_rma(ep, write, buf, len, peer, addr, key, 0, context, ep->tx_op_flags);
}

/* fi_readmsg / fi_writemsg: at most one local iovec, exactly one remote one of the same length; remote CQ
 * data only for writes. */
static ssize_t rma_msg(struct fid_ep *fid, bool write, const struct fi_msg_rma *msg, uint64_t flags)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (!msg || msg->iov_count > 1 || msg->rma_iov_count != 1 || (msg->iov_count && !msg->msg_iov) || !msg->rma_iov)
		return -FI_EINVAL;
	if (flags & ~CXIP_TX_CALL_FLAGS)
		return -FI_EBADFLAGS;
	const struct iovec *v = msg->iov_count ? &msg->msg_iov[0] : NULL;
	if (v && v->iov_len != msg->rma_iov[0].len)
		return -FI_EINVAL;
	return do_rma(ep, write, v ? v->iov_base : NULL, v ? v->iov_len : 0, msg->addr, msg->rma_iov[0].addr,
		      msg->rma_iov[0].key, write ? msg->data : 0, msg->context, flags);
}

static ssize_t rma_read(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr,
			uint64_t key, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_rma(ep, false, buf, len, src, addr, key, 0, context, ep->tx_op_flags);
}

static ssize_t rma_readv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	(void)desc;
	return rma_iov(fid, false, iov, count, src, addr, key, context);
}

static ssize_t rma_readmsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(fid, false, msg, flags);
}

static ssize_t rma_write(struct fid_ep *fid, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_rma(ep, true, buf, len, dest, addr, key, 0, context, ep->tx_op_flags);
}

static ssize_t rma_writev(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	(void)desc;
	return rma_iov(fid, true, iov, count, dest, addr, key, context);
}

static ssize_t rma_writemsg(struct fid_ep *fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(fid, true, msg, flags);
}

static ssize_t rma_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
			  uint64_t key)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	return do_rma(ep, true, buf, len, dest, addr, key, 0, NULL, FI_INJECT | CXIP_NO_COMPLETION);
}

static ssize_t rma_writedata(struct fid_ep *fid, const void *buf, size_t len, void *desc, uint64_t data,
			     fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	if (!ep->dom->writedata)
		return -FI_ENOSYS; /* as upstream without FI_CXI_ENABLE_WRITEDATA (fi_no_rma_writedata) */
	return do_rma(ep, true, buf, len, dest, addr, key, data, context, ep->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t rma_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
			      uint64_t addr, uint64_t key)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (!ep->dom->writedata)
		return -FI_ENOSYS;
	return do_rma(ep, true, buf, len, dest, addr, key, data, NULL,
		      FI_INJECT | FI_REMOTE_CQ_DATA | CXIP_NO_COMPLETION);
}

struct fi_ops_rma cxip_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};
