/* The protocol between the libfabric provider (libcxisim-fi.so, inside an application) and the emulation
 * daemon (cxisimd, which owns the engine with the NIC and fabric models).
 *
 * Control path: a SOCK_SEQPACKET UNIX socket (path in CXISIM_SOCKET).  Each request is one datagram
 * (struct ctl_hdr + body) and gets exactly one reply datagram with the same seq; shared-memory file
 * descriptors travel with replies as SCM_RIGHTS.  The socket also tells each side that the other died:
 * the daemon frees a client's NIC resources when its socket closes, and the provider fails calls with
 * -FI_EIO when the daemon's end closes.
 *
 * Data path: per object, a shared-memory ring (ring.h) and an eventfd doorbell:
 *   - a command queue per endpoint (provider -> NIC), like a Cassini transmit/target command queue;
 *   - an event queue per completion queue (NIC -> provider), like a Cassini EQ;
 *   - counters are written back into shared memory, like Cassini counting events' writeback.
 *
 * Time.  Every command carries the issuing thread's slot and a virtual timestamp.  In realtime mode the
 * stamp is 0 and the daemon stamps commands with its wall-clock-driven virtual time.  In virtual mode the
 * stamp is the thread's virtual clock, kept in its slot of the process control block (struct pcb_shm),
 * which both sides map at attach; the attach reply then carries a second descriptor, an eventfd the
 * provider rings when the daemon waits for a thread's clock (pcb_shm.daemon_waiting).
 */
#ifndef CXISIM_PROTO_H
#define CXISIM_PROTO_H

#include <stdatomic.h>
#include <stdint.h>

#define CXISIM_PROTO_VERSION 3
#define CXISIM_MAX_NICS_PER_NODE 16
#define CXISIM_MAX_THREADS 256
#define CXISIM_MAX_AUTH_KEYS 4 /* VNIs per endpoint (a CXI service owns up to 4) */

enum cxisim_time_mode {
	CXISIM_TIME_REALTIME = 0, /* virtual time follows the wall clock */
	CXISIM_TIME_VIRTUAL = 1,  /* conservative lockstep on the threads' clocks */
	CXISIM_TIME_ANY = 2,      /* attach request only: whatever the daemon runs (no `cxisim exec`) */
};

/* ---- control messages ---- */

enum ctl_op {
	CTL_ATTACH = 1,
	CTL_QUEUE_OPEN,  /* a command queue or an event queue (ring + eventfd) */
	CTL_CT_OPEN,     /* a counting event (fi_cntr) */
	CTL_EP_OPEN,     /* an endpoint: pid on a NIC, PtlTEs, bound to queues */
	CTL_OBJ_CLOSE,   /* any object by id */
	CTL_MR_REG,      /* memory region (an LE on the MR PtlTE) */
	CTL_STATUS,      /* daemon status as JSON text (tests and `cxisim status`) */
	CTL_SHUTDOWN,    /* ask a private daemon to exit when idle */
	CTL_CT_SET,      /* fi_cntr_set / fi_cntr_add on a counter */
	CTL_EP_CTRL,     /* per-endpoint settings after open (e.g. RNR timeout) */
	CTL_DETACH,      /* clean goodbye (libfabric's cleanup); a socket that closes without it is a death */
	CTL_TRIG_QUEUE,  /* a triggered operation or deferred work, held on the NIC's trigger list (trigger.c) */
	CTL_TRIG_FLUSH,  /* FI_FLUSH_WORK: drop every triggered operation of the process still held */
	CTL_OP_MAX
};

struct ctl_hdr {
	uint32_t op;
	uint32_t seq;
	int32_t status; /* reply: 0 or -FI_E* */
	uint32_t len;   /* bytes of body after the header */
};

#define CTL_MAX_MSG 4096

/* CTL_ATTACH: first message on a connection. */
struct ctl_attach_req {
	uint32_t version;
	int32_t pid;
	uint32_t uid;
	int32_t rank;       /* job rank from the launcher's environment, -1 if none */
	int32_t local_rank; /* rank on this host, -1 if none */
	int32_t node;       /* CXISIM_NODE: requested simulated node, -1 = let the daemon place */
	uint32_t time_mode; /* the mode the process expects (enum cxisim_time_mode); must match the daemon */
	uint32_t pad;
	char hostname[64];
	char progname[64];
};

struct ctl_nic_info {
	uint32_t addr;       /* 20-bit NIC address on the fabric */
	uint32_t index;      /* cxiN on this node */
};

struct ctl_attach_rep {
	uint32_t version;
	int32_t daemon_pid;
	uint32_t client_id;
	uint32_t node;
	uint32_t nnics;
	uint32_t time_mode;
	uint64_t pcb_bytes; /* size of the process control block (fd attached) */
	struct ctl_nic_info nics[CXISIM_MAX_NICS_PER_NODE];
	char scenario[64];
};

/* Process control block, one per attached process, mapped by both sides.  In realtime mode only
 * `daemon_vt_ps` is used (the provider shows virtual time in logs).  In virtual mode (docs/provider.md
 * "Time") every application thread that uses the provider owns a slot: its virtual clock, its state, and
 * while it is idle the deadline and the object it waits on.  Ownership of a slot's clock follows its state:
 * the thread writes it while BUSY, the daemon while IDLE (to wake it at a virtual time).  Both sides use
 * sequentially consistent accesses on `state`, `horizon_ps`, `pub_seq` and `stalled` (two Dekker-style
 * handshakes: idle/wake and stall/publish), so no wake-up and no clock is lost. */
enum pcb_thread_state {
	PCB_THREAD_FREE = 0,
	PCB_THREAD_BUSY = 1,   /* running application code: its CPU time advances its clock */
	PCB_THREAD_IDLE = 2,   /* waiting on the provider (empty poll, fi_trywait, blocking read, control call) */
	PCB_THREAD_WAKING = 3, /* the daemon (or another thread of the process) is waking it */
};

#define PCB_WAIT_ANY 0u            /* wait_id: anything visible to the process wakes the thread */
#define PCB_WAIT_NONE 0xffffffffu  /* wait_id: only its deadline or its own process wakes it */
#define PCB_WAIT_REQUEST 0xfffffffeu /* wait_id: making a control request (woken with the reply); until the
				      * daemon has it, the engine does not pass the thread's clock */

struct pcb_thread {
	_Atomic uint32_t state;
	int32_t tid;
	_Atomic uint64_t vclock_ps;   /* thread's virtual clock */
	_Atomic uint64_t cpu_ns;      /* thread CPU time (CLOCK_THREAD_CPUTIME_ID) at the last charge */
	_Atomic uint64_t deadline_ps; /* IDLE: wake at this virtual time (UINT64_MAX: none) */
	_Atomic uint32_t wait_id;     /* IDLE: daemon object id it waits on (CQ event queue, counter), or PCB_WAIT_* */
	_Atomic uint32_t wake;        /* futex word: bumped by whoever wakes the thread */
	_Atomic uint32_t pub_seq;     /* bumped by the thread each time it publishes its clock */
	_Atomic uint32_t stalled;     /* set by the daemon: time went on without this thread (stall rule) */
	_Atomic uint32_t emitting;    /* between taking a command's stamp and publishing the command */
	_Atomic uint32_t excursion;   /* back from a park by its timeout, no provider entry since (vtime.c) */
	uint64_t pad;
};
_Static_assert(sizeof(struct pcb_thread) == 64, "a thread slot is one cache line");

#define PCB_CLIP_AFTER_PARK 1u
#define PCB_CLIP_END_SITE 2u
struct pcb_shm {
	uint32_t magic;
	uint32_t time_mode;
	_Atomic uint64_t daemon_vt_ps; /* daemon's virtual time, refreshed on every engine step */
	_Atomic uint32_t daemon_alive; /* cleared by the daemon when it shuts down cleanly */
	uint32_t nthreads;
	/* virtual mode */
	_Atomic uint64_t horizon_ps;   /* the engine may run up to here: a thread that wakes by itself starts here */
	double cpu_scale;              /* virtual time per second of thread CPU time (emulation.cpu_scale) */
	uint64_t park_timeout_ns;      /* wall time a parked thread waits with nothing changing (emulation.park_timeout_us) */
	uint64_t retry_ps;             /* virtual time a thread waits after a full command queue (emulation.retry_ns) */
	_Atomic uint32_t daemon_waiting; /* the daemon sleeps until a thread's clock reaches daemon_want_ps or it idles */
	_Atomic uint32_t slots_hwm;    /* slots in use are below this */
	_Atomic uint64_t daemon_want_ps;
	/* The control request in flight (one per process at a time): its sender's virtual time, when the
	 * request takes effect, and slot (PCB_REQ_NO_SLOT: none), woken at that time with the reply. */
	_Atomic uint64_t req_vt_ps;
	_Atomic uint32_t req_slot;
	uint32_t span_clip_ns;         /* emulation.span_clip_ns: the most a short span's tail is forgiven (vtime.c) */
	uint32_t span_clip_q_pm;       /* emulation.span_clip_quantile x 1000: the quantile the clip charges up to */
	uint32_t span_clip_flags;      /* PCB_CLIP_AFTER_PARK (span_clip_after_park), PCB_CLIP_END_SITE (span_clip_site end) */
	uint32_t spin_read_ns;         /* emulation.spin_read_ns: a repeated clock read's cost at cpu_scale 0 (vtime.c) */
	uint32_t spin_free_reads;      /* emulation.spin_free_reads: reads in a row that stay free (vtime.c) */
	/* Parks that ended by park_timeout (wall time) with nobody waking the thread: metrics.json
	 * emulation.park_timeouts, summed by the daemon at detach. */
	_Atomic uint64_t park_timeouts;
	/* The span clip (span_clip_ns > 0): spans charged, spans clipped, CPU ns forgiven; metrics.json
	 * emulation.spans, spans_clipped, span_clip_credit_ns, summed by the daemon at detach; spans_after_park:
	 * of the spans, those that began when the thread came back from a park (emulation.spans_after_park). */
	_Atomic uint64_t spans, spans_clipped, span_clip_credit_ns, spans_after_park;
	/* Host costs of memory mapping (the "cxi" section: kernel_call_ns, map_page_ns per 4 KiB page,
	 * unmap_page_ns, mr_cache_lookup_ns), in ps, set at attach: the provider charges them in virtual time when
	 * it maps a buffer for the NIC (provider/iomm.c, upstream cxil_map through libfabric's MR cache). */
	uint64_t map_call_ps, map_page_ps, unmap_page_ps, map_cache_hit_ps;
	/* Each slot its own cache line (the mapping is page-aligned): a slot is written by its thread and the
	 * daemon, never by a neighbour's thread or with the daemon's own fields above. */
	_Alignas(64) struct pcb_thread threads[CXISIM_MAX_THREADS];
};
#define PCB_MAGIC 0x70636231u
#define PCB_REQ_NO_SLOT UINT32_MAX

/* CTL_QUEUE_OPEN */
enum queue_kind {
	QUEUE_CMD = 1, /* provider -> daemon */
	QUEUE_EVT = 2, /* daemon -> provider */
};

struct ctl_queue_open_req {
	uint32_t kind;
	uint32_t nslots; /* power of two */
};

struct ctl_queue_open_rep {
	uint32_t id;
	uint32_t nslots;
	uint64_t bytes; /* mapping size; fds attached: [memfd, eventfd] */
};

/* CTL_CT_OPEN: the counter's success/failure values are written back into a shared page. */
struct ct_shm {
	_Atomic uint64_t success;
	_Atomic uint64_t failure;
	_Atomic uint32_t armed; /* a thread waits in fi_cntr_wait: ring the eventfd on change */
	uint32_t pad;
};

/* CTL_CT_OPEN's optional body (absent: completions are counted). */
struct ctl_ct_open_req {
	uint32_t events; /* FI_CNTR_EVENTS_COMP (0) or FI_CXI_CNTR_EVENTS_BYTES (1) */
	uint32_t pad;
};

struct ctl_ct_open_rep {
	uint32_t id;
	uint32_t pad;
	uint64_t bytes; /* fds attached: [memfd, eventfd] */
};

struct ctl_ct_set_req {
	uint32_t id;
	uint32_t which; /* 0 success, 1 failure */
	uint32_t add;   /* 1: add value, 0: set */
	uint32_t pad;
	uint64_t value;
};

struct ctl_obj_close_req {
	uint32_t id;
	uint32_t pad;
};

/* CTL_TRIG_QUEUE.  TRIG_CMD: the command (nslots x RING_SLOT bytes after this header, exactly as it would
 * go on the endpoint's command queue) waits in a trigger list entry of the endpoint's NIC until counter
 * trig_ct reaches threshold, then executes on the endpoint.  TRIG_CNTR_SET / TRIG_CNTR_ADD: counter
 * target_ct is set to / incremented by value (a triggered CT command on NIC nic_index of the node).
 * TRIGF_COMP_CT (deferred work): the completion counts in comp_ct (0: nowhere), not in the endpoint's
 * counters.  With no trigger list entry left the process's trigger queue stalls (the entry waits for one,
 * in order); errors: -EAGAIN the stalled queue is full, -ENOSPC (TRIGF_LIMIT) the service's budget is
 * used, -EINVAL malformed or a counter of another NIC. */
enum trig_kind { TRIG_CMD = 1, TRIG_CNTR_SET = 2, TRIG_CNTR_ADD = 3 };
#define TRIGF_COMP_CT 1u
#define TRIGF_LIMIT 2u /* FI_CXI_ENABLE_TRIG_OP_LIMIT: -ENOSPC past the service's TLEs less 8 (upstream) */

struct ctl_trig_queue_req {
	uint32_t kind;
	uint32_t ep;
	uint32_t trig_ct;
	uint32_t comp_ct;
	uint64_t threshold;
	uint32_t flags;
	uint32_t nic_index;
	uint32_t target_ct;
	uint32_t nslots;
	uint64_t value;
};

/* CTL_EP_OPEN: an RDM endpoint on one NIC of the node, at fi_enable time. */
enum ep_open_flags {
	EPF_TX_SELECTIVE = 1u << 0,   /* FI_SELECTIVE_COMPLETION on the transmit CQ binding */
	EPF_RX_SELECTIVE = 1u << 1,
	EPF_RNR = 1u << 2,            /* FI_PROTO_CXI_RNR */
	EPF_TRUNC_OK = 1u << 3,       /* FI_CXI_TRUNC_OK */
	EPF_HYBRID_PREEMPTIVE = 1u << 4,
	EPF_HYBRID_RECV_PREEMPTIVE = 1u << 5,
	EPF_HYBRID_POSTED_RECV_PREEMPTIVE = 1u << 6,
	EPF_HYBRID_UNEXPECTED_MSG_PREEMPTIVE = 1u << 7,
	EPF_SOURCE = 1u << 8,         /* report initiators (FI_SOURCE) */
	EPF_REMOTE_ACCESS = 1u << 9,  /* FI_RMA with remote read/write: MR PtlTEs needed */
	EPF_OPTIMIZED_MRS = 1u << 10,
	EPF_PROV_KEY_CACHE = 1u << 11,
	EPF_MR_MATCH_EVENTS = 1u << 12,
	EPF_PROV_KEYS = 1u << 13,     /* FI_MR_PROV_KEY domain */
	EPF_MULTI_AUTH_KEY = 1u << 14,
	EPF_ENABLE_WRITEDATA = 1u << 15, /* FI_CXI_ENABLE_WRITEDATA with provider keys: fi_writedata supported */
};

enum ep_cntr_slot { EPC_SEND, EPC_RECV, EPC_READ, EPC_WRITE, EPC_REM_READ, EPC_REM_WRITE, EPC_COUNT };

struct ctl_ep_open_req {
	uint32_t nic_index;
	uint32_t pid;              /* requested, or 511 (C_PID_ANY) */
	uint32_t svc_id;
	uint32_t nvnis;
	uint16_t vnis[CXISIM_MAX_AUTH_KEYS];
	uint32_t cmdq;             /* queue ids (0: none) */
	uint32_t tx_evq, rx_evq;
	uint32_t cts[EPC_COUNT];
	uint32_t flags;            /* enum ep_open_flags */
	uint32_t pad0;
	uint64_t caps;             /* the endpoint's FI_* capabilities */
	uint32_t match_mode;       /* 0 hardware, 1 software, 2 hybrid */
	uint32_t tx_size, rx_size;
	uint32_t cq_fill_percent;
	uint32_t fc_retry_usec;
	uint32_t sw_rx_tx_init_max;
	uint32_t tclass;
	uint64_t rdzv_threshold, rdzv_get_min, rdzv_eager_size;
	uint64_t oflow_buf_size, oflow_buf_min_posted;
	uint64_t req_buf_size, req_buf_min_posted, req_buf_max_cached;
	uint64_t rnr_max_timeout_us;
	uint64_t min_multi_recv;
};

struct ctl_ep_open_rep {
	uint32_t id;
	uint32_t pid;
};

/* CTL_EP_CTRL: settings that may change after enable. */
enum ep_ctrl_op {
	EPCTRL_RNR_MAX_TIMEOUT = 1, /* value: microseconds */
	EPCTRL_MIN_MULTI_RECV = 2,  /* value: bytes; applies to multi-receive buffers posted afterwards */
	EPCTRL_TCLASS = 3,
	EPCTRL_GET_STATS = 4,       /* reply: struct ctl_ep_stats */
	EPCTRL_GET_RNR_APPEND_RETRIES = 5,
};

struct ctl_ep_ctrl_req {
	uint32_t id;
	uint32_t op;
	uint64_t value;
};

struct ctl_ep_stats {
	uint64_t total_rnr_nacks;
	uint64_t total_retries;
	uint64_t mr_hazards;
	uint64_t rnr_append_retries;
};

/* CTL_MR_REG */
enum mr_reg_flags {
	MRF_REMOTE_READ = 1u << 0,
	MRF_REMOTE_WRITE = 1u << 1,
	MRF_PROV_KEY = 1u << 2,
	MRF_OPTIMIZED = 1u << 3,
	MRF_CACHED = 1u << 4,       /* provider key cache: close leaves the memory exposed */
	MRF_MATCH_EVENTS = 1u << 5,
	MRF_RMA_EVENT = 1u << 6,    /* FI_RMA_EVENT: every remote access is reported (counters) */
	MRF_DOMAIN_KEY = 1u << 7,   /* a domain-scoped MR: the provider chose `key` (a client-style key) */
	MRF_CT_REMOTE_WRITE = 1u << 8, /* the bound counter counts remote writes (fi_mr_bind FI_REMOTE_WRITE) */
	MRF_CT_REMOTE_READ = 1u << 9,  /* ... and/or remote reads (FI_REMOTE_READ) */
	MRF_UNCACHED_MAP = 1u << 10,   /* its host mapping is not in the MR cache (virtual mode, provider/iomm.c):
					* upstream keeps it out of the provider key cache (cxip_mr_enable) */
};

struct ctl_mr_reg_req {
	uint32_t ep;
	uint32_t flags;
	uint64_t key;
	uint64_t addr;
	uint64_t len;
	uint32_t ct;                /* counter bound to the MR (0: none) */
	uint32_t pad;
	uint64_t context;           /* the MR's fid context: op_context of its target completions (fi_writedata) */
};

struct ctl_mr_reg_rep {
	uint32_t id;
	uint32_t optimized;
	uint64_t key;               /* the key remote peers use (provider keys are chosen by the NIC software) */
};

#endif
