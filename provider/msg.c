/* Messaging data path (fi_msg and fi_tagged): argument checks with the upstream error codes, then one
 * command per operation on the endpoint's command queue.  Payloads of inject sends and of sends up to the
 * IDC limit travel inside the command (as Cassini's IDC commands carry them); larger payloads are read by
 * the NIC model's DMA engine from this process's memory when it executes the Put. */
#include <string.h>

#include "cxip.h"

static ssize_t do_send(struct cxip_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag,
		       uint64_t data, void *context, uint64_t flags, bool tagged)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & (tagged ? FI_TAGGED : FI_MSG)))
		return -FI_EINVAL;
	if (len && !buf)
		return -FI_EINVAL;
	if (len > CXIP_EP_MAX_MSG_SZ)
		return -FI_EMSGSIZE;
	uint64_t tag_mask = ep->protocol == FI_PROTO_CXI_RNR ? (1ULL << CXIP_RNR_TAG_WIDTH) - 1 : CXIP_TAG_MASK;
	if (tagged && (tag & ~tag_mask))
		return -FI_EINVAL;
	if (flags & FI_INJECT) {
		size_t limit = ep->protocol == FI_PROTO_CXI_RNR ? 0 : CXIP_INJECT_SIZE;
		if (len > limit)
			return -FI_EMSGSIZE;
	}
	struct cxs_cmd cmd = { .op = CXS_CMD_SEND, .context = (uint64_t)(uintptr_t)context, .addr = (uint64_t)(uintptr_t)buf,
			       .len = len, .tag = tagged ? tag : 0, .aux = data };
	int ret = cxip_ep_cmd_peer(ep, dest, &cmd);
	if (ret)
		return ret;
	if (tagged)
		cmd.flags |= CXS_F_TAGGED;
	cmd.flags |= cxip_tx_cmd_flags(flags);
	if (flags & FI_MORE)
		cmd.flags |= CXS_F_MORE;
	/* fi_inject() calls never complete in the CQ (only errors do); other sends follow the binding. */
	if (cxip_ep_want_completion(ep, flags, true))
		cmd.flags |= CXS_F_COMPLETION;
	bool idc = (flags & FI_INJECT) ||
		   (len <= CXIP_INJECT_SIZE && !cxip_env.disable_non_inject_msg_idc && !cxip_tx_data_deferred(flags));
	if (idc) {
		cmd.flags |= CXS_F_INJECT;
		return cxip_ep_emit(ep, &cmd, buf, len);
	}
	return cxip_ep_emit(ep, &cmd, NULL, 0);
}

static ssize_t do_recv(struct cxip_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag, uint64_t ignore,
		       void *context, uint64_t flags, bool tagged)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & (tagged ? FI_TAGGED : FI_MSG)))
		return -FI_EINVAL;
	if (len && !buf && !(flags & (FI_PEEK | FI_DISCARD)))
		return -FI_EINVAL;
	if (len > CXIP_EP_MAX_MSG_SZ)
		return -FI_EMSGSIZE;
	if ((flags & FI_MULTI_RECV) && (tagged || !(ep->caps & FI_MULTI_RECV)))
		return -FI_EINVAL; /* multi-receive buffers are untagged only */
	if ((flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) && !tagged)
		return -FI_EINVAL;
	if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM)))
		return -FI_EINVAL;
	struct cxs_cmd cmd = { .op = CXS_CMD_RECV, .context = (uint64_t)(uintptr_t)context, .addr = (uint64_t)(uintptr_t)buf,
			       .len = len, .tag = tagged ? tag : 0, .aux = tagged ? ignore : 0,
			       .vni = ep->auth_key.vni, .peer = 0 };
	if ((ep->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC) {
		int ret = cxip_ep_cmd_peer(ep, src, &cmd);
		if (ret)
			return ret;
		cmd.flags |= CXS_F_DIRECTED;
	}
	if (tagged)
		cmd.flags |= CXS_F_TAGGED;
	if (flags & FI_MULTI_RECV)
		cmd.flags |= CXS_F_MULTI_RECV;
	if (flags & FI_PEEK)
		cmd.flags |= CXS_F_PEEK;
	if (flags & FI_CLAIM)
		cmd.flags |= CXS_F_CLAIM;
	if (flags & FI_DISCARD)
		cmd.flags |= CXS_F_DISCARD;
	if (cxip_ep_want_completion(ep, flags, false) || (flags & FI_PEEK))
		cmd.flags |= CXS_F_COMPLETION;
	if (cxip_env.trunc_ok)
		cmd.flags |= CXS_F_TRUNC_OK;
	return cxip_ep_emit(ep, &cmd, NULL, 0);
}

/* The send and receive forms of each call differ only in the direction and the flags they may pass; aux is
 * the remote CQ data of a send, the ignore bits of a receive. */
static ssize_t post(struct cxip_ep *ep, bool send, void *buf, size_t len, fi_addr_t addr, uint64_t tag, uint64_t aux,
		    void *context, uint64_t flags, bool tagged)
{
	return send ? do_send(ep, buf, len, addr, tag, aux, context, flags, tagged)
		    : do_recv(ep, buf, len, addr, tag, aux, context, flags, tagged);
}

/* fi_sendv, fi_recvv and their tagged forms: at most one iovec, the endpoint's default op flags. */
static ssize_t post_iov(struct fid_ep *fid, bool send, const struct iovec *iov, size_t count, fi_addr_t addr,
			uint64_t tag, uint64_t aux, void *context, bool tagged)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	void *buf;
	size_t len;
	int ret = cxip_one_iov(iov, count, &buf, &len);
	return ret ? ret
		   : post(ep, send, buf, len, addr, tag, aux, context, send ? ep->tx_op_flags : ep->rx_op_flags, tagged);
}

/* fi_sendmsg, fi_recvmsg and their tagged forms: flags outside `allowed` are -FI_EBADFLAGS. */
static ssize_t post_msg(struct fid_ep *fid, bool send, const struct iovec *iov, size_t count, fi_addr_t addr,
			uint64_t tag, uint64_t aux, void *context, uint64_t flags, uint64_t allowed, bool tagged)
{
	if (flags & ~allowed)
		return -FI_EBADFLAGS;
	void *buf;
	size_t len;
	int ret = cxip_one_iov(iov, count, &buf, &len);
	return ret ? ret : post((struct cxip_ep *)fid, send, buf, len, addr, tag, aux, context, flags, tagged);
}

/* ---- fi_msg ---- */

static ssize_t msg_recv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_recv(ep, buf, len, src, 0, 0, context, ep->rx_op_flags, false);
}

static ssize_t msg_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			 void *context)
{
	(void)desc;
	return post_iov(fid, false, iov, count, src, 0, 0, context, false);
}

static ssize_t msg_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_msg(fid, false, msg->msg_iov, msg->iov_count, msg->addr, 0, 0, msg->context, flags,
			CXIP_RX_OP_FLAGS | FI_REMOTE_CQ_DATA, false);
}

static ssize_t msg_send(struct fid_ep *fid, const void *buf, size_t len, void *desc, fi_addr_t dest, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_send(ep, buf, len, dest, 0, 0, context, ep->tx_op_flags, false);
}

static ssize_t msg_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			 void *context)
{
	(void)desc;
	return post_iov(fid, true, iov, count, dest, 0, 0, context, false);
}

static ssize_t msg_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_msg(fid, true, msg->msg_iov, msg->iov_count, msg->addr, 0, msg->data, msg->context, flags,
			CXIP_TX_CALL_FLAGS, false);
}

static ssize_t msg_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	return do_send(ep, buf, len, dest, 0, 0, NULL, FI_INJECT | CXIP_NO_COMPLETION, false);
}

static ssize_t msg_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc, uint64_t data,
			    fi_addr_t dest, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_send(ep, buf, len, dest, 0, data, context, ep->tx_op_flags | FI_REMOTE_CQ_DATA, false);
}

static ssize_t msg_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data, fi_addr_t dest)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	return do_send(ep, buf, len, dest, 0, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA | CXIP_NO_COMPLETION, false);
}

struct fi_ops_msg cxip_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

/* ---- fi_tagged ---- */

static ssize_t tag_recv(struct fid_ep *fid, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
			uint64_t ignore, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_recv(ep, buf, len, src, tag, ignore, context, ep->rx_op_flags, true);
}

static ssize_t tag_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *context)
{
	(void)desc;
	return post_iov(fid, false, iov, count, src, tag, ignore, context, true);
}

static ssize_t tag_recvmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_msg(fid, false, msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->ignore, msg->context,
			flags, CXIP_RX_OP_FLAGS | FI_PEEK | FI_CLAIM | FI_DISCARD | FI_REMOTE_CQ_DATA, true);
}

static ssize_t tag_send(struct fid_ep *fid, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag,
			void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_send(ep, buf, len, dest, tag, 0, context, ep->tx_op_flags, true);
}

static ssize_t tag_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			 uint64_t tag, void *context)
{
	(void)desc;
	return post_iov(fid, true, iov, count, dest, tag, 0, context, true);
}

static ssize_t tag_sendmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_msg(fid, true, msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->data, msg->context, flags,
			CXIP_TX_CALL_FLAGS, true);
}

static ssize_t tag_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest, uint64_t tag)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	return do_send(ep, buf, len, dest, tag, 0, NULL, FI_INJECT | CXIP_NO_COMPLETION, true);
}

static ssize_t tag_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc, uint64_t data,
			    fi_addr_t dest, uint64_t tag, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	(void)desc;
	return do_send(ep, buf, len, dest, tag, data, context, ep->tx_op_flags | FI_REMOTE_CQ_DATA, true);
}

static ssize_t tag_injectdata(struct fid_ep *fid, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
			      uint64_t tag)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	return do_send(ep, buf, len, dest, tag, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA | CXIP_NO_COMPLETION, true);
}

struct fi_ops_tagged cxip_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tag_recv,
	.recvv = tag_recvv,
	.recvmsg = tag_recvmsg,
	.send = tag_send,
	.sendv = tag_sendv,
	.sendmsg = tag_sendmsg,
	.inject = tag_inject,
	.senddata = tag_senddata,
	.injectdata = tag_injectdata,
};

ssize_t cxip_ep_cancel(struct fid *fid, void *context)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (fid->fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	struct cxs_cmd cmd = { .op = CXS_CMD_CANCEL, .context = (uint64_t)(uintptr_t)context };
	return cxip_ep_emit(ep, &cmd, NULL, 0);
}
