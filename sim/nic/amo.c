/* The target NIC's AMO unit: what an atomic operation does to one element of host memory.
 *
 * Cassini executes AMOs in the NIC (cassini-reference, "fi_info" caps: ATOMICS): the target reads the
 * element over PCIe, applies the operation and writes it back, and a fetching AMO returns the previous value
 * in its reply.  The operations and types are Cassini's (cassini.h c_atomic_op / c_atomic_type); which ones
 * the unit executes is what upstream prov/cxi's valid table (cxip_atomic.c) offers on top of it.  Timing and
 * ordering are modelled in lpe.c (lpe_amo); this file is the arithmetic only. */
#include <complex.h>
#include <string.h>

#include "nic_impl.h"

uint32_t nic_amo_type_size(uint8_t type)
{
	switch (type) {
	case C_AMO_TYPE_INT8_T:
	case C_AMO_TYPE_UINT8_T: return 1;
	case C_AMO_TYPE_INT16_T:
	case C_AMO_TYPE_UINT16_T: return 2;
	case C_AMO_TYPE_INT32_T:
	case C_AMO_TYPE_UINT32_T:
	case C_AMO_TYPE_FLOAT_T: return 4;
	case C_AMO_TYPE_INT64_T:
	case C_AMO_TYPE_UINT64_T:
	case C_AMO_TYPE_DOUBLE_T:
	case C_AMO_TYPE_FLOAT_COMPLEX_T: return 8;
	case C_AMO_TYPE_DOUBLE_COMPLEX_T:
	case C_AMO_TYPE_UINT128_T: return 16;
	default: return 0;
	}
}

static bool type_is_int(uint8_t type)
{
	return type <= C_AMO_TYPE_UINT64_T;
}

static bool type_is_real(uint8_t type)
{
	return type_is_int(type) || type == C_AMO_TYPE_FLOAT_T || type == C_AMO_TYPE_DOUBLE_T;
}

bool nic_amo_valid(uint8_t op, uint8_t cswap, uint8_t type)
{
	if (!nic_amo_type_size(type))
		return false;
	switch (op) {
	case C_AMO_OP_MIN:
	case C_AMO_OP_MAX: return type_is_real(type);
	case C_AMO_OP_SUM: return type != C_AMO_TYPE_UINT128_T;
	case C_AMO_OP_LOR:
	case C_AMO_OP_LAND:
	case C_AMO_OP_LXOR:
	case C_AMO_OP_BOR:
	case C_AMO_OP_BAND:
	case C_AMO_OP_BXOR:
	case C_AMO_OP_AXOR: return type_is_int(type);
	case C_AMO_OP_SWAP: return true;
	case C_AMO_OP_CSWAP:
		if (cswap == C_AMO_OP_CSWAP_EQ || cswap == C_AMO_OP_CSWAP_NE)
			return true;
		return cswap < C_AMO_OP_CSWAP_LAST && type_is_real(type);
	default: return false;
	}
}

/* Integer and real operations, one body per C type (memcpy in and out: host memory need not be aligned). */
#define AMO_ORDERED(T)                                                                                      \
	static void amo_##T(uint8_t op, uint8_t cswap, void *tp, const void *p1, const void *p2)            \
	{                                                                                                   \
		T t, a, b;                                                                                  \
		memcpy(&t, tp, sizeof(T));                                                                  \
		memcpy(&a, p1, sizeof(T));                                                                  \
		memcpy(&b, p2, sizeof(T));                                                                  \
		bool swap = false;                                                                          \
		switch (op) {                                                                               \
		case C_AMO_OP_MIN: t = a < t ? a : t; break;                                                \
		case C_AMO_OP_MAX: t = a > t ? a : t; break;                                                \
		case C_AMO_OP_SUM: t = (T)(t + a); break;                                                   \
		case C_AMO_OP_SWAP: t = a; break;                                                           \
		case C_AMO_OP_CSWAP:                                                                        \
			switch (cswap) {                                                                    \
			case C_AMO_OP_CSWAP_EQ: swap = b == t; break;                                       \
			case C_AMO_OP_CSWAP_NE: swap = b != t; break;                                       \
			case C_AMO_OP_CSWAP_LE: swap = b <= t; break;                                       \
			case C_AMO_OP_CSWAP_LT: swap = b < t; break;                                        \
			case C_AMO_OP_CSWAP_GE: swap = b >= t; break;                                       \
			case C_AMO_OP_CSWAP_GT: swap = b > t; break;                                        \
			}                                                                                   \
			if (swap)                                                                           \
				t = a;                                                                      \
			break;                                                                              \
		default: amo_bits_##T(op, &t, a, b); break;                                                 \
		}                                                                                           \
		memcpy(tp, &t, sizeof(T));                                                                  \
	}

/* Logical and bitwise operations (integers only). */
#define AMO_BITS(T)                                                                                         \
	static void amo_bits_##T(uint8_t op, T *t, T a, T b)                                                \
	{                                                                                                   \
		switch (op) {                                                                               \
		case C_AMO_OP_LOR: *t = (T)(*t || a); break;                                                \
		case C_AMO_OP_LAND: *t = (T)(*t && a); break;                                               \
		case C_AMO_OP_LXOR: *t = (T)(!*t != !a); break;                                             \
		case C_AMO_OP_BOR: *t = (T)(*t | a); break;                                                 \
		case C_AMO_OP_BAND: *t = (T)(*t & a); break;                                                \
		case C_AMO_OP_BXOR: *t = (T)(*t ^ a); break;                                                \
		case C_AMO_OP_AXOR: *t = (T)((*t & (T)~b) ^ a); break;                                      \
		}                                                                                           \
	}

/* Floating types never reach the bitwise operations (nic_amo_valid). */
#define AMO_NOBITS(T)                                                                                       \
	static void amo_bits_##T(uint8_t op, T *t, T a, T b)                                                \
	{                                                                                                   \
		(void)op, (void)t, (void)a, (void)b;                                                        \
	}

AMO_BITS(int8_t)
AMO_BITS(uint8_t)
AMO_BITS(int16_t)
AMO_BITS(uint16_t)
AMO_BITS(int32_t)
AMO_BITS(uint32_t)
AMO_BITS(int64_t)
AMO_BITS(uint64_t)
AMO_NOBITS(float)
AMO_NOBITS(double)
AMO_ORDERED(int8_t)
AMO_ORDERED(uint8_t)
AMO_ORDERED(int16_t)
AMO_ORDERED(uint16_t)
AMO_ORDERED(int32_t)
AMO_ORDERED(uint32_t)
AMO_ORDERED(int64_t)
AMO_ORDERED(uint64_t)
AMO_ORDERED(float)
AMO_ORDERED(double)

/* Complex types: SUM, SWAP, CSWAP EQ/NE (equality of both parts). */
#define AMO_COMPLEX(T, NAME)                                                                                \
	static void amo_##NAME(uint8_t op, uint8_t cswap, void *tp, const void *p1, const void *p2)         \
	{                                                                                                   \
		T t, a, b;                                                                                  \
		memcpy(&t, tp, sizeof(T));                                                                  \
		memcpy(&a, p1, sizeof(T));                                                                  \
		memcpy(&b, p2, sizeof(T));                                                                  \
		if (op == C_AMO_OP_SUM)                                                                     \
			t = t + a;                                                                          \
		else if (op == C_AMO_OP_SWAP)                                                               \
			t = a;                                                                              \
		else if (op == C_AMO_OP_CSWAP && ((cswap == C_AMO_OP_CSWAP_EQ) == (b == t)))                \
			t = a;                                                                              \
		memcpy(tp, &t, sizeof(T));                                                                  \
	}

AMO_COMPLEX(float complex, cfloat)
AMO_COMPLEX(double complex, cdouble)

/* 128-bit: SWAP and CSWAP EQ/NE, bitwise. */
static void amo_u128(uint8_t op, uint8_t cswap, void *tp, const void *p1, const void *p2)
{
	bool eq = memcmp(tp, p2, 16) == 0;
	if (op == C_AMO_OP_SWAP || (op == C_AMO_OP_CSWAP && (cswap == C_AMO_OP_CSWAP_EQ) == eq))
		memcpy(tp, p1, 16);
}

void nic_amo_apply(uint8_t op, uint8_t cswap, uint8_t type, void *target, const void *op1, const void *op2)
{
	if (!nic_amo_valid(op, cswap, type))
		return;
	switch (type) {
	case C_AMO_TYPE_INT8_T: amo_int8_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_UINT8_T: amo_uint8_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_INT16_T: amo_int16_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_UINT16_T: amo_uint16_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_INT32_T: amo_int32_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_UINT32_T: amo_uint32_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_INT64_T: amo_int64_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_UINT64_T: amo_uint64_t(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_FLOAT_T: amo_float(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_DOUBLE_T: amo_double(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_FLOAT_COMPLEX_T: amo_cfloat(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_DOUBLE_COMPLEX_T: amo_cdouble(op, cswap, target, op1, op2); break;
	case C_AMO_TYPE_UINT128_T: amo_u128(op, cswap, target, op1, op2); break;
	}
}
