/* A client cannot touch memory whose key or VNI it lacks.  The victim (VNI 5, standard MRs: no provider
 * key cache, which exposes the whole address space, and no optimized MRs, whose PtlTE is selected by the
 * key's index alone, both as on a real Cassini) exposes one MR; an attacker on VNI 6 gets FI_ENOTCONN for a write and a read with the right key; an
 * attacker on VNI 5 with keys the victim never registered gets FI_EIO; the victim's memory is unchanged
 * and the victim can still be reached by a legitimate peer afterwards. */
#include "common.h"

struct info {
	char name[8];
	uint64_t key;
};

static struct fi_info *hints_vni(uint16_t vni, uint64_t caps)
{
	struct fi_info *h = t_hints(caps);
	struct cxi_auth_key key = { .svc_id = 1, .vni = vni };
	h->domain_attr->auth_key = malloc(sizeof(key));
	memcpy(h->domain_attr->auth_key, &key, sizeof(key));
	h->domain_attr->auth_key_size = sizeof(key);
	return h;
}

static int attacker(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct info in;
	t_recv(c, &in, sizeof(in));
	char junk[256], back[256];
	memset(junk, 0x66, sizeof(junk));
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	for (int round = 0; round < 2; round++) {
		uint16_t vni = round == 0 ? 6 : 5;
		struct fi_info *h = hints_vni(vni, FI_RMA | FI_READ | FI_WRITE | FI_TAGGED);
		struct t_ep t;
		t_open_with(&t, h, NULL, true);
		fi_addr_t v = t_insert(&t, in.name);
		if (vni == 6) {
			T_OK(fi_write(t.ep, junk, sizeof(junk), NULL, v, 0, in.key, NULL));
			int r = t_cq_wait(t.cq, &e, NULL, &err, 10);
			T_CHECK(r == 0 && err.err == FI_ENOTCONN, "write from VNI 6 with the right key: FI_ENOTCONN (%d)", err.err);
			T_OK(fi_read(t.ep, back, sizeof(back), NULL, v, 0, in.key, NULL));
			r = t_cq_wait(t.cq, &e, NULL, &err, 10);
			T_CHECK(r == 0 && err.err == FI_ENOTCONN, "read from VNI 6: FI_ENOTCONN (%d)", err.err);
		} else {
			static const uint64_t keys[] = { 0, 1, 99, 12345, 0xffffffffULL };
			int denied = 0;
			for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
				if (keys[i] == in.key)
					continue;
				T_OK(fi_write(t.ep, junk, sizeof(junk), NULL, v, 0, keys[i], NULL));
				int r = t_cq_wait(t.cq, &e, NULL, &err, 10);
				denied += r == 0 && err.err == FI_EIO;
			}
			T_CHECK(denied == 5, "writes on VNI 5 with foreign keys: FI_EIO (%d of 5 denied)", denied);
		}
		t_close(&t);
		fi_freeinfo(h);
	}
	t_sync(c);
	return 0;
}

int main(void)
{
	t_who = "victim";
	struct fi_info *h = hints_vni(5, FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_TAGGED);
	struct t_ep t;
	t_open_with(&t, h, NULL, false);
	bool off = false;
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_PROV_KEY_CACHE, &off));
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_OPTIMIZED_MRS, &off));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	static char secret[4096];
	t_fill(secret, sizeof(secret), 99);
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, secret, sizeof(secret), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	T_OK(fi_mr_bind(mr, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr));
	struct info in;
	memcpy(in.name, t.name, 8);
	in.key = fi_mr_key(mr);
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(attacker, &l, "attacker");
	struct t_chan c = t_link_a(&l);
	t_send(c, &in, sizeof(in));
	t_sync(c);
	t_join(p, "attacker");
	T_CHECK(t_verify(secret, sizeof(secret), 99), "the victim's memory is unchanged");
	T_OK(fi_close(&mr->fid));
	t_close(&t);
	fi_freeinfo(h);
	return t_finish("prov_hostile");
}
