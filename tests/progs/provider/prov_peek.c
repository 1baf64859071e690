/* FI_PEEK, FI_CLAIM and FI_DISCARD on tagged receives (what MPI_Iprobe, MPI_Improbe and MPI_Mrecv use), in
 * each receive match mode (hardware: the NIC's unexpected list is searched; software: the provider's;
 * hybrid).  A sender leaves tagged messages unexpected at the receiver -- eager, inline, rendezvous, with
 * remote CQ data -- and the receiver checks:
 *   - a peek finds a waiting message (length, tag, data, source) without consuming it, FI_ENOMSG otherwise,
 *     and a directed peek matches the source;
 *   - peeks see messages of one tag in arrival order;
 *   - FI_PEEK | FI_CLAIM hides the message from later peeks and ordinary receives (a receive posted for the
 *     same tag gets the next message), and the FI_CLAIM receive with the same fi_context gets its bytes,
 *     rendezvous ones included;
 *   - FI_PEEK | FI_DISCARD and FI_CLAIM | FI_DISCARD drop the message; a discarded rendezvous send still
 *     completes at the sender;
 *   - an FI_CLAIM receive with a context that claimed nothing fails with FI_EINVAL; FI_PEEK on the untagged
 *     API is refused;
 *   - 200 messages, each peeked then received: every peek finds the next one (no false "no message"). */
#include "common.h"

#define BIG (100 * 1024)
#define RDZV (64 * 1024)
#define NSTREAM 200

struct peer {
	struct t_link link;
	const char *mode;
};

static size_t stream_len(int i)
{
	static const size_t lens[] = { 0, 8, 192, 193, 2048, 9000, 18000 }; /* all eager */
	return lens[i % 7];
}

/* ---- receiver helpers ---- */

static fi_addr_t s_addr;

/* One peek (tagged, FI_PEEK | flags); returns 1 found (e, from), 0 error completion (err). */
static int peek(struct t_ep *t, uint64_t tag, uint64_t flags, struct fi_context *ctx, fi_addr_t src,
		struct fi_cq_tagged_entry *e, fi_addr_t *from, struct fi_cq_err_entry *err)
{
	struct fi_msg_tagged m = { .msg_iov = NULL, .iov_count = 0, .addr = src, .tag = tag, .ignore = 0,
				   .context = ctx };
	ssize_t r;
	while ((r = fi_trecvmsg(t->ep, &m, FI_PEEK | flags)) == -FI_EAGAIN)
		;
	T_OK(r);
	int w = t_cq_wait(t->cq, e, from, err, 10.0);
	if (w < 0) {
		printf("FAIL [%s] peek: timeout\n", t_who);
		exit(1);
	}
	return w;
}

static bool found(int r, const struct fi_cq_tagged_entry *e, const struct fi_context *ctx, uint64_t tag, size_t len,
		  fi_addr_t from)
{
	return r == 1 && e->op_context == ctx && e->tag == tag && e->len == len && (e->flags & FI_RECV) &&
	       (e->flags & FI_TAGGED) && from == s_addr;
}

static bool nomsg(int r, const struct fi_cq_err_entry *err, const struct fi_context *ctx)
{
	return r == 0 && err->err == FI_ENOMSG && err->op_context == ctx;
}

static void trecv(struct t_ep *t, void *buf, size_t len, uint64_t tag, uint64_t flags, struct fi_context *ctx)
{
	struct iovec iov = { buf, len };
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = tag, .context = ctx };
	ssize_t r;
	while ((r = fi_trecvmsg(t->ep, &m, flags)) == -FI_EAGAIN)
		;
	T_OK(r);
}

static int receiver(void *arg)
{
	struct peer *p = arg;
	setenv("FI_CXI_RX_MATCH_MODE", p->mode, 1);
	struct t_chan c = t_link_a(&p->link);
	struct t_ep t;
	t_open(&t, FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV);
	t_send(c, t.name, 8);
	char sname[8];
	t_recv(c, sname, 8);
	s_addr = t_insert(&t, sname);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t from;
	static struct fi_context ctx, ctx2, ctx2b, ctx4, ctxr, ctxbad;
	int r = peek(&t, 1, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(nomsg(r, &err, &ctx), "%s: FI_PEEK with nothing sent: FI_ENOMSG", p->mode);
	t_sync(c); /* the sender sends, then waits for its eager sends to complete */
	t_sync(c);

	r = peek(&t, 1, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx, 1, 64, from), "%s: FI_PEEK finds the waiting message (len %zu, tag %" PRIu64 ")",
		p->mode, r == 1 ? e.len : 0, r == 1 ? e.tag : 0);
	r = peek(&t, 1, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx, 1, 64, from), "%s: a peek does not consume the message", p->mode);
	r = peek(&t, 1, 0, &ctx, s_addr, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx, 1, 64, from), "%s: directed FI_PEEK from the sender finds it", p->mode);
	r = peek(&t, 9, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(nomsg(r, &err, &ctx), "%s: FI_PEEK for another tag: FI_ENOMSG", p->mode);
	/* Several peeks in flight at once (MPI_Iprobe from several threads): each one answers. */
	static struct fi_context pc[4];
	for (int i = 0; i < 4; i++) {
		struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = 1, .context = &pc[i] };
		T_OK(fi_trecvmsg(t.ep, &m, FI_PEEK));
	}
	int answered = 0;
	for (int i = 0; i < 4; i++) {
		r = t_cq_wait(t.cq, &e, &from, &err, 10.0);
		answered += r == 1 && e.len == 64 && e.tag == 1 && e.op_context == &pc[i];
	}
	T_CHECK(answered == 4, "%s: 4 concurrent peeks all find the message, in order (%d)", p->mode, answered);
	char small[64], ref[64];
	trecv(&t, small, sizeof(small), 1, 0, &ctxr);
	t_cq_expect(t.cq, &e, "receive tag 1");
	t_fill(ref, 64, 1);
	T_CHECK(e.len == 64 && !memcmp(small, ref, 64), "%s: the peeked message is then received", p->mode);

	/* Arrival order within a tag. */
	r = peek(&t, 6, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx, 6, 10, from), "%s: FI_PEEK sees the older of two messages first", p->mode);
	trecv(&t, small, sizeof(small), 6, 0, &ctxr);
	t_cq_expect(t.cq, &e, "receive tag 6");
	T_CHECK(e.len == 10, "%s: ... and the receive gets it", p->mode);
	r = peek(&t, 6, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx, 6, 20, from), "%s: then the newer one", p->mode);
	trecv(&t, small, sizeof(small), 6, 0, &ctxr);
	t_cq_expect(t.cq, &e, "receive tag 6 (2)");

	/* FI_CLAIM of a rendezvous message. */
	r = peek(&t, 2, FI_CLAIM, &ctx2, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx2, 2, BIG, from), "%s: FI_PEEK | FI_CLAIM finds the 100 KiB message", p->mode);
	r = peek(&t, 2, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(nomsg(r, &err, &ctx), "%s: a claimed message is invisible to later peeks", p->mode);
	static char other[1024], big[BIG], bigref[BIG];
	trecv(&t, other, sizeof(other), 2, 0, &ctx2b);
	t_sync(c); /* the sender sends a second tag-2 message */
	t_cq_expect(t.cq, &e, "ordinary receive of tag 2");
	t_fill(ref, 64, 22);
	T_CHECK(e.op_context == &ctx2b && e.len == 500 && !memcmp(other, ref, 64),
		"%s: an ordinary receive skips the claimed message and gets the next one", p->mode);
	trecv(&t, big, BIG, 2, FI_CLAIM, &ctx2);
	t_cq_expect(t.cq, &e, "FI_CLAIM receive");
	t_fill(bigref, BIG, 2);
	T_CHECK(e.op_context == &ctx2 && e.len == BIG && e.tag == 2 && !memcmp(big, bigref, BIG),
		"%s: the FI_CLAIM receive gets the claimed rendezvous message's bytes", p->mode);

	/* FI_DISCARD. */
	r = peek(&t, 3, FI_DISCARD, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx, 3, 8192, from) && (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0x33,
		"%s: FI_PEEK | FI_DISCARD reports the message (remote CQ data %#" PRIx64 ")", p->mode, r == 1 ? e.data : 0);
	r = peek(&t, 3, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(nomsg(r, &err, &ctx), "%s: ... and it is gone", p->mode);
	r = peek(&t, 4, FI_CLAIM, &ctx4, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx4, 4, 300, from), "%s: FI_PEEK | FI_CLAIM of a 300-byte message", p->mode);
	trecv(&t, NULL, 0, 4, FI_CLAIM | FI_DISCARD, &ctx4);
	t_cq_expect(t.cq, &e, "FI_CLAIM | FI_DISCARD");
	T_CHECK(e.op_context == &ctx4 && e.len == 0 && e.tag == 4, "%s: FI_CLAIM | FI_DISCARD completes with no data",
		p->mode);
	r = peek(&t, 4, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(nomsg(r, &err, &ctx), "%s: ... and the message is gone", p->mode);
	r = peek(&t, 5, FI_DISCARD, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(found(r, &e, &ctx, 5, RDZV, from), "%s: FI_PEEK | FI_DISCARD of a rendezvous message", p->mode);

	/* Misuse. */
	trecv(&t, small, sizeof(small), 0, FI_CLAIM, &ctxbad);
	r = t_cq_wait(t.cq, &e, NULL, &err, 10.0);
	T_CHECK(r == 0 && err.err == FI_EINVAL && err.op_context == &ctxbad,
		"%s: FI_CLAIM with a context that claimed nothing: FI_EINVAL", p->mode);
	struct fi_msg um = { .msg_iov = NULL, .iov_count = 0, .addr = FI_ADDR_UNSPEC, .context = &ctx };
	T_CHECK(fi_recvmsg(t.ep, &um, FI_PEEK) == -FI_EBADFLAGS, "%s: FI_PEEK on the untagged API: -FI_EBADFLAGS",
		p->mode);

	/* Every message that is waiting is found by a peek, in order, then received. */
	t_sync(c); /* the sender's stream is all sent and acknowledged */
	int missed = 0, wrong = 0;
	static char sbuf[20000];
	for (int i = 0; i < NSTREAM; i++) {
		r = peek(&t, 7, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
		if (r != 1)
			missed++;
		else if (e.len != stream_len(i))
			wrong++;
		trecv(&t, sbuf, sizeof(sbuf), 7, 0, &ctxr);
		t_cq_expect(t.cq, &e, "stream receive");
		if (e.len != stream_len(i) || (e.len >= 4 && !t_verify(sbuf, e.len, 1000 + (uint32_t)i)))
			wrong++;
	}
	T_CHECK(missed == 0 && wrong == 0, "%s: %d messages each found by FI_PEEK then received in order (%d missed, %d wrong)",
		p->mode, NSTREAM, missed, wrong);
	r = peek(&t, 7, 0, &ctx, FI_ADDR_UNSPEC, &e, &from, &err);
	T_CHECK(nomsg(r, &err, &ctx), "%s: nothing left", p->mode);
	t_sync(c);
	t_close(&t);
	return 0;
}

/* ---- sender ---- */

static void send_one(struct t_ep *t, fi_addr_t dst, const void *buf, size_t len, uint64_t tag, uint64_t data,
		     bool with_data, void *ctx)
{
	ssize_t r;
	do {
		r = with_data ? fi_tsenddata(t->ep, buf, len, NULL, data, dst, tag, ctx)
			      : fi_tsend(t->ep, buf, len, NULL, dst, tag, ctx);
	} while (r == -FI_EAGAIN);
	T_OK(r);
}

/* Wait until the sends whose contexts are in want[] (n of them) have completed; others seen are noted. */
static void wait_sends(struct t_ep *t, void **want, int n, bool *done_rdzv2, bool *done_rdzv5, void *rdzv2,
		       void *rdzv5)
{
	int left = n;
	while (left) {
		struct fi_cq_tagged_entry e;
		t_cq_expect(t->cq, &e, "send completion");
		if (e.op_context == rdzv2)
			*done_rdzv2 = true;
		if (e.op_context == rdzv5)
			*done_rdzv5 = true;
		for (int i = 0; i < n; i++)
			if (want[i] == e.op_context) {
				want[i] = NULL;
				left--;
			}
	}
}

static int sender(void *arg)
{
	struct peer *p = arg;
	setenv("FI_CXI_RX_MATCH_MODE", p->mode, 1);
	struct t_chan c = t_link_b(&p->link);
	struct t_ep t;
	t_open(&t, FI_TAGGED);
	char rname[8];
	t_recv(c, rname, 8);
	t_send(c, t.name, 8);
	fi_addr_t dst = t_insert(&t, rname);
	static char m1[64], m2[BIG], m3[8192], m4[300], m5[RDZV], m6a[10], m6b[20], m2b[500];
	static int ctx[8];
	t_fill(m1, sizeof(m1), 1);
	t_fill(m2, sizeof(m2), 2);
	t_fill(m2b, sizeof(m2b), 22);
	t_sync(c);
	send_one(&t, dst, m1, sizeof(m1), 1, 0, false, &ctx[1]);
	send_one(&t, dst, m2, sizeof(m2), 2, 0, false, &ctx[2]);
	send_one(&t, dst, m3, sizeof(m3), 3, 0x33, true, &ctx[3]);
	send_one(&t, dst, m4, sizeof(m4), 4, 0, false, &ctx[4]);
	send_one(&t, dst, m5, sizeof(m5), 5, 0, false, &ctx[5]);
	send_one(&t, dst, m6a, sizeof(m6a), 6, 0, false, &ctx[6]);
	send_one(&t, dst, m6b, sizeof(m6b), 6, 0, false, &ctx[7]);
	bool d2 = false, d5 = false;
	void *eager[] = { &ctx[1], &ctx[3], &ctx[4], &ctx[6], &ctx[7] };
	wait_sends(&t, eager, 5, &d2, &d5, &ctx[2], &ctx[5]);
	t_sync(c);
	t_sync(c); /* the receiver has claimed tag 2 and posted an ordinary receive for it */
	send_one(&t, dst, m2b, sizeof(m2b), 2, 0, false, &ctx[0]);
	void *second[] = { &ctx[0] };
	wait_sends(&t, second, 1, &d2, &d5, &ctx[2], &ctx[5]);
	/* The claimed rendezvous send completes once claimed and received, the discarded one once discarded. */
	void *rdzv[2];
	int nr = 0;
	if (!d2)
		rdzv[nr++] = &ctx[2];
	if (!d5)
		rdzv[nr++] = &ctx[5];
	wait_sends(&t, rdzv, nr, &d2, &d5, &ctx[2], &ctx[5]);
	T_CHECK(true, "%s: the claimed and the discarded rendezvous sends completed", p->mode);
	/* The stream. */
	static char sbuf[18000];
	static int sctx[NSTREAM];
	for (int i = 0; i < NSTREAM; i++) {
		size_t len = stream_len(i);
		t_fill(sbuf, len, 1000 + (uint32_t)i);
		send_one(&t, dst, sbuf, len, 7, 0, false, &sctx[i]);
		struct fi_cq_tagged_entry e;
		t_cq_expect(t.cq, &e, "stream send"); /* eager: acknowledged once at the receiver */
	}
	t_sync(c);
	t_sync(c);
	t_close(&t);
	return 0;
}

int main(void)
{
	static const char *modes[] = { "hardware", "software", "hybrid" };
	for (int m = 0; m < 3; m++) {
		struct peer p = { .mode = modes[m] };
		t_link_init(&p.link);
		pid_t r = t_fork(receiver, &p, "receiver");
		pid_t s = t_fork(sender, &p, "sender");
		close(p.link.ab[0]);
		close(p.link.ab[1]);
		close(p.link.ba[0]);
		close(p.link.ba[1]);
		t_join(r, "receiver");
		t_join(s, "sender");
	}
	return t_finish("prov_peek");
}
