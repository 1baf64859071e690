/* rpc_client: CaRT/Mercury-like client processes, each with its own cxi endpoint and one serial core.
 *
 * Placement as on Aurora: `processes_per_node` processes per compute node (104), local rank r on the node's
 * NIC r % nics_per_node (8 per node).  Nodes are dealt round-robin over `spread_groups` blocks of
 * `group_stride` NIC addresses (dragonfly groups), node n taking slot n / spread_groups of block
 * n % spread_groups: NIC first_nic + (n % G) * group_stride + (n / G) * node_stride + r % nics_per_node.
 *
 * Each process keeps up to `in_flight` RPCs outstanding (the application's window).  Every RPC goes to the
 * next server target in round-robin order (starting at the process's own index, so load spreads).  CaRT
 * flow control: at most `ep_credits` RPCs in flight to one target endpoint and `quota` in flight in all; an
 * RPC over either limit waits in the process's background queue and is sent, in order, when a credit
 * frees.  An attempt not answered within `timeout_us` is canceled and retried up to `max_retries` times.
 *
 * One attempt: (bulk: register the MR), charge the forward cost, post the tagged receive for the response,
 * send the request; the attempt ends once both its send completion and its response (or the cancel of the
 * response receive) have been seen, as Mercury's forward completes on both; (bulk: deregister the MR).
 * Then think, and start the next RPC.
 */
#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "../model.h"
#include "../rng.h"
#include "../timeseries.h"
#include "../util.h"
#include "bulk.h"
#include "rpc.h"
#include "rpc_client.h"

static const struct param client_params[] = {
	{ "processes", "count", 104, 1, RPC_MAX_CLIENTS - 1, "seed 000 Fig 4/5: 104 to 53,248 client processes" },
	RPC_PLACEMENT_ROWS,
	{ "in_flight", "count", 1, 1, RPC_MAX_INFLIGHT - 1, "seed 000 3.2.2: RPCs in flight per client (varied)" },
	{ "ep_credits", "count", 0, 0, RPC_MAX_INFLIGHT - 1, "CaRT EP credits per target (0: off)" },
	{ "quota", "count", 0, 0, RPC_MAX_INFLIGHT - 1, "CaRT RPC quota per client (0: off)" },
	{ "request_bytes", "bytes", 64, 0, 1 << 30, "assumed: empty RPC, Mercury header (issue 5 storm: 64 B)" },
	{ "request_bytes_max", "bytes", 0, 0, 1 << 30, "uniform request size up to this (0: fixed size)" },
	{ "response_max_bytes", "bytes", 4096, 0, 1 << 30, "expected-message buffer posted for the response" },
	{ "think_ns", "ns", 0, 0, 1e12, "assumed: no think time in rate benchmarks (exponential mean)" },
	{ "timeout_us", "us", 0, 0, 1e9, "CaRT RPC timeout (0: none)" },
	{ "max_retries", "count", 0, 0, 255, "CaRT retries after a timeout" },
	{ "forward_ns", "ns", 400, 0, 1e9, "assumed: HG_Forward encode, tagged fi_recv and fi_send calls" },
	{ "complete_ns", "ns", 200, 0, 1e9, "assumed: CQ reads of send and response completions, callback" },
	{ "warmup_us", "us", 200, 0, 1e12, "measurement: time before the window opens" },
	{ "measure_us", "us", 1000, 1e-3, 1e12, "measurement: window length" },
	{ "start_spread_us", "us", 5, 0, 1e9, "assumed: processes start uniformly spread over this time" },
	{ "eagain_retry_ns", "ns", 1000, 1, 1e9, "assumed: retry delay after -FI_EAGAIN" },
};
enum {
	P_PROCS, P_INFLIGHT = 1 + RPC_PLACEMENT_NPARAMS, P_CREDITS, P_QUOTA, P_REQ, P_REQ_MAX, P_RESP_MAX,
	P_THINK, P_TIMEOUT, P_RETRIES, P_FWD, P_COMPLETE, P_WARMUP, P_MEASURE, P_SPREAD, P_EAGAIN,
};

enum { PEND_RESP = 1, PEND_SEND = 2 };
#define QNONE 0xff

static inline uint32_t slot_client(const struct rpc_client_set *cs, const struct rpc_slot *s)
{
	return (uint32_t)((size_t)(s - cs->slots) / cs->W);
}
static inline uint32_t slot_index(const struct rpc_client_set *cs, const struct rpc_slot *s)
{
	return (uint32_t)((size_t)(s - cs->slots) % cs->W);
}
static inline uint64_t slot_id(const struct rpc_client_set *cs, const struct rpc_slot *s)
{
	return (uint64_t)(s - cs->slots);
}

static void begin(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s);
static void attempt(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s);
static void dispatch(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s);

/* ---------------------------------------------------------------------------------------- credits */

static bool has_credit(const struct rpc_client_set *cs, const struct rpc_proc *c, uint32_t ci, uint32_t target)
{
	if (cs->quota && c->inflight >= cs->quota)
		return false;
	if (cs->credits && cs->per_target[(size_t)ci * cs->T + target] >= cs->credits)
		return false;
	return true;
}

static void take_credit(struct rpc_client_set *cs, struct rpc_proc *c, uint32_t ci, uint32_t target)
{
	c->inflight++;
	cs->st.outstanding++;
	if (c->inflight > cs->st.max_inflight)
		cs->st.max_inflight = c->inflight;
	if (cs->credits) {
		uint8_t *pt = &cs->per_target[(size_t)ci * cs->T + target];
		(*pt)++;
		if (*pt > cs->st.max_per_target)
			cs->st.max_per_target = *pt;
	}
}

static void give_credit(struct rpc_client_set *cs, struct rpc_proc *c, uint32_t ci, uint32_t target)
{
	c->inflight--;
	cs->st.outstanding--;
	if (cs->credits)
		cs->per_target[(size_t)ci * cs->T + target]--;
}

/* Background queue: a FIFO of slot indices linked through the slots. */
static void enqueue(struct rpc_client_set *cs, struct rpc_proc *c, uint32_t ci, struct rpc_slot *s)
{
	struct rpc_slot *base = &cs->slots[(size_t)ci * cs->W];
	uint8_t idx = (uint8_t)slot_index(cs, s);
	s->state = S_QUEUED;
	s->qnext = QNONE;
	if (c->qlen)
		base[c->qtail].qnext = idx;
	else
		c->qhead = idx;
	c->qtail = idx;
	c->qlen++;
	cs->st.queued++;
	cs->st.queued_now++;
	if (c->qlen > cs->st.max_queue)
		cs->st.max_queue = c->qlen;
}

/* Send queued RPCs, oldest first, as far as credits allow. */
static void drain_queue(struct sim *sim, struct rpc_client_set *cs, uint32_t ci)
{
	struct rpc_proc *c = &cs->procs[ci];
	struct rpc_slot *base = &cs->slots[(size_t)ci * cs->W];
	uint8_t prev = QNONE, i = c->qlen ? c->qhead : QNONE;
	while (i != QNONE) {
		struct rpc_slot *s = &base[i];
		uint8_t next = s->qnext;
		if (has_credit(cs, c, ci, s->target)) {
			if (prev == QNONE)
				c->qhead = next;
			else
				base[prev].qnext = next;
			if (c->qtail == i)
				c->qtail = prev;
			c->qlen--;
			cs->st.queued_now--;
			dispatch(sim, cs, s);
		} else {
			prev = i;
		}
		i = next;
	}
}

/* ---------------------------------------------------------------------------------------- host work */

/* Provider work done on the process's behalf since it last looked (sw.h host-work account): the steps of
 * flow-control recovery towards disabled servers (sends dropped, FC_NOTIFY, replay after FC_RESUME, sends
 * refused meanwhile) and RNR retries (each NACK queued, each resubmission), at the provider's prices.
 * Progress runs inside the process's own calls, so its core pays when the process next calls in (a send,
 * or reading a completion), and whatever it does next waits behind it. */
static void provider_work(struct rpc_client_set *cs, struct rpc_proc *c)
{
	struct sw_host_work w;
	sw_ep_take_host_work(c->ep, &w);
	struct sw_host_price p = sw_host_work_price(cs->sim, &w);
	cs->st.fc_host_ps += p.fc;
	cs->st.rnr_host_ps += p.rnr;
	cs->st.fc_send_drops += w.fc_send_drops;
	cs->st.fc_send_replays += w.fc_send_replays;
	cs->st.fc_send_eagain += w.fc_send_eagain;
	if (p.fc + p.rnr)
		host_core_charge(&c->core, sim_now(cs->sim), p.fc + p.rnr);
}

/* ---------------------------------------------------------------------------------------- one attempt */

static void rpc_timeout(struct sim *sim, void *obj, uint64_t arg);

static void post_and_send(struct sim *sim, void *obj, uint64_t arg)
{
	struct rpc_client_set *cs = obj;
	struct rpc_slot *s = &cs->slots[arg];
	uint32_t ci = slot_client(cs, s), si = slot_index(cs, s);
	struct rpc_proc *c = &cs->procs[ci];
	struct sw_addr dst = cs->w->targets[s->target];
	dst.vni = cs->vni;
	uint64_t hdr = rpc_hdr(ci, si, s->gen);
	if (!(s->pending & PEND_RESP)) {
		int rc = sw_recv(c->ep, 0x1000000ULL + (uint64_t)si * cs->resp_max, cs->resp_max, NULL, rpc_resp_tag(hdr), 0,
				 FI_TAGGED, s);
		if (rc == -FI_EAGAIN)
			goto again;
		if (rc)
			die("rpc_client %u: tagged fi_recv failed: %d", ci, rc);
		s->pending |= PEND_RESP;
	}
	int rc = sw_send(c->ep, 0x2000000ULL + (uint64_t)si * 65536, s->req_bytes, NULL, dst, 0, hdr,
			 FI_REMOTE_CQ_DATA | FI_COMPLETION, s);
	provider_work(cs, c);
	if (rc == -FI_EAGAIN)
		goto again;
	if (rc)
		die("rpc_client %u: fi_send failed: %d", ci, rc);
	s->pending |= PEND_SEND;
	s->state = S_WAIT;
	cs->st.attempts++;
	if (cs->timeout)
		s->timer = sim_timer_start(sim, bulk_client_timeout(cs), rpc_timeout, cs, arg);
	return;
again:
	/* Mercury queues the operation and retries it from its progress loop, on this core. */
	cs->st.eagain++;
	simtime_t at = sim_now(sim) + cs->eagain;
	sim_schedule_at(sim, c->core.free_at > at ? c->core.free_at : at, post_and_send, cs, arg);
}

/* post_and_send(cs, slot number): at a million clients each of these events reaches a slot, its process
 * and the provider endpoint, and that endpoint's NIC and EQ records, all cold: prefetch them a stage (one
 * pop) at a time, each stage one record deeper (sim_prefetch_hook_stage). */
static void post_and_send_prefetch(const void *obj, uint64_t arg)
{
	const struct rpc_client_set *cs = obj;
	__builtin_prefetch(&cs->slots[arg]);
	__builtin_prefetch(&cs->procs[arg / cs->W]);
}

static void post_and_send_prefetch_ep(const void *obj, uint64_t arg)
{
	const struct rpc_client_set *cs = obj;
	__builtin_prefetch(&cs->w->targets[cs->slots[arg].target]);
	sw_ep_post_prefetch(cs->procs[arg / cs->W].ep, 0);
}

static void post_and_send_prefetch_nic(const void *obj, uint64_t arg)
{
	const struct rpc_client_set *cs = obj;
	sw_ep_post_prefetch(cs->procs[arg / cs->W].ep, 1);
}

static void post_and_send_prefetch_eq_slot(const void *obj, uint64_t arg)
{
	const struct rpc_client_set *cs = obj;
	sw_ep_post_prefetch(cs->procs[arg / cs->W].ep, 2);
}

static void post_and_send_prefetch_eq(const void *obj, uint64_t arg)
{
	const struct rpc_client_set *cs = obj;
	sw_ep_post_prefetch(cs->procs[arg / cs->W].ep, 3);
}

static void dispatch(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	uint32_t ci = slot_client(cs, s);
	struct rpc_proc *c = &cs->procs[ci];
	take_credit(cs, c, ci, s->target);
	s->state = S_FWD;
	s->pending = 0;
	simtime_t at = host_core_charge(&c->core, sim_now(sim), cs->fwd);
	sim_schedule_at(sim, at, post_and_send, cs, slot_id(cs, s));
}

void rpc_client_ready_to_send(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	uint32_t ci = slot_client(cs, s);
	struct rpc_proc *c = &cs->procs[ci];
	if (!c->qlen && has_credit(cs, c, ci, s->target))
		dispatch(sim, cs, s);
	else
		enqueue(cs, c, ci, s);
}

static void begin_ev(struct sim *sim, void *obj, uint64_t arg)
{
	struct rpc_client_set *cs = obj;
	begin(sim, cs, &cs->slots[arg]);
}

static void attempt_ev(struct sim *sim, void *obj, uint64_t arg)
{
	struct rpc_client_set *cs = obj;
	attempt(sim, cs, &cs->slots[arg]);
}

/* The attempt is over and its MR (if any) released: retry, or think and start the next RPC. */
void rpc_client_attempt_over(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	struct rpc_proc *c = &cs->procs[slot_client(cs, s)];
	simtime_t now = sim_now(sim), at = c->core.free_at > now ? c->core.free_at : now;
	if (s->timed_out && !s->failed && s->retries < cs->max_retries && !cs->stopping) {
		s->retries++;
		cs->st.retries++;
		s->state = S_THINK;
		sim_schedule_at(sim, at, attempt_ev, cs, slot_id(cs, s));
		return;
	}
	if (s->timed_out || s->failed)
		cs->st.failed++;
	s->state = S_THINK;
	if (cs->think)
		at += (simtime_t)rng_exp(&c->rng, (double)cs->think);
	sim_schedule_at(sim, at, begin_ev, cs, slot_id(cs, s));
}

/* Both the send completion and the response (or the cancel of its receive) have been seen. */
static void finish(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	uint32_t ci = slot_client(cs, s);
	struct rpc_proc *c = &cs->procs[ci];
	simtime_t now = sim_now(sim);
	sim_timer_cancel(sim, &s->timer);
	give_credit(cs, c, ci, s->target);
	host_core_charge(&c->core, now, cs->complete);
	if (!s->timed_out && !s->failed) {
		cs->st.completed++;
		if (rpc_in_window(cs->w, now)) {
			cs->st.completed_in_window++;
			bm_add(&cs->st.rate, now);
			hist_add(cs->lat, now - s->t_start);
			if (cs->bulk)
				cs->st.bulk_bytes_in_window += cs->bulk->bytes;
		}
	}
	if (c->qlen)
		drain_queue(sim, cs, ci);
	if (cs->bulk && bulk_client_release(sim, cs, s))
		return; /* MR close in progress: rpc_client_attempt_over follows */
	rpc_client_attempt_over(sim, cs, s);
}

static void rpc_timeout(struct sim *sim, void *obj, uint64_t arg)
{
	struct rpc_client_set *cs = obj;
	struct rpc_slot *s = &cs->slots[arg];
	(void)sim;
	s->timed_out = true;
	cs->st.timeouts++;
	if (s->pending & PEND_RESP) {
		int rc = sw_cancel(cs->procs[slot_client(cs, s)].ep, s);
		if (rc && rc != -FI_ENOENT)
			die("rpc_client: cancel failed: %d", rc);
	}
}

static void on_comp(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct rpc_client_set *cs = ctx;
	struct rpc_slot *s = c->op_context;
	(void)ep;
	if (!s || s < cs->slots || s >= cs->slots + (size_t)cs->n * cs->W)
		die("rpc_client: completion with a foreign context");
	provider_work(cs, &cs->procs[slot_client(cs, s)]);
	if (s->state != S_WAIT) {
		cs->st.unexpected++;
		return;
	}
	if (c->flags & FI_SEND) {
		if (c->err) {
			cs->st.send_errors++;
			if (c->err == FI_ENOTCONN)
				cs->st.vni_drops++; /* C_RC_VNI_NOT_FOUND: the target does not accept our VNI */
			s->failed = true;
			if (s->pending & PEND_RESP)
				sw_cancel(cs->procs[slot_client(cs, s)].ep, s);
		}
		s->pending &= (uint8_t)~PEND_SEND;
	} else {
		if (c->err == FI_ECANCELED) {
			cs->st.canceled++;
		} else if (c->err) {
			cs->st.recv_errors++;
			s->failed = true;
		} else if (c->tag != rpc_resp_tag(rpc_hdr(slot_client(cs, s), slot_index(cs, s), s->gen))) {
			cs->st.unexpected++;
			return;
		} else if ((c->flags & FI_REMOTE_CQ_DATA) && c->data) {
			s->failed = true; /* the server answered with an error status */
			cs->st.server_errors++;
		}
		s->pending &= (uint8_t)~PEND_RESP;
	}
	if (!s->pending)
		finish(cs->sim, cs, s);
}

static void attempt(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	s->gen++;
	s->timed_out = false;
	s->failed = false;
	s->pending = 0;
	if (cs->bulk) {
		s->state = S_REG;
		bulk_client_register(sim, cs, s); /* continues with rpc_client_ready_to_send */
		return;
	}
	rpc_client_ready_to_send(sim, cs, s);
}

static void begin(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	if (cs->stopping) {
		/* A drained run then ends by itself once every RPC, response and MR close is over. */
		s->state = S_IDLE;
		cs->st.active--;
		return;
	}
	uint32_t ci = slot_client(cs, s);
	struct rpc_proc *c = &cs->procs[ci];
	s->target = (ci + c->rr++) % cs->T;
	s->req_bytes = cs->req_bytes;
	if (cs->req_bytes_max > cs->req_bytes)
		s->req_bytes += (uint32_t)rng_below(&c->rng, cs->req_bytes_max - cs->req_bytes + 1);
	s->retries = 0;
	s->t_start = sim_now(sim);
	cs->st.started++;
	attempt(sim, cs, s);
}

/* ---------------------------------------------------------------------------------------- window */

static void window_open(struct sim *sim, void *obj, uint64_t arg)
{
	struct rpc_client_set *cs = obj;
	(void)sim;
	(void)arg;
	cs->st.attempts_at_open = cs->st.attempts;
}

static void window_close(struct sim *sim, void *obj, uint64_t arg)
{
	struct rpc_client_set *cs = obj;
	(void)arg;
	cs->stopping = true;
	if (!cs->drain)
		sim_stop(sim);
}

/* Header parsing (rpc_world): the address the client packed into its request header. */
static bool client_addr_of(struct rpc_client_set *cs, uint32_t client, struct sw_addr *out)
{
	if (client >= cs->n)
		return false;
	*out = sw_ep_addr(cs->procs[client].ep);
	out->vni = cs->vni;
	return true;
}

uint32_t rpc_client_count(const struct rpc_client_set *cs) { return cs ? cs->n : 0; }
uint32_t rpc_client_window(const struct rpc_client_set *cs) { return cs ? cs->W : 0; }

/* ---------------------------------------------------------------------------------------- placement */

static const struct param placement_params[] = { RPC_PLACEMENT_ROWS };

void rpc_placement_read(struct rpc_placement *p, const struct cfg *sec)
{
	const struct param *P = placement_params;
	p->ppn = param_get_u64(sec, &P[0]);
	p->nics_per_node = param_get_u64(sec, &P[1]);
	p->first_nic = param_get_u64(sec, &P[2]);
	p->node_stride = param_get_u64(sec, &P[3]);
	if (!p->node_stride)
		p->node_stride = p->nics_per_node;
	p->spread_groups = param_get_u64(sec, &P[4]);
	p->group_stride = param_get_u64(sec, &P[5]);
}

/* Local rank r of node n is on the node's NIC r % nics_per_node; nodes are dealt round-robin over the
 * blocks (groups). */
uint32_t rpc_placement_nic(const struct rpc_placement *p, uint32_t i)
{
	uint32_t node = i / p->ppn, rank = i % p->ppn;
	uint32_t base = p->first_nic + (node % p->spread_groups) * p->group_stride;
	return rpc_node_nic(base, p->node_stride, node / p->spread_groups, rank % p->nics_per_node);
}

/* ---------------------------------------------------------------------------------------- build */

static void read_cfg(struct rpc_client_set *cs, const struct cfg *sec)
{
	const struct param *P = client_params;
	cs->section = sec;
	cs->n = param_get_u64(sec, &P[P_PROCS]);
	rpc_placement_read(&cs->place, sec);
	cs->W = param_get_u64(sec, &P[P_INFLIGHT]);
	cs->credits = param_get_u64(sec, &P[P_CREDITS]);
	cs->quota = param_get_u64(sec, &P[P_QUOTA]);
	cs->req_bytes = param_get_u64(sec, &P[P_REQ]);
	cs->req_bytes_max = param_get_u64(sec, &P[P_REQ_MAX]);
	if (cs->req_bytes_max && cs->req_bytes_max < cs->req_bytes)
		cfg_fail(sec, "request_bytes_max", "smaller than request_bytes (%u)", cs->req_bytes);
	cs->resp_max = param_get_u64(sec, &P[P_RESP_MAX]);
	cs->think = ns_to_ps(param_get(sec, &P[P_THINK]));
	cs->timeout = ns_to_ps(param_get(sec, &P[P_TIMEOUT]) * 1000.0);
	cs->max_retries = param_get_u64(sec, &P[P_RETRIES]);
	cs->fwd = ns_to_ps(param_get(sec, &P[P_FWD]));
	cs->complete = ns_to_ps(param_get(sec, &P[P_COMPLETE]));
	cs->warmup = ns_to_ps(param_get(sec, &P[P_WARMUP]) * 1000.0);
	cs->measure = ns_to_ps(param_get(sec, &P[P_MEASURE]) * 1000.0);
	cs->spread = ns_to_ps(param_get(sec, &P[P_SPREAD]) * 1000.0);
	cs->eagain = ns_to_ps(param_get(sec, &P[P_EAGAIN]));
	cs->drain = cfg_bool(sec, "drain", false);
	cs->cq_size = (uint32_t)cfg_u64(sec, "cq_size", 0, 0, 1u << 20);
	sw_env_scenario(cs->sim, &cs->env); /* the scenario's cxi.env, then this section's overrides */
	struct cfg cx = cfg_section(sec, "cxi");
	sw_env_from_cfg(&cs->env, &cx);
	cs->vni = (uint16_t)cfg_u64(sec, "vni", 0, 0, 65535);
	bulk_client_read_cfg(cs, sec);
}

static void open_proc(struct rpc_client_set *cs, struct nic *nic, struct rpc_proc *c, enum sw_proto proto)
{
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	a.env = cs->env;
	a.proto = proto;
	a.progress = SW_PROGRESS_AUTO;
	a.num_vnis = 1;
	a.vnis[0] = cs->vni;
	a.caps = FI_MSG | FI_TAGGED | (cs->bulk ? FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE : 0);
	/* Small queues: a client never has more than in_flight operations of each kind outstanding, and 53,248
	 * endpoints with the provider's default 131072-entry CQ would not fit in memory. */
	uint32_t depth = 2 * cs->W + 8 < 16 ? 16 : 2 * cs->W + 8;
	a.tx_size = depth;
	a.rx_size = depth;
	a.cq_size = cs->cq_size ? cs->cq_size : 2 * depth;
	a.comp = on_comp;
	a.comp_ctx = cs;
	a.on_fatal = rpc_on_fatal;
	a.fatal_ctx = &cs->fatal;
	int rc = sw_ep_open(nic, &a, &c->ep);
	if (rc)
		cfg_fail(cs->section, "processes", "cannot open client endpoint on NIC %u: error %d (too many processes "
			 "per NIC?)", nic_addr(nic), rc);
}

static void clients_free(void *p)
{
	struct rpc_client_set *cs = p;
	for (uint32_t i = 0; i < cs->n; i++)
		sw_ep_close(cs->procs[i].ep); /* destroy hooks run newest first: the NICs are still there */
	bulk_client_free(cs);
	free(cs->procs);
	free(cs->slots);
	free(cs->per_target);
	free(cs);
}

static void start_ev(struct sim *sim, void *obj, uint64_t arg)
{
	struct rpc_client_set *cs = obj;
	uint32_t ci = (uint32_t)arg;
	for (uint32_t i = 0; i < cs->W; i++)
		begin(sim, cs, &cs->slots[(size_t)ci * cs->W + i]);
}

static void clients_build(struct sim *sim, const struct cfg *sec)
{
	struct rpc_world *w = sim_world_get(sim, "rpc");
	if (!w)
		cfg_fail(sec, "processes", "rpc_client needs an rpc_server section (its targets)");
	struct rpc_client_set *cs = xcalloc(1, sizeof(*cs));
	cs->sim = sim;
	cs->w = w;
	read_cfg(cs, sec);
	cs->T = w->ntargets;
	if (!cs->vni)
		cs->vni = w->server->cfg.vnis[0];
	if (cs->credits && cs->T > 0)
		cs->per_target = xcalloc((size_t)cs->n * cs->T, 1);
	cs->procs = xcalloc_lines(cs->n, sizeof(*cs->procs));
	cs->slots = xcalloc_lines((size_t)cs->n * cs->W, sizeof(*cs->slots));
	w->clients = cs;
	w->client_addr_of = client_addr_of;
	w->win_start = cs->warmup;
	w->win_end = cs->warmup + cs->measure;
	bm_init(&cs->st.rate, w->win_start, w->win_end);
	bulk_client_build(sim, cs);
	cs->lat = stats_hist(sim_stats(sim), "rpc_client.latency_ps");
	for (uint32_t i = 0; i < cs->n; i++) {
		uint32_t addr = rpc_placement_nic(&cs->place, i);
		struct nic *nic = nic_get(sim, addr);
		if (!nic)
			cfg_fail(sec, "processes", "client %u (node %u): no NIC at address %u (fabric too small?)", i,
				 i / cs->place.ppn, addr);
		struct rpc_proc *c = &cs->procs[i];
		rng_init_idx(&c->rng, sim_seed(sim), "rpc_client", i);
		c->qhead = c->qtail = QNONE;
		open_proc(cs, nic, c, w->server->cfg.proto);
		struct sw_host_work setup; /* set up before the run: costs nothing in it */
		sw_ep_take_host_work(c->ep, &setup);
		simtime_t at = cs->spread ? rng_below(&c->rng, cs->spread) : 0;
		sim_schedule_at(sim, at, start_ev, cs, i);
	}
	/* Registered after the endpoints were opened, so it runs before the provider's own teardown. */
	sim_on_destroy(sim, clients_free, cs);
	sim_prefetch_hook(sim, post_and_send, post_and_send_prefetch);
	sim_prefetch_hook_stage(sim, post_and_send, 1, post_and_send_prefetch_ep);
	sim_prefetch_hook_stage(sim, post_and_send, 2, post_and_send_prefetch_nic);
	sim_prefetch_hook_stage(sim, post_and_send, 3, post_and_send_prefetch_eq_slot);
	sim_prefetch_hook_stage(sim, post_and_send, 4, post_and_send_prefetch_eq);
	cs->st.active = (uint64_t)cs->n * cs->W;
	sim_schedule_at(sim, w->win_start, window_open, cs, 0);
	sim_schedule_at(sim, w->win_end, window_close, cs, 0);
	ts_register(sim, "rpc_client.outstanding", &cs->st.outstanding);
	ts_register(sim, "rpc_client.queued", &cs->st.queued_now);
}

static void put_hist(FILE *f, const char *name, const struct histogram *h)
{
	fprintf(f, "\"%s\": {\"count\": %llu, \"mean\": %.1f, \"p50\": %llu, \"p90\": %llu, \"p99\": %llu, "
		   "\"p999\": %llu, \"max\": %llu}",
		name, (unsigned long long)h->count, h->count ? (double)h->sum / (double)h->count / 1000.0 : 0.0,
		(unsigned long long)(hist_quantile(h, 0.5) / 1000), (unsigned long long)(hist_quantile(h, 0.9) / 1000),
		(unsigned long long)(hist_quantile(h, 0.99) / 1000), (unsigned long long)(hist_quantile(h, 0.999) / 1000),
		(unsigned long long)(h->count ? h->max / 1000 : 0));
}

void rpc_client_put_hist_ns(FILE *f, const char *name, const struct histogram *h)
{
	put_hist(f, name, h);
}

static void clients_summary(struct sim *sim, FILE *f)
{
	struct rpc_world *w = sim_world_get(sim, "rpc");
	struct rpc_client_set *cs = w->clients;
	const struct rpc_client_stats *st = &cs->st;
	double win_s = (double)cs->measure * 1e-12;
	uint64_t hazards = 0, stuck = 0, nacks = 0, rnr_retries = 0;
	for (uint32_t i = 0; i < cs->n; i++) {
		const struct sw_ep_stats *e = sw_ep_stats(cs->procs[i].ep);
		hazards += e->mr_hazards;
		nacks += e->total_rnr_nacks;
		rnr_retries += e->total_retries;
	}
	for (size_t i = 0; i < (size_t)cs->n * cs->W; i++)
		stuck += cs->slots[i].state == S_WAIT;
	uint64_t nodes = (cs->n + cs->place.ppn - 1) / cs->place.ppn;
	fprintf(f, "{\"processes\": %u, \"nodes\": %llu, \"in_flight\": %u, \"ep_credits\": %u, \"quota\": %u, "
		   "\"request_bytes\": %u, \"targets\": %u, ",
		cs->n, (unsigned long long)nodes, cs->W, cs->credits, cs->quota, cs->req_bytes, cs->T);
	fprintf(f, "\"rpc_rate\": %.1f, \"completed_in_window\": %llu, \"started\": %llu, \"attempts\": %llu, "
		   "\"completed\": %llu, \"failed\": %llu, \"timeouts\": %llu, \"retries\": %llu, ",
		win_s > 0 ? (double)st->completed_in_window / win_s : 0.0, (unsigned long long)st->completed_in_window,
		(unsigned long long)st->started, (unsigned long long)st->attempts, (unsigned long long)st->completed,
		(unsigned long long)st->failed, (unsigned long long)st->timeouts, (unsigned long long)st->retries);
	/* Accounting: every started RPC is completed, failed, or still active at the end.  In a drained run
	 * nothing may remain waiting ("stuck": a lost request or response). */
	uint64_t active_rpcs = st->started - st->completed - st->failed;
	fprintf(f, "\"active_at_end\": %llu, \"stuck\": %llu, \"lost\": %llu, \"unexpected_completions\": %llu, "
		   "\"send_errors\": %llu, \"recv_errors\": %llu, \"server_errors\": %llu, \"canceled\": %llu, ",
		(unsigned long long)active_rpcs, (unsigned long long)stuck,
		(unsigned long long)(cs->drain && cs->stopping ? stuck : 0), (unsigned long long)st->unexpected,
		(unsigned long long)st->send_errors, (unsigned long long)st->recv_errors,
		(unsigned long long)st->server_errors, (unsigned long long)st->canceled);
	fprintf(f, "\"queued\": %llu, \"max_queue\": %u, \"max_inflight_per_process\": %u, "
		   "\"max_inflight_per_target\": %u, \"eagain\": %llu, \"mr_hazards\": %llu, \"rnr_nacks\": %llu, "
		   "\"rnr_retries\": %llu, \"vni_drops\": %llu, ",
		(unsigned long long)st->queued, st->max_queue, st->max_inflight, st->max_per_target,
		(unsigned long long)st->eagain, (unsigned long long)hazards, (unsigned long long)nacks,
		(unsigned long long)rnr_retries, (unsigned long long)st->vni_drops);
	fprintf(f, "\"fc_send_drops\": %llu, \"fc_send_replays\": %llu, \"fc_send_eagain\": %llu, "
		   "\"fc_host_ns\": %.0f, \"rnr_host_ns\": %.0f, ",
		(unsigned long long)st->fc_send_drops, (unsigned long long)st->fc_send_replays,
		(unsigned long long)st->fc_send_eagain, (double)st->fc_host_ps / 1000.0, (double)st->rnr_host_ps / 1000.0);
	struct bm_summary bs;
	bm_summarise(&cs->st.rate, &bs);
	fputs("\"rpc_rate_steady\": ", f);
	bm_put_json(f, &bs);
	bm_warn("rpc_client.rpc_rate", &bs);
	fputs(", ", f);
	rpc_put_fatal(f, &cs->fatal);
	fputs(", ", f);
	put_hist(f, "latency_ns", cs->lat);
	fputs(", \"bulk\": ", f);
	bulk_client_summary(cs, f, win_s);
	fputs("}", f);
}

/* Memory accounting: the workload's own state per process, and (unit "client_process") all a process
 * owns: that, its provider endpoint, the NIC-side objects of its LNI and the records on its lists. */
static void clients_memory(struct sim *sim, struct mem_report *r)
{
	struct rpc_world *w = sim_world_get(sim, "rpc");
	const struct rpc_client_set *cs = w->clients;
	uint64_t own = sizeof(*cs) + (uint64_t)cs->n * (sizeof(*cs->procs) + cs->W * sizeof(*cs->slots)) +
		       (cs->per_target ? (uint64_t)cs->n * cs->T : 0) + bulk_client_bytes(cs);
	uint64_t all = own;
	for (uint32_t i = 0; i < cs->n; i++)
		all += sw_ep_bytes(cs->procs[i].ep);
	mem_add(r, "rpc_client.process", cs->n, own);
	mem_unit(r, "client_process", cs->n, all);
}

static struct model client_model = {
	.key = "rpc_client",
	.order = 31,
	.build = clients_build,
	.summary = clients_summary,
	.memory = clients_memory,
	.params = client_params,
	.nparams = ARRAY_SIZE(client_params),
};
MODEL_REGISTER(client_model)
