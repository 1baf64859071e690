/* The layout of a memory region's remote key, shared by the daemon's provider software (which makes keys
 * and steers RMA by them) and the provider library (which refuses a key no MR can have before it queues
 * the operation, as upstream's RMA and atomic calls do with -FI_EKEYREJECTED).
 *   client keys: below 2^32 (4 bytes); 0..SW_MR_OPT_KEYS-1 may be optimized;
 *   provider keys: SW_KEY_PROV | [SW_KEY_OPT] | id, id below 2^32, optimized ones below SW_MR_PROV_OPT_IDS;
 *   provider-key-cached MRs: SW_KEY_CACHED | the region's address (56 bits). */
#ifndef CXISIM_MR_KEY_H
#define CXISIM_MR_KEY_H

#include <stdbool.h>
#include <stdint.h>

#define SW_KEY_CACHED (1ULL << 62)
#define SW_KEY_ADDR_MASK ((1ULL << 56) - 1)
#define SW_KEY_PROV (1ULL << 61)      /* a provider key (not cached) */
#define SW_KEY_OPT (1ULL << 60)       /* a provider key of an optimized MR (the initiator picks the PtlTE from it) */
#define SW_KEY_WRITEDATA (1ULL << 59) /* fi_writedata's match bits: the MR's second LE, which reports */
#define SW_MR_OPT_KEYS 100            /* client keys 0..99 may be optimized */
#define SW_MR_PROV_OPT_IDS 92         /* provider keys with id < 92 may be optimized */

/* Whether some MR could have this key.  An optimized provider key names its PtlTE by its id, so an id out
 * of range would address a portal index no MR owns (the command would be refused by the NIC). */
static inline bool sw_mr_key_valid(uint64_t key)
{
	if (key & SW_KEY_CACHED)
		return (key & ~(SW_KEY_CACHED | SW_KEY_ADDR_MASK)) == 0;
	if (key & SW_KEY_PROV) {
		uint64_t id = key & ~(SW_KEY_PROV | SW_KEY_OPT);
		return (key & SW_KEY_OPT) ? id < SW_MR_PROV_OPT_IDS : id < (1ULL << 32);
	}
	return key < (1ULL << 32);
}

#endif
