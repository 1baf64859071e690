/* Provider software: memory registration.
 *
 * Client keys (< 2^32): optimized when under 100 and FI_CXI_OPTIMIZED_MRS (own non-matching PtlTEs at index
 * 17 + key for writes and 128 + key for reads), otherwise standard (an LE on the control PtlTE matched by key).
 * Provider keys: with FI_CXI_PROV_KEY_CACHE every region shares one LE covering the whole address space and
 * the key carries the address; close only drops the reference, so the memory stays exposed (remote accesses
 * to closed regions are counted as hazards).  Without the cache, provider key ids under 92 are optimized;
 * the key says so (SW_KEY_OPT), so the initiator finds the right PtlTE whatever its own settings.
 * FI_CXI_MR_MATCH_EVENTS: the MR LE reports MATCH and access events, and close waits (polling up to 100 us)
 * until match events == access events instead of invalidating the LE with a kernel call.
 *
 * Remote access events (upstream's rma_events / writedata): an MR registered with FI_RMA_EVENT, or any MR of
 * an endpoint with attr.mr_events, reports each access as a target-side completion (counters); such MRs
 * bypass the key cache, and their provider keys are not optimized.  With FI_CXI_ENABLE_WRITEDATA a
 * provider-key MR that accepts writes gets a second LE, matched by the key with SW_KEY_WRITEDATA, whose
 * PUT events carry fi_writedata's remote CQ data to a target completion (upstream's dual LE).
 * An MR is freed only after the UNLINK events of its LEs: the NIC reports an LE's unlink after the events
 * of the accesses that used it, so no event can name a freed MR.
 *
 * Costs (parameters of the "cxi" section), ordered as seed 000 Fig 9: key cache (lookup) << match events
 * (LE append/unlink + polls, ~2 us for reg + dereg) < standard reg; standard dereg and optimized reg/dereg
 * each take a kernel call. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "sw_impl.h"

static struct sw_mr *mr_find_key(struct sw_ep *ep, uint64_t key)
{
	for (struct sw_mr *m = ep->mrs; m; m = m->next)
		if (!m->closed && m->key == key)
			return m;
	return NULL;
}

static void mr_done_event(struct sim *sim, void *obj, uint64_t arg)
{
	struct sw_mr *m = obj;
	(void)sim;
	if (m->done)
		m->done(m->done_ctx, m, (int)(int64_t)arg);
}

static void mr_unlink_list(struct sw_ep *ep, struct sw_mr *m)
{
	for (struct sw_mr **pp = &ep->mrs; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			return;
		}
	}
}

/* A close completes when its modelled cost has passed and, for an MR that reports accesses, when the NIC
 * has unlinked its LEs (so every access before the close has been reported); the record goes once no
 * UNLINK event is still to come. */
static void mr_close_progress(struct sw_mr *m)
{
	if (!m->close_timed)
		return;
	if ((m->notify || m->writedata) && m->unlinks_pending)
		return;
	if (!m->close_reported) {
		m->close_reported = true;
		if (m->done)
			m->done(m->done_ctx, m, 0);
	}
	if (m->unlinks_pending)
		return;
	mr_unlink_list(m->ep, m);
	free(m);
}

static void mr_close_timed(struct sim *sim, void *obj, uint64_t arg)
{
	struct sw_mr *m = obj;
	(void)sim;
	(void)arg;
	m->close_timed = true;
	mr_close_progress(m);
}

static int mr_opt_pte(struct sw_ep *ep, struct sw_mr *m, uint64_t id)
{
	struct nic_pte_opts o = { .is_matching = false, .en_event_match = ep->env->mr_match_events };
	/* Silent unless accesses are to be reported (upstream: optimized MR LEs disable their events). */
	uint32_t ev = m->notify ? 0 : C_LE_EVENT_COMM_DISABLE | C_LE_EVENT_SUCCESS_DISABLE;
	int rc;
	if (m->access & FI_REMOTE_WRITE) {
		if ((rc = nic_pte_alloc(ep->lni, ep->eq_ctrl, &o, &m->ptn_w)))
			return rc;
		for (unsigned v = 0; v < ep->attr.num_vnis; v++)
			if ((rc = nic_pte_map(ep->lni, m->ptn_w, ep->attr.vnis[v], ep->pid,
					      (uint32_t)(SW_PTL_IDX_WRITE_MR_OPT_BASE + id))))
				return rc;
		nic_pte_set_access_hook(ep->nic, m->ptn_w, sw_mr_access_hook, ep);
		sw_append(ep, m->ptn_w, C_PTL_LIST_PRIORITY, 0, C_LE_OP_PUT | C_LE_EVENT_LINK_DISABLE | ev, m->buf, m->len,
			  0, C_MATCH_ID_ANY, 0, ~0ULL, m);
		sw_setstate(ep, m->ptn_w, C_PTLTE_ENABLED, NIC_IGNORE_DROPS);
	}
	if (m->access & FI_REMOTE_READ) {
		if ((rc = nic_pte_alloc(ep->lni, ep->eq_ctrl, &o, &m->ptn_r)))
			return rc;
		for (unsigned v = 0; v < ep->attr.num_vnis; v++)
			if ((rc = nic_pte_map(ep->lni, m->ptn_r, ep->attr.vnis[v], ep->pid,
					      (uint32_t)(SW_PTL_IDX_READ_MR_OPT_BASE + id))))
				return rc;
		nic_pte_set_access_hook(ep->nic, m->ptn_r, sw_mr_access_hook, ep);
		sw_append(ep, m->ptn_r, C_PTL_LIST_PRIORITY, 0, C_LE_OP_GET | C_LE_EVENT_LINK_DISABLE | ev, m->buf, m->len,
			  0, C_MATCH_ID_ANY, 0, ~0ULL, m);
		sw_setstate(ep, m->ptn_r, C_PTLTE_ENABLED, NIC_IGNORE_DROPS);
	}
	return 0;
}

static uint32_t mr_le_flags(const struct sw_ep *ep, const struct sw_mr *m)
{
	uint32_t f = C_LE_EVENT_LINK_DISABLE | C_LE_EVENT_UNLINK_DISABLE;
	if (m->access & FI_REMOTE_WRITE)
		f |= C_LE_OP_PUT;
	if (m->access & FI_REMOTE_READ)
		f |= C_LE_OP_GET;
	/* Without match events or access reports, successful accesses generate no events. */
	if (!ep->env->mr_match_events && !m->notify)
		f |= C_LE_EVENT_SUCCESS_DISABLE;
	return f;
}

/* The LE on the control PtlTE (standard MRs), and with FI_CXI_ENABLE_WRITEDATA the writedata one. */
static int mr_std_les(struct sw_ep *ep, struct sw_mr *m)
{
	if (sw_id_alloc(ep, &m->le_id))
		return -FI_ENOSPC;
	sw_append(ep, ep->ctrl_ptn, C_PTL_LIST_PRIORITY, m->le_id, mr_le_flags(ep, m), m->buf, m->len, 0, C_MATCH_ID_ANY,
		  m->key, 0, m);
	if (!m->writedata)
		return 0;
	if (sw_id_alloc(ep, &m->wd_id))
		return -FI_ENOSPC;
	uint32_t f = C_LE_OP_PUT | C_LE_EVENT_LINK_DISABLE | C_LE_EVENT_UNLINK_DISABLE;
	sw_append(ep, ep->ctrl_ptn, C_PTL_LIST_PRIORITY, m->wd_id, f, m->buf, m->len, 0, C_MATCH_ID_ANY,
		  m->key | SW_KEY_WRITEDATA, 0, &m->wd_obj);
	return 0;
}

int sw_mr_reg(struct sw_ep *ep, uint64_t buf, uint64_t len, uint64_t access, uint64_t requested_key, uint64_t flags,
	      sw_mr_done_fn done, void *ctx, struct sw_mr **out)
{
	if (!ep || !out || ep->fatal)
		return -FI_EINVAL;
	if (!(access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		access |= FI_REMOTE_READ | FI_REMOTE_WRITE;
	const struct sw_costs *k = sw_costs(ep->sim);
	bool exact = (flags & SW_MR_EXACT_KEY) != 0;
	/* An exact key is a provider key when it says so; its kind (cached, optimized) comes from the key. */
	bool prov = exact ? (requested_key & (SW_KEY_PROV | SW_KEY_CACHED)) != 0 : (flags & SW_MR_PROV_KEY) != 0;
	if (exact && prov) {
		bool cached = (requested_key & SW_KEY_CACHED) != 0;
		if (cached ? (requested_key & SW_KEY_ADDR_MASK) != (buf & SW_KEY_ADDR_MASK) ||
				     (requested_key & ~(SW_KEY_CACHED | SW_KEY_ADDR_MASK))
			   : (requested_key & ~(SW_KEY_PROV | SW_KEY_OPT)) >= (1ULL << 32))
			return -FI_EKEYREJECTED;
		if (mr_find_key(ep, requested_key))
			return -FI_ENOKEY;
	} else if (!prov) {
		if (requested_key >= (1ULL << 32))
			return -FI_EKEYREJECTED;
		if (mr_find_key(ep, requested_key))
			return -FI_ENOKEY;
	}
	struct sw_mr *m = xcalloc(1, sizeof(*m));
	m->obj.kind = SWK_MR;
	m->wd_obj.kind = SWK_MR_WD;
	m->ep = ep;
	m->user = ctx;
	m->buf = buf;
	m->len = len;
	m->access = access;
	m->flags = flags;
	m->prov_key = prov;
	m->done = done;
	m->done_ctx = ctx;
	m->notify = (flags & FI_RMA_EVENT) || ep->attr.mr_events;
	m->writedata = prov && ep->env->enable_writedata && (access & FI_REMOTE_WRITE);
	simtime_t cost = k->mr_bookkeeping;
	int rc = 0;
	bool cache = exact ? (requested_key & SW_KEY_CACHED) != 0
			   : prov && ep->env->prov_key_cache && !m->notify && !m->writedata &&
				     !(flags & SW_MR_NO_KEY_CACHE);
	if (cache) {
		m->cached = true;
		m->key = SW_KEY_CACHED | (buf & SW_KEY_ADDR_MASK);
		cost += k->mr_cache_lookup;
		if (!ep->cache_le) {
			/* One LE for every cached region: the whole address space, matched by the cached flag. */
			ep->cache_le = true;
			sw_append(ep, ep->ctrl_ptn, C_PTL_LIST_PRIORITY, 0,
				  C_LE_OP_PUT | C_LE_OP_GET | C_LE_EVENT_LINK_DISABLE | C_LE_EVENT_SUCCESS_DISABLE, 0,
				  ~0ULL >> 8, 0, C_MATCH_ID_ANY, SW_KEY_CACHED, 0, &ep->cache_le_obj);
			cost += k->mr_le_append;
		}
	} else {
		uint64_t id = exact && prov ? requested_key & ~(SW_KEY_PROV | SW_KEY_OPT)
			    : prov	    ? ep->next_prov_key++
					    : requested_key;
		/* Target events need an LE that reports: provider keys then stay standard (upstream). */
		bool may_opt = ep->env->optimized_mrs && !(prov && (m->notify || m->writedata));
		m->optimized = may_opt && (prov ? id < SW_MR_PROV_OPT_IDS : id < SW_MR_OPT_KEYS);
		if (exact && prov)
			m->optimized = (requested_key & SW_KEY_OPT) != 0; /* the key names its PtlTE */
		m->key = prov ? (SW_KEY_PROV | (m->optimized ? SW_KEY_OPT : 0) | id) : requested_key;
		if (m->optimized) {
			rc = mr_opt_pte(ep, m, id);
			cost += k->kernel_call + k->mr_le_append;
		} else {
			rc = mr_std_les(ep, m);
			cost += k->mr_le_append;
		}
	}
	if (rc) {
		if (m->ptn_w)
			nic_pte_free(ep->lni, m->ptn_w);
		if (m->ptn_r)
			nic_pte_free(ep->lni, m->ptn_r);
		if (m->le_id) {
			sw_unlink(ep, ep->ctrl_ptn, C_PTL_LIST_PRIORITY, m->le_id, &ep->ctrl_le_obj);
			sw_id_free(ep, m->le_id);
		}
		free(m);
		return -FI_ENOSPC;
	}
	m->enabled = true;
	m->next = ep->mrs;
	ep->mrs = m;
	/* A region registered again is no longer a closed one. */
	for (uint32_t i = 0; i < ep->nclosed;) {
		if (ep->closed[i].addr >= buf && ep->closed[i].addr + ep->closed[i].len <= buf + len)
			ep->closed[i] = ep->closed[--ep->nclosed];
		else
			i++;
	}
	*out = m;
	m->timer = sim_timer_start(ep->sim, cost, mr_done_event, m, 0);
	return 0;
}

static void closed_add(struct sw_ep *ep, uint64_t addr, uint64_t len)
{
	if (ep->nclosed == ep->closed_cap) {
		ep->closed_cap = ep->closed_cap ? ep->closed_cap * 2 : 8;
		ep->closed = xrealloc(ep->closed, ep->closed_cap * sizeof(*ep->closed));
	}
	ep->closed[ep->nclosed++] = (struct sw_region){ addr, len };
}

static void mr_poll(struct sim *sim, void *obj, uint64_t arg)
{
	struct sw_mr *m = obj;
	struct sw_ep *ep = m->ep;
	const struct sw_costs *k = sw_costs(sim);
	(void)arg;
	sw_ep_progress(ep); /* upstream polls the control EQ while it waits */
	if (m->match_events == m->access_events) {
		mr_close_timed(sim, m, 0);
		return;
	}
	if (sim_now(sim) >= m->close_deadline) {
		/* Give up: invalidate the LE in the kernel. */
		m->timer = sim_timer_start(sim, k->kernel_call, mr_close_timed, m, 0);
		return;
	}
	m->timer = sim_timer_start(sim, k->mr_event_poll, mr_poll, m, 0);
}

static void mr_unlink_les(struct sw_ep *ep, struct sw_mr *m)
{
	if (m->optimized) {
		if (m->ptn_w) {
			sw_unlink(ep, m->ptn_w, C_PTL_LIST_PRIORITY, 0, m);
			m->unlinks_pending++;
		}
		if (m->ptn_r) {
			sw_unlink(ep, m->ptn_r, C_PTL_LIST_PRIORITY, 0, m);
			m->unlinks_pending++;
		}
		return;
	}
	sw_unlink(ep, ep->ctrl_ptn, C_PTL_LIST_PRIORITY, m->le_id, m);
	m->unlinks_pending++;
	if (m->writedata) {
		sw_unlink(ep, ep->ctrl_ptn, C_PTL_LIST_PRIORITY, m->wd_id, &m->wd_obj);
		m->unlinks_pending++;
	}
}

int sw_mr_close(struct sw_mr *m, sw_mr_done_fn done, void *ctx)
{
	if (!m || m->closed)
		return -FI_EINVAL;
	struct sw_ep *ep = m->ep;
	const struct sw_costs *k = sw_costs(ep->sim);
	m->closed = true;
	m->enabled = false;
	m->done = done;
	m->done_ctx = ctx;
	sim_timer_cancel(ep->sim, &m->timer);
	simtime_t cost = k->mr_bookkeeping;
	if (m->cached) {
		/* Only the reference goes: the shared LE keeps the memory exposed. */
		closed_add(ep, m->buf, m->len);
		cost += k->mr_cache_lookup;
		m->timer = sim_timer_start(ep->sim, cost, mr_close_timed, m, 0);
		return 0;
	}
	mr_unlink_les(ep, m);
	if (m->optimized) {
		m->timer = sim_timer_start(ep->sim, cost + k->kernel_call, mr_close_timed, m, 0);
		return 0;
	}
	cost += k->mr_le_append;
	if (ep->env->mr_match_events) {
		m->closing = true;
		m->close_deadline = sim_now(ep->sim) + cost + k->mr_event_poll_max;
		m->timer = sim_timer_start(ep->sim, cost + k->mr_event_poll, mr_poll, m, 0);
		return 0;
	}
	m->timer = sim_timer_start(ep->sim, cost + k->kernel_call, mr_close_timed, m, 0);
	return 0;
}

uint64_t sw_mr_key(const struct sw_mr *m)
{
	return m->key;
}

bool sw_mr_is_optimized(const struct sw_mr *m)
{
	return m->optimized;
}

void sw_mr_events(const struct sw_mr *m, uint64_t *matched, uint64_t *completed)
{
	if (matched)
		*matched = m->match_events;
	if (completed)
		*completed = m->access_events;
}

/* A remote access the NIC reported on one of the MR's LEs: a target-side completion. */
static void mr_report_access(struct sw_ep *ep, struct sw_mr *m, const struct nic_event *ev, bool writedata)
{
	if (m->close_reported)
		return;
	struct sw_comp c = { 0 };
	c.op_context = m->user;
	c.mr = m;
	if (ev->type == C_EVENT_ATOMIC || ev->type == C_EVENT_FETCH_ATOMIC)
		c.flags = FI_ATOMIC | FI_REMOTE_WRITE; /* a fetching atomic writes the element too */
	else
		c.flags = FI_RMA | (ev->type == C_EVENT_PUT ? FI_REMOTE_WRITE : FI_REMOTE_READ);
	if (writedata) {
		c.flags |= FI_REMOTE_CQ_DATA;
		c.data = ev->header_data;
	}
	c.len = ev->mlength;
	c.buf = ev->start;
	c.src = (struct sw_addr){ .nic = C_MATCH_ID_NIC(ev->initiator), .pid = (uint16_t)C_MATCH_ID_PID(ev->initiator),
				  .vni = ev->vni };
	c.src_valid = true;
	if (ev->rc != C_RC_OK) {
		c.err = sw_rc_to_errno(ev->rc);
		c.prov_errno = ev->rc;
	}
	sw_complete(ep, &c);
}

void sw_mr_event(struct sw_ep *ep, struct sw_obj *o, const struct nic_event *ev)
{
	bool wd = o->kind == SWK_MR_WD;
	struct sw_mr *m = wd ? (struct sw_mr *)((char *)o - offsetof(struct sw_mr, wd_obj)) : (struct sw_mr *)o;
	switch (ev->type) {
	case C_EVENT_MATCH: m->match_events++; break;
	case C_EVENT_PUT:
	case C_EVENT_GET:
	case C_EVENT_ATOMIC:
	case C_EVENT_FETCH_ATOMIC:
		m->access_events++;
		if (m->notify || wd)
			mr_report_access(ep, m, ev, wd);
		break;
	case C_EVENT_UNLINK:
		if (!m->unlinks_pending)
			break;
		m->unlinks_pending--;
		if (m->optimized && !m->unlinks_pending) {
			if (m->ptn_w)
				nic_pte_free(ep->lni, m->ptn_w);
			if (m->ptn_r)
				nic_pte_free(ep->lni, m->ptn_r);
			m->ptn_w = m->ptn_r = 0;
		}
		mr_close_progress(m);
		break;
	default: break;
	}
}

/* Every remote access served by an MR PtlTE: one that touches a closed (but still exposed) region is a
 * hazard -- the application believes nobody can reach that memory any more. */
void sw_mr_access_hook(void *ctx, uint32_t ptn, uint64_t le_user_ptr, uint64_t addr, uint64_t len, bool write)
{
	struct sw_ep *ep = ctx;
	(void)ptn;
	(void)le_user_ptr;
	(void)write;
	for (uint32_t i = 0; i < ep->nclosed; i++) {
		const struct sw_region *r = &ep->closed[i];
		if (addr < r->addr + r->len && r->addr < addr + (len ? len : 1)) {
			ep->st.mr_hazards++;
			(*ep->c_hazards)++;
			return;
		}
	}
}

/* The endpoint goes: registrations and closes still in progress complete now, so their owners can let
 * go of their records. */
void sw_mr_fini(struct sw_ep *ep)
{
	while (ep->mrs) {
		struct sw_mr *m = ep->mrs;
		ep->mrs = m->next;
		bool pending = sim_timer_cancel(ep->sim, &m->timer);
		if (m->closed && !m->close_reported && m->done)
			m->done(m->done_ctx, m, 0);
		else if (!m->closed && pending && m->done)
			m->done(m->done_ctx, m, -FI_ECANCELED);
		free(m);
	}
}
