/* The daemon's control side: the listening socket, attached clients, control requests, and the death of a
 * client (its socket closes: every NIC resource it held is freed and the other clients go on). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../stats.h"
#include "../util.h"
#include "daemon.h"

/* ---- messages ---- */

void server_reply(struct client *c, uint32_t seq, int32_t status, const void *body, size_t len, const int *fds,
		  int nfds)
{
	if (c->dead)
		return;
	if (daemon_virtual(c->d))
		vclock_request_done(c); /* before the reply: the sender finds itself busy at the reply's time */
	struct ctl_hdr h = { .op = 0, .seq = seq, .status = status, .len = (uint32_t)len };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	if (nfds > 0) {
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	/* A client that does not read its replies is broken; its socket will report the rest. */
}

/* ---- objects ---- */

struct obj *client_find(struct client *c, uint32_t id, enum obj_kind kind)
{
	for (struct obj *o = c->objs; o; o = o->next)
		if (o->id == id && o->kind == kind)
			return o;
	return NULL;
}

void client_add_obj(struct client *c, struct obj *o)
{
	o->c = c;
	o->id = ++c->next_id;
	o->next = c->objs;
	c->objs = o;
}

void client_del_obj(struct client *c, struct obj *o)
{
	for (struct obj **p = &c->objs; *p; p = &(*p)->next)
		if (*p == o) {
			*p = o->next;
			return;
		}
}

/* Shared memory the client maps: sealed so that it can neither shrink it under the daemon (SIGBUS) nor
 * grow it. */
static int shm_create(const char *name, size_t len, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int e = errno;
		close(fd);
		return -e;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	*map = p;
	return fd;
}

static void queue_free(struct dqueue *q)
{
	struct daemon *d = q->o.c->d;
	if (q->kind == QUEUE_CMD)
		ev_io_stop(d->loop, &q->io);
	if (q->bl_head)
		d->nbacklogged--;
	while (q->bl_head) {
		struct backlog *b = q->bl_head;
		q->bl_head = b->next;
		pool_put(&d->backlog_pool, b);
	}
	if (q->map)
		munmap(q->map, q->map_len);
	if (q->memfd >= 0)
		close(q->memfd);
	if (q->efd >= 0)
		close(q->efd);
	free(q);
}

static void cmdq_doorbell(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct dqueue *q = w->data;
	uint64_t v;
	ssize_t r = read(q->efd, &v, sizeof(v));
	(void)r;
	if (!q->ep)
		return;
	struct daemon *d = q->o.c->d;
	clock_catch_up(d);
	ep_drain_cmdq(q->ep);
	clock_step(d);
}

static int op_queue_open(struct client *c, const struct ctl_queue_open_req *req, struct ctl_queue_open_rep *rep,
			 int *fds, int *nfds)
{
	if ((req->kind != QUEUE_CMD && req->kind != QUEUE_EVT) || req->nslots < 16 || req->nslots > (1u << 20) ||
	    (req->nslots & (req->nslots - 1)))
		return -EINVAL;
	struct dqueue *q = xcalloc(1, sizeof(*q));
	q->o.kind = OBJ_QUEUE;
	q->kind = req->kind;
	q->efd = -1;
	q->map_len = ring_bytes(req->nslots);
	q->memfd = shm_create("cxisim-queue", q->map_len, &q->map);
	if (q->memfd < 0) {
		int e = q->memfd;
		free(q);
		return e;
	}
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0) {
		q->o.c = c;
		queue_free(q);
		return -ENOMEM;
	}
	ring_format(q->map, req->nslots);
	ring_attach(&q->ring, q->map, req->nslots, req->kind == QUEUE_CMD ? 16 : 2);
	client_add_obj(c, &q->o);
	if (q->kind == QUEUE_CMD) {
		/* The daemon sleeps on command queues: armed until it drains them. */
		atomic_store(&q->ring.shm->armed, 1);
		ev_io_init(&q->io, cmdq_doorbell, q->efd, EV_READ);
		q->io.data = q;
		ev_io_start(c->d->loop, &q->io);
	}
	rep->id = q->o.id;
	rep->nslots = req->nslots;
	rep->bytes = q->map_len;
	fds[0] = q->memfd;
	fds[1] = q->efd;
	*nfds = 2;
	return 0;
}

static int op_ct_open(struct client *c, const void *body, size_t blen, struct ctl_ct_open_rep *rep, int *fds,
		      int *nfds)
{
	struct ctl_ct_open_req req = { 0 };
	if (blen) {
		if (blen != sizeof(req))
			return -EINVAL;
		memcpy(&req, body, sizeof(req));
		if (req.events > 1)
			return -EINVAL;
	}
	struct dct *ct = xcalloc(1, sizeof(*ct));
	ct->bytes = req.events == 1;
	ct->o.kind = OBJ_CT;
	ct->map_len = 4096;
	int fd = shm_create("cxisim-ct", ct->map_len, &ct->map);
	if (fd < 0) {
		free(ct);
		return fd;
	}
	ct->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ct->efd < 0) {
		munmap(ct->map, ct->map_len);
		close(fd);
		free(ct);
		return -ENOMEM;
	}
	ct->shm = ct->map;
	client_add_obj(c, &ct->o);
	rep->id = ct->o.id;
	rep->bytes = ct->map_len;
	fds[0] = fd;
	fds[1] = ct->efd;
	*nfds = 2;
	/* The daemon keeps no fd to the memfd: the mapping holds it. */
	return 0;
}

static void ct_free(struct dct *ct)
{
	trig_ct_free(ct);
	munmap(ct->map, ct->map_len);
	close(ct->efd);
	free(ct);
}

static int op_ct_set(struct client *c, const struct ctl_ct_set_req *req)
{
	struct dct *ct = (struct dct *)client_find(c, req->id, OBJ_CT);
	if (!ct || req->which > 1)
		return -EINVAL;
	_Atomic uint64_t *v = req->which ? &ct->shm->failure : &ct->shm->success;
	if (req->add)
		atomic_fetch_add(v, req->value);
	else
		atomic_store(v, req->value);
	ct_add(ct, req->which, 0);
	return 0;
}

/* Close one object.  Returns 1 when the reply is deferred (an MR close waiting for its accesses). */
static int obj_close(struct client *c, struct obj *o, uint32_t seq)
{
	switch (o->kind) {
	case OBJ_EP:
		return ep_close_request((struct dep *)o, seq) ? 1 : 0;
	case OBJ_MR: {
		bool deferred = false;
		int ret = mr_close((struct dmr *)o, seq, &deferred);
		return deferred ? 1 : ret;
	}
	case OBJ_QUEUE: {
		struct dqueue *q = (struct dqueue *)o;
		if (q->ep || q->users)
			return -EBUSY;
		client_del_obj(c, o);
		queue_free(q);
		return 0;
	}
	case OBJ_CT: {
		struct dct *ct = (struct dct *)o;
		if (ct->users)
			return -EBUSY;
		client_del_obj(c, o);
		ct_free(ct);
		return 0;
	}
	}
	return -EINVAL;
}

/* ---- attach ---- */

static int op_attach(struct client *c, const struct ctl_attach_req *req, struct ctl_attach_rep *rep, int *fds,
		     int *nfds)
{
	struct daemon *d = c->d;
	if (c->attached)
		return -EALREADY;
	if (req->version != CXISIM_PROTO_VERSION)
		return -EPROTO;
	/* One time mode per daemon: a process that expects the other one is refused (a realtime process
	 * among virtual-time ones would make the lockstep meaningless, and the reverse). */
	if (req->time_mode != CXISIM_TIME_ANY && req->time_mode != d->emu->time_mode) {
		if (!d->quiet)
			fprintf(stderr, "cxisimd: pid %d expects %s time, this daemon runs %s time: refused\n",
				(int)c->pid, req->time_mode == CXISIM_TIME_VIRTUAL ? "virtual" : "realtime",
				daemon_virtual(d) ? "virtual" : "realtime");
		return -EPROTO;
	}
	if (d->nclients > d->emu->max_clients)
		return -EUSERS;
	int node = emu_place(d->emu, req->node, req->rank);
	if (node < 0)
		return -EINVAL;
	c->node = (uint32_t)node;
	c->rank = req->rank;
	memcpy(c->progname, req->progname, sizeof(c->progname));
	c->progname[sizeof(c->progname) - 1] = 0;
	for (char *p = c->progname; *p; p++) /* the client's word, printed in the daemon's log lines */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	c->pcb_len = (sizeof(struct pcb_shm) + 4095) & ~(size_t)4095;
	void *map;
	int fd = shm_create("cxisim-pcb", c->pcb_len, &map);
	if (fd < 0)
		return fd;
	c->pcb = map;
	c->pcb_fd = fd;
	c->pcb->magic = PCB_MAGIC;
	c->pcb->time_mode = d->emu->time_mode;
	c->pcb->nthreads = CXISIM_MAX_THREADS;
	atomic_store(&c->pcb->daemon_alive, 1);
	mr_host_costs(d, c->pcb);
	memset(rep, 0, sizeof(*rep));
	rep->version = CXISIM_PROTO_VERSION;
	rep->daemon_pid = getpid();
	rep->client_id = c->id;
	rep->node = c->node;
	rep->nnics = d->emu->nics_per_node;
	rep->time_mode = d->emu->time_mode;
	rep->pcb_bytes = c->pcb_len;
	for (uint32_t i = 0; i < rep->nnics; i++) {
		rep->nics[i].addr = emu_nic_addr(d->emu, c->node, i);
		rep->nics[i].index = i;
	}
	snprintf(rep->scenario, sizeof(rep->scenario), "%s", d->sc ? "scenario" : "default");
	fds[0] = fd;
	*nfds = 1;
	c->attached = true;
	if (daemon_virtual(d)) {
		int efd = vclock_attach(c);
		if (efd < 0) {
			c->attached = false;
			return efd;
		}
		fds[1] = efd;
		*nfds = 2;
	}
	(*d->st_attach)++;
	return 0;
}

/* ---- status (JSON) ---- */

static size_t status_json(struct daemon *d, char *buf, size_t len)
{
	size_t n = 0;
#define P(...) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__)
	uint64_t eps = 0, mrs = 0, queues = 0, cts = 0, ops = 0;
	uint32_t attached = 0;
	for (struct client *c = d->clients; c; c = c->next) {
		attached += c->attached;
		for (struct obj *o = c->objs; o; o = o->next) {
			eps += o->kind == OBJ_EP;
			mrs += o->kind == OBJ_MR;
			queues += o->kind == OBJ_QUEUE;
			cts += o->kind == OBJ_CT;
			if (o->kind == OBJ_EP)
				ops += ((struct dep *)o)->nops;
		}
	}
	P("{\"daemon_pid\": %d, \"clients\": %u, \"connections\": %u, \"endpoints\": %llu, \"mrs\": %llu, \"queues\": %llu, "
	  "\"counters\": %llu, \"ops_in_flight\": %llu, \"attaches\": %llu, \"client_deaths\": %llu, "
	  "\"virtual_time_ps\": %llu, \"events_processed\": %llu, \"op_pool_live\": %llu, \"nodes\": %u, "
	  "\"nics_per_node\": %u, \"commands\": %llu, \"bad_commands\": %llu, \"clients_list\": [",
	  (int)getpid(), attached, d->nclients, (unsigned long long)eps, (unsigned long long)mrs, (unsigned long long)queues,
	  (unsigned long long)cts, (unsigned long long)ops, (unsigned long long)*d->st_attach,
	  (unsigned long long)*d->st_client_deaths, (unsigned long long)sim_now(d->sim),
	  (unsigned long long)sim_events_processed(d->sim), (unsigned long long)d->op_pool.live, d->emu->nodes,
	  d->emu->nics_per_node, (unsigned long long)*d->st_cmds, (unsigned long long)*d->st_bad_cmds);
	bool first = true;
	for (struct client *c = d->clients; c; c = c->next) {
		if (!c->attached)
			continue;
		P("%s{\"pid\": %d, \"node\": %u, \"rank\": %d, \"prog\": \"%s\"}", first ? "" : ", ", (int)c->pid,
		  c->node, c->rank, c->progname);
		first = false;
	}
	P("]}");
#undef P
	return n < len ? n : len - 1;
}

/* ---- dispatch ---- */

/* Virtual mode: a request waits for the commands the process queued before it (program order across the
 * two channels), which run when virtual time reaches their stamps; vclock_run hands it back. */
static bool hold_request(struct client *c, const char *buf, size_t n)
{
	if (!daemon_virtual(c->d) || !c->attached || c->held_req)
		return false;
	bool pending = false;
	for (struct obj *o = c->objs; o; o = o->next)
		if (o->kind == OBJ_EP && ep_orders_requests((struct dep *)o))
			pending = true;
	/* ... and it takes effect at its sender's virtual time, not earlier. */
	simtime_t vt = vclock_request_stamp(c);
	if (!pending && vt <= sim_now(c->d->sim)) {
		/* The engine is at the stamp already when the sender's own bound took it there before its request
		 * arrived (PCB_WAIT_REQUEST, vclock.c): it waited for the same thing, so it counts as held. */
		if (vt == sim_now(c->d->sim) && vt > 0)
			(*c->d->st_held_reqs)++;
		return false;
	}
	c->held_vt = vt;
	c->held_req = xmalloc(n);
	memcpy(c->held_req, buf, n);
	c->held_len = n;
	(*c->d->st_held_reqs)++;
	clock_step(c->d);
	return true;
}

static void handle_request(struct client *c, const char *buf, size_t n)
{
	c->req_in = true; /* (its sender no longer holds the engine back: vclock.c scan_client) */
	if (hold_request(c, buf, n))
		return;
	server_handle_request(c, buf, n);
}

void server_handle_request(struct client *c, const char *buf, size_t n)
{
	struct ctl_hdr h;
	if (n < sizeof(h)) {
		server_close_client(c, "short control message");
		return;
	}
	memcpy(&h, buf, sizeof(h));
	const char *body = buf + sizeof(h);
	size_t blen = n - sizeof(h);
	if (h.len != blen) {
		server_close_client(c, "malformed control message");
		return;
	}
	union {
		struct ctl_attach_rep attach;
		struct ctl_queue_open_rep queue;
		struct ctl_ct_open_rep ct;
		struct ctl_ep_open_rep ep;
		struct ctl_mr_reg_rep mr;
		struct ctl_ep_stats stats;
		char text[CTL_MAX_MSG - sizeof(struct ctl_hdr)];
	} rep;
	memset(&rep, 0, sizeof(rep));
	size_t rlen = 0;
	int fds[4], nfds = 0, ret;
#define NEED(type)                                                                                           \
	if (blen < sizeof(type)) {                                                                           \
		ret = -EINVAL;                                                                               \
		break;                                                                                       \
	}
	/* Before attach a client may only attach or read the status; everything else needs an identity. */
	if (!c->attached && h.op != CTL_ATTACH && h.op != CTL_STATUS) {
		server_reply(c, h.seq, -EPROTO, NULL, 0, NULL, 0);
		return;
	}
	struct daemon *d = c->d;
	clock_catch_up(d);
	/* Program order across the two channels: commands the process queued before this request (a send
	 * before an MR close or an endpoint close) reach the NIC first. */
	for (struct obj *o = c->objs; o; o = o->next)
		if (o->kind == OBJ_EP)
			ep_drain_cmdq((struct dep *)o);
	switch (h.op) {
	case CTL_ATTACH:
		NEED(struct ctl_attach_req);
		ret = op_attach(c, (const void *)body, &rep.attach, fds, &nfds);
		rlen = sizeof(rep.attach);
		break;
	case CTL_QUEUE_OPEN:
		NEED(struct ctl_queue_open_req);
		ret = op_queue_open(c, (const void *)body, &rep.queue, fds, &nfds);
		rlen = sizeof(rep.queue);
		break;
	case CTL_CT_OPEN:
		ret = op_ct_open(c, body, blen, &rep.ct, fds, &nfds);
		rlen = sizeof(rep.ct);
		break;
	case CTL_CT_SET:
		NEED(struct ctl_ct_set_req);
		ret = op_ct_set(c, (const void *)body);
		break;
	case CTL_EP_OPEN:
		NEED(struct ctl_ep_open_req);
		ret = ep_open(c, (const void *)body, &rep.ep);
		rlen = sizeof(rep.ep);
		break;
	case CTL_EP_CTRL:
		NEED(struct ctl_ep_ctrl_req);
		rlen = sizeof(rep.stats);
		ret = ep_ctrl(c, (const void *)body, &rep.stats, &rlen);
		break;
	case CTL_MR_REG: {
		NEED(struct ctl_mr_reg_req);
		bool deferred = false;
		ret = mr_reg(c, h.seq, (const void *)body, &deferred);
		if (deferred) {
			clock_step(d); /* the registration completes after its modelled cost */
			return;
		}
		break;
	}
	case CTL_OBJ_CLOSE: {
		NEED(struct ctl_obj_close_req);
		const struct ctl_obj_close_req *r = (const void *)body;
		struct obj *o = NULL;
		for (struct obj *x = c->objs; x; x = x->next)
			if (x->id == r->id)
				o = x;
		ret = o ? obj_close(c, o, h.seq) : -ENOENT;
		if (ret == 1) {
			clock_step(d);
			return;
		}
		break;
	}
	case CTL_STATUS:
		rlen = status_json(d, rep.text, sizeof(rep.text));
		ret = 0;
		break;
	case CTL_DETACH:
		c->detached = true;
		ret = 0;
		break;
	case CTL_TRIG_QUEUE:
		NEED(struct ctl_trig_queue_req);
		ret = trig_queue(c, (const void *)body, (const unsigned char *)body + sizeof(struct ctl_trig_queue_req),
				 blen - sizeof(struct ctl_trig_queue_req));
		break;
	case CTL_TRIG_FLUSH:
		trig_flush(c);
		ret = 0;
		break;
	case CTL_SHUTDOWN:
		/* Only the daemon's owner may stop it: the process that started it (`cxisim exec`), as the
		 * kernel names it, and only once attached.  A private daemon has no owner (its starter double-
		 * forked it away); its exit-when-idle policy stops it.  Anyone else is refused and changes
		 * nothing, so one stray message cannot end a daemon other programs of a job share. */
		if (!d->owner_pid || c->pid != d->owner_pid) {
			ret = -EPERM;
			break;
		}
		d->private_mode = true;
		d->linger_s = 0;
		ret = 0;
		break;
	default:
		ret = -EOPNOTSUPP;
		break;
	}
#undef NEED
	server_reply(c, h.seq, ret, ret ? NULL : &rep, ret ? 0 : rlen, fds, ret ? 0 : nfds);
	clock_step(d);
}

static void client_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct client *c = w->data;
	char buf[CTL_MAX_MSG];
	struct iovec iov = { buf, sizeof(buf) };
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* Clients never send descriptors: close any that arrive. */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int *p = (int *)CMSG_DATA(cm);
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
				close(p[i]);
		}
	if (n <= 0) {
		server_close_client(c, n == 0 ? (c->detached || !c->attached ? "disconnected" : "died") : "socket error");
		return;
	}
	handle_request(c, buf, (size_t)n);
}

void server_close_client(struct client *c, const char *why)
{
	struct daemon *d = c->d;
	if (c->dead)
		return;
	c->dead = true;
	ev_io_stop(d->loop, &c->io);
	if (!d->quiet)
		fprintf(stderr, "cxisimd: client %u (pid %d, %s) %s\n", c->id, (int)c->pid, c->progname, why);
	/* MRs first (their close goes to the NIC), then endpoints (they release PtlTEs, LEs and queue
	 * bindings), then the shared memory of queues and counters. */
	trig_client_free(c);
	struct obj *o, *next;
	for (o = c->objs; o; o = next) {
		next = o->next;
		if (o->kind == OBJ_MR)
			mr_abandon((struct dmr *)o);
	}
	for (o = c->objs; o; o = next) {
		next = o->next;
		if (o->kind == OBJ_EP)
			ep_close((struct dep *)o);
	}
	while (c->objs) {
		struct obj *o = c->objs;
		c->objs = o->next;
		if (o->kind == OBJ_QUEUE) {
			((struct dqueue *)o)->ep = NULL;
			queue_free((struct dqueue *)o);
		} else if (o->kind == OBJ_CT) {
			ct_free((struct dct *)o);
		}
	}
	vclock_detach(c);
	if (c->pcb)
		munmap(c->pcb, c->pcb_len);
	if (c->pcb_fd >= 0)
		close(c->pcb_fd);
	close(c->fd);
	for (struct client **p = &d->clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	d->nclients--;
	if (c->attached && !c->detached && strcmp(why, "daemon shutting down"))
		(*d->st_client_deaths)++;
	else if (c->attached)
		(*d->st_detach)++;
	free(c);
	daemon_check_idle(d);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	struct daemon *d = w->data;
	int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl)) {
		close(fd);
		return;
	}
	struct client *c = xcalloc(1, sizeof(*c));
	c->d = d;
	c->fd = fd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->id = ++d->next_client_id;
	c->pcb_fd = -1;
	c->pcb_efd = -1;
	c->rank = -1;
	snprintf(c->progname, sizeof(c->progname), "?");
	c->next = d->clients;
	d->clients = c;
	d->nclients++;
	ev_timer_stop(loop, &d->linger);
	ev_io_init(&c->io, client_cb, fd, EV_READ);
	c->io.data = c;
	ev_io_start(loop, &c->io);
}

static void linger_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)revents;
	struct daemon *d = t->data;
	if (!d->nclients)
		ev_break(loop, EVBREAK_ALL);
}

void daemon_check_idle(struct daemon *d)
{
	if (!d->private_mode || d->nclients)
		return;
	ev_timer_stop(d->loop, &d->linger);
	ev_timer_set(&d->linger, d->linger_s, 0);
	ev_timer_start(d->loop, &d->linger);
}

int server_listen(struct daemon *d, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(d->sock_path, sizeof(d->sock_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		/* A stale socket from a dead daemon: take it over only if nobody answers on it. */
		int e = errno;
		if (e == EADDRINUSE) {
			int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
			bool alive = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
			if (probe >= 0)
				close(probe);
			if (!alive && unlink(path) == 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
				goto bound;
		}
		close(fd);
		return -e;
	}
bound:
	if (listen(fd, 128)) {
		int e = errno;
		close(fd);
		return -e;
	}
	d->listen_fd = fd;
	ev_io_init(&d->listen_io, accept_cb, fd, EV_READ);
	d->listen_io.data = d;
	ev_io_start(d->loop, &d->listen_io);
	ev_timer_init(&d->linger, linger_cb, 0, 0);
	d->linger.data = d;
	return 0;
}
