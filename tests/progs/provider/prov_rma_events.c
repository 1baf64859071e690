/* Target-side RMA events on a passive target (it makes no libfabric call while the initiator works).
 *
 * Mode 'w' (FI_CXI_ENABLE_WRITEDATA=1, as upstream needs for fi_writedata): fi_writedata and
 * fi_inject_writedata produce a completion at the target -- in the CQ bound for receives, flags FI_RMA |
 * FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, the data, the MR's context, the address written, the initiator as
 * source -- and nothing else does (plain writes and reads leave the target's CQ empty).
 * Mode 'c' (defaults, provider key cache on): fi_writedata is -FI_ENOSYS, as upstream without the variable.
 * Both modes: counters count remote accesses -- the endpoint's FI_REMOTE_WRITE and FI_REMOTE_READ counters
 * (FI_RMA_EVENT endpoint) every write and read into its MRs, a counter bound to an MR with FI_REMOTE_WRITE
 * (registered with FI_RMA_EVENT or not: fi_mr_bind accepts both, as upstream) only the writes into that MR;
 * an access past an MR's end counts as an error.
 * An endpoint without FI_RMA_EVENT accepts remote counters (as upstream); an FI_RMA_EVENT MR bound to it
 * is -FI_EINVAL. */
#include "common.h"

#define MRLEN 65536

struct mode {
	struct t_link link;
	char kind;
};

struct keys {
	char name[8];
	uint64_t k1, k2;
};

static void mode_env(char kind)
{
	if (kind == 'w')
		setenv("FI_CXI_ENABLE_WRITEDATA", "1", 1);
}

static int mr1_ctx, mr2_ctx;

struct expect {
	uint64_t data, off, len;
	void *ctx;
	int mr;
};

static int target(void *arg)
{
	struct mode *m = arg;
	mode_env(m->kind);
	struct t_chan c = t_link_b(&m->link);
	struct t_ep t;
	struct fi_info *h = t_hints(FI_RMA | FI_RMA_EVENT | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SOURCE);
	t_open_with(&t, h, NULL, false);
	fi_freeinfo(h);
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cw, *cr, *cm, *cx;
	T_OK(fi_cntr_open(t.dom, &ca, &cw, NULL));
	T_OK(fi_cntr_open(t.dom, &ca, &cr, NULL));
	T_OK(fi_cntr_open(t.dom, &ca, &cm, NULL));
	T_OK(fi_cntr_open(t.dom, &ca, &cx, NULL));
	T_OK(fi_ep_bind(t.ep, &cw->fid, FI_REMOTE_WRITE));
	T_OK(fi_ep_bind(t.ep, &cr->fid, FI_REMOTE_READ));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	char *buf1 = aligned_alloc(4096, MRLEN), *buf2 = aligned_alloc(4096, MRLEN);
	t_fill(buf1, MRLEN, 5);
	t_fill(buf2, MRLEN, 6);
	struct fid_mr *mr1, *mr2;
	T_OK(fi_mr_reg(t.dom, buf1, MRLEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, FI_RMA_EVENT, &mr1, &mr1_ctx));
	T_OK(fi_mr_bind(mr1, &cm->fid, FI_REMOTE_WRITE));
	T_OK(fi_mr_bind(mr1, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr1));
	T_OK(fi_mr_reg(t.dom, buf2, MRLEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr2, &mr2_ctx));
	T_CHECK(fi_mr_bind(mr2, &cx->fid, FI_REMOTE_WRITE) == 0,
		"[%c] counter on an MR registered without FI_RMA_EVENT: accepted", m->kind);
	T_OK(fi_mr_bind(mr2, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr2));
	struct keys k = { .k1 = fi_mr_key(mr1), .k2 = fi_mr_key(mr2) };
	memcpy(k.name, t.name, 8);
	t_send(c, &k, sizeof(k));
	char iname[8];
	t_recv(c, iname, 8);
	fi_addr_t ini = t_insert(&t, iname);
	/* Passive while the initiator works. */
	t_sync(c);
	t_sync(c);
	bool w = m->kind == 'w';
	/* Expected: writes into MR1: 3 plain (+ writedata and inject writedata), MR2: 1 plain (+ writedata);
	 * reads: 2 from MR1, 1 from MR2; one write and one read past MR1's end fail. */
	uint64_t writes = 4 + (w ? 3 : 0), mr1_writes = 3 + (w ? 2 : 0), mr2_writes = 1 + (w ? 1 : 0);
	T_CHECK(fi_cntr_wait(cw, writes, 10000) == 0 || fi_cntr_read(cw) == writes, "[%c] remote write counter reached %" PRIu64,
		m->kind, writes);
	T_CHECK(fi_cntr_wait(cr, 3, 10000) == 0 || fi_cntr_read(cr) == 3, "[%c] remote read counter reached 3", m->kind);
	T_CHECK(fi_cntr_wait(cm, mr1_writes, 10000) == 0 || fi_cntr_read(cm) == mr1_writes,
		"[%c] MR counter reached %" PRIu64, m->kind, mr1_writes);
	T_CHECK(fi_cntr_wait(cx, mr2_writes, 10000) == 0 || fi_cntr_read(cx) == mr2_writes,
		"[%c] MR2 counter reached %" PRIu64, m->kind, mr2_writes);
	usleep(100000); /* nothing more may come */
	T_CHECK(fi_cntr_read(cw) == writes && fi_cntr_readerr(cw) == 1,
		"[%c] endpoint FI_REMOTE_WRITE counter: %" PRIu64 " writes, 1 error (got %" PRIu64 ", %" PRIu64 ")", m->kind,
		writes, fi_cntr_read(cw), fi_cntr_readerr(cw));
	T_CHECK(fi_cntr_read(cr) == 3 && fi_cntr_readerr(cr) == 1,
		"[%c] endpoint FI_REMOTE_READ counter: 3 reads, 1 error (got %" PRIu64 ", %" PRIu64 ")", m->kind,
		fi_cntr_read(cr), fi_cntr_readerr(cr));
	T_CHECK(fi_cntr_read(cm) == mr1_writes && fi_cntr_readerr(cm) == 1,
		"[%c] MR1's FI_REMOTE_WRITE counter: only its %" PRIu64 " writes, 1 error (got %" PRIu64 ", %" PRIu64 ")",
		m->kind, mr1_writes, fi_cntr_read(cm), fi_cntr_readerr(cm));
	T_CHECK(fi_cntr_read(cx) == mr2_writes && fi_cntr_readerr(cx) == 0,
		"[%c] MR2's FI_REMOTE_WRITE counter (MR without FI_RMA_EVENT): its %" PRIu64 " writes (got %" PRIu64
		", %" PRIu64 ")", m->kind, mr2_writes, fi_cntr_read(cx), fi_cntr_readerr(cx));
	/* The target CQ: one completion per fi_writedata, nothing for plain RMA. */
	struct expect ex[3] = { { 0xd1, 0, 64, &mr1_ctx, 1 }, { 0xd2, 128, 100, &mr2_ctx, 2 }, { 0xd3, 4096, 16, &mr1_ctx, 1 } };
	int nexp = w ? 3 : 0, good = 0;
	bool seen[3] = { false, false, false };
	for (int n = 0; n < nexp; n++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t from = FI_ADDR_NOTAVAIL;
		if (t_cq_wait(t.cq, &e, &from, NULL, 5.0) != 1)
			break;
		for (int i = 0; i < 3; i++) {
			char *base = ex[i].mr == 1 ? buf1 : buf2;
			if (seen[i] || e.data != ex[i].data)
				continue;
			seen[i] = true;
			good += e.flags == (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA) && e.op_context == ex[i].ctx &&
				e.len == ex[i].len && (char *)e.buf == base + ex[i].off && from == ini &&
				t_verify(base + ex[i].off, ex[i].len, 20 + (uint32_t)i);
		}
	}
	T_CHECK(good == nexp, "[%c] %d target completions for fi_writedata with data, MR context, address and source (%d right)",
		m->kind, nexp, good);
	struct fi_cq_tagged_entry e;
	T_CHECK(fi_cq_read(t.cq, &e, 1) == -FI_EAGAIN, "[%c] no target completion for plain writes and reads", m->kind);
	char *pat = malloc(MRLEN);
	t_fill(pat, MRLEN, 5);
	T_CHECK(!memcmp(buf1 + MRLEN - 64, pat + MRLEN - 64, 64), "[%c] the write past MR1's end changed nothing", m->kind);
	free(pat);
	t_sync(c);
	T_OK(fi_close(&mr1->fid));
	T_OK(fi_close(&mr2->fid));
	/* Counters are bound to the endpoint: it goes first. */
	T_OK(fi_close(&t.ep->fid));
	t.ep = NULL;
	T_OK(fi_close(&cw->fid));
	T_OK(fi_close(&cr->fid));
	T_OK(fi_close(&cm->fid));
	T_OK(fi_close(&cx->fid));
	t_close(&t);
	free(buf1);
	free(buf2);
	return 0;
}

static int rma_wait(struct t_ep *t)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int r = t_cq_wait(t->cq, &e, NULL, &err, 10.0);
	if (r < 0) {
		printf("FAIL [%s] RMA: timeout\n", t_who);
		exit(1);
	}
	return r == 1 ? 0 : err.err;
}

static int initiator(void *arg)
{
	struct mode *m = arg;
	mode_env(m->kind);
	struct t_chan c = t_link_a(&m->link);
	struct t_ep t;
	t_open(&t, FI_RMA | FI_READ | FI_WRITE | FI_RMA_EVENT);
	struct keys k;
	t_recv(c, &k, sizeof(k));
	t_send(c, t.name, 8);
	fi_addr_t dst = t_insert(&t, k.name);
	/* Misuse on an endpoint without FI_RMA_EVENT. */
	struct fi_info *i2 = fi_dupinfo(t.info);
	i2->caps &= ~FI_RMA_EVENT;
	i2->rx_attr->caps &= ~FI_RMA_EVENT;
	struct fid_ep *ep2;
	T_OK(fi_endpoint(t.dom, i2, &ep2, NULL));
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cn;
	T_OK(fi_cntr_open(t.dom, &ca, &cn, NULL));
	T_CHECK(fi_ep_bind(ep2, &cn->fid, FI_REMOTE_WRITE) == 0,
		"[%c] FI_REMOTE_WRITE counter on an endpoint without FI_RMA_EVENT: accepted (as upstream)", m->kind);
	static char mbuf[64];
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, mbuf, sizeof(mbuf), FI_REMOTE_WRITE, 0, 0, FI_RMA_EVENT, &mr, NULL));
	T_CHECK(fi_mr_bind(mr, &ep2->fid, 0) == -FI_EINVAL,
		"[%c] FI_RMA_EVENT MR bound to an endpoint without FI_RMA_EVENT: -FI_EINVAL", m->kind);
	T_OK(fi_close(&mr->fid));
	T_OK(fi_close(&ep2->fid));
	T_OK(fi_close(&cn->fid));
	fi_freeinfo(i2);

	t_sync(c);
	char src[3][128], big[1024], rd[1024];
	for (int i = 0; i < 3; i++)
		t_fill(src[i], sizeof(src[i]), 20 + (uint32_t)i);
	static int ctx;
	if (m->kind == 'w') {
		T_OK(fi_writedata(t.ep, src[0], 64, NULL, 0xd1, dst, 0, k.k1, &ctx));
		T_CHECK(rma_wait(&t) == 0, "[w] fi_writedata into MR1 completes at the initiator");
		T_OK(fi_writedata(t.ep, src[1], 100, NULL, 0xd2, dst, 128, k.k2, &ctx));
		T_CHECK(rma_wait(&t) == 0, "[w] fi_writedata into MR2 completes at the initiator");
		T_OK(fi_inject_writedata(t.ep, src[2], 16, 0xd3, dst, 4096, k.k1));
	} else {
		T_CHECK(fi_writedata(t.ep, src[0], 64, NULL, 0xd1, dst, 0, k.k1, &ctx) == -FI_ENOSYS,
			"[c] fi_writedata without FI_CXI_ENABLE_WRITEDATA: -FI_ENOSYS");
	}
	t_fill(big, sizeof(big), 40);
	for (int i = 0; i < 3; i++) {
		T_OK(fi_write(t.ep, big, sizeof(big), NULL, dst, 8192 + 1024 * (uint64_t)i, k.k1, &ctx));
		T_CHECK(rma_wait(&t) == 0, "[%c] write %d into MR1", m->kind, i);
	}
	T_OK(fi_write(t.ep, big, 256, NULL, dst, 1024, k.k2, &ctx));
	T_CHECK(rma_wait(&t) == 0, "[%c] write into MR2", m->kind);
	for (int i = 0; i < 2; i++) {
		T_OK(fi_read(t.ep, rd, 512, NULL, dst, 8192, k.k1, &ctx));
		T_CHECK(rma_wait(&t) == 0 && t_verify(rd, 512, 40), "[%c] read %d from MR1", m->kind, i);
	}
	T_OK(fi_read(t.ep, rd, 256, NULL, dst, 1024, k.k2, &ctx));
	T_CHECK(rma_wait(&t) == 0 && t_verify(rd, 256, 40), "[%c] read from MR2", m->kind);
	T_OK(fi_write(t.ep, big, 64, NULL, dst, MRLEN - 8, k.k1, &ctx));
	T_CHECK(rma_wait(&t) == FI_EIO, "[%c] write past MR1's end: FI_EIO", m->kind);
	T_OK(fi_read(t.ep, rd, 64, NULL, dst, MRLEN - 8, k.k1, &ctx));
	T_CHECK(rma_wait(&t) == FI_EIO, "[%c] read past MR1's end: FI_EIO", m->kind);
	t_sync(c);
	t_sync(c);
	t_close(&t);
	return 0;
}

int main(void)
{
	static const char kinds[] = { 'w', 'c' };
	for (int i = 0; i < 2; i++) {
		struct mode m = { .kind = kinds[i] };
		t_link_init(&m.link);
		pid_t tp = t_fork(target, &m, "target");
		pid_t ip = t_fork(initiator, &m, "initiator");
		close(m.link.ab[0]);
		close(m.link.ab[1]);
		close(m.link.ba[0]);
		close(m.link.ba[1]);
		t_join(ip, "initiator");
		t_join(tp, "target");
	}
	return t_finish("prov_rma_events");
}
