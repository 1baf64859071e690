/* The matching index of long LE lists (sim/nic/le_index.c) gives what the ordered walk gives: the same
 * first match and the same number of LEs walked (so the same simulated time and les_searched), whatever
 * the mix of exact and wildcard entries, ignore bits, initiators, operations, space, use-once and
 * persistent entries, unlinks, and lists that cross the indexing threshold or hold too many masks.
 * Checked against a reference walk kept by the test. */
#include <criterion/criterion.h>

#include "nic_hwlib.h"

#define A_ID C_MATCH_ID(0, 4) /* the sender's initiator id */

/* An LE as the test appended it (every one locally managed, as receives are: it truncates, and a
 * persistent one fills up). */
struct ref_le {
	uint16_t id;
	uint64_t mb, ib;
	uint32_t match_id, flags;
	uint64_t space;
};

struct ref {
	struct ref_le v[4096];
	int n;
};

static bool ref_match(const struct ref_le *e, uint64_t mb, uint32_t initiator, uint64_t need)
{
	if (!(e->flags & C_LE_OP_PUT) || ((e->mb ^ mb) & ~e->ib))
		return false;
	if (e->match_id != C_MATCH_ID_ANY && e->match_id != initiator)
		return false;
	return !(e->flags & C_LE_NO_TRUNCATE) || e->space >= need;
}

/* The walk: index of the first match (-1: none) and the LEs visited. */
static int ref_walk(const struct ref *r, uint64_t mb, uint64_t need, uint64_t *walked)
{
	for (int i = 0; i < r->n; i++)
		if (ref_match(&r->v[i], mb, A_ID, need)) {
			*walked = (uint64_t)i + 1;
			return i;
		}
	*walked = (uint64_t)r->n;
	return -1;
}

static void ref_remove(struct ref *r, int i)
{
	memmove(&r->v[i], &r->v[i + 1], (size_t)(r->n - i - 1) * sizeof(r->v[0]));
	r->n--;
}

struct rig {
	struct tsim t;
	struct hwep a, b;
	struct ref ref;
	char buf[64];
	uint16_t next_id;
};

static void rig_open(struct rig *g)
{
	memset(g, 0, sizeof(*g));
	g->t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	hwep_open(&g->a, g->t.sim, 0, 10, 4, &o, 1 << 16);
	hwep_open(&g->b, g->t.sim, 1, 10, 3, &o, 1 << 16);
	tgt(&g->b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(g->t.sim);
	g->next_id = 1;
}

static void rig_append(struct rig *g, uint64_t mb, uint64_t ib, uint32_t match_id, uint32_t flags, uint64_t len)
{
	struct ref_le *e = &g->ref.v[g->ref.n++];
	*e = (struct ref_le){ .id = g->next_id++, .mb = mb, .ib = ib, .match_id = match_id, .flags = flags,
			      .space = len };
	if (getenv("IXDBG"))
		fprintf(stderr, "append id %u mb %#llx ib %#llx fl %#x\n", e->id, (unsigned long long)mb, (unsigned long long)ib, flags);
	tgt(&g->b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = e->id,
				  .le_flags = flags | C_LE_MANAGE_LOCAL | C_LE_EVENT_LINK_DISABLE |
					      C_LE_EVENT_UNLINK_DISABLE,
				  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)g->buf, .length = len,
				  .match_id = match_id, .match_bits = mb, .ignore_bits = ib });
}

static void rig_unlink(struct rig *g, int i)
{
	if (getenv("IXDBG"))
		fprintf(stderr, "unlink id %u\n", g->ref.v[i].id);
	tgt(&g->b, NIC_CMD_TGT_UNLINK, (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = g->ref.v[i].id });
	ref_remove(&g->ref, i);
}

/* A Put of `len` bytes with `mb`: the matched LE (by buffer id) and les_searched agree with the walk. */
static void rig_put_check(struct rig *g, uint64_t mb, uint32_t len)
{
	sim_run(g->t.sim);
	struct nic_event ev[64];
	drain(&g->b, ev, 64);
	drain(&g->a, ev, 64);
	uint64_t before = tctr(&g->t, "nic.1.sim.les_searched");
	uint64_t walked;
	int i = ref_walk(&g->ref, mb, len, &walked);
	put(&g->a, 1, 10, g->buf, len, mb);
	sim_run(g->t.sim);
	int n = drain(&g->b, ev, 64);
	const struct nic_event *p = find_type(ev, n, C_EVENT_PUT);
	if (getenv("IXDBG"))
		fprintf(stderr, "put mb %#llx len %u -> %d (ref %d)\n", (unsigned long long)mb, len, p ? p->buffer_id : -1, i >= 0 ? g->ref.v[i].id : -1);
	cr_assert_eq(tctr(&g->t, "nic.1.sim.les_searched") - before, walked, "mb %#llx: walked %llu LEs, expected %llu",
		     (unsigned long long)mb, (unsigned long long)(tctr(&g->t, "nic.1.sim.les_searched") - before),
		     (unsigned long long)walked);
	if (getenv("IXDBG") && ((i < 0) != (p == NULL) || (p && p->buffer_id != g->ref.v[i].id))) {
		for (int k = 0; k < g->ref.n; k++)
			fprintf(stderr, "ref %d: id %u mb %#llx ib %#llx mid %#x fl %#x sp %llu\n", k, g->ref.v[k].id,
				(unsigned long long)g->ref.v[k].mb, (unsigned long long)g->ref.v[k].ib, g->ref.v[k].match_id,
				g->ref.v[k].flags, (unsigned long long)g->ref.v[k].space);
	}
	if (i < 0) {
		cr_assert_null(p, "mb %#llx matched buffer %u; the walk finds none", (unsigned long long)mb,
			       p ? p->buffer_id : 0);
		return;
	}
	cr_assert_not_null(p, "mb %#llx: no match; the walk finds buffer %u", (unsigned long long)mb, g->ref.v[i].id);
	cr_assert_eq(p->buffer_id, g->ref.v[i].id, "mb %#llx matched buffer %u, the walk buffer %u",
		     (unsigned long long)mb, p->buffer_id, g->ref.v[i].id);
	cr_assert_eq(p->rc, C_RC_OK);
	if (g->ref.v[i].flags & C_LE_USE_ONCE)
		ref_remove(&g->ref, i);
	else /* a persistent receive (locally managed) fills up */
		g->ref.v[i].space -= len < g->ref.v[i].space ? len : g->ref.v[i].space;
}

static uint32_t list_count(struct rig *g)
{
	struct nic_pte_status st;
	cr_assert_eq(nic_pte_status(g->b.nic, g->b.ptn, &st), 0);
	return st.le_count[C_PTL_LIST_PRIORITY];
}

static bool list_indexed(struct rig *g)
{
	struct nic_pte_status st;
	cr_assert_eq(nic_pte_status(g->b.nic, g->b.ptn, &st), 0);
	return st.le_indexed & (1u << C_PTL_LIST_PRIORITY);
}

/* Exact entries behind a wildcard: the wildcard is the first match; once it is used up, the exact one. */
Test(nic_index, wildcard_before_exact_wins_in_list_order)
{
	struct rig *g = calloc(1, sizeof(*g));
	rig_open(g);
	for (uint64_t k = 0; k < 100; k++)
		rig_append(g, 1000 + k, 0, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_USE_ONCE, 64);
	rig_append(g, 0, ~0ULL, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_USE_ONCE, 64); /* position 101 */
	for (uint64_t k = 0; k < 100; k++)
		rig_append(g, 5000 + k, 0, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_USE_ONCE, 64);
	sim_run(g->t.sim);
	cr_assert_not(list_indexed(g), "indexed at the first search, not before");
	rig_put_check(g, 5050, 8); /* the wildcard, at 101, before the exact 5050 at 151 */
	cr_assert(list_indexed(g));
	rig_put_check(g, 5050, 8); /* now the exact one, at 150 */
	rig_put_check(g, 1042, 8); /* exact, ahead of everything */
	rig_put_check(g, 77, 8);   /* nothing: the whole list walked */
	cr_assert_eq(list_count(g), 198);
	tsim_free(&g->t);
	free(g);
}

/* Ignore bits: an entry ignoring the low byte takes any request that agrees above it, in its place. */
Test(nic_index, ignore_bits_match_in_order)
{
	struct rig *g = calloc(1, sizeof(*g));
	rig_open(g);
	for (uint64_t k = 0; k < 60; k++)
		rig_append(g, k << 8, 0xff, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_USE_ONCE, 64);
	for (uint64_t k = 0; k < 60; k++)
		rig_append(g, (k << 8) | 7, 0, C_MATCH_ID_ANY, C_LE_OP_PUT, 64); /* persistent, exact */
	rig_put_check(g, (12 << 8) | 7, 8); /* the masked entry 12 (position 13), not the exact one */
	rig_put_check(g, (12 << 8) | 7, 8); /* the masked one is used up: the persistent exact one */
	rig_put_check(g, (12 << 8) | 7, 8); /* persistent: again the same */
	rig_put_check(g, (12 << 8) | 9, 8); /* masked 12 gone, exact needs 7: none */
	rig_put_check(g, (59 << 8) | 200, 8);
	tsim_free(&g->t);
	free(g);
}

/* Candidates of the right bits that fail another check are passed over in order: a directed entry for
 * another initiator, a Get-only entry, an entry without room under C_LE_NO_TRUNCATE. */
Test(nic_index, candidates_failing_initiator_op_or_space_are_skipped)
{
	struct rig *g = calloc(1, sizeof(*g));
	rig_open(g);
	for (uint64_t k = 0; k < 40; k++)
		rig_append(g, 900 + k, 0, C_MATCH_ID_ANY, C_LE_OP_PUT, 64);
	rig_append(g, 7, 0, C_MATCH_ID(1, 9), C_LE_OP_PUT | C_LE_USE_ONCE, 64);           /* another initiator */
	rig_append(g, 7, 0, C_MATCH_ID_ANY, C_LE_OP_GET | C_LE_USE_ONCE, 64);             /* Get only */
	rig_append(g, 7, 0, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_NO_TRUNCATE | C_LE_USE_ONCE, 16); /* too small */
	rig_append(g, 7, 0, A_ID, C_LE_OP_PUT | C_LE_USE_ONCE, 64);                       /* this one */
	rig_append(g, 7, 0, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_USE_ONCE, 64);
	rig_put_check(g, 7, 32);
	rig_put_check(g, 7, 32);
	rig_put_check(g, 7, 8); /* the small one now has room */
	rig_put_check(g, 7, 8);
	tsim_free(&g->t);
	free(g);
}

/* Random lists against the walk: appends of exact, partly masked and wildcard entries (few keys, so many
 * duplicates), use-once and persistent, directed and not; unlinks anywhere; Puts; the list grows past the
 * threshold, shrinks below it, empties, and positions are renumbered many times. */
static void random_run(unsigned seed, int masks, bool expect_index)
{
	static const uint64_t mask_set[] = { 0, 0xff, ~0ULL, 0xff00, 1ULL << 63, 0xf, 0xf0f0, 3 << 20, 0x1, 0x2, 0x4 };
	struct rig *g = calloc(1, sizeof(*g));
	rig_open(g);
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	int indexed_puts = 0, walked_long = 0;
	for (int op = 0; op < 4000; op++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned r = (unsigned)(x % 1000);
		uint64_t key = (x >> 8) % 24;
		/* Phases of 1000 operations: grow (appends outnumber what Puts and unlinks take), then shrink. */
		bool grow = (op / 1000) % 2 == 0;
		if (r < (grow ? 500u : 150u) && g->ref.n < 400) {
			uint64_t ib = mask_set[(x >> 20) % (uint64_t)masks];
			uint32_t mid = (x >> 30) % 7 == 0 ? A_ID : (x >> 30) % 7 == 1 ? C_MATCH_ID(1, 9) : C_MATCH_ID_ANY;
			uint32_t fl = C_LE_OP_PUT | ((x >> 34) % 3 ? C_LE_USE_ONCE : 0) | ((x >> 36) % 9 == 0 ? C_LE_NO_TRUNCATE : 0);
			if ((x >> 40) % 13 == 0)
				fl = C_LE_OP_GET | C_LE_USE_ONCE;
			rig_append(g, key, ib, mid, fl, (x >> 44) % 2 ? 64 : 16);
		} else if (r < 600 && g->ref.n) {
			rig_unlink(g, (int)((x >> 12) % (uint64_t)g->ref.n));
		} else if (r < 602) {
			while (g->ref.n)
				rig_unlink(g, 0); /* empty it: the index goes, and comes back */
		} else {
			rig_put_check(g, key, (x >> 50) % 2 ? 8 : 32);
			if (list_indexed(g))
				indexed_puts++;
			else if (g->ref.n >= 32)
				walked_long++;
		}
	}
	sim_run(g->t.sim);
	cr_assert_eq(list_count(g), (uint32_t)g->ref.n);
	if (expect_index)
		cr_assert_gt(indexed_puts, 500, "the index served %d Puts", indexed_puts);
	else
		cr_assert(indexed_puts == 0 && walked_long > 500, "indexed %d, walked %d", indexed_puts, walked_long);
	tsim_free(&g->t);
	free(g);
}

Test(nic_index, random_lists_agree_with_the_walk)
{
	for (unsigned s = 1; s <= 3; s++)
		random_run(s, 3, true);
}

/* More ignore masks than the index keeps: the list is walked, with the same answers. */
Test(nic_index, too_many_masks_fall_back_to_the_walk)
{
	random_run(7, 11, false);
}

/* ---------------------------------------------------------------- unexpected headers beside an index */

/* A Put from pid `pid` of the sender with header data and remote offset of its own. */
static void put_hdr(struct rig *g, uint32_t pid, uint64_t mb, uint32_t len, uint64_t hdr, uint64_t roff)
{
	struct nic_cmd cmd = { .op = NIC_CMD_PUT };
	cmd.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 3, .index = 0, .vni = 10,
					.local_addr = (uint64_t)(uintptr_t)g->buf, .length = len, .match_bits = mb,
					.header_data = hdr, .remote_offset = roff, .eqn = NIC_NONE, .ctn = NIC_NONE,
					.src_pid = pid, .user_ptr = 0x77 };
	cr_assert_eq(nic_cmdq_emit(g->a.txq, &cmd), 0);
	nic_cmdq_ring(g->a.txq);
}

/* An unexpected header's record is a packet's slot, its header fields where a posted LE keeps its index
 * links: headers that wait while the priority list of their PtlTE is indexed, searched, grown and cut keep
 * every field, and each receive appended later reports its own header (PUT_OVERFLOW), oldest first. */
Test(nic_index, unexpected_headers_beside_an_indexed_list_keep_their_header)
{
	enum { NH = 40 };
	static char oflow[1 << 16];
	struct rig *g = calloc(1, sizeof(*g));
	rig_open(g);
	tgt(&g->b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_OVERFLOW, .buffer_id = 999,
				  .le_flags = C_LE_OP_PUT | C_LE_MANAGE_LOCAL | C_LE_EVENT_LINK_DISABLE,
				  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)oflow, .length = sizeof(oflow),
				  .min_free = 64, .match_id = C_MATCH_ID_ANY, .ignore_bits = ~0ULL, .user_ptr = 0x0f });
	for (uint64_t k = 0; k < 150; k++)
		rig_append(g, 5000 + k, 0, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_USE_ONCE, 64);
	rig_put_check(g, 5003, 8); /* the list is indexed from its first search */
	cr_assert(list_indexed(g));
	struct nic_event ev[256];
	for (uint32_t h = 0; h < NH; h++) {
		put_hdr(g, 4 + h % 3, 100 + h, 8 + h, 0xabc000 + h, 0x1000ULL * h + 5);
		/* between the headers: index links written, moved and dropped on the priority list */
		if (h % 4 == 0)
			rig_append(g, 6000 + h, 0, C_MATCH_ID_ANY, C_LE_OP_PUT | C_LE_USE_ONCE, 64);
		if (h % 5 == 1)
			rig_unlink(g, g->ref.n - 1 - (int)(h % 7)); /* near the tail: not an entry the Puts want */
		if (h % 3 == 2)
			rig_put_check(g, 5000 + 10 + h, 8);
	}
	sim_run(g->t.sim);
	drain(&g->b, ev, 256);
	cr_assert(list_indexed(g));
	struct nic_pte_status st;
	cr_assert_eq(nic_pte_status(g->b.nic, g->b.ptn, &st), 0);
	cr_assert_eq(st.ule_count, NH);
	uint64_t offs[NH];
	cr_assert_eq(nic_pte_ule_offsets(g->b.nic, g->b.ptn, offs, NH), NH);
	for (uint32_t h = 0; h < NH; h++)
		cr_assert_eq(offs[h], 0x1000ULL * h + 5, "header %u: remote offset %#llx", h, (unsigned long long)offs[h]);
	/* Receives for the headers, newest first: each takes its own. */
	uint64_t at = (uint64_t)(uintptr_t)oflow, starts[NH];
	for (uint32_t h = 0; h < NH; h++) {
		starts[h] = at;
		at += 8 + h;
	}
	for (uint32_t i = 0; i < NH; i++) {
		uint32_t h = NH - 1 - i;
		tgt(&g->b, NIC_CMD_TGT_APPEND,
		    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = (uint16_t)(3000 + h),
					  .le_flags = C_LE_OP_PUT | C_LE_USE_ONCE | C_LE_MANAGE_LOCAL,
					  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)g->buf, .length = 64,
					  .match_id = C_MATCH_ID_ANY, .match_bits = 100 + h, .user_ptr = 0x500 + h });
		sim_run(g->t.sim);
		int n = drain(&g->b, ev, 256);
		const struct nic_event *p = find_type(ev, n, C_EVENT_PUT_OVERFLOW);
		cr_assert_not_null(p, "receive %u: no PUT_OVERFLOW", h);
		cr_assert_eq(p->buffer_id, 3000 + h);
		cr_assert_eq(p->match_bits, 100 + h);
		cr_assert_eq(p->header_data, 0xabc000 + h, "header %u: header data %#llx", h,
			     (unsigned long long)p->header_data);
		cr_assert_eq(p->remote_offset, 0x1000ULL * h + 5);
		cr_assert_eq(p->rlength, 8 + h);
		cr_assert_eq(p->mlength, 8 + h);
		cr_assert_eq(p->initiator, C_MATCH_ID(0, 4 + h % 3));
		cr_assert_eq(p->vni, 10);
		cr_assert_eq(p->start, starts[h], "header %u: its data in the overflow buffer", h);
	}
	cr_assert_eq(nic_pte_status(g->b.nic, g->b.ptn, &st), 0);
	cr_assert_eq(st.ule_count, 0);
	cr_assert_eq(list_count(g), (uint32_t)g->ref.n, "the receives were consumed, never linked");
	rig_put_check(g, 5100, 8); /* the index still answers as the walk does */
	tsim_free(&g->t);
	free(g);
}
