/* FI_CXI_* environment variables, read through libfabric's parameter API (so `fi_info -e` lists them) with
 * the upstream provider's names and defaults.  The ones that change the NIC model's behaviour travel to
 * the daemon with each endpoint (match mode, thresholds, buffer sizes, RNR timeout...); MR and CQ ones are
 * used by the provider itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cxip.h"

struct cxip_environment cxip_env = {
	.rx_match_mode = CXIP_MATCH_HARDWARE,
	.rdzv_threshold = 16384,
	.rdzv_get_min = 2049,
	.rdzv_eager_size = 2048,
	.oflow_buf_size = 12 * 1024 * 1024,
	.oflow_buf_min_posted = 3,
	.req_buf_size = 12 * 1024 * 1024,
	.req_buf_min_posted = 6,
	.req_buf_max_cached = 0,
	.optimized_mrs = 1,
	.mr_match_events = 0,
	.prov_key_cache = 1,
	.rnr_max_timeout_us = 500000,
	.default_vni = 10,
	.default_cq_size = 131072,
	.default_tx_size = CXIP_DEFAULT_TX_SIZE,
	.default_rx_size = CXIP_DEFAULT_RX_SIZE,
	.cq_fill_percent = 50,
	.sw_rx_tx_init_max = 1024,
	.fc_retry_usec_delay = 1000,
	.msg_offload = 1,
	.trunc_ok = 0,
};

static const char *const match_mode_names[] = { "hardware", "software", "hybrid" };

const char *cxip_match_mode_str(int mode)
{
	return mode >= 0 && mode < 3 ? match_mode_names[mode] : "unknown";
}

int cxip_match_mode_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (!strcasecmp(s, match_mode_names[i]))
			return i;
	return -1;
}

static void env_size(const char *name, const char *help, size_t *v)
{
	fi_param_define(&cxip_prov, name, FI_PARAM_SIZE_T, "%s (default: %zu).", help, *v);
	fi_param_get_size_t(&cxip_prov, name, v);
}

static void env_int(const char *name, const char *help, int *v)
{
	fi_param_define(&cxip_prov, name, FI_PARAM_INT, "%s (default: %d).", help, *v);
	fi_param_get_int(&cxip_prov, name, v);
}

static void env_bool(const char *name, const char *help, int *v)
{
	fi_param_define(&cxip_prov, name, FI_PARAM_BOOL, "%s (default: %d).", help, *v);
	fi_param_get_bool(&cxip_prov, name, v);
}

static void env_match_mode(void)
{
	char *s = NULL;
	fi_param_define(&cxip_prov, "rx_match_mode", FI_PARAM_STRING,
			"Sets RX message match mode (hardware | software | hybrid).");
	fi_param_get_str(&cxip_prov, "rx_match_mode", &s);
	if (!s)
		return;
	int m = cxip_match_mode_parse(s);
	if (m < 0)
		CXIP_WARN(FI_LOG_FABRIC, "Unrecognized rx_match_mode: %s\n", s);
	else
		cxip_env.rx_match_mode = m;
}

static void env_rendezvous(void)
{
	env_size("rdzv_threshold", "Message size threshold for rendezvous protocol", &cxip_env.rdzv_threshold);
	/* Inject sends are always eager, so the threshold never drops below the inject size. */
	if (cxip_env.rdzv_threshold < CXIP_INJECT_SIZE)
		cxip_env.rdzv_threshold = CXIP_INJECT_SIZE;
	env_size("rdzv_get_min", "Minimum rendezvous Get payload size", &cxip_env.rdzv_get_min);
	env_size("rdzv_eager_size", "Eager data size for rendezvous protocol", &cxip_env.rdzv_eager_size);
	if (cxip_env.rdzv_eager_size > cxip_env.rdzv_threshold)
		cxip_env.rdzv_eager_size = cxip_env.rdzv_threshold;
}

static void env_buffers(void)
{
	env_size("oflow_buf_size", "Overflow buffer size", &cxip_env.oflow_buf_size);
	env_size("oflow_buf_min_posted", "Overflow buffer minimum posted", &cxip_env.oflow_buf_min_posted);
	env_size("req_buf_size", "Request buffer size", &cxip_env.req_buf_size);
	env_size("req_buf_min_posted", "Request buffer minimum posted", &cxip_env.req_buf_min_posted);
	if (cxip_env.req_buf_min_posted < 2)
		cxip_env.req_buf_min_posted = 2;
	env_size("req_buf_max_cached", "Request buffer maximum cached (0: 8x min posted)",
		 &cxip_env.req_buf_max_cached);
	env_size("sw_rx_tx_init_max", "Max TX software initiated operations for software receives",
		 &cxip_env.sw_rx_tx_init_max);
}

static void env_hybrid(void)
{
	env_bool("hybrid_preemptive", "Hybrid mode: go software when LE pool use exceeds half the pool",
		 &cxip_env.hybrid_preemptive);
	env_bool("hybrid_recv_preemptive", "Hybrid mode: the same check on every 64th receive append",
		 &cxip_env.hybrid_recv_preemptive);
	env_bool("hybrid_posted_recv_preemptive", "Hybrid mode: go software when posted receives exceed rx size",
		 &cxip_env.hybrid_posted_recv_preemptive);
	env_bool("hybrid_unexpected_msg_preemptive",
		 "Hybrid mode: go software when hardware unexpected entries exceed rx size",
		 &cxip_env.hybrid_unexpected_msg_preemptive);
}

static void env_mr(void)
{
	env_bool("optimized_mrs", "Enables optimized memory regions", &cxip_env.optimized_mrs);
	env_bool("mr_match_events", "Enable MR match counting", &cxip_env.mr_match_events);
	env_bool("prov_key_cache", "Enable provider key MR caching", &cxip_env.prov_key_cache);
}

size_t cxip_addrlen = sizeof(struct cxip_addr);
bool cxip_domain_mrs;

void cxip_env_init(void)
{
	const char *ab = getenv("CXISIM_CXI_ADDR_BYTES");
	if (ab && atoi(ab) == 4)
		cxip_addrlen = 4;
	const char *dm = getenv("CXISIM_DOMAIN_MRS");
	cxip_domain_mrs = dm && atoi(dm) == 1;
	env_match_mode();
	env_rendezvous();
	env_buffers();
	env_hybrid();
	env_mr();
	env_int("rnr_max_timeout_us", "Maximum RNR time micro-seconds", &cxip_env.rnr_max_timeout_us);
	if (cxip_env.rnr_max_timeout_us < 0)
		cxip_env.rnr_max_timeout_us = 500000;
	env_int("default_vni", "Default VNI value used only for service IDs where the VNI is not restricted",
		&cxip_env.default_vni);
	if (cxip_env.default_vni < 0 || cxip_env.default_vni > 0xffff)
		cxip_env.default_vni = 10;
	env_size("default_cq_size", "Default provider CQ size", &cxip_env.default_cq_size);
	if (!cxip_env.default_cq_size)
		cxip_env.default_cq_size = 131072;
	env_size("default_tx_size", "Default provider TX size", &cxip_env.default_tx_size);
	if (cxip_env.default_tx_size < 16 || cxip_env.default_tx_size > CXIP_MAX_TX_SIZE) {
		/* as upstream: a size it cannot use falls back to the default (0 made tx_attr.size 0) */
		cxip_env.default_tx_size = CXIP_DEFAULT_TX_SIZE;
		CXIP_WARN(FI_LOG_FABRIC, "Default TX size invalid. Setting to %zu\n", cxip_env.default_tx_size);
	}
	env_size("default_rx_size", "Default provider RX size", &cxip_env.default_rx_size);
	if (cxip_env.default_rx_size < 16 || cxip_env.default_rx_size > CXIP_MAX_RX_SIZE) {
		cxip_env.default_rx_size = CXIP_DEFAULT_RX_SIZE;
		CXIP_WARN(FI_LOG_FABRIC, "Default RX size invalid. Setting to %zu\n", cxip_env.default_rx_size);
	}
	env_int("cq_fill_percent", "Fill percent of underlying hardware event queue used to determine when "
			"completion queue is saturated", &cxip_env.cq_fill_percent);
	if (cxip_env.cq_fill_percent < 1 || cxip_env.cq_fill_percent > 100)
		cxip_env.cq_fill_percent = 50;
	env_int("fc_retry_usec_delay", "Micro-second delay before retrying failed flow-control messages",
		&cxip_env.fc_retry_usec_delay);
	env_bool("msg_offload", "Enable use of hardware message offload", &cxip_env.msg_offload);
	env_bool("trunc_ok", "Enables transaction truncation", &cxip_env.trunc_ok);
	env_bool("disable_non_inject_msg_idc", "Disables IDC for non-inject messages",
		 &cxip_env.disable_non_inject_msg_idc);
	env_bool("enable_writedata", "Enable dual MR entries for FI_WRITEDATA support (needs FI_MR_PROV_KEY)",
		 &cxip_env.enable_writedata);
	env_bool("enable_trig_op_limit", "Refuse deferred work (-FI_ENOSPC) past the service's TLEs less 8 "
		 "instead of letting the trigger queue stall", &cxip_env.enable_trig_op_limit);
	env_bool("odp", "Enables on-demand paging", &cxip_env.odp);
	env_bool("force_odp", "Force use of on-demand paging", &cxip_env.force_odp);
	if (cxip_env.force_odp)
		cxip_env.odp = 1;
	fi_param_define(&cxip_prov, "device_name", FI_PARAM_STRING,
			"Restrict CXI provider to specific CXI devices (comma separated list, e.g. cxi0,cxi1).");
	fi_param_get_str(&cxip_prov, "device_name", &cxip_env.device_name);
}
