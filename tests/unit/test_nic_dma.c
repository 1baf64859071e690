/* The NIC's host-memory DMA: reads stream through a bounded window of outstanding PCIe reads (one channel
 * per NIC, shared by Put payloads and Get replies), writes are posted behind the arriving packets. */
#include <criterion/criterion.h>

#include "nic_hwlib.h"

#define MIB (1u << 20)
#define NMSG 8
#define NGET 48

/* window 6,250 B over a 500 ns round trip (2 x the default 250 ns PCIe latency): 12.5 GB/s of reads,
 * half the link, so a read-bound and a link-bound transfer are far apart. */
#define SLOW_READS "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3}, " \
		   "\"nic\": {\"dma_read_window_bytes\": 6250}}"
#define READ_GBS 12.5

static uint8_t *bufs[3];

static void big_buffers(void)
{
	for (int i = 0; i < 3; i++) {
		bufs[i] = calloc(1, MIB);
		cr_assert_not_null(bufs[i]);
		memset(bufs[i], 0x30 + i, MIB);
	}
}

static void free_buffers(void)
{
	for (int i = 0; i < 3; i++)
		free(bufs[i]);
}

/* A persistent LE over a whole MiB buffer that accepts `ops` from anyone with match bits 42. */
static void expose(struct hwep *e, uint8_t *buf, uint32_t ops)
{
	tgt(e, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = 1, .le_flags = ops, .ctn = NIC_NONE,
				  .start = (uint64_t)(uintptr_t)buf, .length = MIB, .match_id = C_MATCH_ID_ANY,
				  .match_bits = 42 });
	tgt(e, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
}

/* Run until `e` has seen `n` events of `type` (draining its EQ); returns the time of the last one to
 * within the 100 ns step. */
static simtime_t run_until_events(struct tsim *t, struct hwep *e, uint8_t type, int n)
{
	struct nic_event ev[64];
	int seen = 0;
	while (seen < n) {
		sim_run_until(t->sim, sim_now(t->sim) + SIM_NS(100));
		int got = drain(e, ev, 64);
		cr_assert_leq(got, 64);
		seen += count_type(ev, got, type);
	}
	return sim_now(t->sim);
}

static double gbs(uint64_t bytes, simtime_t ps)
{
	return (double)bytes / ((double)ps / 1e12) / 1e9;
}

Test(nic_dma, puts_from_one_nic_stream_at_the_read_window_rate)
{
	big_buffers();
	struct tsim t = tsim_new(SLOW_READS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 256);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 256);
	expose(&b, bufs[1], C_LE_OP_PUT);
	sim_run(t.sim);
	simtime_t t0 = sim_now(t.sim);
	for (int i = 0; i < NMSG; i++)
		put(&a, 1, 10, bufs[0], MIB, 42);
	/* The SEND event says the NIC has read the whole payload. */
	double rate = gbs((uint64_t)NMSG * MIB, run_until_events(&t, &a, C_EVENT_SEND, NMSG) - t0);
	sim_run(t.sim);
	cr_assert_eq(memcmp(bufs[0], bufs[1], MIB), 0);
	/* Bound by the host reads, not the 200 Gb/s link: within the fixed latencies of the rate. */
	cr_assert(rate < READ_GBS && rate > 0.99 * READ_GBS, "rate %.3f GB/s", rate);
	tsim_free(&t);
	free_buffers();
}

Test(nic_dma, get_replies_from_two_targets_fill_the_initiator_link)
{
	big_buffers();
	struct tsim t = tsim_new(SLOW_READS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b, c;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 256);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 256);
	hwep_open(&c, t.sim, 2, 10, 3, &o, 256);
	expose(&b, bufs[1], C_LE_OP_GET);
	expose(&c, bufs[2], C_LE_OP_GET);
	sim_run(t.sim);
	simtime_t t0 = sim_now(t.sim);
	/* Enough transfers that the ramp and the drain (a whole message per hand-over) stay small. */
	for (int i = 0; i < NGET / 2; i++) {
		get(&a, 1, bufs[0], MIB);
		get(&a, 2, bufs[0], MIB);
	}
	sim_run(t.sim);
	struct nic_event ev[64];
	int n = drain(&a, ev, 64);
	cr_assert_eq(count_type(ev, n, C_EVENT_REPLY), NGET);
	double rate = gbs((uint64_t)NGET * MIB, sim_now(t.sim) - t0);
	/* Each target reads at 12.5 GB/s; together they are held only by the initiator's 25 GB/s link (less
	 * its packet headers): a pull is sourced where the data lives. */
	cr_assert(rate > 1.8 * READ_GBS && rate < 25.0, "rate %.3f GB/s", rate);
	n = drain(&b, ev, 64);
	cr_assert_eq(count_type(ev, n, C_EVENT_GET), NGET / 2);
	tsim_free(&t);
	free_buffers();
}

Test(nic_dma, a_large_put_is_cut_through_not_read_then_sent)
{
	big_buffers();
	struct tsim t = tsim_new(SLOW_READS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 256);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 256);
	expose(&b, bufs[1], C_LE_OP_PUT);
	sim_run(t.sim);
	simtime_t t0 = sim_now(t.sim);
	put(&a, 1, 10, bufs[0], MIB, 42);
	sim_run(t.sim);
	double us = (double)(sim_now(t.sim) - t0) / 1e6;
	double read_us = MIB / (READ_GBS * 1e3), write_us = MIB / (224.0 / 8 * 1e3);
	/* The ACK and the target event follow the read, the target's write of the last packet (each packet is
	 * written to host memory as it lands, at pcie_gbps, faster than these reads) and fixed latencies.
	 * Store-and-forward would add the whole wire time (~43 us) between read and write; writing the
	 * message after its last byte, its whole write (write_us, ~37 us). */
	cr_assert(us > read_us && us < read_us + 3.0 && us < read_us + write_us,
		  "put acked after %.2f us (read %.2f us)", us, read_us);
	tsim_free(&t);
	free_buffers();
}
