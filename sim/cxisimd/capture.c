/* `cxisimd --capture FILE`: record what attached processes do on the fabric, for the replay workload
 * (format: sim/workload/capture.h, docs/replay.md).  Every process and endpoint, every message sent (with
 * its payload as the NIC reads it at the command), every receive posted and completed, every RMA, and every
 * memory region with its contents twice: as the first request after its registration goes out (what a
 * server reads from it) and at its close (what a server wrote into it).  The daemon reads those bytes from
 * the process with the same accessor as the NIC's DMA.
 *
 * Think time: each send carries the time since the last receive completion the process was given, when
 * one came after its previous send (the time the process spent between an answer and its next request);
 * 0 when it sent back to back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "../workload/capture.h"
#include "daemon.h"

struct capture {
	struct cap_writer *w;
	uint32_t next_proc, next_ep, next_mr;
	uint64_t max_payload, max_image;
	unsigned char *buf;
	size_t buf_len;
};

int capture_open(struct daemon *d, const char *path, uint64_t max_payload, uint64_t max_image)
{
	char err[512];
	struct cap_writer *w = cap_writer_open(path, err, sizeof(err));
	if (!w) {
		fprintf(stderr, "cxisimd: --capture %s\n", err);
		return -1;
	}
	d->cap = xcalloc(1, sizeof(*d->cap));
	d->cap->w = w;
	d->cap->max_payload = max_payload;
	d->cap->max_image = max_image;
	return 0;
}

int capture_close(struct daemon *d)
{
	if (!d->cap)
		return 0;
	int rc = cap_writer_close(d->cap->w);
	free(d->cap->buf);
	free(d->cap);
	d->cap = NULL;
	return rc;
}

static simtime_t now(const struct daemon *d)
{
	return sim_now(d->sim);
}

/* The bytes at addr in the process, up to max; *got is what could be read (0 when unreadable). */
static const unsigned char *read_process(struct capture *cap, struct client *c, uint64_t addr, uint64_t len,
					 uint64_t max, uint64_t *got)
{
	uint64_t n = len < max ? len : max;
	*got = 0;
	if (!n)
		return NULL;
	if (cap->buf_len < n) {
		cap->buf = xrealloc(cap->buf, (size_t)n);
		cap->buf_len = (size_t)n;
	}
	if (host_mem_ops.read(c, addr, cap->buf, (size_t)n))
		return NULL;
	*got = n;
	return cap->buf;
}

static void capture_proc(struct daemon *d, struct client *c)
{
	if (c->cap_proc)
		return;
	c->cap_proc = ++d->cap->next_proc;
	struct cap_proc r = { .proc = c->cap_proc, .rank = c->rank, .os_pid = (int32_t)c->pid, .node = c->node };
	memcpy(r.progname, c->progname, sizeof(r.progname));
	cap_write(d->cap->w, CAP_PROC, &r, NULL, 0);
}

void capture_ep(struct dep *ep, const struct ctl_ep_open_req *req)
{
	struct daemon *d = ep->o.c->d;
	if (!d->cap)
		return;
	capture_proc(d, ep->o.c);
	ep->cap_ep = ++d->cap->next_ep;
	struct cap_ep r = {
		.ep = ep->cap_ep,
		.proc = ep->o.c->cap_proc,
		.nic = ep->nic_addr,
		.pid = (uint16_t)ep->pid,
		.vni = req->vnis[0],
		.caps = req->caps,
		.ep_flags = req->flags,
		.match_mode = req->match_mode,
	};
	cap_write(d->cap->w, CAP_EP, &r, NULL, 0);
}

static void image(struct daemon *d, struct dmr *mr, enum cap_image_kind kind)
{
	uint64_t got;
	const unsigned char *p = read_process(d->cap, mr->o.c, mr->addr, mr->len, d->cap->max_image, &got);
	struct cap_mr_image r = {
		.mr = mr->cap_mr,
		.kind = kind,
		.t = now(d),
		.flags = got < mr->len ? CAPF_TRUNCATED : 0,
		.bytes = got,
	};
	cap_write(d->cap->w, CAP_MR_IMAGE, &r, p, got);
}

/* The regions registered on this endpoint since its last send, as this send goes out. */
static void exposed_images(struct daemon *d, struct dep *ep)
{
	for (struct obj *o = ep->o.c->objs; o && ep->cap_images_due; o = o->next) {
		struct dmr *mr = (struct dmr *)o;
		if (o->kind != OBJ_MR || mr->ep != ep || !mr->cap_mr || mr->cap_exposed)
			continue;
		mr->cap_exposed = true;
		ep->cap_images_due--;
		image(d, mr, CAP_IMAGE_EXPOSED);
	}
	ep->cap_images_due = 0;
}

static void peer_of(const struct cxs_cmd *cmd, uint32_t *nic, uint16_t *pid)
{
	*nic = cmd->peer >> C_PID_BITS;
	*pid = (uint16_t)(cmd->peer & C_PID_ANY);
}

void capture_cmd(struct dep *ep, const struct cxs_cmd *cmd, const void *inline_payload)
{
	struct daemon *d = ep->o.c->d;
	if (!d->cap || !ep->cap_ep)
		return;
	uint32_t fl = ((cmd->flags & CXS_F_TAGGED) ? CAPF_TAGGED : 0) |
		      ((cmd->flags & CXS_F_REMOTE_CQ_DATA) ? CAPF_CQ_DATA : 0) |
		      ((cmd->flags & CXS_F_INJECT) ? CAPF_INJECT : 0);
	switch (cmd->op) {
	case CXS_CMD_SEND: {
		exposed_images(d, ep);
		struct cap_send r = {
			.ep = ep->cap_ep, .t = now(d), .tag = cmd->tag, .data = cmd->aux, .len = cmd->len,
			.dst_vni = cmd->vni,
		};
		peer_of(cmd, &r.dst_nic, &r.dst_pid);
		if (ep->cap_last_rx && ep->cap_last_rx >= ep->cap_last_tx)
			r.think = r.t - ep->cap_last_rx;
		ep->cap_last_tx = r.t;
		const unsigned char *p = inline_payload;
		uint64_t got = cmd->len < d->cap->max_payload ? cmd->len : d->cap->max_payload;
		if (!inline_payload)
			p = read_process(d->cap, ep->o.c, cmd->addr, cmd->len, d->cap->max_payload, &got);
		if (got < cmd->len)
			fl |= CAPF_TRUNCATED;
		r.flags = fl;
		r.payload_len = got;
		cap_write(d->cap->w, CAP_SEND, &r, p, got);
		break;
	}
	case CXS_CMD_RECV: {
		if (cmd->flags & (CXS_F_PEEK | CXS_F_CLAIM))
			return;
		fl |= ((cmd->flags & CXS_F_MULTI_RECV) ? CAPF_MULTI_RECV : 0) |
		      ((cmd->flags & CXS_F_DIRECTED) ? CAPF_DIRECTED : 0);
		struct cap_recv r = { .ep = ep->cap_ep, .flags = fl, .t = now(d), .tag = cmd->tag, .ignore = cmd->aux,
				      .len = cmd->len };
		cap_write(d->cap->w, CAP_RECV, &r, NULL, 0);
		break;
	}
	case CXS_CMD_WRITE:
	case CXS_CMD_READ: {
		struct cap_rma r = {
			.ep = ep->cap_ep, .flags = fl | (cmd->op == CXS_CMD_READ ? CAPF_READ : 0), .t = now(d),
			.dst_vni = cmd->vni, .key = cmd->tag, .offset = cmd->aux, .len = cmd->len,
		};
		peer_of(cmd, &r.dst_nic, &r.dst_pid);
		cap_write(d->cap->w, CAP_RMA, &r, NULL, 0);
		break;
	}
	default:
		break;
	}
}

void capture_comp(struct dep *ep, const struct sw_comp *c)
{
	struct daemon *d = ep->o.c->d;
	if (!d->cap || !ep->cap_ep || !(c->flags & FI_RECV))
		return;
	struct cap_comp r = {
		.ep = ep->cap_ep,
		.flags = ((c->flags & FI_TAGGED) ? CAPF_TAGGED : 0) | ((c->flags & FI_REMOTE_CQ_DATA) ? CAPF_CQ_DATA : 0) |
			 ((c->flags & FI_MULTI_RECV) ? CAPF_MULTI_RECV : 0) | (c->err ? CAPF_ERROR : 0),
		.t = now(d),
		.tag = c->tag,
		.data = c->data,
		.len = c->len,
		.src_nic = c->src_valid ? c->src.nic : 0,
		.src_pid = c->src_valid ? c->src.pid : 0,
		.err = (uint16_t)c->err,
	};
	if (!c->err)
		ep->cap_last_rx = r.t;
	cap_write(d->cap->w, CAP_COMP, &r, NULL, 0);
}

void capture_mr(struct dmr *mr)
{
	struct daemon *d = mr->o.c->d;
	if (!d->cap || !mr->ep || !mr->ep->cap_ep)
		return;
	mr->cap_mr = ++d->cap->next_mr;
	mr->ep->cap_images_due++;
	struct cap_mr r = {
		.mr = mr->cap_mr,
		.ep = mr->ep->cap_ep,
		.t = now(d),
		.key = sw_mr_key(mr->mr),
		.addr = mr->addr,
		.len = mr->len,
		.access = mr->reg_flags,
	};
	cap_write(d->cap->w, CAP_MR, &r, NULL, 0);
}

void capture_mr_close(struct dmr *mr, bool readable)
{
	struct client *c = mr->o.c;
	if (!c || !c->d->cap || !mr->cap_mr)
		return;
	struct daemon *d = c->d;
	if (!mr->cap_exposed && mr->ep && mr->ep->cap_images_due)
		mr->ep->cap_images_due--;
	if (readable)
		image(d, mr, CAP_IMAGE_CLOSED);
	struct cap_mr_close r = { .mr = mr->cap_mr, .t = now(d) };
	cap_write(d->cap->w, CAP_MR_CLOSE, &r, NULL, 0);
	mr->cap_mr = 0;
}
