/* ofi_rpc_server: a libfabric RPC server that behaves as a Mercury 2.4 server does on cxi (wire format in
 * ofi_rpc.h): requests land in FI_MULTI_RECV buffers (reposted when the provider retires them) or in
 * standard posted receives; sources come from FI_SOURCE, and a client it has never seen arrives through
 * FI_SOURCE_ERR (FI_EADDRNOTAVAIL, its address in err_data), is inserted into the AV and answered; with
 * --header-source it reads the client's address from the request instead (Mercury without FI_SOURCE).
 * Replies are tagged sends of the request's tag; bulk requests pull (RMA read, bytes checked) or push (RMA
 * write) the client's region before the reply.
 *
 * It measures itself with CLOCK_MONOTONIC from its first request to its last reply (under cxisim's clock
 * interposer that is virtual time) and prints one line:
 *   ofi_rpc_server: served N requests from C clients in T s: R RPC/s; av A entries; bulk read X B (bad Y),
 *   written Z B; errors E
 */
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include "ofi_rpc.h"

enum ctx_kind { CTX_RBUF = 1, CTX_OP };

struct rbuf {
	struct fi_context ctx; /* FI_CONTEXT: the provider's, first */
	int kind;
	char *buf;
	size_t len;
};

struct op {
	struct fi_context ctx;
	int kind;
	bool rma_done;
	fi_addr_t src;
	uint64_t tag;
	struct rpc_req req;
	struct rpc_resp resp;
	uint8_t *bulk;
	struct op *next_free;
	struct op *next_all; /* every op made, freed at exit (also those still in flight when it stops) */
};

static struct {
	struct rpc_fab f;
	bool multi_recv, header_source, prov_keys, quiet;
	size_t nbufs, buf_bytes, max_bulk;
	uint64_t target;
	double seconds;
	struct rbuf *bufs;
	struct op *free_ops, *all_ops;
	uint64_t served, av_inserts, bulk_read, bulk_bad, bulk_written, errors, bad_requests, source_errs;
	double t_first, t_last;
	/* --header-source: known addresses (first 32 bits -> fi_addr), open addressing */
	uint32_t *known_key;
	fi_addr_t *known_val;
	size_t known_cap;
	volatile sig_atomic_t stop;
} S;

static void on_signal(int sig)
{
	(void)sig;
	S.stop = 1;
}

static void post(struct rbuf *b)
{
	for (;;) {
		ssize_t rc;
		if (S.multi_recv) {
			struct iovec iov = { b->buf, b->len };
			struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = b };
			rc = fi_recvmsg(S.f.ep, &m, FI_MULTI_RECV);
		} else {
			rc = fi_recv(S.f.ep, b->buf, b->len, NULL, FI_ADDR_UNSPEC, b);
		}
		if (rc != -FI_EAGAIN) {
			RPC_CHECK(rc);
			return;
		}
		fi_cq_read(S.f.cq, NULL, 0); /* progress */
	}
}

static struct op *op_get(void)
{
	struct op *o = S.free_ops;
	if (o) {
		S.free_ops = o->next_free;
	} else {
		o = calloc(1, sizeof(*o)); /* its bulk buffer on its first bulk request (op_bulk) */
		if (!o) {
			perror("calloc");
			exit(1);
		}
		o->next_all = S.all_ops;
		S.all_ops = o;
	}
	o->kind = CTX_OP;
	o->rma_done = false;
	return o;
}

/* The bulk buffer of an op, made when it first serves a bulk request: a buffer of --max-bulk (1 MiB) for
 * every op is an mmap per op, and a server that meets thousands of clients at once (all their first
 * requests in its CQ before any reply completes) made thousands of them in its first round. */
static uint8_t *op_bulk(struct op *o)
{
	if (!o->bulk && !(o->bulk = malloc(S.max_bulk))) {
		perror("malloc");
		exit(1);
	}
	return o->bulk;
}

static void op_put(struct op *o)
{
	o->next_free = S.free_ops;
	S.free_ops = o;
}

/* Header-source mode: the AV entry of an address read from a request. */
static fi_addr_t known_addr(const uint8_t *name)
{
	uint32_t k;
	memcpy(&k, name, 4);
	k |= 1u << 31; /* never 0: 0 marks an empty slot (address bit 31 is padding) */
	if (S.av_inserts * 2 >= S.known_cap) {
		size_t ncap = S.known_cap ? S.known_cap * 2 : 1024;
		uint32_t *nk = calloc(ncap, sizeof(*nk));
		fi_addr_t *nv = calloc(ncap, sizeof(*nv));
		for (size_t i = 0; i < S.known_cap; i++)
			if (S.known_key[i]) {
				size_t j = (S.known_key[i] * 2654435761u) & (ncap - 1);
				while (nk[j])
					j = (j + 1) & (ncap - 1);
				nk[j] = S.known_key[i];
				nv[j] = S.known_val[i];
			}
		free(S.known_key);
		free(S.known_val);
		S.known_key = nk;
		S.known_val = nv;
		S.known_cap = ncap;
	}
	size_t j = (k * 2654435761u) & (S.known_cap - 1);
	while (S.known_key[j] && S.known_key[j] != k)
		j = (j + 1) & (S.known_cap - 1);
	if (!S.known_key[j]) {
		fi_addr_t a = FI_ADDR_NOTAVAIL;
		if (fi_av_insert(S.f.av, name, 1, &a, 0, NULL) != 1) {
			S.errors++;
			return FI_ADDR_NOTAVAIL;
		}
		S.av_inserts++;
		S.known_key[j] = k;
		S.known_val[j] = a;
	}
	return S.known_val[j];
}

static void reply(struct op *o, int status)
{
	o->resp = (struct rpc_resp){ .magic = RPC_RESP_MAGIC, .status = status, .bytes = o->req.op ? o->req.len : 0 };
	ssize_t rc;
	while ((rc = fi_tsend(S.f.ep, &o->resp, sizeof(o->resp), NULL, o->src, o->tag, o)) == -FI_EAGAIN)
		fi_cq_read(S.f.cq, NULL, 0);
	RPC_CHECK(rc);
}

static void request(const void *buf, size_t len, uint64_t flags, uint64_t data, uint64_t tag, fi_addr_t src)
{
	if (!S.t_first)
		S.t_first = rpc_now();
	struct op *o = op_get();
	memset(&o->req, 0, sizeof(o->req));
	memcpy(&o->req, buf, len < sizeof(o->req) ? len : sizeof(o->req));
	/* Mercury: the tag of the reply travels in the immediate data (fi_senddata), else in the tag's low bits. */
	o->tag = (flags & FI_REMOTE_CQ_DATA) ? data : tag & 0xffffffffULL;
	o->src = S.header_source ? known_addr(o->req.src) : src;
	if (o->src == FI_ADDR_NOTAVAIL) {
		S.errors++;
		op_put(o);
		return;
	}
	if (len < sizeof(o->req) - sizeof(o->req.src) || o->req.magic != RPC_REQ_MAGIC || o->req.op > RPC_OP_PUSH ||
	    (o->req.op && o->req.len > S.max_bulk)) {
		S.bad_requests++;
		o->req.op = RPC_OP_NULL;
		reply(o, -FI_EINVAL);
		return;
	}
	ssize_t rc;
	switch (o->req.op) {
	case RPC_OP_PULL:
		op_bulk(o);
		while ((rc = fi_read(S.f.ep, o->bulk, o->req.len, NULL, o->src, o->req.offset, o->req.key, o)) == -FI_EAGAIN)
			fi_cq_read(S.f.cq, NULL, 0);
		RPC_CHECK(rc);
		return;
	case RPC_OP_PUSH:
		op_bulk(o);
		for (uint32_t i = 0; i < o->req.len; i++)
			o->bulk[i] = rpc_pattern(o->req.seed ^ RPC_PUSH_SEED, o->req.offset + i);
		while ((rc = fi_write(S.f.ep, o->bulk, o->req.len, NULL, o->src, o->req.offset, o->req.key, o)) ==
		       -FI_EAGAIN)
			fi_cq_read(S.f.cq, NULL, 0);
		RPC_CHECK(rc);
		return;
	default:
		reply(o, 0);
	}
}

static void rma_done(struct op *o, int err)
{
	o->rma_done = true;
	int status = -err;
	if (!err && o->req.op == RPC_OP_PULL) {
		S.bulk_read += o->req.len;
		for (uint32_t i = 0; i < o->req.len; i++)
			if (o->bulk[i] != rpc_pattern(o->req.seed, o->req.offset + i)) {
				S.bulk_bad++;
				status = -FI_EIO;
			}
	} else if (!err) {
		S.bulk_written += o->req.len;
	}
	if (err)
		S.errors++;
	reply(o, status);
}

/* A receive completion (or the error one of an unknown source, already inserted). */
static void received(void *ctx, const void *buf, size_t len, uint64_t flags, uint64_t data, uint64_t tag,
		     fi_addr_t src)
{
	struct rbuf *b = ctx;
	if (len)
		request(S.multi_recv ? buf : b->buf, len, flags, data, tag, src);
	/* A standard receive is done; a multi-recv buffer when the provider retires it. */
	if (!S.multi_recv || (flags & FI_MULTI_RECV))
		post(b);
}

static void completion(const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	int kind = ((const struct rbuf *)e->op_context)->kind;
	if (kind == CTX_RBUF) {
		received(e->op_context, e->buf, e->len, e->flags, e->data, e->tag, src);
		return;
	}
	struct op *o = e->op_context;
	if (o->req.op && !o->rma_done) {
		rma_done(o, 0);
		return;
	}
	S.served++;
	op_put(o);
}

static void error_completion(void)
{
	struct fi_cq_err_entry err;
	uint8_t err_data[64];
	memset(&err, 0, sizeof(err));
	err.err_data = err_data;
	err.err_data_size = sizeof(err_data);
	if (fi_cq_readerr(S.f.cq, &err, 0) != 1)
		return;
	int kind = ((const struct rbuf *)err.op_context)->kind;
	if (kind == CTX_RBUF) {
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		if (err.err == FI_EADDRNOTAVAIL) {
			/* A client never seen: its address is in err_data; the message itself was delivered. */
			S.source_errs++;
			if (!S.header_source) {
				if (fi_av_insert(S.f.av, err.err_data, 1, &src, 0, NULL) == 1)
					S.av_inserts++;
				else
					S.errors++;
			}
			received(err.op_context, err.buf, err.len, err.flags, err.data, err.tag, src);
			return;
		}
		if (err.err != FI_ECANCELED)
			S.errors++;
		received(err.op_context, NULL, 0, err.flags, 0, 0, src);
		return;
	}
	struct op *o = err.op_context;
	if (o->req.op && !o->rma_done) {
		rma_done(o, err.err);
		return;
	}
	S.errors++; /* the reply could not be sent */
	op_put(o);
}

static void write_name(const char *path)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *fp = fopen(tmp, "w");
	if (!fp) {
		perror(tmp);
		exit(1);
	}
	for (size_t i = 0; i < S.f.namelen; i++)
		fprintf(fp, "%02x", S.f.name[i]);
	fprintf(fp, "\n");
	fclose(fp);
	if (rename(tmp, path)) {
		perror(path);
		exit(1);
	}
}

static void usage(void)
{
	fputs("usage: ofi_rpc_server [--multi-recv N] [--buffer-bytes B] [--posted N] [--requests N] [--seconds S]\n"
	      "                      [--header-source] [--prov-keys] [--name-file FILE] [--max-bulk B]\n"
	      "  --multi-recv N    N FI_MULTI_RECV buffers (default 4, as Mercury); 0: standard receives\n"
	      "  --buffer-bytes B  multi-recv buffer size (default 2 MiB) or standard receive size (4096)\n"
	      "  --posted N        standard receives posted (default 512, Mercury's HG_CORE_POST_INIT)\n"
	      "  --requests N      exit after replying to N requests; --seconds S: after S s from the first\n"
	      "  --header-source   no FI_SOURCE: clients put their address in the request (rpc_req.src)\n"
	      "  --prov-keys       FI_MR_PROV_KEY domain (64-bit keys), as clients with --prov-keys need\n"
	      "  --name-file FILE  write the endpoint's address (hex) there once it can receive\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "multi-recv", required_argument, 0, 'm' }, { "buffer-bytes", required_argument, 0, 'b' },
		{ "posted", required_argument, 0, 'p' },     { "requests", required_argument, 0, 'n' },
		{ "seconds", required_argument, 0, 's' },    { "header-source", no_argument, 0, 'H' },
		{ "name-file", required_argument, 0, 'f' },  { "max-bulk", required_argument, 0, 'B' },
		{ "quiet", no_argument, 0, 'q' },            { "prov-keys", no_argument, 0, 'P' },
		{ 0, 0, 0, 0 },
	};
	long mr = 4, posted = 512, bytes = -1;
	const char *name_file = NULL;
	S.max_bulk = 1 << 20;
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mr = atol(optarg); break;
		case 'b': bytes = atol(optarg); break;
		case 'p': posted = atol(optarg); break;
		case 'n': S.target = strtoull(optarg, NULL, 0); break;
		case 's': S.seconds = atof(optarg); break;
		case 'H': S.header_source = true; break;
		case 'f': name_file = optarg; break;
		case 'B': S.max_bulk = strtoull(optarg, NULL, 0); break;
		case 'q': S.quiet = true; break;
		case 'P': S.prov_keys = true; break;
		default: usage();
		}
	}
	if (optind != argc || mr < 0 || posted < 1)
		usage();
	S.multi_recv = mr > 0;
	S.nbufs = S.multi_recv ? (size_t)mr : (size_t)posted;
	S.buf_bytes = bytes > 0 ? (size_t)bytes : S.multi_recv ? 2u << 20 : 4096;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	uint64_t caps = FI_MSG | FI_TAGGED | FI_RMA | (S.multi_recv ? FI_MULTI_RECV : 0) |
			(S.header_source ? 0 : FI_SOURCE | FI_SOURCE_ERR);
	rpc_fab_open(&S.f, caps, S.prov_keys, 16384);
	if (S.multi_recv) {
		size_t min = 4096;
		RPC_CHECK(fi_setopt(&S.f.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	}
	rpc_fab_enable(&S.f);
	S.bufs = calloc(S.nbufs, sizeof(*S.bufs));
	for (size_t i = 0; i < S.nbufs; i++) {
		S.bufs[i].kind = CTX_RBUF;
		S.bufs[i].len = S.buf_bytes;
		S.bufs[i].buf = malloc(S.buf_bytes);
		if (!S.bufs[i].buf) {
			perror("malloc");
			return 1;
		}
		post(&S.bufs[i]);
	}
	if (name_file)
		write_name(name_file);
	struct fi_cq_tagged_entry ev[16];
	fi_addr_t src[16];
	/* One clock read per batch of completions, as a progress loop reads it (Mercury: once per progress
	 * call), not one per reply: the time of the last reply is the end of the batch it completed in. */
	while (!S.stop && !(S.target && S.served >= S.target)) {
		ssize_t n = S.header_source ? fi_cq_read(S.f.cq, ev, 16) : fi_cq_readfrom(S.f.cq, ev, 16, src);
		if (n > 0) {
			uint64_t served = S.served;
			for (ssize_t i = 0; i < n; i++)
				completion(&ev[i], S.header_source ? FI_ADDR_NOTAVAIL : src[i]);
			if (S.served != served || S.seconds > 0) {
				double now = rpc_now();
				if (S.served != served)
					S.t_last = now;
				if (S.seconds > 0 && S.t_first && now - S.t_first >= S.seconds)
					break;
			}
		} else if (n == -FI_EAVAIL) {
			error_completion();
		} else if (n == -FI_EAGAIN) {
			if (S.seconds > 0 && S.t_first && rpc_now() - S.t_first >= S.seconds)
				break;
			rpc_cq_sleep(&S.f, 100);
		} else {
			RPC_CHECK(n);
		}
	}
	double span = S.t_last > S.t_first ? S.t_last - S.t_first : 0;
	printf("ofi_rpc_server: served %" PRIu64 " requests from %" PRIu64 " clients in %.6f s: %.1f RPC/s; av %" PRIu64
	       " entries; bulk read %" PRIu64 " B (bad %" PRIu64 "), written %" PRIu64 " B; errors %" PRIu64
	       "; bad requests %" PRIu64 "; source errors %" PRIu64 "\n",
	       S.served, S.av_inserts, span, span > 0 ? (double)S.served / span : 0.0, S.av_inserts, S.bulk_read,
	       S.bulk_bad, S.bulk_written, S.errors, S.bad_requests, S.source_errs);
	fflush(stdout);
	rpc_fab_close(&S.f);
	for (size_t i = 0; i < S.nbufs; i++)
		free(S.bufs[i].buf);
	free(S.bufs);
	while (S.all_ops) {
		struct op *o = S.all_ops;
		S.all_ops = o->next_all;
		free(o->bulk);
		free(o);
	}
	free(S.known_key);
	free(S.known_val);
	return S.errors || S.bulk_bad ? 1 : 0;
}
