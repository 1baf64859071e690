/* Provider registration: the system libfabric dlopen()s libcxisim-fi.so from FI_PROVIDER_PATH and calls
 * fi_prov_ini(), which returns this provider under the name "cxi". */
#include <string.h>

#include "cxip.h"

static void cxip_cleanup(void)
{
	cxip_dev_fini();
}

struct fi_provider cxip_prov = {
	.name = CXIP_PROV_NAME,
	.version = CXIP_PROV_VERSION,
	.fi_version = CXIP_FI_VERSION,
	.getinfo = cxip_getinfo,
	.fabric = cxip_fabric_open,
	.cleanup = cxip_cleanup,
};

__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void);
__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
	cxip_env_init();
	return &cxip_prov;
}

/* ---- small helpers shared by every fid ---- */

int cxip_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

int cxip_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int cxip_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

/* NIC return codes (cassini-reference: VNI, MR and RNR sections) to libfabric errors. */
int cxip_rc_to_errno(int rc)
{
	switch (rc) {
	case 1: return 0;                     /* C_RC_OK */
	case 2: return FI_EHOSTUNREACH;       /* C_RC_UNDELIVERABLE */
	case 25: return FI_ENOTCONN;          /* C_RC_VNI_NOT_FOUND */
	case 26: return FI_EIO;               /* C_RC_PTLTE_NOT_FOUND */
	case 29: return FI_ECANCELED;         /* C_RC_MST_CANCELLED */
	case 54: return FI_ECANCELED;         /* C_RC_CANCELED */
	default: return FI_EIO;
	}
}
