/* Private state of the NIC model, shared by the hardware files (nic.c, eq.c, ct.c, le_pool.c, ptlte.c,
 * lpe.c, cmdq.c, initiator.c, dma.c).  Nothing outside sim/nic/ includes this. */
#ifndef CXISIM_NIC_IMPL_H
#define CXISIM_NIC_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "../engine.h"
#include "../fabric/fabric.h"
#include "../pool.h"
#include "../stats.h"
#include "nic.h"

/* ---------------------------------------------------------------- parameters (one table, nic.c) */
struct nic_params {
	simtime_t pcie_latency;      /* one-way host <-> NIC PCIe transaction latency */
	double pcie_ps_per_byte;     /* DMA bandwidth */
	double dma_read_ps_per_byte; /* host-read streaming rate: min(PCIe, read window / round trip) */
	simtime_t doorbell;          /* MMIO doorbell write until the NIC sees the queue */
	simtime_t tx_cmd;            /* initiator command processing (per command) */
	simtime_t idc_per_64b;       /* extra per 64-B slot of IDC payload */
	simtime_t tgt_cmd;           /* target command processing (append/unlink/setstate/search) */
	simtime_t match_base;        /* per network request at the list-processing engine */
	simtime_t match_per_le;      /* per LE searched */
	simtime_t event_write;       /* event (64 B) write to host memory */
	simtime_t ack_gen;           /* building a response (ACK, Get reply header) */
	uint32_t le_pool_max_alloc;  /* default per pool */
	uint32_t le_pool_reserved;
	uint32_t pe_les;             /* LEs per PE */
	uint32_t cmdq_slots_max;
	uint32_t eq_slots_max;
	uint32_t trs_entries;        /* target request states (PCT TRS CAM): requests a NIC holds at once */
	simtime_t rh_retry;          /* initiator's retry handler: NACK seen until the packet is resent */
	uint32_t pct_sct_entries;    /* source connections (PCT SCT CAM) */
	uint32_t pct_tct_entries;    /* target connections (PCT TCT CAM) */
	uint32_t pct_pid_mask;       /* destination PID bits that select a connection (driver sct_pid_mask) */
	simtime_t pct_idle;          /* a connection idle this long is closed (SCT idle epoch) */
	simtime_t pct_conn;          /* engine time per connection opened (open + close handshake), assumed */
	simtime_t amo_unit;          /* target AMO unit occupancy per atomic */
	simtime_t trig_release;      /* trigger engine: per TLE released */
	uint32_t tles;               /* trigger list entries of a NIC */
};

/* ---------------------------------------------------------------- intrusive LE lists */
struct nic_le {
	/* Fields the matching walk reads come first: one cache line per LE walked. */
	struct nic_le *next, *prev;
	uint64_t match_bits, ignore_bits;
	uint32_t match_id;
	uint32_t flags;          /* C_LE_* */
	uint64_t length, offset;
	uint8_t list;
	bool ule;                /* an unexpected-header entry (UNEXPECTED list) */
	uint16_t buffer_id;
	uint32_t min_free;
	struct nic_pte *pte;
	uint64_t start;
	uint64_t user_ptr;
	simtime_t busy_until;    /* events of requests that used it are written until then */
	uint32_t ctn;
	/* The list's index (le_index.c), while it has one: position, and the LEs of its hash bucket. */
	uint32_t pos;
	union {
		struct {                 /* posted LE (an UNEXPECTED list is never indexed) */
			struct nic_le *ix_next, *ix_prev;
		};
		struct {                 /* unexpected header (struct nic_ule) */
			uint64_t header_data, remote_offset;
		};
	};
};

/* An unexpected header (ule == true): an LE with what the header said.  It is a request packet the PE
 * landed in an overflow buffer, so its record is a packet's slot (nic_records.pkt_ule): the whole
 * machine's 4.4 M requests are packets at the start burst and unexpected headers for the rest of the run.
 * Its header fields take the place of the index links an unexpected list never has, to fit the slot. */
struct nic_ule {
	struct nic_le le;
	uint32_t initiator;
	uint32_t rlength, mlength;   /* requested bytes, eager bytes stored in the overflow buffer */
	uint16_t vni;
	uint8_t rendezvous_id;
	bool rendezvous;
};
_Static_assert(sizeof(struct nic_ule) <= 136, "an unexpected header fits a packet's slot (struct nic_pkt)");

static inline struct nic_ule *nic_ule_of(struct nic_le *le)
{
	return (struct nic_ule *)le;
}

struct nic_le_index;

struct nic_le_list {
	struct nic_le *head, *tail;
	uint32_t count;
	bool ix_off;             /* too many ignore masks to index: walked until it empties */
	struct nic_le_index *ix; /* le_index.c; NULL: walked */
};

/* Does the LE match a request's bits and initiator (the matching walk's test)? */
static inline bool nic_le_matches(const struct nic_le *le, uint64_t match_bits, uint32_t initiator)
{
	if ((le->match_bits ^ match_bits) & ~le->ignore_bits)
		return false;
	if (le->match_id == C_MATCH_ID_ANY)
		return true;
	if (C_MATCH_ID_PID(le->match_id) == C_PID_ANY)
		return C_MATCH_ID_NIC(le->match_id) == C_MATCH_ID_NIC(initiator);
	if (C_MATCH_ID_NIC(le->match_id) == (1u << C_NIC_BITS) - 1)
		return C_MATCH_ID_PID(le->match_id) == C_MATCH_ID_PID(initiator);
	return le->match_id == initiator;
}

static inline uint64_t nic_le_space(const struct nic_le *le)
{
	return le->length > le->offset ? le->length - le->offset : 0;
}

/* le_index.c.  Search a list through its index (built here once the list is long enough): true with the
 * first LE that matches as the ordered walk checks it (operation flag, bits and initiator, room for `need`
 * bytes under C_LE_NO_TRUNCATE) or NULL, and the LEs the walk visits to reach it (all of them when none
 * matches); false when the list is to be walked instead. */
bool nic_le_index_search(struct nic_le_list *l, uint64_t match_bits, uint32_t initiator, uint32_t op_flag,
			 uint64_t need, struct nic_le **found, uint64_t *walked);
/* Kept up to date by nic_le_list_append / nic_le_list_remove (after they linked or unlinked le). */
void nic_le_index_added(struct nic_le_list *l, struct nic_le *le);
void nic_le_index_removed(struct nic_le_list *l, struct nic_le *le);

/* ---------------------------------------------------------------- objects */
struct nic_lni {
	struct nic *nic;
	uint32_t id;
	uint32_t svc_id;
	const struct nic_mem_ops *mem;
	void *mem_ctx;
	bool live;
	uint32_t used[NIC_RSRC_COUNT];
	struct nic_tle_wait *stall_head, **stall_tail; /* its trigger queue, stalled on a full trigger list */
	uint32_t stalled;
};

struct nic_svc {
	bool live;
	uint32_t id;
	struct nic_svc_desc d;
	uint32_t lnis;
	uint32_t used[NIC_RSRC_COUNT];
};

struct nic_eq {
	/* Three per client endpoint: no holes. */
	struct nic_lni *lni;
	struct nic_event *ring;   /* &inl while ring_cap is 1 */
	uint64_t wr, rd, ack; /* monotone counters; slot = counter % slots */
	nic_eq_notify_fn notify;
	void *notify_ctx;
	uint64_t writebacks, dropped, written;
	uint32_t slots, reserved_fc, thresh_pct;
	uint32_t ring_cap;
	uint32_t gen;             /* allocation generation: events of a previous owner are discarded */
	uint32_t pending;     /* slots allocated to events still travelling over PCIe */
	uint32_t refs;        /* PtlTEs and queues reporting into it */
	bool live;
	bool above_thresh;
	/* The ring's one slot while it holds at most one unacknowledged event, inside the record: every event of
	 * Fig 4 and aurora-full finds its EQ empty (the provider reads and acknowledges each as it lands), so
	 * a separately allocated ring cost each event a cold line and each EQ 272 bytes (0.85 GB across the
	 * whole machine's 3.3 M EQs).  A ring that grows moves out; emptied, it comes back (nic_eq_ack). */
	struct nic_event inl;
};
_Static_assert(sizeof(struct nic_eq) <= 176, "an EQ record grew: three per client endpoint");

/* A numbered NIC resource table (PtlTEs, EQs, CTs).  The table holds pointers to records allocated one
 * by one, so a record never moves when the table grows: LEs, pending events and work items keep pointers
 * to their PtlTE for as long as it lives.  A freed number's record stays and is reused. */
struct nic_table {
	void **rec;
	uint32_t n, cap;
};

static inline void *nic_table_at(const struct nic_table *t, uint32_t i)
{
	return i < t->n ? t->rec[i] : NULL;
}

/* Record `i` (i <= t->n), zeroed; the table grows by one when i == t->n, its record from `records`. */
void *nic_table_slot(struct nic_table *t, uint32_t i, struct pool *records);
/* The table (its records go back with their pool, when the simulation's NICs are freed). */
void nic_table_free(struct nic_table *t);

struct nic_tle;

struct nic_ct {
	bool live;
	struct nic_lni *lni;
	uint64_t success;
	uint32_t failure;
	nic_ct_notify_fn notify;
	void *ctx;
	struct nic_tle *tles;     /* trigger list entries held on it, by (threshold, order queued) */
	uint32_t ntles;
};


struct nic_pte {
	bool live;
	uint32_t ptn;
	struct nic_lni *lni;
	uint32_t eqn;
	struct nic_pte_opts opts;
	uint8_t state;
	uint8_t pe;
	uint16_t pool;
	uint32_t drop_count;
	uint32_t nmaps;
	struct nic_le_list lists[4];
	nic_access_fn access_fn;
	void *access_ctx;
};

/* An LE pool (le_pool.c), made when first configured or used: until then it holds nothing and has the
 * default reservation and limit.  Most NICs use one pool on each PE of the 64. */
struct nic_le_pool {
	uint32_t used, reserved, max_alloc, high_water;
	uint64_t *ts_used;        /* timeseries slot */
	uint64_t alloc_fail;      /* also the counter nic.<addr>.le_pool.<index>.alloc_fail */
};

/* A PE's FIFO holds its first NIC_PE_INLINE work items inside the PE record: a client NIC's PEs hold one or
 * two at a time, and a drained FIFO starts again at slot 0, so a submit and its run read the PE's own line,
 * not a ring allocated elsewhere (at 1.1 M clients that ring's slot was a cold line per request, the miss
 * the run's prefetch hook stalled on).  A burst moves the FIFO out; drained, it comes back. */
#define NIC_PE_INLINE 4
struct nic_pe {
	uint32_t used;            /* all pools */
	uint32_t shared_used;     /* allocations beyond pools' reservations */
	/* FIFO of work items (network requests and target commands), processed one at a time. */
	struct nic_work **q;      /* inl while qcap <= NIC_PE_INLINE */
	uint32_t qcap, qhead, qlen;
	bool busy;
	struct nic_work *inl[NIC_PE_INLINE];
};

/* Per-message records (LEs, packets, transactions, PE work items, events on their way to an EQ) come from
 * pools shared by every NIC of the simulation: per-NIC pools kept ~70 KB of slabs on each NIC that was ever
 * used, 6 GB across Aurora's 85,000 client NICs. */
struct nic_records {
	/* Posted LEs and PE work items share one pool of slots the size of the larger: an LE append is a work
	 * item until its PE processes it, then an LE.  The whole machine's start burst queues 15.5 M appends
	 * at once; with separate pools the work items' 2 GB of slabs sat unused behind the 16.6 M LEs they
	 * became for the rest of the run.  Shared, the burst's slots are the LEs'. */
	struct pool le_work;
	/* Packets and unexpected headers share one pool likewise: a request the PE lands in an overflow buffer
	 * stops being a packet and becomes an unexpected header.  At 1 ms of the whole machine with standard
	 * receives 4.4 M requests wait as headers, in the slots their packets left at the start burst. */
	struct pool pkt_ule;
	struct pool op, evrec;
	/* Per-endpoint records (EQs, PtlTEs, CTs, LNIs, command queues): a million endpoints' records one
	 * malloc each paid the allocator's chunk header and rounding, ~0.1 GB across the whole machine.  Their
	 * pools carve them from one arena (`block`), packed, in the order they are allocated: an endpoint
	 * opens its LNI, EQs, queues and PtlTEs together, so what one RPC touches of them lies in adjacent
	 * lines of one block, not in five pools' slabs (docs/workloads.md Round 10). */
	struct pool eq, pte, ct, lni, cmdq;
	struct arena block;
};

/* Counters (Cassini names where one exists), registered when the NIC is first used: one block of values
 * per NIC (nic->cv), the same layout for every NIC, so each counter is known by its place in the block
 * (nic_cix, filled with the block's name table, nic.c) -- not by ~150 pointers per NIC, 1.2 KB on each of
 * Aurora's 89,600 NICs.  NIC_C(nic, name) is the counter's value. */
#define NIC_CIX_NONE UINT16_MAX /* a counter not in the block (event types without a name) */
struct nic_ctr_ix {
	uint16_t net_match_priority[C_PE_COUNT], net_match_overflow[C_PE_COUNT], net_match_request[C_PE_COUNT];
	uint16_t net_match_requests[C_PE_COUNT], net_match_success[C_PE_COUNT], net_match_useonce[C_PE_COUNT];
	uint16_t append_cmds[C_PE_COUNT], append_success[C_PE_COUNT];
	uint16_t setstate_cmds[C_PE_COUNT], setstate_success[C_PE_COUNT];
	uint16_t rndzv_puts[C_PE_COUNT], rndzv_puts_offloaded[C_PE_COUNT], num_truncated[C_PE_COUNT];
	uint16_t err_no_space_append, err_no_space_net;
	uint16_t err_pt_disabled_eq_full, err_pt_disabled_req_empty, err_pt_disabled_cant_alloc_unexpected,
		err_pt_disabled_no_match_in_overflow;
	uint16_t err_entry_not_found_eq_full, err_entry_not_found_req_empty,
		err_entry_not_found_no_match_in_overflow, err_entry_not_found_cant_alloc_unexpected,
		err_entry_not_found_unlink_failed;
	uint16_t err_ptlte_sw_managed, err_search_no_match, err_setstate_no_match, err_invalid_endpoint;
	uint16_t unlink_cmds, unlink_success, search_cmds, search_success, search_fail;
	uint16_t search_delete_cmds, search_delete_success, search_delete_fail;
	uint16_t put_cmds, rendezvous_put_cmds, get_cmds, amo_cmds, fetch_amo_cmds;
	uint16_t events_enqueued, events_dropped_ordinary, events_dropped_fc_sc;
	uint16_t event_type[C_EVENT_TYPES];
	/* cxisim-specific (no Cassini counter): */
	uint16_t pt_disabled_drops;    /* messages NACKed because the PtlTE was disabled */
	uint16_t vni_not_found, ptlte_not_found;
	uint16_t les_searched;
	uint16_t le_bounds_errors;     /* remote accesses past a (not locally managed) LE's end */
	uint16_t limit_hits;           /* every time a limit was hit (LE pool, PE, EQ, cmdq) */
	uint16_t tx_bytes, rx_bytes, pkts_tx, pkts_rx;
	uint16_t cmdq_full;
	uint16_t no_trs_nacks;         /* C_CNTR_PCT_NO_TRS_NACKS: requests refused, TRS full (target) */
	uint16_t rh_retries;           /* packets the retry handler resent after a NACK (initiator) */
	uint16_t trs_high_water;       /* most request states held at once (target) */
	uint16_t tx_busy_ps;           /* time the transmit engine spent on commands (tx_cmd per command) */
	uint16_t pct_sct_open, pct_tct_open; /* C_CNTR_PCT_CONN_{SCT,TCT}_OPEN: connections opened (pct.c) */
	uint16_t no_tct_nacks;         /* C_CNTR_PCT_NO_TCT_NACKS: requests refused, every TCT held (target) */
	uint16_t pct_sct_high_water, pct_tct_high_water; /* most connections open at once */
	uint16_t pct_sct_full;         /* SCT opens beyond the table (counted, not enforced: pct.c) */
	uint16_t pe_busy_ps[C_PE_COUNT]; /* time each PE spent on network requests and target commands */
	uint16_t fc_transitions[8];    /* STATE_CHANGE by the NIC, per c_sc_reason */
	uint16_t trig_cmds;            /* triggered commands released (C_CNTR_CQ_NUM_TRIG_CMDS_0) */
	uint16_t trig_canceled;        /* entries dropped by CT_CANCEL or a free */
	uint16_t tle_high_water;       /* most trigger list entries in use at once */
	uint16_t le_pool_fail;         /* le_pool.<index>.alloc_fail: C_LE_POOLS counters from here, by index */
};
extern struct nic_ctr_ix nic_cix;
#define NIC_C(nic, f) ((nic)->cv[nic_cix.f])

/* One PCT connection table (pct.c), embedded in the NIC record: a packet's use reaches it without a pointer
 * hop.  All zero: nothing seen yet (slots and FIFO are allocated at first use). */
struct pct_conn;
struct pct_use;
struct nic_pct_table {
	struct pct_conn *slots;
	uint32_t cap;  /* slots (a power of two); open connections occupy them */
	uint32_t open, high;
	struct pct_use *fifo;
	uint32_t fcap, fhead, flen;
	simtime_t head_at; /* fifo[fhead].at while flen: most uses expire nothing, and need not touch the FIFO */
};

struct nic {
	struct sim *sim;
	struct fabric *fabric;
	uint32_t addr;
	const struct nic_params *p;
	bool active;              /* counters registered */
	uint64_t *cv;             /* their values (NIC_C) */

	struct nic_svc *svcs;
	uint32_t nsvcs;
	struct nic_lni **lnis;
	uint32_t nlnis;

	struct nic_table ptes;    /* struct nic_pte, grown on demand up to C_NUM_PTLTES */
	struct nic_table eqs;     /* struct nic_eq */
	struct nic_table cts;     /* struct nic_ct */
	uint32_t ntxq, ntgq;
	struct nic_cmdq *cmdqs;   /* every live command queue, for teardown */
	struct nic_cmdq *cmdq_zombies; /* freed queues a scheduled fetch still points at */

	/* (vni, pid, index) -> ptn, and VNI -> number of mappings (open addressing). */
	uint64_t *map_keys;
	uint32_t *map_vals;
	uint32_t map_cap, map_n;
	uint64_t *vni_keys;
	uint32_t *vni_counts;
	uint32_t vni_cap, vni_n;

	uint8_t pool_at[C_LE_POOLS]; /* 1 + the pool's place in `pools`; 0: not made (le_pool.c) */
	uint8_t npools, pools_cap;
	struct nic_le_pool *pools;
	struct nic_pe pe[C_PE_COUNT];
	uint32_t trs_used;        /* requests received and not yet answered (ACK or reply) */
	struct nic_pct_table sct, tct; /* PCT connections (pct.c) */
	simtime_t tx_free;        /* transmit engine busy until */
	simtime_t tx_order;       /* last packet departure time (departures keep command order) */
	simtime_t dma_read_free;  /* the host-read channel has streamed everything issued before, until then */
	simtime_t amo_free;       /* the AMO unit has applied every atomic before, until then */
	simtime_t trig_free;      /* the trigger engine has released every entry before, until then */
	uint32_t tles_used;       /* trigger list entries taken (held or being released) */
	uint32_t tles_stalled;    /* entries waiting in stalled trigger queues (all LNIs) */
	uint64_t tle_seq;

	struct nic_records *rec;  /* the simulation's record pools, shared by every NIC */
	uint64_t rdzv_seq;
	uint32_t eq_gen;
};

/* ---------------------------------------------------------------- wire packets */
/* PKT_NACK: a request the target could not take (no TRS), on its way back to the initiator's retry handler,
 * which resends it; orig_type and orig_bytes keep what it was. */
enum nic_pkt_type { PKT_PUT = 1, PKT_GET, PKT_REPLY, PKT_ACK, PKT_NACK, PKT_AMO };

enum nic_pkt_flags {
	PKTF_RENDEZVOUS = 1 << 0,
	PKTF_NOMATCH = 1 << 1,
	PKTF_HW_RDZV_GET = 1 << 2, /* a Get the target NIC issued for a rendezvous Put */
	PKTF_RESTRICTED = 1 << 3,
};

struct nic_op;

struct nic_pkt {
	struct fabric_msg msg;
	uint8_t type, rc, list, flags;
	uint8_t rendezvous_id;
	uint16_t dst_pid, index;
	uint32_t initiator;
	uint32_t rlength;         /* PUT: message length; GET: bytes requested */
	uint32_t payload_len;     /* PUT: bytes carried (eager part); REPLY: bytes returned */
	uint32_t mlength;         /* ACK: bytes the target accepted */
	uint64_t match_bits, header_data, remote_offset;
	struct nic_op *op;        /* initiator transaction (opaque to the target; echoed in ACK/REPLY) */
	uint8_t *payload;         /* real bytes or NULL */
	uint8_t orig_type;        /* PKT_NACK: the request's type */
	uint32_t orig_bytes;      /* PKT_NACK: the request's payload bytes */
	uint8_t amo_op, amo_cswap, amo_type; /* PKT_AMO: payload is op1 then op2 (C_AMO_OPERAND_BYTES each) */
	bool amo_fetch;
};

/* An initiator transaction: outstanding Put/Get (the MST/TRS entry of real hardware). */
enum nic_op_kind { OP_PUT = 1, OP_GET, OP_HW_RDZV_GET };

struct nic_op {
	/* One per message in flight (4.4 million in the whole-machine scenario): no holes. */
	uint8_t kind;
	uint8_t cmd_op;
	uint8_t rendezvous_id;
	uint32_t flags;
	struct nic_lni *lni;
	uint32_t eqn, ctn;
	uint64_t user_ptr, local_addr, match_bits;
	uint32_t length;
	/* OP_HW_RDZV_GET: the target-side LE the data goes to, and the event to complete with. */
	uint32_t ptn;
	uint64_t dst_addr;
	uint64_t le_user_ptr;
	uint16_t buffer_id;
	uint16_t vni;
	uint32_t initiator;
	uint32_t rlength;
	uint64_t header_data;
};

/* A unit of work for a PE: a network request or a target command. */
enum nic_work_kind { WORK_PKT = 1, WORK_TGT_CMD };

struct nic_work {
	uint8_t kind;
	uint8_t pct_open;         /* a request packet that opened a target connection (PE pays pct_conn) */
	uint32_t q_eqn;           /* the command queue's EQ */
	struct nic *nic;
	union {
		struct nic_pkt *pkt;  /* WORK_PKT: the request */
		struct nic_lni *lni;  /* commands: the issuing LNI */
	};
	uint8_t *idc;             /* IDC payload copied at emit */
	struct nic_cmd cmd;
};
_Static_assert(sizeof(struct nic_work) <= 128, "a work item is two cache lines");

/* ---------------------------------------------------------------- internal API between files */
/* Prefetch hooks (sim_prefetch_hook) of the NIC's busiest handlers, one function per file, registered at
 * build: each fetches the record its handler reaches first after the event's own object. */
void nic_lpe_prefetch_hooks(struct sim *sim);
void nic_eq_prefetch_hooks(struct sim *sim);
void nic_initiator_prefetch_hooks(struct sim *sim);
void nic_cmdq_prefetch_hooks(struct sim *sim);

void nic_activate(struct nic *nic);
void nic_count_limit(struct nic *nic);

/* cmdq.c: bytes of the command queues (records and rings) an LNI owns, or all of the NIC's (lni NULL,
 * queues freed while a fetch was pending included); *count (if given) is incremented per queue. */
uint64_t nic_cmdqs_bytes(struct nic *nic, const struct nic_lni *lni, uint64_t *count);
extern const size_t nic_cmdq_record_size; /* sizeof(struct nic_cmdq), for its pool */

/* dma.c: PCIe timing */
simtime_t nic_dma_time(const struct nic *nic, uint64_t bytes);
simtime_t nic_dma_write_stream(const struct nic *nic, const struct fabric_msg *m, uint64_t bytes);
simtime_t nic_dma_read(struct nic *nic, uint64_t bytes, simtime_t after, simtime_t *done);
int nic_mem_read(struct nic_lni *lni, uint64_t addr, void *dst, uint64_t len);
int nic_mem_write(struct nic_lni *lni, uint64_t addr, const void *src, uint64_t len);

/* eq.c */
struct nic_eq *nic_eq_lookup(struct nic *nic, uint32_t eqn);
bool nic_eq_has_room(struct nic *nic, uint32_t eqn);
/* Post an event: it becomes readable after `delay`; returns false if it was dropped (EQ full). */
bool nic_eq_post(struct nic *nic, uint32_t eqn, const struct nic_event *ev, simtime_t delay, bool fc_reserved);
/* Gives back a ring that grew out of the EQ record (the record's own slot again). */
void nic_eq_ring_free(struct nic_eq *q);
void nic_eqs_free_lni(struct nic *nic, struct nic_lni *lni);

/* trig.c: the CT's success count changed (ct.c); the CT or LNI is going away (drop its entries). */
void nic_trig_ct_changed(struct nic *nic, uint32_t ctn, struct nic_ct *c);
void nic_trig_ct_drop(struct nic *nic, struct nic_ct *c);
/* A command's TLE, taken at emit (cmdq.c), becomes a held entry at fetch with its work item. */
struct nic_tle *nic_tle_take(struct nic_lni *lni, uint32_t ctn, uint64_t threshold, int *rc);
void nic_tle_hold(struct nic *nic, struct nic_tle *t, struct nic_work *w);
void nic_tle_give_back(struct nic *nic, struct nic_tle *t);
struct nic_ct *nic_ct_lookup(struct nic *nic, uint32_t ctn);

/* ct.c */
void nic_ct_add(struct nic *nic, uint32_t ctn, uint64_t success, uint32_t failure);
void nic_ct_set(struct nic *nic, uint32_t ctn, uint64_t success, uint32_t failure);
void nic_cts_free_lni(struct nic *nic, struct nic_lni *lni);

/* le_pool.c */
/* Pool `index` of the NIC, made (with the defaults) if it was not; or, without making it, the pool or its
 * defaults copied into *tmp. */
struct nic_le_pool *nic_le_pool(struct nic *nic, unsigned index);
const struct nic_le_pool *nic_le_pool_peek(const struct nic *nic, unsigned index, struct nic_le_pool *tmp);
bool nic_le_alloc(struct nic *nic, struct nic_pte *pte);
void nic_le_release(struct nic *nic, struct nic_pte *pte);

/* ptlte.c */
struct nic_pte *nic_pte_lookup(struct nic *nic, uint32_t ptn);
/* Resolve a packet's (vni, pid, index); returns the PtlTE or NULL with *rc set. */
struct nic_pte *nic_pte_resolve(struct nic *nic, uint16_t vni, uint32_t pid, uint32_t index, bool loopback,
				uint8_t *rc);
/* Prefetch hooks' helper, a pop apart each: stage 0 the (vni, pid, index) map slot nic_pte_resolve will read
 * first and the PtlTE table; stage 1 the table's slot of the PtlTE the map names; stage 2 its record. */
void nic_pte_resolve_prefetch(const struct nic *nic, uint16_t vni, uint32_t pid, uint32_t index, unsigned stage);
void nic_le_list_append(struct nic_le_list *l, struct nic_le *le);
void nic_le_list_remove(struct nic_le_list *l, struct nic_le *le);
void nic_le_free(struct nic *nic, struct nic_le *le);
void nic_ptes_free_lni(struct nic *nic, struct nic_lni *lni);

/* lpe.c: list processing engine */
void nic_pe_submit(struct nic *nic, unsigned pe, struct nic_work *w);
void nic_lpe_rx(struct sim *sim, void *nic_obj, struct fabric_msg *m);
/* ... shared with its target commands (lpe_tgt.c): target events from an LE and a message header, the NIC's
 * own PtlTE state changes, a Put's delivery into an LE (`landing`: overflow/request buffer, eager part only;
 * `p` NULL: nothing arrives, PUT_OVERFLOW). */
void nic_event_from_le(struct nic_event *ev, uint8_t type, const struct nic_le *le);
void nic_event_hdr(struct nic_event *ev, const struct nic_ule *hdr);
void nic_pte_auto_state(struct nic *nic, struct nic_pte *pte, uint8_t state, uint8_t reason, simtime_t delay);
void nic_deliver_put(struct nic *nic, struct nic_pte *pte, struct nic_le *le, const struct nic_ule *hdr,
		     const struct nic_pkt *p, uint8_t ev_type, simtime_t delay, bool landing, bool *retired);
simtime_t nic_lpe_tgt_cmd(struct nic *nic, struct nic_work *w);

/* initiator.c */
void nic_tx_submit(struct nic *nic, struct nic_work *w);
void nic_send_pkt(struct nic *nic, struct nic_pkt *p, simtime_t delay);
struct nic_pkt *nic_pkt_new(struct nic *nic);
void nic_pkt_free(struct nic *nic, struct nic_pkt *p);
void nic_send_nack(struct nic *nic, struct nic_pkt *req);
/* PCT connections (pct.c): a request leaving (source side) or arriving (target side; false: no TCT left,
 * NACK it). */
bool nic_pct_sct_use(struct nic *nic, const struct nic_pkt *p);
int nic_pct_tct_use(struct nic *nic, const struct nic_pkt *p);
/* Prefetch hooks' helper: stage k (0, 1, 2; one pop apart, NIC record in cache) of the lines
 * nic_pct_sct_use (target false) or nic_pct_tct_use (true) will touch for this packet: the table record,
 * the connection's slot and the FIFO's ends, the slot of the connection that expires first.  Prefetches
 * only. */
void nic_pct_prefetch(const struct nic *nic, const struct nic_pkt *p, bool target, unsigned stage);
void nic_pct_free(struct nic *nic);
uint64_t nic_pct_bytes(const struct nic *nic); /* the connection tables' bytes (memory accounting) */
/* One connection table on its own (tests): a use of class `key` at `now` returns 1 if it opened a connection,
 * 0 if one was open, -1 if it needed one and `limit` were open. */
struct nic_pct_table *nic_pct_table_new(void);
int nic_pct_table_use(struct nic_pct_table *t, uint64_t key, simtime_t now, simtime_t idle, uint32_t limit);
uint32_t nic_pct_table_open(const struct nic_pct_table *t);
void nic_pct_table_free(struct nic_pct_table *t);
void nic_send_ack(struct nic *nic, const struct nic_pkt *req, uint8_t rc, uint8_t list, uint32_t mlength,
		  simtime_t delay);
/* The target NIC fetches the rest of a rendezvous Put: `got` bytes already landed at dst_addr - ...;
 * the Get asks for `len` more, written at dst_addr. */
void nic_issue_hw_rdzv_get(struct nic *nic, struct nic_pte *pte, const struct nic_le *le, uint64_t dst_addr,
			   uint32_t len, const struct nic_ule *hdr, simtime_t delay);
void nic_post_target_event(struct nic *nic, struct nic_pte *pte, struct nic_event *ev, simtime_t delay);
void nic_initiator_rx(struct nic *nic, struct nic_pkt *p);

static inline uint32_t nic_rsrc_max_default(enum nic_rsrc r)
{
	switch (r) {
	case NIC_RSRC_PTLTE: return C_NUM_PTLTES;
	case NIC_RSRC_TXQ: return C_NUM_TXQS;
	case NIC_RSRC_TGQ: return C_NUM_TGQS;
	case NIC_RSRC_EQ: return C_NUM_EQS;
	case NIC_RSRC_CT: return C_NUM_CTS;
	case NIC_RSRC_LE: return C_LES_PER_PE;
	case NIC_RSRC_AC: return C_NUM_ACS;
	case NIC_RSRC_TLE: return C_NUM_TLES;
	default: return 0;
	}
}

#endif
