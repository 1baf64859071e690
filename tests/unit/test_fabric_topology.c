/* Dragonfly topology: presets, port arithmetic (every link's two ends agree), global-link counts per group
 * pair, group subsets, and impossible topologies rejected with the offending parameter named. */
#include <criterion/criterion.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "../../sim/cfg.h"
#include "../../sim/model.h"
#include "../../sim/fabric/dragonfly.h"
#include "../../sim/scenario.h"

static char path[64];

static struct scenario *load(const char *json)
{
	strcpy(path, "/tmp/test_fabric_topo_XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	struct scenario_opts o = { .shown_name = "topo.yaml.j2" };
	struct scenario *sc = scenario_load(path, &o);
	unlink(path);
	return sc;
}

static struct df *df_of(struct scenario *sc)
{
	struct df *d = sim_world_get(sc->sim, "fabric.dragonfly");
	cr_assert_not_null(d);
	return d;
}

/* Every connected port's peer points back at it; every group pair has exactly lpp global links; every
 * switch pair of a group has llp local links.  Returns the number of global links. */
static uint64_t check_links(const struct df *d)
{
	uint32_t *pair = calloc((size_t)d->g * d->g, sizeof(*pair));
	uint64_t nglobal = 0;
	for (uint32_t s = 0; s < d->nsw; s++) {
		for (uint32_t p = d->local0; p < d->global0 + d->h; p++) {
			uint32_t ps, pp, bs, bp;
			if (!df_port_peer(d, s, p, &ps, &pp)) {
				cr_assert_geq(p, d->global0, "local port %u of switch %u unconnected", p, s);
				continue;
			}
			cr_assert(df_port_peer(d, ps, pp, &bs, &bp));
			cr_assert(bs == s && bp == p, "switch %u port %u -> %u:%u -> %u:%u", s, p, ps, pp, bs, bp);
			uint32_t G = df_group_of_sw(d, s), H = df_group_of_sw(d, ps);
			if (p < d->global0) {
				cr_assert_eq(G, H, "local link leaves its group");
				cr_assert_neq(s, ps);
			} else {
				cr_assert_neq(G, H, "global link inside a group");
				pair[G * d->g + H]++;
				nglobal++;
			}
		}
	}
	for (uint32_t G = 0; G < d->g; G++)
		for (uint32_t H = 0; H < d->g; H++)
			cr_assert_eq(pair[G * d->g + H], G == H ? 0 : d->lpp, "groups %u-%u: %u links", G, H,
				     pair[G * d->g + H]);
	free(pair);
	return nglobal / 2;
}

Test(fabric_topology, aurora_preset_sizes_and_links)
{
	struct scenario *sc = load("{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"aurora\"}}");
	struct df *d = df_of(sc);
	cr_assert_eq(d->g, 175);
	cr_assert_eq(d->a, 32);
	cr_assert_eq(d->p, 16);
	cr_assert_eq(d->nsw, 5600);
	cr_assert_eq(d->nep, 89600, "175 groups x 32 switches x 16 endpoints");
	cr_assert_eq(fabric_num_endpoints(fabric_of(sc->sim)), 89600);
	cr_assert_leq(d->p + (d->a - 1) + d->h, 64, "fits a 64-port Rosetta");
	cr_assert_eq(check_links(d), 175 * 174 / 2 * 2, "2 global links per group pair");
	cr_assert_eq(d->switches_alloc, 0, "no switch state before traffic");
	scenario_free(sc);
}

Test(fabric_topology, frontier_and_small_presets)
{
	struct scenario *sc = load("{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"frontier\"}}");
	struct df *d = df_of(sc);
	cr_assert_eq(d->g, 74);
	cr_assert_eq(d->nep, 74 * 32 * 16);
	cr_assert_eq(check_links(d), 74 * 73 / 2 * 4);
	scenario_free(sc);
	const char *arr[] = { "absolute", "relative", "round_robin" };
	for (int i = 0; i < 3; i++) {
		char j[256];
		snprintf(j, sizeof(j),
			 "{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"medium\", \"global_arrangement\": \"%s\", "
			 "\"local_links_per_pair\": 2, \"global_links_per_pair\": 1}}",
			 arr[i]);
		sc = load(j);
		d = df_of(sc);
		cr_assert_eq(check_links(d), 17 * 16 / 2, "%s", arr[i]);
		scenario_free(sc);
	}
}

/* A subset keeps exactly the links the full machine has between the chosen groups. */
Test(fabric_topology, subset_keeps_the_machines_links)
{
	struct scenario *full = load("{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"aurora\"}}");
	struct scenario *sub = load("{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"aurora\", "
				    "\"subset_group_ids\": [3, 170, 40, 7]}}");
	struct df *F = df_of(full), *S = df_of(sub);
	cr_assert_eq(S->g, 4);
	cr_assert_eq(S->nep, 4 * 32 * 16);
	cr_assert_eq(check_links(S), 6 * 2);
	uint32_t ids[] = { 3, 170, 40, 7 };
	uint64_t same = 0;
	for (uint32_t G = 0; G < 4; G++)
		for (uint32_t i = 0; i < 32; i++)
			for (uint32_t p = S->global0; p < S->global0 + S->h; p++) {
				uint32_t ss = G * 32 + i, fs = ids[G] * 32 + i, sps, spp, fps, fpp;
				if (!df_port_peer(S, ss, p, &sps, &spp))
					continue;
				cr_assert(df_port_peer(F, fs, p, &fps, &fpp));
				cr_assert_eq(fps, ids[sps / 32] * 32 + sps % 32);
				cr_assert_eq(fpp, spp);
				same++;
			}
	cr_assert_eq(same, 6 * 2 * 2, "both ends of the 12 links");
	scenario_free(full);
	scenario_free(sub);

	struct scenario *first = load("{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"aurora\", "
				      "\"subset_groups\": 8}}");
	cr_assert_eq(df_of(first)->nep, 4096);
	cr_assert_eq(check_links(df_of(first)), 28 * 2);
	scenario_free(first);
}

/* ---- impossible topologies ---- */

static jmp_buf jb;
static char msg[1024];

static void hook(const char *m)
{
	snprintf(msg, sizeof(msg), "%s", m);
	longjmp(jb, 1);
}

/* Builds the fabric section through its model, as scenario_load does, but keeps the sim and the JSON so
 * that they can be freed after the error hook has unwound out of the builder. */
static void expect_error(const char *fabric_json, const char *field, const char *needle)
{
	char j[1024];
	snprintf(j, sizeof(j), "{\"fabric\": {\"topology\": \"dragonfly\", %s}}", fabric_json);
	cfg_set_error_hook(hook);
	msg[0] = 0;
	struct json_object *o = json_tokener_parse(j);
	cr_assert_not_null(o);
	struct sim *sim = sim_create(1);
	if (setjmp(jb) == 0) {
		struct cfg root = cfg_root(o, "topo.yaml.j2");
		struct cfg sec = cfg_section(&root, "fabric");
		model_find("fabric")->build(sim, &sec);
		cfg_check_unknown(&root);
		cr_assert_fail("no error for %s", fabric_json);
	}
	sim_destroy(sim);
	json_object_put(o);
	char f[128];
	snprintf(f, sizeof(f), "field 'fabric.%s'", field);
	cr_assert(strstr(msg, "topo.yaml.j2"), "'%s' does not name the file", msg);
	cr_assert(strstr(msg, f), "'%s' does not name %s", msg, f);
	cr_assert(strstr(msg, needle), "'%s' lacks '%s'", msg, needle);
}

Test(fabric_topology, impossible_topologies_name_the_parameter)
{
	expect_error("\"groups\": 0", "groups", "out of range");
	expect_error("\"preset\": \"small\", \"global_links_per_pair\": 3", "global_links_per_pair",
		     "need 24 global ports per group, but 4 switches x 2");
	expect_error("\"preset\": \"aurora\", \"global_ports_per_switch\": 20", "global_ports_per_switch",
		     "67 ports, but has only 64");
	expect_error("\"groups\": 5, \"global_links_per_pair\": 0", "global_links_per_pair", "disconnected");
	expect_error("\"preset\": \"aurora\", \"endpoints_per_switch\": 32, \"ports\": 128, \"groups\": 1100, "
		     "\"global_ports_per_switch\": 60, \"global_links_per_pair\": 1",
		     "groups", "20-bit NIC address space");
	expect_error("\"preset\": \"aurora\", \"subset_group_ids\": [1, 2, 1]", "subset_group_ids[2]", "twice");
	expect_error("\"preset\": \"aurora\", \"subset_group_ids\": [1, 175]", "subset_group_ids[1]", "out of range");
	expect_error("\"preset\": \"small\", \"subset_groups\": 10", "subset_groups", "machine with 9");
	expect_error("\"preset\": \"small\", \"subset_groups\": 2, \"routing\": \"valiant\"", "routing", "3 or more");
	expect_error("\"buffer_bytes\": 4096", "buffer_bytes", "cannot hold");
	expect_error("\"traffic_classes\": 2, \"tc_shares\": [1, 2, 3]", "tc_shares", "3 shares given for 2");
	expect_error("\"routing\": \"shortest\"", "routing", "unknown value 'shortest'");
	expect_error("\"preset\": \"huge\"", "preset", "unknown value 'huge'");
	expect_error("\"switch_latency\": 3", "switch_latency", "unknown field");
}
