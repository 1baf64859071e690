/* The NIC model's DMA engine reaching into real processes.  An address in a command or an LE is an
 * address in the owning process; the daemon moves the bytes with process_vm_readv/writev (the process
 * allowed it with PR_SET_PTRACER at attach).  A failed transfer (bad address, process gone) is an error
 * the NIC reports as C_RC_PERM_VIOLATION, never a daemon crash.
 *
 * Addresses with HOST_DAEMON_ADDR set name daemon memory: the inject payload of an RMA write, kept with
 * the operation until the NIC has fetched it (the IDC payload of a real command).  Clients cannot forge
 * them: endpoint.c rejects any command address with that bit. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "daemon.h"

#define USER_ADDR_END (1ULL << 57)

static int host_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct client *c = ctx;
	if (!len)
		return 0;
	if ((addr >> 62) == 1) {
		memcpy(dst, (const void *)(uintptr_t)(addr & ~HOST_DAEMON_ADDR), len);
		return 0;
	}
	if (c->dead)
		return -ESRCH;
	if (addr >= USER_ADDR_END)
		return -EFAULT;
	struct iovec local = { dst, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(c->pid, &local, 1, &remote, 1, 0);
	if (n != (ssize_t)len) {
		c->mem_faults++;
		return n < 0 ? -errno : -EFAULT;
	}
	c->bytes_read += len;
	return 0;
}

static int host_write(void *ctx, uint64_t addr, const void *src, size_t len)
{
	struct client *c = ctx;
	if (!len)
		return 0;
	if ((addr >> 62) == 1)
		return -EFAULT; /* daemon memory (inject payloads) is never a DMA destination */
	if (addr >= USER_ADDR_END)
		return -EFAULT;
	if (c->dead)
		return -ESRCH;
	struct iovec local = { (void *)src, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(c->pid, &local, 1, &remote, 1, 0);
	if (n != (ssize_t)len) {
		c->mem_faults++;
		return n < 0 ? -errno : -EFAULT;
	}
	c->bytes_written += len;
	return 0;
}

const struct nic_mem_ops host_mem_ops = { host_read, host_write };
