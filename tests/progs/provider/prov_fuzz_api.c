/* Misuse of the provider's API at random: two endpoints in one process (each with its own domain, AV, CQ
 * and counter) issue a seeded random sequence of data transfers, RMA, atomics, cancels, AV and MR
 * operations and endpoint options, with arguments drawn from hostile pools (lengths past max_msg_size,
 * unknown fi_addrs and keys, unknown flags, datatypes and ops, tiny address buffers, unknown option names).
 * Pointers stay valid (a dangling pointer is undefined behaviour in any provider); everything else is fair.
 *
 * Checked, for every call: it returns 0, a count where one is expected, or a negative FI_E* code -- never
 * a crash, never an unknown value.  Checked at the end, after draining: every operation that returned 0 and
 * asked for a completion produced exactly one (multi-receive buffers: until the one that releases the
 * buffer), whether success or error; nothing completes twice and nothing unknown completes.
 *
 * Usage: prov_fuzz_api SEED [ROUNDS] */
#include "common.h"

#include <rdma/fi_atomic.h>

#define POOL (4u << 20)    /* each endpoint's data buffer */
#define MR_LEN (64u << 10) /* the exposed window */
#define MAX_OPS 4096

/* Quiet unless it fails: a run makes thousands of checks. */
#define F_CHECK(cond, ...)                                                                                   \
	do {                                                                                                 \
		if (!(cond))                                                                                 \
			T_CHECK(false, __VA_ARGS__);                                                         \
	} while (0)

enum kind { K_SEND, K_RECV, K_MRECV, K_RMA, K_ATOMIC, K_DRAIN };

struct slot {
	struct fi_context2 ctx; /* first: the context the provider hands back */
	enum kind kind;
	int ep;     /* issuing endpoint */
	int done;   /* completions seen */
	bool live;  /* expecting completions */
	bool final; /* a multi-receive buffer was released */
	bool drain; /* a catch-all receive the drain posted */
	char what[96];
};

struct side {
	struct t_ep t;
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	uint64_t key;
	char *buf;
	fi_addr_t peer[2]; /* fi_addr of endpoint 0 and 1 in this side's AV */
};

static struct side S[2];
static struct slot slots[MAX_OPS];
static int nslots;
static uint64_t rng;
static long calls, rejected;
static bool trace; /* FUZZ_TRACE=1: print every operation and completion */
static long injects, inject_errors; /* accepted injects; error completions without a context */

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t pick(const uint64_t *v, size_t n)
{
	return v[rnd() % n];
}

#define PICK(arr) pick(arr, sizeof(arr) / sizeof(arr[0]))

/* A return code of a call that returns 0 or -FI_E*. */
static void rc_ok(long r, const char *what)
{
	calls++;
	if (r == 0)
		return;
	rejected++;
	/* libfabric's codes are the errno values plus its own from FI_ERRNO_OFFSET (256) up. */
	if (r < 0 && (-r < 200 || (-r >= FI_ERRNO_OFFSET && -r < FI_ERRNO_MAX)))
		return;
	F_CHECK(false, "%s returned %ld, not 0 or a -FI_E* code", what, r);
}

static struct slot *slot_new(enum kind k, int ep, const char *fmt, ...)
{
	struct slot *s = NULL;
	for (int i = 0; i < nslots; i++)
		if (!slots[i].live && slots[i].done) {
			s = &slots[i];
			break;
		}
	if (!s) {
		if (nslots == MAX_OPS)
			return NULL;
		s = &slots[nslots++];
	}
	memset(s, 0, sizeof(*s));
	s->kind = k;
	s->ep = ep;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->what, sizeof(s->what), fmt, ap);
	va_end(ap);
	return s;
}

/* The call that used slot s returned r: the slot expects completions only if it was accepted. */
static void slot_posted(struct slot *s, long r)
{
	rc_ok(r, s->what);
	if (trace)
		printf("post %d '%s' -> %ld\n", (int)(s - slots), s->what, r);
	s->live = r == 0;
	if (r != 0)
		s->done = 1; /* reusable */
}

static struct slot *slot_of(void *ctx, const char *from)
{
	struct slot *s = (struct slot *)ctx;
	if (s < slots || s >= slots + nslots || (char *)s != (char *)&s->ctx) {
		F_CHECK(false, "%s: completion with a context %p that no operation gave", from, ctx);
		return NULL;
	}
	return s;
}

static void complete(void *ctx, uint64_t flags, int err, const char *from)
{
	/* An inject that fails after it was accepted reports an error completion with no context, as upstream
	 * does (there is no context to give); there cannot be more of them than accepted injects. */
	if (!ctx && err) {
		inject_errors++;
		F_CHECK(inject_errors <= injects, "%ld context-less error completions for %ld injects", inject_errors,
			injects);
		return;
	}
	struct slot *s = slot_of(ctx, from);
	if (!s)
		return;
	if (!s->live || s->final) {
		F_CHECK(false, "%s: second completion of '%s' (err %d)", from, s->what, err);
		return;
	}
	s->done++;
	if (trace)
		printf("done %d '%s' err %d flags 0x%" PRIx64 "\n", (int)(s - slots), s->what, err, flags);
	/* A multi-receive buffer is released by the completion that carries FI_MULTI_RECV, error or not: a
	 * message truncated to the space left reports FI_ETRUNC, and one matched earlier may still complete
	 * after it (a rendezvous waits for its Get). */
	bool last = s->kind != K_MRECV || (flags & FI_MULTI_RECV);
	if (last) {
		s->final = true;
		s->live = false;
	}
}

static void reap(int i)
{
	struct fi_cq_tagged_entry e[16];
	for (;;) {
		ssize_t n = fi_cq_read(S[i].t.cq, e, (size_t)(1 + rnd() % 16));
		if (n == -FI_EAGAIN)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			memset(&err, 0, sizeof(err));
			ssize_t m = fi_cq_readerr(S[i].t.cq, &err, 0);
			if (m != 1) {
				F_CHECK(false, "fi_cq_readerr after -FI_EAVAIL = %zd", m);
				return;
			}
			char sbuf[64];
			(void)fi_cq_strerror(S[i].t.cq, err.prov_errno, err.err_data, sbuf, rnd() % 2 ? sizeof(sbuf) : 0);
			complete(err.op_context, err.flags, err.err ? err.err : -1, "error completion");
			continue;
		}
		if (n <= 0) {
			F_CHECK(false, "fi_cq_read = %zd", n);
			return;
		}
		for (ssize_t k = 0; k < n; k++) {
			/* Remote events (RMA with remote CQ data, FI_RMA_EVENT) belong to no operation here. */
			bool remote = e[k].flags & (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE | FI_REMOTE_READ);
			if (!remote || e[k].op_context)
				complete(e[k].op_context, e[k].flags, 0, "completion");
		}
	}
}

/* ---- hostile argument pools ---- */

static const uint64_t LENS[] = { 0, 1, 8, 63, 192, 193, 224, 4096, 8192, 65536, 1u << 20, 2u << 20,
				 (1ull << 32) - 1, 1ull << 32, 1ull << 40, SIZE_MAX };
static const uint64_t FLAGS[] = { 0, FI_COMPLETION, FI_INJECT, FI_REMOTE_CQ_DATA, FI_TRANSMIT_COMPLETE,
				  FI_DELIVERY_COMPLETE, FI_FENCE, FI_MORE, FI_MULTI_RECV, FI_PEEK, FI_CLAIM,
				  FI_DISCARD, FI_MATCH_COMPLETE, FI_INJECT_COMPLETE, 1ull << 23, 1ull << 63,
				  FI_COMPLETION | FI_INJECT, FI_PEEK | FI_CLAIM };

static size_t len_for(uint64_t want, size_t room)
{
	/* Lengths within the buffer, or beyond max_msg_size (which must be refused without reading). */
	if (want > room && want < (1ull << 32))
		return room;
	return (size_t)want;
}

static fi_addr_t dest(int i)
{
	switch (rnd() % 8) {
	case 0:
		return FI_ADDR_UNSPEC;
	case 1:
		return rnd() % 64;
	case 2:
		return rnd();
	default:
		return S[i].peer[rnd() % 2];
	}
}

static char *data_at(int i, size_t len)
{
	size_t room = POOL - (len < POOL ? len : 0);
	return S[i].buf + (room ? rnd() % room : 0);
}

/* ---- operations ---- */

static void op_send(int i)
{
	size_t len = len_for(PICK(LENS), 2u << 20);
	char *b = rnd() % 16 ? data_at(i, len) : NULL;
	fi_addr_t d = dest(i);
	uint64_t tag = rnd() % 4 ? rnd() % 8 : rnd();
	struct slot *s = slot_new(K_SEND, i, "send ep%d len %zu buf %p dest %" PRIu64, i, len, (void *)b, d);
	if (!s)
		return;
	long r;
	struct iovec iov[2] = { { b, len }, { b, len } }; /* iov_count 2 is refused (iov_limit 1), never read past */
	int v = (int)(rnd() % 7);
	snprintf(s->what + strlen(s->what), sizeof(s->what) - strlen(s->what), " v%d", v);
	switch (v) {
	case 0:
		r = fi_send(S[i].t.ep, b, len, NULL, d, s);
		break;
	case 1:
		r = fi_tsend(S[i].t.ep, b, len, NULL, d, tag, s);
		break;
	case 2:
		r = fi_senddata(S[i].t.ep, b, len, NULL, rnd(), d, s);
		break;
	case 3: {
		r = fi_inject(S[i].t.ep, b, len, d);
		rc_ok(r, "fi_inject");
		injects += r == 0;
		s->done = 1;
		return;
	}
	case 4: {
		r = fi_tinjectdata(S[i].t.ep, b, len, rnd(), d, tag);
		rc_ok(r, "fi_tinjectdata");
		injects += r == 0;
		s->done = 1;
		return;
	}
	case 5: {
		struct fi_msg_tagged m = { .msg_iov = iov, .iov_count = rnd() % 3, .addr = d, .tag = tag,
					   .context = s, .data = rnd() };
		uint64_t f = PICK(FLAGS) & ~(uint64_t)(FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MULTI_RECV);
		snprintf(s->what + strlen(s->what), sizeof(s->what) - strlen(s->what), " f%" PRIx64, f);
		r = fi_tsendmsg(S[i].t.ep, &m, f | FI_COMPLETION);
		break;
	}
	default: {
		struct fi_msg m = { .msg_iov = iov, .iov_count = rnd() % 3, .addr = d, .context = s,
				    .data = rnd() };
		uint64_t f = PICK(FLAGS) & ~(uint64_t)(FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MULTI_RECV);
		snprintf(s->what + strlen(s->what), sizeof(s->what) - strlen(s->what), " f%" PRIx64, f);
		r = fi_sendmsg(S[i].t.ep, &m, f | FI_COMPLETION);
		break;
	}
	}
	slot_posted(s, r);
}

static void op_recv(int i)
{
	size_t len = len_for(PICK(LENS), 2u << 20);
	char *b = rnd() % 16 ? data_at(i, len) : NULL;
	uint64_t tag = rnd() % 8, ignore = rnd() % 3 ? 0 : rnd();
	struct iovec iov[2] = { { b, len }, { b, len } };
	bool multi = rnd() % 5 == 0;
	struct slot *s = slot_new(multi ? K_MRECV : K_RECV, i, "recv ep%d len %zu multi %d", i, len, multi);
	if (!s)
		return;
	long r;
	int v = (int)(rnd() % 4);
	snprintf(s->what + strlen(s->what), sizeof(s->what) - strlen(s->what), " v%d buf %p", v, (void *)b);
	switch (v) {
	case 0:
		r = fi_recv(S[i].t.ep, b, len, NULL, dest(i), s);
		s->kind = K_RECV;
		break;
	case 1:
		r = fi_trecv(S[i].t.ep, b, len, NULL, dest(i), tag, ignore, s);
		s->kind = K_RECV;
		break;
	case 2: {
		struct fi_msg m = { .msg_iov = iov, .iov_count = 1, .addr = dest(i), .context = s };
		r = fi_recvmsg(S[i].t.ep, &m, (multi ? FI_MULTI_RECV : 0) | FI_COMPLETION);
		break;
	}
	default: {
		/* Peek/claim/discard on a tagged receive: a peek that finds nothing completes with FI_ENOMSG,
		 * one that finds a message completes once; both use the context once. */
		struct fi_msg_tagged m = { .msg_iov = iov, .iov_count = rnd() % 3, .addr = dest(i), .tag = tag,
					   .ignore = ignore, .context = s };
		uint64_t f = PICK(FLAGS) & ~(uint64_t)(FI_CLAIM | FI_MULTI_RECV | FI_INJECT);
		snprintf(s->what + strlen(s->what), sizeof(s->what) - strlen(s->what), " f%" PRIx64, f);
		r = fi_trecvmsg(S[i].t.ep, &m, f | FI_COMPLETION);
		s->kind = K_RECV;
		break;
	}
	}
	slot_posted(s, r);
}

static uint64_t rma_key(int i)
{
	int peer = (int)(rnd() % 2);
	switch (rnd() % 5) {
	case 0:
		return rnd();
	case 1:
		return rnd() % 128;
	default:
		(void)i;
		return S[peer].key;
	}
}

static void op_rma(int i)
{
	size_t len = len_for(PICK(LENS), MR_LEN);
	char *b = data_at(i, len);
	uint64_t off = rnd() % 4 ? rnd() % MR_LEN : rnd();
	fi_addr_t d = dest(i);
	uint64_t key = rma_key(i);
	struct slot *s = slot_new(K_RMA, i, "rma ep%d len %zu off %" PRIu64 " key %" PRIx64, i, len, off, key);
	if (!s)
		return;
	long r;
	switch (rnd() % 5) {
	case 0:
		r = fi_write(S[i].t.ep, b, len, NULL, d, off, key, s);
		break;
	case 1:
		r = fi_read(S[i].t.ep, b, len, NULL, d, off, key, s);
		break;
	case 2:
		r = fi_writedata(S[i].t.ep, b, len, NULL, rnd(), d, off, key, s);
		break;
	case 3:
		r = fi_inject_write(S[i].t.ep, b, len, d, off, key);
		rc_ok(r, "fi_inject_write");
		injects += r == 0;
		s->done = 1;
		return;
	default: {
		struct iovec iov[2] = { { b, len }, { b, len } };
		struct fi_rma_iov riov[2] = { { off, len, key }, { off, len, key } };
		struct fi_msg_rma m = { .msg_iov = iov, .iov_count = 1 + rnd() % 2, .addr = d, .rma_iov = riov,
					.rma_iov_count = rnd() % 3, .context = s, .data = rnd() };
		uint64_t f = PICK(FLAGS) & ~(uint64_t)(FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MULTI_RECV);
		snprintf(s->what + strlen(s->what), sizeof(s->what) - strlen(s->what), " f%" PRIx64, f);
		r = rnd() % 2 ? fi_writemsg(S[i].t.ep, &m, f | FI_COMPLETION) : fi_readmsg(S[i].t.ep, &m, f | FI_COMPLETION);
		break;
	}
	}
	slot_posted(s, r);
}

static void op_atomic(int i)
{
	static const uint64_t COUNTS[] = { 0, 1, 2, 7, 8, 16, 1ull << 40, SIZE_MAX };
	size_t count = PICK(COUNTS);
	enum fi_datatype dt = (enum fi_datatype)(rnd() % (FI_DATATYPE_LAST + 3));
	enum fi_op op = (enum fi_op)(rnd() % (FI_ATOMIC_OP_LAST + 3));
	char *b = data_at(i, 1024), *res = data_at(i, 1024), *cmp = data_at(i, 1024);
	uint64_t off = rnd() % 4 ? (rnd() % (MR_LEN / 16)) * 16 : rnd();
	fi_addr_t d = dest(i);
	uint64_t key = rma_key(i);
	size_t cnt = 0;
	(void)fi_atomicvalid(S[i].t.ep, dt, op, &cnt);
	(void)fi_fetch_atomicvalid(S[i].t.ep, dt, op, &cnt);
	(void)fi_compare_atomicvalid(S[i].t.ep, dt, op, &cnt);
	struct slot *s = slot_new(K_ATOMIC, i, "atomic ep%d count %zu dt %d op %d off %" PRIu64, i, count, dt, op, off);
	if (!s)
		return;
	long r;
	switch (rnd() % 4) {
	case 0:
		r = fi_atomic(S[i].t.ep, b, count, NULL, d, off, key, dt, op, s);
		break;
	case 1:
		r = fi_fetch_atomic(S[i].t.ep, b, count, NULL, res, NULL, d, off, key, dt, op, s);
		break;
	case 2:
		r = fi_compare_atomic(S[i].t.ep, b, count, NULL, cmp, NULL, res, NULL, d, off, key, dt, op, s);
		break;
	default:
		r = fi_inject_atomic(S[i].t.ep, b, count, d, off, key, dt, op);
		rc_ok(r, "fi_inject_atomic");
		injects += r == 0;
		s->done = 1;
		return;
	}
	slot_posted(s, r);
}

static void op_cancel(int i)
{
	void *ctx;
	switch (rnd() % 3) {
	case 0:
		ctx = nslots ? (void *)&slots[rnd() % (uint64_t)nslots] : NULL;
		break;
	case 1:
		ctx = NULL;
		break;
	default:
		ctx = (void *)(uintptr_t)rnd(); /* compared, never dereferenced */
		break;
	}
	long r = fi_cancel(&S[i].t.ep->fid, ctx);
	rc_ok(r, "fi_cancel");
}

static void op_av(int i)
{
	char junk[64];
	for (size_t k = 0; k < sizeof(junk); k++)
		junk[k] = (char)rnd();
	fi_addr_t out[4];
	switch (rnd() % 5) {
	case 0: {
		int n = fi_av_insert(S[i].t.av, junk, 1 + rnd() % 4, out, rnd() % 4 ? 0 : PICK(FLAGS), NULL);
		calls++;
		F_CHECK(n >= -FI_ERRNO_MAX && n <= 4, "fi_av_insert of junk returned %d", n);
		break;
	}
	case 1: {
		fi_addr_t a = rnd() % 3 ? rnd() % 16 : rnd();
		if (a == S[i].peer[0] || a == S[i].peer[1])
			a = FI_ADDR_NOTAVAIL; /* the peers stay reachable; their removal is op_av_cycle's */
		rc_ok(fi_av_remove(S[i].t.av, &a, 1, 0), "fi_av_remove");
		break;
	}
	case 2: {
		char addr[16];
		size_t alen = rnd() % 17;
		long r = fi_av_lookup(S[i].t.av, rnd() % 3 ? S[i].peer[rnd() % 2] : rnd(), addr, &alen);
		rc_ok(r == -FI_ETOOSMALL ? 0 : r, "fi_av_lookup");
		break;
	}
	case 3: {
		char out_s[64];
		size_t slen = rnd() % 65;
		const char *p = fi_av_straddr(S[i].t.av, S[i].t.name, out_s, &slen);
		calls++;
		F_CHECK(p == NULL || p == out_s, "fi_av_straddr returned a foreign pointer");
		break;
	}
	default: {
		/* Remove a peer and put it back: operations posted to it meanwhile fail cleanly. */
		int p = (int)(rnd() % 2);
		rc_ok(fi_av_remove(S[i].t.av, &S[i].peer[p], 1, 0), "fi_av_remove(peer)");
		int n = fi_av_insert(S[i].t.av, S[p].t.name, 1, &S[i].peer[p], 0, NULL);
		calls++;
		F_CHECK(n == 1, "fi_av_insert of a removed peer = %d", n);
		break;
	}
	}
}

static void op_mr(int i)
{
	static const uint64_t ACC[] = { 0, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_READ | FI_WRITE, FI_SEND | FI_RECV,
					FI_REMOTE_READ | FI_REMOTE_WRITE, 1ull << 60 };
	struct fid_mr *mr = NULL;
	/* Within the buffer: the daemon moves bytes with process_vm_writev, so a registration longer than the
	 * memory behind it would let a remote write land in this process's other data.  A NULL base is fair
	 * (the daemon's access then fails with EFAULT). */
	size_t len = len_for(PICK(LENS) % (POOL + 1), POOL);
	uint64_t key = rnd() % 2 ? rnd() % 200 : rnd();
	long r = fi_mr_reg(S[i].t.dom, rnd() % 8 ? S[i].buf : NULL, len, PICK(ACC), rnd() % 4 ? 0 : rnd(), key,
			   rnd() % 3 ? 0 : PICK(FLAGS), &mr, NULL);
	rc_ok(r, "fi_mr_reg");
	if (r || !mr)
		return;
	rc_ok(fi_mr_bind(mr, &S[rnd() % 2].t.ep->fid, rnd() % 4 ? 0 : PICK(FLAGS)), "fi_mr_bind(ep)");
	if (rnd() % 2)
		rc_ok(fi_mr_bind(mr, &S[i].cntr->fid, rnd() % 2 ? FI_REMOTE_WRITE : PICK(FLAGS)), "fi_mr_bind(cntr)");
	rc_ok(fi_mr_enable(mr), "fi_mr_enable");
	(void)fi_mr_key(mr);
	(void)fi_mr_desc(mr);
	rc_ok(fi_close(&mr->fid), "fi_close(mr)");
}

static void op_opts(int i)
{
	char val[64] = { 0 };
	size_t len = rnd() % 65;
	int level = rnd() % 3 ? FI_OPT_ENDPOINT : (int)(rnd() % 8);
	int name = (int)(rnd() % 24);
	if (rnd() % 2) {
		*(uint64_t *)val = rnd() % 2 ? rnd() % 4096 : rnd();
		/* Keep the receive side usable for the drain: a minimum of 4 MiB would retire every buffer. */
		if (name == FI_OPT_MIN_MULTI_RECV)
			*(size_t *)val %= 4096;
		rc_ok(fi_setopt(&S[i].t.ep->fid, level, name, val, len), "fi_setopt");
	} else {
		rc_ok(fi_getopt(&S[i].t.ep->fid, level, name, val, &len), "fi_getopt");
	}
	/* fi_control commands whose argument is a plain value or unknown to libfabric. */
	static const uint64_t CMDS[] = { FI_GETOPSFLAG, FI_SETOPSFLAG, FI_GETWAIT, FI_ENABLE, FI_BACKLOG,
					 FI_FLUSH_WORK, FI_REFRESH, 64, 1000 };
	uint64_t arg[32] = { 0 };
	arg[0] = rnd() % 2 ? FI_TRANSMIT : FI_RECV;
	int cmd = (int)PICK(CMDS);
	if (cmd == FI_SETOPSFLAG)
		arg[0] |= rnd() % 2 ? FI_COMPLETION : 0;
	struct fid *targets[] = { &S[i].t.ep->fid, &S[i].t.cq->fid, &S[i].cntr->fid, &S[i].t.av->fid,
				  &S[i].t.dom->fid };
	rc_ok(fi_control(targets[rnd() % 5], cmd, cmd == FI_ENABLE ? NULL : arg), "fi_control");
	size_t nl = rnd() % 9;
	char nm[16];
	int g = fi_getname(&S[i].t.ep->fid, nm, &nl);
	rc_ok(g, "fi_getname");
	F_CHECK(g != -FI_ETOOSMALL || nl == 8, "fi_getname -FI_ETOOSMALL reports the size needed (%zu)", nl);
}

static void op_cq_cntr(int i)
{
	struct fi_cq_tagged_entry e;
	switch (rnd() % 6) {
	case 0: {
		/* A count of 0 reads nothing: it must not consume a completion. */
		ssize_t n = fi_cq_read(S[i].t.cq, &e, 0);
		calls++;
		F_CHECK(n == 0 || n == -FI_EAGAIN || n == -FI_EAVAIL || n == -FI_EINVAL, "fi_cq_read(count 0) = %zd", n);
		break;
	}
	case 1: {
		struct fi_cq_err_entry err;
		memset(&err, 0, sizeof(err));
		ssize_t n = fi_cq_readerr(S[i].t.cq, &err, rnd() % 2 ? 0 : rnd());
		calls++;
		if (n == 1)
			complete(err.op_context, err.flags, err.err ? err.err : -1, "fi_cq_readerr");
		else
			F_CHECK(n == -FI_EAGAIN || n == -FI_EBADFLAGS || n == -FI_EINVAL, "fi_cq_readerr = %zd", n);
		break;
	}
	case 2: {
		ssize_t n = fi_cq_sread(S[i].t.cq, &e, 1, NULL, (int)(rnd() % 3));
		calls++;
		if (n == 1)
			complete(e.op_context, e.flags, 0, "fi_cq_sread");
		else
			F_CHECK(n == -FI_EAGAIN || n == -FI_EAVAIL || n == -FI_ETIMEDOUT, "fi_cq_sread = %zd", n);
		break;
	}
	case 3:
		(void)fi_cntr_read(S[i].cntr);
		(void)fi_cntr_readerr(S[i].cntr);
		rc_ok(fi_cntr_wait(S[i].cntr, fi_cntr_read(S[i].cntr) + rnd() % 3, (int)(rnd() % 3)), "fi_cntr_wait");
		break;
	case 4:
		rc_ok(rnd() % 2 ? fi_cntr_add(S[i].cntr, rnd() % 100) : fi_cntr_set(S[i].cntr, rnd() % 100), "fi_cntr_add/set");
		rc_ok(rnd() % 2 ? fi_cntr_adderr(S[i].cntr, rnd() % 3) : fi_cntr_seterr(S[i].cntr, 0), "fi_cntr_adderr/seterr");
		break;
	default:
		rc_ok(fi_cq_signal(S[i].t.cq), "fi_cq_signal");
		break;
	}
}

/* ---- setup, drain ---- */

static void side_open(int i)
{
	struct fi_info *h = t_hints(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_MULTI_RECV | FI_RMA_EVENT |
				    FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV);
	t_open_with(&S[i].t, h, NULL, false);
	fi_freeinfo(h);
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	T_OK(fi_cntr_open(S[i].t.dom, &ca, &S[i].cntr, NULL));
	T_OK(fi_ep_bind(S[i].t.ep, &S[i].cntr->fid, FI_SEND | FI_RECV | FI_WRITE | FI_READ));
	T_OK(fi_enable(S[i].t.ep));
	S[i].t.namelen = sizeof(S[i].t.name);
	T_OK(fi_getname(&S[i].t.ep->fid, S[i].t.name, &S[i].t.namelen));
	S[i].buf = calloc(1, POOL);
	T_OK(fi_mr_reg(S[i].t.dom, S[i].buf, MR_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &S[i].mr, NULL));
	T_OK(fi_mr_bind(S[i].mr, &S[i].t.ep->fid, 0));
	T_OK(fi_mr_enable(S[i].mr));
	S[i].key = fi_mr_key(S[i].mr);
}

static int outstanding(enum kind k)
{
	int n = 0;
	for (int s = 0; s < nslots; s++)
		n += slots[s].live && (k == K_DRAIN || slots[s].kind == k);
	return n;
}

static void drain(void)
{
	/* Senders wait for receives (rendezvous, RNR): give every endpoint catch-all receives of the largest
	 * message until no send or RMA is outstanding; then cancel what is left posted. */
	/* Bounded on the wall clock: in virtual time, with nothing pending, the clock stands still. */
	uint64_t end = t_raw_clock_ns(CLOCK_MONOTONIC) + 60000000000ull;
	while (outstanding(K_SEND) + outstanding(K_RMA) + outstanding(K_ATOMIC) &&
	       t_raw_clock_ns(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 2; i++) {
			/* Only the drain's own receives count towards its cap: the fuzz's receives may be many
			 * and match nothing left (a tag, a source or a size no send has), and counting them
			 * left a send waiting for a receive the drain never posted. */
			int posted = 0;
			for (int k = 0; k < nslots; k++)
				posted += slots[k].live && slots[k].ep == i && slots[k].kind == K_RECV && slots[k].drain;
			if (outstanding(K_SEND) && posted < 64) {
				struct slot *a = slot_new(K_RECV, i, "drain recv ep%d", i);
				if (a) {
					a->drain = true;
					slot_posted(a, fi_recv(S[i].t.ep, S[i].buf, 2u << 20, NULL, FI_ADDR_UNSPEC, a));
				}
				struct slot *b = slot_new(K_RECV, i, "drain trecv ep%d", i);
				if (b) {
					b->drain = true;
					slot_posted(b, fi_trecv(S[i].t.ep, S[i].buf, 2u << 20, NULL, FI_ADDR_UNSPEC, 0,
								~0ull, b));
				}
			}
			reap(i);
		}
	}
	for (int s = 0; s < nslots; s++)
		if (slots[s].live && (slots[s].kind == K_RECV || slots[s].kind == K_MRECV))
			(void)fi_cancel(&S[slots[s].ep].t.ep->fid, &slots[s]);
	end = t_raw_clock_ns(CLOCK_MONOTONIC) + 30000000000ull;
	while (outstanding(K_DRAIN) && t_raw_clock_ns(CLOCK_MONOTONIC) < end) {
		reap(0);
		reap(1);
	}
	int left = 0;
	/* What is left: sends and RMA first (the receives were cancelled). */
	for (int pass = 0; pass < 2; pass++)
	for (int s = 0; s < nslots; s++)
		if (slots[s].live && (pass == 0) == (slots[s].kind != K_RECV && slots[s].kind != K_MRECV)) {
			if (left++ < 20)
				printf("FAIL [%s] never completed: %s\n", t_who, slots[s].what);
			t_failures++;
		}
	T_CHECK(left == 0, "every accepted operation completed exactly once (%d left)", left);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	long rounds = argc > 2 ? strtol(argv[2], NULL, 0) : 2000;
	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	trace = getenv("FUZZ_TRACE") != NULL;
	const char *skip = getenv("FUZZ_SKIP"); /* operation letters to leave out: a + case number */
	side_open(0);
	side_open(1);
	for (int i = 0; i < 2; i++)
		for (int p = 0; p < 2; p++)
			S[i].peer[p] = t_insert(&S[i].t, S[p].t.name);
	for (long r = 0; r < rounds; r++) {
		int i = (int)(rnd() % 2);
		int op = (int)(rnd() % 16);
		if (skip && strchr(skip, 'a' + op))
			continue;
		switch (op) {
		case 0: case 1: case 2: op_send(i); break;
		case 3: case 4: case 5: op_recv(i); break;
		case 6: case 7: op_rma(i); break;
		case 8: op_atomic(i); break;
		case 9: op_cancel(i); break;
		case 10: op_av(i); break;
		case 11: op_mr(i); break;
		case 12: op_opts(i); break;
		case 13: op_cq_cntr(i); break;
		default: reap(i); break;
		}
	}
	drain();
	printf("seed %" PRIu64 ": %ld calls, %ld refused with -FI_E*, %ld injects, %ld failed later\n", seed, calls, rejected,
	       injects, inject_errors);
	for (int i = 0; i < 2; i++) {
		T_OK(fi_close(&S[i].mr->fid));
		T_OK(fi_close(&S[i].t.ep->fid));
		T_OK(fi_close(&S[i].cntr->fid));
		S[i].t.ep = NULL;
		t_close(&S[i].t);
		free(S[i].buf);
	}
	return t_finish("prov_fuzz_api");
}
