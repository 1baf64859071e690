/* Domain-scoped MRs (CXISIM_DOMAIN_MRS=1, hints without FI_MR_ENDPOINT): the key is the application's
 * requested key unless it accepted FI_MR_PROV_KEY.  fabtests (fi_rdm_deferred_wq) register with FT_MR_KEY
 * and write to that key at the peer without exchanging it; Open MPI's btl/ofi takes FI_MR_PROV_KEY and
 * sends the key it gets.  Checked: a client key reaches the peer's region with no exchange, a key used
 * twice is -FI_ENOKEY, a key of 2^32 or more -FI_EKEYREJECTED; with FI_MR_PROV_KEY the provider picks the
 * key and the exchanged one works. */
#include "common.h"

#define KEY 0xC0DEu

static struct fi_info *hints(bool prov_key)
{
	struct fi_info *h = t_hints(FI_MSG | FI_RMA);
	h->domain_attr->mr_mode = FI_MR_ALLOCATED | (prov_key ? FI_MR_PROV_KEY | FI_MR_VIRT_ADDR : 0);
	return h;
}

struct keyinfo {
	char name[8];
	uint64_t key;
};

static int target(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	for (int prov = 0; prov < 2; prov++) {
		struct t_ep t;
		struct fi_info *h = hints(prov);
		t_open_with(&t, h, NULL, true);
		fi_freeinfo(h);
		T_CHECK(!(t.info->domain_attr->mr_mode & FI_MR_ENDPOINT) &&
				!!(t.info->domain_attr->mr_mode & FI_MR_PROV_KEY) == prov,
			"mr_mode 0x%x: domain-scoped, %s keys", t.info->domain_attr->mr_mode, prov ? "provider" : "client");
		static char buf[256];
		memset(buf, 0, sizeof(buf));
		struct fid_mr *mr, *dup;
		T_OK(fi_mr_reg(t.dom, buf, sizeof(buf), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, KEY, 0, &mr, NULL));
		if (!prov) {
			T_CHECK(fi_mr_key(mr) == KEY, "client key: the requested one (0x%" PRIx64 ")", fi_mr_key(mr));
			T_CHECK(fi_mr_reg(t.dom, buf, 8, FI_REMOTE_WRITE, 0, KEY, 0, &dup, NULL) == -FI_ENOKEY,
				"the same key again: -FI_ENOKEY");
			T_CHECK(fi_mr_reg(t.dom, buf, 8, FI_REMOTE_WRITE, 0, 1ULL << 32, 0, &dup, NULL) == -FI_EKEYREJECTED,
				"a key of 2^32: -FI_EKEYREJECTED");
		}
		struct keyinfo ki;
		memcpy(ki.name, t.name, 8);
		ki.key = fi_mr_key(mr);
		t_send(c, &ki, sizeof(ki));
		char go;
		t_recv(c, &go, 1);
		T_CHECK(!strcmp(buf + 16, "written by key"), "the peer's write landed at offset 16: %s", buf + 16);
		T_OK(fi_close(&mr->fid));
		t_close(&t);
	}
	return 0;
}

int main(void)
{
	setenv("CXISIM_DOMAIN_MRS", "1", 1);
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(target, &l, "target");
	struct t_chan c = t_link_a(&l);
	t_who = "initiator";
	for (int prov = 0; prov < 2; prov++) {
		struct t_ep t;
		struct fi_info *h = hints(prov);
		t_open_with(&t, h, NULL, true);
		fi_freeinfo(h);
		struct keyinfo ki;
		t_recv(c, &ki, sizeof(ki));
		fi_addr_t peer = t_insert(&t, ki.name);
		/* Client keys: the agreed key, as fabtests use FT_MR_KEY; provider keys: the one exchanged. */
		uint64_t key = prov ? ki.key : KEY;
		static char src[32] = "written by key";
		struct fi_cq_tagged_entry e;
		T_OK(fi_write(t.ep, src, 15, NULL, peer, 16, key, NULL));
		t_cq_expect(t.cq, &e, "write");
		T_CHECK(1, "write with the %s key 0x%" PRIx64 " completed", prov ? "exchanged provider" : "agreed client",
			key);
		char go = 'g';
		t_send(c, &go, 1);
		t_close(&t);
	}
	t_join(p, "target");
	return t_finish("prov_domain_mrs");
}
