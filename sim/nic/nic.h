/* The Cassini NIC command interface.
 *
 * This is the single way into the NIC model, used both by simulated processes (sim/workload/) and by the
 * emulation daemon that serves the libfabric provider (sim/cxisimd, provider/).  It mirrors how software
 * drives a real Cassini through libcxi:
 *
 *   service (VNIs, resource limits) -> LNI (one per process: its memory) -> EQs, CTs, PtlTEs, command queues
 *
 * and everything that happens on the wire or in the list-processing engine is reported back as 64-byte
 * events in event queues (Cassini event types and return codes, cassini.h), or as counting-event updates.
 *
 * Timing.  Calls that allocate or free objects or read status are "driver calls": they act immediately (the
 * software layer charges their host-side cost itself).  Commands are different: nic_cmdq_emit() copies a
 * command into the queue, nic_cmdq_ring() rings the doorbell, and the NIC then fetches and executes the
 * commands as engine events after the modelled PCIe and per-command costs, in queue order.  Results (LINK,
 * ACK, PUT, ...) arrive later as events.  A component never calls into another NIC: packets go through the
 * fabric (sim/fabric/fabric.h), including ACKs, NACKs, Get requests and replies.
 *
 * Memory.  Each LNI names a memory accessor.  Addresses in commands and LEs (local_addr, start) are
 * interpreted in the owning LNI's address space and read/written through its accessor when the NIC's DMA
 * engine moves data.  The daemon backs it with process_vm_readv/writev into the real application; engine
 * workloads can use nic_mem_host (addresses are pointers in this process) or pass NULL to carry no bytes at
 * all (lengths, matching and timing are modelled exactly; data is not).
 *
 * Errors.  Functions return 0 or a negative errno value (-EINVAL bad argument, -ENOSPC no resource or queue
 * full, -ENOENT no such object, -EPERM not allowed by the service, -EADDRINUSE mapping taken, -EAGAIN retry
 * later, -EBUSY object still in use).  Nothing in here aborts on user misuse.
 *
 * Hardware vs software: this header and the files ptlte.c, lpe.c, lpe_tgt.c, le_pool.c, eq.c, ct.c, cmdq.c, dma.c,
 * vni.c, nic.c model the ASIC.  The cxi provider's software state machines (RX context states, flow-control
 * recovery, software matching, RNR retries, MR caches) live in sw_*.c on top of this interface (sw.h).
 */
#ifndef CXISIM_NIC_H
#define CXISIM_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../engine.h"
#include "cassini.h"

struct nic;
struct nic_lni;
struct nic_cmdq;

#define NIC_NONE UINT32_MAX /* "no EQ / no CT" in command fields */
#define NIC_RDZV_SRC_INDEX 255 /* portal index the hardware rendezvous Get targets (rendezvous source) */

/* ------------------------------------------------------------------------------------------------------
 * NICs.  The "nic" scenario section builds one NIC per fabric endpoint (or nic.count); each is attached to
 * the fabric under its address.
 */
struct nic *nic_get(struct sim *sim, uint32_t addr); /* NULL if there is no such NIC */
uint32_t nic_count(struct sim *sim);
uint32_t nic_addr(const struct nic *nic);
struct sim *nic_sim(const struct nic *nic);

/* ------------------------------------------------------------------------------------------------------
 * Memory accessors.  read/write return 0, or a negative errno (the NIC then reports the transfer with
 * C_RC_PERM_VIOLATION and moves no data).  They are called from NIC events; they must not call back into
 * the NIC.
 */
struct nic_mem_ops {
	int (*read)(void *ctx, uint64_t addr, void *dst, size_t len);
	int (*write)(void *ctx, uint64_t addr, const void *src, size_t len);
};
/* Addresses are pointers in the simulator's own address space (ctx unused). */
extern const struct nic_mem_ops nic_mem_host;

/* ------------------------------------------------------------------------------------------------------
 * Services: the unit of authorization.  A service owns up to 4 VNIs and per-resource limits; every LNI
 * belongs to one.  Service 1 (the default service) exists on every NIC; scenarios may define more
 * (nic.services).  Its VNI list is unrestricted unless the scenario restricts it.
 */
#define NIC_SVC_DEFAULT 1
#define NIC_SVC_MAX_VNIS 4

enum nic_rsrc {
	NIC_RSRC_PTLTE,
	NIC_RSRC_TXQ,
	NIC_RSRC_TGQ,
	NIC_RSRC_EQ,
	NIC_RSRC_CT,
	NIC_RSRC_LE, /* per PE: applies to the service's LE pool on each of the 4 PEs */
	NIC_RSRC_AC,
	NIC_RSRC_TLE, /* trigger list entries (trig.c) */
	NIC_RSRC_COUNT,
};

struct nic_rsrc_limit {
	uint32_t max; /* 0: hardware maximum */
	uint32_t res; /* reserved (guaranteed) */
};

struct nic_svc_desc {
	bool restricted_vnis;              /* false: any VNI may be used */
	uint8_t num_vnis;
	uint16_t vnis[NIC_SVC_MAX_VNIS];
	struct nic_rsrc_limit limits[NIC_RSRC_COUNT];
	uint8_t le_pool;                   /* pool id 0..15 used on every PE (pool index pe*16 + le_pool) */
};

int nic_svc_alloc(struct nic *nic, const struct nic_svc_desc *d, uint32_t *svc_id);
int nic_svc_free(struct nic *nic, uint32_t svc_id); /* -EBUSY while LNIs use it */
/* Read back a service (NULL if none). */
const struct nic_svc_desc *nic_svc_get(struct nic *nic, uint32_t svc_id);
/* A resource's use by a service (cxil_get_svc_rsrc_use) and its reserved count (the limit's res, else its
 * max, else the NIC's: what upstream reads from the service as limits.type[r].res).  -ENOENT: no service. */
int nic_svc_rsrc_use(struct nic *nic, uint32_t svc_id, enum nic_rsrc r, uint32_t *in_use, uint32_t *res);

/* ------------------------------------------------------------------------------------------------------
 * LNI (logical network interface): one process's handle on the NIC.  mem may be NULL (no real bytes).
 */
int nic_lni_alloc(struct nic *nic, uint32_t svc_id, const struct nic_mem_ops *mem, void *mem_ctx,
		  struct nic_lni **out);
/* Frees every object the LNI still owns (PtlTEs, queues, EQs, CTs). */
void nic_lni_free(struct nic_lni *lni);
struct nic *nic_lni_nic(const struct nic_lni *lni);
uint32_t nic_lni_svc(const struct nic_lni *lni); /* its service */

/* ------------------------------------------------------------------------------------------------------
 * Events.  One 64-byte slot per event.  Fields not meaningful for a type are zero.
 */
enum nic_event_flags {
	NIC_EVF_RENDEZVOUS = 1 << 0,     /* target: a rendezvous Put; initiator: event of a rendezvous op */
	NIC_EVF_GET_ISSUED = 1 << 1,     /* target: the NIC issued the rendezvous Get itself */
	NIC_EVF_AUTO_UNLINKED = 1 << 2,  /* target: the LE was unlinked by this operation (use-once / full) */
	NIC_EVF_RETRY = 1 << 3,
	NIC_EVF_TGT_ERROR = 1 << 4,
	NIC_EVF_SC_NIC_AUTO = 1 << 5,    /* STATE_CHANGE made by the NIC itself (reason in sc.reason) */
};

struct nic_event {
	uint64_t user_ptr;       /* initiator: command's user_ptr; target: the LE's user_ptr */
	uint64_t match_bits;     /* target: the incoming message's match bits */
	uint64_t header_data;
	uint64_t start;          /* target: where data landed (LE start + offset); SEARCH/overflow: header's */
	uint64_t remote_offset;  /* target: initiator-supplied offset (rendezvous: initiator's buffer) */
	uint32_t mlength;        /* bytes manipulated (delivered, or read) */
	uint32_t rlength;        /* bytes requested; rlength > mlength means truncation */
	union {
		uint32_t initiator;  /* target: C_MATCH_ID(nic, pid) of the initiator */
		struct {
			uint8_t state;   /* STATE_CHANGE: new enum c_ptlte_state */
			uint8_t reason;  /* STATE_CHANGE: enum c_sc_reason (when NIC_EVF_SC_NIC_AUTO) */
			uint16_t pad;
		} sc;
	};
	uint16_t ptlte_index;    /* target: ptn */
	uint16_t vni;
	uint16_t buffer_id;      /* target: the LE's buffer_id; SEARCH/LINK/UNLINK: the command's */
	uint8_t type;            /* enum c_event_type */
	uint8_t rc;              /* enum c_return_code */
	uint8_t ptl_list;        /* enum c_ptl_list: target, and ACK (list the Put matched on) */
	uint8_t flags;           /* enum nic_event_flags */
	uint8_t rendezvous_id;
	uint8_t pe;              /* target: PE of the PtlTE (telemetry only) */
};
_Static_assert(sizeof(struct nic_event) == C_EVENT_BYTES, "a modelled event is one 64-B EQ slot");

/* ------------------------------------------------------------------------------------------------------
 * Event queues.  A ring of `slots` 64-B events.  Software reads with peek/next and frees the slots it has
 * read with ack (as cxi_eq_peek_event / cxi_eq_next_event / cxi_eq_ack_events).
 *
 * - reserved_fc: slots held back for flow-control state-change events.  An ordinary event needs a free
 *   slot outside the reservation.  A flow-control PtlTE checks this before accepting a message and, when
 *   the EQ is full, disables itself (STATE_CHANGE [C_SC_FC_EQ_FULL], using a reserved slot) and NACKs the
 *   message with C_RC_PT_DISABLED.  Any other event that finds no slot is dropped: the EQ records the drop
 *   (status.dropped) and C_CNTR_EE_EVENTS_DROPPED_ORDINARY counts it; upstream treats that as fatal.
 * - status_thresh_pct: each time the fill rises to this percentage the NIC writes an EQ status update
 *   (status.writebacks increments).  The provider treats a new writeback as "saturated" (FI_CXI_CQ_FILL_PERCENT)
 *   until it has drained the queue.
 * - notify: called each time an event is written (from the NIC's event), so the owner can schedule its
 *   progress; it may read the EQ from inside the callback.
 */
typedef void (*nic_eq_notify_fn)(void *ctx, struct nic *nic, uint32_t eqn);

struct nic_eq_attr {
	uint32_t slots;             /* >= 2 */
	uint32_t reserved_fc;
	uint32_t status_thresh_pct; /* 0: no status updates */
	nic_eq_notify_fn notify;    /* may be NULL (owner polls) */
	void *notify_ctx;
};

struct nic_eq_status {
	uint32_t slots;
	uint32_t used;          /* written and not yet acked */
	uint32_t unread;        /* written and not yet read by nic_eq_next */
	uint32_t reserved_fc;
	uint32_t free;          /* slots - used - reserved_fc (clamped at 0) */
	uint64_t writebacks;    /* status updates at the threshold */
	uint64_t dropped;       /* events lost because the EQ was full */
	uint64_t written;
};

int nic_eq_alloc(struct nic_lni *lni, const struct nic_eq_attr *attr, uint32_t *eqn);
int nic_eq_free(struct nic_lni *lni, uint32_t eqn); /* -EBUSY while a PtlTE still reports into it */
const struct nic_event *nic_eq_peek(struct nic *nic, uint32_t eqn); /* next unread event, or NULL */
void nic_eq_next(struct nic *nic, uint32_t eqn);
void nic_eq_ack(struct nic *nic, uint32_t eqn);
int nic_eq_adjust_reserved_fc(struct nic *nic, uint32_t eqn, int delta); /* -ENOSPC if not enough free */
int nic_eq_status(struct nic *nic, uint32_t eqn, struct nic_eq_status *st);
/* For a prefetch hook (sim_prefetch_hook_stage): stage k (0, 1, 2; one pop apart) of what a lookup of EQ
 * eqn by number (nic_eq_status, nic_eq_peek, ...) loads: the NIC's EQ table, the table's slot, the EQ's
 * record.  Prefetches only. */
void nic_eq_prefetch(const struct nic *nic, uint32_t eqn, unsigned stage);

/* ------------------------------------------------------------------------------------------------------
 * Counting events (CTs): a success count (48 bits) and a failure count (7 bits), advanced by LEs and DMA
 * commands that name the CT, and set/incremented by CT commands.  notify fires on every change.
 */
typedef void (*nic_ct_notify_fn)(void *ctx, struct nic *nic, uint32_t ctn);

int nic_ct_alloc(struct nic_lni *lni, nic_ct_notify_fn notify, void *ctx, uint32_t *ctn);
int nic_ct_free(struct nic_lni *lni, uint32_t ctn);
int nic_ct_read(struct nic *nic, uint32_t ctn, uint64_t *success, uint32_t *failure);
/* Simulator hook (no driver call on Cassini): set a CT's counts at once, releasing the triggered commands
 * the new count reaches.  The emulation daemon keeps a CT equal to a counter it maintains itself. */
int nic_ct_write(struct nic_lni *lni, uint32_t ctn, uint64_t success, uint32_t failure);

/* ------------------------------------------------------------------------------------------------------
 * Portal table entries.  A PtlTE is allocated DISABLED, reports into one EQ, and is reachable from the
 * network through one or more mappings (vni, pid, index): a server endpoint maps the same PtlTE under each
 * of its VNIs.  Matching PtlTEs have PRIORITY, OVERFLOW, REQUEST and UNEXPECTED lists.  LEs come from the
 * LE pool of the owning service on the PtlTE's PE.
 *
 * Flow control (en_flowctrl): when the PtlTE cannot take a message it disables itself with a reason
 * (C_SC_FC_*), counts the message in drop_count and NACKs it with C_RC_PT_DISABLED; later messages are
 * dropped and counted the same way until software re-enables it with the matching drop count.  Without flow
 * control the same situations NACK the message (C_RC_NO_MATCH / C_RC_ENTRY_NOT_FOUND) and the PtlTE stays
 * enabled: this is what the RNR protocol uses.
 * In SOFTWARE_MANAGED state every message goes to the REQUEST list (software matches it); a priority append
 * then fails with C_RC_PTLTE_SW_MANAGED.  When a hybrid PtlTE (en_sw_transition) runs out of LEs the NIC
 * moves it to SOFTWARE_MANAGED itself ([C_SC_SM_APPEND_FAIL] / [C_SC_SM_UNEXPECTED_FAIL]).
 */
struct nic_pte_opts {
	bool is_matching;       /* match bits / ignore bits / match id; false: every Put takes the first LE */
	bool en_flowctrl;
	bool en_sw_transition;  /* hybrid: exhaustion goes SOFTWARE_MANAGED instead of disabling */
	bool en_event_match;    /* LEs with C_LE_EVENT_CT_COMM also emit C_EVENT_MATCH (MR match events) */
};

struct nic_pte_status {
	uint8_t state;              /* enum c_ptlte_state */
	uint8_t pe;
	uint16_t le_pool;           /* pe * 16 + pool */
	uint32_t drop_count;
	uint32_t ule_count;         /* headers on the UNEXPECTED list */
	uint32_t le_count[4];       /* LEs on each list (UNEXPECTED counts header entries) */
	uint8_t le_indexed;         /* simulator aid, no modelled effect: bit l set while list l is matched
				     * through an index (le_index.c) rather than walked */
};

int nic_pte_alloc(struct nic_lni *lni, uint32_t eqn, const struct nic_pte_opts *opts, uint32_t *ptn);
int nic_pte_free(struct nic_lni *lni, uint32_t ptn);
/* -EPERM: vni not allowed by the service; -EADDRINUSE: (vni, pid, index) already mapped on this NIC. */
int nic_pte_map(struct nic_lni *lni, uint32_t ptn, uint16_t vni, uint32_t pid, uint32_t index);
int nic_pte_unmap(struct nic_lni *lni, uint32_t ptn, uint16_t vni, uint32_t pid, uint32_t index);
int nic_pte_status(struct nic *nic, uint32_t ptn, struct nic_pte_status *st);
/* The remote offsets of the unexpected headers, oldest first (for rendezvous Gets after an onload).
 * Returns the number of headers (may exceed max; only max are written). */
size_t nic_pte_ule_offsets(struct nic *nic, uint32_t ptn, uint64_t *offsets, size_t max);
/* Driver call: DISABLED -> SOFTWARE_MANAGED if drop_count matches the PtlTE's (else -EAGAIN).  Emits the
 * STATE_CHANGE event like a SETSTATE command would. */
int nic_pte_transition_sm(struct nic_lni *lni, uint32_t ptn, uint32_t drop_count);

/* Drop count value that makes SETSTATE skip the drop-count check. */
#define NIC_IGNORE_DROPS ((1u << 24) - 1)

/* ------------------------------------------------------------------------------------------------------
 * Command queues.  Transmit queues take initiator and CT commands; target queues take list and state
 * commands.  Each command takes one or more 64-B slots (an IDC Put: 1 + ceil(len / 64)); a slot is freed
 * when the NIC has fetched the command.  Commands of one queue execute in order.
 */
struct nic_cmdq_attr {
	bool target;      /* target queue (append/unlink/search/setstate) vs transmit queue */
	uint32_t slots;   /* queue depth in 64-B slots */
	uint32_t eqn;     /* EQ for this queue's initiator events and COMMAND_FAILURE events (NIC_NONE: none) */
	/* Called once the NIC has fetched commands from a queue on which an emit found no room: the host's
	 * view of the queue's read pointer moving (software polls it on Cassini).  NULL: not wanted. */
	void (*on_space)(void *ctx, struct nic_cmdq *q);
	void *space_ctx;
};

enum nic_cmd_op {
	NIC_CMD_NOOP = 0,
	/* transmit queue */
	NIC_CMD_PUT,            /* DMA Put: the NIC reads the payload from local memory */
	NIC_CMD_IDC_PUT,        /* immediate-data Put: payload travels inside the command (<= 192 B) */
	NIC_CMD_RENDEZVOUS_PUT, /* eager_length bytes now; the rest is fetched by a Get to the initiator's
				 * (src_pid, NIC_RDZV_SRC_INDEX) on the same VNI with the Put's match bits, at
				 * remote_offset + eager_length: issued by the target NIC when the Put matched
				 * in hardware, by target software after software matching */
	NIC_CMD_GET,
	NIC_CMD_CT_SET,
	NIC_CMD_CT_INC,
	NIC_CMD_CT_CANCEL,      /* drop the triggered commands still held on ct.ctn (C_CMD_CT_CANCEL) */
	NIC_CMD_AMO,            /* atomic operation on one element at the target (amo.c): operands in the
				 * command; fetching AMOs write the target's previous value at local_addr */
	/* target queue */
	NIC_CMD_TGT_APPEND,
	NIC_CMD_TGT_UNLINK,
	NIC_CMD_TGT_SEARCH,
	NIC_CMD_TGT_SEARCH_AND_DELETE,
	NIC_CMD_TGT_SETSTATE,
};

enum nic_dma_flags {
	NIC_DMA_EVENT_SEND_DISABLE = 1 << 0,    /* no SEND (local completion) event */
	NIC_DMA_EVENT_SUCCESS_DISABLE = 1 << 1, /* no ACK/REPLY event when rc == C_RC_OK */
	NIC_DMA_EVENT_CT_SEND = 1 << 2,         /* count local completion in ctn */
	NIC_DMA_EVENT_CT_ACK = 1 << 3,
	NIC_DMA_EVENT_CT_REPLY = 1 << 4,
	NIC_DMA_EVENT_CT_BYTES = 1 << 5,        /* count bytes rather than operations */
	NIC_DMA_RESTRICTED = 1 << 6,            /* restricted packets (IDC up to 224 B) */
	NIC_DMA_USE_OFFSET_FOR_GET = 1 << 7,    /* rendezvous: target's Get uses remote_offset as the address */
	NIC_DMA_NOMATCH = 1 << 8,               /* non-matching Put/Get (match bits ignored at the target) */
};

/* Initiator command (PUT, IDC_PUT, RENDEZVOUS_PUT, GET). */
struct nic_dma_cmd {
	uint32_t dst_nic;        /* destination fabric address (DFA) */
	uint16_t dst_pid;
	uint16_t index;          /* portal index within the destination pid */
	uint16_t vni;            /* communication profile: VNI the packets carry */
	uint8_t tc;              /* traffic class */
	uint8_t rendezvous_id;
	uint32_t flags;          /* enum nic_dma_flags */
	uint64_t local_addr;     /* PUT/RENDEZVOUS_PUT: payload source; GET: where the reply lands */
	uint32_t length;         /* request length */
	uint32_t eager_length;   /* RENDEZVOUS_PUT: bytes sent with the Put */
	uint64_t remote_offset;
	uint64_t match_bits;
	uint64_t header_data;
	uint64_t user_ptr;       /* echoed in the initiator's events */
	uint32_t src_pid;        /* initiator presented to the target: C_MATCH_ID(this NIC, src_pid); the NIC
				  * supplies its own address, software only chooses the pid */
	uint32_t eqn;            /* NIC_NONE: the queue's EQ */
	uint32_t ctn;            /* NIC_NONE: none */
	/* AMO: operation, comparison (C_AMO_OP_CSWAP), operand type, whether the previous value comes back;
	 * length is the type's size; operands op1 and op2 (C_AMO_OPERAND_BYTES each, little-endian as the host
	 * stores them) are copied by nic_cmdq_emit from idc_data.  (Here, not last: no padding hole, so a
	 * queued command's work item is 128 bytes, two cache lines; millions wait during a start burst.) */
	uint8_t amo_op, amo_cswap, amo_type;
	bool amo_fetch;
	const void *idc_data;    /* IDC_PUT: payload, copied by nic_cmdq_emit (NULL: no real bytes) */
};

/* AMO semantics (amo.c), what the target NIC's AMO unit applies: bytes of one element of `type` (0 for an
 * unknown type); whether (op, cswap, type) is an operation the unit executes; and the execution itself on
 * `target` (updated in place; *old gets the previous value when not NULL). */
uint32_t nic_amo_type_size(uint8_t type);
bool nic_amo_valid(uint8_t op, uint8_t cswap, uint8_t type);
void nic_amo_apply(uint8_t op, uint8_t cswap, uint8_t type, void *target, const void *op1, const void *op2);

/* Target command (APPEND, UNLINK, SEARCH, SEARCH_AND_DELETE, SETSTATE). */
struct nic_tgt_cmd {
	uint32_t ptn;
	uint8_t list;            /* enum c_ptl_list */
	uint8_t state;           /* SETSTATE: enum c_ptlte_state */
	uint16_t buffer_id;      /* echoed in events; UNLINK: which LE */
	uint32_t le_flags;       /* C_LE_* */
	uint32_t ctn;            /* NIC_NONE: none */
	uint64_t start;          /* buffer address in the LNI's memory */
	uint64_t length;
	uint32_t min_free;       /* C_LE_MANAGE_LOCAL: unlink when less than this remains */
	uint32_t match_id;       /* C_MATCH_ID_ANY, or an initiator to match */
	uint64_t match_bits;
	uint64_t ignore_bits;
	uint64_t user_ptr;       /* echoed in target events */
	uint32_t drop_count;     /* SETSTATE: expected drops (NIC_IGNORE_DROPS: no check) */
};

struct nic_ct_cmd {
	uint32_t ctn;
	uint64_t success;
	uint32_t failure;
};

struct nic_cmd {
	uint8_t op; /* enum nic_cmd_op */
	union {
		struct nic_dma_cmd dma;
		struct nic_tgt_cmd tgt;
		struct nic_ct_cmd ct;
	};
};

int nic_cmdq_alloc(struct nic_lni *lni, const struct nic_cmdq_attr *attr, struct nic_cmdq **out);
void nic_cmdq_free(struct nic_cmdq *q);
/* -ENOSPC: not enough free slots (retry after the NIC drains the queue); -EINVAL: malformed command or one
 * the queue type does not take. */
int nic_cmdq_emit(struct nic_cmdq *q, const struct nic_cmd *cmd);
/* Doorbell: make every command emitted so far visible to the NIC. */
void nic_cmdq_ring(struct nic_cmdq *q);
uint32_t nic_cmdq_free_slots(const struct nic_cmdq *q);

/* ------------------------------------------------------------------------------------------------------
 * Triggered operations (trig.c), Cassini's trigger list.  A triggered command waits in a trigger list entry
 * (TLE) held against a CT until the CT's success count reaches the entry's threshold; the NIC's trigger
 * engine then releases it to the transmit engine, one entry every `trig_release_ns`, so entries released
 * together keep their order.  The entries of one CT are released in threshold order, equal thresholds in
 * the order they were queued; an entry whose threshold the count has already reached is released at once.
 * A NIC has `nic.tles` entries (C_NUM_TLES, 2048); each is charged to the LNI's service (NIC_RSRC_TLE,
 * whose limits a scenario service may set).  An entry is taken when the command is emitted and given back
 * when it is released.  A full trigger list refuses a hardware emit (nic_cmdq_emit_triggered: Cassini's
 * queue would stall instead); a software continuation may stall instead (nic_trig_append_stall).
 * NIC_CMD_CT_CANCEL (or nic_ct_cancel) drops every entry still held on the CT: nothing executes and no event
 * is written; entries already released are not recalled.  Freeing the CT or the LNI drops its entries too.
 */
/* A triggered transmit command: PUT, GET, AMO, CT_SET or CT_INC (not IDC_PUT or RENDEZVOUS_PUT: Cassini's
 * CT_TRIG_DMA carries a DMA command).  -ENOSPC: no TLE (NIC or service); -ENOENT: trig_ctn is not a live CT
 * of the queue's LNI; -EINVAL: anything else wrong. */
int nic_cmdq_emit_triggered(struct nic_cmdq *q, const struct nic_cmd *cmd, uint32_t trig_ctn, uint64_t threshold);
/* A software continuation in a TLE (the emulation daemon's triggered operations: the provider's software
 * layer issues the operation when the entry is released).  fn runs once: rc C_RC_OK when released,
 * C_RC_CANCELED when dropped while held (CT_CANCEL, CT or LNI freed); an entry already being released when
 * its LNI is freed is dropped without a call.  Same errors as nic_cmdq_emit_triggered. */
typedef void (*nic_trig_fn)(void *ctx, struct nic *nic, uint32_t ctn, uint64_t threshold, int rc);
int nic_trig_append(struct nic_lni *lni, uint32_t ctn, uint64_t threshold, nic_trig_fn fn, void *ctx);
/* As nic_trig_append, but with no TLE left (on the NIC or in the LNI's service) the LNI's trigger queue
 * stalls, as a Cassini command queue does on a full trigger list: the entry waits, behind every entry of
 * the LNI already waiting, and takes a TLE as soon as one is given back (in queue order).  At most
 * max_stalled wait per LNI (the queue's depth): -EAGAIN beyond.  Returns 0 (held) or 1 (stalled); the
 * entry, held or stalled, is then as nic_trig_append's (CT_CANCEL, CT or LNI free drop it with a call). */
int nic_trig_append_stall(struct nic_lni *lni, uint32_t ctn, uint64_t threshold, nic_trig_fn fn, void *ctx,
			  uint32_t max_stalled);
/* Entries waiting in the LNI's stalled trigger queue. */
uint32_t nic_lni_tles_stalled(const struct nic_lni *lni);
/* Driver call with CT_CANCEL's effect; returns the number of entries dropped, or -ENOENT. */
int nic_ct_cancel(struct nic_lni *lni, uint32_t ctn);
/* TLEs held on a CT (not yet released), and in use on the NIC (held or being released). */
uint32_t nic_ct_tles(struct nic *nic, uint32_t ctn);
uint32_t nic_tles_used(struct nic *nic);

/* ------------------------------------------------------------------------------------------------------
 * Observability (tests and telemetry).
 */
struct nic_le_pool_status {
	uint32_t used, reserved, max_alloc, high_water;
	uint64_t alloc_fail; /* allocations refused at the pool or PE limit */
};
int nic_le_pool_status(struct nic *nic, unsigned pool_index, struct nic_le_pool_status *st);
/* LEs in use on one PE (all pools). */
uint32_t nic_pe_le_used(struct nic *nic, unsigned pe);

/* Simulator instrumentation (no hardware equivalent): called for every remote access a PtlTE serves, with
 * the LE's user_ptr and the host address range touched.  The provider layer uses it to count accesses to
 * memory that stays exposed after an MR close (provider key cache hazards). */
typedef void (*nic_access_fn)(void *ctx, uint32_t ptn, uint64_t le_user_ptr, uint64_t addr, uint64_t len,
			      bool write);
int nic_pte_set_access_hook(struct nic *nic, uint32_t ptn, nic_access_fn fn, void *ctx);

/* Payload bytes carried with a command or packet (size-class free lists: no malloc per message once
 * warm); also what the provider layer keeps an inject send's data in.  nic_payload_free(NULL) is a no-op. */
uint8_t *nic_payload_alloc(uint32_t len);
void nic_payload_free(uint8_t *p);

/* Memory accounting: bytes an LNI owns on its NIC (EQs and rings, PtlTEs and the LEs on their lists, CTs,
 * command queues, the LNI record). */
uint64_t nic_lni_bytes(const struct nic_lni *lni);

#endif
