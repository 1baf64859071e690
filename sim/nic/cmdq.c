/* Command queues.  Software emits commands into a ring of 64-B slots and rings the doorbell; after the
 * doorbell latency the NIC fetches every command emitted up to the ring, frees their slots and hands them,
 * in order, to the transmit engine (transmit queues) or to the PE of the named PtlTE (target queues). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

int nic_rsrc_get(struct nic_lni *lni, enum nic_rsrc r);
void nic_rsrc_put(struct nic_lni *lni, enum nic_rsrc r);

/* A command in the ring: the work item it becomes, built at emit (the command copied in), so a fetch only
 * hands it on; NULL for a NOOP. */
struct cmdrec {
	struct nic_work *w;
	struct nic_tle *tle;      /* triggered command: its trigger list entry, taken at emit */
	uint32_t nslots;
};

/* What an emit, a doorbell and a fetch read comes first (48 bytes, no holes), so that more of a client's
 * queue records lie within one line (cachegrind, docs/workloads.md Round 9); then the ring's first
 * CMDQ_INLINE records, inside the queue record: a client's queues hold one or two commands at a time, and
 * a drained ring starts again at its first record (head 0), so an emit and its fetch touch the lines of
 * the queue record itself, not a ring allocated elsewhere (Round 10).  Rings that grow past it move out. */
#define CMDQ_INLINE 4
struct nic_cmdq {
	struct nic_lni *lni;
	struct cmdrec *ring; /* inl while cap <= CMDQ_INLINE */
	uint32_t slots, used;
	uint32_t eqn;
	uint32_t cap, head, n, rung;
	bool target, live, fetch_pending, space_wanted;
	struct cmdrec inl[CMDQ_INLINE];
	void (*on_space)(void *ctx, struct nic_cmdq *q);
	void *space_ctx;
	struct nic_cmdq *next_of_nic; /* all queues of a NIC, for teardown */
};
_Static_assert(sizeof(struct nic_cmdq) == 168, "a command queue record grew: two per client endpoint");

const size_t nic_cmdq_record_size = sizeof(struct nic_cmdq);

static struct nic_cmdq **nic_qhead(struct nic *nic);

int nic_cmdq_alloc(struct nic_lni *lni, const struct nic_cmdq_attr *a, struct nic_cmdq **out)
{
	if (!lni || !lni->live || !a || !out || a->slots == 0)
		return -EINVAL;
	struct nic *nic = lni->nic;
	if (a->slots > nic->p->cmdq_slots_max)
		return -EINVAL;
	if (a->eqn != NIC_NONE) {
		struct nic_eq *eq = nic_eq_lookup(nic, a->eqn);
		if (!eq || eq->lni != lni)
			return -EINVAL;
	}
	if ((a->target && nic->ntgq >= C_NUM_TGQS) || (!a->target && nic->ntxq >= C_NUM_TXQS)) {
		nic_count_limit(nic);
		return -ENOSPC;
	}
	int rc = nic_rsrc_get(lni, a->target ? NIC_RSRC_TGQ : NIC_RSRC_TXQ);
	if (rc)
		return rc;
	struct nic_cmdq *q = pool_get(&lni->nic->rec->cmdq);
	memset(q, 0, sizeof(*q));
	q->lni = lni;
	q->target = a->target;
	q->live = true;
	q->slots = a->slots;
	q->eqn = a->eqn;
	q->on_space = a->on_space;
	q->space_ctx = a->space_ctx;
	/* The record ring is allocated at the first command and grows on demand up to `slots` (as EQ rings
	 * do): endpoints size their queues for the worst case, and 53,248 client endpoints with full-size
	 * rings would need ~30 GB. */
	q->cap = 0;
	q->ring = NULL;
	if (a->eqn != NIC_NONE)
		nic_eq_lookup(nic, a->eqn)->refs++;
	if (a->target)
		nic->ntgq++;
	else
		nic->ntxq++;
	struct nic_cmdq **h = nic_qhead(nic);
	q->next_of_nic = *h;
	*h = q;
	*out = q;
	return 0;
}

static void work_drop(struct nic *nic, struct nic_work *w)
{
	if (!w)
		return;
	nic_payload_free(w->idc);
	pool_put(&nic->rec->le_work, w);
}

static void cmdq_destroy(struct nic *nic, struct nic_cmdq *q)
{
	for (uint32_t i = 0; i < q->n; i++) {
		struct cmdrec *r = &q->ring[(q->head + i) % q->cap];
		if (r->tle)
			nic_tle_give_back(nic, r->tle);
		work_drop(nic, r->w);
	}
	if (q->ring != q->inl)
		free(q->ring);
	pool_put(&nic->rec->cmdq, q);
}

static void cmdq_unlink(struct nic *nic, struct nic_cmdq *q)
{
	for (struct nic_cmdq **pp = nic_qhead(nic); *pp; pp = &(*pp)->next_of_nic) {
		if (*pp == q) {
			*pp = q->next_of_nic;
			return;
		}
	}
}

void nic_cmdq_free(struct nic_cmdq *q)
{
	if (!q || !q->live)
		return;
	struct nic *nic = q->lni->nic;
	q->live = false;
	if (q->eqn != NIC_NONE) {
		struct nic_eq *eq = nic_eq_lookup(nic, q->eqn);
		if (eq && eq->refs)
			eq->refs--;
	}
	if (q->target)
		nic->ntgq--;
	else
		nic->ntxq--;
	nic_rsrc_put(q->lni, q->target ? NIC_RSRC_TGQ : NIC_RSRC_TXQ);
	cmdq_unlink(nic, q);
	/* A fetch already scheduled still references the queue: it frees it (or the NIC does at teardown). */
	if (q->fetch_pending) {
		q->next_of_nic = nic->cmdq_zombies;
		nic->cmdq_zombies = q;
	} else {
		cmdq_destroy(nic, q);
	}
}

void nic_cmdq_zombies_free(struct nic *nic);
void nic_cmdq_zombies_free(struct nic *nic)
{
	while (nic->cmdq_zombies) {
		struct nic_cmdq *q = nic->cmdq_zombies;
		nic->cmdq_zombies = q->next_of_nic;
		cmdq_destroy(nic, q);
	}
}

void nic_cmdqs_free_lni(struct nic *nic, struct nic_lni *lni);
void nic_cmdqs_free_lni(struct nic *nic, struct nic_lni *lni)
{
	struct nic_cmdq **pp = nic_qhead(nic);
	while (*pp) {
		struct nic_cmdq *q = *pp;
		if (q->lni == lni)
			nic_cmdq_free(q); /* unlinks q from the list */
		else
			pp = &q->next_of_nic;
	}
}

uint64_t nic_cmdqs_bytes(struct nic *nic, const struct nic_lni *lni, uint64_t *count)
{
	uint64_t b = 0;
	for (struct nic_cmdq *q = *nic_qhead(nic); q; q = q->next_of_nic) {
		if (lni && q->lni != lni)
			continue;
		b += sizeof(*q) + (q->ring != q->inl ? (uint64_t)q->cap * sizeof(*q->ring) : 0);
		if (count)
			(*count)++;
	}
	for (struct nic_cmdq *q = nic->cmdq_zombies; q && !lni; q = q->next_of_nic)
		b += sizeof(*q) + (q->ring != q->inl ? (uint64_t)q->cap * sizeof(*q->ring) : 0);
	return b;
}

static bool op_is_target(uint8_t op)
{
	return op >= NIC_CMD_TGT_APPEND && op <= NIC_CMD_TGT_SETSTATE;
}

static int cmd_validate(const struct nic_cmdq *q, const struct nic_cmd *c, uint32_t *nslots)
{
	*nslots = 1;
	if (c->op == NIC_CMD_NOOP)
		return 0;
	if (op_is_target(c->op) != q->target)
		return -EINVAL;
	if (q->target)
		return c->tgt.list > C_PTL_LIST_UNEXPECTED ? -EINVAL : 0;
	switch (c->op) {
	case NIC_CMD_IDC_PUT: {
		uint32_t max = (c->dma.flags & NIC_DMA_RESTRICTED) ? C_MAX_IDC_PAYLOAD_RES : C_MAX_IDC_PAYLOAD_UNR;
		if (c->dma.length > max)
			return -EINVAL;
		*nslots = 1 + (c->dma.length + C_CMD_SLOT_BYTES - 1) / C_CMD_SLOT_BYTES;
		break;
	}
	case NIC_CMD_PUT:
	case NIC_CMD_RENDEZVOUS_PUT:
	case NIC_CMD_GET:
		break;
	case NIC_CMD_AMO:
		/* One element; op1 and op2 travel in the command (an IDC AMO's second slot). */
		if (!nic_amo_valid(c->dma.amo_op, c->dma.amo_cswap, c->dma.amo_type) ||
		    c->dma.length != nic_amo_type_size(c->dma.amo_type))
			return -EINVAL;
		*nslots = 2;
		break;
	case NIC_CMD_CT_SET:
	case NIC_CMD_CT_INC:
	case NIC_CMD_CT_CANCEL:
		return 0;
	default: return -EINVAL;
	}
	if (c->dma.dst_pid >= C_PID_ANY || c->dma.index >= C_PID_GRANULE)
		return -EINVAL;
	return 0;
}

static void cmdq_resize(struct nic_cmdq *q, uint32_t ncap)
{
	struct cmdrec tmp[CMDQ_INLINE];
	struct cmdrec *nr = !ncap ? NULL : ncap <= CMDQ_INLINE ? q->inl : xcalloc(ncap, sizeof(*nr));
	struct cmdrec *to = nr == q->ring ? tmp : nr; /* the inline ring resized: through a copy */
	for (uint32_t i = 0; i < q->n; i++)
		to[i] = q->ring[(q->head + i) % q->cap];
	if (to == tmp) {
		if (q->n)
			memcpy(nr, tmp, q->n * sizeof(*nr));
	} else if (q->ring != q->inl) {
		free(q->ring);
	}
	q->ring = nr;
	q->cap = ncap;
	q->head = 0;
}

static void cmdq_grow(struct nic_cmdq *q)
{
	uint32_t ncap = q->cap ? q->cap * 2 : 4;
	cmdq_resize(q, ncap > q->slots ? q->slots : ncap);
}

int nic_cmdq_emit(struct nic_cmdq *q, const struct nic_cmd *c)
{
	if (!q || !q->live || !c)
		return -EINVAL;
	uint32_t need;
	int rc = cmd_validate(q, c, &need);
	if (rc)
		return rc;
	if (q->n == q->cap && q->cap < q->slots)
		cmdq_grow(q);
	if (q->used + need > q->slots || q->n == q->cap) {
		struct nic *nic = q->lni->nic;
		NIC_C(nic, cmdq_full)++;
		nic_count_limit(nic);
		q->space_wanted = true;
		return -ENOSPC;
	}
	struct cmdrec *r = &q->ring[(q->head + q->n) % q->cap];
	r->nslots = need;
	r->w = NULL;
	r->tle = NULL;
	if (c->op != NIC_CMD_NOOP) {
		struct nic *nic = q->lni->nic;
		struct nic_work *w = pool_get(&nic->rec->le_work);
		memset(w, 0, sizeof(*w));
		w->nic = nic;
		w->lni = q->lni;
		w->q_eqn = q->eqn;
		w->cmd = *c;
		w->cmd.dma.idc_data = NULL;
		if (c->op == NIC_CMD_IDC_PUT && c->dma.idc_data && c->dma.length) {
			w->idc = nic_payload_alloc(c->dma.length);
			memcpy(w->idc, c->dma.idc_data, c->dma.length);
		}
		if (c->op == NIC_CMD_AMO) {
			w->idc = nic_payload_alloc(2 * C_AMO_OPERAND_BYTES);
			if (c->dma.idc_data)
				memcpy(w->idc, c->dma.idc_data, 2 * C_AMO_OPERAND_BYTES);
			else
				memset(w->idc, 0, 2 * C_AMO_OPERAND_BYTES);
		}
		w->kind = q->target ? WORK_TGT_CMD : 0;
		r->w = w;
	}
	q->n++;
	q->used += need;
	return 0;
}

int nic_cmdq_emit_triggered(struct nic_cmdq *q, const struct nic_cmd *c, uint32_t trig_ctn, uint64_t threshold)
{
	if (!q || !q->live || !c || q->target)
		return -EINVAL;
	switch (c->op) {
	case NIC_CMD_PUT:
	case NIC_CMD_GET:
	case NIC_CMD_AMO:
	case NIC_CMD_CT_SET:
	case NIC_CMD_CT_INC:
		break;
	default: return -EINVAL;
	}
	uint32_t need;
	int rc = cmd_validate(q, c, &need);
	if (rc)
		return rc;
	struct nic_tle *t = nic_tle_take(q->lni, trig_ctn, threshold, &rc);
	if (!t)
		return rc;
	rc = nic_cmdq_emit(q, c);
	if (rc) {
		nic_tle_give_back(q->lni->nic, t);
		return rc;
	}
	q->ring[(q->head + q->n - 1) % q->cap].tle = t;
	return 0;
}

static void cmdq_fetch(struct sim *sim, void *obj, uint64_t arg)
{
	struct nic_cmdq *q = obj;
	(void)sim;
	(void)arg;
	q->fetch_pending = false;
	struct nic *nic = q->lni->nic;
	if (!q->live) {
		for (struct nic_cmdq **pp = &nic->cmdq_zombies; *pp; pp = &(*pp)->next_of_nic) {
			if (*pp == q) {
				*pp = q->next_of_nic;
				break;
			}
		}
		cmdq_destroy(nic, q);
		return;
	}
	while (q->rung) {
		struct cmdrec *r = &q->ring[q->head];
		q->head = (q->head + 1) % q->cap;
		q->n--;
		q->rung--;
		q->used -= r->nslots;
		struct nic_work *w = r->w;
		if (r->tle) {
			nic_tle_hold(nic, r->tle, w);
			r->tle = NULL;
			continue;
		}
		if (!w)
			continue;
		if (q->target)
			nic_pe_submit(nic, w->cmd.tgt.ptn % C_PE_COUNT, w);
		else
			nic_tx_submit(nic, w);
	}
	/* A burst grew the ring: give it back once drained -- all of it after a server posted its initial
	 * receives, all but 4 entries after a client endpoint's start (its receives and buffers at once: 16
	 * entries that stayed on each of a million target queues; one command at a time follows). */
	if (!q->n && q->cap > 64)
		cmdq_resize(q, 0);
	else if (!q->n && q->cap > 4)
		cmdq_resize(q, 4);
	else if (!q->n)
		q->head = 0; /* the next command goes to the ring's first record */
	if (q->space_wanted && q->on_space) {
		q->space_wanted = false;
		q->on_space(q->space_ctx, q);
	}
}

void nic_cmdq_ring(struct nic_cmdq *q)
{
	if (!q || !q->live)
		return;
	q->rung = q->n;
	if (q->rung && !q->fetch_pending) {
		q->fetch_pending = true;
		struct nic *nic = q->lni->nic;
		sim_schedule(nic->sim, nic->p->doorbell, cmdq_fetch, q, 0);
	}
}

uint32_t nic_cmdq_free_slots(const struct nic_cmdq *q)
{
	return q && q->live ? q->slots - q->used : 0;
}

static struct nic_cmdq **nic_qhead(struct nic *nic)
{
	return &nic->cmdqs;
}

/* cmdq_fetch(queue): its LNI (for the NIC) and the ring record at its head. */
static void cmdq_fetch_prefetch(const void *obj, uint64_t arg)
{
	const struct nic_cmdq *q = obj;
	(void)arg;
	__builtin_prefetch(q->lni);
	if (q->ring)
		__builtin_prefetch(&q->ring[q->head]);
}

/* ... one pop ahead, with the LNI and the head record in cache: the NIC record's line the submit reads
 * (the transmit engine's clock, or the PE a target command goes to) and the first command's work item. */
static void cmdq_fetch_prefetch_next(const void *obj, uint64_t arg)
{
	const struct nic_cmdq *q = obj;
	(void)arg;
	if (!q->live || !q->rung)
		return;
	const struct nic *nic = q->lni->nic;
	__builtin_prefetch(nic);
	const struct nic_work *w = q->ring[q->head].w;
	if (!w)
		return;
	__builtin_prefetch(w);
	if (!q->target)
		__builtin_prefetch(&nic->tx_free, 1);
}

/* ... and one more, with the work item in cache: a target command's PE. */
static void cmdq_fetch_prefetch_last(const void *obj, uint64_t arg)
{
	const struct nic_cmdq *q = obj;
	(void)arg;
	if (!q->live || !q->rung || !q->target)
		return;
	const struct nic_work *w = q->ring[q->head].w;
	if (w)
		__builtin_prefetch(&q->lni->nic->pe[w->cmd.tgt.ptn % C_PE_COUNT], 1);
}

void nic_cmdq_prefetch_hooks(struct sim *sim)
{
	sim_prefetch_hook(sim, cmdq_fetch, cmdq_fetch_prefetch);
	sim_prefetch_hook_stage(sim, cmdq_fetch, 1, cmdq_fetch_prefetch_next);
	sim_prefetch_hook_stage(sim, cmdq_fetch, 2, cmdq_fetch_prefetch_last);
}
