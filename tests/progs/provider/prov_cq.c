/* Completion queues and counters: every CQ format carries exactly its fields; FI_WAIT_FD with fi_trywait
 * and poll(); selective completion; truncation (FI_ETRUNC with olen); cancel (FI_ECANCELED); directed
 * receive; fi_cq_strerror; counters bound to an endpoint, fi_cntr_wait, set and add. */
#include "common.h"

static int peer(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, FI_TAGGED | FI_MSG);
	char name[8];
	t_recv(c, name, 8);
	t_send(c, t.name, 8);
	struct fi_cq_tagged_entry e;
	char msg[256];
	t_fill(msg, sizeof(msg), 3);
	for (int i = 0; i < 4; i++) { /* one endpoint per CQ format */
		t_recv(c, name, 8);
		fi_addr_t fa = t_insert(&t, name);
		t_sync(c);
		T_OK(fi_tsenddata(t.ep, msg, 100, NULL, 0xda7a0000ULL + (uint64_t)i, fa, 0x42, NULL));
		t_cq_expect(t.cq, &e, "tsenddata");
	}
	t_recv(c, name, 8);
	fi_addr_t rx = t_insert(&t, name);
	t_sync(c); /* wait-fd round */
	T_OK(fi_send(t.ep, msg, 10, NULL, rx, NULL));
	t_cq_expect(t.cq, &e, "send");
	t_sync(c); /* truncation round */
	T_OK(fi_tsend(t.ep, msg, 256, NULL, rx, 7, NULL));
	t_cq_expect(t.cq, &e, "send 256 into 100");
	t_sync(c); /* directed receive round */
	T_OK(fi_tsend(t.ep, msg, 8, NULL, rx, 8, NULL));
	t_cq_expect(t.cq, &e, "send to a directed receive");
	t_sync(c);
	t_recv(c, name, 8); /* counters round: a new endpoint */
	fi_addr_t rx3 = t_insert(&t, name);
	t_sync(c);
	for (int i = 0; i < 5; i++)
		T_OK(fi_tinject(t.ep, msg, 16, rx3, 11));
	t_sync(c);
	t_close(&t);
	return 0;
}

static void check_format(struct fid_domain *dom, struct fid_ep **epp, struct t_ep *t, enum fi_cq_format fmt, int i,
			 struct t_chan c)
{
	(void)epp;
	struct fid_cq *cq;
	struct fi_cq_attr ca = { .format = fmt, .wait_obj = FI_WAIT_NONE };
	T_OK(fi_cq_open(dom, &ca, &cq, NULL));
	/* A second endpoint on the same domain and AV, bound to this CQ. */
	struct fid_ep *ep;
	T_OK(fi_endpoint(dom, t->info, &ep, NULL));
	T_OK(fi_ep_bind(ep, &t->av->fid, 0));
	T_OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	T_OK(fi_enable(ep));
	char name[8];
	size_t nl = 8;
	T_OK(fi_getname(&ep->fid, name, &nl));
	t_send(c, name, 8);
	char buf[128];
	T_OK(fi_trecv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 0x42, 0, buf));
	t_sync(c);
	union {
		struct fi_cq_entry ctx;
		struct fi_cq_msg_entry msg;
		struct fi_cq_data_entry data;
		struct fi_cq_tagged_entry tag;
		char raw[64];
	} u;
	ssize_t n;
	double end = t_now() + 10;
	memset(&u, 0x5a, sizeof(u));
	while ((n = fi_cq_read(cq, &u, 1)) == -FI_EAGAIN && t_now() < end)
		;
	T_CHECK(n == 1 && u.ctx.op_context == buf, "format %d: one entry, op_context", fmt);
	size_t sz = fmt == FI_CQ_FORMAT_CONTEXT ? sizeof(u.ctx) : fmt == FI_CQ_FORMAT_MSG ? sizeof(u.msg)
		    : fmt == FI_CQ_FORMAT_DATA ? sizeof(u.data) : sizeof(u.tag);
	T_CHECK((unsigned char)u.raw[sz] == 0x5a, "format %d: writes exactly %zu bytes", fmt, sz);
	if (fmt != FI_CQ_FORMAT_CONTEXT)
		T_CHECK(u.msg.len == 100 && (u.msg.flags & FI_RECV) && (u.msg.flags & FI_TAGGED) &&
				(u.msg.flags & FI_REMOTE_CQ_DATA),
			"format %d: len %zu, flags FI_RECV|FI_TAGGED|FI_REMOTE_CQ_DATA", fmt, u.msg.len);
	if (fmt == FI_CQ_FORMAT_DATA || fmt == FI_CQ_FORMAT_TAGGED)
		T_CHECK(u.data.data == 0xda7a0000ULL + (uint64_t)i && u.data.buf == buf, "format %d: data and buf", fmt);
	if (fmt == FI_CQ_FORMAT_TAGGED)
		T_CHECK(u.tag.tag == 0x42, "format %d: tag", fmt);
	T_CHECK(t_verify(buf, 100, 3), "format %d: payload", fmt);
	T_OK(fi_close(&ep->fid));
	T_OK(fi_close(&cq->fid));
}

int main(void)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(peer, &l, "peer");
	struct t_chan c = t_link_a(&l);
	t_who = "main";
	struct t_ep t;
	struct fi_info *h = t_hints(FI_TAGGED | FI_MSG | FI_DIRECTED_RECV);
	t_open_with(&t, h, NULL, true);
	t_send(c, t.name, 8);
	char pname[8];
	t_recv(c, pname, 8);
	fi_addr_t pa = t_insert(&t, pname);
	static const enum fi_cq_format fmts[] = { FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
						  FI_CQ_FORMAT_TAGGED };
	/* The peer sends its messages to whatever name it got last: hand it each new endpoint's name. */
	for (int i = 0; i < 4; i++) {
		char dummy[8];
		(void)dummy;
		check_format(t.dom, NULL, &t, fmts[i], i, c);
	}
	/* Remaining rounds go to the main endpoint again. */
	t_send(c, t.name, 8);

	/* FI_WAIT_FD: trywait says "go to sleep", poll wakes when the completion arrives. */
	int fd = -1;
	T_OK(fi_control(&t.cq->fid, FI_GETWAIT, &fd));
	T_CHECK(fd >= 0, "FI_GETWAIT gives an fd");
	char b10[16];
	T_OK(fi_recv(t.ep, b10, sizeof(b10), NULL, FI_ADDR_UNSPEC, b10));
	struct fid *fids[1] = { &t.cq->fid };
	T_CHECK(fi_trywait(t.fab, fids, 1) == 0, "fi_trywait on an empty CQ: 0");
	t_sync(c);
	struct pollfd pf = { fd, POLLIN, 0 };
	int pr = poll(&pf, 1, 10000);
	T_CHECK(pr == 1, "poll on the wait fd woke up");
	struct fi_cq_tagged_entry e;
	T_CHECK(fi_trywait(t.fab, fids, 1) == -FI_EAGAIN, "fi_trywait with a completion queued: -FI_EAGAIN");
	T_CHECK(fi_cq_read(t.cq, &e, 1) == 1 && e.op_context == b10 && e.len == 10, "completion read after wake-up");

	/* Truncation. */
	char small[100];
	T_OK(fi_trecv(t.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, 7, 0, small));
	t_sync(c);
	struct fi_cq_err_entry err;
	int r = t_cq_wait(t.cq, &e, NULL, &err, 10);
	T_CHECK(r == 0 && err.err == FI_ETRUNC && err.olen == 156 && err.len == 100 && err.op_context == small,
		"truncation: FI_ETRUNC, len 100, olen %zu", err.olen);
	char sbuf[64];
	const char *s = fi_cq_strerror(t.cq, err.prov_errno, err.err_data, sbuf, sizeof(sbuf));
	T_CHECK(s != NULL, "fi_cq_strerror: %s", s ? s : "(null)");

	/* Directed receive: a receive for someone else's address does not take the peer's message; a
	 * wildcard one does. */
	char other[8] = { 0 };
	memcpy(other, t.name, 8);
	other[0] ^= 0x1; /* another pid on our NIC */
	fi_addr_t oa = t_insert(&t, other);
	char d1[8], d2[8];
	T_OK(fi_trecv(t.ep, d1, 8, NULL, oa, 8, 0, d1));
	T_OK(fi_trecv(t.ep, d2, 8, NULL, pa, 8, 0, d2));
	t_sync(c);
	t_cq_expect(t.cq, &e, "directed receive");
	T_CHECK(e.op_context == d2, "the message matched the receive directed at its sender");
	T_OK(fi_cancel(&t.ep->fid, d1));
	r = t_cq_wait(t.cq, &e, NULL, &err, 10);
	T_CHECK(r == 0 && err.err == FI_ECANCELED && err.op_context == d1, "cancel: FI_ECANCELED on the right context");

	t_sync(c);
	/* Counters: a second endpoint with a receive counter; the peer injects 5 messages. */
	T_OK(fi_close(&t.ep->fid));
	struct fid_cntr *rc;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	T_OK(fi_cntr_open(t.dom, &ca, &rc, NULL));
	T_OK(fi_endpoint(t.dom, t.info, &t.ep, NULL));
	T_OK(fi_ep_bind(t.ep, &t.av->fid, 0));
	T_OK(fi_ep_bind(t.ep, &t.cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
	T_OK(fi_ep_bind(t.ep, &rc->fid, FI_RECV));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	t_send(c, t.name, 8);
	char cb[5][16];
	for (int i = 0; i < 5; i++)
		T_OK(fi_trecv(t.ep, cb[i], 16, NULL, FI_ADDR_UNSPEC, 11, 0, cb[i]));
	t_sync(c);
	T_OK(fi_cntr_wait(rc, 5, 10000));
	T_CHECK(fi_cntr_read(rc) == 5 && fi_cntr_readerr(rc) == 0, "receive counter 5, errors 0");
	T_CHECK(fi_cq_read(t.cq, &e, 1) == -FI_EAGAIN, "FI_SELECTIVE_COMPLETION: no CQ entries for plain receives");
	T_OK(fi_cntr_add(rc, 10));
	T_CHECK(fi_cntr_read(rc) == 15, "fi_cntr_add: 15");
	T_OK(fi_cntr_set(rc, 2));
	T_CHECK(fi_cntr_read(rc) == 2, "fi_cntr_set: 2");
	T_OK(fi_cntr_adderr(rc, 3));
	T_CHECK(fi_cntr_readerr(rc) == 3, "fi_cntr_adderr: 3");
	T_CHECK(fi_cntr_wait(rc, 100, 50) == -FI_ETIMEDOUT || fi_cntr_wait(rc, 100, 50) == -FI_EAVAIL,
		"fi_cntr_wait below threshold times out");
	t_sync(c);
	t_join(p, "peer");
	T_OK(fi_close(&t.ep->fid));
	t.ep = NULL;
	T_OK(fi_close(&rc->fid));
	t_close(&t);
	fi_freeinfo(h);
	return t_finish("prov_cq");
}
