/* Capture files (format in capture.h and docs/replay.md): the writer the emulation daemon uses, and the
 * checked reader of the replay workload. */
#include "capture.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"

#define PAD8(n) (((n) + 7) & ~(uint64_t)7)

static const size_t fixed_sizes[] = {
	[CAP_PROC] = sizeof(struct cap_proc),       [CAP_EP] = sizeof(struct cap_ep),
	[CAP_SEND] = sizeof(struct cap_send),       [CAP_RECV] = sizeof(struct cap_recv),
	[CAP_COMP] = sizeof(struct cap_comp),       [CAP_RMA] = sizeof(struct cap_rma),
	[CAP_MR] = sizeof(struct cap_mr),           [CAP_MR_IMAGE] = sizeof(struct cap_mr_image),
	[CAP_MR_CLOSE] = sizeof(struct cap_mr_close),
};

size_t cap_fixed_size(uint16_t type)
{
	if (type == CAP_END)
		return sizeof(struct cap_end);
	return type < ARRAY_SIZE(fixed_sizes) ? fixed_sizes[type] : 0;
}

/* Where the variable length of a record type is kept in its fixed part. */
static uint64_t var_len_of(uint16_t type, const void *fixed)
{
	switch (type) {
	case CAP_SEND: return ((const struct cap_send *)fixed)->payload_len;
	case CAP_MR_IMAGE: return ((const struct cap_mr_image *)fixed)->bytes;
	default: return 0;
	}
}

uint32_t cap_crc32(uint32_t crc, const void *buf, size_t len)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	const unsigned char *p = buf;
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---------------------------------------------------------------------------------------- writing */

struct cap_writer {
	FILE *f;
	uint32_t crc;
	uint64_t records;
	bool failed;
};

static void put(struct cap_writer *w, const void *p, size_t n)
{
	if (!n)
		return;
	w->crc = cap_crc32(w->crc, p, n);
	if (fwrite(p, 1, n, w->f) != n)
		w->failed = true;
}

static void put_pad(struct cap_writer *w, uint64_t n)
{
	static const unsigned char zero[8];
	put(w, zero, (size_t)(PAD8(n) - n));
}

struct cap_writer *cap_writer_open(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct cap_writer *w = xcalloc(1, sizeof(*w));
	w->f = f;
	struct cap_file_header h = { .version = CAP_VERSION, .header_bytes = CAP_HEADER_BYTES };
	memcpy(h.magic, CAP_MAGIC, 8);
	put(w, &h, sizeof(h));
	return w;
}

void cap_write(struct cap_writer *w, uint16_t type, const void *fixed, const void *var, uint64_t var_len)
{
	if (!w)
		return;
	size_t fl = cap_fixed_size(type);
	uint64_t len = fl + var_len;
	struct cap_rec_header rh = { .type = type, .len = (uint32_t)len };
	put(w, &rh, sizeof(rh));
	put(w, fixed, fl);
	put(w, var, (size_t)var_len);
	put_pad(w, len);
	w->records++;
}

int cap_writer_close(struct cap_writer *w)
{
	if (!w)
		return 0;
	struct cap_end e = { .records = w->records, .crc = w->crc };
	struct cap_rec_header rh = { .type = CAP_END, .len = sizeof(e) };
	put(w, &rh, sizeof(rh));
	put(w, &e, sizeof(e));
	bool failed = w->failed;
	if (fclose(w->f))
		failed = true;
	free(w);
	if (failed) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- reading */

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int check(struct cap_file *f, char *err, size_t errlen)
{
	struct cap_file_header h;
	if (f->size < 8 || memcmp(f->data, CAP_MAGIC, 8))
		return fail(err, errlen, "not a cxisim capture file (no %s magic)", CAP_MAGIC);
	if (f->size < sizeof(h))
		return fail(err, errlen, "truncated capture: %zu bytes, shorter than its header", f->size);
	memcpy(&h, f->data, sizeof(h));
	if (h.version != CAP_VERSION)
		return fail(err, errlen, "capture format version %u; this build reads version %u", h.version,
			    CAP_VERSION);
	if (h.header_bytes != CAP_HEADER_BYTES)
		return fail(err, errlen, "corrupt capture: header size %u", h.header_bytes);
	f->version = h.version;
	size_t off = CAP_HEADER_BYTES;
	uint64_t n = 0;
	for (;;) {
		struct cap_rec_header rh;
		if (off + sizeof(rh) > f->size)
			return fail(err, errlen, "truncated capture: no end record after %llu records (byte %zu of %zu)",
				    (unsigned long long)n, off, f->size);
		memcpy(&rh, f->data + off, sizeof(rh));
		size_t body = off + sizeof(rh);
		if ((uint64_t)body + PAD8(rh.len) > f->size && rh.type != CAP_END)
			return fail(err, errlen, "truncated capture: record %llu (type %u) at byte %zu ends past the end "
				    "of the file", (unsigned long long)n, rh.type, off);
		size_t fl = cap_fixed_size(rh.type);
		if (rh.type == CAP_END) {
			struct cap_end e;
			if (rh.len != sizeof(e) || body + sizeof(e) > f->size)
				return fail(err, errlen, "truncated capture: incomplete end record at byte %zu", off);
			memcpy(&e, f->data + body, sizeof(e));
			if (e.records != n)
				return fail(err, errlen, "corrupt capture: end record counts %llu records, the file has %llu",
					    (unsigned long long)e.records, (unsigned long long)n);
			if (e.crc != cap_crc32(0, f->data, off))
				return fail(err, errlen, "corrupt capture: checksum mismatch");
			if (body + sizeof(e) != f->size)
				return fail(err, errlen, "corrupt capture: %zu bytes after the end record",
					    f->size - body - sizeof(e));
			f->records = n;
			return 0;
		}
		if (fl && (rh.len < fl || rh.len - fl != var_len_of(rh.type, f->data + body)))
			return fail(err, errlen, "corrupt capture: record %llu (type %u) at byte %zu has %u bytes",
				    (unsigned long long)n, rh.type, off, rh.len);
		off = body + PAD8(rh.len);
		n++;
	}
}

int cap_open(const char *path, struct cap_file *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return fail(err, errlen, "cannot read: %s", strerror(errno));
	size_t cap = 1 << 16;
	f->data = xmalloc(cap);
	size_t n;
	while ((n = fread(f->data + f->size, 1, cap - f->size, fp)) > 0) {
		f->size += n;
		if (f->size == cap) {
			cap *= 2;
			f->data = xrealloc(f->data, cap);
		}
	}
	bool rerr = ferror(fp);
	fclose(fp);
	if (rerr) {
		cap_close(f);
		return fail(err, errlen, "cannot read: %s", strerror(EIO));
	}
	if (check(f, err, errlen)) {
		cap_close(f);
		return -1;
	}
	return 0;
}

void cap_close(struct cap_file *f)
{
	free(f->data);
	memset(f, 0, sizeof(*f));
}

bool cap_next(const struct cap_file *f, size_t *off, struct cap_rec *r)
{
	if (*off < CAP_HEADER_BYTES)
		*off = CAP_HEADER_BYTES;
	for (;;) {
		struct cap_rec_header rh;
		if (*off + sizeof(rh) > f->size)
			return false;
		memcpy(&rh, f->data + *off, sizeof(rh));
		if (rh.type == CAP_END)
			return false;
		const unsigned char *body = f->data + *off + sizeof(rh);
		*off += sizeof(rh) + PAD8(rh.len);
		size_t fl = cap_fixed_size(rh.type);
		if (!fl)
			continue; /* a type this build does not know */
		r->type = rh.type;
		r->fixed = body;
		r->var = body + fl;
		r->var_len = rh.len - fl;
		return true;
	}
}
