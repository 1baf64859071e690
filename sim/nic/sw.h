/* The cxi provider's software layer, on top of the NIC command interface (nic.h).
 *
 * On a real system these state machines run inside libfabric's cxi provider (prov/cxi), not in the ASIC:
 * RX context states and flow-control recovery (onload, drop counting, FC_NOTIFY / FC_RESUME, in-order
 * replay), software and hybrid matching over request buffers, overflow-buffer management, eager /
 * rendezvous protocol selection, the RNR retry loop, MR key management and caches.  cxisim keeps them in one
 * reusable layer (files sw_*.c) so that simulated processes and the emulation daemon (which runs them on
 * behalf of real applications) behave identically.  Everything here reaches the NIC only through nic.h.
 *
 * Conventions follow libfabric: flags are FI_* values, errors are negative FI_E* return values or positive
 * FI_E* in completion entries, prov_errno holds the Cassini return code (C_RC_*).  Buffers are addresses in
 * the endpoint's memory (see struct nic_mem_ops).
 *
 * Timing: calls return at once; the work they start takes modelled host time (sw.* parameters, e.g. a
 * kernel call for an MR) and NIC time (nic.* parameters).  Completions are delivered through the
 * endpoint's callback at the simulated time they become visible to the application.
 */
#ifndef CXISIM_NIC_SW_H
#define CXISIM_NIC_SW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "mr_key.h"
#include "nic.h"

struct cfg;

/* Portal indexes inside a pid (cassini-reference: Addressing). */
#define SW_PTL_IDX_RXQ 0
#define SW_PTL_IDX_RNR_RXQ 1
#define SW_PTL_IDX_WRITE_MR_OPT_BASE 17  /* 17..116 */
#define SW_PTL_IDX_WRITE_MR_STD 117      /* standard write MRs and control messages (FC_NOTIFY/RESUME) */
#define SW_PTL_IDX_CTRL SW_PTL_IDX_WRITE_MR_STD
#define SW_PTL_IDX_RDZV_DEST 127
#define SW_PTL_IDX_READ_MR_OPT_BASE 128  /* 128..227 */
#define SW_PTL_IDX_READ_MR_STD 228
#define SW_PTL_IDX_RDZV_SRC NIC_RDZV_SRC_INDEX /* 255 */

/* prov_errno of an RNR send that ran out of retry time (FI_EIO): C_RC_ENTRY_NOT_FOUND. */
#define SW_RNR_TIMEOUT_PROV_ERRNO 18

enum sw_match_mode { SW_MATCH_HARDWARE, SW_MATCH_SOFTWARE, SW_MATCH_HYBRID };
enum sw_proto { SW_PROTO_CXI, SW_PROTO_CXI_RNR };
enum sw_progress { SW_PROGRESS_AUTO, SW_PROGRESS_MANUAL };

/* RX context states of the upstream provider. */
enum sw_rxc_state {
	RXC_DISABLED = 0,
	RXC_ENABLED,
	RXC_PENDING_PTLTE_SOFTWARE_MANAGED,
	RXC_ENABLED_SOFTWARE,
	RXC_PENDING_PTLTE_DISABLE,
	RXC_ONLOAD_FLOW_CONTROL,
	RXC_ONLOAD_FLOW_CONTROL_REENABLE,
	RXC_FLOW_CONTROL,
};
const char *sw_rxc_state_name(enum sw_rxc_state s);

/* FI_CXI_* environment of the provider (defaults: cassini-reference / upstream fi_cxi(7)). */
struct sw_env {
	enum sw_match_mode rx_match_mode;   /* FI_CXI_RX_MATCH_MODE (hardware) */
	bool hybrid_preemptive;             /* FI_CXI_HYBRID_PREEMPTIVE (0) */
	bool hybrid_recv_preemptive;        /* FI_CXI_HYBRID_RECV_PREEMPTIVE (0) */
	bool hybrid_posted_recv_preemptive; /* FI_CXI_HYBRID_POSTED_RECV_PREEMPTIVE (0) */
	bool hybrid_unexpected_msg_preemptive; /* FI_CXI_HYBRID_UNEXPECTED_MSG_PREEMPTIVE (0) */
	uint64_t oflow_buf_size;            /* FI_CXI_OFLOW_BUF_SIZE (12 MiB) */
	uint32_t oflow_buf_min_posted;      /* FI_CXI_OFLOW_BUF_MIN_POSTED (3) */
	uint64_t req_buf_size;              /* FI_CXI_REQ_BUF_SIZE (12 MiB) */
	uint32_t req_buf_min_posted;        /* FI_CXI_REQ_BUF_MIN_POSTED (6, at least 2) */
	uint32_t req_buf_max_count;         /* FI_CXI_REQ_BUF_MAX_COUNT (0: 8 x min_posted) */
	uint32_t rdzv_threshold;            /* FI_CXI_RDZV_THRESHOLD (16384) */
	uint32_t rdzv_get_min;              /* FI_CXI_RDZV_GET_MIN (2049) */
	uint32_t rdzv_eager_size;           /* FI_CXI_RDZV_EAGER_SIZE (2048) */
	uint32_t sw_rx_tx_init_max;         /* FI_CXI_SW_RX_TX_INIT_MAX (1024) */
	uint64_t rnr_max_timeout_us;        /* FI_CXI_RNR_MAX_TIMEOUT_US (500000; 0: fail on first NACK) */
	uint64_t rnr_append_retry_timeout_us; /* FI_CXI_RNR_APPEND_RETRY_TIMEOUT_US (2000000): then fatal */
	uint64_t fc_retry_usec_delay;       /* FI_CXI_FC_RETRY_USEC_DELAY (1000) */
	uint32_t cq_fill_percent;           /* FI_CXI_CQ_FILL_PERCENT (50) */
	uint32_t default_cq_size;           /* FI_CXI_DEFAULT_CQ_SIZE (131072) */
	uint32_t default_vni;               /* FI_CXI_DEFAULT_VNI (10) */
	bool optimized_mrs;                 /* FI_CXI_OPTIMIZED_MRS (1) */
	bool prov_key_cache;                /* FI_CXI_PROV_KEY_CACHE (1) */
	bool mr_match_events;               /* FI_CXI_MR_MATCH_EVENTS (0) */
	bool trunc_ok;                      /* FI_CXI_TRUNC_OK (0) */
	bool enable_writedata;              /* FI_CXI_ENABLE_WRITEDATA (0): fi_writedata with target completions */
	bool msg_offload;                   /* derived: rx_match_mode != software */
};
void sw_env_defaults(struct sw_env *e);
/* Override from FI_CXI_* variables looked up through getenv_fn (the daemon passes the application's
 * environment).  Returns 0, or -FI_EINVAL naming the bad variable in *bad. */
int sw_env_parse(struct sw_env *e, const char *(*getenv_fn)(void *ctx, const char *name), void *ctx,
		 const char **bad);
/* Override from a scenario section (keys are the variable names without FI_CXI_, lower case, e.g.
 * rx_match_mode: hybrid, rdzv_threshold: 8192). */
void sw_env_from_cfg(struct sw_env *e, const struct cfg *c);
/* Upstream's corrections of values it cannot use (sw_env_parse and sw_env_from_cfg apply them too), for
 * values set one by one (the daemon, from a process's endpoint-open request). */
void sw_env_correct(struct sw_env *e);
/* The scenario-wide defaults: sw_env_defaults() overridden by the "cxi" section, if any. */
void sw_env_scenario(struct sim *sim, struct sw_env *e);
/* The provider's host-side costs of memory mapping, in ps, from the same "cxi" parameters the simulated
 * processes use (kernel_call_ns, map_page_ns, unmap_page_ns, mr_cache_lookup_ns): the daemon hands them to
 * every process it attaches, whose provider charges them in virtual time (provider/iomm.c). */
struct sw_map_costs {
	uint64_t kernel_call_ps, map_page_ps, unmap_page_ps, cache_lookup_ps;
};
void sw_map_costs(struct sim *sim, struct sw_map_costs *out);

/* A peer: NIC address, pid and the VNI to use (cxisim's resolved fi_addr). */
struct sw_addr {
	uint32_t nic;
	uint16_t pid;
	uint16_t vni;
};

struct sw_mr;

/* A completion (fi_cq_tagged_entry + fi_cq_err_entry + FI_SOURCE).
 * Target side of a remote access (mr != NULL): a remote write or read served by one of the endpoint's MRs
 * -- flags FI_RMA | FI_REMOTE_WRITE or FI_REMOTE_READ (+ FI_REMOTE_CQ_DATA and data for fi_writedata),
 * len and buf the bytes and address accessed, src the initiator, err/prov_errno a failed access (e.g.
 * past the MR's end); op_context is the MR's registration context.  Reported for every access to an MR
 * registered with FI_RMA_EVENT or on an endpoint with attr.mr_events, and for every fi_writedata. */
struct sw_comp {
	void *op_context;
	uint64_t flags;      /* FI_SEND, FI_RECV, FI_MSG, FI_TAGGED, FI_RMA, FI_READ, FI_WRITE, FI_MULTI_RECV,
				FI_REMOTE_CQ_DATA, FI_REMOTE_READ, FI_REMOTE_WRITE */
	uint64_t len;
	uint64_t buf;        /* receive: where the data is (multi-recv: inside the posted buffer) */
	uint64_t data;
	uint64_t tag;
	struct sw_addr src;  /* receive: source (FI_SOURCE) */
	bool src_valid;
	int err;             /* 0 or a positive FI_E* (FI_ETRUNC, FI_EIO, FI_ECANCELED, FI_ENOTCONN, ...) */
	int prov_errno;      /* enum c_return_code, or 0 */
	uint64_t olen;       /* FI_ETRUNC: bytes that did not fit */
	struct sw_mr *mr;    /* target side of a remote access: the MR */
};

struct sw_ep;
typedef void (*sw_comp_fn)(void *ctx, struct sw_ep *ep, const struct sw_comp *c);

/* An endpoint's attributes: the FI_CXI_* environment, then its own options (SW_EP_OPTS).  An open endpoint
 * keeps its options (struct sw_ep_opts, the same fields) and shares one read-only copy of each distinct
 * environment with every endpoint opened with it (a million client endpoints, 104 bytes each). */
#define SW_EP_OPTS                                                                                             \
	enum sw_proto proto;                                                                                   \
	enum sw_progress progress;                                                                             \
	uint32_t pid;                /* C_PID_ANY: the lowest free pid */                                      \
	uint32_t svc_id;             /* NIC_SVC_DEFAULT */                                                     \
	uint8_t num_vnis;            /* auth keys; vnis[0] is used to send, the RX side accepts all of them */ \
	uint16_t vnis[NIC_SVC_MAX_VNIS];                                                                       \
	uint64_t caps;               /* FI_MSG | FI_TAGGED | FI_RMA | FI_MULTI_RECV | FI_SOURCE | ... */        \
	uint32_t tx_size;            /* 1024 (max 16384) */                                                    \
	uint32_t rx_size;            /* 1024 (max 15360) */                                                    \
	uint32_t cq_size;            /* 0: env.default_cq_size */                                              \
	uint64_t min_multi_recv;     /* FI_OPT_MIN_MULTI_RECV (64); sw_ep_set_min_multi_recv changes it */     \
	bool mr_events;              /* report every remote access to the endpoint's MRs (FI_RMA_EVENT          \
				      * endpoint with remote counters bound) */                                \
	const struct nic_mem_ops *mem;                                                                         \
	void *mem_ctx;                                                                                         \
	sw_comp_fn comp;             /* TX and RX completions */                                               \
	void *comp_ctx;                                                                                        \
	/* A condition the real provider treats as fatal (RXC_FATAL / CXIP_FATAL, e.g. flow control while in  \
	 * flow control in hardware match mode, or a hardware EQ overflow).  The endpoint stops; the message  \
	 * is the upstream one.  NULL: print it on stderr and stop the simulation (sim_stop). */              \
	void (*on_fatal)(void *ctx, struct sw_ep *ep, const char *msg);                                        \
	void *fatal_ctx;

struct sw_ep_attr {
	struct sw_env env;
	SW_EP_OPTS
};
struct sw_ep_opts {
	SW_EP_OPTS
};
_Static_assert(offsetof(struct sw_ep_attr, proto) == sizeof(struct sw_env) &&
		       sizeof(struct sw_ep_attr) == sizeof(struct sw_env) + sizeof(struct sw_ep_opts),
	       "an endpoint's options are the attributes after the environment, laid out alike");
void sw_ep_attr_defaults(struct sw_ep_attr *a);

/* Open and enable an endpoint on a NIC.  Operations may be posted at once: they queue behind the enable
 * commands.  Returns -FI_ENOSPC when the NIC has no free resource, -FI_EINVAL on bad attributes. */
int sw_ep_open(struct nic *nic, const struct sw_ep_attr *attr, struct sw_ep **out);
void sw_ep_close(struct sw_ep *ep);
struct sw_addr sw_ep_addr(const struct sw_ep *ep);
enum sw_rxc_state sw_ep_rxc_state(const struct sw_ep *ep);
/* The fatal message if the endpoint hit a fatal condition, else NULL. */
const char *sw_ep_fatal(const struct sw_ep *ep);
/* Objects for inspection (tests, telemetry): the receive PtlTE and the NIC. */
uint32_t sw_ep_rx_ptn(const struct sw_ep *ep);
struct nic *sw_ep_nic(const struct sw_ep *ep);
/* SW_PROGRESS_MANUAL: process pending events now (fi_cq_read's progress). */
void sw_ep_progress(struct sw_ep *ep);
/* For a prefetch hook (sim_prefetch_hook_stage) of an event that posts on ep (sw_recv, sw_send): stage k
 * (0 .. 3; one pop apart) of what the post reads first: the endpoint's record, then the lookups of its
 * receive and transmit EQs (nic_eq_prefetch).  Prefetches only. */
void sw_ep_post_prefetch(const struct sw_ep *ep, unsigned stage);
/* fi_set_val(FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME) */
void sw_ep_set_rnr_max_timeout_us(struct sw_ep *ep, uint64_t us);
/* fi_setopt(FI_OPT_MIN_MULTI_RECV) after enable: applies to multi-receive buffers posted from now on. */
void sw_ep_set_min_multi_recv(struct sw_ep *ep, uint64_t min_free);

/* Messaging.  flags: FI_TAGGED for the tagged API, FI_MULTI_RECV (untagged receives only), FI_INJECT,
 * FI_REMOTE_CQ_DATA, FI_COMPLETION, FI_MATCH_COMPLETE.  src (receive) may be NULL for FI_ADDR_UNSPEC.
 * -FI_EAGAIN: TX queue full, flow control towards that peer, or the EQ above FI_CXI_CQ_FILL_PERCENT. */
int sw_recv(struct sw_ep *ep, uint64_t buf, uint64_t len, const struct sw_addr *src, uint64_t tag,
	    uint64_t ignore, uint64_t flags, void *context);
int sw_send(struct sw_ep *ep, uint64_t buf, uint64_t len, const void *inject_data, struct sw_addr dst,
	    uint64_t tag, uint64_t data, uint64_t flags, void *context);
/* Cancel a posted receive: FI_ECANCELED completion (with FI_MULTI_RECV for a multi-recv buffer, after the
 * completions of the messages already placed in it).  A receive a message has already matched is not
 * cancelled: that message completes it.  -FI_ENOENT: no cancellable receive with this context. */
int sw_cancel(struct sw_ep *ep, void *context);

/* FI_PEEK: look for an unexpected message matching (src, tag, ignore) without receiving it.  flags:
 * FI_TAGGED for the tagged API, plus FI_CLAIM (keep the message for sw_recv_claimed with claim_key) or
 * FI_DISCARD (drop it).  Completes with op_context = context: the message's length (rlength), tag, data,
 * FI_REMOTE_CQ_DATA and source; or err FI_ENOMSG (tag = the tag asked for).  -FI_EAGAIN: the RX context is
 * moving messages between the hardware and software lists (flow control, hybrid switch); retry. */
int sw_peek(struct sw_ep *ep, const struct sw_addr *src, uint64_t tag, uint64_t ignore, uint64_t flags,
	    uint64_t claim_key, void *context);
/* FI_CLAIM receive: the message a FI_PEEK | FI_CLAIM set aside under claim_key lands in buf (flags
 * FI_DISCARD: dropped, completion len 0).  -FI_EINVAL: nothing is claimed under that key. */
int sw_recv_claimed(struct sw_ep *ep, uint64_t buf, uint64_t len, uint64_t claim_key, uint64_t flags,
		    void *context);

/* RMA: remote address `addr` within the MR of key `key` at dst.  An access reaching past the MR's end
 * fails at the initiator (FI_EIO, prov_errno C_RC_ADDR_OUT_OF_RANGE) and moves no data -- except through
 * the provider key cache, whose one LE covers the whole address space, as on the real NIC.
 * sw_write flags FI_REMOTE_CQ_DATA (fi_writedata, with env.enable_writedata): `data` reaches the target
 * as a target-side completion; the key must be a non-optimized, non-cached provider key (-FI_EINVAL). */
int sw_write(struct sw_ep *ep, uint64_t buf, uint64_t len, struct sw_addr dst, uint64_t addr, uint64_t key,
	     uint64_t data, uint64_t flags, void *context);
int sw_read(struct sw_ep *ep, uint64_t buf, uint64_t len, struct sw_addr dst, uint64_t addr, uint64_t key,
	    uint64_t flags, void *context);

/* An atomic on one element at the target (the NIC's AMO unit, nic.h NIC_CMD_AMO): op, cswap and type are
 * Cassini's codes (the provider maps fi_op/fi_datatype as upstream does), operands op1 then op2.  A fetching
 * atomic writes the element's previous value at `result` and completes FI_ATOMIC | FI_READ, a plain one
 * FI_ATOMIC | FI_WRITE.  -FI_EINVAL for an operation the unit does not execute.  The target reports the
 * access (FI_RMA_EVENT MRs, remote counters) as FI_ATOMIC | FI_REMOTE_WRITE. */
struct sw_amo {
	uint8_t op, cswap, type;
	bool fetch;
	uint8_t operands[2 * C_AMO_OPERAND_BYTES];
};
int sw_atomic(struct sw_ep *ep, uint64_t result, struct sw_addr dst, uint64_t addr, uint64_t key,
	      const struct sw_amo *amo, void *context);

/* Memory registration (FI_MR_ENDPOINT: bound to one endpoint).  Registration and close complete through
 * done(ctx, mr, ret) after their modelled cost; close with FI_CXI_MR_MATCH_EVENTS waits until every remote
 * access has completed.  requested_key is used with client keys (flags without FI_MR_PROV_KEY); errors:
 * -FI_EKEYREJECTED (key >= 2^32), -FI_ENOKEY (duplicate). */
struct sw_mr;
typedef void (*sw_mr_done_fn)(void *ctx, struct sw_mr *mr, int ret);
/* sw_mr_reg flags: ask for a provider key (the domain's FI_MR_PROV_KEY mode) instead of requested_key;
 * FI_RMA_EVENT: report every remote access (target-side completions; such MRs are not cached, and provider
 * keys for them are not optimized, as upstream). */
#define SW_MR_PROV_KEY (1ULL << 60)
/* sw_mr_reg flags: requested_key is a key exactly as peers use it -- a client key, or a provider key
 * (plain, optimized, or cached, whose address must be buf's) -- and the MR is registered under it, whatever
 * the endpoint's own key settings.  Replay of a captured run: simulated clients expose their regions under
 * the keys the real client's requests carry.  -FI_EKEYREJECTED: not a key this provider can give. */
#define SW_MR_EXACT_KEY (1ULL << 61)
/* sw_mr_reg flags: the region's host mapping is not in libfabric's MR cache (no monitor, a full cache):
 * upstream then never uses the provider key cache for it (cxip_mr_enable needs md->cached). */
#define SW_MR_NO_KEY_CACHE (1ULL << 62)
int sw_mr_reg(struct sw_ep *ep, uint64_t buf, uint64_t len, uint64_t access, uint64_t requested_key,
	      uint64_t flags, sw_mr_done_fn done, void *ctx, struct sw_mr **out);
int sw_mr_close(struct sw_mr *mr, sw_mr_done_fn done, void *ctx);
/* The MR's object stays valid until its close completes (done called); then it is freed. */
uint64_t sw_mr_key(const struct sw_mr *mr);
bool sw_mr_is_optimized(const struct sw_mr *mr);
/* FI_CXI_MR_MATCH_EVENTS accounting: remote accesses matched, and completed. */
void sw_mr_events(const struct sw_mr *mr, uint64_t *matched, uint64_t *completed);

/* Requests (posted receives, sends, RMA operations, peeks) software holds for all endpoints of the
 * simulation; an endpoint's close returns all of its own. */
uint64_t sw_reqs_live(struct sim *sim);
/* Memory accounting (sim/mem.h): the bytes one endpoint owns -- its provider state, the NIC-side objects
 * of its LNI and the pooled records on its lists -- and, for the whole simulation, the kinds "sw.endpoint"
 * (provider state of every open endpoint) and "sw.records" (the record pools). */
struct mem_report;
uint64_t sw_ep_bytes(const struct sw_ep *ep);
void sw_memory(struct sim *sim, struct mem_report *r);
/* Likewise for unexpected-message records and rendezvous messages being received. */
uint64_t sw_ux_live(struct sim *sim);
uint64_t sw_rmsgs_live(struct sim *sim);

/* Per-endpoint statistics (also exported as stats counters "nic.<n>.ep.<pid>.<name>"). */
struct sw_ep_stats {
	uint64_t total_rnr_nacks, total_retries;
	uint64_t fc_transitions, fc_notify_sent, fc_resume_sent, fc_drops_replayed;
	uint64_t sw_transitions;          /* hybrid: moves to software matching */
	uint64_t onloaded;                /* unexpected headers moved to software */
	uint64_t hw_rdzv_gets, sw_rdzv_gets;
	uint64_t mr_hazards;              /* remote accesses to a closed (cached, still exposed) MR */
	uint64_t cmdq_backlogged;         /* internal commands that waited for room in a full command queue */
};
const struct sw_ep_stats *sw_ep_stats(const struct sw_ep *ep);

/* Host work the provider did on the application's behalf: its receive calls and its progress (fi_cq_read)
 * run this code on the caller's core.  The provider layer counts the work as it does it; the process model
 * that owns the core prices it (sim/workload) -- the flow-control and RNR steps at the prices of the "cxi"
 * parameter table, through sw_host_work_price.  Take returns the work since the previous take. */
struct sw_host_work {
	uint64_t ux_matches;   /* receives completed from a hardware unexpected header (PUT_OVERFLOW) */
	uint64_t sw_matches;   /* messages matched in software (request buffers, onloaded headers) */
	uint64_t copies, copy_bytes;  /* copies of eager data out of provider buffers */
	/* Flow-control recovery and hybrid transitions, target side (upstream cxip_msg_hpc.c). */
	uint64_t fc_state_changes;  /* PtlTE disabled or made software-managed: recovery started */
	uint64_t fc_onloaded;       /* unexpected headers onloaded from the hardware list */
	uint64_t fc_recv_replays;   /* receives whose append failed, replayed in order */
	uint64_t buf_appends;       /* overflow / request buffers appended */
	uint64_t fc_reenables;      /* PtlTE re-enable commands */
	/* Either side. */
	uint64_t ctrl_rx;           /* FC_NOTIFY or FC_RESUME processed */
	uint64_t ctrl_tx;           /* FC_NOTIFY or FC_RESUME sent */
	uint64_t kernel_calls;      /* driver calls: PtlTE status reads, software-managed transitions, buffer maps */
	simtime_t sleep;            /* usleep(FI_CXI_FC_RETRY_USEC_DELAY) after a dropped control message */
	/* Flow control, initiator side. */
	uint64_t fc_send_drops;     /* sends NACKed with C_RC_PT_DISABLED */
	uint64_t fc_send_replays;   /* dropped sends replayed after FC_RESUME */
	uint64_t fc_send_eagain;    /* sends refused (-FI_EAGAIN) while their peer is in flow control */
	/* RNR, initiator side. */
	uint64_t rnr_nacks;         /* C_RC_ENTRY_NOT_FOUND ACKs handled (retry queued) */
	uint64_t rnr_retries;       /* sends resubmitted */
	uint64_t rnr_append_retries; /* RNR receives whose append failed (no LE), appended again */
};
/* Host time of the flow-control and RNR steps counted in w, at the "cxi" table's prices (the process model
 * prices ux_matches, sw_matches and copies itself). */
struct sw_host_price {
	simtime_t fc;   /* flow-control recovery and hybrid transitions (both sides), sleeps included */
	simtime_t rnr;  /* RNR retry work */
};
struct sw_host_price sw_host_work_price(struct sim *sim, const struct sw_host_work *w);
void sw_ep_take_host_work(struct sw_ep *ep, struct sw_host_work *out);

#endif
