/* Capture files (format, checks), the replay script built from them (server, request/response linking,
 * address offsets, memory regions), and the replay workload in the engine against an endpoint of the test's
 * own that answers as a server does (each request answered exactly once; a server that answers twice is
 * caught; bulk bytes both ways). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../sim/cxisimd/proto.h"
#include "../../sim/workload/capture.h"
#include "../../sim/workload/replay.h"
#include "../../sim/workload/replay_script.h"
#include "nic_swlib.h"

/* ---------------------------------------------------------------------------------------- helpers */

static char *tmp_path(const char *tag)
{
	static char buf[4][256];
	static int i;
	char *p = buf[i++ % 4];
	snprintf(p, 256, "/tmp/cxisim-test-%s-%d.cxcap", tag, (int)getpid());
	return p;
}

static void w_ep(struct cap_writer *w, uint32_t id, uint32_t proc, uint32_t nic, uint16_t pid, uint32_t flags)
{
	struct cap_ep e = { .ep = id, .proc = proc, .nic = nic, .pid = pid, .vni = 10, .ep_flags = flags };
	cap_write(w, CAP_EP, &e, NULL, 0);
}

static void w_proc(struct cap_writer *w, uint32_t id, const char *name)
{
	struct cap_proc p = { .proc = id, .rank = -1 };
	snprintf(p.progname, sizeof(p.progname), "%s", name);
	cap_write(w, CAP_PROC, &p, NULL, 0);
}

static void w_recv(struct cap_writer *w, uint32_t ep, uint64_t tag, uint64_t len)
{
	struct cap_recv r = { .ep = ep, .flags = CAPF_TAGGED, .tag = tag, .len = len };
	cap_write(w, CAP_RECV, &r, NULL, 0);
}

static void w_send(struct cap_writer *w, uint32_t ep, uint32_t dst_nic, uint32_t flags, uint64_t tag, uint64_t data,
		   const void *payload, uint64_t len, uint64_t think)
{
	struct cap_send m = { .ep = ep, .flags = flags, .dst_nic = dst_nic, .dst_vni = 10, .tag = tag, .data = data,
			      .len = len, .payload_len = len, .think = think };
	cap_write(w, CAP_SEND, &m, payload, len);
}

struct req {
	uint32_t magic, op;
	uint64_t key, offset;
	uint32_t len, seed;
	uint32_t addr; /* the client's own address (header source) */
	uint32_t pad;
};

#define SERVER_NIC 1
#define CLIENT_A 3
#define CLIENT_B 4
#define REGION 256

static uint8_t pattern(uint64_t i, uint8_t salt)
{
	return (uint8_t)(i * 13 + salt);
}

/* A server (NIC 1) and two clients, each with its own address at payload offset 32: A (NIC 3) sends with
 * fi_senddata, the reply tag in the data, and exposes a region (key 7) read by the server, and a region
 * (key 8) the server writes; B (NIC 4) uses Mercury's tagged variant (tag | 1 << 32, reply tag in the low
 * 32 bits). */
static void write_sample(const char *path)
{
	char err[256];
	struct cap_writer *w = cap_writer_open(path, err, sizeof(err));
	cr_assert(w, "%s", err);
	w_proc(w, 1, "server");
	w_proc(w, 2, "client");
	w_ep(w, 1, 1, SERVER_NIC, 0, 0);
	w_ep(w, 2, 2, CLIENT_A, 0, EPF_OPTIMIZED_MRS);
	w_ep(w, 3, 2, CLIENT_B, 0, 0);
	static uint8_t rd[REGION], wr[REGION];
	for (int i = 0; i < REGION; i++) {
		rd[i] = pattern((uint64_t)i, 1);
		wr[i] = pattern((uint64_t)i, 2);
	}
	struct cap_mr m = { .mr = 1, .ep = 2, .key = 7, .addr = 0x10000, .len = REGION, .access = MRF_REMOTE_READ };
	cap_write(w, CAP_MR, &m, NULL, 0);
	struct cap_mr m2 = { .mr = 2, .ep = 2, .key = 8, .addr = 0x20000, .len = REGION, .access = MRF_REMOTE_WRITE };
	cap_write(w, CAP_MR, &m2, NULL, 0);
	struct cap_mr_image im = { .mr = 1, .kind = CAP_IMAGE_EXPOSED, .bytes = REGION };
	cap_write(w, CAP_MR_IMAGE, &im, rd, REGION);
	for (uint64_t k = 1; k <= 3; k++) {
		/* pad: a field that holds one client's address by chance, the same in every request */
		struct req r = { .magic = 0x51, .op = (uint32_t)k, .key = k == 1 ? 7 : 8, .len = 64,
				 .offset = 16 * k, .addr = rq_cxi_addr32(CLIENT_A, 0), .pad = rq_cxi_addr32(CLIENT_A, 0) };
		w_recv(w, 2, 100 + k, 64);
		w_send(w, 2, SERVER_NIC, CAPF_CQ_DATA, 0, 100 + k, &r, sizeof(r), SIM_NS(50) * k);
		struct req rb = { .magic = 0x52, .addr = rq_cxi_addr32(CLIENT_B, 0), .pad = rq_cxi_addr32(CLIENT_A, 0) };
		w_recv(w, 3, 200 + k, 32);
		w_send(w, 3, SERVER_NIC, CAPF_TAGGED, (1ULL << 32) | (200 + k), 0, &rb, sizeof(rb), 0);
		/* the server's responses */
		w_send(w, 1, CLIENT_A, CAPF_TAGGED, 100 + k, 0, "ok", 2, 0);
	}
	struct cap_mr_image im2 = { .mr = 2, .kind = CAP_IMAGE_CLOSED, .bytes = REGION };
	cap_write(w, CAP_MR_IMAGE, &im2, wr, REGION);
	cr_assert_eq(cap_writer_close(w), 0);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(*len);
	cr_assert_eq(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

static void spit(const char *path, const unsigned char *b, size_t len)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f);
	cr_assert_eq(fwrite(b, 1, len, f), len);
	fclose(f);
}

/* ---------------------------------------------------------------------------------------- format */

Test(capture, round_trip_and_every_truncation_refused)
{
	const char *p = tmp_path("rt");
	write_sample(p);
	struct cap_file f;
	char err[256];
	cr_assert_eq(cap_open(p, &f, err, sizeof(err)), 0, "%s", err);
	size_t off = 0, n = 0, sends = 0;
	struct cap_rec r;
	while (cap_next(&f, &off, &r)) {
		n++;
		if (r.type == CAP_SEND) {
			struct cap_send m;
			memcpy(&m, r.fixed, sizeof(m));
			cr_assert_eq(r.var_len, m.payload_len);
			sends++;
		}
	}
	cr_assert_eq(n, f.records);
	cr_assert_eq(sends, 9);
	size_t len;
	unsigned char *b = slurp(p, &len);
	cap_close(&f);
	const char *q = tmp_path("cut");
	for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : 7)) {
		spit(q, b, cut);
		cr_assert_eq(cap_open(q, &f, err, sizeof(err)), -1, "a file cut at %zu bytes was accepted", cut);
		cr_assert(strstr(err, "truncated") || strstr(err, "not a cxisim capture") || strstr(err, "corrupt"),
			  "cut at %zu: %s", cut, err);
	}
	/* A flipped byte in the middle: the checksum says so. */
	b[len / 2] ^= 0x40;
	spit(q, b, len);
	cr_assert_eq(cap_open(q, &f, err, sizeof(err)), -1);
	cr_assert(strstr(err, "corrupt"), "%s", err);
	b[len / 2] ^= 0x40;
	/* Another version. */
	b[8] = 9;
	spit(q, b, len);
	cr_assert_eq(cap_open(q, &f, err, sizeof(err)), -1);
	cr_assert(strstr(err, "version 9"), "%s", err);
	spit(q, (const unsigned char *)"{\"json\": 1}\n", 12);
	cr_assert_eq(cap_open(q, &f, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a cxisim capture"), "%s", err);
	free(b);
	unlink(p);
	unlink(q);
}

/* ---------------------------------------------------------------------------------------- script */

Test(replay_script, links_responses_finds_addresses_and_regions)
{
	const char *p = tmp_path("script");
	write_sample(p);
	struct replay_script s;
	char err[256];
	struct replay_script_opts o = { .addr_offsets_auto = true };
	cr_assert_eq(replay_script_load(p, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.server_nic, SERVER_NIC, "the destination of the most clients");
	cr_assert_str_eq(s.server_prog, "server");
	cr_assert_eq(s.nstreams, 2);
	cr_assert_eq(s.requests, 6);
	cr_assert_eq(s.with_reply, 6);
	const struct rq_stream *a = &s.streams[0], *b = &s.streams[1];
	cr_assert_eq(a->nic, CLIENT_A);
	cr_assert_eq(a->n, 3);
	for (uint32_t k = 0; k < 3; k++) {
		cr_assert_eq(a->rqs[k].reply_field, RQ_FIELD_DATA);
		cr_assert_eq(a->rqs[k].reply_mask, ~0ULL);
		cr_assert_eq(a->rqs[k].resp_len, 64);
		cr_assert_eq(a->rqs[k].think, SIM_NS(50) * (k + 1));
		cr_assert_eq(b->rqs[k].reply_field, RQ_FIELD_TAG, "Mercury's tagged unexpected message");
		cr_assert_eq(b->rqs[k].reply_mask, 0xffffffffULL);
		cr_assert_eq(b->rqs[k].resp_len, 32);
	}
	cr_assert_eq(a->naddr_off, 1, "offset 36 holds A's address in every request, but B's too");
	cr_assert_eq(a->addr_off[0], 32, "each client's own address in its header");
	cr_assert_eq(b->naddr_off, 1);
	cr_assert_eq(b->addr_off[0], 32);
	cr_assert_eq(a->nmrs, 2);
	cr_assert_eq(a->mrs[0].key, 7);
	cr_assert_eq(a->mrs[0].exposed_len, REGION);
	cr_assert_null(a->mrs[0].closed);
	cr_assert_eq(a->mrs[1].closed_len, REGION);
	cr_assert_eq(rq_stream_mr(a, 0x10000 + 10, 20), &a->mrs[0]);
	cr_assert_null(rq_stream_mr(a, 0x10000 + REGION - 4, 8), "crosses the region's end");
	cr_assert_null(rq_stream_mr(a, 0x30000, 1));
	replay_script_free(&s);
	/* The steady part only: requests 1..1 of each client (the range is applied after linking). */
	struct replay_script_opts r = { .addr_offsets_auto = true, .range = true, .first = 1, .last = 1 };
	cr_assert_eq(replay_script_load(p, &r, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.requests, 2);
	cr_assert_eq(s.streams[0].n, 1);
	cr_assert_eq(s.streams[0].rqs[0].data, 102);
	cr_assert_eq(s.streams[0].rqs[0].reply_field, RQ_FIELD_DATA);
	replay_script_free(&s);
	r.first = r.last = 7;
	cr_assert_eq(replay_script_load(p, &r, &s, err, sizeof(err)), -1);
	cr_assert(strstr(err, "range"), "%s", err);
	/* No client talks to a process of that name. */
	o.server_process = "nobody";
	cr_assert_eq(replay_script_load(p, &o, &s, err, sizeof(err)), -1);
	cr_assert(strstr(err, "nobody"), "%s", err);
	unlink(p);
}

/* ---------------------------------------------------------------------------------------- engine */

/* The test's server: untagged receives; each request answered with a tagged send of the request's reply
 * tag (data, or the tag's low 32 bits); bulk ops read / write the client's region. */
struct srv {
	struct tep t;
	uint8_t bufs[16][64];
	uint8_t bulk[64][64];
	int answers;  /* responses per request (2: a faulty server) */
	uint64_t requests, bulk_bad;
	uint64_t len_min, len_max; /* request lengths seen */
	struct sw_addr pending_src[64];
	uint64_t pending_tag[64];
	struct req pending[64];
	int npending;
};

static struct srv *g_srv;

static void srv_reply(struct srv *s, struct sw_addr src, uint64_t tag)
{
	for (int i = 0; i < s->answers; i++)
		cr_assert_eq(sw_send(s->t.ep, (uint64_t)(uintptr_t)"ok", 2, "ok", src, tag, 0, FI_TAGGED | FI_INJECT, NULL), 0);
}

/* Untagged receives, and tagged ones for Mercury's tagged unexpected messages (bit 32 set). */
static void srv_post(struct srv *s, uint8_t *buf, bool tagged)
{
	cr_assert_eq(sw_recv(s->t.ep, (uint64_t)(uintptr_t)buf, 64, NULL, tagged ? 1ULL << 32 : 0,
			     tagged ? 0xffffffffULL : 0, tagged ? FI_TAGGED : 0, buf),
		     0);
}

static void srv_comp(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct srv *s = ctx;
	(void)ep;
	cr_assert_eq(c->err, 0, "server completion error %d", c->err);
	if (c->flags & FI_RECV) {
		s->requests++;
		if (!s->len_min || c->len < s->len_min)
			s->len_min = c->len;
		if (c->len > s->len_max)
			s->len_max = c->len;
		uint8_t *buf = c->op_context;
		struct req r;
		memcpy(&r, buf, sizeof(r));
		uint64_t tag = (c->flags & FI_REMOTE_CQ_DATA) ? c->data : c->tag & 0xffffffffULL;
		struct sw_addr src = c->src;
		cr_assert_eq(r.addr, rq_cxi_addr32(c->src.nic, c->src.pid), "the replaying client's own address");
		if (r.magic == 0x51) {
			int k = s->npending++ % 64;
			s->pending[k] = r;
			s->pending_src[k] = src;
			s->pending_tag[k] = tag;
			if (r.op == 1) {
				cr_assert_eq(sw_read(s->t.ep, (uint64_t)(uintptr_t)s->bulk[k], r.len, src, r.offset, r.key, 0,
						     (void *)(uintptr_t)(k + 1)),
					     0);
			} else {
				for (uint32_t i = 0; i < r.len; i++)
					s->bulk[k][i] = pattern(r.offset + i, 2);
				cr_assert_eq(sw_write(s->t.ep, (uint64_t)(uintptr_t)s->bulk[k], r.len, src, r.offset, r.key, 0, 0,
						      (void *)(uintptr_t)(k + 1)),
					     0);
			}
		} else {
			srv_reply(s, src, tag);
		}
		srv_post(s, buf, (c->flags & FI_TAGGED) != 0);
		return;
	}
	if (c->flags & FI_RMA) {
		int k = (int)(uintptr_t)c->op_context - 1;
		if (c->flags & FI_READ)
			for (uint32_t i = 0; i < s->pending[k].len; i++)
				s->bulk_bad += s->bulk[k][i] != pattern(s->pending[k].offset + i, 1);
		srv_reply(s, s->pending_src[k], s->pending_tag[k]);
	}
}

static void srv_attr(struct sw_ep_attr *a)
{
	a->comp = srv_comp;
	a->comp_ctx = g_srv;
	a->caps |= FI_SOURCE;
}

static struct json_object *summary(struct tsim *t)
{
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	model_find("replay")->summary(t->sim, f);
	fclose(f);
	struct json_object *j = json_tokener_parse(buf);
	free(buf);
	cr_assert(j, "summary is JSON");
	return j;
}

static uint64_t jget(struct json_object *j, const char *a, const char *b)
{
	struct json_object *x;
	cr_assert(json_object_object_get_ex(j, a, &x), "%s", a);
	if (b)
		cr_assert(json_object_object_get_ex(x, b, &x), "%s.%s", a, b);
	return (uint64_t)json_object_get_int64(x);
}

static struct json_object *run_replay_with(int answers, int procs, int per_proc, int in_flight, const char *extra)
{
	const char *p = tmp_path("engine");
	write_sample(p);
	char json[1024];
	snprintf(json, sizeof(json),
		 "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 64}, \"nic\": {}, "
		 "\"replay\": {\"capture\": \"%s\", \"processes\": %d, \"processes_per_node\": 4, \"nics_per_node\": 2, "
		 "\"first_nic\": 8, \"target_nic\": %d, \"requests_per_process\": %d, \"in_flight\": %d, "
		 "%s%s}}",
		 p, procs, SERVER_NIC, per_proc, in_flight, strstr(extra, "think") ? "\"sizes\": \"capture\"" : "\"think\": \"scenario\"",
		 extra);
	struct tsim t = tsim_new(json, 1);
	static struct srv s;
	memset(&s, 0, sizeof(s));
	s.answers = answers;
	g_srv = &s;
	cr_assert_eq(tep_open(&s.t, &t, SERVER_NIC, srv_attr), 0);
	for (int i = 0; i < 16; i++)
		srv_post(&s, s.bufs[i], i >= 8);
	sim_run(t.sim);
	cr_assert_eq(s.requests, 0, "nothing before the target is ready");
	replay_target_ready(t.sim, SERVER_NIC, sw_ep_addr(s.t.ep).pid);
	sim_run(t.sim);
	/* A server that never answers (answers 0) holds each client at its in-flight window. */
	uint64_t expect = answers ? (uint64_t)procs * per_proc : (uint64_t)procs * in_flight;
	cr_assert_eq(s.requests, expect, "every request reached the server once");
	cr_assert_eq(s.bulk_bad, 0, "the server read the captured region's bytes");
	struct json_object *j = summary(&t);
	tep_close(&s.t);
	tsim_free(&t);
	unlink(p);
	return j;
}

static struct json_object *run_replay(int answers, int procs, int per_proc, int in_flight)
{
	return run_replay_with(answers, procs, per_proc, in_flight, "");
}

/* sizes: capture (the default) sends each request as long as captured (40 B here); sizes: scenario sends
 * request_bytes (the captured payload, then zeros). */
Test(replay_engine, request_sizes_from_the_capture_or_the_scenario)
{
	json_object_put(run_replay_with(1, 4, 3, 1, ""));
	cr_assert_eq(g_srv->len_min, 40);
	cr_assert_eq(g_srv->len_max, 40);
	json_object_put(run_replay_with(1, 4, 3, 1, ", \"sizes\": \"scenario\", \"request_bytes\": 56"));
	cr_assert_eq(g_srv->len_min, 56);
	cr_assert_eq(g_srv->len_max, 56);
}

/* The in-flight window: against a server that never answers, each client sends exactly in_flight requests
 * and waits; none is counted answered. */
Test(replay_engine, clients_keep_their_in_flight_window)
{
	struct json_object *j = run_replay(0, 6, 9, 3);
	cr_assert_eq(jget(j, "sent", NULL), 18);
	cr_assert_eq(jget(j, "answered", NULL), 0);
	cr_assert_eq(jget(j, "unanswered_at_end", NULL), 18);
	json_object_put(j);
}

/* think: capture -- a client waits the captured think time before each request (stream A: 50, 100, 150 ns
 * before its requests 0, 1, 2); think: scenario with think_ns 0 -- it does not.  One client, one in flight,
 * nine requests: the eight thinks between them (100+150+50 x 2 + 100+150 = 850 ns) lengthen its run. */
Test(replay_engine, captured_think_times_are_replayed)
{
	struct json_object *a = run_replay_with(1, 1, 9, 1, "");
	struct json_object *b = run_replay_with(1, 1, 9, 1, ", \"think\": \"capture\"");
	uint64_t sa = jget(a, "last_answer_ps", NULL) - jget(a, "first_send_ps", NULL);
	uint64_t sb = jget(b, "last_answer_ps", NULL) - jget(b, "first_send_ps", NULL);
	cr_assert_eq(jget(b, "answered", NULL), 9);
	cr_assert(sb >= sa + SIM_NS(800) && sb <= sa + SIM_NS(900), "think adds %llu ps",
		  (unsigned long long)(sb - sa));
	json_object_put(a);
	json_object_put(b);
}

/* window_from first_round: the window opens when every client's first request has completed, so none of
 * the first requests count in it; window_from ready (the default): from the target's first receive. */
Test(replay_engine, window_opens_after_the_first_round)
{
	const char *win = ", \"warmup_us\": 0, \"measure_us\": 1e9";
	struct json_object *r = run_replay_with(1, 10, 9, 1, win);
	cr_assert_eq(jget(r, "answered_in_window", NULL), 90, "ready: the window holds every request");
	cr_assert_eq(jget(r, "window_start_ps", NULL), jget(r, "ready_ps", NULL));
	json_object_put(r);
	char extra[256];
	snprintf(extra, sizeof(extra), "%s, \"window_from\": \"first_round\"", win);
	struct json_object *j = run_replay_with(1, 10, 9, 1, extra);
	uint64_t first = jget(j, "first_round_ps", NULL), in = jget(j, "answered_in_window", NULL);
	cr_assert_eq(jget(j, "answered", NULL), 90);
	cr_assert_gt(first, jget(j, "ready_ps", NULL));
	cr_assert_eq(jget(j, "window_start_ps", NULL), first, "warmup 0: the window opens at the first round's end");
	cr_assert(in > 0 && in <= 90 - 10, "no client's first request in the window: %llu", (unsigned long long)in);
	json_object_put(j);
}

Test(replay_engine, every_request_answered_exactly_once_with_bulk_both_ways)
{
	struct json_object *j = run_replay(1, 10, 9, 2);
	cr_assert_eq(jget(j, "sent", NULL), 90);
	cr_assert_eq(jget(j, "answered", NULL), 90);
	cr_assert_eq(jget(j, "failed", NULL), 0);
	cr_assert_eq(jget(j, "duplicates", NULL), 0);
	cr_assert_eq(jget(j, "unanswered_at_end", NULL), 0);
	/* Stream A (clients 0, 2, ...): a pull of 64 B, then two pushes of 64 B, per three requests. */
	cr_assert_eq(jget(j, "bulk", "read_bytes"), 5 * 3 * 64);
	cr_assert_eq(jget(j, "bulk", "write_bytes"), 5 * 6 * 64);
	cr_assert_eq(jget(j, "bulk", "write_checked_bytes"), 5 * 6 * 64);
	cr_assert_eq(jget(j, "bulk", "write_mismatched_bytes"), 0);
	cr_assert_eq(jget(j, "bulk", "faults"), 0);
	json_object_put(j);
}

Test(replay_engine, a_server_answering_twice_is_caught)
{
	struct json_object *j = run_replay(2, 4, 5, 1);
	cr_assert_eq(jget(j, "answered", NULL), 20, "still each request counted once");
	cr_assert_eq(jget(j, "duplicates", NULL), 20);
	json_object_put(j);
}
