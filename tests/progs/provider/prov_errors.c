/* Misuse of the provider gives the right -FI_E* code (never a crash), and the provider-specific option
 * numbers are the upstream ones. */
#include "common.h"

static void check_option_numbers(void)
{
	T_CHECK(FI_PROV_SPECIFIC_CXI == (0xccc << 16), "FI_PROV_SPECIFIC_CXI = 0xccc << 16");
	T_CHECK(FI_OPT_CXI_SET_TCLASS == -(0xccc << 16), "FI_OPT_CXI_SET_TCLASS = %d", FI_OPT_CXI_SET_TCLASS);
	T_CHECK(FI_OPT_CXI_SET_MSG_ORDER == FI_OPT_CXI_SET_TCLASS + 1, "SET_MSG_ORDER follows");
	T_CHECK(FI_OPT_CXI_SET_MR_MATCH_EVENTS == FI_OPT_CXI_SET_TCLASS + 3, "SET_MR_MATCH_EVENTS = %d",
		FI_OPT_CXI_SET_MR_MATCH_EVENTS);
	T_CHECK(FI_OPT_CXI_SET_PROV_KEY_CACHE == FI_OPT_CXI_SET_TCLASS + 7, "SET_PROV_KEY_CACHE = %d",
		FI_OPT_CXI_SET_PROV_KEY_CACHE);
	T_CHECK(FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME == FI_OPT_CXI_SET_TCLASS + 9, "SET_RNR_MAX_RETRY_TIME = %d",
		FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME);
	T_CHECK(FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS == FI_OPT_CXI_SET_TCLASS + 14,
		"GET_RNR_APPEND_RETRY_ATTEMPTS = %d", FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS);
}

static void check_getinfo(void)
{
	struct fi_info *h = t_hints(FI_TAGGED), *info = NULL;
	h->ep_attr->type = FI_EP_MSG;
	T_CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info) == -FI_ENODATA, "FI_EP_MSG: -FI_ENODATA");
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED | FI_COLLECTIVE;
	T_CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info) == -FI_ENODATA, "FI_COLLECTIVE: -FI_ENODATA");
	h->caps = FI_TAGGED;
	h->tx_attr->inject_size = 193;
	T_CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info) == -FI_ENODATA, "inject_size 193: -FI_ENODATA");
	h->tx_attr->inject_size = 0;
	h->domain_attr->cq_data_size = 16;
	T_CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info) == -FI_ENODATA, "cq_data_size 16: -FI_ENODATA");
	h->domain_attr->cq_data_size = 8;
	T_CHECK(fi_getinfo(FI_VERSION(1, 17), "cxi0", "600", FI_SOURCE, h, &info) == -FI_ENODATA,
		"service 600 (pid above 510): -FI_ENODATA");
	T_CHECK(fi_getinfo(FI_VERSION(1, 17), "cxi99", NULL, FI_SOURCE, h, &info) == -FI_ENODATA,
		"node cxi99: -FI_ENODATA");
	int r = fi_getinfo(FI_VERSION(1, 17), "cxi0", "7", FI_SOURCE, h, &info);
	T_CHECK(r == 0 && info, "node cxi0 service 7: found");
	if (!r) {
		T_CHECK(!strcmp(info->domain_attr->name, "cxi0"), "domain cxi0");
		uint32_t first32;
		memcpy(&first32, info->src_addr, 4);
		T_CHECK((first32 & 511) == 7, "src_addr pid 7");
		fi_freeinfo(info);
	}
	fi_freeinfo(h);
}

static void check_ep_errors(void)
{
	struct t_ep t;
	struct fi_info *h = t_hints(FI_TAGGED | FI_MSG | FI_RMA | FI_MULTI_RECV);
	t_open_with(&t, h, NULL, false);
	char name[8];
	size_t len = sizeof(name);
	char buf[256] = { 0 };
	T_CHECK(fi_getname(&t.ep->fid, name, &len) == -FI_EOPBADSTATE, "fi_getname before enable: -FI_EOPBADSTATE");
	T_CHECK(fi_send(t.ep, buf, 8, NULL, 0, NULL) == -FI_EOPBADSTATE, "fi_send before enable: -FI_EOPBADSTATE");
	T_OK(fi_enable(t.ep));
	len = 7;
	T_CHECK(fi_getname(&t.ep->fid, name, &len) == -FI_ETOOSMALL && len == 8,
		"fi_getname with addrlen 7: -FI_ETOOSMALL, addrlen 8");
	len = 8;
	T_OK(fi_getname(&t.ep->fid, name, &len));
	T_CHECK(((uint16_t *)name)[2] == 0, "fi_getname reports vni 0");
	struct fid_cq *cq2;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT };
	T_OK(fi_cq_open(t.dom, &ca, &cq2, NULL));
	T_CHECK(fi_ep_bind(t.ep, &cq2->fid, FI_RECV) == -FI_EOPBADSTATE, "bind after enable: -FI_EOPBADSTATE");
	T_OK(fi_close(&cq2->fid));
	fi_addr_t self = t_insert(&t, t.name);
	T_CHECK(fi_send(t.ep, buf, 8, NULL, self + 100, NULL) == -FI_EINVAL, "send to unknown fi_addr: -FI_EINVAL");
	T_CHECK(fi_inject(t.ep, buf, 193, self) == -FI_EMSGSIZE, "inject of 193 bytes: -FI_EMSGSIZE");
	T_CHECK(fi_tinject(t.ep, buf, 8, self, 1ULL << 48) == -FI_EINVAL, "tag above 48 bits: -FI_EINVAL");
	struct iovec iov[2] = { { buf, 8 }, { buf + 8, 8 } };
	T_CHECK(fi_sendv(t.ep, iov, NULL, 2, self, NULL) == -FI_EINVAL, "two iovs (iov_limit 1): -FI_EINVAL");
	struct fi_msg_tagged tm = { .msg_iov = iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC };
	T_CHECK(fi_trecvmsg(t.ep, &tm, FI_MULTI_RECV) == -FI_EINVAL, "tagged multi-recv: -FI_EINVAL");
	struct fi_msg m = { .msg_iov = iov, .iov_count = 1, .addr = self };
	T_CHECK(fi_sendmsg(t.ep, &m, 1ULL << 23) == -FI_EBADFLAGS, "unknown send flag (bit 23): -FI_EBADFLAGS");
	uint32_t tc = 12345;
	T_CHECK(fi_set_val(&t.ep->fid, FI_OPT_CXI_SET_TCLASS, &tc) == -FI_EINVAL, "bad traffic class: -FI_EINVAL");
	uint64_t us = 10;
	T_CHECK(fi_set_val(&t.ep->fid, FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME, &us) == -FI_EINVAL,
		"RNR timeout on an FI_PROTO_CXI endpoint: -FI_EINVAL");
	uint64_t order = 1ULL << 40;
	T_CHECK(fi_set_val(&t.ep->fid, FI_OPT_CXI_SET_MSG_ORDER, &order) == -FI_EINVAL, "bad message order: -FI_EINVAL");
	T_CHECK(fi_set_val(&t.ep->fid, 77, &us) == -FI_EINVAL, "unknown fi_set_val option: -FI_EINVAL");
	size_t mmr = 0;
	len = sizeof(mmr);
	T_CHECK(fi_getopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mmr, &len) == 0 && mmr == 64,
		"FI_OPT_MIN_MULTI_RECV default 64");
	T_CHECK(fi_setopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &mmr, sizeof(mmr)) == -FI_ENOPROTOOPT,
		"unsupported option: -FI_ENOPROTOOPT");
	mmr = 1 << 24;
	T_CHECK(fi_setopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mmr, sizeof(mmr)) == -FI_EINVAL,
		"min_multi_recv 2^24: -FI_EINVAL");
	T_CHECK(fi_close(&t.dom->fid) == -FI_EBUSY, "close domain with objects open: -FI_EBUSY");
	T_CHECK(fi_close(&t.cq->fid) == -FI_EBUSY, "close CQ bound to an endpoint: -FI_EBUSY");
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	T_CHECK(fi_mr_enable(mr) == -FI_EOPBADSTATE, "MR enable before bind (FI_MR_ENDPOINT): -FI_EOPBADSTATE");
	T_CHECK(fi_mr_reg(t.dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 1ULL << 30, &mr, NULL) == -FI_EBADFLAGS,
		"MR flag not supported: -FI_EBADFLAGS");
	struct fi_cxi_av_auth_key_ops *kops;
	T_OK(fi_open_ops(&t.av->fid, FI_CXI_AV_AUTH_KEY_OPS, 0, (void **)&kops, NULL));
	struct cxi_auth_key key = { .svc_id = 1, .vni = 5 };
	fi_addr_t ka;
	T_CHECK(kops->insert_auth_key(t.av, &key, sizeof(key), &ka, 0) == -FI_EINVAL,
		"auth key insert on a domain without FI_AV_AUTH_KEY: -FI_EINVAL");
	T_CHECK(kops->max_ep_auth_key(t.av) == 1, "max_ep_auth_key 1 without FI_AV_AUTH_KEY");
	T_CHECK(fi_av_insert(t.av, name, 1, NULL, 1ULL << 50, NULL) == -FI_EBADFLAGS, "AV insert bad flag: -FI_EBADFLAGS");
	struct fi_av_attr aa = { .type = FI_AV_TABLE, .rx_ctx_bits = 4 };
	struct fid_av *av2;
	T_CHECK(fi_av_open(t.dom, &aa, &av2, NULL) == -FI_EINVAL, "AV with rx_ctx_bits: -FI_EINVAL");
	T_OK(fi_close(&mr->fid));
	t_close(&t);
	fi_freeinfo(h);
}

static void check_client_keys(void)
{
	struct t_ep t;
	struct fi_info *h = t_hints(FI_TAGGED | FI_RMA);
	h->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED; /* client keys */
	t_open_with(&t, h, NULL, true);
	T_CHECK(t.info->domain_attr->mr_key_size == 4, "client-key domain: mr_key_size 4");
	static char buf[4096];
	struct fid_mr *mr, *mr2;
	T_CHECK(fi_mr_reg(t.dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 1ULL << 32, 0, &mr, NULL) == -FI_EKEYREJECTED,
		"client key 2^32: -FI_EKEYREJECTED");
	T_OK(fi_mr_reg(t.dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 42, 0, &mr, NULL));
	T_CHECK(fi_mr_reg(t.dom, buf, 64, FI_REMOTE_WRITE, 0, 42, 0, &mr2, NULL) == -FI_ENOKEY,
		"duplicate client key: -FI_ENOKEY");
	bool v = true;
	T_CHECK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_PROV_KEY_CACHE, &v) == -FI_EINVAL,
		"provider key cache switch on a client-key domain: -FI_EINVAL");
	T_OK(fi_mr_bind(mr, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr));
	T_CHECK(fi_mr_key(mr) == 42, "client key kept: 42");
	T_OK(fi_close(&mr->fid));
	t_close(&t);
	fi_freeinfo(h);
}

static void check_domain_options(void)
{
	struct t_ep t;
	t_open(&t, FI_TAGGED);
	/* Defaults follow FI_CXI_PROV_KEY_CACHE / FI_CXI_OPTIMIZED_MRS (on unless set to 0). */
	const char *e_cache = getenv("FI_CXI_PROV_KEY_CACHE"), *e_opt = getenv("FI_CXI_OPTIMIZED_MRS");
	bool want_cache = !(e_cache && !strcmp(e_cache, "0")), want_opt = !(e_opt && !strcmp(e_opt, "0"));
	bool v = !want_cache;
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_GET_PROV_KEY_CACHE, &v));
	T_CHECK(v == want_cache, "provider key cache %s (FI_CXI_PROV_KEY_CACHE=%s)", v ? "on" : "off",
		e_cache ? e_cache : "unset");
	v = false;
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_PROV_KEY_CACHE, &v));
	v = true;
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_GET_PROV_KEY_CACHE, &v));
	T_CHECK(!v, "fi_control sets the provider key cache off");
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_GET_OPTIMIZED_MRS, &v));
	T_CHECK(v == want_opt, "optimized MRs %s (FI_CXI_OPTIMIZED_MRS=%s)", v ? "on" : "off", e_opt ? e_opt : "unset");
	bool me = true;
	struct fi_fid_var var = { .name = FI_OPT_CXI_SET_MR_MATCH_EVENTS, .val = &me };
	T_OK(fi_control(&t.dom->fid, FI_SET_VAL, &var));
	me = false;
	T_OK(fi_get_val(&t.dom->fid, FI_OPT_CXI_GET_MR_MATCH_EVENTS, &me));
	T_CHECK(me, "fi_set_val / fi_get_val on MR match events");
	char mode[16];
	const char *e_mode = getenv("FI_CXI_RX_MATCH_MODE");
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_GET_RX_MATCH_MODE_OVERRIDE, mode));
	T_CHECK(!strcmp(mode, e_mode ? e_mode : "hardware"), "match mode: %s (FI_CXI_RX_MATCH_MODE=%s)", mode,
		e_mode ? e_mode : "unset");
	T_CHECK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_RX_MATCH_MODE_OVERRIDE, "bogus") == -FI_EINVAL,
		"bad match mode: -FI_EINVAL");
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_RX_MATCH_MODE_OVERRIDE, "hybrid"));
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_GET_RX_MATCH_MODE_OVERRIDE, mode));
	T_CHECK(!strcmp(mode, "hybrid"), "match mode override: %s", mode);
	T_CHECK(fi_control(&t.dom->fid, 12345, &v) == -FI_EINVAL, "unknown domain control: -FI_EINVAL");
	struct fi_cxi_dom_ops *dops;
	T_OK(fi_open_ops(&t.dom->fid, FI_CXI_DOM_OPS_3, 0, (void **)&dops, NULL));
	unsigned g, s, p;
	T_OK(dops->topology(&t.dom->fid, &g, &s, &p));
	T_CHECK(fi_open_ops(&t.dom->fid, "no_such_ops", 0, (void **)&dops, NULL) == -FI_EINVAL,
		"unknown ops name: -FI_EINVAL");
	t_close(&t);
}

/* A send to an address with no endpoint fails at the target NIC (C_RC_PTLTE_NOT_FOUND: FI_EIO).  An inject
 * takes no context and asks for no completion, but its failure is still reported, as an error completion
 * whose op_context is NULL (upstream's cxip_report_send_completion reports every failed send; fabtests'
 * fi_rdm_stress met this when its acknowledgement to a client that had exited failed).  A send with a
 * context gets its context back. */
static void check_failed_sends(void)
{
	struct t_ep t;
	t_open(&t, FI_MSG | FI_TAGGED);
	char peer[8];
	memcpy(peer, t.name, sizeof(peer));
	uint32_t first32;
	memcpy(&first32, peer, 4);
	first32 = (first32 & ~511u) | ((first32 & 511u) == 509 ? 508u : 509u); /* same NIC, a pid nobody has */
	memcpy(peer, &first32, 4);
	fi_addr_t dead = t_insert(&t, peer);
	char buf[32] = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	T_OK(fi_inject(t.ep, buf, sizeof(buf), dead));
	int r = t_cq_wait(t.cq, &e, NULL, &err, 10.0);
	char sbuf[64];
	const char *rc = r == 0 ? fi_cq_strerror(t.cq, err.prov_errno, err.err_data, sbuf, sizeof(sbuf)) : NULL;
	T_CHECK(r == 0 && err.err == FI_EIO && err.op_context == NULL &&
			(err.flags & (FI_SEND | FI_MSG)) == (FI_SEND | FI_MSG) && rc && !strcmp(rc, "C_RC_PTLTE_NOT_FOUND"),
		"failed fi_inject: error completion FI_EIO, op_context NULL, FI_SEND|FI_MSG, C_RC_PTLTE_NOT_FOUND "
		"(got r %d err %d context %p flags 0x%llx %s)", r, err.err, err.op_context,
		(unsigned long long)err.flags, rc ? rc : "-");
	T_OK(fi_tinject(t.ep, buf, sizeof(buf), dead, 7));
	T_CHECK(t_cq_wait(t.cq, &e, NULL, &err, 10.0) == 0 && err.err == FI_EIO && err.op_context == NULL &&
			(err.flags & (FI_SEND | FI_TAGGED)) == (FI_SEND | FI_TAGGED),
		"failed fi_tinject: error completion FI_EIO, op_context NULL, FI_SEND|FI_TAGGED");
	struct fi_context ctx;
	T_OK(fi_send(t.ep, buf, sizeof(buf), NULL, dead, &ctx));
	T_CHECK(t_cq_wait(t.cq, &e, NULL, &err, 10.0) == 0 && err.err == FI_EIO && err.op_context == &ctx,
		"failed fi_send: error completion FI_EIO with its context");
	t_close(&t);
}

int main(void)
{
	check_option_numbers();
	check_getinfo();
	check_ep_errors();
	check_client_keys();
	check_domain_options();
	check_failed_sends();
	return t_finish("prov_errors");
}
