/* Command and event formats of the provider <-> daemon data path (see proto.h).
 *
 * A command is one 64-byte slot (struct cxs_cmd), followed for inject/IDC sends and RMA writes by the
 * payload in further slots, as a Cassini IDC command carries its payload.  The daemon hands each command
 * to the NIC model's software layer for the endpoint, which turns it into NIC commands (Put, Get, LE
 * appends...) exactly as the simulated workloads' endpoints do.
 *
 * An event is one 64-byte slot (struct cxs_evt) or two when it carries an error (struct cxs_evt_err
 * follows in the second slot).  Events are completions of the endpoint's operations as the provider's
 * software layer produces them from NIC events.
 */
#ifndef CXISIM_CMD_H
#define CXISIM_CMD_H

#include <stdint.h>

enum cxs_cmd_op {
	CXS_CMD_SEND = 1,   /* untagged or tagged send (flags) */
	CXS_CMD_RECV,       /* post a receive */
	CXS_CMD_WRITE,      /* RMA write */
	CXS_CMD_READ,       /* RMA read */
	CXS_CMD_CANCEL,     /* cancel a posted receive by context */
	CXS_CMD_NOOP,
	CXS_CMD_ATOMIC,     /* atomic on one element (struct cxs_amo in slot 1) */
	CXS_CMD_MAX
};

/* Command flags (a subset of the FI_* op flags, renumbered so that the daemon does not depend on
 * libfabric's headers). */
enum cxs_cmd_flags {
	CXS_F_TAGGED = 1u << 0,
	CXS_F_REMOTE_CQ_DATA = 1u << 1,
	CXS_F_INJECT = 1u << 2,       /* payload inline, no buffer to read */
	CXS_F_COMPLETION = 1u << 3,   /* generate a completion event (else only errors) */
	CXS_F_MULTI_RECV = 1u << 4,
	CXS_F_PEEK = 1u << 5,
	CXS_F_CLAIM = 1u << 6,
	CXS_F_DISCARD = 1u << 7,
	CXS_F_DIRECTED = 1u << 8,     /* receive only from src (FI_DIRECTED_RECV) */
	CXS_F_DELIVERY = 1u << 9,     /* FI_DELIVERY_COMPLETE */
	CXS_F_FENCE = 1u << 10,
	CXS_F_MORE = 1u << 11,
	CXS_F_TRUNC_OK = 1u << 12,
	CXS_F_TRIGGER = 1u << 13,     /* provider-internal: a triggered operation, sent with CTL_TRIG_QUEUE */
};

struct cxs_cmd {
	uint16_t op;        /* ring_entry_hdr.op */
	uint16_t nslots;    /* ring_entry_hdr.nslots */
	uint16_t tslot;     /* issuing thread's slot in the process control block */
	uint16_t vni;       /* VNI to use (sends/RMA); the endpoint's own for receives */
	uint32_t flags;     /* enum cxs_cmd_flags */
	uint32_t peer;      /* C_MATCH_ID(nic, pid) of the destination / source filter */
	uint64_t vt;        /* virtual timestamp (0 in realtime mode) */
	uint64_t context;   /* provider's request handle, echoed in events */
	uint64_t addr;      /* local buffer */
	uint64_t len;
	uint64_t tag;       /* tagged: tag; RMA: remote key */
	uint64_t aux;       /* tagged recv: ignore bits; send: remote CQ data; RMA: remote address/offset */
};
_Static_assert(sizeof(struct cxs_cmd) == 64, "a command header is one 64-B slot");

/* Second slot of CXS_CMD_ATOMIC (the first has addr = result buffer or 0, len = element size, tag = remote
 * key, aux = remote address): the NIC's AMO operation, comparison and type codes (sim/nic/cassini.h), and the
 * operands, as an IDC AMO command carries them. */
struct cxs_amo {
	uint8_t op, cswap, type, fetch;
	uint8_t pad[28];
	uint8_t operands[32]; /* op1 (16 bytes) then op2 (16 bytes) */
};
_Static_assert(sizeof(struct cxs_amo) == 64, "the AMO operands are one 64-B slot");

/* Second slot of a send with both CQ data and tagged recv... not needed: sends use aux for data and tag
 * for the tag.  RMA writedata carries its CQ data in the first 8 bytes of the payload area instead. */

enum cxs_evt_kind {
	CXS_EVT_COMP = 1,    /* successful completion */
	CXS_EVT_ERR = 2,     /* error completion (struct cxs_evt_err follows) */
	CXS_EVT_CTRL = 3,    /* endpoint-level notice (e.g. enable finished) */
};

/* Event flags: the FI_* completion flags, renumbered. */
enum cxs_evt_flags {
	CXS_EF_SEND = 1u << 0,
	CXS_EF_RECV = 1u << 1,
	CXS_EF_TAGGED = 1u << 2,
	CXS_EF_MSG = 1u << 3,
	CXS_EF_RMA = 1u << 4,
	CXS_EF_READ = 1u << 5,
	CXS_EF_WRITE = 1u << 6,
	CXS_EF_REMOTE_READ = 1u << 7,
	CXS_EF_REMOTE_WRITE = 1u << 8,
	CXS_EF_REMOTE_CQ_DATA = 1u << 9,
	CXS_EF_MULTI_RECV = 1u << 10,
	CXS_EF_SOURCE = 1u << 11,      /* src (nic, pid, vni) is valid */
	CXS_EF_TRUNC = 1u << 12,
	CXS_EF_CLAIM = 1u << 13,       /* peeked message was claimed: context now owns it */
	CXS_EF_ATOMIC = 1u << 14,
};

struct cxs_evt {
	uint16_t op;        /* ring_entry_hdr.op: enum cxs_evt_kind */
	uint16_t nslots;
	uint16_t src_vni;
	uint16_t flags;     /* enum cxs_evt_flags */
	uint32_t src;       /* C_MATCH_ID(nic, pid) of the initiator (receives) */
	uint32_t ep;        /* daemon id of the endpoint the completion belongs to */
	uint64_t context;   /* the command's context */
	uint64_t len;
	uint64_t buf;       /* receives: where data landed (multi-recv: inside the buffer) */
	uint64_t data;      /* remote CQ data */
	uint64_t tag;
	uint64_t vt;        /* virtual time of the completion (ps) */
};
_Static_assert(sizeof(struct cxs_evt) == 64, "an event is one 64-B slot");

struct cxs_evt_err {
	int32_t err;        /* positive FI_E* value */
	int32_t prov_errno; /* the NIC return code (C_RC_*) */
	uint64_t olen;      /* truncated bytes */
	uint32_t err_nic;   /* FI_SOURCE_ERR: unknown source's address */
	uint32_t err_pid;
	uint16_t err_vni;
	uint16_t pad[3];
	uint64_t pad2[4];
};
_Static_assert(sizeof(struct cxs_evt_err) == 64, "error detail is one 64-B slot");

/* Positive error numbers carried in events, equal to libfabric's FI_E* (which equal errno values). */
#define CXS_EIO 5
#define CXS_ECANCELED 125
#define CXS_ETRUNC 265
#define CXS_ENOMSG 42
#define CXS_EADDRNOTAVAIL 99
#define CXS_ENOTCONN 107
#define CXS_EHOSTUNREACH 113
#define CXS_EACCES 13
#define CXS_EKEYREJECTED 129

#endif
