/* A capture turned into per-client request streams for the replay workload (see replay_script.h). */
#include "replay_script.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../nic/cassini.h"
#include "../util.h"

#define RECENT_RECVS 64  /* unlinked tagged receives remembered per client endpoint */
#define ADDR_SCAN_BYTES 64

struct ep_info {
	uint32_t id, proc, nic, flags;
	uint16_t pid, vni;
	uint32_t stream;  /* index + 1 into the script's streams; 0: none yet */
	struct cap_recv recent[RECENT_RECVS];
	uint32_t nrecent;
};

/* A captured MR id and where its record went. */
struct mr_ref {
	uint32_t mr, stream, index;
};

struct loader {
	struct replay_script *s;
	struct mr_ref *mrs;
	uint32_t nmrs;
	struct ep_info *eps;
	uint32_t neps;
	struct cap_proc *procs;
	uint32_t nprocs;
	char *err;
	size_t errlen;
};

static int fail(struct loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct loader *L, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L->err, L->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

uint32_t rq_cxi_addr32(uint32_t nic, uint32_t pid)
{
	return (pid & C_PID_ANY) | (nic << C_PID_BITS);
}

static struct ep_info *ep_by_id(struct loader *L, uint32_t id)
{
	for (uint32_t i = 0; i < L->neps; i++)
		if (L->eps[i].id == id)
			return &L->eps[i];
	return NULL;
}

static const char *prog_of(struct loader *L, uint32_t proc)
{
	for (uint32_t i = 0; i < L->nprocs; i++)
		if (L->procs[i].proc == proc)
			return L->procs[i].progname;
	return "";
}

/* Pass 1: processes and endpoints. */
static void index_eps(struct loader *L)
{
	size_t off = 0;
	struct cap_rec r;
	while (cap_next(&L->s->file, &off, &r)) {
		if (r.type == CAP_PROC) {
			L->procs = xrealloc(L->procs, (L->nprocs + 1) * sizeof(*L->procs));
			memcpy(&L->procs[L->nprocs++], r.fixed, sizeof(struct cap_proc));
		} else if (r.type == CAP_EP) {
			struct cap_ep e;
			memcpy(&e, r.fixed, sizeof(e));
			L->eps = xrealloc(L->eps, (L->neps + 1) * sizeof(*L->eps));
			L->eps[L->neps++] = (struct ep_info){
				.id = e.ep, .proc = e.proc, .nic = e.nic, .pid = e.pid, .vni = e.vni, .flags = e.ep_flags,
			};
		}
	}
}

/* The server: named, or the destination the most distinct endpoints sent to (then the most messages). */
static int pick_server(struct loader *L, const char *name)
{
	struct replay_script *s = L->s;
	uint32_t best = 0, best_src = 0;
	uint64_t best_msgs = 0;
	for (uint32_t i = 0; i < L->neps; i++) {
		struct ep_info *e = &L->eps[i];
		if (name && strcmp(prog_of(L, e->proc), name))
			continue;
		/* distinct sources: a bitmap over endpoint slots */
		bool *from = xcalloc(L->neps, 1);
		uint32_t nsrc = 0;
		uint64_t msgs = 0;
		size_t off = 0;
		struct cap_rec r;
		while (cap_next(&s->file, &off, &r)) {
			if (r.type != CAP_SEND)
				continue;
			struct cap_send m;
			memcpy(&m, r.fixed, sizeof(m));
			if (m.dst_nic != e->nic || m.dst_pid != e->pid)
				continue;
			msgs++;
			struct ep_info *src = ep_by_id(L, m.ep);
			if (src && !from[src - L->eps]) {
				from[src - L->eps] = true;
				nsrc++;
			}
		}
		free(from);
		if (nsrc > best_src || (nsrc == best_src && msgs > best_msgs)) {
			best = e->id;
			best_src = nsrc;
			best_msgs = msgs;
		}
	}
	if (!best_src)
		return name ? fail(L, "no endpoint of a process named '%s' received messages in the capture", name)
			    : fail(L, "the capture holds no message sent to another captured endpoint");
	struct ep_info *e = ep_by_id(L, best);
	s->server_ep = e->id;
	s->server_nic = e->nic;
	s->server_pid = e->pid;
	snprintf(s->server_prog, sizeof(s->server_prog), "%s", prog_of(L, e->proc));
	return 0;
}

static struct rq_stream *stream_of(struct loader *L, struct ep_info *e)
{
	if (!e->stream) {
		struct replay_script *s = L->s;
		s->streams = xrealloc(s->streams, (s->nstreams + 1) * sizeof(*s->streams));
		struct rq_stream *st = &s->streams[s->nstreams++];
		memset(st, 0, sizeof(*st));
		st->ep = e->id;
		st->nic = e->nic;
		st->pid = e->pid;
		st->vni = e->vni;
		st->ep_flags = e->flags;
		e->stream = s->nstreams;
	}
	return &L->s->streams[e->stream - 1];
}

static bool tag_matches(const struct cap_recv *rv, uint64_t v)
{
	return ((rv->tag ^ v) & ~rv->ignore) == 0;
}

/* The latest unlinked tagged receive of the client whose tag the request carries. */
static void link_reply(struct ep_info *e, struct rq *q)
{
	for (uint32_t k = e->nrecent; k-- > 0;) {
		const struct cap_recv *rv = &e->recent[k];
		struct { uint8_t field; uint64_t value, mask; } cand[4] = {
			{ RQ_FIELD_DATA, q->data, ~0ULL }, { RQ_FIELD_DATA, q->data & 0xffffffffULL, 0xffffffffULL },
			{ RQ_FIELD_TAG, q->tag, ~0ULL }, { RQ_FIELD_TAG, q->tag & 0xffffffffULL, 0xffffffffULL },
		};
		for (int c = 0; c < 4; c++) {
			bool has = cand[c].field == RQ_FIELD_DATA ? (q->flags & CAPF_CQ_DATA) : (q->flags & CAPF_TAGGED);
			if (!has || !tag_matches(rv, cand[c].value))
				continue;
			q->reply_field = cand[c].field;
			q->reply_mask = cand[c].mask;
			q->resp_len = rv->len;
			memmove(&e->recent[k], &e->recent[k + 1], (e->nrecent - k - 1) * sizeof(*rv));
			e->nrecent--;
			return;
		}
	}
}

static void remember_recv(struct ep_info *e, const struct cap_recv *rv)
{
	if (!(rv->flags & CAPF_TAGGED) || (rv->flags & CAPF_MULTI_RECV))
		return;
	if (e->nrecent == RECENT_RECVS) {
		memmove(&e->recent[0], &e->recent[1], (RECENT_RECVS - 1) * sizeof(e->recent[0]));
		e->nrecent--;
	}
	e->recent[e->nrecent++] = *rv;
}

static void mr_add(struct loader *L, struct ep_info *e, const struct cap_mr *m)
{
	struct rq_stream *st = stream_of(L, e);
	st->mrs = xrealloc(st->mrs, (st->nmrs + 1) * sizeof(*st->mrs));
	struct rq_mr *x = &st->mrs[st->nmrs++];
	memset(x, 0, sizeof(*x));
	x->key = m->key;
	x->addr = m->addr;
	x->len = m->len;
	x->access = m->access;
	L->mrs = xrealloc(L->mrs, (L->nmrs + 1) * sizeof(*L->mrs));
	L->mrs[L->nmrs++] = (struct mr_ref){ m->mr, e->stream - 1, st->nmrs - 1 };
}

/* Pass 2, in capture order: requests to the server, receives and MRs of their clients. */
static int build_streams(struct loader *L)
{
	struct replay_script *s = L->s;
	size_t off = 0;
	struct cap_rec r;
	while (cap_next(&s->file, &off, &r)) {
		switch (r.type) {
		case CAP_RECV: {
			struct cap_recv rv;
			memcpy(&rv, r.fixed, sizeof(rv));
			struct ep_info *e = ep_by_id(L, rv.ep);
			if (e && e->id != s->server_ep)
				remember_recv(e, &rv);
			break;
		}
		case CAP_SEND: {
			struct cap_send m;
			memcpy(&m, r.fixed, sizeof(m));
			struct ep_info *e = ep_by_id(L, m.ep);
			if (!e || e->id == s->server_ep || m.dst_nic != s->server_nic || m.dst_pid != s->server_pid)
				break;
			if (m.len > UINT32_MAX) /* Cassini's and the provider's limit (CXIP_EP_MAX_MSG_SZ) */
				return fail(L, "endpoint %u sent a message of %llu bytes, more than a message carries "
					    "(4 GiB - 1)", m.ep, (unsigned long long)m.len);
			struct rq_stream *st = stream_of(L, e);
			st->rqs = xrealloc(st->rqs, (st->n + 1) * sizeof(*st->rqs));
			struct rq *q = &st->rqs[st->n++];
			*q = (struct rq){
				.payload = r.var, .payload_len = r.var_len, .len = m.len, .tag = m.tag, .data = m.data,
				.flags = m.flags & (CAPF_TAGGED | CAPF_CQ_DATA), .think = m.think,
			};
			link_reply(e, q);
			break;
		}
		case CAP_RMA: {
			struct cap_rma a;
			memcpy(&a, r.fixed, sizeof(a));
			struct ep_info *e = ep_by_id(L, a.ep);
			if (e && e->id != s->server_ep && a.dst_nic == s->server_nic && a.dst_pid == s->server_pid)
				stream_of(L, e)->rma_ops++;
			break;
		}
		case CAP_MR: {
			struct cap_mr m;
			memcpy(&m, r.fixed, sizeof(m));
			struct ep_info *e = ep_by_id(L, m.ep);
			if (e && e->id != s->server_ep)
				mr_add(L, e, &m);
			break;
		}
		case CAP_MR_IMAGE: {
			struct cap_mr_image im;
			memcpy(&im, r.fixed, sizeof(im));
			for (uint32_t i = 0; i < L->nmrs; i++) {
				if (L->mrs[i].mr != im.mr)
					continue;
				struct rq_mr *x = &s->streams[L->mrs[i].stream].mrs[L->mrs[i].index];
				if (im.kind == CAP_IMAGE_EXPOSED && !x->exposed) {
					x->exposed = r.var;
					x->exposed_len = r.var_len;
				} else if (im.kind == CAP_IMAGE_CLOSED) {
					x->closed = r.var;
					x->closed_len = r.var_len;
				}
			}
			break;
		}
		default:
			break;
		}
	}
	return 0;
}

static int cmp_mr(const void *a, const void *b)
{
	const struct rq_mr *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Streams without requests (a process that only registered memory) go; MRs are sorted and checked. */
static int finish_streams(struct loader *L, const struct replay_script_opts *o)
{
	struct replay_script *s = L->s;
	uint32_t k = 0;
	s->requests = s->with_reply = 0;
	for (uint32_t i = 0; i < s->nstreams; i++) {
		struct rq_stream *st = &s->streams[i];
		/* The range is taken after linking: a response receive may precede the first replayed request. */
		uint32_t first = o && o->range ? o->first : 0, last = o && o->range ? o->last : UINT32_MAX;
		uint32_t end = st->n && last < st->n - 1 ? last + 1 : st->n;
		st->n = first < end ? end - first : 0;
		if (first && st->n)
			memmove(st->rqs, st->rqs + first, st->n * sizeof(*st->rqs));
		for (uint32_t q = 0; q < st->n; q++) {
			s->requests++;
			s->with_reply += st->rqs[q].reply_field != RQ_FIELD_NONE;
		}
		if (!st->n) {
			free(st->rqs);
			free(st->mrs);
			continue;
		}
		if (st->nmrs)
			qsort(st->mrs, st->nmrs, sizeof(*st->mrs), cmp_mr);
		for (uint32_t m = 1; m < st->nmrs; m++)
			if (st->mrs[m].addr < st->mrs[m - 1].addr + st->mrs[m - 1].len)
				return fail(L, "client endpoint %u registered overlapping memory regions (keys %#llx and %#llx): "
					    "replay keeps one image per address", st->ep, (unsigned long long)st->mrs[m - 1].key,
					    (unsigned long long)st->mrs[m].key);
		s->streams[k++] = *st;
	}
	s->nstreams = k;
	if (!k)
		return fail(L, "the capture holds no message from a client to the server (%s, NIC %u pid %u)%s",
			    s->server_prog, s->server_nic, s->server_pid,
			    o && o->range ? " in the requests range" : "");
	return 0;
}

/* Whether every request of the stream carries the client's own address at off. */
static bool stream_has_addr_at(const struct rq_stream *st, uint32_t off)
{
	uint32_t a = rq_cxi_addr32(st->nic, st->pid);
	for (uint32_t i = 0; i < st->n; i++) {
		uint32_t v;
		if (st->rqs[i].payload_len < off + 4)
			return false;
		memcpy(&v, st->rqs[i].payload + off, 4);
		if (v != a)
			return false;
	}
	return st->n > 0;
}

/* Offsets at which every request of every client carries its own address -- with at least two clients of
 * different addresses, so that a field that merely holds the same value everywhere (a length equal to
 * some client's address) is not taken for one.  The same offsets for all streams. */
static void find_addr_offsets(struct replay_script *s)
{
	bool distinct = false;
	for (uint32_t i = 1; i < s->nstreams; i++)
		distinct |= s->streams[i].nic != s->streams[0].nic || s->streams[i].pid != s->streams[0].pid;
	if (!distinct)
		return;
	uint32_t off[RQ_MAX_ADDR_OFFSETS], n = 0;
	for (uint32_t o = 0; o + 4 <= ADDR_SCAN_BYTES && n < RQ_MAX_ADDR_OFFSETS; o++) {
		bool all = true;
		for (uint32_t i = 0; i < s->nstreams && all; i++)
			all = stream_has_addr_at(&s->streams[i], o);
		if (all)
			off[n++] = o;
	}
	for (uint32_t i = 0; i < s->nstreams; i++) {
		memcpy(s->streams[i].addr_off, off, sizeof(off));
		s->streams[i].naddr_off = n;
	}
}

int replay_script_load(const char *path, const struct replay_script_opts *o, struct replay_script *s, char *err,
		       size_t errlen)
{
	memset(s, 0, sizeof(*s));
	if (cap_open(path, &s->file, err, errlen))
		return -1;
	struct loader L = { .s = s, .err = err, .errlen = errlen };
	int rc = 0;
	index_eps(&L);
	if (!L.neps)
		rc = fail(&L, "the capture holds no endpoint (did the command use the cxi provider?)");
	if (!rc)
		rc = pick_server(&L, o ? o->server_process : NULL);
	if (!rc)
		rc = build_streams(&L);
	if (!rc)
		rc = finish_streams(&L, o);
	if (!rc && (!o || o->addr_offsets_auto))
		find_addr_offsets(s);
	for (uint32_t i = 0; !rc && o && !o->addr_offsets_auto && i < s->nstreams; i++) {
		s->streams[i].naddr_off = o->naddr_off;
		memcpy(s->streams[i].addr_off, o->addr_off, sizeof(s->streams[i].addr_off));
	}
	free(L.eps);
	free(L.procs);
	free(L.mrs);
	if (rc)
		replay_script_free(s);
	return rc;
}

void replay_script_free(struct replay_script *s)
{
	for (uint32_t i = 0; i < s->nstreams; i++) {
		free(s->streams[i].rqs);
		free(s->streams[i].mrs);
	}
	free(s->streams);
	cap_close(&s->file);
	memset(s, 0, sizeof(*s));
}

const struct rq_mr *rq_stream_mr(const struct rq_stream *st, uint64_t addr, uint64_t len)
{
	uint32_t lo = 0, hi = st->nmrs;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		const struct rq_mr *m = &st->mrs[mid];
		if (addr < m->addr)
			hi = mid;
		else if (addr >= m->addr + m->len)
			lo = mid + 1;
		else
			return addr + len <= m->addr + m->len ? m : NULL;
	}
	return NULL;
}
