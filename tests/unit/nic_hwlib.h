/* Hardware-level endpoint helpers for the NIC unit tests: an LNI, an EQ, one mapped PtlTE and a transmit
 * and a target command queue, driven through the command interface only. */
#ifndef CXISIM_TEST_NIC_HWLIB_H
#define CXISIM_TEST_NIC_HWLIB_H

#include <criterion/criterion.h>

#include "nic_testlib.h"

struct hwep {
	struct nic *nic;
	struct nic_lni *lni;
	uint32_t eqn, ptn;
	struct nic_cmdq *txq, *tgq;
};

static inline void hwep_open(struct hwep *e, struct sim *sim, uint32_t addr, uint16_t vni, uint32_t pid,
		      const struct nic_pte_opts *o, uint32_t eq_slots)
{
	e->nic = nic_get(sim, addr);
	cr_assert_not_null(e->nic);
	cr_assert_eq(nic_lni_alloc(e->nic, NIC_SVC_DEFAULT, &nic_mem_host, NULL, &e->lni), 0);
	struct nic_eq_attr ea = { .slots = eq_slots, .reserved_fc = 1 };
	cr_assert_eq(nic_eq_alloc(e->lni, &ea, &e->eqn), 0);
	cr_assert_eq(nic_pte_alloc(e->lni, e->eqn, o, &e->ptn), 0);
	cr_assert_eq(nic_pte_map(e->lni, e->ptn, vni, pid, 0), 0);
	struct nic_cmdq_attr qa = { .target = false, .slots = 256, .eqn = e->eqn };
	cr_assert_eq(nic_cmdq_alloc(e->lni, &qa, &e->txq), 0);
	qa.target = true;
	cr_assert_eq(nic_cmdq_alloc(e->lni, &qa, &e->tgq), 0);
}

static inline void tgt(struct hwep *e, uint8_t op, struct nic_tgt_cmd c)
{
	struct nic_cmd cmd = { .op = op };
	c.ptn = e->ptn;
	cmd.tgt = c;
	cr_assert_eq(nic_cmdq_emit(e->tgq, &cmd), 0);
	nic_cmdq_ring(e->tgq);
}

static inline void put(struct hwep *e, uint32_t dst, uint16_t vni, const void *buf, uint32_t len, uint64_t mb)
{
	struct nic_cmd cmd = { .op = NIC_CMD_PUT };
	cmd.dma = (struct nic_dma_cmd){ .dst_nic = dst, .dst_pid = 3, .index = 0, .vni = vni,
					.local_addr = (uint64_t)(uintptr_t)buf, .length = len, .match_bits = mb,
					.eqn = NIC_NONE, .ctn = NIC_NONE, .src_pid = 4, .user_ptr = 0x77 };
	cr_assert_eq(nic_cmdq_emit(e->txq, &cmd), 0);
	nic_cmdq_ring(e->txq);
}

/* A Get of len bytes from (dst, pid 3, index 0) with match bits 42, landing at `land`. */
static inline void get(struct hwep *e, uint32_t dst, void *land, uint32_t len)
{
	struct nic_cmd cmd = { .op = NIC_CMD_GET };
	cmd.dma = (struct nic_dma_cmd){ .dst_nic = dst, .dst_pid = 3, .index = 0, .vni = 10,
					.local_addr = (uint64_t)(uintptr_t)land, .length = len, .match_bits = 42,
					.eqn = NIC_NONE, .ctn = NIC_NONE, .src_pid = 4 };
	cr_assert_eq(nic_cmdq_emit(e->txq, &cmd), 0);
	nic_cmdq_ring(e->txq);
}

static inline int drain(struct hwep *e, struct nic_event *out, int max)
{
	int n = 0;
	const struct nic_event *ev;
	while ((ev = nic_eq_peek(e->nic, e->eqn))) {
		if (n < max)
			out[n] = *ev;
		n++;
		nic_eq_next(e->nic, e->eqn);
	}
	nic_eq_ack(e->nic, e->eqn);
	return n;
}

static inline int count_type(const struct nic_event *ev, int n, uint8_t type)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		c += ev[i].type == type;
	return c;
}

static inline const struct nic_event *find_type(const struct nic_event *ev, int n, uint8_t type)
{
	for (int i = 0; i < n; i++)
		if (ev[i].type == type)
			return &ev[i];
	return NULL;
}

#endif
