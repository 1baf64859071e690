/* FI_PEEK / FI_CLAIM / FI_DISCARD for tagged receives (MPI_Probe, MPI_Iprobe, MPI_Mprobe over Open MPI's
 * OFI MTL).
 *
 * The NIC software layer (sim/nic/sw.h) has no search of the unexpected list for the application, so a
 * peek is built from what it has: a receive into a per-endpoint bounce region (a 4 GiB reservation; pages
 * are only touched for the bytes a message brings), immediately followed by a cancel.  If a message was
 * waiting, the receive matched it when the NIC executed the append, the cancel finds nothing, and the
 * message (delivered by the NIC model's DMA into the bounce region) is kept here, in arrival order, as the
 * real provider keeps onloaded unexpected messages in software.  If nothing matched, the cancel retires the
 * receive and the peek completes with FI_ENOMSG.  Later receives of the endpoint look here first, so
 * message order per tag is kept; a claimed message waits for the FI_CLAIM receive with its context.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "../util.h"
#include "daemon.h"

#define BOUNCE_BYTES (1ULL << 32)

struct peeked {
	struct peeked *next;
	struct sw_addr src;
	bool src_valid;
	uint64_t tag, data, flags, len;
	uint64_t claim_ctx;   /* context of the FI_CLAIM peek that owns it */
	bool claimed;
	unsigned char bytes[];
};

struct peek_state {
	unsigned char *bounce;
	struct peeked *head, *tail;
	uint32_t inflight;     /* peek receives posted and not completed */
};

static struct peek_state *state(struct dep *ep)
{
	if (!ep->peek) {
		struct peek_state *s = xcalloc(1, sizeof(*s));
		void *p = mmap(NULL, BOUNCE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);
		if (p == MAP_FAILED) {
			free(s);
			return NULL;
		}
		s->bounce = p;
		ep->peek = s;
	}
	return ep->peek;
}

bool peek_bounce_range(struct dep *ep, uint64_t addr, size_t len)
{
	struct peek_state *s = ep->peek;
	if (!s)
		return false;
	uint64_t base = (uint64_t)(uintptr_t)s->bounce;
	return addr >= base && addr - base <= BOUNCE_BYTES && len <= BOUNCE_BYTES - (addr - base);
}

void peek_free(struct dep *ep)
{
	struct peek_state *s = ep->peek;
	if (!s)
		return;
	while (s->head) {
		struct peeked *p = s->head;
		s->head = p->next;
		free(p);
	}
	munmap(s->bounce, BOUNCE_BYTES);
	free(s);
	ep->peek = NULL;
}

static bool match(const struct peeked *p, const struct cxs_cmd *cmd)
{
	if ((p->tag & ~cmd->aux) != (cmd->tag & ~cmd->aux))
		return false;
	if (!(p->flags & FI_TAGGED) != !(cmd->flags & CXS_F_TAGGED))
		return false;
	if ((cmd->flags & CXS_F_DIRECTED) &&
	    (!p->src_valid || (((uint32_t)p->src.nic << C_PID_BITS) | p->src.pid) != cmd->peer))
		return false;
	return true;
}

static void unlink_entry(struct peek_state *s, struct peeked *p)
{
	struct peeked **q = &s->head, *prev = NULL;
	for (; *q; prev = *q, q = &(*q)->next)
		if (*q == p) {
			*q = p->next;
			if (s->tail == p)
				s->tail = prev;
			return;
		}
}

static struct sw_comp comp_of(const struct peeked *p)
{
	struct sw_comp c = { .flags = FI_RECV | (p->flags & (FI_TAGGED | FI_MSG | FI_REMOTE_CQ_DATA)), .len = p->len,
			     .data = p->data, .tag = p->tag, .src = p->src, .src_valid = p->src_valid };
	return c;
}

/* Deliver a kept message into the application's buffer (a software copy, as the real provider copies
 * onloaded unexpected data). */
static void deliver(struct dep *ep, struct peeked *p, const struct cxs_cmd *cmd)
{
	struct sw_comp c = comp_of(p);
	uint64_t n = p->len < cmd->len ? p->len : cmd->len;
	c.buf = cmd->addr;
	c.len = n;
	if (n) {
		struct iovec l = { p->bytes, n }, r = { (void *)(uintptr_t)cmd->addr, n };
		if (process_vm_writev(ep->o.c->pid, &l, 1, &r, 1, 0) != (ssize_t)n) {
			c.err = FI_EIO;
			c.prov_errno = C_RC_PERM_VIOLATION;
		} else {
			ep->o.c->bytes_written += n;
		}
	}
	if (!c.err && p->len > cmd->len) {
		c.err = FI_ETRUNC;
		c.olen = p->len - cmd->len;
	}
	ep_post_comp(ep, cmd->context, cmd->flags, &c);
}

/* A receive (not a peek): served from a kept message if one matches.  Returns true if it was. */
bool peek_take(struct dep *ep, const struct cxs_cmd *cmd)
{
	struct peek_state *s = ep->peek;
	if (!s || !s->head)
		return false;
	if (cmd->flags & CXS_F_CLAIM) {
		for (struct peeked *p = s->head; p; p = p->next)
			if (p->claimed && p->claim_ctx == cmd->context) {
				unlink_entry(s, p);
				if (cmd->flags & CXS_F_DISCARD) {
					struct sw_comp c = comp_of(p);
					c.len = 0;
					ep_post_comp(ep, cmd->context, cmd->flags, &c);
				} else {
					deliver(ep, p, cmd);
				}
				free(p);
				return true;
			}
		return false;
	}
	for (struct peeked *p = s->head; p; p = p->next)
		if (!p->claimed && match(p, cmd)) {
			unlink_entry(s, p);
			deliver(ep, p, cmd);
			free(p);
			return true;
		}
	return false;
}

/* Answer a peek from a kept message, per its flags. */
static void answer(struct dep *ep, struct peeked *p, const struct cxs_cmd *cmd)
{
	struct sw_comp c = comp_of(p);
	c.buf = 0;
	if (cmd->flags & CXS_F_DISCARD) {
		unlink_entry(ep->peek, p);
		free(p);
	} else if (cmd->flags & CXS_F_CLAIM) {
		p->claimed = true;
		p->claim_ctx = cmd->context;
	}
	ep_post_comp(ep, cmd->context, cmd->flags, &c);
}

/* The peek receive completed: either with a message (keep it) or cancelled (no message). */
void peek_done(struct dep *ep, struct dop *op, const struct sw_comp *c)
{
	struct peek_state *s = ep->peek;
	if (s)
		s->inflight--;
	struct cxs_cmd cmd = { .context = op->context, .flags = op->cflags, .tag = op->tag, .aux = op->ignore,
			       .peer = op->peer };
	if (c->err == FI_ECANCELED || !s) {
		struct sw_comp e = { .err = FI_ENOMSG, .flags = FI_RECV | FI_TAGGED, .tag = op->tag };
		ep_post_comp(ep, op->context, op->cflags, &e);
		return;
	}
	if (c->err) {
		ep_post_comp(ep, op->context, op->cflags, c);
		return;
	}
	struct peeked *p = malloc(sizeof(*p) + c->len);
	if (!p) {
		struct sw_comp e = { .err = FI_ENOMEM, .flags = FI_RECV | FI_TAGGED, .tag = op->tag };
		ep_post_comp(ep, op->context, op->cflags, &e);
		return;
	}
	memset(p, 0, sizeof(*p));
	p->src = c->src;
	p->src_valid = c->src_valid;
	p->tag = c->tag;
	p->data = c->data;
	p->flags = c->flags;
	p->len = c->len;
	if (c->len)
		memcpy(p->bytes, s->bounce, c->len);
	if (s->tail)
		s->tail->next = p;
	else
		s->head = p;
	s->tail = p;
	answer(ep, p, &cmd);
}

/* A peek command.  Returns 0, or a negative error for the command. */
int peek_start(struct dep *ep, const struct cxs_cmd *cmd)
{
	struct peek_state *s = state(ep);
	if (!s)
		return -FI_ENOMEM;
	for (struct peeked *p = s->head; p; p = p->next)
		if (!p->claimed && match(p, cmd)) {
			answer(ep, p, cmd);
			return 0;
		}
	if (s->inflight) {
		/* One peek at a time owns the bounce region; meanwhile nothing is known to be waiting. */
		struct sw_comp e = { .err = FI_ENOMSG, .flags = FI_RECV | FI_TAGGED, .tag = cmd->tag };
		ep_post_comp(ep, cmd->context, cmd->flags, &e);
		return 0;
	}
	struct dop *op = ep_op_new(ep, cmd);
	op->tag = cmd->tag;
	op->ignore = cmd->aux;
	op->peer = cmd->peer;
	op->peek = true;
	struct sw_addr src = { .nic = cmd->peer >> C_PID_BITS, .pid = (uint16_t)(cmd->peer & C_PID_ANY), .vni = cmd->vni };
	uint64_t bounce = HOST_DAEMON_ADDR | (uint64_t)(uintptr_t)s->bounce;
	int ret = sw_recv(ep->sw, bounce, BOUNCE_BYTES - 1, (cmd->flags & CXS_F_DIRECTED) ? &src : NULL, cmd->tag, cmd->aux,
			  FI_TAGGED | FI_COMPLETION, op);
	if (ret) {
		ep_op_free(op);
		return ret;
	}
	s->inflight++;
	sw_cancel(ep->sw, op);
	return 0;
}
