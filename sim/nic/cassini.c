/* Names of Cassini enumerations, for telemetry columns, traces and error messages. */
#include <stdint.h>

#include "cassini.h"

const char *c_event_type_name(unsigned t)
{
	switch (t) {
	case C_EVENT_PUT: return "PUT";
	case C_EVENT_GET: return "GET";
	case C_EVENT_ATOMIC: return "ATOMIC";
	case C_EVENT_FETCH_ATOMIC: return "FETCH_ATOMIC";
	case C_EVENT_PUT_OVERFLOW: return "PUT_OVERFLOW";
	case C_EVENT_GET_OVERFLOW: return "GET_OVERFLOW";
	case C_EVENT_SEND: return "SEND";
	case C_EVENT_ACK: return "ACK";
	case C_EVENT_REPLY: return "REPLY";
	case C_EVENT_LINK: return "LINK";
	case C_EVENT_SEARCH: return "SEARCH";
	case C_EVENT_STATE_CHANGE: return "STATE_CHANGE";
	case C_EVENT_UNLINK: return "UNLINK";
	case C_EVENT_RENDEZVOUS: return "RENDEZVOUS";
	case C_EVENT_COMMAND_FAILURE: return "COMMAND_FAILURE";
	case C_EVENT_TRIGGERED_OP: return "TRIGGERED_OP";
	case C_EVENT_MATCH: return "MATCH";
	case C_EVENT_ERROR: return "ERROR";
	default: return "UNKNOWN";
	}
}

const char *c_rc_name(unsigned rc)
{
	switch (rc) {
	case C_RC_NO_EVENT: return "C_RC_NO_EVENT";
	case C_RC_OK: return "C_RC_OK";
	case C_RC_UNDELIVERABLE: return "C_RC_UNDELIVERABLE";
	case C_RC_PT_DISABLED: return "C_RC_PT_DISABLED";
	case C_RC_DROPPED: return "C_RC_DROPPED";
	case C_RC_PERM_VIOLATION: return "C_RC_PERM_VIOLATION";
	case C_RC_OP_VIOLATION: return "C_RC_OP_VIOLATION";
	case C_RC_NO_MATCH: return "C_RC_NO_MATCH";
	case C_RC_NO_SPACE: return "C_RC_NO_SPACE";
	case C_RC_ENTRY_NOT_FOUND: return "C_RC_ENTRY_NOT_FOUND";
	case C_RC_VNI_NOT_FOUND: return "C_RC_VNI_NOT_FOUND";
	case C_RC_PTLTE_NOT_FOUND: return "C_RC_PTLTE_NOT_FOUND";
	case C_RC_PTLTE_SW_MANAGED: return "C_RC_PTLTE_SW_MANAGED";
	case C_RC_MST_CANCELLED: return "C_RC_MST_CANCELLED";
	case C_RC_INVALID_AC: return "C_RC_INVALID_AC";
	case C_RC_ILLEGAL_OP: return "C_RC_ILLEGAL_OP";
	case C_RC_CMD_INVALID_ARG: return "C_RC_CMD_INVALID_ARG";
	case C_RC_ADDR_OUT_OF_RANGE: return "C_RC_ADDR_OUT_OF_RANGE";
	case C_RC_CANCELED: return "C_RC_CANCELED";
	default: return "C_RC_UNKNOWN";
	}
}

const char *c_ptlte_state_name(unsigned s)
{
	switch (s) {
	case C_PTLTE_RESET: return "RESET";
	case C_PTLTE_DISABLED: return "DISABLED";
	case C_PTLTE_ENABLED: return "ENABLED";
	case C_PTLTE_SOFTWARE_MANAGED: return "SOFTWARE_MANAGED";
	default: return "UNKNOWN";
	}
}

const char *c_sc_reason_name(unsigned r)
{
	switch (r) {
	case C_SC_FC_EQ_FULL: return "FC_EQ_FULL";
	case C_SC_FC_NO_MATCH: return "FC_NO_MATCH";
	case C_SC_FC_UNEXPECTED_FAIL: return "FC_UNEXPECTED_FAIL";
	case C_SC_FC_REQUEST_FULL: return "FC_REQUEST_FULL";
	case C_SC_SM_UNEXPECTED_FAIL: return "SM_UNEXPECTED_FAIL";
	case C_SC_SM_APPEND_FAIL: return "SM_APPEND_FAIL";
	case C_SC_DIS_UNCOR: return "DIS_UNCOR";
	case C_SC_NONE: return "NONE";
	default: return "UNKNOWN";
	}
}

const char *c_ptl_list_name(unsigned l)
{
	switch (l) {
	case C_PTL_LIST_PRIORITY: return "PRIORITY";
	case C_PTL_LIST_OVERFLOW: return "OVERFLOW";
	case C_PTL_LIST_REQUEST: return "REQUEST";
	case C_PTL_LIST_UNEXPECTED: return "UNEXPECTED";
	default: return "UNKNOWN";
	}
}
