/* ofi_rpc_client: the client of ofi_rpc_server (wire format in ofi_rpc.h), as a Mercury client behaves:
 * per RPC it posts a tagged receive for the response and sends the request with fi_senddata, the tag in
 * the immediate data; up to --in-flight RPCs outstanding.  Bulk RPCs name one of its two regions,
 * registered once at start: "pull" (the server reads it; filled with the client's pattern) and "push" (the
 * server writes it; the client checks the bytes after the response).  It closes its regions before it
 * exits, and prints:
 *   ofi_rpc_client: N requests, W in flight: answered A, errors E, bulk bad B
 */
#include <getopt.h>
#include <unistd.h>

#include "ofi_rpc.h"

struct slot {
	struct fi_context rctx, sctx;
	uint64_t tag;
	uint32_t op;
	uint64_t offset;
	bool sent, answered;
	char *req;
	struct rpc_resp resp;
};

static struct rpc_fab F;
static fi_addr_t server;
static uint64_t answered, errors, bulk_bad, next_tag = 1;
static size_t req_bytes = 64, bulk_bytes = 4096;
static uint32_t seed = 1;
static bool header_source;
static uint8_t *pull_buf, *push_buf;
static uint64_t pull_key, push_key;

static void read_server(const char *path)
{
	/* The server is another process, outside the simulation: wait in real time (rpc_real_now). */
	double end = rpc_real_now() + 30;
	FILE *fp;
	while (!(fp = fopen(path, "r"))) {
		if (rpc_real_now() > end) {
			fprintf(stderr, "ofi_rpc_client: no server name in %s\n", path);
			exit(1);
		}
		rpc_real_sleep_ms(10);
	}
	unsigned char name[8] = { 0 };
	unsigned v;
	size_t n = 0;
	while (n < sizeof(name) && fscanf(fp, "%2x", &v) == 1)
		name[n++] = (unsigned char)v;
	fclose(fp);
	if (fi_av_insert(F.av, name, 1, &server, 0, NULL) != 1) {
		fprintf(stderr, "ofi_rpc_client: bad server address in %s\n", path);
		exit(1);
	}
}

static void start(struct slot *s, uint32_t op, uint32_t index)
{
	s->tag = next_tag++ & 0xffffffffULL;
	s->op = op;
	s->offset = (uint64_t)index * bulk_bytes;
	s->sent = s->answered = false;
	struct rpc_req r = { .magic = RPC_REQ_MAGIC, .op = op, .seed = seed };
	if (op) {
		r.key = op == RPC_OP_PULL ? pull_key : push_key;
		r.offset = s->offset;
		r.len = (uint32_t)bulk_bytes;
	}
	if (header_source)
		memcpy(r.src, F.name, sizeof(r.src));
	memcpy(s->req, &r, sizeof(r));
	ssize_t rc;
	while ((rc = fi_trecv(F.ep, &s->resp, sizeof(s->resp), NULL, server, s->tag, 0, &s->rctx)) == -FI_EAGAIN)
		fi_cq_read(F.cq, NULL, 0);
	RPC_CHECK(rc);
	while ((rc = fi_senddata(F.ep, s->req, req_bytes, NULL, s->tag, server, &s->sctx)) == -FI_EAGAIN)
		fi_cq_read(F.cq, NULL, 0);
	RPC_CHECK(rc);
}

static void check_answer(struct slot *s)
{
	if (s->resp.magic != RPC_RESP_MAGIC || s->resp.status) {
		errors++;
		return;
	}
	if (s->op == RPC_OP_PUSH)
		for (size_t i = 0; i < bulk_bytes; i++)
			if (push_buf[s->offset + i] != rpc_pattern(seed ^ RPC_PUSH_SEED, s->offset + i))
				bulk_bad++;
	answered++;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server-file", required_argument, 0, 'f' }, { "requests", required_argument, 0, 'n' },
		{ "in-flight", required_argument, 0, 'w' },   { "size", required_argument, 0, 'S' },
		{ "bulk", required_argument, 0, 'b' },        { "bulk-bytes", required_argument, 0, 'B' },
		{ "prov-keys", no_argument, 0, 'P' },         { "header-source", no_argument, 0, 'H' },
		{ "seed", required_argument, 0, 's' },        { "timeout", required_argument, 0, 't' },
		{ 0, 0, 0, 0 },
	};
	const char *server_file = NULL, *bulk = "none";
	uint64_t nreq = 100;
	uint32_t W = 1;
	bool prov_keys = false;
	double timeout = 60, last = 0;
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'f': server_file = optarg; break;
		case 'n': nreq = strtoull(optarg, NULL, 0); break;
		case 'w': W = (uint32_t)atoi(optarg); break;
		case 'S': req_bytes = strtoull(optarg, NULL, 0); break;
		case 'b': bulk = optarg; break;
		case 'B': bulk_bytes = strtoull(optarg, NULL, 0); break;
		case 'P': prov_keys = true; break;
		case 'H': header_source = true; break;
		case 's': seed = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': timeout = atof(optarg); break;
		default:
			fputs("usage: ofi_rpc_client --server-file FILE [--requests N] [--in-flight W] [--size B]\n"
			      "       [--bulk none|pull|push|both] [--bulk-bytes B] [--prov-keys] [--header-source] [--seed S]\n"
			      "       [--timeout S]   (give up after S s without a completion, default 60)\n",
			      stderr);
			return 2;
		}
	}
	if (!server_file || !W || req_bytes < sizeof(struct rpc_req))
		return fprintf(stderr, "ofi_rpc_client: --server-file needed, --size >= %zu\n", sizeof(struct rpc_req)), 2;
	bool pull = !strcmp(bulk, "pull") || !strcmp(bulk, "both"), push = !strcmp(bulk, "push") || !strcmp(bulk, "both");
	rpc_fab_open(&F, FI_MSG | FI_TAGGED | FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE, prov_keys, 1024);
	rpc_fab_enable(&F);
	read_server(server_file);
	size_t region = (size_t)W * bulk_bytes;
	pull_buf = calloc(1, region);
	push_buf = calloc(1, region);
	for (size_t i = 0; i < region; i++)
		pull_buf[i] = rpc_pattern(seed, i);
	struct fid_mr *mrs[2] = { 0 };
	int nmr = 0;
	if (pull) {
		RPC_CHECK(fi_mr_reg(F.dom, pull_buf, region, FI_REMOTE_READ, 0, RPC_KEY_PULL, 0, &mrs[nmr], NULL));
		RPC_CHECK(fi_mr_bind(mrs[nmr], &F.ep->fid, 0));
		RPC_CHECK(fi_mr_enable(mrs[nmr]));
		pull_key = fi_mr_key(mrs[nmr++]);
	}
	if (push) {
		RPC_CHECK(fi_mr_reg(F.dom, push_buf, region, FI_REMOTE_WRITE, 0, RPC_KEY_PUSH, 0, &mrs[nmr], NULL));
		RPC_CHECK(fi_mr_bind(mrs[nmr], &F.ep->fid, 0));
		RPC_CHECK(fi_mr_enable(mrs[nmr]));
		push_key = fi_mr_key(mrs[nmr++]);
	}
	struct slot *slots = calloc(W, sizeof(*slots));
	uint64_t started = 0;
	for (uint32_t i = 0; i < W && started < nreq; i++, started++) {
		slots[i].req = calloc(1, req_bytes);
		uint32_t op = pull && push ? (started % 2 ? RPC_OP_PUSH : RPC_OP_PULL) : pull ? RPC_OP_PULL : push ? RPC_OP_PUSH : 0;
		start(&slots[i], op, i);
	}
	uint64_t done = 0;
	last = rpc_now();
	while (done < started) {
		if (rpc_now() - last > timeout) {
			fprintf(stderr, "ofi_rpc_client: no completion for %.0f s: giving up\n", timeout);
			errors++;
			break;
		}
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(F.cq, &e, 1);
		struct slot *s = NULL;
		if (n == 1 || n == -FI_EAVAIL)
			last = rpc_now();
		if (n == 1) {
			for (uint32_t i = 0; i < W && !s; i++)
				if (e.op_context == &slots[i].rctx || e.op_context == &slots[i].sctx)
					s = &slots[i];
			if (!s)
				continue;
			if (e.op_context == &s->rctx) {
				s->answered = true;
				check_answer(s);
			} else {
				s->sent = true;
			}
		} else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(F.cq, &err, 0);
			fprintf(stderr, "ofi_rpc_client: error completion %d (%s)\n", err.err, fi_strerror(err.err));
			errors++;
			for (uint32_t i = 0; i < W && !s; i++)
				if (err.op_context == &slots[i].rctx || err.op_context == &slots[i].sctx)
					s = &slots[i];
			if (!s)
				continue;
			s->sent = s->answered = true;
		} else if (n == -FI_EAGAIN) {
			rpc_cq_sleep(&F, 100);
			continue;
		} else {
			RPC_CHECK(n);
		}
		if (s && s->sent && s->answered) {
			done++;
			if (started < nreq) {
				uint32_t op = pull && push ? (started % 2 ? RPC_OP_PUSH : RPC_OP_PULL) : pull ? RPC_OP_PULL : push ? RPC_OP_PUSH : 0;
				start(s, op, (uint32_t)(s - slots));
				started++;
			}
		}
	}
	/* Closing the regions lets a capture record what the server wrote into them. */
	for (int i = 0; i < nmr; i++)
		fi_close(&mrs[i]->fid);
	printf("ofi_rpc_client: %" PRIu64 " requests, %u in flight: answered %" PRIu64 ", errors %" PRIu64
	       ", bulk bad %" PRIu64 "\n", nreq, W, answered, errors, bulk_bad);
	for (uint32_t i = 0; i < W; i++)
		free(slots[i].req);
	free(slots);
	free(pull_buf);
	free(push_buf);
	rpc_fab_close(&F);
	return errors || bulk_bad || answered != nreq ? 1 : 0;
}
