/* replay: simulated client processes that send what a real client sent (a capture, replay_script.h) to a
 * real, unmodified server attached to the emulation daemon.  Each client is a process of its own, placed as
 * rpc_client places them (Aurora compute nodes), with its own endpoint, NIC address and VNI; it reaches the
 * server through the NIC and fabric models exactly as a real client would, so the server meets it as an
 * unknown source (FI_SOURCE_ERR) and grows its AV.
 *
 * A client replays its captured stream (client i takes stream i % streams) in order, looping, with up to
 * `in_flight` requests outstanding.  Per request it rewrites:
 *   - the field carrying the response's tag (immediate data or tag bits, as linked by the script) with a
 *     value of its own: slot (in-flight position) and generation, so the response can only be this
 *     client's, for this slot, and its generation says which request it answers;
 *   - its own 32-bit address where the captured client's address sat in the payload (servers that read
 *     the source from the header);
 * and nothing else: payload, length, tag and data bits outside the reply field go out as captured.  Each
 * slot keeps one tagged receive posted for its responses (tag = slot, generation bits ignored), reposted
 * after each, so a response to an already answered request is seen and counted (`duplicates`) instead of
 * sitting unmatched; a request counts as answered once its send completed and the response of its own
 * generation arrived.
 *
 * Memory is simulated without copies (struct nic_mem_ops over encoded addresses): a request's bytes are
 * read from the capture (with the address patched) when the NIC fetches them, responses are counted and
 * dropped, and the client's memory regions -- registered at start under the captured keys and addresses
 * (SW_MR_EXACT_KEY) -- serve the captured exposed image to the server's RMA reads, and check the server's
 * RMA writes against the captured image at close (`check_writes`).
 *
 * Clients start when their target endpoint (target_nic, target_pid) posts its first receive (the daemon
 * reports it, replay_target_ready); the measurement window (warmup_us, measure_us) counts from then, or
 * (window_from: first_round) from the moment every client's first request has completed: a real server
 * meets each new client through FI_SOURCE_ERR and an AV insertion, so its first round is slower than the
 * rounds after it and takes longer the more clients there are; a window counted from the server's first
 * receive would measure that start, not the steady state. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "../cxisimd/proto.h"
#include "../fabric/fabric.h"
#include "../model.h"
#include "../rng.h"
#include "../timeseries.h"
#include "../util.h"
#include "rpc.h"
#include "replay_script.h"
#include "rpc_client.h"

static const struct param replay_params[] = {
	{ "processes", "count", 104, 1, RPC_MAX_CLIENTS - 1, "issue 12: 104 to 53,248 replay clients" },
	RPC_PLACEMENT_ROWS,
	{ "in_flight", "count", 1, 1, RPC_MAX_INFLIGHT - 1, "requests in flight per client (the application's window)" },
	{ "requests_per_process", "count", 0, 0, 1e15, "each client stops after this many requests (0: no limit)" },
	{ "request_bytes", "bytes", 64, 0, 1 << 30, "sizes: scenario -- every request this long (payload, then zeros)" },
	{ "think_ns", "ns", 0, 0, 1e12, "think: scenario -- exponential think time, mean (0: none)" },
	{ "warmup_us", "us", 200, 0, 1e12, "measurement: from the target's first receive to the window" },
	{ "measure_us", "us", 1000, 1e-3, 1e12, "measurement: window length" },
	{ "start_spread_us", "us", 5, 0, 1e9, "assumed: clients start uniformly spread over this time" },
	{ "eagain_retry_ns", "ns", 1000, 1, 1e9, "assumed: retry delay after -FI_EAGAIN" },
	{ "tag_bits", "bits", 24, 9, 32, "remapped reply tags (slot and generation bits): within the server's tag range" },
	{ "target_nic", "addr", 0, 0, FABRIC_MAX_NICS - 1, "the real server's NIC (scenario)" },
};
enum { P_PROCS, P_INFLIGHT = 1 + RPC_PLACEMENT_NPARAMS, P_PER_PROC, P_REQ, P_THINK, P_WARMUP, P_MEASURE, P_SPREAD,
       P_EAGAIN, P_TAG_BITS, P_TARGET_NIC };

enum { RS_IDLE, RS_THINK, RS_WAIT, RS_DONE };
enum { PEND_SEND = 1, PEND_RESP = 2 };

/* Simulated memory of a client: bits 58-59 say what an address is; regions keep the captured addresses. */
#define RP_REQ (1ULL << 58)
#define RP_RESP (2ULL << 58)
#define RP_KIND(a) ((a) & (3ULL << 58))
#define RP_SLOT(a) ((uint32_t)((a) >> 32) & ((1u << 26) - 1))
#define RP_OFF(a) ((uint32_t)(a))
#define RP_MAX_SLOTS (1u << 26)

struct replay_set;

struct rp_slot {
	uint32_t gen;
	uint32_t rq;
	simtime_t t_start;
	uint8_t state, pending;
	bool failed, recv_posted;
};

struct rp_proc {
	struct replay_set *rs;
	struct sw_ep *ep;
	struct rng rng;
	struct sw_addr self;
	uint32_t stream;
	uint64_t pos;          /* requests started */
	uint32_t mrs_pending;
	uint16_t vni;
	bool first_done;       /* its first request completed (answered or failed) */
};

struct rp_stats {
	uint64_t sent, answered, answered_in_window, failed, send_errors, vni_refused, recv_errors, duplicates;
	uint64_t eagain, resp_bytes, read_bytes, write_bytes, write_checked, write_mismatched, faults, mr_errors;
	uint64_t outstanding; /* gauge */
	simtime_t first_send, first_answer, last_answer;
};

struct replay_set {
	struct sim *sim;
	const struct cfg *section;
	struct replay_script script;
	struct rpc_placement place;
	uint32_t n, W;
	uint64_t per_proc;
	uint32_t req_bytes;
	simtime_t think, warmup, measure, spread, eagain;
	bool sizes_capture, think_capture, stop_after_window, check_writes, stopping, started, first_round;
	uint32_t first_done; /* clients whose first request completed */
	simtime_t t_first_round;
	uint32_t slot_bits, gen_bits;
	uint64_t gen_mask;
	uint32_t target_nic;
	int64_t target_pid;
	struct sw_addr target;
	simtime_t t_ready, win_start, win_end;
	uint16_t vnis[64];
	uint32_t nvnis;
	struct sw_env env;
	uint64_t *max_resp;   /* per stream */
	struct rp_proc *procs;
	struct rp_slot *slots; /* n x W */
	struct rp_stats st;
	struct histogram *lat;
	struct rpc_fatal fatal;
};

static inline uint32_t slot_gidx(const struct replay_set *rs, const struct rp_slot *s)
{
	return (uint32_t)(s - rs->slots);
}
static inline struct rp_proc *slot_proc(struct replay_set *rs, const struct rp_slot *s)
{
	return &rs->procs[slot_gidx(rs, s) / rs->W];
}
static inline const struct rq_stream *proc_stream(const struct replay_set *rs, const struct rp_proc *p)
{
	return &rs->script.streams[p->stream];
}
/* The reply tag of a slot's request: slot position, then generation bits. */
static inline uint64_t reply_tag(const struct replay_set *rs, const struct rp_slot *s)
{
	return ((uint64_t)(slot_gidx(rs, s) % rs->W) << rs->gen_bits) | (s->gen & rs->gen_mask);
}

/* ---------------------------------------------------------------------------------------- memory */

static const struct rp_slot *own_slot(struct rp_proc *p, uint64_t addr)
{
	struct replay_set *rs = p->rs;
	uint32_t g = RP_SLOT(addr);
	if (g >= rs->n * rs->W || &rs->procs[g / rs->W] != p)
		return NULL;
	return &rs->slots[g];
}

/* A request's bytes as the NIC reads them: the captured payload (zeros past it), with this client's own
 * address where the captured client's was. */
static int read_request(struct rp_proc *p, uint64_t addr, unsigned char *dst, size_t len)
{
	const struct rp_slot *s = own_slot(p, addr);
	if (!s)
		return -1;
	const struct rq_stream *st = proc_stream(p->rs, p);
	const struct rq *q = &st->rqs[s->rq];
	uint64_t off = RP_OFF(addr);
	uint64_t have = off < q->payload_len ? q->payload_len - off : 0;
	if (have > len)
		have = len;
	if (have)
		memcpy(dst, q->payload + off, (size_t)have);
	memset(dst + have, 0, len - (size_t)have);
	uint32_t self = rq_cxi_addr32(p->self.nic, p->self.pid);
	for (uint32_t i = 0; i < st->naddr_off; i++)
		for (uint32_t b = 0; b < 4; b++) {
			uint64_t at = st->addr_off[i] + b;
			if (at >= off && at < off + len)
				dst[at - off] = (unsigned char)(self >> (8 * b));
		}
	return 0;
}

static int rp_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct rp_proc *p = ctx;
	struct replay_set *rs = p->rs;
	switch (RP_KIND(addr)) {
	case RP_REQ:
		if (read_request(p, addr, dst, len))
			break;
		return 0;
	case RP_RESP:
		memset(dst, 0, len);
		return 0;
	case 0: {
		const struct rq_mr *m = rq_stream_mr(proc_stream(rs, p), addr, len);
		if (!m)
			break;
		uint64_t off = addr - m->addr, have = off < m->exposed_len ? m->exposed_len - off : 0;
		if (have > len)
			have = len;
		if (have)
			memcpy(dst, m->exposed + off, (size_t)have);
		memset((unsigned char *)dst + have, 0, len - (size_t)have);
		rs->st.read_bytes += len;
		return 0;
	}
	}
	rs->st.faults++;
	return -14; /* -EFAULT: the NIC reports a permission violation */
}

static int rp_write(void *ctx, uint64_t addr, const void *src, size_t len)
{
	struct rp_proc *p = ctx;
	struct replay_set *rs = p->rs;
	if (RP_KIND(addr) == RP_RESP && own_slot(p, addr)) {
		rs->st.resp_bytes += len;
		return 0;
	}
	const struct rq_mr *m = RP_KIND(addr) ? NULL : rq_stream_mr(proc_stream(rs, p), addr, len);
	if (!m) {
		rs->st.faults++;
		return -14;
	}
	rs->st.write_bytes += len;
	uint64_t off = addr - m->addr;
	if (rs->check_writes && m->closed && off < m->closed_len) {
		uint64_t n = m->closed_len - off < len ? m->closed_len - off : len;
		const unsigned char *a = src, *b = m->closed + off;
		rs->st.write_checked += n;
		for (uint64_t i = 0; i < n; i++)
			rs->st.write_mismatched += a[i] != b[i];
	}
	return 0;
}

static const struct nic_mem_ops rp_mem = { rp_read, rp_write };

/* ---------------------------------------------------------------------------------------- requests */

static void begin(struct sim *sim, struct replay_set *rs, struct rp_slot *s);

static void begin_ev(struct sim *sim, void *obj, uint64_t arg)
{
	struct replay_set *rs = obj;
	begin(sim, rs, &rs->slots[arg]);
}

static void post_resp(struct sim *sim, struct replay_set *rs, struct rp_slot *s);

static void post_resp_ev(struct sim *sim, void *obj, uint64_t arg)
{
	struct replay_set *rs = obj;
	post_resp(sim, rs, &rs->slots[arg]);
}

/* The slot's response receive: any generation of this slot. */
static void post_resp(struct sim *sim, struct replay_set *rs, struct rp_slot *s)
{
	struct rp_proc *p = slot_proc(rs, s);
	if (s->recv_posted)
		return;
	uint64_t tag = (uint64_t)(slot_gidx(rs, s) % rs->W) << rs->gen_bits;
	int rc = sw_recv(p->ep, RP_RESP | (uint64_t)slot_gidx(rs, s) << 32, rs->max_resp[p->stream], NULL, tag,
			 rs->gen_mask, FI_TAGGED | FI_COMPLETION, s);
	if (rc == -FI_EAGAIN) {
		rs->st.eagain++;
		sim_schedule(sim, rs->eagain, post_resp_ev, rs, slot_gidx(rs, s));
		return;
	}
	if (rc)
		die("replay: posting a response receive failed: %d", rc);
	s->recv_posted = true;
}

static void send_ev(struct sim *sim, void *obj, uint64_t arg);

static void send_request(struct sim *sim, struct replay_set *rs, struct rp_slot *s)
{
	struct rp_proc *p = slot_proc(rs, s);
	const struct rq *q = &proc_stream(rs, p)->rqs[s->rq];
	uint64_t v = reply_tag(rs, s), tag = q->tag, data = q->data;
	if (q->reply_field == RQ_FIELD_DATA)
		data = (data & ~q->reply_mask) | v;
	else if (q->reply_field == RQ_FIELD_TAG)
		tag = (tag & ~q->reply_mask) | v;
	uint64_t flags = FI_COMPLETION | ((q->flags & CAPF_TAGGED) ? FI_TAGGED : 0) |
			 ((q->flags & CAPF_CQ_DATA) ? FI_REMOTE_CQ_DATA : 0);
	uint64_t len = rs->sizes_capture ? q->len : rs->req_bytes;
	struct sw_addr dst = rs->target;
	dst.vni = p->vni;
	int rc = sw_send(p->ep, RP_REQ | (uint64_t)slot_gidx(rs, s) << 32, len, NULL, dst, tag, data, flags, s);
	if (rc == -FI_EAGAIN) {
		rs->st.eagain++;
		sim_schedule(sim, rs->eagain, send_ev, rs, slot_gidx(rs, s));
		return;
	}
	if (rc)
		die("replay: send failed: %d", rc);
	s->state = RS_WAIT;
	s->pending = PEND_SEND | (q->reply_field != RQ_FIELD_NONE ? PEND_RESP : 0);
	rs->st.sent++;
	rs->st.outstanding++;
	if (!rs->st.first_send)
		rs->st.first_send = sim_now(sim);
}

static void send_ev(struct sim *sim, void *obj, uint64_t arg)
{
	struct replay_set *rs = obj;
	send_request(sim, rs, &rs->slots[arg]);
}

static void begin(struct sim *sim, struct replay_set *rs, struct rp_slot *s)
{
	struct rp_proc *p = slot_proc(rs, s);
	if (rs->stopping || (rs->per_proc && p->pos >= rs->per_proc)) {
		s->state = RS_DONE;
		return;
	}
	const struct rq_stream *st = proc_stream(rs, p);
	s->rq = (uint32_t)(p->pos++ % st->n);
	s->gen++;
	s->failed = false;
	s->t_start = sim_now(sim);
	if (st->rqs[s->rq].reply_field != RQ_FIELD_NONE)
		post_resp(sim, rs, s);
	send_request(sim, rs, s);
}

static void open_window(struct sim *sim, struct replay_set *rs, simtime_t from);

/* Both the send completion and the response (if one is expected) are in: think, then the next. */
static void finish(struct sim *sim, struct replay_set *rs, struct rp_slot *s)
{
	struct rp_proc *p = slot_proc(rs, s);
	simtime_t now = sim_now(sim);
	rs->st.outstanding--;
	if (s->failed) {
		rs->st.failed++;
	} else {
		rs->st.answered++;
		if (!rs->st.first_answer)
			rs->st.first_answer = now;
		rs->st.last_answer = now;
		hist_add(rs->lat, now - s->t_start);
		if (now >= rs->win_start && now < rs->win_end)
			rs->st.answered_in_window++;
	}
	if (!p->first_done) {
		p->first_done = true;
		if (++rs->first_done == rs->n) {
			rs->t_first_round = now;
			if (rs->first_round)
				open_window(sim, rs, now);
		}
	}
	s->state = RS_THINK;
	const struct rq_stream *st = proc_stream(rs, p);
	simtime_t think = 0;
	if (rs->think_capture)
		think = st->rqs[p->pos % st->n].think;
	else if (rs->think)
		think = (simtime_t)rng_exp(&p->rng, (double)rs->think);
	sim_schedule(sim, think, begin_ev, rs, slot_gidx(rs, s));
}

static void on_send(struct replay_set *rs, struct rp_slot *s, const struct sw_comp *c)
{
	if (c->err) {
		rs->st.send_errors++;
		if (c->err == FI_ENOTCONN)
			rs->st.vni_refused++; /* C_RC_VNI_NOT_FOUND: the server does not accept this client's VNI */
		s->failed = true;
		s->pending &= (uint8_t)~PEND_RESP; /* nothing reached the server */
	}
	s->pending &= (uint8_t)~PEND_SEND;
}

static void on_resp(struct sim *sim, struct replay_set *rs, struct rp_slot *s, const struct sw_comp *c)
{
	s->recv_posted = false;
	if (c->err == FI_ECANCELED)
		return;
	bool current = s->state == RS_WAIT && (s->pending & PEND_RESP) && (c->tag & rs->gen_mask) == (s->gen & rs->gen_mask);
	post_resp(sim, rs, s); /* ready for the next request, and for stray responses */
	if (!current) {
		rs->st.duplicates++; /* a response to a request already answered (or failed) */
		return;
	}
	if (c->err) {
		rs->st.recv_errors++;
		s->failed = true;
	}
	s->pending &= (uint8_t)~PEND_RESP;
}

static void on_comp(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct replay_set *rs = ctx;
	struct rp_slot *s = c->op_context;
	(void)ep;
	if (c->mr || !s)
		return;
	if (s < rs->slots || s >= rs->slots + (size_t)rs->n * rs->W)
		die("replay: completion with a foreign context");
	if (c->flags & FI_SEND)
		on_send(rs, s, c);
	else
		on_resp(rs->sim, rs, s, c);
	if (s->state == RS_WAIT && !s->pending)
		finish(rs->sim, rs, s);
}

/* ---------------------------------------------------------------------------------------- start */

static void start_slots(struct sim *sim, struct replay_set *rs, struct rp_proc *p)
{
	uint32_t i = (uint32_t)(p - rs->procs);
	for (uint32_t k = 0; k < rs->W; k++)
		begin(sim, rs, &rs->slots[(size_t)i * rs->W + k]);
}

static void mr_done(void *ctx, struct sw_mr *mr, int ret)
{
	struct rp_proc *p = ctx;
	(void)mr;
	if (ret)
		p->rs->st.mr_errors++;
	if (--p->mrs_pending == 0)
		start_slots(p->rs->sim, p->rs, p);
}

/* A client starts: its memory regions first (under the captured keys), then its requests. */
static void proc_start(struct sim *sim, void *obj, uint64_t arg)
{
	struct replay_set *rs = obj;
	struct rp_proc *p = &rs->procs[arg];
	const struct rq_stream *st = proc_stream(rs, p);
	(void)sim;
	p->mrs_pending = 1;
	for (uint32_t m = 0; m < st->nmrs; m++) {
		const struct rq_mr *x = &st->mrs[m];
		uint64_t access = ((x->access & MRF_REMOTE_READ) ? FI_REMOTE_READ : 0) |
				  ((x->access & MRF_REMOTE_WRITE) ? FI_REMOTE_WRITE : 0);
		struct sw_mr *mr;
		int rc = sw_mr_reg(p->ep, x->addr, x->len, access, x->key, SW_MR_EXACT_KEY, mr_done, p, &mr);
		if (rc)
			rs->st.mr_errors++;
		else
			p->mrs_pending++;
	}
	mr_done(p, NULL, 0);
}

static void window_close(struct sim *sim, void *obj, uint64_t arg)
{
	struct replay_set *rs = obj;
	(void)sim;
	(void)arg;
	if (rs->stop_after_window)
		rs->stopping = true;
}

static void open_window(struct sim *sim, struct replay_set *rs, simtime_t from)
{
	rs->win_start = from + rs->warmup;
	rs->win_end = rs->win_start + rs->measure;
	sim_schedule_at(sim, rs->win_end, window_close, rs, 0);
}

void replay_target_ready(struct sim *sim, uint32_t nic, uint32_t pid)
{
	struct replay_set *rs = sim_world_get(sim, "replay");
	if (!rs || rs->started || nic != rs->target_nic || (rs->target_pid >= 0 && pid != (uint64_t)rs->target_pid))
		return;
	rs->started = true;
	rs->target = (struct sw_addr){ .nic = nic, .pid = (uint16_t)pid };
	rs->t_ready = sim_now(sim);
	if (rs->first_round)
		rs->win_start = rs->win_end = UINT64_MAX; /* opened when every client's first request completed */
	else
		open_window(sim, rs, rs->t_ready);
	for (uint32_t i = 0; i < rs->n; i++) {
		struct rp_proc *p = &rs->procs[i];
		sim_schedule(sim, rs->spread ? rng_below(&p->rng, rs->spread) : 0, proc_start, rs, i);
	}
}

/* ---------------------------------------------------------------------------------------- build */

static const char *const sources[] = { "capture", "scenario", NULL };

static void load_script(struct replay_set *rs, const struct cfg *sec)
{
	const char *path = cfg_string(sec, "capture", NULL);
	if (!path)
		cfg_fail(sec, "capture", "required: the capture file to replay (`cxisim capture`)");
	struct replay_script_opts o = { .server_process = cfg_string(sec, "server_process", NULL),
					.addr_offsets_auto = !cfg_has(sec, "address_offsets") };
	int na = cfg_array_len(sec, "address_offsets");
	if (na > RQ_MAX_ADDR_OFFSETS)
		cfg_fail(sec, "address_offsets", "at most %d offsets", RQ_MAX_ADDR_OFFSETS);
	for (int i = 0; i < na; i++)
		o.addr_off[o.naddr_off++] = (uint32_t)cfg_array_u64(sec, "address_offsets", i, 0, 1u << 30);
	int nr = cfg_array_len(sec, "requests_range");
	if (nr && nr != 2)
		cfg_fail(sec, "requests_range", "expected [first, last] (0-based, inclusive)");
	if (nr) {
		o.range = true;
		o.first = (uint32_t)cfg_array_u64(sec, "requests_range", 0, 0, UINT32_MAX - 1);
		o.last = (uint32_t)cfg_array_u64(sec, "requests_range", 1, o.first, UINT32_MAX - 1);
	}
	char err[512];
	if (replay_script_load(path, &o, &rs->script, err, sizeof(err)))
		cfg_fail(sec, "capture", "%s: %s", path, err);
	rs->max_resp = xcalloc(rs->script.nstreams, sizeof(*rs->max_resp));
	for (uint32_t i = 0; i < rs->script.nstreams; i++)
		for (uint32_t k = 0; k < rs->script.streams[i].n; k++)
			if (rs->script.streams[i].rqs[k].resp_len > rs->max_resp[i])
				rs->max_resp[i] = rs->script.streams[i].rqs[k].resp_len;
}

static void read_cfg(struct replay_set *rs, const struct cfg *sec)
{
	const struct param *P = replay_params;
	rs->section = sec;
	rs->n = (uint32_t)param_get_u64(sec, &P[P_PROCS]);
	rpc_placement_read(&rs->place, sec);
	rs->W = (uint32_t)param_get_u64(sec, &P[P_INFLIGHT]);
	if ((uint64_t)rs->n * rs->W > RP_MAX_SLOTS)
		cfg_fail(sec, "in_flight", "%u processes x %u in flight exceed %u requests in flight", rs->n, rs->W,
			 RP_MAX_SLOTS);
	rs->per_proc = param_get_u64(sec, &P[P_PER_PROC]);
	rs->req_bytes = (uint32_t)param_get_u64(sec, &P[P_REQ]);
	rs->think = ns_to_ps(param_get(sec, &P[P_THINK]));
	rs->warmup = ns_to_ps(param_get(sec, &P[P_WARMUP]) * 1000.0);
	rs->measure = ns_to_ps(param_get(sec, &P[P_MEASURE]) * 1000.0);
	rs->spread = ns_to_ps(param_get(sec, &P[P_SPREAD]) * 1000.0);
	rs->eagain = ns_to_ps(param_get(sec, &P[P_EAGAIN]));
	uint32_t tag_bits = (uint32_t)param_get_u64(sec, &P[P_TAG_BITS]);
	rs->slot_bits = 0;
	while ((1u << rs->slot_bits) < rs->W)
		rs->slot_bits++;
	if (tag_bits < rs->slot_bits + 8)
		cfg_fail(sec, "tag_bits", "%u bits leave fewer than 8 generation bits with %u in flight", tag_bits, rs->W);
	rs->gen_bits = tag_bits - rs->slot_bits;
	rs->gen_mask = (1ULL << rs->gen_bits) - 1;
	rs->target_nic = (uint32_t)param_get_u64(sec, &P[P_TARGET_NIC]);
	rs->target_pid = cfg_i64(sec, "target_pid", -1, -1, C_PID_ANY - 1);
	rs->sizes_capture = cfg_enum(sec, "sizes", 0, sources) == 0;
	rs->think_capture = cfg_enum(sec, "think", 0, sources) == 0;
	rs->stop_after_window = cfg_bool(sec, "stop_after_window", false);
	static const char *const window_from[] = { "ready", "first_round", NULL };
	rs->first_round = cfg_enum(sec, "window_from", 0, window_from) == 1;
	rs->check_writes = cfg_bool(sec, "check_writes", true);
	int nv = cfg_array_len(sec, "vnis");
	if (nv > (int)ARRAY_SIZE(rs->vnis))
		cfg_fail(sec, "vnis", "at most %zu VNIs", ARRAY_SIZE(rs->vnis));
	for (int i = 0; i < nv; i++)
		rs->vnis[rs->nvnis++] = (uint16_t)cfg_array_u64(sec, "vnis", i, 0, 65535);
	sw_env_scenario(rs->sim, &rs->env);
	struct cfg cx = cfg_section(sec, "cxi");
	sw_env_from_cfg(&rs->env, &cx);
	load_script(rs, sec);
}

static void open_proc(struct replay_set *rs, struct nic *nic, struct rp_proc *p)
{
	const struct rq_stream *st = proc_stream(rs, p);
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	a.env = rs->env;
	/* Client keys mean what the initiator's FI_CXI_OPTIMIZED_MRS says: as the captured client had it. */
	a.env.optimized_mrs = (st->ep_flags & EPF_OPTIMIZED_MRS) != 0;
	a.proto = (st->ep_flags & EPF_RNR) ? SW_PROTO_CXI_RNR : SW_PROTO_CXI;
	a.progress = SW_PROGRESS_AUTO;
	a.num_vnis = 1;
	a.vnis[0] = p->vni;
	a.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE;
	uint32_t depth = 2 * rs->W + 8 < 16 ? 16 : 2 * rs->W + 8;
	a.tx_size = depth;
	a.rx_size = depth;
	a.cq_size = 2 * depth;
	a.mem = &rp_mem;
	a.mem_ctx = p;
	a.comp = on_comp;
	a.comp_ctx = rs;
	a.on_fatal = rpc_on_fatal;
	a.fatal_ctx = &rs->fatal;
	int rc = sw_ep_open(nic, &a, &p->ep);
	if (rc)
		cfg_fail(rs->section, "processes", "cannot open a client endpoint on NIC %u: error %d", nic_addr(nic), rc);
	p->self = sw_ep_addr(p->ep);
}

static void replay_free(void *obj)
{
	struct replay_set *rs = obj;
	for (uint32_t i = 0; i < rs->n; i++)
		if (rs->procs[i].ep)
			sw_ep_close(rs->procs[i].ep);
	replay_script_free(&rs->script);
	free(rs->max_resp);
	free(rs->procs);
	free(rs->slots);
	free(rs);
}

static void replay_build(struct sim *sim, const struct cfg *sec)
{
	struct replay_set *rs = xcalloc(1, sizeof(*rs));
	rs->sim = sim;
	read_cfg(rs, sec);
	rs->procs = xcalloc(rs->n, sizeof(*rs->procs));
	rs->slots = xcalloc((size_t)rs->n * rs->W, sizeof(*rs->slots));
	rs->lat = stats_hist(sim_stats(sim), "replay.latency_ps");
	for (uint32_t i = 0; i < rs->n; i++) {
		struct rp_proc *p = &rs->procs[i];
		p->rs = rs;
		p->stream = i % rs->script.nstreams;
		p->vni = rs->nvnis ? rs->vnis[i % rs->nvnis] : proc_stream(rs, p)->vni;
		rng_init_idx(&p->rng, sim_seed(sim), "replay", i);
		uint32_t addr = rpc_placement_nic(&rs->place, i);
		struct nic *nic = nic_get(sim, addr);
		if (!nic)
			cfg_fail(sec, "processes", "client %u (node %u): no NIC at address %u (fabric too small?)", i,
				 i / rs->place.ppn, addr);
		if (addr == rs->target_nic)
			cfg_fail(sec, "first_nic", "client %u is placed on the target's NIC %u", i, addr);
		open_proc(rs, nic, p);
	}
	sim_world_set(sim, "replay", rs);
	sim_on_destroy(sim, replay_free, rs);
	ts_register(sim, "replay.outstanding", &rs->st.outstanding);
}

/* ---------------------------------------------------------------------------------------- summary */

static const char *field_name(const struct replay_script *s)
{
	int seen = 0;
	for (uint32_t i = 0; i < s->nstreams; i++)
		for (uint32_t k = 0; k < s->streams[i].n; k++)
			seen |= 1 << s->streams[i].rqs[k].reply_field;
	switch (seen) {
	case 1 << RQ_FIELD_NONE: return "none";
	case 1 << RQ_FIELD_DATA: return "data";
	case 1 << RQ_FIELD_TAG: return "tag";
	default: return "mixed";
	}
}

static void replay_summary(struct sim *sim, FILE *f)
{
	struct replay_set *rs = sim_world_get(sim, "replay");
	const struct rp_stats *st = &rs->st;
	double win_s = (double)rs->measure * 1e-12;
	double span_s = st->last_answer > st->first_send ? (double)(st->last_answer - st->first_send) * 1e-12 : 0;
	double ans_s = st->last_answer > st->first_answer ? (double)(st->last_answer - st->first_answer) * 1e-12 : 0;
	uint64_t unanswered = 0, mrs = 0;
	for (size_t i = 0; i < (size_t)rs->n * rs->W; i++)
		unanswered += rs->slots[i].state == RS_WAIT && (rs->slots[i].pending & PEND_RESP);
	for (uint32_t i = 0; i < rs->script.nstreams; i++)
		mrs += rs->script.streams[i].nmrs;
	fprintf(f, "{\"processes\": %u, \"nodes\": %u, \"in_flight\": %u, \"streams\": %u, \"capture_requests\": %llu, "
		   "\"server_process\": \"%s\", \"target_nic\": %u, \"target_pid\": %u, \"started\": %s, \"ready_ps\": %llu, ",
		rs->n, (rs->n + rs->place.ppn - 1) / rs->place.ppn, rs->W, rs->script.nstreams,
		(unsigned long long)rs->script.requests, rs->script.server_prog, rs->target_nic, rs->target.pid,
		rs->started ? "true" : "false", (unsigned long long)rs->t_ready);
	fprintf(f, "\"rpc_rate\": %.1f, \"rate_overall\": %.1f, \"answer_rate\": %.1f, \"sent\": %llu, "
		   "\"answered\": %llu, \"answered_in_window\": %llu, \"failed\": %llu, \"unanswered_at_end\": %llu, "
		   "\"duplicates\": %llu, ",
		win_s > 0 ? (double)st->answered_in_window / win_s : 0.0, span_s > 0 ? (double)st->answered / span_s : 0.0,
		ans_s > 0 ? (double)(st->answered - 1) / ans_s : 0.0,
		(unsigned long long)st->sent, (unsigned long long)st->answered, (unsigned long long)st->answered_in_window,
		(unsigned long long)st->failed, (unsigned long long)unanswered, (unsigned long long)st->duplicates);
	fprintf(f, "\"first_send_ps\": %llu, \"first_answer_ps\": %llu, \"last_answer_ps\": %llu, \"send_errors\": %llu, \"vni_refused\": %llu, "
		   "\"recv_errors\": %llu, \"eagain\": %llu, \"response_bytes\": %llu, \"window_from\": \"%s\", "
		   "\"first_round_ps\": %llu, \"window_start_ps\": %llu, ",
		(unsigned long long)st->first_send, (unsigned long long)st->first_answer, (unsigned long long)st->last_answer, (unsigned long long)st->send_errors,
		(unsigned long long)st->vni_refused, (unsigned long long)st->recv_errors, (unsigned long long)st->eagain,
		(unsigned long long)st->resp_bytes, rs->first_round ? "first_round" : "ready",
		(unsigned long long)rs->t_first_round,
		(unsigned long long)(rs->win_start == UINT64_MAX ? 0 : rs->win_start));
	fprintf(f, "\"remap\": {\"reply_field\": \"%s\", \"tag_bits\": %u, \"address_offsets\": [",
		field_name(&rs->script), rs->slot_bits + rs->gen_bits);
	const struct rq_stream *s0 = &rs->script.streams[0];
	for (uint32_t i = 0; i < s0->naddr_off; i++)
		fprintf(f, "%s%u", i ? ", " : "", s0->addr_off[i]);
	fprintf(f, "]}, \"bulk\": {\"captured_mrs\": %llu, \"read_bytes\": %llu, \"write_bytes\": %llu, "
		   "\"write_checked_bytes\": %llu, \"write_mismatched_bytes\": %llu, \"faults\": %llu, \"mr_errors\": %llu}, ",
		(unsigned long long)mrs, (unsigned long long)st->read_bytes, (unsigned long long)st->write_bytes,
		(unsigned long long)st->write_checked, (unsigned long long)st->write_mismatched,
		(unsigned long long)st->faults, (unsigned long long)st->mr_errors);
	rpc_put_fatal(f, &rs->fatal);
	fputs(", ", f);
	rpc_client_put_hist_ns(f, "latency_ns", rs->lat);
	fputs("}", f);
}

static struct model replay_model = {
	.key = "replay",
	.order = 32,
	.build = replay_build,
	.summary = replay_summary,
	.params = replay_params,
	.nparams = ARRAY_SIZE(replay_params),
};
MODEL_REGISTER(replay_model)
