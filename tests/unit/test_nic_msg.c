/* Messaging through the provider software layer: eager, IDC, rendezvous, unexpected paths, match modes. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

static struct sw_addr addr_of(struct tep *t)
{
	return sw_ep_addr(t->ep);
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + seed);
}

Test(nic_msg, tagged_eager_expected)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t src[1000], dst[1024];
	fill(src, sizeof(src), 3);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst, sizeof(dst), NULL, 0x1234, 0, FI_TAGGED, (void *)1), 0);
	sim_run(s.sim);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, sizeof(src), NULL, addr_of(&b), 0x1234, 99,
			     FI_TAGGED | FI_REMOTE_CQ_DATA, (void *)2),
		     0);
	sim_run(s.sim);
	cr_assert_eq(b.n, 1);
	cr_assert_eq(b.comps[0].c.err, 0);
	cr_assert_eq(b.comps[0].c.len, 1000);
	cr_assert_eq(b.comps[0].c.tag, 0x1234);
	cr_assert_eq(b.comps[0].c.data, 99);
	cr_assert(b.comps[0].c.flags & FI_REMOTE_CQ_DATA);
	cr_assert(b.comps[0].c.flags & FI_TAGGED);
	cr_assert_eq(b.comps[0].c.src.nic, 0);
	cr_assert_eq(b.comps[0].c.src.pid, sw_ep_addr(a.ep).pid);
	cr_assert_eq(memcmp(src, dst, sizeof(src)), 0);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(a.comps[0].c.err, 0);
	cr_assert(a.comps[0].c.flags & FI_SEND);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_NET_MATCH_PRIORITY_%u", sw_ep_rx_ptn(b.ep) % 4), 1);
	/* Matched and placed by the NIC: no host work in the provider. */
	struct sw_host_work w;
	sw_ep_take_host_work(b.ep, &w);
	cr_assert(!w.ux_matches && !w.sw_matches && !w.copies && !w.copy_bytes);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_msg, unexpected_eager_via_overflow_then_matched)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t src[4][3000], dst[4][3000];
	for (int i = 0; i < 4; i++) {
		fill(src[i], sizeof(src[i]), (unsigned)i);
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src[i], sizeof(src[i]), NULL, addr_of(&b), 0, 0, FI_MSG,
				     NULL),
			     0);
	}
	sim_run(s.sim);
	cr_assert_eq(b.n, 0);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_NET_MATCH_OVERFLOW_%u", sw_ep_rx_ptn(b.ep) % 4), 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst[i], sizeof(dst[i]), NULL, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(b.n, 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(b.comps[i].c.err, 0);
		cr_assert_eq(memcmp(src[i], dst[i], sizeof(src[i])), 0, "message %d", i);
	}
	/* Each receive completed from an unexpected header costs the provider a copy out of the overflow
	 * buffer; the account is emptied by the take. */
	struct sw_host_work w;
	sw_ep_take_host_work(b.ep, &w);
	cr_assert_eq(w.ux_matches, 4);
	cr_assert_eq(w.sw_matches, 0);
	cr_assert_eq(w.copies, 4);
	cr_assert_eq(w.copy_bytes, 4 * sizeof(src[0]));
	sw_ep_take_host_work(b.ep, &w);
	cr_assert(!w.ux_matches && !w.copies);
	cr_assert_eq(tsw_records(s.sim), 0);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

static void small_oflow(struct sw_ep_attr *a)
{
	a->env.oflow_buf_size = 64 * 1024;
	a->env.rdzv_threshold = 4096;
	a->env.rdzv_get_min = 0;
}

Test(nic_msg, overflow_buffers_are_consumed_and_reposted)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, small_oflow), 0);
	cr_assert_eq(tep_open(&b, &s, 1, small_oflow), 0);
	/* 100 unexpected 2000-B messages: 200 KB through 64 KB overflow buffers (3 posted). */
	static uint8_t src[100][2000], dst[100][2000];
	for (int i = 0; i < 100; i++) {
		fill(src[i], 2000, (unsigned)i);
		while (sw_send(a.ep, (uint64_t)(uintptr_t)src[i], 2000, NULL, addr_of(&b), 0, 0, FI_MSG, NULL) == -FI_EAGAIN)
			sim_run(s.sim);
		sim_run(s.sim);
		/* Receive only every other round so overflow space must be recycled. */
		if (i % 2 == 1) {
			for (int k = i - 1; k <= i; k++)
				cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst[k], 2000, NULL, 0, 0, FI_MSG, NULL), 0);
			sim_run(s.sim);
		}
	}
	cr_assert_eq(b.n, 100);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(memcmp(src[i], dst[i], 2000), 0, "message %d", i);
	struct nic_pte_status st;
	nic_pte_status(sw_ep_nic(b.ep), sw_ep_rx_ptn(b.ep), &st);
	cr_assert_eq(st.le_count[C_PTL_LIST_OVERFLOW], 3, "three overflow buffers stay posted");
	cr_assert_eq(st.ule_count, 0);
	cr_assert_eq(sw_ep_rxc_state(b.ep), RXC_ENABLED);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_msg, rendezvous_above_threshold_eager_below)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	size_t big = 16384 + 2049 + 1, small = 16384 + 2049;
	uint8_t *src = malloc(big), *dst = calloc(1, big), *dst2 = calloc(1, big);
	fill(src, big, 5);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst, big, NULL, 0, 0, FI_MSG, NULL), 0);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst2, big, NULL, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, small, NULL, addr_of(&b), 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_RENDEZVOUS_PUT_CMDS"), 0, "at the threshold: eager");
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, big, NULL, addr_of(&b), 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_RENDEZVOUS_PUT_CMDS"), 1, "one byte more: rendezvous");
	cr_assert_eq(b.n, 2);
	cr_assert_eq(b.comps[1].c.err, 0);
	cr_assert_eq(b.comps[1].c.len, big);
	cr_assert_eq(memcmp(src, dst2, big), 0);
	cr_assert_eq(memcmp(src, dst, small), 0);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(sw_ep_stats(b.ep)->hw_rdzv_gets, 1);
	cr_assert_eq(sw_ep_stats(b.ep)->sw_rdzv_gets, 0);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_RNDZV_PUTS_OFFLOADED_%u", sw_ep_rx_ptn(b.ep) % 4), 1);
	free(src);
	free(dst);
	free(dst2);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_msg, unexpected_rendezvous_matched_by_append)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	size_t big = 100000;
	uint8_t *src = malloc(big), *dst = calloc(1, big);
	fill(src, big, 9);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, big, NULL, addr_of(&b), 7, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.n, 0, "the send waits for the target's Get");
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst, big, NULL, 7, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(b.n, 1);
	cr_assert_eq(b.comps[0].c.err, 0);
	cr_assert_eq(b.comps[0].c.len, big);
	cr_assert_eq(memcmp(src, dst, big), 0);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(sw_ep_stats(b.ep)->hw_rdzv_gets, 1);
	cr_assert_eq(tsw_records(s.sim), 0);
	free(src);
	free(dst);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

static void sw_mode(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_SOFTWARE;
	a->env.req_buf_size = 256 * 1024;
}

Test(nic_msg, software_mode_uses_request_buffers_and_software_get)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, sw_mode), 0);
	cr_assert_eq(tep_open(&b, &s, 1, sw_mode), 0);
	cr_assert_eq(sw_ep_rxc_state(b.ep), RXC_ENABLED_SOFTWARE);
	size_t big = 70000;
	uint8_t *src = malloc(big), *dst = calloc(1, big), *d2 = calloc(1, 100), *d3 = calloc(1, 100);
	fill(src, big, 1);
	/* One expected (software-matched on arrival), one unexpected eager, one unexpected rendezvous. */
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)d2, 100, NULL, 1, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 100, NULL, addr_of(&b), 1, 0, FI_TAGGED, NULL), 0);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src + 1, 100, NULL, addr_of(&b), 2, 0, FI_TAGGED, NULL), 0);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, big, NULL, addr_of(&b), 3, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(b.n, 1);
	cr_assert_eq(memcmp(d2, src, 100), 0);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst, big, NULL, 3, 0, FI_TAGGED, NULL), 0);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)d3, 100, NULL, 2, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(b.n, 3);
	cr_assert_eq(memcmp(d3, src + 1, 100), 0);
	cr_assert_eq(memcmp(dst, src, big), 0);
	cr_assert_eq(sw_ep_stats(b.ep)->sw_rdzv_gets, 1, "rendezvous after software matching uses a software Get");
	cr_assert_eq(sw_ep_stats(b.ep)->hw_rdzv_gets, 0);
	struct nic_pte_status st;
	nic_pte_status(sw_ep_nic(b.ep), sw_ep_rx_ptn(b.ep), &st);
	cr_assert_eq(st.state, C_PTLTE_SOFTWARE_MANAGED);
	cr_assert_eq(st.le_count[C_PTL_LIST_REQUEST], 6, "FI_CXI_REQ_BUF_MIN_POSTED request buffers");
	cr_assert_eq(st.le_count[C_PTL_LIST_PRIORITY], 0);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_NET_MATCH_REQUEST_%u", sw_ep_rx_ptn(b.ep) % 4), 3);
	/* All three were matched by the provider and their eager bytes copied out of request buffers. */
	struct sw_host_work w;
	sw_ep_take_host_work(b.ep, &w);
	cr_assert_eq(w.sw_matches, 3);
	cr_assert_eq(w.ux_matches, 0);
	cr_assert_eq(w.copies, 3);
	cr_assert_geq(w.copy_bytes, 200);
	cr_assert_lt(w.copy_bytes, big);
	cr_assert_eq(tsw_records(s.sim), 0);
	free(src);
	free(dst);
	free(d2);
	free(d3);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

/* One-way time of a message of `len` bytes (receive posted first, as fi_pingpong does), in ps. */
static simtime_t one_way_ps(size_t len)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	uint8_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dst[8] = {0};
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst, sizeof(dst), NULL, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	simtime_t t0 = sim_now(s.sim);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, len, NULL, addr_of(&b), 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(b.n, 1);
	cr_assert((b.comps[0].c.flags & FI_RECV) && b.comps[0].c.err == 0 && b.comps[0].c.len == len);
	cr_assert_eq(memcmp(src, dst, len), 0);
	simtime_t t = b.comps[0].t - t0;
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
	return t;
}

/* Upstream sends a zero-byte message as an eager DMA put (a smaller command than an IDC), not as an IDC;
 * with no payload the NIC reads nothing from the host, so it arrives no later than a one-byte IDC message
 * (it used to pay a PCIe read round trip, pcie_latency_ns: fi_pingpong -S 0 printed 1.05 us, -S 1 0.81). */
Test(nic_msg, zero_byte_message_reads_nothing_from_the_host)
{
	simtime_t zero = one_way_ps(0), one = one_way_ps(1);
	cr_log_info("one way: 0 B %.3f ns, 1 B %.3f ns", zero / 1e3, one / 1e3);
	cr_assert_leq(zero, one, "0 B %llu ps, 1 B %llu ps", (unsigned long long)zero, (unsigned long long)one);
	cr_assert_geq(zero + 50000, one, "0 B %llu ps, 1 B %llu ps", (unsigned long long)zero, (unsigned long long)one);
}
