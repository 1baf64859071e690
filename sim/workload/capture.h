/* Capture files: what the processes of a real run did on the fabric, as the emulation daemon saw it
 * (`cxisim capture -- CMD`), for the replay workload (replay.c) and the Python reader
 * (analysis/cxisim/capture.py).  Format version 1, specified in docs/replay.md; this header is its
 * reference layout.
 *
 *   file    = header, record*, end record
 *   header  = "CXSIMCAP" (8 bytes), u32 version, u32 header bytes (32), u64 flags (0), u64 reserved (0)
 *   record  = u16 type, u16 reserved (0), u32 body bytes, body, zeros to the next multiple of 8 bytes
 *   end     = record of type CAP_END: u64 records before it, u32 CRC-32 (IEEE) of every byte before the
 *             end record, u32 reserved
 *
 * Integers are little-endian; a body is the fixed part of its type (the structs below, packed, sizes
 * asserted) followed, for some types, by variable bytes (payload, memory image).  A reader checks the magic,
 * the version, that every record lies inside the file and is long enough for its type, that the end record
 * is there, counts the records and matches the CRC: a foreign, truncated or corrupt file is refused with a
 * message naming the problem.  Record types a reader does not know are skipped (a later minor addition);
 * a change to an existing layout bumps the version.
 *
 * Times are the daemon's virtual time in picoseconds. */
#ifndef CXISIM_WORKLOAD_CAPTURE_H
#define CXISIM_WORKLOAD_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CAP_MAGIC "CXSIMCAP"
#define CAP_VERSION 1
#define CAP_HEADER_BYTES 32

enum cap_type {
	CAP_PROC = 1,     /* an attached process */
	CAP_EP = 2,       /* an endpoint it enabled */
	CAP_SEND = 3,     /* a message sent (fi_send/fi_senddata/fi_tsend/inject): + payload bytes */
	CAP_RECV = 4,     /* a receive posted */
	CAP_COMP = 5,     /* a receive completed (what the process read from its CQ) */
	CAP_RMA = 6,      /* an RMA issued (read or write) */
	CAP_MR = 7,       /* a memory region registered (the key peers use) */
	CAP_MR_IMAGE = 8, /* an MR's contents: + the bytes */
	CAP_MR_CLOSE = 9, /* an MR closed */
	CAP_END = 0xffff,
};

/* Flags of CAP_SEND / CAP_RECV / CAP_COMP / CAP_RMA */
enum cap_flags {
	CAPF_TAGGED = 1u << 0,
	CAPF_CQ_DATA = 1u << 1,   /* immediate data (fi_senddata, fi_tsenddata, fi_writedata) */
	CAPF_INJECT = 1u << 2,
	CAPF_TRUNCATED = 1u << 3, /* payload / image shorter than the message / region (capture limit) */
	CAPF_MULTI_RECV = 1u << 4,
	CAPF_DIRECTED = 1u << 5,
	CAPF_READ = 1u << 6,      /* CAP_RMA: a read (else a write) */
	CAPF_ERROR = 1u << 7,     /* CAP_COMP: an error completion (err in the record) */
};

enum cap_image_kind {
	CAP_IMAGE_EXPOSED = 0, /* as the first request after the registration went out: what the server reads */
	CAP_IMAGE_CLOSED = 1,  /* at close: what the server wrote */
};

struct cap_file_header {
	char magic[8];
	uint32_t version;
	uint32_t header_bytes;
	uint64_t flags;
	uint64_t reserved;
};

struct cap_rec_header {
	uint16_t type;
	uint16_t reserved;
	uint32_t len;
};

struct cap_proc {
	uint32_t proc;      /* capture-local id */
	int32_t rank;       /* launcher rank, -1 */
	int32_t os_pid;
	uint32_t node;      /* emulation node */
	char progname[64];
};

struct cap_ep {
	uint32_t ep;        /* capture-local id */
	uint32_t proc;
	uint32_t nic;       /* fabric NIC address */
	uint16_t pid;
	uint16_t vni;       /* the VNI it sends with */
	uint64_t caps;      /* FI_* */
	uint32_t ep_flags;  /* the daemon's ep_open_flags (proto.h): RNR, FI_SOURCE, key modes ... */
	uint32_t match_mode; /* 0 hardware, 1 software, 2 hybrid */
};

struct cap_send {
	uint32_t ep;
	uint32_t flags;
	uint64_t t;
	uint64_t think;     /* time since the receive completion that came last before it (0: none since the
			       previous send: the message went out back to back) */
	uint32_t dst_nic;
	uint16_t dst_pid;
	uint16_t dst_vni;
	uint64_t tag;
	uint64_t data;
	uint64_t len;
	uint64_t payload_len; /* bytes following */
};

struct cap_recv {
	uint32_t ep;
	uint32_t flags;
	uint64_t t;
	uint64_t tag;
	uint64_t ignore;
	uint64_t len;
};

struct cap_comp {
	uint32_t ep;
	uint32_t flags;
	uint64_t t;
	uint64_t tag;
	uint64_t data;
	uint64_t len;
	uint32_t src_nic;
	uint16_t src_pid;
	uint16_t err;       /* positive FI_E*, with CAPF_ERROR */
};

struct cap_rma {
	uint32_t ep;
	uint32_t flags;
	uint64_t t;
	uint32_t dst_nic;
	uint16_t dst_pid;
	uint16_t dst_vni;
	uint64_t key;
	uint64_t offset;
	uint64_t len;
	uint64_t data;
};

struct cap_mr {
	uint32_t mr;        /* capture-local id */
	uint32_t ep;
	uint64_t t;
	uint64_t key;       /* as the peers use it */
	uint64_t addr;      /* in the process */
	uint64_t len;
	uint32_t access;    /* the daemon's mr_reg_flags (proto.h) */
	uint32_t reserved;
};

struct cap_mr_image {
	uint32_t mr;
	uint32_t kind;      /* enum cap_image_kind */
	uint64_t t;
	uint32_t flags;     /* CAPF_TRUNCATED */
	uint32_t reserved;
	uint64_t bytes;     /* bytes following (from the start of the region) */
};

struct cap_mr_close {
	uint32_t mr;
	uint32_t reserved;
	uint64_t t;
};

struct cap_end {
	uint64_t records;
	uint32_t crc;
	uint32_t reserved;
};

_Static_assert(sizeof(struct cap_file_header) == CAP_HEADER_BYTES, "capture header");
_Static_assert(sizeof(struct cap_rec_header) == 8, "record header");
_Static_assert(sizeof(struct cap_proc) == 80, "cap_proc");
_Static_assert(sizeof(struct cap_ep) == 32, "cap_ep");
_Static_assert(sizeof(struct cap_send) == 64, "cap_send");
_Static_assert(sizeof(struct cap_recv) == 40, "cap_recv");
_Static_assert(sizeof(struct cap_comp) == 48, "cap_comp");
_Static_assert(sizeof(struct cap_rma) == 56, "cap_rma");
_Static_assert(sizeof(struct cap_mr) == 48, "cap_mr");
_Static_assert(sizeof(struct cap_mr_image) == 32, "cap_mr_image");
_Static_assert(sizeof(struct cap_mr_close) == 16, "cap_mr_close");
_Static_assert(sizeof(struct cap_end) == 16, "cap_end");

/* Fixed body size of a type; 0 for types this build does not know. */
size_t cap_fixed_size(uint16_t type);

/* ---- writing (the daemon) ---- */
struct cap_writer;
/* NULL with a message in err. */
struct cap_writer *cap_writer_open(const char *path, char *err, size_t errlen);
/* One record: the fixed part of its type, then `var_len` variable bytes. */
void cap_write(struct cap_writer *w, uint16_t type, const void *fixed, const void *var, uint64_t var_len);
/* Writes the end record and closes; 0, or -1 with errno. */
int cap_writer_close(struct cap_writer *w);

/* ---- reading ---- */
struct cap_file {
	unsigned char *data;
	size_t size;
	uint32_t version;
	uint64_t records;
};
struct cap_rec {
	uint16_t type;
	const void *fixed;     /* the fixed part (8-byte aligned inside the file buffer) */
	const unsigned char *var;
	uint64_t var_len;
};
/* Reads and checks the whole file.  0, or -1 with a one-line reason in err (foreign, truncated, corrupt). */
int cap_open(const char *path, struct cap_file *f, char *err, size_t errlen);
void cap_close(struct cap_file *f);
/* Iterates over the records (the end record excluded); *off starts at 0. */
bool cap_next(const struct cap_file *f, size_t *off, struct cap_rec *r);

uint32_t cap_crc32(uint32_t crc, const void *buf, size_t len);

#endif
