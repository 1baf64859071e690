/* The NIC's DMA engine: PCIe timing, and moving bytes between packets and the owner's memory.
 *
 * Payload buffers travel with packets from one NIC to another, so they come from size-classed free lists
 * shared by the whole process rather than from one NIC's pool; messages above the largest class (bulk
 * transfers, whose wire time dwarfs an allocation) use malloc. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

simtime_t nic_dma_time(const struct nic *nic, uint64_t bytes)
{
	return (simtime_t)((double)bytes * nic->p->pcie_ps_per_byte + 0.5);
}

static simtime_t wire_time(const struct nic *nic, uint64_t bytes)
{
	const struct fabric *f = nic->fabric;
	return f && f->ops->wire_time ? f->ops->wire_time(f, (uint32_t)bytes) : 0;
}

/* Host reads (a Put's payload, a Get reply's data) stream to the wire through one channel per NIC: Cassini
 * keeps a bounded window of PCIe read requests outstanding, so it sources host memory at window / round
 * trip at most, and reads queue behind each other.  The fabric takes a message whole, so the message is
 * handed over when its serialization at line rate would end with the read's last byte (cut-through),
 * never before the first bytes come back.  Returns that hand-over delay from now; *done (optional) gets
 * the delay until the last byte is read (the source buffer is free). */
simtime_t nic_dma_read(struct nic *nic, uint64_t bytes, simtime_t after, simtime_t *done)
{
	simtime_t now = sim_now(nic->sim);
	simtime_t start = now + after;
	if (start < nic->dma_read_free)
		start = nic->dma_read_free;
	simtime_t stream = (simtime_t)((double)bytes * nic->p->dma_read_ps_per_byte + 0.5);
	nic->dma_read_free = start + stream;
	simtime_t wire = wire_time(nic, bytes);
	simtime_t first = start + nic->p->pcie_latency;
	if (done)
		*done = first + stream - now;
	return first + (stream > wire ? stream - wire : 0) - now;
}

/* Host writes of a message arriving from the fabric, as Cassini does them: each packet's payload is written
 * to host memory as the packet lands (the NIC holds packets, not messages), so the write stream follows the
 * arrivals -- at pcie_gbps when PCIe is the slower of the two -- and ends one packet's write after the
 * message's last byte arrived.  Used for both kinds of arriving data: a Get reply (initiator.c) and a
 * matched Put's payload (lpe.c, after its match; the target event follows the last write).  `m` has just
 * been delivered (now = its last byte); returns the delay from now until the last of `bytes` has been
 * written, the posted write's latency not included (callers that wait for visibility add pcie_latency).
 * Without a first-arrival time (loopback) or a packet size, or for one packet, the whole message is
 * written after it arrived. */
simtime_t nic_dma_write_stream(const struct nic *nic, const struct fabric_msg *m, uint64_t bytes)
{
	simtime_t now = sim_now(nic->sim);
	uint32_t mtu = fabric_mtu_bytes(nic->fabric);
	if (!mtu || !m->first_arrival || m->first_arrival > now || bytes <= mtu)
		return nic_dma_time(nic, bytes);
	uint64_t last = bytes % mtu ? bytes % mtu : mtu;
	simtime_t tail = nic_dma_time(nic, last);            /* the last packet, written after it landed */
	simtime_t stream = m->first_arrival + nic_dma_time(nic, bytes); /* PCIe-bound end of the whole stream */
	simtime_t end = stream > now + tail ? stream : now + tail;
	return end - now;
}

#define PAYLOAD_MIN_SHIFT 6  /* 64 B */
#define PAYLOAD_MAX_SHIFT 16 /* 64 KiB */
#define PAYLOAD_CLASSES (PAYLOAD_MAX_SHIFT - PAYLOAD_MIN_SHIFT + 1)
/* Under AddressSanitizer every payload is a malloc of its own, so a stale or second free is reported. */
#ifdef POOL_ASAN
#define PAYLOAD_DIRECT 1
#else
#define PAYLOAD_DIRECT 0
#endif

/* A payload block: the class index sits in front of the bytes. */
struct payload_hdr {
	union {
		struct payload_hdr *next;
		uint64_t cls;
	};
	uint64_t pad;
};

static struct payload_hdr *free_lists[PAYLOAD_CLASSES];

static unsigned payload_class(uint32_t len)
{
	unsigned c = 0;
	while (((uint32_t)1 << (PAYLOAD_MIN_SHIFT + c)) < len)
		c++;
	return c;
}

uint8_t *nic_payload_alloc(uint32_t len)
{
	if (len > (1u << PAYLOAD_MAX_SHIFT) || PAYLOAD_DIRECT) {
		struct payload_hdr *h = xmalloc(sizeof(*h) + len);
		h->cls = UINT64_MAX;
		return (uint8_t *)(h + 1);
	}
	unsigned c = payload_class(len);
	struct payload_hdr *h = free_lists[c];
	if (h)
		free_lists[c] = h->next;
	else
		h = xmalloc(sizeof(*h) + ((size_t)1 << (PAYLOAD_MIN_SHIFT + c)));
	h->cls = c;
	return (uint8_t *)(h + 1);
}

void nic_payload_free(uint8_t *p)
{
	if (!p)
		return;
	struct payload_hdr *h = (struct payload_hdr *)p - 1;
	if (h->cls == UINT64_MAX) {
		free(h);
		return;
	}
	unsigned c = (unsigned)h->cls;
	h->next = free_lists[c];
	free_lists[c] = h;
}

__attribute__((destructor)) static void payload_lists_free(void)
{
	for (unsigned c = 0; c < PAYLOAD_CLASSES; c++) {
		while (free_lists[c]) {
			struct payload_hdr *h = free_lists[c];
			free_lists[c] = h->next;
			free(h);
		}
	}
}

int nic_mem_read(struct nic_lni *lni, uint64_t addr, void *dst, uint64_t len)
{
	if (!lni->mem || !len)
		return 0;
	return lni->mem->read(lni->mem_ctx, addr, dst, len);
}

int nic_mem_write(struct nic_lni *lni, uint64_t addr, const void *src, uint64_t len)
{
	if (!lni->mem || !len)
		return 0;
	return lni->mem->write(lni->mem_ctx, addr, src, len);
}

static int host_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (!addr)
		return -EFAULT;
	memcpy(dst, (const void *)(uintptr_t)addr, len);
	return 0;
}

static int host_write(void *ctx, uint64_t addr, const void *src, size_t len)
{
	(void)ctx;
	if (!addr)
		return -EFAULT;
	memcpy((void *)(uintptr_t)addr, src, len);
	return 0;
}

const struct nic_mem_ops nic_mem_host = { host_read, host_write };
