/* RPC workload building blocks: the wire header, the response tag, the serial host core, placement. */
#include <criterion/criterion.h>

#include "../../sim/workload/rpc.h"

Test(rpc_header, round_trips_every_field_at_its_limits)
{
	uint32_t clients[] = { 0, 1, 53247, RPC_MAX_CLIENTS - 1 };
	uint32_t slots[] = { 0, 7, RPC_MAX_INFLIGHT - 1 };
	uint32_t gens[] = { 0, 1, 0x7fffffffu, 0xffffffffu };
	for (size_t a = 0; a < sizeof(clients) / sizeof(*clients); a++)
		for (size_t b = 0; b < sizeof(slots) / sizeof(*slots); b++)
			for (size_t c = 0; c < sizeof(gens) / sizeof(*gens); c++) {
				uint64_t h = rpc_hdr(clients[a], slots[b], gens[c]);
				cr_assert_eq(rpc_hdr_client(h), clients[a]);
				cr_assert_eq(rpc_hdr_slot(h), slots[b]);
				cr_assert_eq(rpc_hdr_gen(h), gens[c]);
			}
}

Test(rpc_header, response_tag_fits_the_rnr_tag_width_and_names_the_attempt)
{
	uint64_t h = rpc_hdr(RPC_MAX_CLIENTS - 1, RPC_MAX_INFLIGHT - 1, 0xffffffffu);
	cr_assert_lt(rpc_resp_tag(h), 1ULL << 40, "FI_PROTO_CXI_RNR carries 40-bit tags");
	/* Two attempts of one slot, or the same slot of two clients that share nothing else, differ. */
	cr_assert_neq(rpc_resp_tag(rpc_hdr(5, 3, 9)), rpc_resp_tag(rpc_hdr(5, 3, 10)));
	cr_assert_neq(rpc_resp_tag(rpc_hdr(5, 3, 9)), rpc_resp_tag(rpc_hdr(5, 4, 9)));
}

Test(host_core, work_runs_one_item_after_another)
{
	struct host_core c = { 0 };
	cr_assert_eq(host_core_charge(&c, SIM_NS(100), SIM_NS(50)), SIM_NS(150));
	/* Arrives while busy: starts when the core frees. */
	cr_assert_eq(host_core_charge(&c, SIM_NS(120), SIM_NS(10)), SIM_NS(160));
	/* Arrives after an idle gap: starts at once. */
	cr_assert_eq(host_core_charge(&c, SIM_NS(1000), SIM_NS(1)), SIM_NS(1001));
	cr_assert_eq(c.busy_ps, SIM_NS(61));
}

Test(placement, aurora_node_nics)
{
	/* Client node 3 of a group starting at NIC 0: NICs 24..31; server node 1 with 2 NICs at 4096 + 2. */
	cr_assert_eq(rpc_node_nic(0, 8, 3, 0), 24);
	cr_assert_eq(rpc_node_nic(0, 8, 3, 7), 31);
	cr_assert_eq(rpc_node_nic(4096, 2, 1, 1), 4099);
	cr_assert_eq(ns_to_ps(0.5), 500);
}
