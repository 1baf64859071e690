/* Cassini hardware constants and enumerations, with the numeric values of the real ASIC.
 *
 * Values come from HPE's public shs-cassini-headers (cassini_user_defs.h, cxi_prov_hw.h) as summarized in
 * docs/cassini-reference.md.  They are facts about the hardware interface, restated here so every layer of
 * cxisim (NIC model, provider software layer, libfabric provider, daemon) speaks the same numbers and a
 * trace can be compared with a real NIC's.  Only the subset cxisim models is listed.
 */
#ifndef CXISIM_CASSINI_H
#define CXISIM_CASSINI_H

/* Resource counts of one Cassini (cassini-reference: Hardware constants). */
#define C_NUM_PTLTES 2048
#define C_NUM_EQS 2048
#define C_NUM_CTS 2048
#define C_NUM_TLES 2048 /* trigger list entries (shs-cassini-headers cassini_user_defs.h) */
#define C_NUM_ACS 1024
#define C_NUM_TXQS 1024
#define C_NUM_TGQS 512
#define C_NUM_LACS 8
#define C_NUM_RGIDS 256
#define C_PE_COUNT 4              /* list-processing engines */
#define C_LES_PER_PE 16384        /* 65,536 LEs in all */
#define C_LE_POOLS_PER_PE 16      /* pool index = pe * 16 + pool */
#define C_LE_POOLS (C_PE_COUNT * C_LE_POOLS_PER_PE)
#define C_EVENT_BYTES 64          /* every modelled EQ slot is a 64-B (long) event */
#define C_CMD_SLOT_BYTES 64
#define C_MAX_IDC_PAYLOAD_UNR 192 /* IDC payload, unrestricted */
#define C_MAX_IDC_PAYLOAD_RES 224 /* IDC payload, restricted */

/* Addressing: a process (match id) is nic:20 | pid:9; each pid owns 256 portal indexes. */
#define C_PID_BITS 9
#define C_PID_ANY ((1u << C_PID_BITS) - 1) /* 511 */
#define C_NIC_BITS 20
#define C_PID_GRANULE 256
#define C_MATCH_ID(nic, pid) ((((uint32_t)(nic)) << C_PID_BITS) | ((uint32_t)(pid)))
#define C_MATCH_ID_NIC(id) ((uint32_t)(id) >> C_PID_BITS)
#define C_MATCH_ID_PID(id) ((uint32_t)(id) & ((1u << C_PID_BITS) - 1))
#define C_MATCH_ID_ANY C_MATCH_ID((1u << C_NIC_BITS) - 1, C_PID_ANY)

enum c_ptl_list {
	C_PTL_LIST_PRIORITY = 0,
	C_PTL_LIST_OVERFLOW = 1,
	C_PTL_LIST_REQUEST = 2,
	C_PTL_LIST_UNEXPECTED = 3,
};

enum c_ptlte_state {
	C_PTLTE_RESET = 0,
	C_PTLTE_DISABLED = 1,
	C_PTLTE_ENABLED = 2,
	C_PTLTE_SOFTWARE_MANAGED = 3,
};

/* Reason carried by a STATE_CHANGE event that the NIC made on its own (sc_nic_auto). */
enum c_sc_reason {
	C_SC_FC_EQ_FULL = 0,
	C_SC_FC_NO_MATCH = 1,
	C_SC_FC_UNEXPECTED_FAIL = 2,
	C_SC_FC_REQUEST_FULL = 3,
	C_SC_SM_UNEXPECTED_FAIL = 4,
	C_SC_SM_APPEND_FAIL = 5,
	C_SC_DIS_UNCOR = 6,
	C_SC_NONE = 15, /* cxisim: a state change requested by software (sc_nic_auto == 0) */
};

enum c_event_type {
	C_EVENT_PUT = 0,
	C_EVENT_GET = 1,
	C_EVENT_ATOMIC = 2,
	C_EVENT_FETCH_ATOMIC = 3,
	C_EVENT_PUT_OVERFLOW = 4,
	C_EVENT_GET_OVERFLOW = 5,
	C_EVENT_SEND = 8,
	C_EVENT_ACK = 9,
	C_EVENT_REPLY = 10,
	C_EVENT_LINK = 11,
	C_EVENT_SEARCH = 12,
	C_EVENT_STATE_CHANGE = 13,
	C_EVENT_UNLINK = 14,
	C_EVENT_RENDEZVOUS = 15,
	C_EVENT_COMMAND_FAILURE = 17,
	C_EVENT_TRIGGERED_OP = 18,
	C_EVENT_MATCH = 21,
	C_EVENT_ERROR = 28,
	C_EVENT_TYPES = 32,
};

enum c_return_code {
	C_RC_NO_EVENT = 0,
	C_RC_OK = 1,
	C_RC_UNDELIVERABLE = 2,
	C_RC_PT_DISABLED = 3,
	C_RC_DROPPED = 4,
	C_RC_PERM_VIOLATION = 5,
	C_RC_OP_VIOLATION = 6,
	C_RC_NO_MATCH = 8,
	C_RC_NO_SPACE = 16,
	C_RC_ENTRY_NOT_FOUND = 18,
	C_RC_VNI_NOT_FOUND = 25,
	C_RC_PTLTE_NOT_FOUND = 26,
	C_RC_PTLTE_SW_MANAGED = 27,
	C_RC_MST_CANCELLED = 29,
	C_RC_INVALID_AC = 33,
	C_RC_ILLEGAL_OP = 46,
	C_RC_CMD_INVALID_ARG = 50,
	C_RC_ADDR_OUT_OF_RANGE = 52,
	C_RC_CANCELED = 54,
};

/* LE/ME option bits of a target Append command (same bit values as the hardware's C_LE_* flags). */
#define C_LE_EVENT_CT_BYTES (1u << 0)
#define C_LE_EVENT_CT_OVERFLOW (1u << 1)
#define C_LE_EVENT_CT_COMM (1u << 2)
#define C_LE_EVENT_UNLINK_DISABLE (1u << 3)
#define C_LE_EVENT_SUCCESS_DISABLE (1u << 4)
#define C_LE_EVENT_COMM_DISABLE (1u << 5)
#define C_LE_EVENT_LINK_DISABLE (1u << 6)
#define C_LE_UNRESTRICTED_END_RO (1u << 7)
#define C_LE_UNRESTRICTED_BODY_RO (1u << 8)
#define C_LE_UNEXPECTED_HDR_DISABLE (1u << 9)
#define C_LE_USE_ONCE (1u << 10)
#define C_LE_NO_TRUNCATE (1u << 11)
#define C_LE_MANAGE_LOCAL (1u << 12)
#define C_LE_OP_GET (1u << 13)
#define C_LE_OP_PUT (1u << 14)
#define C_LE_RESTART_SEQ (1u << 15)

/* AMO operations, comparisons of C_AMO_OP_CSWAP, and operand types (Cassini's names; upstream prov/cxi
 * maps libfabric's fi_op/fi_datatype onto them, cxip_atomic.c).  An AMO acts on one element of the type. */
enum c_atomic_op {
	C_AMO_OP_MIN = 0,
	C_AMO_OP_MAX = 1,
	C_AMO_OP_SUM = 2,
	C_AMO_OP_LOR = 4,
	C_AMO_OP_LAND = 5,
	C_AMO_OP_BOR = 6,
	C_AMO_OP_BAND = 7,
	C_AMO_OP_LXOR = 8,
	C_AMO_OP_BXOR = 9,
	C_AMO_OP_SWAP = 10,
	C_AMO_OP_CSWAP = 11,
	C_AMO_OP_AXOR = 12, /* target = (target & ~op2) ^ op1: libfabric FI_MSWAP with op1 = buf & mask, op2 = mask */
	C_AMO_OP_LAST,
};

enum c_cswap_op { /* target = op1 if (op2 <cmp> target), the comparison libfabric's FI_CSWAP_* define */
	C_AMO_OP_CSWAP_EQ = 0,
	C_AMO_OP_CSWAP_NE = 1,
	C_AMO_OP_CSWAP_LE = 2,
	C_AMO_OP_CSWAP_LT = 3,
	C_AMO_OP_CSWAP_GE = 4,
	C_AMO_OP_CSWAP_GT = 5,
	C_AMO_OP_CSWAP_LAST,
};

enum c_atomic_type {
	C_AMO_TYPE_INT8_T = 0,
	C_AMO_TYPE_UINT8_T,
	C_AMO_TYPE_INT16_T,
	C_AMO_TYPE_UINT16_T,
	C_AMO_TYPE_INT32_T,
	C_AMO_TYPE_UINT32_T,
	C_AMO_TYPE_INT64_T,
	C_AMO_TYPE_UINT64_T,
	C_AMO_TYPE_FLOAT_T,
	C_AMO_TYPE_FLOAT_COMPLEX_T,
	C_AMO_TYPE_DOUBLE_T,
	C_AMO_TYPE_DOUBLE_COMPLEX_T,
	C_AMO_TYPE_UINT128_T,
	C_AMO_TYPE_LAST,
};

#define C_AMO_OPERAND_BYTES 16 /* each of op1 and op2 (the largest type: double complex, 128-bit) */

const char *c_event_type_name(unsigned t);
const char *c_rc_name(unsigned rc);
const char *c_ptlte_state_name(unsigned s);
const char *c_sc_reason_name(unsigned r);
const char *c_ptl_list_name(unsigned l);

#endif
