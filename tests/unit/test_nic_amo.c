/* The NIC's AMO unit: the arithmetic of every operation class (amo.c), and atomics through the command
 * interface: execution at the target, the previous value in the reply, target events and counting events,
 * LE permissions and bounds, the unit's cost and its one-at-a-time order. */
#include <complex.h>
#include <criterion/criterion.h>
#include <errno.h>

#include "nic_hwlib.h"

static void apply(uint8_t op, uint8_t cswap, uint8_t type, void *t, const void *a, const void *b)
{
	nic_amo_apply(op, cswap, type, t, a, b);
}

Test(nic_amo, arithmetic_of_each_operation_class)
{
	int32_t t = -5, a = 3, b = 0;
	apply(C_AMO_OP_MIN, 0, C_AMO_TYPE_INT32_T, &t, &a, &b);
	cr_assert_eq(t, -5);
	apply(C_AMO_OP_MAX, 0, C_AMO_TYPE_INT32_T, &t, &a, &b);
	cr_assert_eq(t, 3);
	apply(C_AMO_OP_SUM, 0, C_AMO_TYPE_INT32_T, &t, &a, &b);
	cr_assert_eq(t, 6);
	uint32_t u = 0xfffffffe, one = 3, z = 0;
	apply(C_AMO_OP_SUM, 0, C_AMO_TYPE_UINT32_T, &u, &one, &z);
	cr_assert_eq(u, 1, "unsigned sums wrap");
	uint8_t x = 0x0f, m = 0x3c, none = 0;
	apply(C_AMO_OP_BXOR, 0, C_AMO_TYPE_UINT8_T, &x, &m, &none);
	cr_assert_eq(x, 0x33);
	apply(C_AMO_OP_LXOR, 0, C_AMO_TYPE_UINT8_T, &x, &m, &none);
	cr_assert_eq(x, 0, "both true: logical xor is 0");
	apply(C_AMO_OP_LOR, 0, C_AMO_TYPE_UINT8_T, &x, &m, &none);
	cr_assert_eq(x, 1);
	/* AXOR (libfabric FI_MSWAP with op1 = value & mask, op2 = mask). */
	uint16_t w = 0xaaaa, v = 0x5555 & 0x00ff, mask = 0x00ff;
	apply(C_AMO_OP_AXOR, 0, C_AMO_TYPE_UINT16_T, &w, &v, &mask);
	cr_assert_eq(w, 0xaa55);
	/* CSWAP: op1 replaces the target when (op2 <cmp> target). */
	int64_t s = 10, nv = 99, cmp = 10;
	apply(C_AMO_OP_CSWAP, C_AMO_OP_CSWAP_NE, C_AMO_TYPE_INT64_T, &s, &nv, &cmp);
	cr_assert_eq(s, 10);
	apply(C_AMO_OP_CSWAP, C_AMO_OP_CSWAP_EQ, C_AMO_TYPE_INT64_T, &s, &nv, &cmp);
	cr_assert_eq(s, 99);
	cmp = 5;
	apply(C_AMO_OP_CSWAP, C_AMO_OP_CSWAP_LT, C_AMO_TYPE_INT64_T, &s, &nv, &cmp);
	cr_assert_eq(s, 99, "5 < 99: swapped (to the same value)");
	nv = 1;
	apply(C_AMO_OP_CSWAP, C_AMO_OP_CSWAP_GT, C_AMO_TYPE_INT64_T, &s, &nv, &cmp);
	cr_assert_eq(s, 99, "5 > 99 is false: unchanged");
	double d = 1.5, da = 2.25, db = 0;
	apply(C_AMO_OP_SUM, 0, C_AMO_TYPE_DOUBLE_T, &d, &da, &db);
	cr_assert_eq(d, 3.75);
	apply(C_AMO_OP_MIN, 0, C_AMO_TYPE_DOUBLE_T, &d, &da, &db);
	cr_assert_eq(d, 2.25);
	double complex c = 1 + 2 * I, ca = 3 - 1 * I, cb = 0;
	apply(C_AMO_OP_SUM, 0, C_AMO_TYPE_DOUBLE_COMPLEX_T, &c, &ca, &cb);
	cr_assert(creal(c) == 4 && cimag(c) == 1);
	uint8_t big[16], nb[16], cb16[16];
	memset(big, 1, 16);
	memset(nb, 2, 16);
	memset(cb16, 1, 16);
	apply(C_AMO_OP_CSWAP, C_AMO_OP_CSWAP_EQ, C_AMO_TYPE_UINT128_T, big, nb, cb16);
	cr_assert_eq(big[15], 2, "128-bit compare-and-swap");
}

Test(nic_amo, valid_operations_of_the_unit)
{
	cr_assert(nic_amo_valid(C_AMO_OP_SUM, 0, C_AMO_TYPE_FLOAT_COMPLEX_T));
	cr_assert(!nic_amo_valid(C_AMO_OP_MIN, 0, C_AMO_TYPE_FLOAT_COMPLEX_T));
	cr_assert(!nic_amo_valid(C_AMO_OP_BOR, 0, C_AMO_TYPE_DOUBLE_T));
	cr_assert(!nic_amo_valid(C_AMO_OP_SUM, 0, C_AMO_TYPE_UINT128_T));
	cr_assert(nic_amo_valid(C_AMO_OP_CSWAP, C_AMO_OP_CSWAP_EQ, C_AMO_TYPE_UINT128_T));
	cr_assert(!nic_amo_valid(C_AMO_OP_CSWAP, C_AMO_OP_CSWAP_LT, C_AMO_TYPE_UINT128_T));
	cr_assert(!nic_amo_valid(3, 0, C_AMO_TYPE_INT8_T), "op code 3 is not an operation");
	cr_assert_eq(nic_amo_type_size(C_AMO_TYPE_DOUBLE_COMPLEX_T), 16);
	cr_assert_eq(nic_amo_type_size(C_AMO_TYPE_LAST), 0);
}

static int amo(struct hwep *e, uint32_t dst, uint8_t op, uint8_t cswap, uint8_t type, bool fetch, uint64_t off,
	       const void *op1, const void *op2, void *result)
{
	uint8_t operands[2 * C_AMO_OPERAND_BYTES] = { 0 };
	uint32_t n = nic_amo_type_size(type);
	memcpy(operands, op1, n);
	if (op2)
		memcpy(operands + C_AMO_OPERAND_BYTES, op2, n);
	struct nic_cmd cmd = { .op = NIC_CMD_AMO };
	cmd.dma = (struct nic_dma_cmd){ .dst_nic = dst, .dst_pid = 3, .index = 0, .vni = 10,
					.local_addr = (uint64_t)(uintptr_t)result, .length = n, .remote_offset = off,
					.match_bits = 42, .eqn = NIC_NONE, .ctn = NIC_NONE, .src_pid = 4,
					.user_ptr = 0x55, .idc_data = operands, .amo_op = op, .amo_cswap = cswap,
					.amo_type = type, .amo_fetch = fetch };
	int rc = nic_cmdq_emit(e->txq, &cmd);
	if (!rc)
		nic_cmdq_ring(e->txq);
	return rc;
}

struct pair {
	struct tsim t;
	struct hwep a, b;
	uint64_t mem[8];
};

static void pair_open(struct pair *p, uint32_t le_flags)
{
	p->t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	hwep_open(&p->a, p->t.sim, 0, 10, 4, &o, 256);
	hwep_open(&p->b, p->t.sim, 1, 10, 3, &o, 256);
	memset(p->mem, 0, sizeof(p->mem));
	tgt(&p->b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = 7, .le_flags = le_flags, .ctn = NIC_NONE,
				  .start = (uint64_t)(uintptr_t)p->mem, .length = sizeof(p->mem),
				  .match_id = C_MATCH_ID_ANY, .match_bits = 42, .user_ptr = 0xabc });
	tgt(&p->b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(p->t.sim);
	struct nic_event ev[8];
	drain(&p->b, ev, 8);
}

Test(nic_amo, fetching_and_plain_atomics_through_the_nic)
{
	struct pair p;
	pair_open(&p, C_LE_OP_PUT | C_LE_OP_GET | C_LE_EVENT_LINK_DISABLE);
	p.mem[1] = 40;
	uint64_t two = 2, prev = 0;
	cr_assert_eq(amo(&p.a, 1, C_AMO_OP_SUM, 0, C_AMO_TYPE_UINT64_T, true, 8, &two, NULL, &prev), 0);
	sim_run(p.t.sim);
	cr_assert_eq(p.mem[1], 42);
	cr_assert_eq(prev, 40, "the reply carries the previous value to local_addr");
	struct nic_event ev[8];
	int n = drain(&p.a, ev, 8);
	const struct nic_event *r = find_type(ev, n, C_EVENT_REPLY);
	cr_assert(r && r->rc == C_RC_OK && r->mlength == 8 && r->user_ptr == 0x55);
	cr_assert_eq(count_type(ev, n, C_EVENT_SEND), 0, "operands travel in the command: no SEND event");
	n = drain(&p.b, ev, 8);
	const struct nic_event *t = find_type(ev, n, C_EVENT_FETCH_ATOMIC);
	cr_assert(t && t->rc == C_RC_OK && t->mlength == 8 && t->start == (uint64_t)(uintptr_t)&p.mem[1] &&
		  t->initiator == C_MATCH_ID(0, 4) && t->user_ptr == 0xabc);
	/* Non-fetching: an ACK, an ATOMIC event. */
	uint64_t x = 0xff;
	cr_assert_eq(amo(&p.a, 1, C_AMO_OP_BXOR, 0, C_AMO_TYPE_UINT64_T, false, 8, &x, NULL, NULL), 0);
	sim_run(p.t.sim);
	cr_assert_eq(p.mem[1], 42 ^ 0xff);
	n = drain(&p.a, ev, 8);
	cr_assert(find_type(ev, n, C_EVENT_ACK) && find_type(ev, n, C_EVENT_ACK)->rc == C_RC_OK);
	n = drain(&p.b, ev, 8);
	cr_assert_not_null(find_type(ev, n, C_EVENT_ATOMIC));
	cr_assert_eq(tctr(&p.t, "nic.1.C_CNTR_LPE_AMO_CMDS"), 1);
	cr_assert_eq(tctr(&p.t, "nic.1.C_CNTR_LPE_FAMO_CMDS"), 1);
	tsim_free(&p.t);
}

Test(nic_amo, permissions_bounds_and_malformed_commands)
{
	struct pair p;
	pair_open(&p, C_LE_OP_PUT | C_LE_EVENT_LINK_DISABLE); /* no OP_GET: no fetching atomics */
	uint64_t one = 1, prev = 77;
	amo(&p.a, 1, C_AMO_OP_SUM, 0, C_AMO_TYPE_UINT64_T, true, 0, &one, NULL, &prev);
	amo(&p.a, 1, C_AMO_OP_SUM, 0, C_AMO_TYPE_UINT64_T, false, 60, &one, NULL, NULL);
	sim_run(p.t.sim);
	struct nic_event ev[8];
	int n = drain(&p.a, ev, 8);
	cr_assert_eq(find_type(ev, n, C_EVENT_REPLY)->rc, C_RC_ENTRY_NOT_FOUND, "fetching AMO needs C_LE_OP_GET");
	cr_assert_eq(find_type(ev, n, C_EVENT_ACK)->rc, C_RC_ADDR_OUT_OF_RANGE, "8 bytes at offset 60 of 64");
	cr_assert_eq(prev, 77);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(p.mem[i], 0, "nothing written");
	cr_assert_eq(amo(&p.a, 1, C_AMO_OP_BOR, 0, C_AMO_TYPE_DOUBLE_T, false, 0, &one, NULL, NULL), -EINVAL);
	cr_assert_eq(amo(&p.a, 1, C_AMO_OP_CSWAP, 9, C_AMO_TYPE_INT32_T, false, 0, &one, &one, NULL), -EINVAL);
	tsim_free(&p.t);
}

/* Atomics from two initiators on one word apply one at a time, in arrival order, amo_unit_ns apart. */
Test(nic_amo, one_at_a_time_in_arrival_order)
{
	struct tsim t = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3}, \"nic\": {\"amo_unit_ns\": 500}}", 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, c, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 1024);
	hwep_open(&c, t.sim, 2, 10, 4, &o, 1024);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 1024);
	uint64_t word = 0;
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .le_flags = C_LE_OP_PUT | C_LE_OP_GET | C_LE_EVENT_LINK_DISABLE,
				  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)&word, .length = 8,
				  .match_id = C_MATCH_ID_ANY, .match_bits = 42 });
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	enum { N = 100 };
	static uint64_t prev_a[N], prev_c[N];
	uint64_t one = 1;
	simtime_t t0 = sim_now(t.sim);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(amo(&a, 1, C_AMO_OP_SUM, 0, C_AMO_TYPE_UINT64_T, true, 0, &one, NULL, &prev_a[i]), 0);
		cr_assert_eq(amo(&c, 1, C_AMO_OP_SUM, 0, C_AMO_TYPE_UINT64_T, true, 0, &one, NULL, &prev_c[i]), 0);
	}
	sim_run(t.sim);
	cr_assert_eq(word, 2 * N);
	static bool seen[2 * N];
	for (int i = 0; i < N; i++) {
		cr_assert(!seen[prev_a[i]] && !seen[prev_c[i]], "every previous value once");
		seen[prev_a[i]] = seen[prev_c[i]] = true;
		if (i)
			cr_assert(prev_a[i] > prev_a[i - 1] && prev_c[i] > prev_c[i - 1], "one initiator's atomics in order");
	}
	/* 200 atomics through a unit that takes 500 ns each: at least 100 us. */
	cr_assert_geq(sim_now(t.sim) - t0, (simtime_t)2 * N * 500 * 1000);
	tsim_free(&t);
}
