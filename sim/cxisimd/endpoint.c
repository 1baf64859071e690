/* Endpoints of attached processes.  Each runs the cxi provider's software layer (sim/nic/sw.h) on the
 * simulated NIC of its node, exactly as a simulated process's endpoint does: commands read from the
 * process's command queue become sw_send / sw_recv / sw_write / sw_read / sw_cancel calls, and the software
 * layer's completions become events in the process's event queues and counter updates.  The daemon moves
 * no message data itself: the NIC model's DMA engine reads and writes the process's memory through
 * host.c when it executes the operation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../stats.h"
#include "../util.h"
#include "daemon.h"

#define MAX_CMD_BYTES (16 * RING_SLOT)
#define USER_ADDR_LIMIT (1ULL << 57) /* above any user-space address (x86-64 LA57 included) */

/* ---- counters ---- */

void ct_add(struct dct *ct, bool failure, uint64_t n)
{
	if (!ct)
		return;
	if (n)
		atomic_fetch_add(failure ? &ct->shm->failure : &ct->shm->success, n);
	if (atomic_exchange(&ct->shm->armed, 0)) {
		uint64_t one = 1;
		ssize_t r = write(ct->efd, &one, sizeof(one));
		(void)r;
	}
	if (daemon_virtual(ct->o.c->d))
		vclock_wake(ct->o.c, ct->o.id);
	if (ct->tlni)
		trig_ct_changed(ct);
}

void ct_count(struct dct *ct, bool failure, uint64_t len)
{
	if (ct)
		ct_add(ct, failure, ct->bytes && !failure ? len : 1);
}

/* ---- event queues ---- */

static void evq_doorbell(struct dqueue *q)
{
	if (ring_need_doorbell(&q->ring)) {
		uint64_t one = 1;
		ssize_t r = write(q->efd, &one, sizeof(one));
		(void)r;
	}
}

static bool evq_put(struct dqueue *q, const void *data, uint16_t nslots)
{
	uint16_t ns;
	void *slot = ring_reserve(&q->ring, (size_t)nslots * RING_SLOT, &ns);
	if (!slot)
		return false;
	memcpy(slot, data, (size_t)nslots * RING_SLOT);
	((struct cxs_evt *)slot)->nslots = ns;
	ring_publish(&q->ring, ns);
	/* The wait fd first, then the wake-up: a thread woken in poll() on the CQ's fd (the clock interposer's
	 * virtual wait) looks at the fd at once, and if the doorbell came after, nothing woke it again before
	 * its timeout -- 100 ms of virtual time per message in a program that waits with poll(fd, 100). */
	evq_doorbell(q);
	/* Virtual mode: the completion is visible from now on; threads waiting for it wake at now. */
	if (daemon_virtual(q->o.c->d))
		vclock_wake(q->o.c, q->o.id);
	return true;
}

void queue_flush_backlog(struct dqueue *q)
{
	struct daemon *d = q->o.c->d;
	while (q->bl_head && evq_put(q, q->bl_head->data, q->bl_head->nslots)) {
		struct backlog *b = q->bl_head;
		q->bl_head = b->next;
		if (!q->bl_head)
			q->bl_tail = NULL;
		q->bl_count--;
		pool_put(&d->backlog_pool, b);
		if (!q->bl_head)
			d->nbacklogged--;
	}
}

/* Events keep their order: once one waits in the backlog, later ones queue behind it. */
static void evq_post(struct dqueue *q, const void *data, uint16_t nslots)
{
	struct daemon *d = q->o.c->d;
	(*d->st_events)++;
	if (!q->bl_head && evq_put(q, data, nslots))
		return;
	struct backlog *b = pool_get(&d->backlog_pool);
	b->next = NULL;
	b->nslots = nslots;
	memcpy(b->data, data, (size_t)nslots * RING_SLOT);
	if (q->bl_tail) {
		q->bl_tail->next = b;
	} else {
		q->bl_head = b;
		d->nbacklogged++;
	}
	q->bl_tail = b;
	q->bl_count++;
	(*d->st_backlogged)++;
}

/* ---- operations ---- */

/* Set while ep_exec runs a deferred-work command: its operations count in this counter. */
static bool exec_own_ct;
static struct dct *exec_ct;

static struct dop *ep_op_new(struct dep *ep, const struct cxs_cmd *cmd)
{
	struct daemon *d = ep->o.c->d;
	struct dop *op = pool_get(&d->op_pool);
	memset(op, 0, offsetof(struct dop, payload));
	op->own_ct = exec_own_ct;
	op->ct = exec_ct;
	op->ep = ep;
	op->context = cmd->context;
	op->cflags = cmd->flags;
	op->op = cmd->op;
	op->next = ep->ops;
	if (ep->ops)
		ep->ops->prev = op;
	ep->ops = op;
	ep->nops++;
	return op;
}

static void ep_op_free(struct dop *op)
{
	struct dep *ep = op->ep;
	if (op->prev)
		op->prev->next = op->next;
	else
		ep->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
	ep->nops--;
	pool_put(&ep->o.c->d->op_pool, op);
}

static uint16_t comp_flags(uint64_t f)
{
	uint16_t r = 0;
	if (f & FI_SEND) r |= CXS_EF_SEND;
	if (f & FI_RECV) r |= CXS_EF_RECV;
	if (f & FI_TAGGED) r |= CXS_EF_TAGGED;
	if (f & FI_MSG) r |= CXS_EF_MSG;
	if (f & FI_RMA) r |= CXS_EF_RMA;
	if (f & FI_READ) r |= CXS_EF_READ;
	if (f & FI_WRITE) r |= CXS_EF_WRITE;
	if (f & FI_REMOTE_READ) r |= CXS_EF_REMOTE_READ;
	if (f & FI_REMOTE_WRITE) r |= CXS_EF_REMOTE_WRITE;
	if (f & FI_REMOTE_CQ_DATA) r |= CXS_EF_REMOTE_CQ_DATA;
	if (f & FI_MULTI_RECV) r |= CXS_EF_MULTI_RECV;
	if (f & FI_ATOMIC) r |= CXS_EF_ATOMIC;
	return r;
}

static void post_event(struct dep *ep, struct dqueue *q, uint64_t context, const struct sw_comp *c)
{
	if (!q)
		return;
	unsigned char buf[2 * RING_SLOT];
	memset(buf, 0, sizeof(buf));
	struct cxs_evt *e = (struct cxs_evt *)buf;
	e->op = c->err ? CXS_EVT_ERR : CXS_EVT_COMP;
	e->nslots = c->err ? 2 : 1;
	e->flags = comp_flags(c->flags);
	e->ep = ep->o.id;
	e->context = context;
	e->len = c->len;
	e->buf = c->buf;
	e->data = c->data;
	e->tag = c->tag;
	e->vt = sim_now(ep->o.c->d->sim);
	if (c->src_valid) {
		e->flags |= CXS_EF_SOURCE;
		e->src = ((uint32_t)c->src.nic << C_PID_BITS) | c->src.pid;
		e->src_vni = c->src.vni;
	}
	if (c->err) {
		struct cxs_evt_err *x = (struct cxs_evt_err *)(buf + RING_SLOT);
		x->err = c->err;
		x->prov_errno = c->prov_errno;
		x->olen = c->olen;
		x->err_nic = c->src.nic;
		x->err_pid = c->src.pid;
		x->err_vni = c->src.vni;
	}
	evq_post(q, buf, e->nslots);
}

/* Target side of a remote access to one of the endpoint's MRs (reported for FI_RMA_EVENT MRs, endpoints
 * with remote counters, and fi_writedata): counters, and a receive completion for remote CQ data. */
static void on_remote_access(struct dep *ep, const struct sw_comp *c)
{
	struct dmr *mr = c->op_context;
	bool fail = c->err != 0, write = (c->flags & FI_REMOTE_WRITE) != 0;
	if (mr && mr->ct && (mr->ct_flags & (write ? MRF_CT_REMOTE_WRITE : MRF_CT_REMOTE_READ)))
		ct_count(mr->ct, fail, c->len);
	ct_count(ep->cts[write ? EPC_REM_WRITE : EPC_REM_READ], fail, c->len);
	/* fi_writedata: the data goes to the CQ bound for receives (FI_RECV includes FI_REMOTE_WRITE), with the
	 * MR's context, as upstream writes it; a failed access is reported to the initiator only. */
	if ((c->flags & FI_REMOTE_CQ_DATA) && !fail && mr)
		post_event(ep, ep->rxq, mr->context, c);
}

/* The software layer's completion callback (TX and RX of one endpoint). */
static void on_comp(void *ctx, struct sw_ep *sw, const struct sw_comp *c)
{
	struct dep *ep = ctx;
	(void)sw;
	if (c->mr) {
		on_remote_access(ep, c);
		return;
	}
	struct dop *op = c->op_context;
	if (!op)
		return;
	bool last = op->op != CXS_CMD_RECV || !(op->cflags & CXS_F_MULTI_RECV) || (c->flags & FI_MULTI_RECV);
	if (op->failed) { /* reported at the fatal error; the NIC model is done with it now */
		if (last)
			ep_op_free(op);
		return;
	}
	bool fail = c->err != 0;
	struct dct *ct = NULL;
	struct dqueue *q = ep->txq;
	switch (op->op) {
	case CXS_CMD_SEND: ct = ep->cts[EPC_SEND]; break;
	case CXS_CMD_RECV:
		/* A peek receives nothing: it does not count as a received message. */
		if (!(op->cflags & CXS_F_PEEK))
			ct = ep->cts[EPC_RECV];
		q = ep->rxq;
		break;
	case CXS_CMD_WRITE: ct = ep->cts[EPC_WRITE]; break;
	case CXS_CMD_READ: ct = ep->cts[EPC_READ]; break;
	case CXS_CMD_ATOMIC: ct = ep->cts[(c->flags & FI_READ) ? EPC_READ : EPC_WRITE]; break;
	}
	if (op->own_ct)
		ct = op->ct;
	ct_count(ct, fail, c->len);
	if (fail || (op->cflags & CXS_F_COMPLETION)) {
		post_event(ep, q, op->context, c);
		capture_comp(ep, c);
	}
	if (last)
		ep_op_free(op);
}

/* A failed command: complete it with an error at once. */
static void fail_cmd_rc(struct dep *ep, const struct cxs_cmd *cmd, int err, int rc)
{
	struct sw_comp c = { .err = err, .prov_errno = rc, .len = cmd->len, .tag = cmd->tag };
	switch (cmd->op) {
	case CXS_CMD_SEND: c.flags = FI_SEND | ((cmd->flags & CXS_F_TAGGED) ? FI_TAGGED : FI_MSG); break;
	case CXS_CMD_RECV: c.flags = FI_RECV | ((cmd->flags & CXS_F_TAGGED) ? FI_TAGGED : FI_MSG); break;
	case CXS_CMD_WRITE: c.flags = FI_RMA | FI_WRITE; break;
	case CXS_CMD_READ: c.flags = FI_RMA | FI_READ; break;
	case CXS_CMD_ATOMIC: c.flags = FI_ATOMIC | (cmd->addr ? FI_READ : FI_WRITE); break;
	}
	post_event(ep, cmd->op == CXS_CMD_RECV ? ep->rxq : ep->txq, cmd->context, &c);
}

static void fail_cmd(struct dep *ep, const struct cxs_cmd *cmd, int err)
{
	fail_cmd_rc(ep, cmd, err, 0);
}

static bool addr_ok(uint64_t a)
{
	return a < USER_ADDR_LIMIT;
}

static struct sw_addr peer_addr(const struct cxs_cmd *cmd)
{
	struct sw_addr a = { .nic = cmd->peer >> C_PID_BITS, .pid = (uint16_t)(cmd->peer & C_PID_ANY), .vni = cmd->vni };
	return a;
}

/* Returns 0 (consumed), -EAGAIN (retry the same command later). */
static int exec_cmd(struct dep *ep, const unsigned char *raw, uint16_t nslots)
{
	const struct cxs_cmd *cmd = (const void *)raw;
	struct daemon *d = ep->o.c->d;
	size_t have = (size_t)nslots * RING_SLOT;
	const void *inl = NULL;
	(*d->st_cmds)++;
	if (!addr_ok(cmd->addr) || (cmd->len && cmd->addr + cmd->len < cmd->addr) || cmd->len > UINT32_MAX) {
		(*d->st_bad_cmds)++;
		fail_cmd(ep, cmd, EINVAL);
		return 0;
	}
	/* A destination NIC the fabric does not have (an address inserted into the AV from anywhere): on the
	 * machine the switches drop what they cannot route and the initiator's retries give up
	 * (C_RC_UNDELIVERABLE, FI_EHOSTUNREACH); the fabric model has no route to follow and must not be asked. */
	if ((cmd->op == CXS_CMD_SEND || cmd->op == CXS_CMD_WRITE || cmd->op == CXS_CMD_READ ||
	     cmd->op == CXS_CMD_ATOMIC) && !nic_get(d->sim, peer_addr(cmd).nic)) {
		fail_cmd_rc(ep, cmd, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
		return 0;
	}
	uint64_t flags = FI_COMPLETION;
	if (cmd->flags & CXS_F_TAGGED)
		flags |= FI_TAGGED;
	if (cmd->flags & CXS_F_REMOTE_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	if (cmd->flags & CXS_F_DELIVERY)
		flags |= FI_MATCH_COMPLETE;
	int ret;
	switch (cmd->op) {
	case CXS_CMD_SEND: {
		if (cmd->flags & CXS_F_INJECT) {
			if (cmd->len > 192 || sizeof(*cmd) + cmd->len > have) {
				(*d->st_bad_cmds)++;
				fail_cmd(ep, cmd, EINVAL);
				return 0;
			}
			inl = raw + sizeof(*cmd);
			flags |= FI_INJECT;
		}
		struct dop *op = ep_op_new(ep, cmd);
		ret = sw_send(ep->sw, cmd->addr, cmd->len, inl, peer_addr(cmd), cmd->tag, cmd->aux, flags, op);
		if (ret)
			ep_op_free(op);
		break;
	}
	case CXS_CMD_RECV: {
		struct sw_addr src = peer_addr(cmd);
		const struct sw_addr *from = (cmd->flags & CXS_F_DIRECTED) ? &src : NULL;
		struct dop *op = ep_op_new(ep, cmd);
		if (cmd->flags & CXS_F_PEEK) {
			/* FI_PEEK [| FI_CLAIM | FI_DISCARD]: the claim is keyed by the application's context, which
			 * the FI_CLAIM receive passes again (an fi_context it owns until then). */
			flags |= (cmd->flags & CXS_F_CLAIM) ? FI_CLAIM : 0;
			flags |= (cmd->flags & CXS_F_DISCARD) ? FI_DISCARD : 0;
			ret = sw_peek(ep->sw, from, cmd->tag, cmd->aux, flags, cmd->context, op);
		} else if (cmd->flags & CXS_F_CLAIM) {
			ret = sw_recv_claimed(ep->sw, cmd->addr, cmd->len, cmd->context,
					      (cmd->flags & CXS_F_DISCARD) ? FI_DISCARD : 0, op);
		} else {
			if (cmd->flags & CXS_F_MULTI_RECV)
				flags |= FI_MULTI_RECV;
			ret = sw_recv(ep->sw, cmd->addr, cmd->len, from, cmd->tag, cmd->aux, flags, op);
		}
		if (ret)
			ep_op_free(op);
		break;
	}
	case CXS_CMD_WRITE:
	case CXS_CMD_READ: {
		if (have < 2 * RING_SLOT) {
			(*d->st_bad_cmds)++;
			fail_cmd(ep, cmd, EINVAL);
			return 0;
		}
		uint64_t data;
		memcpy(&data, raw + RING_SLOT, sizeof(data));
		struct dop *op = ep_op_new(ep, cmd);
		uint64_t buf = cmd->addr;
		if (cmd->op == CXS_CMD_WRITE && (cmd->flags & CXS_F_INJECT)) {
			if (cmd->len > sizeof(op->payload) || 2 * RING_SLOT + cmd->len > have) {
				ep_op_free(op);
				(*d->st_bad_cmds)++;
				fail_cmd(ep, cmd, EINVAL);
				return 0;
			}
			memcpy(op->payload, raw + 2 * RING_SLOT, cmd->len);
			op->payload_len = (uint16_t)cmd->len;
			buf = HOST_DAEMON_ADDR | (uint64_t)(uintptr_t)op->payload;
			flags |= FI_INJECT;
		}
		if (cmd->op == CXS_CMD_WRITE)
			ret = sw_write(ep->sw, buf, cmd->len, peer_addr(cmd), cmd->aux, cmd->tag, data, flags, op);
		else
			ret = sw_read(ep->sw, buf, cmd->len, peer_addr(cmd), cmd->aux, cmd->tag, flags, op);
		if (ret)
			ep_op_free(op);
		break;
	}
	case CXS_CMD_ATOMIC: {
		struct cxs_amo a;
		if (have < 2 * RING_SLOT) {
			(*d->st_bad_cmds)++;
			fail_cmd(ep, cmd, EINVAL);
			return 0;
		}
		memcpy(&a, raw + RING_SLOT, sizeof(a));
		struct sw_amo amo = { .op = a.op, .cswap = a.cswap, .type = a.type, .fetch = a.fetch != 0 };
		memcpy(amo.operands, a.operands, sizeof(amo.operands));
		/* A fetching atomic needs somewhere to put the previous value. */
		if (amo.fetch && !cmd->addr) {
			(*d->st_bad_cmds)++;
			fail_cmd(ep, cmd, EINVAL);
			return 0;
		}
		struct dop *op = ep_op_new(ep, cmd);
		ret = sw_atomic(ep->sw, amo.fetch ? cmd->addr : 0, peer_addr(cmd), cmd->aux, cmd->tag, &amo, op);
		if (ret)
			ep_op_free(op);
		break;
	}
	case CXS_CMD_CANCEL: {
		/* Cancel the posted receive(s) with this context; unknown contexts are a no-op. */
		for (struct dop *op = ep->ops; op; op = op->next)
			if (op->op == CXS_CMD_RECV && op->context == cmd->context) {
				sw_cancel(ep->sw, op);
				break;
			}
		return 0;
	}
	case CXS_CMD_NOOP:
		return 0;
	default:
		(*d->st_bad_cmds)++;
		return 0;
	}
	if (ret == -FI_EAGAIN)
		return -EAGAIN;
	if (ret)
		fail_cmd(ep, cmd, -ret);
	else
		capture_cmd(ep, cmd, inl);
	if (!ret && cmd->op == CXS_CMD_RECV && !ep->recv_posted) {
		ep->recv_posted = true;
		workloads_ep_ready(ep);
	}
	return 0;
}

int ep_exec(struct dep *ep, const unsigned char *raw, uint16_t nslots, bool own_ct, struct dct *ct)
{
	if (ep->fatal) {
		fail_cmd(ep, (const void *)raw, FI_EIO);
		return 0;
	}
	exec_own_ct = own_ct;
	exec_ct = ct;
	int ret = exec_cmd(ep, raw, nslots);
	exec_own_ct = false;
	exec_ct = NULL;
	return ret;
}

static void on_fatal(void *ctx, struct sw_ep *sw, const char *msg)
{
	struct dep *ep = ctx;
	(void)sw;
	if (ep->fatal)
		return;
	ep->fatal = true;
	/* Printed even with --quiet, as a warning `cxisim exec` passes on: upstream's provider aborts the
	 * process here (CXIP_FATAL), so this line is the only word of why its operations now fail with
	 * FI_EIO -- and of the remedy (e.g. hybrid or software matching when LEs run out). */
	const struct client *c = ep->o.c;
	size_t n = strlen(msg);
	fprintf(stderr, "cxisimd: warning: %s (pid %d, rank %d) endpoint %u stopped, every operation fails with "
		"FI_EIO (fatal in upstream's provider, which aborts): %.*s\n", c->progname, (int)c->pid, c->rank,
		ep->o.id, (int)(n && msg[n - 1] == '\n' ? n - 1 : n), msg);
	/* Every operation in flight fails with FI_EIO; later commands fail the same way (ep_drain_cmdq).  The
	 * operations stay on the list: the NIC model may still hold them (a posted receive, a send waiting
	 * for its ack) and complete them later, or the endpoint's close frees them.  Freed here, such a late
	 * completion freed them again and corrupted the list (a client that corrupted its command queue with
	 * receives posted crashed the daemon at its exit). */
	for (struct dop *op = ep->ops; op; op = op->next) {
		if (op->failed)
			continue;
		op->failed = true;
		struct sw_comp c = { .err = FI_EIO, .flags = op->op == CXS_CMD_RECV ? FI_RECV : FI_SEND };
		post_event(ep, op->op == CXS_CMD_RECV ? ep->rxq : ep->txq, op->context, &c);
	}
}

/* Execute the queued commands.  Realtime: all of them, stamped with the wall clock's virtual time.
 * Virtual: those whose stamp the engine has reached (a command takes effect at its thread's virtual time;
 * the later ones wait in the ring, in order); returns the stamp of the first one left, UINT64_MAX if none. */
static simtime_t drain(struct dep *ep)
{
	if (!ep->cmdq || ep->ring_corrupt)
		return UINT64_MAX;
	struct daemon *d = ep->o.c->d;
	bool virt = daemon_virtual(d);
	simtime_t wall = virt ? 0 : clock_wall_vt(d);
	unsigned char raw[MAX_CMD_BYTES];
	for (;;) {
		uint16_t ns;
		enum ring_peek r = ring_peek(&ep->cmdq->ring, raw, sizeof(raw), &ns);
		if (r == RING_EMPTY) {
			if (ring_arm(&ep->cmdq->ring)) {
				ep->backpressured = false;
				return UINT64_MAX;
			}
			continue;
		}
		if (r == RING_CORRUPT) {
			/* A process that corrupts its own queue loses its endpoint, nothing else; the ring is not
			 * read again (virtual mode drains every endpoint at every step: it was counted each time). */
			ep->ring_corrupt = true;
			(*d->st_bad_cmds)++;
			on_fatal(ep, ep->sw, "corrupt command queue");
			return UINT64_MAX;
		}
		const struct cxs_cmd *cmd = (const void *)raw;
		if (virt && cmd->vt > sim_now(d->sim)) {
			ep->backpressured = false; /* the queue has caught up with its stamps */
			return cmd->vt;
		}
		if (ep->fatal) {
			if (cmd->op != CXS_CMD_CANCEL && cmd->op != CXS_CMD_NOOP)
				fail_cmd(ep, cmd, FI_EIO);
			ring_retire(&ep->cmdq->ring, ns);
			continue;
		}
		if (exec_cmd(ep, raw, ns) == -EAGAIN) {
			/* Keep the command; the step timer retries it once the NIC has drained. */
			ep->backpressured = true;
			/* Realtime: retry retry_ns of wall time later.  Fed back at once (ev_feed_event), the doorbell
			 * ran again inside the same pass over pending events, never returning to poll: a process that
			 * stopped reading its full CQ held the whole daemon in that loop, every other process's
			 * requests unanswered (found by a command-ring fuzz). */
			if (!virt && !ev_is_active(&ep->retry_timer)) {
				ev_timer_set(&ep->retry_timer, (double)d->emu->retry * 1e-12, 0.);
				ev_timer_start(d->loop, &ep->retry_timer);
			}
			return virt ? sim_now(d->sim) + d->emu->retry : UINT64_MAX;
		}
		/* Commands the NIC made wait (a full queue: the head refused, those behind it queued) are
		 * back-pressure, not causality lag. */
		if (!ep->backpressured && (virt ? cmd->vt : wall) < sim_now(d->sim)) {
			clock_count_lag(d, virt ? cmd->vt : wall);
			if (virt && !d->quiet)
				fprintf(stderr, "cxisimd: client %u endpoint %u: command %u of thread slot %u stamped %llu ps, "
					"%llu ps late (causality lag)\n", ep->o.c->id, ep->o.id, cmd->op, cmd->tslot,
					(unsigned long long)cmd->vt, (unsigned long long)(sim_now(d->sim) - cmd->vt));
			if (virt && !d->quiet && cmd->tslot < CXISIM_MAX_THREADS) {
				struct pcb_thread *t = &ep->o.c->pcb->threads[cmd->tslot];
				fprintf(stderr, "  thread slot state %u clock %llu stalled %u, horizon %llu\n",
					atomic_load(&t->state), (unsigned long long)atomic_load(&t->vclock_ps),
					atomic_load(&t->stalled), (unsigned long long)atomic_load(&ep->o.c->pcb->horizon_ps));
			}
		}
		ring_retire(&ep->cmdq->ring, ns);
	}
}

void ep_drain_cmdq(struct dep *ep)
{
	drain(ep);
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	struct dep *ep = w->data;
	if (ep->cmdq)
		ev_feed_event(loop, &ep->cmdq->io, EV_READ); /* the doorbell's path: clock, drain, step */
}

simtime_t ep_drain_due(struct dep *ep)
{
	return drain(ep);
}

/* Whether ep's queued commands go before a control request of the same process (they were submitted
 * first).  Not those the NIC refused for want of room (a full event queue): the process frees it only by
 * reading its CQ once the request returns, so holding the request behind them deadlocked the process (a
 * blocking fi_cntr_set behind an fi_read, found by the API fuzz).  The hardware does not order its driver
 * calls and MMIO writes behind a stalled command queue either. */
bool ep_orders_requests(struct dep *ep)
{
	return drain(ep) != UINT64_MAX && !ep->backpressured;
}

/* ---- open / close ---- */

static void env_from_req(struct sw_env *e, const struct ctl_ep_open_req *r)
{
	e->rx_match_mode = r->match_mode == 1 ? SW_MATCH_SOFTWARE : r->match_mode == 2 ? SW_MATCH_HYBRID : SW_MATCH_HARDWARE;
	e->msg_offload = e->rx_match_mode != SW_MATCH_SOFTWARE;
	e->hybrid_preemptive = r->flags & EPF_HYBRID_PREEMPTIVE;
	e->hybrid_recv_preemptive = r->flags & EPF_HYBRID_RECV_PREEMPTIVE;
	e->hybrid_posted_recv_preemptive = r->flags & EPF_HYBRID_POSTED_RECV_PREEMPTIVE;
	e->hybrid_unexpected_msg_preemptive = r->flags & EPF_HYBRID_UNEXPECTED_MSG_PREEMPTIVE;
	e->oflow_buf_size = r->oflow_buf_size;
	e->oflow_buf_min_posted = (uint32_t)r->oflow_buf_min_posted;
	e->req_buf_size = r->req_buf_size;
	e->req_buf_min_posted = (uint32_t)r->req_buf_min_posted;
	e->req_buf_max_count = (uint32_t)r->req_buf_max_cached;
	e->rdzv_threshold = (uint32_t)r->rdzv_threshold;
	e->rdzv_get_min = (uint32_t)r->rdzv_get_min;
	e->rdzv_eager_size = (uint32_t)r->rdzv_eager_size;
	e->sw_rx_tx_init_max = r->sw_rx_tx_init_max;
	e->rnr_max_timeout_us = r->rnr_max_timeout_us;
	e->fc_retry_usec_delay = r->fc_retry_usec;
	e->cq_fill_percent = r->cq_fill_percent;
	e->optimized_mrs = r->flags & EPF_OPTIMIZED_MRS;
	e->prov_key_cache = r->flags & EPF_PROV_KEY_CACHE;
	e->mr_match_events = r->flags & EPF_MR_MATCH_EVENTS;
	e->trunc_ok = r->flags & EPF_TRUNC_OK;
	e->enable_writedata = r->flags & EPF_ENABLE_WRITEDATA;
	sw_env_correct(e);
}

static struct dqueue *find_queue(struct client *c, uint32_t id, uint32_t kind)
{
	if (!id)
		return NULL;
	struct dqueue *q = (struct dqueue *)client_find(c, id, OBJ_QUEUE);
	return q && q->kind == kind ? q : NULL;
}

/* A condition the real provider treats as fatal: the endpoint stops, the process gets one error event
 * (FI_EIO) and further commands are ignored; the daemon and the other endpoints go on. */
int ep_open(struct client *c, const struct ctl_ep_open_req *req, struct ctl_ep_open_rep *rep)
{
	struct daemon *d = c->d;
	if (req->nic_index >= d->emu->nics_per_node || req->nvnis < 1 || req->nvnis > CXISIM_MAX_AUTH_KEYS ||
	    (req->pid > C_PID_ANY) || req->tx_size > 16384 || req->rx_size > 15360)
		return -EINVAL;
	struct dqueue *cmdq = find_queue(c, req->cmdq, QUEUE_CMD);
	struct dqueue *txq = find_queue(c, req->tx_evq, QUEUE_EVT), *rxq = find_queue(c, req->rx_evq, QUEUE_EVT);
	if (!cmdq || cmdq->ep || (req->tx_evq && !txq) || (req->rx_evq && !rxq))
		return -EINVAL;
	struct dct *cts[EPC_COUNT] = { 0 };
	for (int i = 0; i < EPC_COUNT; i++)
		if (req->cts[i] && !(cts[i] = (struct dct *)client_find(c, req->cts[i], OBJ_CT)))
			return -EINVAL;
	uint32_t addr = emu_nic_addr(d->emu, c->node, req->nic_index);
	struct nic *nic = nic_get(d->sim, addr);
	if (!nic)
		return -ENODEV;
	struct dep *ep = xcalloc(1, sizeof(*ep));
	ep->o.kind = OBJ_EP;
	ep->o.c = c;
	ep->nic = nic;
	ep->nic_addr = addr;
	ep->flags = req->flags;
	ep->svc_id = req->svc_id;
	ev_timer_init(&ep->retry_timer, retry_cb, 0., 0.);
	ep->retry_timer.data = ep;
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	env_from_req(&a.env, req);
	a.proto = (req->flags & EPF_RNR) ? SW_PROTO_CXI_RNR : SW_PROTO_CXI;
	a.progress = SW_PROGRESS_AUTO; /* the daemon is the NIC's progress engine; the process reads its queue */
	a.pid = req->pid;
	a.svc_id = req->svc_id;
	a.num_vnis = (uint8_t)req->nvnis;
	for (uint32_t i = 0; i < req->nvnis; i++)
		a.vnis[i] = req->vnis[i];
	a.caps = req->caps;
	a.tx_size = req->tx_size;
	a.rx_size = req->rx_size;
	a.min_multi_recv = req->min_multi_recv;
	/* Remote counters on an FI_RMA_EVENT endpoint count every access to its MRs. */
	a.mr_events = (req->caps & FI_RMA_EVENT) && (cts[EPC_REM_READ] || cts[EPC_REM_WRITE]);
	a.mem = &host_mem_ops;
	a.mem_ctx = c;
	a.comp = on_comp;
	a.comp_ctx = ep;
	a.on_fatal = on_fatal;
	a.fatal_ctx = ep;
	int ret = sw_ep_open(nic, &a, &ep->sw);
	if (ret) {
		if (!d->quiet)
			fprintf(stderr, "cxisimd: client %u: endpoint on NIC %u pid %u svc %u vni %u: %s\n", c->id, addr,
				req->pid, req->svc_id, req->vnis[0], strerror(-ret));
		free(ep);
		return ret;
	}
	client_add_obj(c, &ep->o);
	ep->pid = sw_ep_addr(ep->sw).pid;
	ep->cmdq = cmdq;
	cmdq->ep = ep;
	ep->txq = txq;
	ep->rxq = rxq;
	if (txq)
		txq->users++;
	if (rxq)
		rxq->users++;
	for (int i = 0; i < EPC_COUNT; i++) {
		ep->cts[i] = cts[i];
		if (cts[i])
			cts[i]->users++;
	}
	rep->id = ep->o.id;
	rep->pid = ep->pid;
	capture_ep(ep, req);
	/* Commands may already be waiting. */
	ep_drain_cmdq(ep);
	return 0;
}

void ep_close(struct dep *ep)
{
	struct client *c = ep->o.c;
	sim_timer_cancel(c->d->sim, &ep->close_timer);
	ev_timer_stop(c->d->loop, &ep->retry_timer);
	trig_ep_closed(ep);
	/* Closing the software endpoint frees its PtlTEs, LEs and queues on the NIC; operations still in flight
	 * are abandoned (their completions would have nowhere to go). */
	sw_ep_close(ep->sw);
	while (ep->ops)
		ep_op_free(ep->ops);
	if (ep->cmdq)
		ep->cmdq->ep = NULL;
	if (ep->txq)
		ep->txq->users--;
	if (ep->rxq)
		ep->rxq->users--;
	for (int i = 0; i < EPC_COUNT; i++)
		if (ep->cts[i])
			ep->cts[i]->users--;
	for (struct obj *o = c->objs; o; o = o->next)
		if (o->kind == OBJ_MR && ((struct dmr *)o)->ep == ep)
			((struct dmr *)o)->ep = NULL;
	client_del_obj(c, &ep->o);
	free(ep);
}

static bool tx_in_flight(const struct dep *ep)
{
	for (const struct dop *op = ep->ops; op; op = op->next)
		if (op->op != CXS_CMD_RECV)
			return true;
	return false;
}

#define CLOSE_POLL SIM_US(10)
#define CLOSE_MAX SIM_MS(1000)

static void close_poll(struct sim *sim, void *obj, uint64_t arg)
{
	struct dep *ep = obj;
	(void)arg;
	if (tx_in_flight(ep) && sim_now(sim) < ep->close_deadline) {
		ep->close_timer = sim_timer_start(sim, CLOSE_POLL, close_poll, ep, 0);
		return;
	}
	struct client *c = ep->o.c;
	uint32_t seq = ep->close_seq;
	ep_close(ep);
	server_reply(c, seq, 0, NULL, 0, NULL, 0);
}

bool ep_close_request(struct dep *ep, uint32_t seq)
{
	if (ep->closing)
		return true;
	ep_drain_cmdq(ep);
	if (!tx_in_flight(ep) || ep->fatal) {
		ep_close(ep);
		return false;
	}
	/* As the driver waits for a command queue to drain before freeing it, sends and RMA the NIC already
	 * holds (inject operations have no completion to wait for) are delivered before the endpoint goes. */
	struct sim *sim = ep->o.c->d->sim;
	ep->closing = true;
	ep->close_seq = seq;
	ep->close_deadline = sim_now(sim) + CLOSE_MAX;
	ep->close_timer = sim_timer_start(sim, CLOSE_POLL, close_poll, ep, 0);
	return true;
}

int ep_ctrl(struct client *c, const struct ctl_ep_ctrl_req *req, void *rep, size_t *rep_len)
{
	struct dep *ep = (struct dep *)client_find(c, req->id, OBJ_EP);
	if (!ep)
		return -ENOENT;
	switch (req->op) {
	case EPCTRL_RNR_MAX_TIMEOUT:
		sw_ep_set_rnr_max_timeout_us(ep->sw, req->value);
		*rep_len = 0;
		return 0;
	case EPCTRL_MIN_MULTI_RECV:
		sw_ep_set_min_multi_recv(ep->sw, req->value);
		*rep_len = 0;
		return 0;
	case EPCTRL_TCLASS:
		*rep_len = 0;
		return -EOPNOTSUPP;
	case EPCTRL_GET_STATS: {
		const struct sw_ep_stats *s = sw_ep_stats(ep->sw);
		struct ctl_ep_stats st = {
			.total_rnr_nacks = s->total_rnr_nacks,
			.total_retries = s->total_retries,
			.mr_hazards = s->mr_hazards,
		};
		memcpy(rep, &st, sizeof(st));
		*rep_len = sizeof(st);
		return 0;
	}
	default:
		*rep_len = 0;
		return -EINVAL;
	}
}

/* ---- memory regions ---- */

/* What the process's provider charges, in virtual time, to map a buffer for the NIC (provider/iomm.c): the
 * same "cxi" parameters the simulated processes' registrations are priced with (sw_env.c). */
void mr_host_costs(struct daemon *d, struct pcb_shm *pcb)
{
	struct sw_map_costs k;
	sw_map_costs(d->sim, &k);
	pcb->map_call_ps = k.kernel_call_ps;
	pcb->map_page_ps = k.map_page_ps;
	pcb->unmap_page_ps = k.unmap_page_ps;
	pcb->map_cache_hit_ps = k.cache_lookup_ps;
}

static void mr_reg_done(void *ctx, struct sw_mr *m, int ret)
{
	struct dmr *mr = ctx;
	struct client *c = mr->o.c;
	(void)m;
	if (!c) { /* the process died while the registration was in progress */
		if (!ret)
			sw_mr_close(mr->mr, NULL, NULL);
		free(mr);
		return;
	}
	if (ret) {
		server_reply(c, mr->pending_seq, ret, NULL, 0, NULL, 0);
		client_del_obj(c, &mr->o);
		free(mr);
		return;
	}
	mr->registered = true;
	capture_mr(mr);
	struct ctl_mr_reg_rep rep = { .id = mr->o.id, .key = sw_mr_key(mr->mr), .optimized = sw_mr_is_optimized(mr->mr) };
	server_reply(c, mr->pending_seq, 0, &rep, sizeof(rep), NULL, 0);
}

int mr_reg(struct client *c, uint32_t seq, const struct ctl_mr_reg_req *req, bool *deferred)
{
	struct dep *ep = (struct dep *)client_find(c, req->ep, OBJ_EP);
	if (!ep)
		return -EINVAL;
	if (!addr_ok(req->addr) || req->addr + req->len < req->addr)
		return -EINVAL;
	struct dct *ct = NULL;
	if (req->ct && !(ct = (struct dct *)client_find(c, req->ct, OBJ_CT)))
		return -EINVAL;
	uint64_t access = 0, flags = 0;
	if (req->flags & MRF_REMOTE_READ)
		access |= FI_REMOTE_READ;
	if (req->flags & MRF_REMOTE_WRITE)
		access |= FI_REMOTE_WRITE;
	if ((req->flags & MRF_PROV_KEY) && !(req->flags & MRF_DOMAIN_KEY))
		flags |= SW_MR_PROV_KEY;
	if (req->flags & MRF_UNCACHED_MAP)
		flags |= SW_MR_NO_KEY_CACHE;
	/* A counter bound to the MR counts its remote accesses: the MR reports them (upstream counts them with
	 * a CT on the MR's LE). */
	if ((req->flags & MRF_RMA_EVENT) || ct)
		flags |= FI_RMA_EVENT;
	struct dmr *mr = xcalloc(1, sizeof(*mr));
	mr->o.kind = OBJ_MR;
	mr->ep = ep;
	mr->ct = ct;
	mr->ct_flags = req->flags & (MRF_CT_REMOTE_WRITE | MRF_CT_REMOTE_READ);
	mr->context = req->context;
	mr->addr = req->addr;
	mr->len = req->len;
	mr->reg_flags = req->flags;
	client_add_obj(c, &mr->o);
	mr->pending_seq = seq;
	int ret = sw_mr_reg(ep->sw, req->addr, req->len, access, req->key, flags, mr_reg_done, mr, &mr->mr);
	if (ret) {
		client_del_obj(c, &mr->o);
		free(mr);
		return ret;
	}
	*deferred = true;
	return 0;
}

static void mr_close_done(void *ctx, struct sw_mr *m, int ret)
{
	struct dmr *mr = ctx;
	(void)m;
	if (mr->o.c) {
		server_reply(mr->o.c, mr->pending_seq, ret, NULL, 0, NULL, 0);
		client_del_obj(mr->o.c, &mr->o);
	}
	free(mr);
}

int mr_close(struct dmr *mr, uint32_t seq, bool *deferred)
{
	if (mr->closing)
		return -EBUSY;
	if (!mr->registered || !mr->ep) {
		/* Its endpoint is gone (the NIC side went with it). */
		client_del_obj(mr->o.c, &mr->o);
		free(mr);
		return 0;
	}
	mr->closing = true;
	mr->pending_seq = seq;
	capture_mr_close(mr, true);
	int ret = sw_mr_close(mr->mr, mr_close_done, mr);
	if (ret) {
		mr->closing = false;
		return ret;
	}
	*deferred = true;
	return 0;
}

/* The process died: close the MR on the NIC; nobody waits for the answer.  Whichever callback is still
 * to come (registration or close) frees the record. */
void mr_abandon(struct dmr *mr)
{
	capture_mr_close(mr, false);
	client_del_obj(mr->o.c, &mr->o);
	mr->o.c = NULL;
	if (!mr->registered || mr->closing)
		return; /* mr_reg_done / mr_close_done frees it */
	if (mr->ep) {
		mr->closing = true;
		if (sw_mr_close(mr->mr, mr_close_done, mr) == 0)
			return;
	}
	free(mr);
}
