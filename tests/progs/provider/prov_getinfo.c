/* Capability negotiation as upstream: a table of fi_getinfo hints and what cxi returns for them, each row
 * naming the upstream rule it checks (libfabric's util layer, prov/util/src/util_attr.c, which upstream
 * prov/cxi is built on, and prov/cxi/src/cxip_info.c).  Then the in-band address exchange that fabtests
 * and many applications use: a server without FI_SOURCE / FI_SOURCE_ERR receives its first message from a
 * peer it has not inserted (the peer's address is in the payload), inserts it and answers.  Then
 * fi_cq_signal: it wakes a thread blocked in fi_cq_sread, which returns -FI_EAGAIN. */
#include <pthread.h>

#include "common.h"

/* Caps that never belong on one side (libfabric's OFI_IGNORED_RX_CAPS / OFI_IGNORED_TX_CAPS). */
#define NOT_RX (FI_READ | FI_WRITE | FI_SEND | FI_FENCE | FI_MULTICAST | FI_NAMED_RX_CTX)
#define NOT_TX                                                                                               \
	(FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV | FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE |          \
	 FI_RMA_EVENT | FI_SOURCE_ERR)

enum { ANY = -1 };

struct row {
	const char *rule;          /* the upstream rule the row checks */
	bool no_hints;             /* fi_getinfo(NULL hints) */
	uint64_t caps;             /* hints->caps */
	void (*setup)(struct fi_info *h);
	int ret;                   /* fi_getinfo's result */
	int per_domain;            /* offers per domain (ANY: not checked) */
	uint64_t caps_in, caps_out;
	uint64_t rx_in, rx_out, tx_in, tx_out;
	uint64_t dom_in, dom_out;  /* domain_attr->caps */
	long long tx_order;        /* tx_attr->msg_order (ANY: not checked) */
	uint32_t proto;            /* ep_attr->protocol (0: not checked) */
	int mr_in;                 /* bits domain_attr->mr_mode must have */
	size_t inject;             /* tx_attr->inject_size ((size_t)ANY: not checked) */
	uint64_t tag_fmt;          /* ep_attr->mem_tag_format (0: not checked) */
};

static void h_rnr(struct fi_info *h) { h->ep_attr->protocol = FI_PROTO_CXI_RNR; }
static void h_mr_endpoint_only(struct fi_info *h) { h->domain_attr->mr_mode = FI_MR_ENDPOINT; }
static void h_mr_no_endpoint(struct fi_info *h)
{
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
}
static void h_order_sas(struct fi_info *h) { h->tx_attr->msg_order = FI_ORDER_SAS; }
static void h_av_auth_key(struct fi_info *h) { h->domain_attr->auth_key_size = FI_AV_AUTH_KEY; }
static void h_dom_user_id(struct fi_info *h) { h->domain_attr->caps = FI_AV_USER_ID; }
static void h_mode_context(struct fi_info *h) { h->mode = FI_CONTEXT | FI_CONTEXT2; }
static void h_rx_caps_send(struct fi_info *h) { h->rx_attr->caps = FI_MSG | FI_RECV; }

#define NOCHK .tx_order = ANY, .per_domain = ANY, .inject = (size_t)ANY

static const struct row rows[] = {
	{ "cxip_info.c cxip_alter_info: without hints FI_SOURCE and FI_SOURCE_ERR are removed; every offer "
	  "(provider keys, client keys, then both for FI_PROTO_CXI_RNR) per NIC",
	  .no_hints = true, .per_domain = 4, .caps_in = FI_MSG | FI_TAGGED | FI_RMA | FI_RMA_EVENT | FI_FENCE |
	  FI_MULTI_RECV | FI_DIRECTED_RECV, .caps_out = FI_SOURCE | FI_SOURCE_ERR, .rx_out = NOT_RX | FI_SOURCE |
	  FI_SOURCE_ERR, .tx_out = NOT_TX, .tx_order = ANY, .inject = (size_t)ANY },
	{ "util_attr.c ofi_get_caps: a primary cap only when asked for, secondary caps unless removed; "
	  "cxip_info.c cxip_getinfo: FI_RMA_EVENT and FI_FENCE only when asked for, FI_SOURCE(_ERR) likewise, "
	  "one offer per domain with hints, FI_PROTO_CXI unless another is asked for, tx msg_order = hints'",
	  .caps = FI_MSG, .per_domain = 1, .caps_in = FI_MSG | FI_SEND | FI_RECV | FI_MULTI_RECV | FI_LOCAL_COMM |
	  FI_REMOTE_COMM, .caps_out = FI_SOURCE | FI_SOURCE_ERR | FI_RMA_EVENT | FI_FENCE | FI_TAGGED | FI_RMA |
	  FI_DIRECTED_RECV | FI_READ | FI_WRITE, .rx_out = NOT_RX | FI_SOURCE | FI_SOURCE_ERR | FI_RMA_EVENT,
	  .tx_out = NOT_TX | FI_FENCE, .tx_order = 0, .proto = FI_PROTO_CXI, .inject = 192 },
	{ "cxip_info.c cxip_getinfo: hints with no caps (fi_info -p cxi) keep FI_RMA_EVENT and FI_FENCE, never "
	  "FI_SOURCE",
	  .caps = 0, .per_domain = 1, .caps_in = FI_MSG | FI_TAGGED | FI_RMA | FI_RMA_EVENT | FI_FENCE,
	  .caps_out = FI_SOURCE | FI_SOURCE_ERR, .rx_out = NOT_RX, .tx_out = NOT_TX, .tx_order = 0,
	  .proto = FI_PROTO_CXI, .inject = (size_t)ANY },
	{ "util_attr.c ofi_get_caps: FI_SOURCE only when asked for; cxip_info.c: FI_SOURCE_ERR only when asked for",
	  .caps = FI_MSG | FI_SOURCE, NOCHK, .caps_in = FI_SOURCE, .caps_out = FI_SOURCE_ERR, .rx_in = FI_SOURCE,
	  .rx_out = FI_SOURCE_ERR },
	{ "cxip_info.c cxip_getinfo: FI_SOURCE_ERR with FI_SOURCE",
	  .caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR, NOCHK, .caps_in = FI_SOURCE | FI_SOURCE_ERR,
	  .rx_in = FI_SOURCE | FI_SOURCE_ERR },
	{ "cxip_info.c cxip_getinfo: FI_SOURCE_ERR without FI_SOURCE cannot be honoured: -FI_ENODATA",
	  .caps = FI_MSG | FI_SOURCE_ERR, NOCHK, .ret = -FI_ENODATA },
	{ "cxip_info.c cxip_getinfo: FI_RMA_EVENT when asked for; util: FI_RMA adds the four directions",
	  .caps = FI_RMA | FI_RMA_EVENT, NOCHK, .caps_in = FI_RMA | FI_RMA_EVENT | FI_READ | FI_WRITE |
	  FI_REMOTE_READ | FI_REMOTE_WRITE, .caps_out = FI_MSG | FI_TAGGED, .rx_in = FI_RMA_EVENT | FI_REMOTE_WRITE,
	  .tx_out = FI_RMA_EVENT | FI_REMOTE_WRITE, .mr_in = FI_MR_ENDPOINT | FI_MR_PROV_KEY | FI_MR_ALLOCATED },
	{ "cxip_info.c cxip_getinfo: FI_FENCE when asked for (transmit side only)",
	  .caps = FI_MSG | FI_FENCE, NOCHK, .caps_in = FI_FENCE, .tx_in = FI_FENCE, .rx_out = FI_FENCE },
	{ "cxip_info.c cxip_getinfo: FI_PROTO_CXI_RNR only when asked for (inject_size 0)",
	  .caps = FI_TAGGED | FI_DIRECTED_RECV, .setup = h_rnr, .per_domain = 1, .tx_order = ANY,
	  .proto = FI_PROTO_CXI_RNR, .caps_in = FI_DIRECTED_RECV, .inject = 0, .tag_fmt = 0xaaaaaaaaaaULL },
	{ "cxip_info.c cxip_getinfo: FI_MR_ENDPOINT alone in the hints gets FI_MR_ALLOCATED added",
	  .caps = FI_RMA, .setup = h_mr_endpoint_only, .per_domain = 1, .tx_order = ANY, .inject = (size_t)ANY,
	  .mr_in = FI_MR_ENDPOINT | FI_MR_ALLOCATED },
	{ "util_attr.c ofi_check_mr_mode: an RMA target needs the provider's FI_MR_ENDPOINT: -FI_ENODATA",
	  .caps = FI_MSG | FI_RMA, .setup = h_mr_no_endpoint, NOCHK, .ret = -FI_ENODATA },
	{ "util_attr.c ofi_check_mr_mode: no RMA target (no MR needed): accepted without FI_MR_ENDPOINT",
	  .caps = FI_MSG, .setup = h_mr_no_endpoint, .per_domain = 1, .tx_order = ANY, .inject = (size_t)ANY },
	{ "cxip_info.c cxip_getinfo: the transmit order is the one asked for",
	  .caps = FI_MSG, .setup = h_order_sas, .per_domain = ANY, .inject = (size_t)ANY, .tx_order = FI_ORDER_SAS },
	{ "cxip_info.c (multi auth key offers): auth_key_size FI_AV_AUTH_KEY has no FI_DIRECTED_RECV",
	  .caps = FI_TAGGED, .setup = h_av_auth_key, NOCHK, .caps_out = FI_DIRECTED_RECV, .rx_out = FI_DIRECTED_RECV },
	{ "util_attr.c ofi_get_caps: domain caps: FI_AV_USER_ID (primary) when asked for",
	  .caps = FI_MSG | FI_AV_USER_ID, .setup = h_dom_user_id, NOCHK, .dom_in = FI_AV_USER_ID | FI_LOCAL_COMM |
	  FI_REMOTE_COMM },
	{ "util_attr.c ofi_get_caps: domain caps: FI_AV_USER_ID not asked for, not returned",
	  .caps = FI_MSG, NOCHK, .dom_in = FI_LOCAL_COMM | FI_REMOTE_COMM, .dom_out = FI_AV_USER_ID },
	{ "cxip_info.c: cxi needs no mode bits (FI_CONTEXT / FI_CONTEXT2 accepted, none returned)",
	  .caps = FI_MSG, .setup = h_mode_context, NOCHK },
	{ "util_attr.c ofi_get_caps on the rx attr: rx caps asked for, never transmit-only caps",
	  .caps = FI_MSG, .setup = h_rx_caps_send, NOCHK, .rx_in = FI_MSG | FI_RECV, .rx_out = NOT_RX },
	{ "cxip_info.c: FI_HMEM is not offered here (no device memory): -FI_ENODATA",
	  .caps = FI_MSG | FI_HMEM, NOCHK, .ret = -FI_ENODATA },
};

static void check_row(int i, const struct row *r)
{
	struct fi_info *h = NULL;
	if (!r->no_hints) {
		h = t_hints(r->caps);
		h->mode = 0;
		if (r->setup)
			r->setup(h);
	}
	struct fi_info *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	fi_freeinfo(h);
	bool ok = ret == r->ret;
	int per_dom = 0, n = 0;
	uint64_t bad_in = 0, bad_out = 0;
	long long order = ANY;
	for (struct fi_info *f = info; f; f = f->next) {
		if (strcmp(f->fabric_attr->prov_name, "cxi"))
			continue;
		n++;
		if (!strcmp(f->domain_attr->name, "cxi0"))
			per_dom++;
		bad_in |= (r->caps_in & ~f->caps) | (r->rx_in & ~f->rx_attr->caps) | (r->tx_in & ~f->tx_attr->caps) |
			  (r->dom_in & ~f->domain_attr->caps);
		bad_out |= (r->caps_out & f->caps) | (r->rx_out & f->rx_attr->caps) | (r->tx_out & f->tx_attr->caps) |
			   (r->dom_out & f->domain_attr->caps);
		if (f->mode)
			ok = false;
		if (r->tx_order != ANY && (long long)f->tx_attr->msg_order != r->tx_order)
			order = (long long)f->tx_attr->msg_order;
		if (r->proto && f->ep_attr->protocol != r->proto)
			ok = false;
		if ((f->domain_attr->mr_mode & r->mr_in) != r->mr_in)
			ok = false;
		if (r->inject != (size_t)ANY && f->tx_attr->inject_size != r->inject)
			ok = false;
		if (r->tag_fmt && f->ep_attr->mem_tag_format != r->tag_fmt)
			ok = false;
		if (f->tx_attr->size != 1024 || f->rx_attr->size != 1024)
			ok = false; /* FI_CXI_DEFAULT_TX_SIZE / RX_SIZE when the hints name no size */
	}
	if (r->ret == 0 && (n == 0 || (r->per_domain != ANY && per_dom != r->per_domain)))
		ok = false;
	ok = ok && !bad_in && !bad_out && order == ANY;
	T_CHECK(ok, "row %d: %s (ret %d, %d offers for cxi0, missing %#" PRIx64 ", unexpected %#" PRIx64
		", tx msg_order %#llx)", i, r->rule, ret, per_dom, bad_in, bad_out, order);
	fi_freeinfo(info);
}

/* ---- in-band address exchange without FI_SOURCE / FI_SOURCE_ERR ---- */

static int inband_server(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, FI_MSG);
	T_CHECK(!(t.info->caps & (FI_SOURCE | FI_SOURCE_ERR)), "server: no FI_SOURCE(_ERR) asked, none granted");
	char buf[64];
	struct fi_context ctx;
	T_OK(fi_recv(t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx));
	t_send(c, t.name, 8);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t from = 0;
	int r = t_cq_wait(t.cq, &e, &from, &err, 10.0);
	T_CHECK(r == 1 && e.len == 8 + 5 && !memcmp(buf + 8, "hello", 5),
		"first message from a peer not in the AV is received (r %d, err %d %s)", r, r == 0 ? err.err : 0,
		r == 0 ? fi_strerror(err.err) : "");
	T_CHECK(from == FI_ADDR_NOTAVAIL, "without FI_SOURCE the source is FI_ADDR_NOTAVAIL");
	fi_addr_t peer = t_insert(&t, buf);
	T_OK(fi_send(t.ep, "ack", 3, NULL, peer, &ctx));
	t_cq_expect(t.cq, &e, "server reply");
	t_sync(c);
	t_close(&t);
	return 0;
}

static int inband_client(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_a(l);
	struct t_ep t;
	t_open(&t, FI_MSG);
	char sname[8], msg[16], reply[8] = { 0 };
	t_recv(c, sname, 8);
	fi_addr_t srv = t_insert(&t, sname);
	struct fi_context rctx, sctx;
	T_OK(fi_recv(t.ep, reply, sizeof(reply), NULL, FI_ADDR_UNSPEC, &rctx));
	memcpy(msg, t.name, 8);
	memcpy(msg + 8, "hello", 5);
	T_OK(fi_send(t.ep, msg, 13, NULL, srv, &sctx));
	struct fi_cq_tagged_entry e;
	int got = 0;
	for (int i = 0; i < 2; i++) {
		t_cq_expect(t.cq, &e, "client send/recv");
		if (e.flags & FI_RECV)
			got = e.len == 3 && !memcmp(reply, "ack", 3);
	}
	T_CHECK(got, "client: the server answered after learning our address from the message");
	t_sync(c);
	t_close(&t);
	return 0;
}

/* ---- fi_cq_signal ---- */

struct sread_arg {
	struct fid_cq *cq;
	long ret;
	double took;
};

static void *sread_thread(void *p)
{
	struct sread_arg *a = p;
	struct fi_cq_tagged_entry e;
	double t0 = t_now();
	a->ret = fi_cq_sread(a->cq, &e, 1, NULL, 20000);
	a->took = t_now() - t0;
	return NULL;
}

static void check_cq_signal(void)
{
	struct t_ep t;
	t_open(&t, FI_MSG);
	struct sread_arg a = { .cq = t.cq };
	pthread_t th;
	pthread_create(&th, NULL, sread_thread, &a);
	usleep(200000);
	double t0 = t_now();
	T_OK(fi_cq_signal(t.cq));
	pthread_join(th, NULL);
	double woke = t_now() - t0;
	T_CHECK(a.ret == -FI_EAGAIN && woke < 2.0,
		"fi_cq_signal wakes a thread in fi_cq_sread(20 s), which returns -FI_EAGAIN (%ld after %.3f s)", a.ret,
		a.took);
	/* A signal with nobody waiting makes the next sread return at once; the one after that waits. */
	T_OK(fi_cq_signal(t.cq));
	struct fi_cq_tagged_entry e;
	t0 = t_now();
	long r1 = fi_cq_sread(t.cq, &e, 1, NULL, 5000);
	double d1 = t_now() - t0;
	t0 = t_now();
	long r2 = fi_cq_sread(t.cq, &e, 1, NULL, 200);
	double d2 = t_now() - t0;
	/* The second sread times out after 200 ms: of wall time in realtime mode, of virtual time in virtual
	 * mode -- which is also what t_now() reads there (the clock interposer `cxisim exec` preloads). */
	T_CHECK(r1 == -FI_EAGAIN && d1 < 1.0 && r2 == -FI_EAGAIN && d2 >= 0.15 && (!t_virtual_time() || d2 < 1.0),
		"a signal is consumed by one sread (%ld in %.3f s, then %ld after %.3f s)", r1, d1, r2, d2);
	t_close(&t);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		check_row((int)i, &rows[i]);
	struct t_link l;
	t_link_init(&l);
	pid_t s = t_fork(inband_server, &l, "server");
	pid_t c = t_fork(inband_client, &l, "client");
	t_join(s, "server");
	t_join(c, "client");
	check_cq_signal();
	return t_finish("prov_getinfo");
}
