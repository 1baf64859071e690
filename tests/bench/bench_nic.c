/* NIC model benchmarks (driven through the command interface, nic.h):
 *   1. 8-byte Put message rate between two NICs, matched in hardware: simulated and wall rates;
 *   2. wall cost per simulated message with 1, 1,000 and 16,384 LEs posted on the target PtlTE (the
 *      matching LE last, so each message walks the whole list);
 *   3. the same 8-byte stream through the provider software layer (tagged sends, hardware matching);
 *   4. provider-layer messages that arrive before their receive (unexpected: 8-byte eager in hardware and
 *      software matching, 64 KiB rendezvous), in rounds of 64 sends then 64 receives.
 * The engine's own hold-model rate on this machine, measured in the same run, is the peer for the wall
 * figures: "events/msg" and "x hold" say how much of the engine's raw speed a NIC message costs. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../sim/cfg.h"
#include "../../sim/engine.h"
#include "../../sim/model.h"
#include "../../sim/nic/nic.h"
#include "../../sim/nic/sw.h"
#include "../../sim/rng.h"
#include "../../sim/util.h"

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct sim *build(struct json_object **root, uint32_t pe_les)
{
	char json[256];
	snprintf(json, sizeof(json),
		 "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2}, \"nic\": {\"pe_les\": %u}}", pe_les);
	*root = json_tokener_parse(json);
	struct sim *sim = sim_create(1);
	struct cfg r = cfg_root(*root, "bench");
	for (const struct model *m = model_first(); m; m = m->next) {
		if (!cfg_has(&r, m->key))
			continue;
		struct cfg sec = cfg_section(&r, m->key);
		m->build(sim, &sec);
	}
	return sim;
}

/* ---------------------------------------------------------------- hardware-level stream */

struct stream {
	struct sim *sim;
	struct nic *a, *b;
	struct nic_lni *la, *lb;
	uint32_t eq_a, eq_b, ptn;
	struct nic_cmdq *txq, *tgq;
	uint64_t sent, done, total, window;
	uint64_t src;
};

static void put_one(struct stream *s)
{
	struct nic_cmd c = { .op = NIC_CMD_IDC_PUT };
	c.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 1, .index = 0, .vni = 10, .length = 8,
				      .match_bits = 1, .flags = NIC_DMA_EVENT_SEND_DISABLE, .eqn = NIC_NONE,
				      .ctn = NIC_NONE, .src_pid = 2, .idc_data = &s->src };
	if (nic_cmdq_emit(s->txq, &c) == 0)
		s->sent++;
}

static void pump(struct stream *s)
{
	while (s->sent < s->total && s->sent - s->done < s->window)
		put_one(s);
	nic_cmdq_ring(s->txq);
}

static void on_tx_event(void *ctx, struct nic *nic, uint32_t eqn)
{
	struct stream *s = ctx;
	const struct nic_event *ev;
	while ((ev = nic_eq_peek(nic, eqn))) {
		if (ev->type == C_EVENT_ACK) {
			if (ev->rc != C_RC_OK) {
				fprintf(stderr, "bench: unexpected ACK rc %s\n", c_rc_name(ev->rc));
				exit(1);
			}
			s->done++;
		}
		nic_eq_next(nic, eqn);
	}
	nic_eq_ack(nic, eqn);
	pump(s);
}

static void on_rx_event(void *ctx, struct nic *nic, uint32_t eqn)
{
	(void)ctx;
	while (nic_eq_peek(nic, eqn))
		nic_eq_next(nic, eqn);
	nic_eq_ack(nic, eqn);
}

static void emit_wait(struct stream *s, const struct nic_cmd *c)
{
	while (nic_cmdq_emit(s->tgq, c)) {
		nic_cmdq_ring(s->tgq);
		sim_run(s->sim);
	}
}

static void tgt(struct stream *s, uint64_t mb, uint64_t ib, uint32_t flags)
{
	struct nic_cmd c = { .op = NIC_CMD_TGT_APPEND };
	c.tgt = (struct nic_tgt_cmd){ .ptn = s->ptn, .list = C_PTL_LIST_PRIORITY, .le_flags = flags,
				      .ctn = NIC_NONE, .length = 1 << 20, .match_id = C_MATCH_ID_ANY,
				      .match_bits = mb, .ignore_bits = ib };
	emit_wait(s, &c);
}

/* The LEs posted ahead of the one that matches: exact ones, ones that ignore the low byte (tag wildcards),
 * or ones with nine different ignore masks (more than the NIC indexes: the list is walked). */
enum ahead { AHEAD_EXACT, AHEAD_MASKED, AHEAD_MIXED };
static const char *const ahead_name[] = { "exact", "masked", "9 masks" };

/* Returns wall seconds; *sim_ps gets the simulated time of the stream. */
static double stream_run(uint32_t posted, enum ahead kind, uint64_t total, simtime_t *sim_ps, uint64_t *events)
{
	struct json_object *root;
	struct sim *sim = build(&root, 16384);
	struct stream s = { .sim = sim, .total = total, .window = 64 };
	s.a = nic_get(sim, 0);
	s.b = nic_get(sim, 1);
	nic_lni_alloc(s.a, NIC_SVC_DEFAULT, NULL, NULL, &s.la);
	nic_lni_alloc(s.b, NIC_SVC_DEFAULT, NULL, NULL, &s.lb);
	struct nic_eq_attr ea = { .slots = 4096, .notify = on_tx_event, .notify_ctx = &s };
	nic_eq_alloc(s.la, &ea, &s.eq_a);
	ea.notify = on_rx_event;
	ea.reserved_fc = 1;
	nic_eq_alloc(s.lb, &ea, &s.eq_b);
	struct nic_pte_opts o = { .is_matching = true };
	nic_pte_alloc(s.lb, s.eq_b, &o, &s.ptn);
	nic_pte_map(s.lb, s.ptn, 10, 1, 0);
	struct nic_cmdq_attr qa = { .target = false, .slots = 1024, .eqn = s.eq_a };
	nic_cmdq_alloc(s.la, &qa, &s.txq);
	qa.target = true;
	qa.eqn = s.eq_b;
	nic_cmdq_alloc(s.lb, &qa, &s.tgq);
	/* posted - 1 LEs that never match, then the one that does (not use-once: it matches every Put). */
	uint32_t evd = C_LE_EVENT_LINK_DISABLE | C_LE_EVENT_SUCCESS_DISABLE | C_LE_EVENT_COMM_DISABLE;
	for (uint32_t i = 0; i + 1 < posted; i++) {
		if (kind == AHEAD_EXACT)
			tgt(&s, 1000 + i, 0, C_LE_OP_PUT | evd);
		else if (kind == AHEAD_MASKED)
			tgt(&s, (uint64_t)(1000 + i) << 8, 0xff, C_LE_OP_PUT | evd);
		else
			tgt(&s, (uint64_t)(1000 + i) << 16, 1ULL << (i % 9), C_LE_OP_PUT | evd);
	}
	tgt(&s, 1, 0, C_LE_OP_PUT | evd);
	struct nic_cmd st = { .op = NIC_CMD_TGT_SETSTATE };
	st.tgt = (struct nic_tgt_cmd){ .ptn = s.ptn, .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS };
	emit_wait(&s, &st);
	nic_cmdq_ring(s.tgq);
	sim_run(sim);
	struct nic_pte_status ps;
	nic_pte_status(s.b, s.ptn, &ps);
	if (ps.le_count[C_PTL_LIST_PRIORITY] != posted) {
		fprintf(stderr, "bench: %u LEs posted, %u expected\n", ps.le_count[C_PTL_LIST_PRIORITY], posted);
		exit(1);
	}
	simtime_t t0 = sim_now(sim);
	uint64_t e0 = sim_events_processed(sim);
	double w0 = wall();
	pump(&s);
	sim_run(sim);
	double w = wall() - w0;
	if (s.done != total) {
		fprintf(stderr, "bench: %llu of %llu Puts completed\n", (unsigned long long)s.done,
			(unsigned long long)total);
		exit(1);
	}
	*sim_ps = sim_now(sim) - t0;
	*events = sim_events_processed(sim) - e0;
	sim_destroy(sim);
	json_object_put(root);
	return w;
}

/* ---------------------------------------------------------------- software-layer stream */

struct swstream {
	struct sw_ep *a, *b;
	struct sw_addr dst;
	uint64_t sent, done, total, window, recvd;
	uint64_t buf;
};

static void sw_pump(struct swstream *s)
{
	while (s->sent < s->total && s->sent - s->done < s->window) {
		if (sw_send(s->a, 0, 8, NULL, s->dst, 1, 0, FI_TAGGED, NULL))
			break;
		s->sent++;
	}
}

static void sw_tx(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct swstream *s = ctx;
	(void)ep;
	if (c->err) {
		fprintf(stderr, "bench: send error %d\n", c->err);
		exit(1);
	}
	s->done++;
	sw_pump(s);
}

static void sw_rx(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct swstream *s = ctx;
	(void)c;
	s->recvd++;
	if (s->recvd + 256 <= s->total)
		sw_recv(ep, 0, 64, NULL, 1, 0, FI_TAGGED, NULL);
}

static double sw_stream_run(uint64_t total, simtime_t *sim_ps, uint64_t *events)
{
	struct json_object *root;
	struct sim *sim = build(&root, 16384);
	struct swstream s = { .total = total, .window = 64 };
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	a.comp = sw_tx;
	a.comp_ctx = &s;
	sw_ep_open(nic_get(sim, 0), &a, &s.a);
	a.comp = sw_rx;
	sw_ep_open(nic_get(sim, 1), &a, &s.b);
	s.dst = sw_ep_addr(s.b);
	for (int i = 0; i < 256; i++)
		sw_recv(s.b, 0, 64, NULL, 1, 0, FI_TAGGED, NULL);
	sim_run(sim);
	simtime_t t0 = sim_now(sim);
	uint64_t e0 = sim_events_processed(sim);
	double w0 = wall();
	sw_pump(&s);
	sim_run(sim);
	double w = wall() - w0;
	if (s.done != total || s.recvd != total) {
		fprintf(stderr, "bench: sw stream %llu/%llu/%llu\n", (unsigned long long)s.done,
			(unsigned long long)s.recvd, (unsigned long long)total);
		exit(1);
	}
	*sim_ps = sim_now(sim) - t0;
	*events = sim_events_processed(sim) - e0;
	sw_ep_close(s.a);
	sw_ep_close(s.b);
	sim_destroy(sim);
	json_object_put(root);
	return w;
}

/* ---------------------------------------------------------------- software-layer unexpected messages */

struct swux {
	uint64_t tx, rx;
};

static void ux_tx(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct swux *s = ctx;
	(void)ep;
	if (c->err) {
		fprintf(stderr, "bench: unexpected-stream send error %d\n", c->err);
		exit(1);
	}
	s->tx++;
}

static void ux_rx(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct swux *s = ctx;
	(void)ep;
	if (c->err) {
		fprintf(stderr, "bench: unexpected-stream receive error %d\n", c->err);
		exit(1);
	}
	s->rx++;
}

/* Rounds of 64 tagged sends of `len` bytes that land before any receive, then the 64 receives that take
 * them (from the NIC's unexpected list, or software's). */
static double sw_ux_run(enum sw_match_mode mode, uint64_t len, uint64_t total, simtime_t *sim_ps, uint64_t *events)
{
	enum { ROUND = 64 };
	struct json_object *root;
	struct sim *sim = build(&root, 16384);
	struct swux s = { 0 };
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	a.env.rx_match_mode = mode;
	a.comp = ux_tx;
	a.comp_ctx = &s;
	struct sw_ep *tx, *rx;
	sw_ep_open(nic_get(sim, 0), &a, &tx);
	a.comp = ux_rx;
	sw_ep_open(nic_get(sim, 1), &a, &rx);
	struct sw_addr dst = sw_ep_addr(rx);
	sim_run(sim);
	simtime_t t0 = sim_now(sim);
	uint64_t e0 = sim_events_processed(sim);
	double w0 = wall();
	for (uint64_t done = 0; done < total; done += ROUND) {
		for (int i = 0; i < ROUND; i++)
			if (sw_send(tx, 0, len, NULL, dst, 1, 0, FI_TAGGED, NULL)) {
				fprintf(stderr, "bench: unexpected-stream send refused\n");
				exit(1);
			}
		sim_run(sim);
		for (int i = 0; i < ROUND; i++)
			if (sw_recv(rx, 0, len, NULL, 1, 0, FI_TAGGED, NULL)) {
				fprintf(stderr, "bench: unexpected-stream receive refused\n");
				exit(1);
			}
		sim_run(sim);
	}
	double w = wall() - w0;
	uint64_t n = (total + ROUND - 1) / ROUND * ROUND;
	if (s.tx != n || s.rx != n) {
		fprintf(stderr, "bench: unexpected stream %llu/%llu/%llu\n", (unsigned long long)s.tx,
			(unsigned long long)s.rx, (unsigned long long)n);
		exit(1);
	}
	*sim_ps = sim_now(sim) - t0;
	*events = sim_events_processed(sim) - e0;
	sw_ep_close(tx);
	sw_ep_close(rx);
	sim_destroy(sim);
	json_object_put(root);
	return w;
}

/* ---------------------------------------------------------------- peer: the engine's hold model */

struct hold {
	struct rng rng;
};

static void hold_fire(struct sim *sim, void *obj, uint64_t arg)
{
	struct hold *h = obj;
	(void)arg;
	sim_schedule(sim, rng_below(&h->rng, 2000000), hold_fire, h, 0);
}

static double hold_rate(void)
{
	struct sim *sim = sim_create(1);
	struct hold h;
	rng_init(&h.rng, 1, "hold");
	for (int i = 0; i < 10000; i++)
		sim_schedule(sim, rng_below(&h.rng, 2000000), hold_fire, &h, 0);
	uint64_t n = 5000000;
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_TIME_MAX, .event_limit = n });
	double w0 = wall();
	sim_run(sim);
	double w = wall() - w0;
	sim_destroy(sim);
	return (double)n / w;
}

int main(int argc, char **argv)
{
	unsigned long long n = 200000;
	/* 0 messages would print NaN and infinite rates */
	if (argc > 2 || (argc == 2 && (opt_u64(argv[0], "MESSAGES", argv[1], UINT64_MAX, &n) || !n))) {
		fprintf(stderr, "usage: %s [MESSAGES]   (a positive count of messages per run, default 200000)\n", argv[0]);
		return 2;
	}
	double hold = hold_rate();
	printf("nic bench: engine hold-model peer on this machine: %.2f M events/s\n", hold * 1e-6);
	simtime_t sp;
	uint64_t ev;
	double w = stream_run(1, AHEAD_EXACT, n, &sp, &ev);
	double epm = (double)ev / (double)n;
	printf("nic put8 (hardware-matched, 1 LE): %llu msgs, simulated %.2f Mmsg/s, wall %.2f Mmsg/s, %.1f events/msg, "
	       "%.2fx hold-model event cost per msg\n",
	       (unsigned long long)n, (double)n / ((double)sp * 1e-12) * 1e-6, (double)n / w * 1e-6, epm,
	       (w / (double)n) * hold);
	/* The walk the NIC is charged for is the same with or without its index (simulated us/msg); the
	 * index makes the wall cost independent of the list (exact and masked), the walked list does not. */
	static const uint32_t posted[] = { 1, 1000, 16384 };
	double us1 = 0;
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned i = k ? 1 : 0; i < 3; i++) {
			uint64_t m = n / 2;
			if (k == AHEAD_MIXED)
				m = posted[i] >= 16384 ? n / 40 : n / 10;
			w = stream_run(posted[i], (enum ahead)k, m, &sp, &ev);
			double us = w / (double)m * 1e6;
			if (posted[i] == 1)
				us1 = us;
			printf("nic put8 with %5u posted LEs (%s, match at the end): wall %.3f us/msg (%.2fx 1 LE), "
			       "simulated %.3f us/msg, %.1f events/msg\n",
			       posted[i], ahead_name[posted[i] == 1 ? 0 : k], us, us / us1, (double)sp / (double)m * 1e-6,
			       (double)ev / (double)m);
		}
	}
	w = sw_stream_run(n / 2, &sp, &ev);
	printf("sw tagged send8 (provider layer, hardware matching): %llu msgs, simulated %.2f Mmsg/s, wall %.2f Mmsg/s, "
	       "%.1f events/msg\n",
	       (unsigned long long)(n / 2), (double)(n / 2) / ((double)sp * 1e-12) * 1e-6,
	       (double)(n / 2) / w * 1e-6, (double)ev / (double)(n / 2));
	static const struct {
		const char *what;
		enum sw_match_mode mode;
		uint64_t len, div;
	} ux[] = { { "send8, hardware matching", SW_MATCH_HARDWARE, 8, 2 },
		   { "send8, software matching", SW_MATCH_SOFTWARE, 8, 2 },
		   { "send 64 KiB rendezvous, hardware matching", SW_MATCH_HARDWARE, 65536, 20 } };
	for (unsigned i = 0; i < sizeof(ux) / sizeof(ux[0]); i++) {
		uint64_t m = n / ux[i].div;
		w = sw_ux_run(ux[i].mode, ux[i].len, m, &sp, &ev);
		printf("sw unexpected tagged %s: %llu msgs, wall %.3f us/msg, simulated %.3f us/msg, %.1f events/msg\n",
		       ux[i].what, (unsigned long long)m, w / (double)m * 1e6, (double)sp / (double)m * 1e-6,
		       (double)ev / (double)m);
	}
	return 0;
}
