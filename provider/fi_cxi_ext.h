/* Provider-specific API of cxisim's "cxi" provider, with the numeric values of the upstream cxi provider
 * (prov/cxi/include/fi_cxi_ext.h), so applications built for a real Slingshot system (Mercury carries
 * fallback copies of these numbers) drive the emulated provider the same way.
 *
 * The system libfabric (1.17) predates fi_av_insert_auth_key() and max_ep_auth_key.  Multiple auth keys
 * per endpoint are exposed through an extension opened with fi_open_ops() on the AV
 * (FI_CXI_AV_AUTH_KEY_OPS), with the semantics of the libfabric 1.20 calls.
 */
#ifndef CXISIM_FI_CXI_EXT_H
#define CXISIM_FI_CXI_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <time.h>

/* Address format and protocols (FI_PROTO_CXI is in the 1.17 enum; the RNR protocol came later). */
#ifndef FI_PROTO_CXI_RNR
#define FI_PROTO_CXI_RNR 29
#endif

/* fi_control / fi_set_val / fi_get_val option names. */
#define FI_PROV_SPECIFIC_CXI (0xccc << 16)
enum {
	FI_OPT_CXI_SET_TCLASS = -FI_PROV_SPECIFIC_CXI, /* uint32_t */
	FI_OPT_CXI_SET_MSG_ORDER,                      /* uint64_t */
	FI_OPT_CXI_NIC_REFRESH_ATTR,
	FI_OPT_CXI_SET_MR_MATCH_EVENTS,       /* bool */
	FI_OPT_CXI_GET_MR_MATCH_EVENTS,       /* bool */
	FI_OPT_CXI_SET_OPTIMIZED_MRS,         /* bool */
	FI_OPT_CXI_GET_OPTIMIZED_MRS,         /* bool */
	FI_OPT_CXI_SET_PROV_KEY_CACHE,        /* bool */
	FI_OPT_CXI_GET_PROV_KEY_CACHE,        /* bool */
	FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME,    /* uint64_t, microseconds */
	FI_OPT_CXI_SET_RX_MATCH_MODE_OVERRIDE, /* char string */
	FI_OPT_CXI_GET_RX_MATCH_MODE_OVERRIDE, /* char string */
	FI_OPT_CXI_SET_REQ_BUF_SIZE_OVERRIDE, /* size_t */
	FI_OPT_CXI_GET_REQ_BUF_SIZE_OVERRIDE, /* size_t */
	FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS, /* uint64_t */
};

/* Authorization key: the CXI service and the VNI an endpoint uses. */
struct cxi_auth_key {
	uint32_t svc_id;
	uint16_t vni;
};

/* Completion flag: the message was truncated (FI_CXI_TRUNC_OK). */
#define FI_CXI_TRUNC (1ULL << 56)

/* NIC attributes returned in fi_info->nic->prov_attr. */
#define FI_CXI_NIC_ATTR_VER 1U
struct cxip_nic_attr {
	uint32_t version;
	const unsigned int addr;
	const unsigned int default_rgroup_id;
	const unsigned int default_vni;
};

/* domain_attr->auth_key_size value that asks for auth keys managed by the AV (libfabric 1.20's
 * FI_AV_AUTH_KEY); it must come with this extension. */
#ifndef FI_AV_AUTH_KEY
#define FI_AV_AUTH_KEY SIZE_MAX
#endif

#define FI_CXI_AV_AUTH_KEY_OPS "cxisim_av_auth_key_v1"

/* Counter attributes (upstream values): count bytes instead of completions (libfabric's later
 * FI_CNTR_EVENTS_BYTES), and a counter flag asking reads for the last written-back value. */
#define FI_CXI_CNTR_EVENTS_BYTES 1
#define FI_CXI_CNTR_CACHED (1ULL << 32)

/* Operations on an AV opened in a domain whose auth_key_size is FI_AV_AUTH_KEY.
 * - insert_auth_key: like fi_av_insert_auth_key(): add an auth key and get an fi_addr naming it.  Must
 *   happen before any endpoint bound to the AV is enabled; -FI_ENOSPC past max_ep_auth_key keys,
 *   -FI_EINVAL for a malformed key or one outside the service's VNIs.
 * - lookup_auth_key: like fi_av_lookup_auth_key().
 * - insert_addr: like fi_av_insert() with FI_AUTH_KEY: peers reached with the VNI of auth_key_addr.
 * - max_ep_auth_key: the domain's limit (libfabric 1.20's domain_attr->max_ep_auth_key).
 * The same ops are available on every AV for set_user_id. */
struct fi_cxi_av_auth_key_ops {
	int (*insert_auth_key)(struct fid_av *av, const void *auth_key, size_t auth_key_size, fi_addr_t *fi_addr,
			       uint64_t flags);
	int (*lookup_auth_key)(struct fid_av *av, fi_addr_t addr, void *auth_key, size_t *auth_key_size);
	int (*insert_addr)(struct fid_av *av, const void *addr, size_t count, fi_addr_t auth_key_addr,
			   fi_addr_t *fi_addr, uint64_t flags, void *context);
	size_t (*max_ep_auth_key)(struct fid_av *av);
	/* like fi_av_set_user_id(): for AVs opened with the FI_AV_USER_ID flag */
	int (*set_user_id)(struct fid_av *av, fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags);
};

/* err_data of an FI_EADDRNOTAVAIL completion (FI_SOURCE_ERR): the unknown source's address, and (on an
 * endpoint with several auth keys) the fi_addr of the auth key its VNI belongs to, which libfabric 1.20
 * reports in fi_cq_err_entry.src_addr, a field the 1.17 ABI lacks. */
struct fi_cxi_src_err {
	uint8_t addr[8];        /* the 8-byte cxi address: pid:9, nic:20, pad:3, vni:16 */
	fi_addr_t auth_key_addr; /* FI_ADDR_NOTAVAIL on single-key endpoints */
};

/* Domain ops (FI_CXI_DOM_OPS_*): the subset cxisim implements. */
#define FI_CXI_DOM_OPS_1 "dom_ops_v1"
#define FI_CXI_DOM_OPS_2 "dom_ops_v2"
#define FI_CXI_DOM_OPS_3 "dom_ops_v3"
#define FI_CXI_DOM_OPS_4 "dom_ops_v4"
#define FI_CXI_DOM_OPS_5 "dom_ops_v5"
#define FI_CXI_DOM_OPS_6 "dom_ops_v6"

struct fi_cxi_dom_ops {
	int (*cntr_read)(struct fid *fid, unsigned int cntr, uint64_t *value, struct timespec *ts);
	int (*topology)(struct fid *fid, unsigned int *group_id, unsigned int *switch_id, unsigned int *port_id);
	int (*enable_hybrid_mr_desc)(struct fid *fid, bool enable);
	size_t (*ep_get_unexp_msgs)(struct fid_ep *fid_ep, struct fi_cq_tagged_entry *entry, size_t count,
				    fi_addr_t *src_addr, size_t *ux_count);
	int (*get_dwq_depth)(struct fid *fid, size_t *depth);
	int (*enable_mr_match_events)(struct fid *fid, bool enable);
	int (*enable_optimized_mrs)(struct fid *fid, bool enable);
};

/* Statistics of an endpoint (cxisim extension, FI_CXI_EP_STATS_OPS on the endpoint): software counters of
 * the RNR protocol and MR hazards, as the upstream provider keeps them. */
#define FI_CXI_EP_STATS_OPS "cxisim_ep_stats_v1"
struct fi_cxi_ep_stats {
	uint64_t total_rnr_nacks;
	uint64_t total_retries;
	uint64_t mr_hazards; /* remote accesses that hit a closed but cached MR */
};
struct fi_cxi_ep_stats_ops {
	int (*get)(struct fid_ep *ep, struct fi_cxi_ep_stats *stats);
};

#endif
