/* Multi-receive buffers.
 *
 * Phase 1: 1000 messages of mixed sizes from one sender land in two 64 KiB buffers (min_multi_recv 4 KiB,
 * at least the largest message) that the receiver reposts as they retire.  Each message has its own
 * completion pointing into the buffer; within one use of a buffer the messages are packed from offset 0
 * without gaps or overlaps (completions of eager and inline messages may be reported out of order); the
 * retiring completion carries FI_MULTI_RECV and is the last of its buffer; every message arrives exactly
 * once with its bytes; no byte lands outside a buffer; cancelling a posted buffer gives FI_ECANCELED with
 * FI_MULTI_RECV.
 *
 * Phase 2: FI_OPT_MIN_MULTI_RECV lowered to 64 after enable (it applies to buffers posted afterwards), and
 * 16 KiB buffers receiving messages up to 9000 B, first all unexpected (sent before any buffer is posted),
 * then with buffers posted.  A message larger than what is left of a buffer is truncated into it, as
 * upstream does (the receive LE is not no_truncate): FI_ETRUNC with olen = the bytes that did not fit, the
 * delivered prefix intact, and the buffer retired.  Every message is still reported exactly once, nothing
 * is fatal, and the endpoint keeps working. */
#include "common.h"

#define NMSG 1000
#define BUFSZ (64 * 1024)
#define MIN_FREE 4096 /* phase 1: at least the largest message, nothing is truncated */
#define GUARD 4096
#define NMSG2 300     /* phase 2, per half */
#define BUFSZ2 (16 * 1024)
#define MIN_FREE2 64

static size_t msg_len(int i)
{
	static const size_t lens[] = { 8, 16, 100, 192, 193, 700, 2048, 4000 };
	return lens[(i * 7) % 8];
}

static size_t msg_len2(int i)
{
	static const size_t lens[] = { 8, 100, 700, 2048, 4000, 6000, 9000, 150, 3000 };
	return lens[(i * 5) % 9];
}

/* A message names itself: its index, then a pattern seeded by it. */
static void msg_fill(char *buf, int i, size_t len)
{
	t_fill(buf, len, (uint32_t)i);
	memcpy(buf, &i, sizeof(i));
}

/* The message a (possibly truncated, >= 4 bytes) completion carries, or -1 if its bytes are wrong. */
static int msg_check(const char *buf, size_t len, int nmsg, size_t (*lenf)(int))
{
	int i;
	if (len < sizeof(i))
		return -1;
	memcpy(&i, buf, sizeof(i));
	if (i < 0 || i >= nmsg || len > lenf(i))
		return -1;
	static char ref[16384];
	msg_fill(ref, i, lenf(i));
	return memcmp(ref, buf, len) ? -1 : i;
}

static void send_range(struct t_ep *t, fi_addr_t rx, int from, int to, size_t (*lenf)(int))
{
	static char buf[16384];
	struct fi_cq_tagged_entry e;
	for (int i = from; i < to; i++) {
		size_t len = lenf(i);
		msg_fill(buf, i, len);
		ssize_t r;
		while ((r = fi_send(t->ep, buf, len, NULL, rx, NULL)) == -FI_EAGAIN)
			;
		T_OK(r);
		t_cq_expect(t->cq, &e, "send");
	}
}

static int sender(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, FI_MSG);
	char name[8];
	t_recv(c, name, 8);
	fi_addr_t rx = t_insert(&t, name);
	send_range(&t, rx, 0, NMSG, msg_len);
	t_sync(c);
	/* Phase 2: first half before the receiver posts any buffer (all unexpected), second half after. */
	t_sync(c);
	send_range(&t, rx, 0, NMSG2, msg_len2);
	t_sync(c);
	t_sync(c);
	send_range(&t, rx, NMSG2, 2 * NMSG2, msg_len2);
	t_sync(c);
	t_close(&t);
	return 0;
}

/* Receiving side of one phase: two buffers, reposted as they retire, until `want` messages are reported. */
struct phase {
	char *bufs[2];
	size_t bufsz, min_free;
	int nmsg;
	size_t (*lenf)(int);
	bool *seen;
	int got, retired, truncated, bad_pack, bad_data, bad_flag, bad_trunc, dup;
	struct seg {
		size_t off, len;
	} segs[2][1024];
	int nseg[2];
};

static void post(struct t_ep *t, struct phase *p, int b)
{
	struct iovec iov = { p->bufs[b], p->bufsz };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = p->bufs[b] };
	T_OK(fi_recvmsg(t->ep, &m, FI_MULTI_RECV));
}

/* One buffer use retired: its messages must tile [0, end) exactly, and less than min_free be left. */
static void retire(struct t_ep *t, struct phase *p, int b, bool repost)
{
	for (int x = 0; x < p->nseg[b]; x++)
		for (int y = x + 1; y < p->nseg[b]; y++)
			if (p->segs[b][y].off < p->segs[b][x].off) {
				struct seg tmp = p->segs[b][x];
				p->segs[b][x] = p->segs[b][y];
				p->segs[b][y] = tmp;
			}
	size_t end = 0;
	for (int x = 0; x < p->nseg[b]; x++) {
		if (p->segs[b][x].off != end)
			p->bad_pack++;
		end = p->segs[b][x].off + p->segs[b][x].len;
	}
	if (end > p->bufsz || p->bufsz - end >= p->min_free)
		p->bad_flag++; /* retired while at least min_multi_recv was still free */
	p->nseg[b] = 0;
	p->retired++;
	if (repost)
		post(t, p, b);
}

static void account(struct phase *p, int b, const char *buf, size_t len, size_t olen, bool trunc)
{
	int i = msg_check(buf, len, p->nmsg, p->lenf);
	if (i < 0)
		p->bad_data++;
	else if (p->seen[i])
		p->dup++;
	else
		p->seen[i] = true;
	if (trunc) {
		p->truncated++;
		if (i >= 0 && len + olen != p->lenf(i))
			p->bad_trunc++;
	} else if (i >= 0 && len != p->lenf(i)) {
		p->bad_data++;
	}
	if (p->nseg[b] < 1024)
		p->segs[b][p->nseg[b]++] = (struct seg){ (size_t)(buf - p->bufs[b]), len };
	p->got++;
}

static void consume(struct t_ep *t, struct phase *p, int want)
{
	while (p->got < want) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = t_cq_wait(t->cq, &e, NULL, &err, 10.0);
		if (r < 0) {
			printf("FAIL [%s] multi-recv completion: timeout (%d of %d)\n", t_who, p->got, want);
			exit(1);
		}
		void *ctx = r ? e.op_context : err.op_context;
		uint64_t flags = r ? e.flags : err.flags;
		int b = ctx == p->bufs[0] ? 0 : ctx == p->bufs[1] ? 1 : -1;
		if (b < 0 || !(flags & FI_RECV) || !(flags & FI_MSG) || (!r && err.err != FI_ETRUNC)) {
			printf("FAIL [%s] unexpected completion (r=%d err=%d flags=%#" PRIx64 ")\n", t_who, r, r ? 0 : err.err,
			       flags);
			exit(1);
		}
		size_t len = r ? e.len : err.len;
		if (len)
			account(p, b, r ? e.buf : err.buf, len, r ? 0 : err.olen, !r);
		if (flags & FI_MULTI_RECV)
			retire(t, p, b, true);
	}
}

static void phase_checks(struct phase *p, int total, const char *what)
{
	T_CHECK(p->got == total, "%s: %d messages reported", what, p->got);
	int missing = 0;
	for (int i = 0; i < total; i++)
		missing += !p->seen[i];
	T_CHECK(missing == 0 && p->dup == 0, "%s: every message exactly once (%d missing, %d duplicated)", what, missing,
		p->dup);
	T_CHECK(p->bad_data == 0, "%s: every message's bytes and length intact (%d wrong)", what, p->bad_data);
	T_CHECK(p->bad_pack == 0, "%s: messages packed from offset 0 without gaps or overlaps (%d wrong)", what,
		p->bad_pack);
	T_CHECK(p->bad_flag == 0, "%s: FI_MULTI_RECV retires a buffer only once less than min_multi_recv is free (%d wrong)",
		what, p->bad_flag);
}

/* Cancel both posted buffers: FI_ECANCELED with FI_MULTI_RECV each. */
static void cancel_both(struct t_ep *t, struct phase *p, const char *what)
{
	T_OK(fi_cancel(&t->ep->fid, p->bufs[0]));
	T_OK(fi_cancel(&t->ep->fid, p->bufs[1]));
	int cancelled = 0;
	for (int i = 0; i < 2; i++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = t_cq_wait(t->cq, &e, NULL, &err, 5);
		if (r == 0 && err.err == FI_ECANCELED && (err.flags & FI_MULTI_RECV) &&
		    (err.op_context == p->bufs[0] || err.op_context == p->bufs[1]))
			cancelled++;
	}
	T_CHECK(cancelled == 2, "%s: cancel gives FI_ECANCELED with FI_MULTI_RECV for both buffers (%d)", what, cancelled);
}

int main(void)
{
	struct t_link l;
	t_link_init(&l);
	pid_t pid = t_fork(sender, &l, "sender");
	struct t_chan c = t_link_a(&l);
	t_who = "receiver";
	struct t_ep t;
	struct fi_info *h = t_hints(FI_MSG | FI_MULTI_RECV);
	t_open_with(&t, h, NULL, false);
	fi_freeinfo(h);
	size_t mf = MIN_FREE;
	T_OK(fi_setopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mf, sizeof(mf)));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	/* Two buffers with guard bands that must stay untouched. */
	char *mem = malloc(2 * (BUFSZ + 2 * GUARD));
	memset(mem, 0xee, 2 * (BUFSZ + 2 * GUARD));
	static struct phase p1, p2;
	static bool seen1[NMSG], seen2[2 * NMSG2];
	p1 = (struct phase){ .bufs = { mem + GUARD, mem + BUFSZ + 3 * GUARD }, .bufsz = BUFSZ, .min_free = MIN_FREE,
			     .nmsg = NMSG, .lenf = msg_len, .seen = seen1 };
	post(&t, &p1, 0);
	post(&t, &p1, 1);
	t_send(c, t.name, 8);
	consume(&t, &p1, NMSG);
	phase_checks(&p1, NMSG, "phase 1");
	T_CHECK(p1.truncated == 0, "phase 1: nothing truncated (%d)", p1.truncated);
	T_CHECK(p1.retired >= 10, "phase 1: %d buffers retired and reposted", p1.retired);
	bool guards = true;
	for (int i = 0; i < GUARD; i++)
		if ((unsigned char)mem[i] != 0xee || (unsigned char)p1.bufs[0][BUFSZ + i] != 0xee ||
		    (unsigned char)p1.bufs[1][BUFSZ + i] != 0xee || (unsigned char)p1.bufs[1][-GUARD + i] != 0xee)
			guards = false;
	T_CHECK(guards, "phase 1: no byte outside the buffers");
	t_sync(c);
	cancel_both(&t, &p1, "phase 1");

	/* Phase 2: FI_OPT_MIN_MULTI_RECV may change after enable (as upstream); buffers posted from now on
	 * use it. */
	mf = MIN_FREE2;
	T_CHECK(fi_setopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mf, sizeof(mf)) == 0,
		"FI_OPT_MIN_MULTI_RECV after enable accepted");
	size_t got = 0, glen = sizeof(got);
	T_OK(fi_getopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &glen));
	T_CHECK(got == MIN_FREE2, "fi_getopt(FI_OPT_MIN_MULTI_RECV) = %zu", got);
	char *mem2 = malloc(2 * BUFSZ2);
	p2 = (struct phase){ .bufs = { mem2, mem2 + BUFSZ2 }, .bufsz = BUFSZ2, .min_free = MIN_FREE2, .nmsg = 2 * NMSG2,
			     .lenf = msg_len2, .seen = seen2 };
	t_sync(c); /* sender: first half, before any buffer is posted */
	t_sync(c);
	post(&t, &p2, 0);
	post(&t, &p2, 1);
	consume(&t, &p2, NMSG2);
	int trunc_unexpected = p2.truncated;
	t_sync(c); /* sender: second half, buffers posted */
	consume(&t, &p2, 2 * NMSG2);
	t_sync(c);
	phase_checks(&p2, 2 * NMSG2, "phase 2");
	T_CHECK(trunc_unexpected > 0 && p2.truncated > trunc_unexpected,
		"phase 2: messages larger than the space left were truncated, unexpected (%d) and expected (%d)",
		trunc_unexpected, p2.truncated - trunc_unexpected);
	T_CHECK(p2.bad_trunc == 0, "phase 2: FI_ETRUNC olen = the bytes that did not fit (%d wrong)", p2.bad_trunc);
	T_CHECK(p2.retired >= 20, "phase 2: %d buffers retired and reposted", p2.retired);
	cancel_both(&t, &p2, "phase 2");
	/* The endpoint still works after all of this. */
	struct iovec iov = { mem2, BUFSZ2 };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = mem2 };
	T_CHECK(fi_recvmsg(t.ep, &m, FI_MULTI_RECV) == 0 && fi_cancel(&t.ep->fid, mem2) == 0, "endpoint still usable");
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	T_CHECK(t_cq_wait(t.cq, &e, NULL, &err, 5) == 0 && err.err == FI_ECANCELED, "and its last buffer cancelled");
	t_join(pid, "sender");
	t_close(&t);
	free(mem);
	free(mem2);
	return t_finish("prov_multi_recv");
}
