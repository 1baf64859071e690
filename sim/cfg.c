#include "cfg.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static void (*error_hook)(const char *msg);

void cfg_set_error_hook(void (*hook)(const char *msg))
{
	error_hook = hook;
}

static void fail_msg(const char *msg) __attribute__((noreturn));
static void fail_msg(const char *raw)
{
	/* One line whatever the config held: control characters (a newline in a key) are written as escapes. */
	char msg[1200];
	size_t k = 0;
	for (const unsigned char *p = (const unsigned char *)raw; *p && k + 5 < sizeof(msg); p++) {
		if (*p < 0x20 || *p == 0x7f)
			k += (size_t)snprintf(msg + k, sizeof(msg) - k, "\\x%02x", *p);
		else
			msg[k++] = (char)*p;
	}
	msg[k] = 0;
	if (error_hook) {
		error_hook(msg);
		abort(); /* the hook must not return */
	}
	fprintf(stderr, "%s\n", msg);
	exit(2);
}

static void join(char *out, size_t n, const char *path, const char *key)
{
	if (!key)
		snprintf(out, n, "%s", path);
	else if (path[0])
		snprintf(out, n, "%s.%s", path, key);
	else
		snprintf(out, n, "%s", key);
}

void cfg_fail(const struct cfg *c, const char *key, const char *fmt, ...)
{
	char path[300], msg[1024];
	int k;
	va_list ap;
	join(path, sizeof(path), c->path, key);
	k = snprintf(msg, sizeof(msg), "%s: field '%s': ", c->file ? c->file : "<config>", path);
	va_start(ap, fmt);
	vsnprintf(msg + k, sizeof(msg) - (size_t)k, fmt, ap);
	va_end(ap);
	fail_msg(msg);
}

/* ---- consumed-path set: every key a model reads is recorded, so unknown keys can be reported ---- */

static char **seen;
static size_t seen_cap, seen_n;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static size_t seen_slot(const char *p)
{
	size_t i = hash_str(p) & (seen_cap - 1);
	while (seen[i] && strcmp(seen[i], p))
		i = (i + 1) & (seen_cap - 1);
	return i;
}

static void mark_seen(const char *path)
{
	if ((seen_n + 1) * 2 > seen_cap) {
		char **old = seen;
		size_t oldcap = seen_cap;
		seen_cap = seen_cap ? seen_cap * 2 : 256;
		seen = xcalloc(seen_cap, sizeof(*seen));
		for (size_t i = 0; i < oldcap; i++)
			if (old[i])
				seen[seen_slot(old[i])] = old[i];
		free(old);
	}
	size_t i = seen_slot(path);
	if (!seen[i]) {
		seen[i] = xstrdup(path);
		seen_n++;
	}
}

static bool was_seen(const char *path)
{
	return seen_cap && seen[seen_slot(path)];
}

static void seen_reset(void)
{
	for (size_t i = 0; i < seen_cap; i++)
		free(seen[i]);
	free(seen);
	seen = NULL;
	seen_cap = seen_n = 0;
}

/* ---- access ---- */

struct cfg cfg_root(struct json_object *root, const char *file)
{
	struct cfg c = { .obj = root, .path = "", .file = file };
	seen_reset();
	if (root && !json_object_is_type(root, json_type_object))
		fail_msg("config root is not an object");
	return c;
}

/* ---- reading a config file ---- */

static void load_fail(const char *shown, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void load_fail(const char *shown, const char *fmt, ...)
{
	char msg[1024];
	int k = snprintf(msg, sizeof(msg), "%s: cannot read config: ", shown);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + k, sizeof(msg) - (size_t)k, fmt, ap);
	va_end(ap);
	fail_msg(msg);
}

/* At most CFG_MAX_BYTES + 1 bytes of the file (so that a larger one, or /dev/zero, is seen and refused). */
static char *read_capped(const char *path, const char *shown, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		load_fail(shown, "%s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap = cap * 2 > CFG_MAX_BYTES + 1 ? CFG_MAX_BYTES + 1 : cap * 2;
			buf = xrealloc(buf, cap + 1);
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		const char *nul = memchr(buf + n, 0, got);
		if (nul) { /* JSON text holds none: refused at once (and --config /dev/zero ends here) */
			size_t at = (size_t)(nul - buf);
			free(buf);
			fclose(f);
			load_fail(shown, "%s holds a NUL byte (offset %zu)", path, at);
		}
		n += got;
		if (n > CFG_MAX_BYTES || got == 0)
			break;
	}
	int err = ferror(f) ? errno : 0;
	fclose(f);
	if (err || n > CFG_MAX_BYTES)
		free(buf);
	if (err)
		load_fail(shown, "%s: %s", path, strerror(err));
	if (n > CFG_MAX_BYTES)
		load_fail(shown, "%s is larger than %u MiB", path, CFG_MAX_BYTES >> 20);
	buf[n] = 0;
	*len = n;
	return buf;
}

static bool is_int_token(const char *s, size_t n)
{
	size_t i = s[0] == '-';
	if (i == n)
		return false;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool int_fits(const char *s, size_t n)
{
	bool neg = s[0] == '-';
	const char *limit = neg ? "9223372036854775808" : "18446744073709551615";
	size_t i = neg;
	while (i < n - 1 && s[i] == '0')
		i++;
	size_t digits = n - i, ldigits = strlen(limit);
	return digits < ldigits || (digits == ldigits && memcmp(s + i, limit, digits) <= 0);
}

/* json-c reads an integer beyond 64 bits as INT64_MIN or UINT64_MAX, so 2^64 would pass for 2^64-1.  Such
 * integers are written with a ".0" here, so that json-c reads them as the doubles they are and every range
 * check sees their real value. */
static char *widen_big_ints(char *buf, size_t *len)
{
	size_t n = *len, extra = 0;
	bool in_str = false;
	for (int pass = 0; pass < 2; pass++) {
		char *out = pass ? xmalloc(n + extra + 1) : NULL;
		size_t o = 0;
		in_str = false;
		for (size_t i = 0; i < n;) {
			char ch = buf[i];
			if (in_str || ch == '"') {
				if (ch == '\\' && in_str && i + 1 < n) {
					if (out) {
						out[o++] = ch;
						out[o++] = buf[i + 1];
					}
					i += 2;
					continue;
				}
				if (ch == '"')
					in_str = !in_str;
				if (out)
					out[o++] = ch;
				i++;
				continue;
			}
			size_t j = i;
			while (j < n && (strchr("-+.eE", buf[j]) || (buf[j] >= '0' && buf[j] <= '9')))
				j++;
			if (j == i)
				j = i + 1;
			bool widen = is_int_token(buf + i, j - i) && !int_fits(buf + i, j - i);
			if (!out)
				extra += widen ? 2 : 0;
			else {
				memcpy(out + o, buf + i, j - i);
				o += j - i;
				if (widen) {
					memcpy(out + o, ".0", 2);
					o += 2;
				}
			}
			i = j;
		}
		if (!pass && !extra)
			return buf;
		if (pass) {
			out[o] = 0;
			free(buf);
			*len = o;
			return out;
		}
	}
	return buf;
}

struct json_object *cfg_load_file(const char *path, const char *shown)
{
	shown = shown ? shown : path;
	size_t len;
	char *buf = read_capped(path, shown, &len);
	buf = widen_big_ints(buf, &len);
	struct json_tokener *tok = json_tokener_new_ex(CFG_MAX_DEPTH + 1);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	struct json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o || jerr != json_tokener_success) {
		size_t line = 1;
		for (size_t i = 0; i < end && i < len; i++)
			line += buf[i] == '\n';
		const char *why = jerr == json_tokener_continue ? "unexpected end of file"
				  : jerr == json_tokener_error_depth  ? "nested more than " CFG_MAX_DEPTH_S " deep"
								      : json_tokener_error_desc(jerr);
		free(buf);
		json_object_put(o);
		load_fail(shown, "%s line %zu: %s", path, line, why);
	}
	free(buf);
	return o;
}

static struct json_object *get(const struct cfg *c, const char *key)
{
	struct json_object *v = NULL;
	char path[300];
	if (!c->obj || !json_object_object_get_ex(c->obj, key, &v))
		return NULL;
	join(path, sizeof(path), c->path, key);
	mark_seen(path);
	return v; /* NULL for an explicit null: treated as absent */
}

bool cfg_has(const struct cfg *c, const char *key)
{
	struct json_object *v = NULL;
	return c->obj && json_object_object_get_ex(c->obj, key, &v) && v;
}

struct cfg cfg_section(const struct cfg *c, const char *key)
{
	struct cfg s = { .obj = get(c, key), .file = c->file };
	join(s.path, sizeof(s.path), c->path, key);
	if (s.obj && !json_object_is_type(s.obj, json_type_object))
		cfg_fail(c, key, "expected a mapping, got %s", json_type_to_name(json_object_get_type(s.obj)));
	return s;
}

static struct json_object *get_array(const struct cfg *c, const char *key)
{
	struct json_object *a = get(c, key);
	if (a && !json_object_is_type(a, json_type_array))
		cfg_fail(c, key, "expected a list, got %s", json_type_to_name(json_object_get_type(a)));
	return a;
}

int cfg_array_len(const struct cfg *c, const char *key)
{
	struct json_object *a = get_array(c, key);
	return a ? (int)json_object_array_length(a) : 0;
}


static void elem_path(char *out, size_t n, const struct cfg *c, const char *key, int i)
{
	char base[300];
	join(base, sizeof(base), c->path, key);
	snprintf(out, n, "%s[%d]", base, i);
}

struct cfg cfg_array_obj(const struct cfg *c, const char *key, int i)
{
	struct json_object *a = get_array(c, key);
	struct cfg e = { .file = c->file };
	elem_path(e.path, sizeof(e.path), c, key, i);
	e.obj = a ? json_object_array_get_idx(a, (size_t)i) : NULL;
	mark_seen(e.path);
	if (!e.obj || !json_object_is_type(e.obj, json_type_object)) {
		struct cfg root = { .path = "", .file = c->file };
		cfg_fail(&root, e.path, "expected a mapping");
	}
	return e;
}

enum u64_read { U64_OK, U64_NEGATIVE, U64_TOO_BIG, U64_NOT_INT };

static enum u64_read as_u64(struct json_object *v, uint64_t *out)
{
	if (json_object_is_type(v, json_type_int)) {
		int64_t s = json_object_get_int64(v);
		if (s < 0)
			return U64_NEGATIVE;
		*out = s == INT64_MAX ? json_object_get_uint64(v) : (uint64_t)s;
		return U64_OK;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (d != floor(d) || !isfinite(d))
			return U64_NOT_INT;
		if (d < 0)
			return U64_NEGATIVE;
		if (d >= 18446744073709551616.0) /* 2^64 and beyond (cfg_load_file reads such integers as doubles) */
			return U64_TOO_BIG;
		*out = (uint64_t)d;
		return U64_OK;
	}
	return U64_NOT_INT;
}

static uint64_t check_u64(const struct cfg *c, const char *key, struct json_object *v, uint64_t min, uint64_t max)
{
	uint64_t x = 0;
	enum u64_read r = as_u64(v, &x);
	if (r == U64_NOT_INT)
		cfg_fail(c, key, "expected a non-negative integer, got %s '%s'",
			 json_type_to_name(json_object_get_type(v)), json_object_to_json_string(v));
	if (r != U64_OK || x < min || x > max)
		cfg_fail(c, key, "value %s out of range [%llu, %llu]", json_object_to_json_string(v),
			 (unsigned long long)min, (unsigned long long)max);
	return x;
}

uint64_t cfg_array_u64(const struct cfg *c, const char *key, int i, uint64_t min, uint64_t max)
{
	struct json_object *a = get_array(c, key);
	struct json_object *v = a ? json_object_array_get_idx(a, (size_t)i) : NULL;
	char p[300];
	snprintf(p, sizeof(p), "%s[%d]", key, i);
	if (!v)
		cfg_fail(c, p, "missing");
	return check_u64(c, p, v, min, max);
}

uint64_t cfg_u64(const struct cfg *c, const char *key, uint64_t def, uint64_t min, uint64_t max)
{
	struct json_object *v = get(c, key);
	return v ? check_u64(c, key, v, min, max) : def;
}

int64_t cfg_i64(const struct cfg *c, const char *key, int64_t def, int64_t min, int64_t max)
{
	struct json_object *v = get(c, key);
	if (!v)
		return def;
	if (!json_object_is_type(v, json_type_int))
		cfg_fail(c, key, "expected an integer, got %s '%s'", json_type_to_name(json_object_get_type(v)),
			 json_object_to_json_string(v));
	int64_t x = json_object_get_int64(v);
	if (x < min || x > max)
		cfg_fail(c, key, "value %lld out of range [%lld, %lld]", (long long)x, (long long)min,
			 (long long)max);
	return x;
}

double cfg_double(const struct cfg *c, const char *key, double def, double min, double max)
{
	struct json_object *v = get(c, key);
	if (!v)
		return def;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		cfg_fail(c, key, "expected a number, got %s '%s'", json_type_to_name(json_object_get_type(v)),
			 json_object_to_json_string(v));
	double x = json_object_get_double(v);
	if (!(x >= min && x <= max))
		cfg_fail(c, key, "value %.10g out of range [%.10g, %.10g]", x, min, max);
	return x;
}

bool cfg_bool(const struct cfg *c, const char *key, bool def)
{
	struct json_object *v = get(c, key);
	if (!v)
		return def;
	if (!json_object_is_type(v, json_type_boolean))
		cfg_fail(c, key, "expected true or false, got %s '%s'", json_type_to_name(json_object_get_type(v)),
			 json_object_to_json_string(v));
	return json_object_get_boolean(v);
}

const char *cfg_string(const struct cfg *c, const char *key, const char *def)
{
	struct json_object *v = get(c, key);
	if (!v)
		return def;
	if (!json_object_is_type(v, json_type_string))
		cfg_fail(c, key, "expected a string, got %s '%s'", json_type_to_name(json_object_get_type(v)),
			 json_object_to_json_string(v));
	const char *s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		cfg_fail(c, key, "the string contains a NUL character");
	return s;
}

const char *cfg_name(const struct cfg *c, const char *key, const char *def)
{
	const char *s = cfg_string(c, key, NULL);
	if (!s)
		return def;
	size_t n = strlen(s);
	bool ok = n >= 1 && n <= CFG_NAME_MAX && (isalnum((unsigned char)s[0]) || s[0] == '_');
	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)s[i]) || strchr("_.=+-", s[i]);
	if (!ok)
		cfg_fail(c, key, "'%s' is not a valid name (letters, digits and '_.=+-', not starting with '.', '=', "
			 "'+' or '-', at most %d bytes)", s, CFG_NAME_MAX);
	return s;
}

int cfg_enum(const struct cfg *c, const char *key, int def, const char *const names[])
{
	const char *s = cfg_string(c, key, NULL);
	if (!s)
		return def;
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], s))
			return i;
	char list[512] = "";
	size_t k = 0;
	for (int i = 0; names[i] && k < sizeof(list) - 1; i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s", i ? ", " : "", names[i]);
	cfg_fail(c, key, "unknown value '%s' (expected one of: %s)", s, list);
}

uint64_t cfg_time_ps(const struct cfg *c, const char *key, double def, double unit_ps, double max_units)
{
	double x = cfg_double(c, key, def, 0, max_units);
	return (uint64_t)llround(x * unit_ps);
}

/* ---- unknown keys ---- */

static void check_node(const struct cfg *c, struct json_object *o, const char *path);

static void check_value(const struct cfg *c, struct json_object *v, const char *path)
{
	if (!v)
		return;
	if (json_object_is_type(v, json_type_object)) {
		check_node(c, v, path);
	} else if (json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);
		for (size_t i = 0; i < n; i++) {
			char p[300];
			snprintf(p, sizeof(p), "%s[%zu]", path, i);
			struct json_object *e = json_object_array_get_idx(v, i);
			/* Elements of scalar lists are read by index; only object elements have fields to check. */
			if (e && json_object_is_type(e, json_type_object) && was_seen(p))
				check_node(c, e, p);
		}
	}
}

static void check_node(const struct cfg *c, struct json_object *o, const char *path)
{
	json_object_object_foreach(o, key, val)
	{
		char p[300];
		join(p, sizeof(p), path, key);
		if (!was_seen(p)) {
			struct cfg root = { .path = "", .file = c->file };
			cfg_fail(&root, p, "unknown field");
		}
		check_value(c, val, p);
	}
}

void cfg_check_unknown(const struct cfg *root)
{
	if (root->obj)
		check_node(root, root->obj, root->path);
}
