/* The "nic" model: builds one Cassini per fabric endpoint, owns the parameter table, services, LNIs and
 * the per-NIC telemetry.  The data path lives in initiator.c (transmit) and lpe.c, lpe_tgt.c (target). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "../model.h"
#include "../timeseries.h"
#include "../util.h"
#include "nic_impl.h"
#include "sw.h"

static const struct param nic_params_table[] = {
	{ "count", "count", 0, 0, FABRIC_MAX_NICS, "scenario size; 0: one NIC per fabric endpoint" },
	{ "pcie_latency_ns", "ns", 250, 0, 1e6,
	  "assumed: one-way PCIe Gen4 x16 transaction latency (host read/write issued by the NIC)" },
	{ "pcie_gbps", "Gb/s", 224, 1, 1e5, "assumed: PCIe Gen4 x16 (256 Gb/s raw) after TLP overhead" },
	{ "dma_read_window_bytes", "bytes", 11720, 64, 1 << 24,
	  "calibrated: seed 000 Fig 10 bulk read, 1 server node, 46 GB/s over 2 NICs (23.0 GB/s of payload per "
	  "NIC at a read round trip of 2 x pcie_latency_ns); the bytes of host reads a NIC keeps outstanding" },
	{ "doorbell_ns", "ns", 100, 0, 1e6, "assumed: posted MMIO doorbell write reaching the NIC" },
	{ "tx_cmd_ns", "ns", 40, 0, 1e6,
	  "assumed: initiator command processing, ~25 M commands/s per NIC (order of Cassini message rate)" },
	{ "idc_per_64b_ns", "ns", 2, 0, 1e6, "assumed: fetching each further 64-B slot of an IDC command" },
	{ "tgt_cmd_ns", "ns", 50, 0, 1e6, "assumed: target command (append/unlink/search/setstate) at the LPE" },
	{ "match_base_ns", "ns", 40, 0, 1e6, "assumed: per network request at the list-processing engine" },
	{ "match_per_le_ns", "ns", 2, 0, 1e6, "assumed: per LE walked while matching (cost per LE searched)" },
	{ "event_write_ns", "ns", 20, 0, 1e6, "assumed: event engine time to post one 64-B event (plus PCIe)" },
	{ "ack_gen_ns", "ns", 20, 0, 1e6, "assumed: building an ACK/NACK or a Get reply header" },
	{ "le_pool_max_alloc", "count", C_LES_PER_PE, 0, C_LES_PER_PE,
	  "cassini-reference: LE pools, max_alloc CSR (upstream tests constrain it, e.g. 10)" },
	{ "le_pool_reserved", "count", 0, 0, C_LES_PER_PE, "cassini-reference: LE pools, reserved CSR" },
	{ "pe_les", "count", C_LES_PER_PE, 1, C_LES_PER_PE, "cassini-reference: 4 PEs x 16,384 LEs" },
	{ "cmdq_slots_max", "count", 65536, 16, 1 << 20, "assumed: largest command queue software may allocate" },
	{ "eq_slots_max", "count", 1 << 22, 2, 1 << 26, "assumed: largest EQ buffer (64-B slots)" },
	{ "trs_entries", "count", 2048, 1, 1 << 20,
	  "HPE shs-cassini-headers C1_PCT_CFG_TRS_CAM_ENTRIES: request states of a Cassini 1 NIC (Aurora; Cassini 2: "
	  "8192); a request arriving when all are held is NACKed (C_RC_NO_TARGET_TRS) and retried by the initiator" },
	{ "rh_retry_us", "us", 10, 0, 1e6,
	  "assumed: the initiator's retry handler (cxi_rh, a host daemon reading PCT events) resends a NACKed packet; "
	  "HPE shs-libcxi retry_handler: NACK-only chains are retried at once for their first 3 rounds, so this is "
	  "the daemon's event latency plus the resend" },
	{ "pct_sct_entries", "count", 4096, 1, 1 << 20,
	  "HPE shs-cassini-headers C_PCT_CFG_SCT_CAM_ENTRIES: source connections of a NIC (opens beyond are counted, "
	  "sim.pct_sct_full)" },
	{ "pct_tct_entries", "count", 8192, 1, 1 << 20,
	  "HPE shs-cassini-headers C_PCT_CFG_TCT_CAM_ENTRIES: target connections; a request that needs one more is "
	  "NACKed (C_RC_NO_TARGET_CONN) and resent by the retry handler" },
	{ "pct_pid_mask", "mask", 7, 0, 511,
	  "HPE shs-cxi-driver cass_core.c sct_pid_mask (0x7): destination PID bits that pick a connection" },
	{ "pct_idle_us", "us", 32.768, 0.001, 1e9,
	  "HPE shs-cxi-driver C1_DEFAULT_SCT_IDLE_EPOCH 15: 2^15 cycles of Cassini 1's 1 GHz clock (shs-libcxi "
	  "retry_handler get_epoch_timeout); an idle connection is closed" },
	{ "pct_conn_ns", "ns", 0, 0, 1e6,
	  "assumed, 0 by default (no published figure): a PCT connection's life at one end -- its open, and the close "
	  "request and response once idle, not simulated as packets -- as time of the engine that meets the opening "
	  "packet: the transmit engine for a source connection (SCT), the PE for a target connection (TCT).  A "
	  "sensitivity knob for connection churn (docs/workloads.md, Fig 4 by mechanism)" },
	{ "amo_unit_ns", "ns", 20, 0, 1e6,
	  "assumed: the target AMO unit's occupancy per atomic (ALU and ordering check); AMOs of one NIC execute one "
	  "at a time in arrival order, each also waiting for its host read (a PCIe round trip) before the unit "
	  "applies it and writes the element back" },
	{ "trig_release_ns", "ns", 40, 0, 1e6,
	  "assumed: the trigger engine, from the CT update that reaches a threshold to the triggered command's issue to "
	  "the transmit engine, per entry released (entries released together go one at a time, in order): of the order "
	  "of tx_cmd_ns, one command processed; Cassini publishes no figure" },
	{ "tles", "count", C_NUM_TLES, 1, C_NUM_TLES,
	  "HPE shs-cassini-headers C_NUM_TLES: trigger list entries of a NIC (upstream cxi reserves 8 of a service's "
	  "TLEs and refuses deferred work beyond the rest with -FI_ENOSPC, cxip_dom.c TLE_RESERVED)" },
};

enum {
	P_COUNT,
	P_PCIE_LAT,
	P_PCIE_GBPS,
	P_DMA_READ_WINDOW,
	P_DOORBELL,
	P_TX_CMD,
	P_IDC64,
	P_TGT_CMD,
	P_MATCH_BASE,
	P_MATCH_LE,
	P_EVENT_WRITE,
	P_ACK_GEN,
	P_POOL_MAX,
	P_POOL_RES,
	P_PE_LES,
	P_CMDQ_MAX,
	P_EQ_MAX,
	P_TRS,
	P_RH_RETRY,
	P_PCT_SCT,
	P_PCT_TCT,
	P_PCT_PID_MASK,
	P_PCT_IDLE,
	P_PCT_CONN,
	P_AMO_UNIT,
	P_TRIG_RELEASE,
	P_TLES,
};

struct nic_world {
	struct nic_params p;
	uint32_t n;
	struct nic **nics;
	/* Scenario-defined services and pool settings, applied to every NIC when it is activated. */
	struct nic_svc_desc *svcs;
	uint32_t *svc_ids;
	uint32_t nsvcs;
	struct { uint32_t index, max_alloc, reserved; bool has_max, has_res; } *pool_cfg;
	uint32_t npool_cfg;
	struct nic_records rec;
};

static struct nic_world *world(struct sim *sim)
{
	return sim_world_get(sim, "nic");
}

struct nic *nic_get(struct sim *sim, uint32_t addr)
{
	struct nic_world *w = world(sim);
	if (!w || addr >= w->n)
		return NULL;
	return w->nics[addr];
}

uint32_t nic_count(struct sim *sim)
{
	struct nic_world *w = world(sim);
	return w ? w->n : 0;
}

uint32_t nic_addr(const struct nic *nic)
{
	return nic->addr;
}

struct sim *nic_sim(const struct nic *nic)
{
	return nic->sim;
}

/* ---------------------------------------------------------------- telemetry */

/* A NIC's counters, one block per NIC (stats_counter_block): the name of each (after "nic.<addr>.") and
 * its place in nic_cix (NO_SLOT: none), built once per process in registration order. */
struct nic_ctr_table {
	const char **names;
	size_t *off;
	size_t n, cap;
};

static void tab_add(struct nic_ctr_table *t, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tab_add(struct nic_ctr_table *t, size_t off, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->names = xrealloc(t->names, t->cap * sizeof(*t->names));
		t->off = xrealloc(t->off, t->cap * sizeof(*t->off));
	}
	t->names[t->n] = xstrdup(buf);
	t->off[t->n++] = off;
}

#define C_OFF(field) offsetof(struct nic_ctr_ix, field)
#define NO_SLOT SIZE_MAX /* a counter of the block no field of nic_cix names (le_pool_fail after the first) */

struct nic_ctr_ix nic_cix;

static const struct nic_ctr_table *ctr_table(void)
{
	static struct nic_ctr_table t;
	if (t.n)
		return &t;
	static const struct {
		size_t off;
		const char *name;
	} per_pe[] = {
		{ C_OFF(net_match_priority), "C_CNTR_LPE_NET_MATCH_PRIORITY" },
		{ C_OFF(net_match_overflow), "C_CNTR_LPE_NET_MATCH_OVERFLOW" },
		{ C_OFF(net_match_request), "C_CNTR_LPE_NET_MATCH_REQUEST" },
		{ C_OFF(net_match_requests), "C_CNTR_LPE_NET_MATCH_REQUESTS" },
		{ C_OFF(net_match_success), "C_CNTR_LPE_NET_MATCH_SUCCESS" },
		{ C_OFF(net_match_useonce), "C_CNTR_LPE_NET_MATCH_USEONCE" },
		{ C_OFF(append_cmds), "C_CNTR_LPE_APPEND_CMDS" },
		{ C_OFF(append_success), "C_CNTR_LPE_APPEND_SUCCESS" },
		{ C_OFF(setstate_cmds), "C_CNTR_LPE_SETSTATE_CMDS" },
		{ C_OFF(setstate_success), "C_CNTR_LPE_SETSTATE_SUCCESS" },
		{ C_OFF(rndzv_puts), "C_CNTR_LPE_RNDZV_PUTS" },
		{ C_OFF(rndzv_puts_offloaded), "C_CNTR_LPE_RNDZV_PUTS_OFFLOADED" },
		{ C_OFF(num_truncated), "C_CNTR_LPE_NUM_TRUNCATED" },
		{ C_OFF(pe_busy_ps), "sim.pe_busy_ps" },
	};
	static const struct {
		size_t off;
		const char *name;
	} one[] = {
		{ C_OFF(err_no_space_append), "C_CNTR_LPE_ERR_NO_SPACE_APPEND" },
		{ C_OFF(err_no_space_net), "C_CNTR_LPE_ERR_NO_SPACE_NET" },
		{ C_OFF(err_pt_disabled_eq_full), "C_CNTR_LPE_ERR_PT_DISABLED_EQ_FULL" },
		{ C_OFF(err_pt_disabled_req_empty), "C_CNTR_LPE_ERR_PT_DISABLED_REQ_EMPTY" },
		{ C_OFF(err_pt_disabled_cant_alloc_unexpected), "C_CNTR_LPE_ERR_PT_DISABLED_CANT_ALLOC_UNEXPECTED" },
		{ C_OFF(err_pt_disabled_no_match_in_overflow), "C_CNTR_LPE_ERR_PT_DISABLED_NO_MATCH_IN_OVERFLOW" },
		{ C_OFF(err_entry_not_found_eq_full), "C_CNTR_LPE_ERR_ENTRY_NOT_FOUND_EQ_FULL" },
		{ C_OFF(err_entry_not_found_req_empty), "C_CNTR_LPE_ERR_ENTRY_NOT_FOUND_REQ_EMPTY" },
		{ C_OFF(err_entry_not_found_no_match_in_overflow), "C_CNTR_LPE_ERR_ENTRY_NOT_FOUND_NO_MATCH_IN_OVERFLOW" },
		{ C_OFF(err_entry_not_found_cant_alloc_unexpected),
		  "C_CNTR_LPE_ERR_ENTRY_NOT_FOUND_CANT_ALLOC_UNEXPECTED" },
		{ C_OFF(err_entry_not_found_unlink_failed), "C_CNTR_LPE_ERR_ENTRY_NOT_FOUND_UNLINK_FAILED" },
		{ C_OFF(err_ptlte_sw_managed), "C_CNTR_LPE_ERR_PTLTE_SW_MANAGED" },
		{ C_OFF(err_search_no_match), "C_CNTR_LPE_ERR_SEARCH_NO_MATCH" },
		{ C_OFF(err_setstate_no_match), "C_CNTR_LPE_ERR_SETSTATE_NO_MATCH" },
		{ C_OFF(err_invalid_endpoint), "C_CNTR_LPE_ERR_INVALID_ENDPOINT" },
		{ C_OFF(unlink_cmds), "C_CNTR_LPE_UNLINK_CMDS" },
		{ C_OFF(unlink_success), "C_CNTR_LPE_UNLINK_SUCCESS" },
		{ C_OFF(search_cmds), "C_CNTR_LPE_SEARCH_CMDS" },
		{ C_OFF(search_success), "C_CNTR_LPE_SEARCH_SUCCESS" },
		{ C_OFF(search_fail), "C_CNTR_LPE_SEARCH_FAIL" },
		{ C_OFF(search_delete_cmds), "C_CNTR_LPE_SEARCH_DELETE_CMDS" },
		{ C_OFF(search_delete_success), "C_CNTR_LPE_SEARCH_DELETE_SUCCESS" },
		{ C_OFF(search_delete_fail), "C_CNTR_LPE_SEARCH_DELETE_FAIL" },
		{ C_OFF(put_cmds), "C_CNTR_LPE_PUT_CMDS" },
		{ C_OFF(rendezvous_put_cmds), "C_CNTR_LPE_RENDEZVOUS_PUT_CMDS" },
		{ C_OFF(get_cmds), "C_CNTR_LPE_GET_CMDS" },
		{ C_OFF(amo_cmds), "C_CNTR_LPE_AMO_CMDS" },
		{ C_OFF(fetch_amo_cmds), "C_CNTR_LPE_FAMO_CMDS" },
		{ C_OFF(events_enqueued), "C_CNTR_EE_EVENTS_ENQUEUED_CNTR_0" },
		{ C_OFF(events_dropped_ordinary), "C_CNTR_EE_EVENTS_DROPPED_ORDINARY_CNTR_0" },
		{ C_OFF(events_dropped_fc_sc), "C_CNTR_EE_EVENTS_DROPPED_FC_SC_CNTR_0" },
		{ C_OFF(pt_disabled_drops), "sim.pt_disabled_drops" },
		{ C_OFF(vni_not_found), "sim.vni_not_found" },
		{ C_OFF(ptlte_not_found), "sim.ptlte_not_found" },
		{ C_OFF(les_searched), "sim.les_searched" },
		{ C_OFF(le_bounds_errors), "sim.le_bounds_errors" },
		{ C_OFF(limit_hits), "sim.limit_hits" },
		{ C_OFF(tx_bytes), "sim.tx_bytes" },
		{ C_OFF(rx_bytes), "sim.rx_bytes" },
		{ C_OFF(pkts_tx), "sim.pkts_tx" },
		{ C_OFF(pkts_rx), "sim.pkts_rx" },
		{ C_OFF(cmdq_full), "sim.cmdq_full" },
		{ C_OFF(no_trs_nacks), "C_CNTR_PCT_NO_TRS_NACKS" },
		{ C_OFF(rh_retries), "sim.rh_retries" },
		{ C_OFF(trs_high_water), "sim.trs_high_water" },
		{ C_OFF(tx_busy_ps), "sim.tx_busy_ps" },
		{ C_OFF(pct_sct_open), "C_CNTR_PCT_CONN_SCT_OPEN" },
		{ C_OFF(pct_tct_open), "C_CNTR_PCT_CONN_TCT_OPEN" },
		{ C_OFF(no_tct_nacks), "C_CNTR_PCT_NO_TCT_NACKS" },
		{ C_OFF(pct_sct_high_water), "sim.pct_sct_high_water" },
		{ C_OFF(pct_tct_high_water), "sim.pct_tct_high_water" },
		{ C_OFF(pct_sct_full), "sim.pct_sct_full" },
		{ C_OFF(trig_cmds), "C_CNTR_TOU_NUM_TRIG_CMDS_0" },
		{ C_OFF(trig_canceled), "sim.trig_canceled" },
		{ C_OFF(tle_high_water), "sim.tle_high_water" },
	};
	/* PE-major: the counters a message's match bumps (requests, priority/overflow, success, use-once,
	 * busy time) are those of its PtlTE's PE, so one PE's slots sit together (two cache lines, not one
	 * line per counter).  The order is storage only: outputs are sorted by name. */
	for (unsigned pe = 0; pe < C_PE_COUNT; pe++)
		for (size_t k = 0; k < ARRAY_SIZE(per_pe); k++)
			tab_add(&t, per_pe[k].off + pe * sizeof(uint16_t), "%s_%u", per_pe[k].name, pe);
	for (size_t k = 0; k < ARRAY_SIZE(one); k++)
		tab_add(&t, one[k].off, "%s", one[k].name);
	for (unsigned e = 0; e < C_EVENT_TYPES; e++)
		if (strcmp(c_event_type_name(e), "UNKNOWN"))
			tab_add(&t, C_OFF(event_type) + e * sizeof(uint16_t), "C_CNTR_EE_EVENT_%s_CNTR", c_event_type_name(e));
	for (unsigned r = 0; r < 7; r++)
		tab_add(&t, C_OFF(fc_transitions) + r * sizeof(uint16_t), "sim.nic_state_change.%s", c_sc_reason_name(r));
	/* The pools' counters, one after the other: le_pool_fail is the first's place. */
	for (unsigned i = 0; i < C_LE_POOLS; i++)
		tab_add(&t, i ? NO_SLOT : C_OFF(le_pool_fail), "le_pool.%u.alloc_fail", i);
	if (t.n >= NIC_CIX_NONE)
		die("nic: %zu counters do not fit 16-bit places", t.n);
	memset(&nic_cix, 0xff, sizeof(nic_cix));
	for (size_t i = 0; i < t.n; i++)
		if (t.off[i] != NO_SLOT)
			*(uint16_t *)((char *)&nic_cix + t.off[i]) = (uint16_t)i;
	return &t;
}

/* Counters are created the first time a NIC is used (an LNI is allocated), so a scenario with 85,000
 * mostly idle NICs does not carry millions of zero counters; a used NIC's ~250 counters are one block. */
void nic_activate(struct nic *nic)
{
	if (nic->active)
		return;
	nic->active = true;
	const struct nic_ctr_table *t = ctr_table();
	nic->cv = stats_counter_block(sim_stats(nic->sim), t->names, t->n, "nic.%u", nic->addr);
}

void nic_count_limit(struct nic *nic)
{
	NIC_C(nic, limit_hits)++;
}

/* ---------------------------------------------------------------- services */

static struct nic_svc *svc_lookup(struct nic *nic, uint32_t id)
{
	if (id == 0 || id > nic->nsvcs || !nic->svcs[id - 1].live)
		return NULL;
	return &nic->svcs[id - 1];
}

static void svc_apply_pool_limits(struct nic *nic, const struct nic_svc_desc *d)
{
	const struct nic_rsrc_limit *l = &d->limits[NIC_RSRC_LE];
	for (unsigned pe = 0; pe < C_PE_COUNT; pe++) {
		if (!l->max && !l->res)
			continue;
		struct nic_le_pool *pl = nic_le_pool(nic, pe * C_LE_POOLS_PER_PE + d->le_pool);
		if (l->max)
			pl->max_alloc = l->max;
		if (l->res)
			pl->reserved = l->res;
	}
}

int nic_svc_alloc(struct nic *nic, const struct nic_svc_desc *d, uint32_t *svc_id)
{
	if (!d || !svc_id || d->num_vnis > NIC_SVC_MAX_VNIS || d->le_pool >= C_LE_POOLS_PER_PE)
		return -EINVAL;
	if (d->restricted_vnis && d->num_vnis == 0)
		return -EINVAL;
	for (int r = 0; r < NIC_RSRC_COUNT; r++)
		if (d->limits[r].max && d->limits[r].res > d->limits[r].max)
			return -EINVAL;
	nic->svcs = xrealloc(nic->svcs, (nic->nsvcs + 1) * sizeof(*nic->svcs));
	struct nic_svc *s = &nic->svcs[nic->nsvcs++];
	memset(s, 0, sizeof(*s));
	s->live = true;
	s->id = nic->nsvcs;
	s->d = *d;
	svc_apply_pool_limits(nic, d);
	*svc_id = s->id;
	return 0;
}

int nic_svc_free(struct nic *nic, uint32_t svc_id)
{
	struct nic_svc *s = svc_lookup(nic, svc_id);
	if (!s || svc_id == NIC_SVC_DEFAULT)
		return -ENOENT;
	if (s->lnis)
		return -EBUSY;
	s->live = false;
	return 0;
}

const struct nic_svc_desc *nic_svc_get(struct nic *nic, uint32_t svc_id)
{
	struct nic_svc *s = svc_lookup(nic, svc_id);
	return s ? &s->d : NULL;
}

int nic_svc_rsrc_use(struct nic *nic, uint32_t svc_id, enum nic_rsrc r, uint32_t *in_use, uint32_t *res)
{
	struct nic_svc *s = svc_lookup(nic, svc_id);
	if (!s || (unsigned)r >= NIC_RSRC_COUNT)
		return -ENOENT;
	const struct nic_rsrc_limit *l = &s->d.limits[r];
	uint32_t hw = r == NIC_RSRC_TLE ? nic->p->tles : nic_rsrc_max_default(r);
	if (in_use)
		*in_use = s->used[r];
	if (res)
		*res = l->res ? l->res : l->max ? l->max : hw;
	return 0;
}

bool nic_svc_vni_ok(struct nic *nic, uint32_t svc_id, uint16_t vni);
bool nic_svc_vni_ok(struct nic *nic, uint32_t svc_id, uint16_t vni)
{
	struct nic_svc *s = svc_lookup(nic, svc_id);
	if (!s)
		return false;
	if (!s->d.restricted_vnis)
		return true;
	for (unsigned i = 0; i < s->d.num_vnis; i++)
		if (s->d.vnis[i] == vni)
			return true;
	return false;
}

/* Charge one resource to the LNI's service; -ENOSPC past the service's max. */
int nic_rsrc_get(struct nic_lni *lni, enum nic_rsrc r);
int nic_rsrc_get(struct nic_lni *lni, enum nic_rsrc r)
{
	struct nic_svc *s = svc_lookup(lni->nic, lni->svc_id);
	if (!s || (unsigned)r >= NIC_RSRC_COUNT)
		return -EINVAL;
	uint32_t max = s->d.limits[r].max ? s->d.limits[r].max : nic_rsrc_max_default(r);
	if (s->used[r] >= max) {
		nic_count_limit(lni->nic);
		return -ENOSPC;
	}
	s->used[r]++;
	lni->used[r]++;
	return 0;
}

void nic_rsrc_put(struct nic_lni *lni, enum nic_rsrc r);
void nic_rsrc_put(struct nic_lni *lni, enum nic_rsrc r)
{
	struct nic_svc *s = svc_lookup(lni->nic, lni->svc_id);
	if ((unsigned)r >= NIC_RSRC_COUNT)
		return;
	if (s && s->used[r])
		s->used[r]--;
	if (lni->used[r])
		lni->used[r]--;
}

uint8_t nic_svc_le_pool(struct nic *nic, uint32_t svc_id);
uint8_t nic_svc_le_pool(struct nic *nic, uint32_t svc_id)
{
	struct nic_svc *s = svc_lookup(nic, svc_id);
	return s ? s->d.le_pool : 0;
}

/* ---------------------------------------------------------------- LNIs */

int nic_lni_alloc(struct nic *nic, uint32_t svc_id, const struct nic_mem_ops *mem, void *mem_ctx,
		  struct nic_lni **out)
{
	if (!nic || !out)
		return -EINVAL;
	nic_activate(nic);
	struct nic_svc *s = svc_lookup(nic, svc_id);
	if (!s)
		return -ENOENT;
	struct nic_lni *l = pool_get(&nic->rec->lni);
	memset(l, 0, sizeof(*l));
	l->nic = nic;
	l->svc_id = svc_id;
	l->mem = mem;
	l->mem_ctx = mem_ctx;
	l->live = true;
	l->id = nic->nlnis;
	nic->lnis = xrealloc(nic->lnis, (nic->nlnis + 1) * sizeof(*nic->lnis));
	nic->lnis[nic->nlnis++] = l;
	s->lnis++;
	*out = l;
	return 0;
}

void nic_cmdqs_free_lni(struct nic *nic, struct nic_lni *lni);

void nic_lni_free(struct nic_lni *lni)
{
	if (!lni || !lni->live)
		return;
	struct nic *nic = lni->nic;
	nic_cmdqs_free_lni(nic, lni);
	nic_ptes_free_lni(nic, lni);
	nic_cts_free_lni(nic, lni);
	nic_eqs_free_lni(nic, lni);
	struct nic_svc *s = svc_lookup(nic, lni->svc_id);
	if (s && s->lnis)
		s->lnis--;
	/* The record stays (transactions in flight may still name it); it is freed with the NIC. */
	lni->live = false;
}

struct nic *nic_lni_nic(const struct nic_lni *lni)
{
	return lni->nic;
}

uint32_t nic_lni_svc(const struct nic_lni *lni)
{
	return lni->svc_id;
}

/* ---------------------------------------------------------------- build */

static void nic_init_one(struct nic_world *w, struct sim *sim, struct nic *nic, uint32_t addr)
{
	nic->sim = sim;
	nic->addr = addr;
	nic->p = &w->p;
	nic->fabric = fabric_of(sim);
	nic->rec = &w->rec;
	for (unsigned pe = 0; pe < C_PE_COUNT; pe++) {
		nic->pe[pe].q = nic->pe[pe].inl;
		nic->pe[pe].qcap = NIC_PE_INLINE;
	}
	/* The default service: unrestricted VNIs, hardware limits, pool 0 on every PE. */
	struct nic_svc_desc d = { 0 };
	nic->svcs = xcalloc(1, sizeof(*nic->svcs));
	nic->nsvcs = 1;
	nic->svcs[0].live = true;
	nic->svcs[0].id = NIC_SVC_DEFAULT;
	nic->svcs[0].d = d;
	for (uint32_t i = 0; i < w->npool_cfg; i++) {
		struct nic_le_pool *pl = nic_le_pool(nic, w->pool_cfg[i].index);
		if (w->pool_cfg[i].has_max)
			pl->max_alloc = w->pool_cfg[i].max_alloc;
		if (w->pool_cfg[i].has_res)
			pl->reserved = w->pool_cfg[i].reserved;
	}
	for (uint32_t i = 0; i < w->nsvcs; i++) {
		uint32_t id;
		if (nic_svc_alloc(nic, &w->svcs[i], &id) != 0)
			die("nic: scenario service %u rejected", i);
		w->svc_ids[i] = id;
	}
	fabric_attach(nic->fabric, addr, nic_lpe_rx, nic);
}

void nic_cmdq_zombies_free(struct nic *nic);

static void nic_free_one(struct nic *nic)
{
	for (uint32_t i = 0; i < nic->nlnis; i++)
		nic_lni_free(nic->lnis[i]);
	nic_cmdq_zombies_free(nic);
	free(nic->lnis);
	for (uint32_t i = 0; i < nic->eqs.n; i++)
		nic_eq_ring_free(nic->eqs.rec[i]);
	nic_table_free(&nic->eqs);
	nic_table_free(&nic->cts);
	nic_table_free(&nic->ptes);
	free(nic->svcs);
	free(nic->pools);
	free(nic->map_keys);
	free(nic->map_vals);
	free(nic->vni_keys);
	free(nic->vni_counts);
	for (unsigned pe = 0; pe < C_PE_COUNT; pe++)
		if (nic->pe[pe].q != nic->pe[pe].inl)
			free(nic->pe[pe].q);
	nic_pct_free(nic);
	free(nic);
}

static void world_free(void *p)
{
	struct nic_world *w = p;
	for (uint32_t i = 0; i < w->n; i++)
		nic_free_one(w->nics[i]);
	free(w->nics);
	pool_free_all(&w->rec.le_work);
	pool_free_all(&w->rec.pkt_ule);
	pool_free_all(&w->rec.op);
	pool_free_all(&w->rec.evrec);
	pool_free_all(&w->rec.eq);
	pool_free_all(&w->rec.pte);
	pool_free_all(&w->rec.ct);
	pool_free_all(&w->rec.lni);
	pool_free_all(&w->rec.cmdq);
	arena_free(&w->rec.block);
	free(w->svcs);
	free(w->svc_ids);
	free(w->pool_cfg);
	free(w);
}

static void read_params(struct nic_world *w, const struct cfg *c)
{
	const struct param *t = nic_params_table;
	struct nic_params *p = &w->p;
	p->pcie_latency = (simtime_t)(param_get(c, &t[P_PCIE_LAT]) * 1000.0 + 0.5);
	p->pcie_ps_per_byte = 8000.0 / param_get(c, &t[P_PCIE_GBPS]);
	/* A read's tag is held for a round trip, so the window bounds the read rate below PCIe's own. */
	double window_rate = 2.0 * (double)p->pcie_latency / param_get(c, &t[P_DMA_READ_WINDOW]);
	p->dma_read_ps_per_byte = window_rate > p->pcie_ps_per_byte ? window_rate : p->pcie_ps_per_byte;
	p->doorbell = (simtime_t)(param_get(c, &t[P_DOORBELL]) * 1000.0 + 0.5);
	p->tx_cmd = (simtime_t)(param_get(c, &t[P_TX_CMD]) * 1000.0 + 0.5);
	p->idc_per_64b = (simtime_t)(param_get(c, &t[P_IDC64]) * 1000.0 + 0.5);
	p->tgt_cmd = (simtime_t)(param_get(c, &t[P_TGT_CMD]) * 1000.0 + 0.5);
	p->match_base = (simtime_t)(param_get(c, &t[P_MATCH_BASE]) * 1000.0 + 0.5);
	p->match_per_le = (simtime_t)(param_get(c, &t[P_MATCH_LE]) * 1000.0 + 0.5);
	p->event_write = (simtime_t)(param_get(c, &t[P_EVENT_WRITE]) * 1000.0 + 0.5);
	p->ack_gen = (simtime_t)(param_get(c, &t[P_ACK_GEN]) * 1000.0 + 0.5);
	p->le_pool_max_alloc = (uint32_t)param_get_u64(c, &t[P_POOL_MAX]);
	p->le_pool_reserved = (uint32_t)param_get_u64(c, &t[P_POOL_RES]);
	p->pe_les = (uint32_t)param_get_u64(c, &t[P_PE_LES]);
	p->cmdq_slots_max = (uint32_t)param_get_u64(c, &t[P_CMDQ_MAX]);
	p->eq_slots_max = (uint32_t)param_get_u64(c, &t[P_EQ_MAX]);
	p->trs_entries = (uint32_t)param_get_u64(c, &t[P_TRS]);
	p->rh_retry = (simtime_t)(param_get(c, &t[P_RH_RETRY]) * 1e6 + 0.5);
	p->pct_sct_entries = (uint32_t)param_get_u64(c, &t[P_PCT_SCT]);
	p->pct_tct_entries = (uint32_t)param_get_u64(c, &t[P_PCT_TCT]);
	p->pct_pid_mask = (uint32_t)param_get_u64(c, &t[P_PCT_PID_MASK]);
	p->pct_idle = (simtime_t)(param_get(c, &t[P_PCT_IDLE]) * 1e6 + 0.5);
	p->pct_conn = (simtime_t)(param_get(c, &t[P_PCT_CONN]) * 1000.0 + 0.5);
	p->amo_unit = (simtime_t)(param_get(c, &t[P_AMO_UNIT]) * 1000.0 + 0.5);
	p->trig_release = (simtime_t)(param_get(c, &t[P_TRIG_RELEASE]) * 1000.0 + 0.5);
	p->tles = (uint32_t)param_get_u64(c, &t[P_TLES]);
	if (p->le_pool_reserved > p->le_pool_max_alloc)
		cfg_fail(c, "le_pool_reserved", "exceeds le_pool_max_alloc (%u)", p->le_pool_max_alloc);
}

/* nic.le_pools: [{index: 0, max_alloc: 10, reserved: 0}, {pool: 0, max_alloc: 10}] -- `pool` applies to
 * that pool on all four PEs (as the upstream test script does for le_pools[0,16,32,48]). */
static void read_pools(struct nic_world *w, const struct cfg *c)
{
	int n = cfg_array_len(c, "le_pools");
	for (int i = 0; i < n; i++) {
		struct cfg e = cfg_array_obj(c, "le_pools", i);
		bool has_index = cfg_has(&e, "index"), has_pool = cfg_has(&e, "pool");
		if (has_index == has_pool)
			cfg_fail(&e, "index", "give exactly one of 'index' (0..63) or 'pool' (0..15, every PE)");
		uint32_t first, step, count;
		if (has_index) {
			first = (uint32_t)cfg_u64(&e, "index", 0, 0, C_LE_POOLS - 1);
			step = 1;
			count = 1;
		} else {
			first = (uint32_t)cfg_u64(&e, "pool", 0, 0, C_LE_POOLS_PER_PE - 1);
			step = C_LE_POOLS_PER_PE;
			count = C_PE_COUNT;
		}
		bool has_max = cfg_has(&e, "max_alloc"), has_res = cfg_has(&e, "reserved");
		uint32_t max = (uint32_t)cfg_u64(&e, "max_alloc", 0, 0, w->p.pe_les);
		uint32_t res = (uint32_t)cfg_u64(&e, "reserved", 0, 0, w->p.pe_les);
		if (has_max && has_res && res > max)
			cfg_fail(&e, "reserved", "exceeds max_alloc (%u)", max);
		for (uint32_t k = 0; k < count; k++) {
			w->pool_cfg = xrealloc(w->pool_cfg, (w->npool_cfg + 1) * sizeof(*w->pool_cfg));
			w->pool_cfg[w->npool_cfg].index = first + k * step;
			w->pool_cfg[w->npool_cfg].max_alloc = max;
			w->pool_cfg[w->npool_cfg].reserved = res;
			w->pool_cfg[w->npool_cfg].has_max = has_max;
			w->pool_cfg[w->npool_cfg].has_res = has_res;
			w->npool_cfg++;
		}
	}
}

static const char *const rsrc_names[NIC_RSRC_COUNT] = { "ptlte", "txq", "tgq", "eq", "ct", "le", "ac", "tle" };

/* nic.services: [{vnis: [5, 7], le_pool: 1, limits: {le: {max: 100, res: 10}}}] -- created on every NIC
 * with ids 2, 3, ... in order. */
static void read_services(struct nic_world *w, const struct cfg *c)
{
	int n = cfg_array_len(c, "services");
	w->svcs = xcalloc(n ? (size_t)n : 1, sizeof(*w->svcs));
	w->svc_ids = xcalloc(n ? (size_t)n : 1, sizeof(*w->svc_ids));
	w->nsvcs = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		struct cfg e = cfg_array_obj(c, "services", i);
		struct nic_svc_desc *d = &w->svcs[i];
		int nv = cfg_array_len(&e, "vnis");
		if (nv > NIC_SVC_MAX_VNIS)
			cfg_fail(&e, "vnis", "at most %d VNIs per service", NIC_SVC_MAX_VNIS);
		d->num_vnis = (uint8_t)nv;
		d->restricted_vnis = nv > 0;
		for (int v = 0; v < nv; v++)
			d->vnis[v] = (uint16_t)cfg_array_u64(&e, "vnis", v, 0, 65535);
		d->le_pool = (uint8_t)cfg_u64(&e, "le_pool", 0, 0, C_LE_POOLS_PER_PE - 1);
		struct cfg lim = cfg_section(&e, "limits");
		for (int r = 0; r < NIC_RSRC_COUNT; r++) {
			struct cfg one = cfg_section(&lim, rsrc_names[r]);
			d->limits[r].max = (uint32_t)cfg_u64(&one, "max", 0, 0, nic_rsrc_max_default(r));
			d->limits[r].res = (uint32_t)cfg_u64(&one, "res", 0, 0, nic_rsrc_max_default(r));
			if (d->limits[r].max && d->limits[r].res > d->limits[r].max)
				cfg_fail(&one, "res", "exceeds max (%u)", d->limits[r].max);
		}
	}
}

void nic_le_pools_timeseries(struct nic *nic, const uint8_t *svc_pools, unsigned nsvc_pools);

/* nic.timeseries_nics: [1, ...] -- sample LE use of every service pool and the limit-hit counter of these
 * NICs into timeseries.csv. */
static void read_timeseries(struct nic_world *w, struct sim *sim, const struct cfg *c)
{
	int n = cfg_array_len(c, "timeseries_nics");
	uint8_t pools[1 + 16];
	unsigned np = 0;
	pools[np++] = 0;
	for (uint32_t k = 0; k < w->nsvcs && np < ARRAY_SIZE(pools); k++) {
		bool seen = false;
		for (unsigned j = 0; j < np; j++)
			seen |= pools[j] == w->svcs[k].le_pool;
		if (!seen)
			pools[np++] = w->svcs[k].le_pool;
	}
	for (int i = 0; i < n; i++) {
		uint32_t a = (uint32_t)cfg_array_u64(c, "timeseries_nics", i, 0, w->n ? w->n - 1 : 0);
		struct nic *nic = w->nics[a];
		nic_activate(nic);
		nic_le_pools_timeseries(nic, pools, np);
		char col[64];
		snprintf(col, sizeof(col), "nic.%u.limit_hits", a);
		ts_register(sim, col, &NIC_C(nic, limit_hits));
	}
}

static void nic_build(struct sim *sim, const struct cfg *c)
{
	struct fabric *f = fabric_of(sim);
	if (!f)
		cfg_fail(c, "count", "the nic model needs a 'fabric' section");
	struct nic_world *w = xcalloc(1, sizeof(*w));
	pool_init(&w->rec.le_work, sizeof(struct nic_le) > sizeof(struct nic_work) ? sizeof(struct nic_le) : sizeof(struct nic_work),
		  1024);
	pool_init(&w->rec.pkt_ule, sizeof(struct nic_pkt) > sizeof(struct nic_ule) ? sizeof(struct nic_pkt) : sizeof(struct nic_ule),
		  1024);
	pool_init(&w->rec.op, sizeof(struct nic_op), 1024);
	pool_init(&w->rec.evrec, sizeof(struct nic_event) + 32, 1024);
	w->rec.block.align = 8;
	pool_init_from(&w->rec.eq, sizeof(struct nic_eq), &w->rec.block);
	pool_init_from(&w->rec.pte, sizeof(struct nic_pte), &w->rec.block);
	pool_init_from(&w->rec.ct, sizeof(struct nic_ct), &w->rec.block);
	pool_init_from(&w->rec.lni, sizeof(struct nic_lni), &w->rec.block);
	pool_init_from(&w->rec.cmdq, nic_cmdq_record_size, &w->rec.block);
	nic_lpe_prefetch_hooks(sim);
	nic_eq_prefetch_hooks(sim);
	nic_initiator_prefetch_hooks(sim);
	nic_cmdq_prefetch_hooks(sim);
	read_params(w, c);
	read_pools(w, c);
	read_services(w, c);
	uint32_t n = (uint32_t)param_get_u64(c, &nic_params_table[P_COUNT]);
	uint32_t ep = fabric_num_endpoints(f);
	if (n == 0)
		n = ep;
	if (n > ep)
		cfg_fail(c, "count", "%u NICs but the fabric has %u endpoints", n, ep);
	w->n = n;
	w->nics = xcalloc(n, sizeof(*w->nics));
	sim_world_set(sim, "nic", w);
	sim_on_destroy(sim, world_free, w);
	for (uint32_t i = 0; i < n; i++) {
		w->nics[i] = xcalloc(1, sizeof(struct nic));
		nic_init_one(w, sim, w->nics[i], i);
	}
	read_timeseries(w, sim, c);
}

static void sum_counter(struct sim *sim, uint32_t n, const char *name, uint64_t *out)
{
	char buf[160];
	for (uint32_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "nic.%u.%s", i, name);
		uint64_t *c = stats_find_counter(sim_stats(sim), buf);
		if (c)
			*out += *c;
	}
}

static void nic_summary(struct sim *sim, FILE *f)
{
	struct nic_world *w = world(sim);
	uint64_t v[8] = { 0 };
	static const char *const names[] = { "sim.pt_disabled_drops", "sim.vni_not_found", "sim.limit_hits",
					     "C_CNTR_EE_EVENTS_DROPPED_ORDINARY_CNTR_0", "sim.pkts_tx",
					     "sim.les_searched", "sim.ptlte_not_found", "C_CNTR_LPE_ERR_NO_SPACE_APPEND" };
	for (unsigned i = 0; i < ARRAY_SIZE(names); i++)
		sum_counter(sim, w->n, names[i], &v[i]);
	uint32_t hw = 0;
	for (uint32_t i = 0; i < w->n; i++)
		for (unsigned p = 0; p < w->nics[i]->npools; p++)
			if (w->nics[i]->pools[p].high_water > hw)
				hw = w->nics[i]->pools[p].high_water;
	fprintf(f,
		"{\"nics\": %u, \"pt_disabled_drops\": %llu, \"vni_drops\": %llu, \"limit_hits\": %llu, "
		"\"events_dropped\": %llu, \"packets\": %llu, \"les_searched\": %llu, \"ptlte_not_found\": %llu, "
		"\"append_no_space\": %llu, \"le_pool_high_water\": %u}",
		w->n, (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2],
		(unsigned long long)v[3], (unsigned long long)v[4], (unsigned long long)v[5],
		(unsigned long long)v[6], (unsigned long long)v[7], hw);
}

/* ---------------------------------------------------------------- memory accounting */

static uint64_t table_bytes(const struct nic_table *t)
{
	return (uint64_t)t->cap * sizeof(*t->rec);
}

/* Bytes of the EQs (with their rings), PtlTEs, CTs and command queues owned by `lni`, or by every LNI of
 * the NIC (lni NULL); with `les`, also the LEs on those PtlTEs' lists (records of the NIC's LE pool). */
static uint64_t owned_bytes(struct nic *nic, const struct nic_lni *lni, bool les)
{
	uint64_t b = 0;
	for (uint32_t i = 0; i < nic->eqs.n; i++) {
		const struct nic_eq *q = nic->eqs.rec[i];
		if (q->live && (!lni || q->lni == lni))
			b += sizeof(*q) + (q->ring == &q->inl ? 0 : (uint64_t)q->ring_cap * sizeof(struct nic_event));
	}
	for (uint32_t i = 0; i < nic->ptes.n; i++) {
		const struct nic_pte *p = nic->ptes.rec[i];
		if (!p->live || (lni && p->lni != lni))
			continue;
		b += sizeof(*p);
		for (unsigned l = 0; les && l < 4; l++)
			b += (uint64_t)p->lists[l].count *
			     (l == C_PTL_LIST_UNEXPECTED ? nic->rec->pkt_ule.obj_size : nic->rec->le_work.obj_size);
	}
	for (uint32_t i = 0; i < nic->cts.n; i++) {
		const struct nic_ct *c = nic->cts.rec[i];
		if (c->live && (!lni || c->lni == lni))
			b += sizeof(*c);
	}
	return b + nic_cmdqs_bytes(nic, lni, NULL);
}

uint64_t nic_lni_bytes(const struct nic_lni *lni)
{
	return sizeof(*lni) + owned_bytes(lni->nic, lni, true);
}

/* A NIC's own state: the record, its services, tables, maps and PE queues (not what its LNIs own). */
static uint64_t nic_core_bytes(const struct nic *nic)
{
	uint64_t b = sizeof(*nic) + (uint64_t)nic->nsvcs * sizeof(*nic->svcs) + (uint64_t)nic->nlnis * sizeof(*nic->lnis);
	b += (uint64_t)nic->pools_cap * sizeof(*nic->pools);
	b += table_bytes(&nic->ptes) + table_bytes(&nic->eqs) + table_bytes(&nic->cts);
	b += (uint64_t)nic->map_cap * (sizeof(*nic->map_keys) + sizeof(*nic->map_vals));
	b += (uint64_t)nic->vni_cap * (sizeof(*nic->vni_keys) + sizeof(*nic->vni_counts));
	for (unsigned pe = 0; pe < C_PE_COUNT; pe++)
		if (nic->pe[pe].q != nic->pe[pe].inl)
			b += (uint64_t)nic->pe[pe].qcap * sizeof(*nic->pe[pe].q);
	return b + nic_pct_bytes(nic);
}

static uint64_t records_bytes(const struct nic_records *r)
{
	return pool_bytes(&r->le_work) + pool_bytes(&r->pkt_ule) + pool_bytes(&r->op) + pool_bytes(&r->evrec);
}

static void nic_memory(struct sim *sim, struct mem_report *r)
{
	struct nic_world *w = world(sim);
	uint64_t core = sizeof(*w) + (uint64_t)w->n * sizeof(*w->nics), lnis = 0, owned = 0;
	uint64_t idle = 0, idle_b = 0, recs = records_bytes(&w->rec);
	for (uint32_t i = 0; i < w->n; i++) {
		struct nic *nic = w->nics[i];
		uint64_t c = nic_core_bytes(nic);
		core += c;
		if (!nic->active) {
			idle++;
			idle_b += c;
		}
		lnis += nic->nlnis;
		owned += (uint64_t)nic->nlnis * sizeof(struct nic_lni) + owned_bytes(nic, NULL, false);
	}
	mem_add(r, "nic.core", w->n, core);
	mem_add(r, "nic.records", w->rec.le_work.allocated + w->rec.pkt_ule.allocated + w->rec.op.allocated +
					  w->rec.evrec.allocated, recs);
	mem_add(r, "nic.endpoint_state", lnis, owned);
	mem_unit(r, "nic", w->n, core + recs);
	mem_unit(r, "idle_nic", idle, idle_b);
	const struct { const char *name; const struct pool *p; } pools[] = {
		{ "nic.le_work", &w->rec.le_work }, { "nic.pkt_ule", &w->rec.pkt_ule },
		{ "nic.op", &w->rec.op }, { "nic.evrec", &w->rec.evrec },
	};
	for (unsigned i = 0; i < ARRAY_SIZE(pools); i++)
		mem_pool(r, pools[i].name, pools[i].p->obj_size, pools[i].p->allocated, pools[i].p->live,
			 pool_bytes(pools[i].p));
	sw_memory(sim, r);
}

static struct model nic_model = {
	.key = "nic",
	.order = 20,
	.build = nic_build,
	.summary = nic_summary,
	.memory = nic_memory,
	.params = nic_params_table,
	.nparams = ARRAY_SIZE(nic_params_table),
};
MODEL_REGISTER(nic_model)

/* Scenario service i (0-based in nic.services) has this id on every NIC. */
uint32_t nic_scenario_svc_id(struct sim *sim, uint32_t i);
uint32_t nic_scenario_svc_id(struct sim *sim, uint32_t i)
{
	struct nic_world *w = world(sim);
	return w && i < w->nsvcs ? w->svc_ids[i] : 0;
}

void *nic_table_slot(struct nic_table *t, uint32_t i, struct pool *records)
{
	if (i == t->n) {
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 8;
			t->rec = xrealloc(t->rec, t->cap * sizeof(*t->rec));
		}
		t->rec[t->n++] = pool_get(records);
	}
	memset(t->rec[i], 0, records->obj_size);
	return t->rec[i];
}

void nic_table_free(struct nic_table *t)
{
	free(t->rec);
	*t = (struct nic_table){ 0 };
}
