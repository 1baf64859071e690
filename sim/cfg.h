/* Config access with error reporting that names the file, the field and the problem.
 *
 * Every model reads its section through these accessors.  Each access records the key as consumed;
 * cfg_check_unknown() then reports any key nobody read, so a misspelt field is an error, not silently
 * ignored.  On the first error the process prints
 *     <file>: field '<dotted.path>': <problem>
 * to stderr and exits with status 2 (config errors are fatal by design: nothing has been written yet).
 * Unit tests can install a non-exiting error hook with cfg_set_error_hook().
 */
#ifndef CXISIM_CFG_H
#define CXISIM_CFG_H

#include <stdbool.h>
#include <stdint.h>

struct json_object;

struct cfg {
	struct json_object *obj; /* an object node, or NULL when the section is absent */
	char path[256];          /* dotted path of this node, "" for the root */
	const char *file;        /* name shown in messages (the scenario the user wrote) */
};

/* What the engine reads as a config: at most CFG_MAX_BYTES of strict JSON in UTF-8, nested at most
 * CFG_MAX_DEPTH mappings and lists deep (the front end's analysis/cxisim/inputs.py holds the same limits).
 * A rendered scenario is kilobytes; the cap stops a mistaken `--config /dev/zero` at once. */
#define CFG_MAX_BYTES (64u << 20)
#define CFG_MAX_DEPTH 32
#define CFG_MAX_DEPTH_S "32"
/* A name (the scenario's `name`, a run directory): letters, digits, "_.=+-", not starting with ".=+-". */
#define CFG_NAME_MAX 255

struct cfg cfg_root(struct json_object *root, const char *file);
/* Parse a JSON file; errors name the file (shown_name, the template the user wrote) and the line. */
struct json_object *cfg_load_file(const char *path, const char *shown_name);

bool cfg_has(const struct cfg *c, const char *key);
/* A sub-object; absent gives a cfg whose accessors all return defaults.  Not an object: error. */
struct cfg cfg_section(const struct cfg *c, const char *key);
/* Arrays of objects: count and element (element path is "key[i]"). */
int cfg_array_len(const struct cfg *c, const char *key);
struct cfg cfg_array_obj(const struct cfg *c, const char *key, int i);
/* Arrays of integers. */
uint64_t cfg_array_u64(const struct cfg *c, const char *key, int i, uint64_t min, uint64_t max);

uint64_t cfg_u64(const struct cfg *c, const char *key, uint64_t def, uint64_t min, uint64_t max);
int64_t cfg_i64(const struct cfg *c, const char *key, int64_t def, int64_t min, int64_t max);
double cfg_double(const struct cfg *c, const char *key, double def, double min, double max);
bool cfg_bool(const struct cfg *c, const char *key, bool def);
/* Returns a pointer into the JSON tree (valid while the tree lives). */
const char *cfg_string(const struct cfg *c, const char *key, const char *def);
/* A string that is a name (CFG_NAME_MAX): safe as a path component and in JSON output unescaped. */
const char *cfg_name(const struct cfg *c, const char *key, const char *def);
/* One of a NULL-terminated list of names; returns its index. */
int cfg_enum(const struct cfg *c, const char *key, int def, const char *const names[]);
/* Times: a number in the given unit, e.g. cfg_time_ns(c, "latency_ns", 350) -> picoseconds. */
uint64_t cfg_time_ps(const struct cfg *c, const char *key, double def, double unit_ps, double max_units);

/* Report keys in this section (recursively through sections that were opened) that nobody consumed. */
void cfg_check_unknown(const struct cfg *root);

/* Report an error about c.key now (for checks that involve several fields). */
void cfg_fail(const struct cfg *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

/* Tests: replace exit(2) with a hook (it must not return: longjmp out of it). */
void cfg_set_error_hook(void (*hook)(const char *msg));

#endif
