/* The provider's FI_CXI_* environment: defaults (cassini-reference) and parsing. */
#include <criterion/criterion.h>

#include "../../sim/nic/sw.h"

static const char *fake_env(void *ctx, const char *name)
{
	const char *const *kv = ctx;
	for (; kv[0]; kv += 2)
		if (!strcmp(kv[0], name))
			return kv[1];
	return NULL;
}

Test(nic_env, defaults_follow_the_reference)
{
	struct sw_env e;
	sw_env_defaults(&e);
	cr_assert_eq(e.rx_match_mode, SW_MATCH_HARDWARE);
	cr_assert_eq(e.oflow_buf_size, 12ULL << 20);
	cr_assert_eq(e.oflow_buf_min_posted, 3);
	cr_assert_eq(e.req_buf_size, 12ULL << 20);
	cr_assert_eq(e.req_buf_min_posted, 6);
	cr_assert_eq(e.req_buf_max_count, 0, "0: 8 x FI_CXI_REQ_BUF_MIN_POSTED, resolved per endpoint");
	cr_assert_eq(e.rdzv_threshold, 16384);
	cr_assert_eq(e.rdzv_get_min, 2049);
	cr_assert_eq(e.rdzv_eager_size, 2048);
	cr_assert_eq(e.sw_rx_tx_init_max, 1024);
	cr_assert_eq(e.rnr_max_timeout_us, 500000);
	cr_assert_eq(e.fc_retry_usec_delay, 1000);
	cr_assert_eq(e.cq_fill_percent, 50);
	cr_assert_eq(e.default_cq_size, 131072);
	cr_assert_eq(e.default_vni, 10);
	cr_assert(e.optimized_mrs && e.prov_key_cache && !e.mr_match_events && !e.trunc_ok);
	cr_assert(!e.hybrid_preemptive && !e.hybrid_recv_preemptive);
}

Test(nic_env, parse_overrides_and_rejects)
{
	struct sw_env e;
	sw_env_defaults(&e);
	const char *ok[] = { "FI_CXI_RX_MATCH_MODE", "hybrid", "FI_CXI_RDZV_THRESHOLD", "8192",
			     "FI_CXI_HYBRID_PREEMPTIVE", "1", "FI_CXI_REQ_BUF_MIN_POSTED", "2", NULL, NULL };
	const char *bad = NULL;
	cr_assert_eq(sw_env_parse(&e, fake_env, ok, &bad), 0);
	cr_assert_eq(e.rx_match_mode, SW_MATCH_HYBRID);
	cr_assert_eq(e.rdzv_threshold, 8192);
	cr_assert(e.hybrid_preemptive);
	cr_assert_eq(e.req_buf_min_posted, 2);
	const char *nope[] = { "FI_CXI_RX_MATCH_MODE", "hardwear", NULL, NULL };
	cr_assert_eq(sw_env_parse(&e, fake_env, nope, &bad), -FI_EINVAL);
	cr_assert_str_eq(bad, "RX_MATCH_MODE");
	const char *range[] = { "FI_CXI_CQ_FILL_PERCENT", "0", NULL, NULL };
	cr_assert_eq(sw_env_parse(&e, fake_env, range, &bad), -FI_EINVAL);
	cr_assert_str_eq(bad, "CQ_FILL_PERCENT");
	const char *junk[] = { "FI_CXI_RDZV_THRESHOLD", "12k", NULL, NULL };
	cr_assert_eq(sw_env_parse(&e, fake_env, junk, &bad), -FI_EINVAL);
}

/* Values upstream's cxip_env_init corrects rather than uses: a request buffer smaller than one eager message
 * and its header (software or hybrid matching), a rendezvous threshold above the overflow buffer, a get
 * minimum that no longer fits beside it, a cache below the posted count, too few software-initiated TX. */
Test(nic_env, values_upstream_cannot_use_are_corrected)
{
	struct sw_env e;
	sw_env_defaults(&e);
	const char *small_req[] = { "FI_CXI_RX_MATCH_MODE", "software", "FI_CXI_REQ_BUF_SIZE", "4096",
				    "FI_CXI_REQ_BUF_MIN_POSTED", "4", "FI_CXI_REQ_BUF_MAX_COUNT", "3",
				    "FI_CXI_SW_RX_TX_INIT_MAX", "8", NULL };
	cr_assert_eq(sw_env_parse(&e, fake_env, small_req, NULL), 0);
	cr_assert_eq(e.req_buf_size, 63 + 16384 + 2049, "header (20 + 43 B) + threshold + get minimum");
	cr_assert_eq(e.req_buf_max_count, 4, "not below the posted count");
	cr_assert_eq(e.sw_rx_tx_init_max, 64);
	sw_env_defaults(&e);
	const char *hw[] = { "FI_CXI_REQ_BUF_SIZE", "4096", NULL };
	cr_assert_eq(sw_env_parse(&e, fake_env, hw, NULL), 0);
	cr_assert_eq(e.req_buf_size, 4096, "hardware matching lands nothing in request buffers: kept");
	sw_env_defaults(&e);
	const char *rdzv[] = { "FI_CXI_OFLOW_BUF_SIZE", "8192", "FI_CXI_RDZV_THRESHOLD", "65536", NULL };
	cr_assert_eq(sw_env_parse(&e, fake_env, rdzv, NULL), 0);
	cr_assert_eq(e.rdzv_threshold, 8192, "above the overflow buffer: the default, at most the buffer");
	cr_assert_eq(e.rdzv_get_min, 0, "no room left beside the threshold");
	cr_assert_eq(e.rdzv_eager_size, 2048);
	sw_env_defaults(&e);
	const char *rdzv2[] = { "FI_CXI_OFLOW_BUF_SIZE", "17000", "FI_CXI_RDZV_THRESHOLD", "65536", NULL };
	cr_assert_eq(sw_env_parse(&e, fake_env, rdzv2, NULL), 0);
	cr_assert_eq(e.rdzv_threshold, 16384, "back to the default (upstream)");
	cr_assert_eq(e.rdzv_get_min, 0, "2049 does not fit in the 616 bytes left");
	/* The daemon sets the values one by one from a process's request, then corrects them the same way. */
	sw_env_defaults(&e);
	e.rx_match_mode = SW_MATCH_HYBRID;
	e.req_buf_size = 1;
	sw_env_correct(&e);
	cr_assert_eq(e.req_buf_size, 63 + 16384 + 2049);
}
