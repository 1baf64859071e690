/* Bulk RPCs (seed 000 section 4).
 *
 * Client: before each attempt, register an MR over the slot's buffer under the scenario's MR method (the
 * provider settings of seed 000 section 4.2: optimized MRs with client keys under 100, standard MRs, the
 * provider key cache, or MR match events); its cost is the provider's (sw.h), measured here per call as
 * Mercury's NA_Mem_register / NA_Mem_deregister would see it (seed 000 Fig 9).  The request carries the
 * descriptor (key, address, length, operation, start time T and timeout).  After the response, or after a
 * timeout, the client deregisters.
 *
 * Server: unpack the descriptor and issue the RMA: a bulk write (the client's data to the server) is an RMA
 * read by the server, a bulk read an RMA write (section 4.1).  Its completion triggers the response.
 *
 * Transfer deadlines (section 4.3): with `deadlines`, the client's deadline is D_client = T + 2 T_timeout
 * (its timeout doubles) and the server does not start the RMA after D_server = T + T_timeout; it answers
 * with an error instead.  Without deadlines and with the key cache, an RMA that lands after the client's
 * timeout touches a closed but still exposed MR: the provider counts it as a hazard (mr_hazards).
 */
#include <stdlib.h>
#include <string.h>

#include "../model.h"
#include "../util.h"
#include "bulk.h"
#include "rpc_client.h"
#include "rpc_server.h"

struct bulk_slot {
	struct rpc_client_set *cs;
	struct rpc_slot *slot;
	struct sw_mr *mr;
	simtime_t t_call;
	struct bulk_desc desc;
	uint32_t desc_gen;
};

struct bulk_server {
	simtime_t issue;
	uint64_t local_addr;
	uint64_t rma_started, rma_done, rma_errors, deadline_skips, bytes, stale;
};

static const char *const op_names[] = { "none", "write", "read", NULL };
static const char *const method_names[] = { "optimized", "standard", "prov_key_cache", "match_events", NULL };

const char *bulk_op_name(enum bulk_op op) { return op_names[op]; }
const char *bulk_mr_method_name(enum mr_method m) { return method_names[m]; }

/* The provider settings each MR method stands for (seed 000 4.2.1; cassini-reference "Memory registration"). */
void bulk_apply_mr_method(enum mr_method m, struct sw_env *env)
{
	env->optimized_mrs = m == MR_OPTIMIZED;
	env->prov_key_cache = m == MR_PROV_KEY_CACHE;
	env->mr_match_events = m == MR_MATCH_EVENTS;
}

/* ---------------------------------------------------------------------------------------- client */

void bulk_client_read_cfg(struct rpc_client_set *cs, const struct cfg *sec)
{
	if (!cfg_has(sec, "bulk"))
		return;
	struct cfg b = cfg_section(sec, "bulk");
	uint64_t bytes = cfg_u64(&b, "bytes", 1048576, 0, 1ULL << 31);
	int op = cfg_enum(&b, "op", BULK_WRITE, op_names);
	int method = cfg_enum(&b, "mr_method", MR_MATCH_EVENTS, method_names);
	bool deadlines = cfg_bool(&b, "deadlines", false);
	if (!bytes || op == BULK_NONE)
		return;
	cs->bulk = xcalloc(1, sizeof(*cs->bulk));
	cs->bulk->bytes = (uint32_t)bytes;
	cs->bulk->op = op;
	cs->bulk->method = method;
	cs->bulk->deadlines = deadlines;
	if (method == MR_OPTIMIZED && cs->W > SW_MR_OPT_KEYS)
		cfg_fail(&b, "mr_method", "optimized MRs need client keys under %d: in_flight %u is too many", SW_MR_OPT_KEYS,
			 cs->W);
	if (deadlines && !cs->timeout)
		cfg_fail(&b, "deadlines", "transfer deadlines need rpc_client.timeout_us");
	bulk_apply_mr_method(method, &cs->env);
}

static const struct bulk_desc *desc_of(struct rpc_client_set *cs, uint32_t client, uint32_t slot, uint32_t gen)
{
	if (!cs->bulk || client >= cs->n || slot >= cs->W)
		return NULL;
	const struct bulk_slot *b = &cs->bulk->slots[(size_t)client * cs->W + slot];
	return b->desc_gen == gen ? &b->desc : NULL;
}

uint64_t bulk_client_bytes(const struct rpc_client_set *cs)
{
	return cs->bulk ? sizeof(*cs->bulk) + (cs->bulk->slots ? (uint64_t)cs->n * cs->W * sizeof(*cs->bulk->slots) : 0) : 0;
}

void bulk_client_build(struct sim *sim, struct rpc_client_set *cs)
{
	if (!cs->bulk)
		return;
	/* Both sides of an RMA must agree on what a key means (the initiator decides from its own
	 * FI_CXI_OPTIMIZED_MRS whether a key is optimized), as one job environment gives them. */
	const struct sw_env *se = &cs->w->server->cfg.env;
	if (se->optimized_mrs != cs->env.optimized_mrs || se->prov_key_cache != cs->env.prov_key_cache ||
	    se->mr_match_events != cs->env.mr_match_events) {
		struct cfg b = cfg_section(cs->section, "bulk");
		cfg_fail(&b, "mr_method",
			 "'%s' needs the server endpoints to use the same MR settings: set cxi.env {optimized_mrs: %d, "
			 "prov_key_cache: %d, mr_match_events: %d}",
			 bulk_mr_method_name(cs->bulk->method), cs->env.optimized_mrs, cs->env.prov_key_cache,
			 cs->env.mr_match_events);
	}
	size_t n = (size_t)cs->n * cs->W;
	cs->bulk->slots = xcalloc(n, sizeof(*cs->bulk->slots));
	for (size_t i = 0; i < n; i++) {
		cs->bulk->slots[i].cs = cs;
		cs->bulk->slots[i].slot = &cs->slots[i];
	}
	cs->bulk->reg = stats_hist(sim_stats(sim), "rpc_client.bulk.mr_reg_ps");
	cs->bulk->dereg = stats_hist(sim_stats(sim), "rpc_client.bulk.mr_dereg_ps");
	cs->w->bulk_desc_of = desc_of;
}

void bulk_client_free(struct rpc_client_set *cs)
{
	if (!cs->bulk)
		return;
	free(cs->bulk->slots);
	free(cs->bulk);
}

simtime_t bulk_client_timeout(const struct rpc_client_set *cs)
{
	return cs->bulk && cs->bulk->deadlines ? 2 * cs->timeout : cs->timeout;
}

static void reg_done(void *ctx, struct sw_mr *mr, int ret)
{
	struct bulk_slot *b = ctx;
	struct rpc_client_set *cs = b->cs;
	struct rpc_slot *s = b->slot;
	struct sim *sim = cs->sim;
	if (ret) {
		/* Registration refused (e.g. no resources): the attempt fails without being sent. */
		cs->bulk->reg_fail++;
		b->mr = NULL;
		s->failed = true;
		rpc_client_attempt_over(sim, cs, s);
		return;
	}
	hist_add(cs->bulk->reg, sim_now(sim) - b->t_call);
	cs->bulk->regs++;
	b->mr = mr;
	b->desc.key = sw_mr_key(mr);
	b->desc.addr = 0; /* RMA addresses are offsets into the MR (cxi does not use FI_MR_VIRT_ADDR) */
	b->desc.len = cs->bulk->bytes;
	b->desc.op = (uint8_t)cs->bulk->op;
	b->desc.start = s->t_start;
	b->desc.timeout = cs->bulk->deadlines ? cs->timeout : 0;
	b->desc_gen = s->gen;
	rpc_client_ready_to_send(sim, cs, s);
}

void bulk_client_register(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	size_t id = (size_t)(s - cs->slots);
	struct bulk_slot *b = &cs->bulk->slots[id];
	struct rpc_proc *c = &cs->procs[id / cs->W];
	uint32_t si = (uint32_t)(id % cs->W);
	uint64_t access = cs->bulk->op == BULK_WRITE ? FI_REMOTE_READ : FI_REMOTE_WRITE;
	uint64_t key = 0, flags = 0;
	switch (cs->bulk->method) {
	case MR_OPTIMIZED: key = si; break;                 /* client keys under 100: optimized */
	case MR_STANDARD: key = SW_MR_OPT_KEYS + si; break;  /* client keys from 100: standard */
	default: flags = SW_MR_PROV_KEY; break;
	}
	b->t_call = sim_now(sim);
	struct sw_mr *mr = NULL;
	int rc = sw_mr_reg(c->ep, 0x100000000ULL + id * cs->bulk->bytes, cs->bulk->bytes, access, key, flags, reg_done, b,
			   &mr);
	if (rc)
		reg_done(b, NULL, rc);
}

static void dereg_done(void *ctx, struct sw_mr *mr, int ret)
{
	struct bulk_slot *b = ctx;
	struct rpc_client_set *cs = b->cs;
	(void)mr;
	if (ret)
		die("rpc_client: MR close failed: %d", ret);
	hist_add(cs->bulk->dereg, sim_now(cs->sim) - b->t_call);
	cs->bulk->deregs++;
	b->mr = NULL;
	rpc_client_attempt_over(cs->sim, cs, b->slot);
}

bool bulk_client_release(struct sim *sim, struct rpc_client_set *cs, struct rpc_slot *s)
{
	struct bulk_slot *b = &cs->bulk->slots[(size_t)(s - cs->slots)];
	if (!b->mr)
		return false;
	s->state = S_DEREG;
	b->t_call = sim_now(sim);
	int rc = sw_mr_close(b->mr, dereg_done, b);
	if (rc)
		die("rpc_client: fi_close of an MR failed: %d", rc);
	return true;
}

void bulk_client_summary(struct rpc_client_set *cs, FILE *f, double window_s)
{
	if (!cs->bulk) {
		fputs("null", f);
		return;
	}
	struct bulk_client *b = cs->bulk;
	fprintf(f, "{\"bytes\": %u, \"op\": \"%s\", \"mr_method\": \"%s\", \"deadlines\": %s, \"bandwidth_gbs\": %.3f, "
		   "\"registrations\": %llu, \"deregistrations\": %llu, \"registration_failures\": %llu, ",
		b->bytes, bulk_op_name(b->op), bulk_mr_method_name(b->method), b->deadlines ? "true" : "false",
		window_s > 0 ? (double)cs->st.bulk_bytes_in_window / window_s / 1e9 : 0.0, (unsigned long long)b->regs,
		(unsigned long long)b->deregs, (unsigned long long)b->reg_fail);
	rpc_client_put_hist_ns(f, "mr_reg_ns", b->reg);
	fputs(", ", f);
	rpc_client_put_hist_ns(f, "mr_dereg_ns", b->dereg);
	fputs("}", f);
}

/* ---------------------------------------------------------------------------------------- server */

void bulk_server_read_cfg(struct rpc_server *s, const struct cfg *sec)
{
	struct cfg b = cfg_section(sec, "bulk");
	s->bulk = xcalloc(1, sizeof(*s->bulk));
	s->bulk->issue = ns_to_ps(cfg_double(&b, "issue_ns", 200, 0, 1e9)); /* assumed: unpack descriptor, post RMA */
	s->bulk->local_addr = 0x800000000ULL;
}

void bulk_server_build(struct sim *sim, struct rpc_server *s)
{
	(void)sim;
	(void)s;
}

void bulk_server_free(struct rpc_server *s)
{
	free(s->bulk);
}

bool bulk_snapshot(struct rpc_server *s, uint64_t hdr, struct bulk_desc *out)
{
	struct rpc_world *w = &s->world;
	if (!w->bulk_desc_of)
		return false;
	const struct bulk_desc *d = w->bulk_desc_of(w->clients, rpc_hdr_client(hdr), rpc_hdr_slot(hdr), rpc_hdr_gen(hdr));
	if (!d) {
		s->bulk->stale++;
		return false;
	}
	*out = *d;
	return true;
}

simtime_t bulk_server_issue_cost(struct rpc_server *s)
{
	return s->bulk->issue;
}

int bulk_server_start(struct sim *sim, struct rpc_server *s, struct sw_ep *ep, const struct bulk_desc *d,
		      struct sw_addr client, void *ctx)
{
	struct bulk_server *b = s->bulk;
	if (d->timeout && sim_now(sim) >= d->start + d->timeout) {
		b->deadline_skips++;
		return -1;
	}
	int rc = d->op == BULK_WRITE ? sw_read(ep, b->local_addr, d->len, client, d->addr, d->key, FI_COMPLETION, ctx)
				     : sw_write(ep, b->local_addr, d->len, client, d->addr, d->key, 0, FI_COMPLETION, ctx);
	if (rc == -FI_EAGAIN)
		return rc;
	if (rc) {
		b->rma_errors++;
		return -1;
	}
	b->rma_started++;
	b->bytes += d->len;
	return 0;
}

void bulk_server_done(struct rpc_server *s, int err)
{
	s->bulk->rma_done++;
	if (err)
		s->bulk->rma_errors++;
}

void bulk_server_summary(struct rpc_server *s, FILE *f, double window_s)
{
	struct bulk_server *b = s->bulk;
	(void)window_s;
	fprintf(f, "{\"rma_started\": %llu, \"rma_done\": %llu, \"rma_errors\": %llu, \"deadline_skips\": %llu, "
		   "\"bytes\": %llu, \"stale_descriptors\": %llu}",
		(unsigned long long)b->rma_started, (unsigned long long)b->rma_done, (unsigned long long)b->rma_errors,
		(unsigned long long)b->deadline_skips, (unsigned long long)b->bytes, (unsigned long long)b->stale);
}
