/* The list-processing engine's target commands (Append, Unlink, Search, SearchAndDelete, SetState), served by
 * the PE that owns the PtlTE, in arrival order with its network requests (lpe.c).  An Append first walks the
 * UNEXPECTED list for headers it matches (oldest first); each command costs tgt_cmd plus match_per_le per LE
 * walked and reports through the PtlTE's EQ.
 */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

/* The event a target command reports (the command's buffer id, user pointer and list). */
static void cmd_event_init(struct nic_event *ev, const struct nic_tgt_cmd *c, uint8_t type, uint8_t rc)
{
	*ev = (struct nic_event){ 0 };
	ev->type = type;
	ev->rc = rc;
	ev->buffer_id = c->buffer_id;
	ev->user_ptr = c->user_ptr;
	ev->ptl_list = c->list;
}

static void cmd_event(struct nic *nic, struct nic_pte *pte, const struct nic_tgt_cmd *c, uint8_t type, uint8_t rc,
		      simtime_t delay)
{
	struct nic_event ev;
	cmd_event_init(&ev, c, type, rc);
	nic_post_target_event(nic, pte, &ev, delay);
}

/* An appended receive first looks for unexpected headers it matches (oldest first). */
static bool append_match_unexpected(struct nic *nic, struct nic_pte *pte, struct nic_le *le, simtime_t *cost)
{
	struct nic_le_list *ux = &pte->lists[C_PTL_LIST_UNEXPECTED];
	struct nic_le *u = ux->head;
	while (u) {
		*cost += nic->p->match_per_le;
		NIC_C(nic, les_searched)++;
		struct nic_le *next = u->next;
		const struct nic_ule *h = nic_ule_of(u);
		if (nic_le_matches(le, u->match_bits, h->initiator) &&
		    (!(le->flags & C_LE_NO_TRUNCATE) || nic_le_space(le) >= h->rlength)) {
			bool retired;
			nic_deliver_put(nic, pte, le, h, NULL, C_EVENT_PUT_OVERFLOW, *cost, false, &retired);
			nic_le_list_remove(ux, u);
			nic_le_free(nic, u);
			if (retired)
				return true;
		}
		u = next;
	}
	return false;
}

static simtime_t tgt_append(struct nic *nic, struct nic_pte *pte, const struct nic_tgt_cmd *c)
{
	simtime_t cost = nic->p->tgt_cmd;
	NIC_C(nic, append_cmds[pte->pe])++;
	if (c->list == C_PTL_LIST_UNEXPECTED) {
		cmd_event(nic, pte, c, C_EVENT_LINK, C_RC_CMD_INVALID_ARG, cost);
		return cost;
	}
	bool priority = c->list == C_PTL_LIST_PRIORITY && pte->opts.is_matching;
	if (priority && pte->state == C_PTLTE_SOFTWARE_MANAGED) {
		NIC_C(nic, err_ptlte_sw_managed)++;
		cmd_event(nic, pte, c, C_EVENT_LINK, C_RC_PTLTE_SW_MANAGED, cost);
		return cost;
	}
	struct nic_le tmp = { 0 };
	tmp.pte = pte;
	tmp.list = c->list;
	tmp.buffer_id = c->buffer_id;
	tmp.flags = c->le_flags;
	tmp.ctn = c->ctn;
	tmp.match_id = c->match_id;
	tmp.min_free = c->min_free;
	tmp.start = c->start;
	tmp.length = c->length;
	tmp.match_bits = c->match_bits;
	tmp.ignore_bits = c->ignore_bits;
	tmp.user_ptr = c->user_ptr;
	if (priority && pte->lists[C_PTL_LIST_UNEXPECTED].count && append_match_unexpected(nic, pte, &tmp, &cost)) {
		NIC_C(nic, append_success[pte->pe])++;
		return cost; /* consumed by unexpected messages: never linked */
	}
	if (!nic_le_alloc(nic, pte)) {
		NIC_C(nic, err_no_space_append)++;
		if (priority && pte->opts.en_sw_transition && pte->state == C_PTLTE_ENABLED) {
			nic_pte_auto_state(nic, pte, C_PTLTE_SOFTWARE_MANAGED, C_SC_SM_APPEND_FAIL, cost);
			cmd_event(nic, pte, c, C_EVENT_LINK, C_RC_PTLTE_SW_MANAGED, cost);
		} else {
			cmd_event(nic, pte, c, C_EVENT_LINK, C_RC_NO_SPACE, cost);
		}
		return cost;
	}
	struct nic_le *le = pool_get(&nic->rec->le_work);
	*le = tmp;
	nic_le_list_append(&pte->lists[c->list], le);
	NIC_C(nic, append_success[pte->pe])++;
	if (!(c->le_flags & C_LE_EVENT_LINK_DISABLE)) {
		struct nic_event ev;
		cmd_event_init(&ev, c, C_EVENT_LINK, C_RC_OK);
		/* lpe_stat_1 / lpe_stat_2 of the hardware event: pool use and the pool's allocation. */
		const struct nic_le_pool *pl = nic_le_pool(nic, pte->pool);
		ev.mlength = pl->used;
		ev.rlength = pl->max_alloc;
		nic_post_target_event(nic, pte, &ev, cost);
	}
	return cost;
}

static simtime_t tgt_unlink(struct nic *nic, struct nic_pte *pte, const struct nic_tgt_cmd *c)
{
	simtime_t cost = nic->p->tgt_cmd;
	NIC_C(nic, unlink_cmds)++;
	struct nic_le_list *l = &pte->lists[c->list & 3];
	for (struct nic_le *le = l->head; le; le = le->next) {
		cost += nic->p->match_per_le;
		if (!le->ule && le->buffer_id == c->buffer_id) {
			struct nic_event ev;
			nic_event_from_le(&ev, C_EVENT_UNLINK, le);
			ev.start = le->start + le->offset;
			ev.mlength = (uint32_t)le->offset;
			simtime_t now = sim_now(nic->sim);
			simtime_t at = le->busy_until > now + cost ? le->busy_until - now : cost;
			nic_post_target_event(nic, pte, &ev, at);
			nic_le_list_remove(l, le);
			nic_le_free(nic, le);
			NIC_C(nic, unlink_success)++;
			return cost;
		}
	}
	NIC_C(nic, err_entry_not_found_unlink_failed)++;
	cmd_event(nic, pte, c, C_EVENT_UNLINK, C_RC_ENTRY_NOT_FOUND, cost);
	return cost;
}

/* SEARCH reports matching entries; SEARCH_AND_DELETE removes unexpected headers, reporting each one as a
 * PUT_OVERFLOW event and finishing with a SEARCH event (C_RC_NO_MATCH) -- the onload sequence.  With
 * C_LE_USE_ONCE only the first match is reported/removed and no trailing SEARCH event is sent. */
static simtime_t tgt_search(struct nic *nic, struct nic_pte *pte, const struct nic_tgt_cmd *c, bool del)
{
	simtime_t cost = nic->p->tgt_cmd;
	if (del)
		NIC_C(nic, search_delete_cmds)++;
	else
		NIC_C(nic, search_cmds)++;
	struct nic_le tmpl = { 0 };
	tmpl.match_bits = c->match_bits;
	tmpl.ignore_bits = c->ignore_bits;
	tmpl.match_id = c->match_id;
	bool once = (c->le_flags & C_LE_USE_ONCE) != 0;
	struct nic_le_list *l = &pte->lists[c->list & 3];
	uint32_t found = 0;
	for (struct nic_le *le = l->head; le;) {
		struct nic_le *next = le->next;
		cost += nic->p->match_per_le;
		uint32_t init = le->ule ? nic_ule_of(le)->initiator : C_MATCH_ID_ANY;
		bool m = le->ule ? nic_le_matches(&tmpl, le->match_bits, init)
				 : !((le->match_bits ^ c->match_bits) & ~c->ignore_bits);
		if (m) {
			found++;
			struct nic_event ev;
			nic_event_from_le(&ev, del ? C_EVENT_PUT_OVERFLOW : C_EVENT_SEARCH, le);
			if (le->ule) {
				nic_event_hdr(&ev, nic_ule_of(le));
				ev.start = le->start;
				ev.mlength = nic_ule_of(le)->mlength;
			}
			/* The search command's own identity, as the hardware reports it. */
			ev.buffer_id = c->buffer_id;
			ev.user_ptr = c->user_ptr;
			nic_post_target_event(nic, pte, &ev, cost);
			if (del) {
				nic_le_list_remove(l, le);
				nic_le_free(nic, le);
			}
			if (once)
				break;
		}
		le = next;
	}
	if (del)
		nic->cv[found ? nic_cix.search_delete_success : nic_cix.search_delete_fail]++;
	else
		nic->cv[found ? nic_cix.search_success : nic_cix.search_fail]++;
	if (!found)
		NIC_C(nic, err_search_no_match)++;
	if (!once || !found) {
		/* The closing event: after a search's matches, or for a use-once search that found none; either
		 * way NO_MATCH (a use-once search that found one reported it as its match). */
		struct nic_event ev;
		cmd_event_init(&ev, c, once && del ? C_EVENT_PUT_OVERFLOW : C_EVENT_SEARCH, C_RC_NO_MATCH);
		ev.mlength = found;
		nic_post_target_event(nic, pte, &ev, cost);
	}
	return cost;
}

static simtime_t tgt_setstate(struct nic *nic, struct nic_pte *pte, const struct nic_tgt_cmd *c)
{
	simtime_t cost = nic->p->tgt_cmd;
	NIC_C(nic, setstate_cmds[pte->pe])++;
	struct nic_event ev = { 0 };
	ev.type = C_EVENT_STATE_CHANGE;
	ev.sc.reason = C_SC_NONE;
	ev.ptlte_index = (uint16_t)pte->ptn;
	ev.pe = pte->pe;
	ev.buffer_id = c->buffer_id;
	ev.user_ptr = c->user_ptr;
	bool leaving_disabled = pte->state == C_PTLTE_DISABLED && c->state != C_PTLTE_DISABLED;
	if (c->state > C_PTLTE_SOFTWARE_MANAGED || c->state == C_PTLTE_RESET) {
		ev.rc = C_RC_CMD_INVALID_ARG;
		ev.sc.state = pte->state;
	} else if (leaving_disabled && c->drop_count != NIC_IGNORE_DROPS && c->drop_count != pte->drop_count) {
		NIC_C(nic, err_setstate_no_match)++;
		ev.rc = C_RC_NO_MATCH;
		ev.sc.state = pte->state;
	} else {
		if (leaving_disabled)
			pte->drop_count = 0;
		pte->state = c->state;
		ev.rc = C_RC_OK;
		ev.sc.state = c->state;
		NIC_C(nic, setstate_success[pte->pe])++;
	}
	nic_eq_post(nic, pte->eqn, &ev, cost, true);
	return cost;
}

simtime_t nic_lpe_tgt_cmd(struct nic *nic, struct nic_work *w)
{
	const struct nic_tgt_cmd *c = &w->cmd.tgt;
	struct nic_pte *pte = nic_pte_lookup(nic, c->ptn);
	if (!pte || pte->lni != w->lni) {
		struct nic_event ev = { 0 };
		ev.type = C_EVENT_COMMAND_FAILURE;
		ev.rc = C_RC_CMD_INVALID_ARG;
		ev.buffer_id = c->buffer_id;
		ev.user_ptr = c->user_ptr;
		if (w->q_eqn != NIC_NONE)
			nic_eq_post(nic, w->q_eqn, &ev, nic->p->tgt_cmd, false);
		return nic->p->tgt_cmd;
	}
	switch (w->cmd.op) {
	case NIC_CMD_TGT_APPEND: return tgt_append(nic, pte, c);
	case NIC_CMD_TGT_UNLINK: return tgt_unlink(nic, pte, c);
	case NIC_CMD_TGT_SEARCH: return tgt_search(nic, pte, c, false);
	case NIC_CMD_TGT_SEARCH_AND_DELETE: return tgt_search(nic, pte, c, true);
	case NIC_CMD_TGT_SETSTATE: return tgt_setstate(nic, pte, c);
	default: return nic->p->tgt_cmd;
	}
}
