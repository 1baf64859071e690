/* Config accessors: every error names the file, the field and the problem; unknown fields are caught. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../../sim/cfg.h"
#include "../../sim/stats.h"

static jmp_buf jb;
static char msg[1024];

static void hook(const char *m)
{
	snprintf(msg, sizeof(msg), "%s", m);
	longjmp(jb, 1);
}

static struct json_object *parse(const char *text)
{
	struct json_object *o = json_tokener_parse(text);
	cr_assert_not_null(o, "bad test JSON");
	return o;
}

#define EXPECT_ERROR(stmt, needle)                                                                           \
	do {                                                                                                 \
		msg[0] = 0;                                                                                  \
		if (setjmp(jb) == 0) {                                                                       \
			stmt;                                                                                \
			cr_assert_fail("no error for: %s", #stmt);                                           \
		}                                                                                            \
		cr_assert(strstr(msg, needle), "message '%s' lacks '%s'", msg, needle);                      \
	} while (0)

TestSuite(cfg, .init = NULL);

Test(cfg, values_defaults_and_ranges)
{
	cfg_set_error_hook(hook);
	struct json_object *o = parse("{\"a\": {\"n\": 5, \"x\": 2.5, \"b\": true, \"s\": \"hi\", \"big\": 1e3}}");
	struct cfg root = cfg_root(o, "scen.yaml.j2");
	struct cfg a = cfg_section(&root, "a");
	cr_assert_eq(cfg_u64(&a, "n", 0, 0, 10), 5);
	cr_assert_eq(cfg_u64(&a, "missing", 77, 0, 100), 77);
	cr_assert_float_eq(cfg_double(&a, "x", 0, 0, 10), 2.5, 1e-12);
	cr_assert(cfg_bool(&a, "b", false));
	cr_assert_str_eq(cfg_string(&a, "s", ""), "hi");
	cr_assert_eq(cfg_u64(&a, "big", 0, 0, 10000), 1000, "integral doubles are integers");
	cfg_check_unknown(&root);
	json_object_put(o);
}

Test(cfg, errors_name_file_field_problem)
{
	cfg_set_error_hook(hook);
	struct json_object *o = parse("{\"fab\": {\"groups\": 0, \"bw\": \"fast\", \"neg\": -3, \"frac\": 1.5, "
				      "\"mode\": \"turbo\", \"flag\": 1, \"sub\": 3, \"list\": [{\"k\": 1}, 2]}}");
	struct cfg root = cfg_root(o, "df.yaml.j2");
	struct cfg f = cfg_section(&root, "fab");
	EXPECT_ERROR(cfg_u64(&f, "groups", 1, 1, 100), "df.yaml.j2: field 'fab.groups': value 0 out of range [1, 100]");
	EXPECT_ERROR(cfg_double(&f, "bw", 1, 0, 1e9), "df.yaml.j2: field 'fab.bw': expected a number");
	EXPECT_ERROR(cfg_u64(&f, "neg", 1, 0, 9), "field 'fab.neg': value -3 out of range");
	EXPECT_ERROR(cfg_u64(&f, "frac", 1, 0, 9), "field 'fab.frac': expected a non-negative integer");
	static const char *const modes[] = { "hardware", "software", "hybrid", NULL };
	EXPECT_ERROR(cfg_enum(&f, "mode", 0, modes), "field 'fab.mode': unknown value 'turbo' (expected one of: "
						      "hardware, software, hybrid)");
	EXPECT_ERROR(cfg_bool(&f, "flag", false), "field 'fab.flag': expected true or false");
	EXPECT_ERROR(cfg_section(&f, "sub"), "field 'fab.sub': expected a mapping");
	cr_assert_eq(cfg_array_len(&f, "list"), 2);
	struct cfg e0 = cfg_array_obj(&f, "list", 0);
	cr_assert_eq(cfg_u64(&e0, "k", 0, 0, 5), 1);
	EXPECT_ERROR(cfg_array_obj(&f, "list", 1), "field 'fab.list[1]': expected a mapping");
	json_object_put(o);
}

Test(cfg, unknown_fields_are_reported_with_their_path)
{
	cfg_set_error_hook(hook);
	struct json_object *o = parse("{\"nic\": {\"le\": {\"max_alloc\": 10, \"max_aloc\": 3}}, \"name\": \"x\"}");
	struct cfg root = cfg_root(o, "s.yaml.j2");
	cfg_string(&root, "name", NULL);
	struct cfg nic = cfg_section(&root, "nic");
	struct cfg le = cfg_section(&nic, "le");
	cfg_u64(&le, "max_alloc", 0, 0, 100);
	EXPECT_ERROR(cfg_check_unknown(&root), "s.yaml.j2: field 'nic.le.max_aloc': unknown field");
	json_object_put(o);

	o = parse("{\"a\": 1, \"b\": {\"c\": 2}}");
	root = cfg_root(o, "t.json");
	cfg_u64(&root, "a", 0, 0, 5);
	EXPECT_ERROR(cfg_check_unknown(&root), "field 'b': unknown field");
	json_object_put(o);

	o = parse("{\"list\": [{\"x\": 1, \"y\": 2}]}");
	root = cfg_root(o, "l.json");
	struct cfg e = cfg_array_obj(&root, "list", 0);
	cfg_u64(&e, "x", 0, 0, 5);
	EXPECT_ERROR(cfg_check_unknown(&root), "field 'list[0].y': unknown field");
	json_object_put(o);
}

Test(cfg, unreadable_file)
{
	cfg_set_error_hook(hook);
	EXPECT_ERROR(cfg_load_file("/nonexistent/x.json", "mine.yaml.j2"), "mine.yaml.j2: cannot read config");
}

/* A config file with this text (the path is static: one file per test process at a time). */
static const char *config_file(const char *text)
{
	static char path[] = "/tmp/cxisim-test-cfg-XXXXXX";
	strcpy(path, "/tmp/cxisim-test-cfg-XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
	return path;
}

static struct json_object *load_text(const char *text)
{
	const char *path = config_file(text);
	struct json_object *o = cfg_load_file(path, "mine.yaml.j2");
	unlink(path);
	return o;
}

static void nested(char *out, int levels)
{
	strcpy(out, "{\"a\": ");
	for (int i = 1; i < levels; i++)
		strcat(out, "[");
	strcat(out, "1");
	for (int i = 1; i < levels; i++)
		strcat(out, "]");
	strcat(out, "}");
}

Test(cfg, load_file_limits)
{
	cfg_set_error_hook(hook);
	EXPECT_ERROR(cfg_load_file("/dev/zero", "z.yaml.j2"), "z.yaml.j2: cannot read config: /dev/zero holds a NUL byte");
	char text[256];
	nested(text, CFG_MAX_DEPTH); /* the object and 31 lists: as deep as the front end writes */
	json_object_put(load_text(text));
	nested(text, CFG_MAX_DEPTH + 1);
	const char *path = config_file(text);
	EXPECT_ERROR(cfg_load_file(path, "mine.yaml.j2"), "nested more than 32 deep");
	unlink(path);
	path = config_file("{\"a\": 1}\n\n{\"b\": 2}");
	EXPECT_ERROR(cfg_load_file(path, "mine.yaml.j2"), "line 3");
	unlink(path);
	path = config_file("{\"a\": \"\xff\"}");
	EXPECT_ERROR(cfg_load_file(path, "mine.yaml.j2"), "utf-8");
	unlink(path);
}

Test(cfg, integers_beyond_64_bits_are_not_clamped)
{
	cfg_set_error_hook(hook);
	struct json_object *o = load_text("{\"big\": 18446744073709551616, \"max\": 18446744073709551615, "
					  "\"low\": -9223372036854775809, \"min\": -9223372036854775808, "
					  "\"s\": \"123456789012345678901234\", \"e\": \"x\\\"99999999999999999999\"}");
	struct cfg root = cfg_root(o, "mine.yaml.j2");
	EXPECT_ERROR(cfg_u64(&root, "big", 0, 0, UINT64_MAX), "field 'big': value 18446744073709551616.0 out of range");
	cr_assert_eq(cfg_u64(&root, "max", 0, 0, UINT64_MAX), UINT64_MAX);
	EXPECT_ERROR(cfg_i64(&root, "low", 0, INT64_MIN, INT64_MAX), "field 'low': expected an integer");
	cr_assert_eq(cfg_i64(&root, "min", 0, INT64_MIN, INT64_MAX), INT64_MIN);
	cr_assert_str_eq(cfg_string(&root, "s", ""), "123456789012345678901234", "strings are left alone");
	cr_assert_str_eq(cfg_string(&root, "e", ""), "x\"99999999999999999999");
	json_object_put(o);
}

Test(cfg, names_and_strings)
{
	cfg_set_error_hook(hook);
	struct json_object *o = parse("{\"ok\": \"fig5-rpc_rate.v2+x=1\", \"dots\": \"..\", \"slash\": \"a/b\", "
				      "\"quote\": \"a\\\"b\", \"empty\": \"\", \"nul\": \"a\\u0000b\"}");
	struct cfg root = cfg_root(o, "n.yaml.j2");
	cr_assert_str_eq(cfg_name(&root, "ok", NULL), "fig5-rpc_rate.v2+x=1");
	cr_assert_str_eq(cfg_name(&root, "absent", "unnamed"), "unnamed");
	EXPECT_ERROR(cfg_name(&root, "dots", NULL), "field 'dots': '..' is not a valid name");
	EXPECT_ERROR(cfg_name(&root, "slash", NULL), "is not a valid name");
	EXPECT_ERROR(cfg_name(&root, "quote", NULL), "is not a valid name");
	EXPECT_ERROR(cfg_name(&root, "empty", NULL), "is not a valid name");
	EXPECT_ERROR(cfg_string(&root, "nul", NULL), "field 'nul': the string contains a NUL character");
	json_object_put(o);
}

Test(cfg, messages_are_one_line)
{
	cfg_set_error_hook(hook);
	struct json_object *o = parse("{\"a\\nb\": 1}");
	struct cfg root = cfg_root(o, "l.yaml.j2");
	EXPECT_ERROR(cfg_check_unknown(&root), "field 'a\\x0ab': unknown field");
	cr_assert_null(strchr(msg, '\n'));
	json_object_put(o);
}

Test(cfg, exits_with_status_2_without_hook, .exit_code = 2)
{
	struct json_object *o = parse("{\"a\": \"x\"}");
	struct cfg root = cfg_root(o, "s.json");
	cfg_set_error_hook(NULL);
	cfg_u64(&root, "a", 0, 0, 1);
}

Test(stats, histogram_quantiles_and_counters)
{
	struct stats *st = stats_create();
	uint64_t *c = stats_counter(st, "nic.%d.C_CNTR_LPE_NET_MATCH_PRIORITY", 3);
	(*c) += 5;
	cr_assert_eq(stats_counter(st, "nic.3.C_CNTR_LPE_NET_MATCH_PRIORITY"), c, "same name, same slot");
	cr_assert_eq(*stats_find_counter(st, "nic.3.C_CNTR_LPE_NET_MATCH_PRIORITY"), 5);
	cr_assert_null(stats_find_counter(st, "nope"));
	struct histogram *h = stats_hist(st, "lat");
	for (uint64_t v = 1; v <= 1000; v++)
		hist_add(h, v);
	cr_assert_eq(h->count, 1000);
	cr_assert_eq(h->min, 1);
	cr_assert_eq(h->max, 1000);
	cr_assert_eq(hist_quantile(h, 1.0), 1000);
	uint64_t p50 = hist_quantile(h, 0.5), p99 = hist_quantile(h, 0.99);
	cr_assert(p50 >= 496 && p50 <= 506, "p50 %lu", p50); /* within 1% (exact: 501) */
	cr_assert(p99 >= 981 && p99 <= 1001, "p99 %lu", p99); /* exact: 991 */
	for (int i = 0; i < 5000; i++) /* many names force rehashing; earlier slots stay valid */
		(*stats_counter(st, "x.%d", i))++;
	cr_assert_eq(*c, 5);
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	stats_dump_json(st, f, 0);
	fclose(f);
	struct json_object *o = json_tokener_parse(buf);
	cr_assert_not_null(o, "stats JSON must parse: %s", buf);
	struct json_object *cs, *v, *n;
	cr_assert(json_object_object_get_ex(o, "counter_families", &cs));
	cr_assert(json_object_object_get_ex(cs, "x.*", &v), "per-entity counters are summarised by family");
	cr_assert(json_object_object_get_ex(v, "sum", &n));
	cr_assert_eq(json_object_get_int(n), 5000);
	json_object_put(o);
	free(buf);
	stats_destroy(st);
}
