/* Atomics (FI_ATOMIC), executed by the target NIC's AMO unit.
 *
 * 1. fi_query_atomic and the three *valid calls answer, for every (op, datatype) of every kind (plain,
 *    fetching, compare), what upstream prov/cxi offers: count 1 and the datatype's size, or -FI_EOPNOTSUPP;
 *    out-of-range values -FI_EINVAL.  The expected validity is written here as rules on the types.
 * 2. Every valid pair executes against a passive target: the element is set with fi_write, the atomic runs,
 *    fi_read reads it back; the new value, and for fetching/compare atomics the returned previous value, are
 *    checked against a reference computed here (compare atomics with a comparand that matches and one that
 *    does not).  Run with provider keys through the key cache, an optimized client key (fetching atomics go
 *    to the MR's read PtlTE) and a standard client key.
 * 3. Misuse: an invalid pair -FI_EOPNOTSUPP from fi_atomic/fi_fetch_atomic/fi_compare_atomic, count 2
 *    -FI_EINVAL, a missing result buffer -FI_EINVAL, an atomic past the MR's end FI_EIO.
 * 4. Concurrency: NPROC initiators each add 1 NADD times to one 64-bit word with fi_fetch_atomic: the word
 *    ends at NPROC * NADD and the previous values returned are exactly 0 .. NPROC * NADD - 1, each once (the
 *    NIC applied the atomics one at a time); a compare-and-swap lock word taken and released by each
 *    initiator in turn counts NPROC * NLOCK exclusive sections. */
#include <complex.h>

#include "common.h"

#include <rdma/fi_atomic.h>

#define MRLEN (64 * 1024)
#define NPROC 4
#define NADD 200
#define NLOCK 20
#define WORD_OFF (MRLEN - 64)   /* the shared counter */
#define LOCK_OFF (MRLEN - 48)   /* the lock word */
#define CRIT_OFF (MRLEN - 32)   /* counted inside the lock */

enum kind { PLAIN, FETCH, SWAP };
static const char *kind_name[] = { "atomic", "fetch_atomic", "compare_atomic" };

struct shared {
	struct t_link link[NPROC]; /* initiator i <-> target */
	struct t_link res[NPROC];  /* initiator i -> main: its fetch-add results */
	char mode;
};

struct target_info {
	char name[8];
	uint64_t key;
};

static size_t dt_size(int dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	case FI_INT64: case FI_UINT64: case FI_DOUBLE: case FI_FLOAT_COMPLEX: return 8;
	case FI_DOUBLE_COMPLEX: case FI_INT128: case FI_UINT128: return 16;
	default: return 0;
	}
}

static bool is_int(int dt) { return dt <= FI_UINT64; }
static bool is_real(int dt) { return is_int(dt) || dt == FI_FLOAT || dt == FI_DOUBLE; }

/* What upstream cxi offers, as rules: ordered types for MIN/MAX and ordered comparisons, integers for the
 * logical/bitwise ops and MSWAP, every type but 128-bit and long double for SUM/WRITE/READ/CSWAP_NE, and
 * 128-bit integers for CSWAP only. */
static bool expect_valid(enum kind k, int op, int dt)
{
	if (dt == FI_LONG_DOUBLE || dt == FI_LONG_DOUBLE_COMPLEX)
		return false;
	bool wide = dt == FI_INT128 || dt == FI_UINT128;
	switch (op) {
	case FI_MIN: case FI_MAX: return k != SWAP && is_real(dt);
	case FI_SUM: case FI_ATOMIC_WRITE: return k != SWAP && !wide;
	case FI_ATOMIC_READ: return k == FETCH && !wide;
	case FI_LOR: case FI_LAND: case FI_LXOR: case FI_BOR: case FI_BAND: case FI_BXOR: return k != SWAP && is_int(dt);
	case FI_CSWAP: return k == SWAP;
	case FI_CSWAP_NE: return k == SWAP && !wide;
	case FI_CSWAP_LE: case FI_CSWAP_LT: case FI_CSWAP_GE: case FI_CSWAP_GT: return k == SWAP && is_real(dt);
	case FI_MSWAP: return k == SWAP && is_int(dt);
	default: return false;
	}
}

/* Reference semantics (fi_atomic(3)), per C type. */
#define REF_COMMON(T, t, b, c, op)                                                                          \
	switch (op) {                                                                                       \
	case FI_MIN: t = b < t ? b : t; break;                                                              \
	case FI_MAX: t = b > t ? b : t; break;                                                              \
	case FI_SUM: t = (T)(t + b); break;                                                                 \
	case FI_ATOMIC_WRITE: t = b; break;                                                                 \
	case FI_CSWAP: if (c == t) t = b; break;                                                            \
	case FI_CSWAP_NE: if (c != t) t = b; break;                                                         \
	case FI_CSWAP_LE: if (c <= t) t = b; break;                                                         \
	case FI_CSWAP_LT: if (c < t) t = b; break;                                                          \
	case FI_CSWAP_GE: if (c >= t) t = b; break;                                                         \
	case FI_CSWAP_GT: if (c > t) t = b; break;                                                          \
	}
#define REF_INT(T)                                                                                          \
	static void ref_##T(int op, void *tp, const void *bp, const void *cp)                               \
	{                                                                                                   \
		T t, b, c;                                                                                  \
		memcpy(&t, tp, sizeof(T)); memcpy(&b, bp, sizeof(T)); memcpy(&c, cp, sizeof(T));           \
		REF_COMMON(T, t, b, c, op)                                                                  \
		switch (op) {                                                                               \
		case FI_LOR: t = (T)(t || b); break;                                                        \
		case FI_LAND: t = (T)(t && b); break;                                                       \
		case FI_LXOR: t = (T)((t && !b) || (!t && b)); break;                                       \
		case FI_BOR: t = (T)(t | b); break;                                                         \
		case FI_BAND: t = (T)(t & b); break;                                                        \
		case FI_BXOR: t = (T)(t ^ b); break;                                                        \
		case FI_MSWAP: t = (T)((b & c) | (t & ~c)); break;                                          \
		}                                                                                           \
		memcpy(tp, &t, sizeof(T));                                                                  \
	}
#define REF_FLT(T)                                                                                          \
	static void ref_##T(int op, void *tp, const void *bp, const void *cp)                               \
	{                                                                                                   \
		T t, b, c;                                                                                  \
		memcpy(&t, tp, sizeof(T)); memcpy(&b, bp, sizeof(T)); memcpy(&c, cp, sizeof(T));           \
		REF_COMMON(T, t, b, c, op)                                                                  \
		memcpy(tp, &t, sizeof(T));                                                                  \
	}
#define REF_CPLX(T, N)                                                                                      \
	static void ref_##N(int op, void *tp, const void *bp, const void *cp)                               \
	{                                                                                                   \
		T t, b, c;                                                                                  \
		memcpy(&t, tp, sizeof(T)); memcpy(&b, bp, sizeof(T)); memcpy(&c, cp, sizeof(T));           \
		if (op == FI_SUM) t = t + b;                                                                \
		else if (op == FI_ATOMIC_WRITE || (op == FI_CSWAP && c == t) || (op == FI_CSWAP_NE && c != t)) \
			t = b;                                                                              \
		memcpy(tp, &t, sizeof(T));                                                                  \
	}
REF_INT(int8_t) REF_INT(uint8_t) REF_INT(int16_t) REF_INT(uint16_t) REF_INT(int32_t) REF_INT(uint32_t)
REF_INT(int64_t) REF_INT(uint64_t) REF_FLT(float) REF_FLT(double)
REF_CPLX(float complex, cf) REF_CPLX(double complex, cd)

static void ref_apply(int dt, int op, void *t, const void *b, const void *c)
{
	switch (dt) {
	case FI_INT8: ref_int8_t(op, t, b, c); break;
	case FI_UINT8: ref_uint8_t(op, t, b, c); break;
	case FI_INT16: ref_int16_t(op, t, b, c); break;
	case FI_UINT16: ref_uint16_t(op, t, b, c); break;
	case FI_INT32: ref_int32_t(op, t, b, c); break;
	case FI_UINT32: ref_uint32_t(op, t, b, c); break;
	case FI_INT64: ref_int64_t(op, t, b, c); break;
	case FI_UINT64: ref_uint64_t(op, t, b, c); break;
	case FI_FLOAT: ref_float(op, t, b, c); break;
	case FI_DOUBLE: ref_double(op, t, b, c); break;
	case FI_FLOAT_COMPLEX: ref_cf(op, t, b, c); break;
	case FI_DOUBLE_COMPLEX: ref_cd(op, t, b, c); break;
	case FI_INT128:
	case FI_UINT128:
		if (op == FI_CSWAP && !memcmp(c, t, 16))
			memcpy(t, b, 16);
		break;
	}
}

/* Values of a type: v = 0 target, 1 operand, 2 another value. */
static void value(int dt, int v, void *out)
{
	static const double re[] = { 6.5, 3.25, 9.0 }, im[] = { 2.0, 1.0, -4.0 };
	static const int64_t iv[] = { 6, 3, 13 };
	memset(out, 0, 16);
	switch (dt) {
	case FI_FLOAT: { float f = (float)re[v]; memcpy(out, &f, 4); break; }
	case FI_DOUBLE: memcpy(out, &re[v], 8); break;
	case FI_FLOAT_COMPLEX: { float complex z = (float)re[v] + (float)im[v] * I; memcpy(out, &z, 8); break; }
	case FI_DOUBLE_COMPLEX: { double complex z = re[v] + im[v] * I; memcpy(out, &z, 16); break; }
	case FI_INT128:
	case FI_UINT128:
		for (int i = 0; i < 16; i++)
			((uint8_t *)out)[i] = (uint8_t)(17 * i + 31 * v + 1);
		break;
	default: memcpy(out, &iv[v], dt_size(dt)); break; /* little-endian: the low bytes */
	}
}

static void wait_ok(struct t_ep *t, const char *what)
{
	struct fi_cq_tagged_entry e;
	t_cq_expect(t->cq, &e, what);
}

/* Wait for one completion; 0 or the error completion's err. */
static int wait_any(struct t_ep *t)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int w = t_cq_wait(t->cq, &e, NULL, &err, 10.0);
	if (w < 0) {
		printf("FAIL [%s] atomic: timeout\n", t_who);
		exit(1);
	}
	return w == 1 ? 0 : err.err;
}

static void put_elem(struct t_ep *t, fi_addr_t dst, uint64_t off, uint64_t key, const void *v, size_t n)
{
	static char ctx;
	ssize_t r;
	while ((r = fi_write(t->ep, v, n, NULL, dst, off, key, &ctx)) == -FI_EAGAIN)
		;
	T_OK(r);
	wait_ok(t, "fi_write");
}

static void get_elem(struct t_ep *t, fi_addr_t dst, uint64_t off, uint64_t key, void *v, size_t n)
{
	static char ctx;
	ssize_t r;
	while ((r = fi_read(t->ep, v, n, NULL, dst, off, key, &ctx)) == -FI_EAGAIN)
		;
	T_OK(r);
	wait_ok(t, "fi_read");
}

static ssize_t issue(struct t_ep *t, enum kind k, const void *buf, size_t count, const void *cmp, void *res,
		     fi_addr_t dst, uint64_t off, uint64_t key, int dt, int op)
{
	static char ctx;
	ssize_t r;
	do {
		if (k == PLAIN)
			r = fi_atomic(t->ep, buf, count, NULL, dst, off, key, dt, op, &ctx);
		else if (k == FETCH)
			r = fi_fetch_atomic(t->ep, buf, count, NULL, res, NULL, dst, off, key, dt, op, &ctx);
		else
			r = fi_compare_atomic(t->ep, buf, count, NULL, cmp, NULL, res, NULL, dst, off, key, dt, op, &ctx);
	} while (r == -FI_EAGAIN);
	return r;
}

/* Part 1: the validity table through fi_query_atomic and the endpoint's *valid calls. */
static void check_table(struct t_ep *t)
{
	int valid = 0, invalid = 0, bad = 0;
	for (int k = PLAIN; k <= SWAP; k++) {
		uint64_t qflags = k == FETCH ? FI_FETCH_ATOMIC : k == SWAP ? FI_COMPARE_ATOMIC : 0;
		for (int op = FI_MIN; op < FI_ATOMIC_OP_LAST; op++)
			for (int dt = FI_INT8; dt <= FI_UINT128; dt++) {
				struct fi_atomic_attr a = { 0 };
				size_t cnt = 0;
				int q = fi_query_atomic(t->dom, dt, op, &a, qflags);
				int v = k == PLAIN ? fi_atomicvalid(t->ep, dt, op, &cnt)
					: k == FETCH ? fi_fetch_atomicvalid(t->ep, dt, op, &cnt)
						     : fi_compare_atomicvalid(t->ep, dt, op, &cnt);
				bool want = expect_valid(k, op, dt);
				bool ok = want ? q == 0 && v == 0 && a.count == 1 && a.size == dt_size(dt) && cnt == 1
					       : q == -FI_EOPNOTSUPP && v == -FI_EOPNOTSUPP;
				if (!ok) {
					printf("FAIL [%s] %s op %d dt %d: query %d (count %zu size %zu) valid %d (count %zu), "
					       "want %s\n", t_who, kind_name[k], op, dt, q, a.count, a.size, v, cnt,
					       want ? "valid" : "-FI_EOPNOTSUPP");
					bad++;
				}
				want ? valid++ : invalid++;
			}
	}
	T_CHECK(!bad, "fi_query_atomic and fi_*atomicvalid: %d valid and %d -FI_EOPNOTSUPP (op, datatype, kind) "
		"triples as upstream", valid, invalid);
	T_CHECK(fi_query_atomic(t->dom, FI_UINT128 + 1, FI_SUM, NULL, 0) == -FI_EINVAL &&
			fi_query_atomic(t->dom, FI_INT32, FI_ATOMIC_OP_LAST, NULL, 0) == -FI_EINVAL &&
			fi_query_atomic(t->dom, FI_INT32, FI_SUM, NULL, FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC) == -FI_EINVAL,
		"out-of-range datatype/op and both kind flags: -FI_EINVAL");
}

/* Part 2: every valid pair, executed and checked. */
static void check_ops(struct t_ep *t, fi_addr_t dst, uint64_t key, char mode)
{
	int runs = 0, bad = 0;
	uint64_t off = 0;
	for (int k = PLAIN; k <= SWAP; k++)
		for (int op = FI_MIN; op < FI_ATOMIC_OP_LAST; op++)
			for (int dt = FI_INT8; dt <= FI_UINT128; dt++) {
				if (!expect_valid(k, op, dt))
					continue;
				size_t n = dt_size(dt);
				/* Compare atomics twice: comparand equal to the target, then different. */
				for (int cv = 0; cv < (k == SWAP ? 2 : 1); cv++) {
					uint8_t init[16], b[16], c[16], want[16], got[16], res[16];
					value(dt, 0, init);
					value(dt, 1, b);
					value(dt, cv ? 2 : 0, c);
					if (op == FI_MSWAP)
						value(dt, cv ? 2 : 1, c); /* a mask */
					memcpy(want, init, 16);
					ref_apply(dt, op, want, b, c);
					put_elem(t, dst, off, key, init, n);
					memset(res, 0xa5, sizeof(res));
					T_OK(issue(t, k, b, 1, c, res, dst, off, key, dt, op));
					int e = wait_any(t);
					get_elem(t, dst, off, key, got, n);
					bool ok = e == 0 && !memcmp(got, want, n) && (k == PLAIN || !memcmp(res, init, n));
					if (!ok) {
						printf("FAIL [%s] [%c] %s op %d dt %d cmp %d: err %d, value %s, previous %s\n",
						       t_who, mode, kind_name[k], op, dt, cv, e,
						       memcmp(got, want, n) ? "wrong" : "right",
						       k == PLAIN ? "-" : memcmp(res, init, n) ? "wrong" : "right");
						bad++;
					}
					runs++;
					off += 16;
				}
			}
	T_CHECK(!bad, "[%c] %d atomics (every valid op/datatype/kind, compare atomics matching and not): new value "
		"and previous value as fi_atomic(3) defines", mode, runs);
}

/* Part 3: misuse. */
static void check_misuse(struct t_ep *t, fi_addr_t dst, uint64_t key)
{
	uint64_t v = 1, res = 0, cmp = 0;
	T_CHECK(issue(t, PLAIN, &v, 1, NULL, NULL, dst, 0, key, FI_DOUBLE, FI_BOR) == -FI_EOPNOTSUPP &&
			issue(t, FETCH, &v, 1, NULL, &res, dst, 0, key, FI_INT128, FI_SUM) == -FI_EOPNOTSUPP &&
			issue(t, SWAP, &v, 1, &cmp, &res, dst, 0, key, FI_FLOAT_COMPLEX, FI_CSWAP_LT) == -FI_EOPNOTSUPP &&
			issue(t, PLAIN, &v, 1, NULL, NULL, dst, 0, key, FI_INT32, FI_ATOMIC_READ) == -FI_EOPNOTSUPP,
		"invalid pairs: -FI_EOPNOTSUPP from fi_atomic, fi_fetch_atomic, fi_compare_atomic");
	T_CHECK(issue(t, PLAIN, &v, 2, NULL, NULL, dst, 0, key, FI_UINT64, FI_SUM) == -FI_EINVAL &&
			issue(t, FETCH, &v, 1, NULL, NULL, dst, 0, key, FI_UINT64, FI_SUM) == -FI_EINVAL &&
			issue(t, SWAP, &v, 1, NULL, &res, dst, 0, key, FI_UINT64, FI_CSWAP) == -FI_EINVAL,
		"count 2, no result buffer, no comparand: -FI_EINVAL");
	T_OK(fi_inject_atomic(t->ep, &v, 1, dst, WORD_OFF - 8, key, FI_UINT64, FI_SUM));
	get_elem(t, dst, WORD_OFF - 8, key, &res, 8);
	T_CHECK(res == 1, "fi_inject_atomic adds (no completion), a later read sees it");
}

static int target(void *arg)
{
	struct shared *s = arg;
	char mode = s->mode;
	struct t_ep t;
	struct fi_info *h = t_hints(FI_ATOMIC | FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE);
	if (mode != 'c')
		h->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED;
	t_open_with(&t, h, NULL, true);
	fi_freeinfo(h);
	T_CHECK(t.info->caps & FI_ATOMIC, "FI_ATOMIC in the caps when asked for");
	char *mem = aligned_alloc(4096, MRLEN);
	memset(mem, 0, MRLEN);
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, mem, MRLEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, mode == 'k' ? 5 : 500, 0, &mr, NULL));
	T_OK(fi_mr_bind(mr, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr));
	struct target_info ti = { .key = fi_mr_key(mr) };
	memcpy(ti.name, t.name, 8);
	int nproc = mode == 'c' ? NPROC : 1;
	struct t_chan ch[NPROC];
	for (int i = 0; i < nproc; i++) {
		ch[i] = t_link_b(&s->link[i]);
		t_send(ch[i], &ti, sizeof(ti));
	}
	for (int i = 0; i < nproc; i++)
		t_sync(ch[i]);
	if (mode == 'c') {
		uint64_t word, crit;
		memcpy(&word, mem + WORD_OFF, 8);
		memcpy(&crit, mem + CRIT_OFF, 8);
		T_CHECK(word == NPROC * NADD, "target memory: %d x %d concurrent fetch-adds give %llu", NPROC, NADD,
			(unsigned long long)word);
		T_CHECK(crit == NPROC * NLOCK, "target memory: %d critical sections under a compare-and-swap lock, "
			"counted %llu", NPROC * NLOCK, (unsigned long long)crit);
	}
	for (int i = 0; i < nproc; i++)
		t_sync(ch[i]);
	T_OK(fi_close(&mr->fid));
	t_close(&t);
	free(mem);
	return 0;
}

struct init_arg {
	struct shared *s;
	int id;
};

static int initiator(void *arg)
{
	struct init_arg *ia = arg;
	struct shared *s = ia->s;
	char mode = s->mode;
	struct t_chan c = t_link_a(&s->link[ia->id]);
	struct t_ep t;
	struct fi_info *h = t_hints(FI_ATOMIC | FI_RMA | FI_READ | FI_WRITE);
	if (mode != 'c')
		h->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED;
	t_open_with(&t, h, NULL, true);
	fi_freeinfo(h);
	struct target_info ti;
	t_recv(c, &ti, sizeof(ti));
	fi_addr_t dst = t_insert(&t, ti.name);
	if (ia->id == 0 && mode == 'c')
		check_table(&t);
	if (ia->id == 0)
		check_ops(&t, dst, ti.key, mode);
	if (mode != 'c') {
		/* Client keys: the MR's LE bounds the access (the key cache's LE spans the address space). */
		uint64_t v = 1, res = 0;
		T_OK(issue(&t, FETCH, &v, 1, NULL, &res, dst, MRLEN - 4, ti.key, FI_UINT64, FI_SUM));
		int e1 = wait_any(&t);
		T_OK(issue(&t, PLAIN, &v, 1, NULL, NULL, dst, MRLEN, ti.key, FI_UINT8, FI_SUM));
		int e2 = wait_any(&t);
		T_CHECK(e1 == FI_EIO && e2 == FI_EIO, "[%c] fetching and plain atomics reaching past the MR's end: FI_EIO",
			mode);
	}
	if (ia->id == 0 && mode == 'c')
		check_misuse(&t, dst, ti.key);
	if (mode == 'c') {
		/* Concurrent fetch-adds on one word: each previous value is a distinct position in the order. */
		uint64_t one = 1, prev[NADD];
		int errs = 0;
		for (int i = 0; i < NADD; i++) {
			T_OK(issue(&t, FETCH, &one, 1, NULL, &prev[i], dst, WORD_OFF, ti.key, FI_UINT64, FI_SUM));
			errs += wait_any(&t) != 0;
		}
		T_CHECK(!errs, "%d fetch-adds completed without error", NADD);
		t_send(t_link_a(&s->res[ia->id]), prev, sizeof(prev));
		/* A spin lock on the target: CSWAP 0 -> id + 1, a read-modify-write of the counter, release. */
		uint64_t zero = 0, me = (uint64_t)ia->id + 1, old;
		int stolen = 0;
		for (int i = 0; i < NLOCK; i++) {
			do {
				T_OK(issue(&t, SWAP, &me, 1, &zero, &old, dst, LOCK_OFF, ti.key, FI_UINT64, FI_CSWAP));
				wait_ok(&t, "lock atomic");
			} while (old != 0);
			uint64_t crit;
			get_elem(&t, dst, CRIT_OFF, ti.key, &crit, 8);
			crit++;
			put_elem(&t, dst, CRIT_OFF, ti.key, &crit, 8);
			T_OK(issue(&t, FETCH, &zero, 1, NULL, &old, dst, LOCK_OFF, ti.key, FI_UINT64, FI_ATOMIC_WRITE));
			wait_ok(&t, "lock atomic");
			stolen += old != me;
		}
		T_CHECK(!stolen, "%d lock sections: the lock word held this initiator's id at every release", NLOCK);
	}
	t_sync(c);
	t_sync(c);
	t_close(&t);
	return 0;
}

static void run(char mode)
{
	static struct shared s;
	memset(&s, 0, sizeof(s));
	s.mode = mode;
	int nproc = mode == 'c' ? NPROC : 1;
	for (int i = 0; i < nproc; i++) {
		t_link_init(&s.link[i]);
		t_link_init(&s.res[i]);
	}
	pid_t tp = t_fork(target, &s, "target");
	pid_t ip[NPROC];
	struct init_arg ia[NPROC];
	for (int i = 0; i < nproc; i++) {
		ia[i] = (struct init_arg){ &s, i };
		ip[i] = t_fork(initiator, &ia[i], "initiator");
	}
	if (mode == 'c') {
		/* Collect every initiator's previous values: together exactly 0 .. NPROC * NADD - 1. */
		static bool seen[NPROC * NADD];
		memset(seen, 0, sizeof(seen));
		int dup = 0;
		for (int i = 0; i < nproc; i++) {
			uint64_t prev[NADD];
			t_recv(t_link_b(&s.res[i]), prev, sizeof(prev));
			for (int j = 0; j < NADD; j++) {
				if (prev[j] >= NPROC * NADD || seen[prev[j]])
					dup++;
				else
					seen[prev[j]] = true;
			}
		}
		T_CHECK(!dup, "%d concurrent fetch-adds returned every previous value 0..%d exactly once (serialised)",
			NPROC * NADD, NPROC * NADD - 1);
	}
	for (int i = 0; i < nproc; i++)
		t_join(ip[i], "initiator");
	t_join(tp, "target");
}

int main(void)
{
	run('c'); /* provider keys through the key cache; also the table, misuse and concurrency */
	run('k'); /* optimized client key */
	run('s'); /* standard client key */
	return t_finish("prov_atomic");
}
