/* Large-message bandwidth at the default parameters, through the provider software layer (eager, IDC or
 * rendezvous chosen as prov/cxi does): a 4 MiB message is a rendezvous Put whose target NIC Gets the rest
 * from the initiator; the Get reply streams out of the initiator's host memory through the NIC's read
 * window and into the target's as its packets land.  The one-way time (send posted to receive completed,
 * the receive posted first as fi_pingpong does) must come within 5% of the link rate x payload efficiency
 * (200 Gb/s x 2048 / (2048 + 64) = 193.9 Gb/s), and cannot beat the NIC's host-read stream
 * (dma_read_window_bytes / (2 x pcie_latency_ns) = 11,720 B / 500 ns = 187.5 Gb/s). */
#include <criterion/criterion.h>

#include "nic_swlib.h"

#define MIB (1u << 20)
#define SIZE (4 * MIB)
#define ITERS 4
#define LINK_PAYLOAD_GBPS (200.0 * 2048 / (2048 + 64))
#define READ_STREAM_GBPS (11720.0 * 8 / 500)

static double one_way_gbps(const char *scenario, double *us_out)
{
	struct tsim s = tsim_new(scenario, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	uint8_t *src = malloc(SIZE), *dst = malloc(SIZE);
	cr_assert(src && dst);
	simtime_t total = 0;
	for (int i = 0; i < ITERS; i++) {
		for (uint32_t k = 0; k < SIZE; k++)
			src[k] = (uint8_t)(k * 7 + (uint32_t)i);
		memset(dst, 0, SIZE);
		struct tep *tx = i % 2 ? &b : &a, *rx = i % 2 ? &a : &b;
		size_t before = rx->n;
		cr_assert_eq(sw_recv(rx->ep, (uint64_t)(uintptr_t)dst, SIZE, NULL, 0, 0, FI_MSG, NULL), 0);
		sim_run(s.sim);
		simtime_t t0 = sim_now(s.sim);
		cr_assert_eq(sw_send(tx->ep, (uint64_t)(uintptr_t)src, SIZE, NULL, sw_ep_addr(rx->ep), 0, 0, FI_MSG, NULL),
			     0);
		sim_run(s.sim);
		cr_assert_null(sw_ep_fatal(rx->ep));
		cr_assert_eq(rx->n, before + 1);
		const struct tcomp *c = &rx->comps[before];
		cr_assert((c->c.flags & FI_RECV) && c->c.err == 0 && c->c.len == SIZE);
		cr_assert_eq(memcmp(src, dst, SIZE), 0, "iteration %d: bytes differ", i);
		total += c->t - t0;
	}
	cr_assert_gt(tctr(&s, "nic.1.C_CNTR_LPE_RNDZV_PUTS_OFFLOADED_%u", sw_ep_rx_ptn(b.ep) % 4), 0,
		     "the message went by hardware rendezvous");
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
	free(src);
	free(dst);
	double us = (double)total / ITERS / 1e6;
	*us_out = us;
	cr_log_info("4 MiB one way: %.3f us, %.2f Gb/s", us, (double)SIZE * 8 / (us * 1e3));
	return (double)SIZE * 8 / (us * 1e3);
}

Test(nic_bandwidth, four_mib_reaches_the_link_rate_times_payload_efficiency_direct)
{
	double us, gbps = one_way_gbps("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2}, \"nic\": {}}", &us);
	cr_assert(gbps >= 0.95 * LINK_PAYLOAD_GBPS && gbps <= READ_STREAM_GBPS,
		  "4 MiB one way %.2f us = %.2f Gb/s (link x payload %.1f, read stream %.1f)", us, gbps,
		  LINK_PAYLOAD_GBPS, READ_STREAM_GBPS);
	/* Only fixed latencies (doorbell, eager part, the Get's trip, PCIe) on top of the read stream. */
	cr_assert(gbps >= 0.98 * READ_STREAM_GBPS, "%.2f Gb/s: more than fixed latencies above the read stream", gbps);
}

/* The same two NICs under one Rosetta switch of the dragonfly (packets, per-hop latencies). */
Test(nic_bandwidth, four_mib_reaches_the_link_rate_times_payload_efficiency_dragonfly)
{
	double us, gbps = one_way_gbps("{\"fabric\": {\"topology\": \"dragonfly\", \"groups\": 1, "
				       "\"switches_per_group\": 1, \"endpoints_per_switch\": 2}, \"nic\": {}}",
				       &us);
	cr_assert(gbps >= 0.95 * LINK_PAYLOAD_GBPS && gbps <= READ_STREAM_GBPS,
		  "4 MiB one way %.2f us = %.2f Gb/s (link x payload %.1f, read stream %.1f)", us, gbps,
		  LINK_PAYLOAD_GBPS, READ_STREAM_GBPS);
}
