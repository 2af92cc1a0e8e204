/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_auth.c: authorization keys (job isolation; fi_braid(7), protocol.md
 * §2.4) through the public API: fi_getinfo echoes a key and refuses bad
 * sizes, fi_domain / fi_endpoint / fi_mr_regattr check theirs; RDM, DGRAM
 * and MSG endpoints of one key talk; of different keys, or a keyed and a
 * keyless one, they exchange not a single message, and the receiver's
 * close line in braid's log says it dropped them as bad_auth and created
 * no peer state.
 *
 * Each side has a fabric and domain of its own (a domain's peer table is
 * shared by its endpoints), on 127.0.0.1.
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov_test.h"

#define WAIT_MS		5000
#define KEY_A		"job-4711:alpha"
#define KEY_B		"job-4712:beta"
#define MR_MODE		(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)

/* braid's INFO log, where endpoints report their drops at close; the peer timeout short */
static void log_and_timeout(void)
{
	setenv("FI_LOG_LEVEL", "info", 1);
	setenv("FI_LOG_PROV", "braid", 1);
	setenv("FI_BRAID_PEER_TIMEOUT_MS", "300", 1);
}

/* a key's bytes, in a buffer of its own (fi_freeinfo frees it) at least @room bytes long */
static uint8_t *key_dup_room(const char *key, size_t room)
{
	uint8_t *k = calloc(1, room > strlen(key) ? room : strlen(key));

	cr_assert_not_null(k);
	memcpy(k, key, strlen(key));
	return k;
}

static uint8_t *key_dup(const char *key)
{
	return key_dup_room(key, 0);
}

/* hints for @type with @key (NULL: none) as the domain's, or the endpoint's with @ep_key */
static struct fi_info *key_hints(enum fi_ep_type type, const char *key, bool ep_key)
{
	struct fi_info *hints = pt_hints(type);

	hints->addr_format = FI_SOCKADDR_IN;
	if (type == FI_EP_RDM)
		hints->caps = FI_MSG | FI_TAGGED | FI_RMA;
	if (type != FI_EP_DGRAM)
		hints->domain_attr->mr_mode = MR_MODE;
	if (key && ep_key) {
		hints->ep_attr->auth_key = key_dup(key);
		hints->ep_attr->auth_key_size = strlen(key);
	} else if (key) {
		hints->domain_attr->auth_key = key_dup(key);
		hints->domain_attr->auth_key_size = strlen(key);
	}
	return hints;
}

/* braid's own entry of @type on @node for @key (the domain's), which must echo it */
static struct fi_info *key_info_at(enum fi_ep_type type, const char *key, const char *node)
{
	struct fi_info *hints = key_hints(type, key, false), *list = NULL, *info = NULL;
	int ret = fi_getinfo(PT_VERSION, node, "0", FI_SOURCE, hints, &list);

	cr_assert_eq(ret, 0, "fi_getinfo(type %d, key %s) = %d (%s)", type, key ? key : "none", ret,
		     fi_strerror(-ret));
	for (struct fi_info *cur = list; cur && !info; cur = cur->next)
		if (pt_is_plain_braid(cur) && cur->ep_attr->type == type)
			info = fi_dupinfo(cur);
	fi_freeinfo(list);
	fi_freeinfo(hints);
	cr_assert_not_null(info);
	if (key) {
		cr_assert_eq(info->domain_attr->auth_key_size, strlen(key));
		cr_assert_eq(memcmp(info->domain_attr->auth_key, key, strlen(key)), 0);
	} else {
		cr_assert_eq(info->domain_attr->auth_key_size, 0);
		cr_assert_null(info->domain_attr->auth_key);
	}
	return info;
}

static struct fi_info *key_info(enum fi_ep_type type, const char *key)
{
	return key_info_at(type, key, "127.0.0.1");
}

/* One side: a fabric, a domain with @key, an endpoint (its own key @ep_key, if any). */
struct side {
	struct pt_dom d;
	struct pt_ep e;
};

static void side_open_at(struct side *s, enum fi_ep_type type, const char *key,
			 const char *ep_key, const char *node)
{
	struct fi_info *info;

	memset(s, 0, sizeof(*s));
	s->d.info = key_info_at(type, key, node);
	cr_assert_eq(fi_fabric(s->d.info->fabric_attr, &s->d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(s->d.fabric, s->d.info, &s->d.domain, NULL), 0);
	info = fi_dupinfo(s->d.info);
	if (ep_key) {
		info->ep_attr->auth_key = key_dup(ep_key);
		info->ep_attr->auth_key_size = strlen(ep_key);
	}
	pt_ep_create(&s->d, &s->e, info);
	fi_freeinfo(info);
	pt_ep_bind_cqs(&s->d, &s->e, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0);
}

static void side_open(struct side *s, enum fi_ep_type type, const char *key, const char *ep_key)
{
	side_open_at(s, type, key, ep_key, "127.0.0.1");
}

static void sides_link(struct side *a, struct side *b)
{
	pt_ep_connect(&a->e, &b->e);
	pt_ep_connect(&b->e, &a->e);
	pt_ep_enable(&a->e);
	pt_ep_enable(&b->e);
}

static void side_close(struct side *s)
{
	pt_ep_close(&s->e);
	pt_dom_close(&s->d);
}

/* One entry (or error) from @cq, progressing both sides; bounded. */
static ssize_t wait2(struct side *a, struct side *b, struct fid_cq *cq,
		     struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err, long ms)
{
	long deadline = pt_now_ms() + ms;
	ssize_t ret;

	do {
		(void)fi_cq_read(a->e.tx_cq, NULL, 0);
		(void)fi_cq_read(a->e.rx_cq, NULL, 0);
		(void)fi_cq_read(b->e.tx_cq, NULL, 0);
		(void)fi_cq_read(b->e.rx_cq, NULL, 0);
		ret = fi_cq_read(cq, e, 1);
		if (ret == -FI_EAVAIL && err) {
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EOTHER;
		}
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

/*
 * Close @s's endpoint and read its close line in braid's log: the
 * datagrams it dropped as bad_auth and the peers in its domain's table.
 */
static void close_and_count(struct side *s, long *bad_auth, long *peers)
{
	char want[64], *log, *line, *end, *at;
	FILE *f = tmpfile();
	int saved = dup(2);
	long size;

	cr_assert_not_null(f);
	fflush(stderr);
	cr_assert_geq(dup2(fileno(f), 2), 0);
	cr_assert_eq(fi_close(&s->e.ep->fid), 0);
	s->e.ep = NULL;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	size = ftell(f);
	log = calloc(1, (size_t)size + 1);
	rewind(f);
	cr_assert_eq(fread(log, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	snprintf(want, sizeof(want), "endpoint on port %u closed (", ntohs(s->e.name.sin_port));
	line = strstr(log, want);
	cr_assert_not_null(line, "no close line for port %u in:\n%s", ntohs(s->e.name.sin_port), log);
	end = strchr(line, '\n');
	cr_assert_not_null(end);
	*end = 0;
	at = strstr(line, " bad_auth=");
	*bad_auth = at ? atol(at + strlen(" bad_auth=")) : 0;
	at = strstr(line, "; ");
	cr_assert_not_null(at, "%s", line);
	cr_assert_eq(sscanf(at, "; %ld peers in the domain's table", peers), 1, "%s", line);
	free(log);
}

Test(auth, getinfo_echoes_the_key_for_every_endpoint_type)
{
	enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_DGRAM, FI_EP_MSG };

	for (size_t t = 0; t < 3; t++) {
		struct fi_info *plain = key_info(types[t], NULL), *keyed = key_info(types[t], KEY_A);
		struct fi_info *hints = key_hints(types[t], KEY_B, true), *info = NULL, *dup;

		/* a keyed datagram carries 8 bytes of tag: one message less on DGRAM, RDM inject */
		if (types[t] != FI_EP_MSG)
			cr_assert_eq(keyed->tx_attr->inject_size + 8, plain->tx_attr->inject_size);
		if (types[t] == FI_EP_DGRAM)
			cr_assert_eq(keyed->ep_attr->max_msg_size + 8, plain->ep_attr->max_msg_size);
		/* the endpoint's own key comes back in ep_attr, a copy of it */
		cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), 0);
		cr_assert(pt_is_plain_braid(info));
		cr_assert_eq(info->ep_attr->auth_key_size, strlen(KEY_B));
		cr_assert_neq(info->ep_attr->auth_key, hints->ep_attr->auth_key);
		cr_assert_eq(memcmp(info->ep_attr->auth_key, KEY_B, strlen(KEY_B)), 0);
		cr_assert_eq(info->domain_attr->auth_key_size, 0);
		/* fi_dupinfo copies it and fi_freeinfo frees each (ASan sees a leak or a double free) */
		dup = fi_dupinfo(info);
		cr_assert_neq(dup->ep_attr->auth_key, info->ep_attr->auth_key);
		fi_freeinfo(dup);
		fi_freeinfo(info);
		fi_freeinfo(hints);
		fi_freeinfo(keyed);
		fi_freeinfo(plain);
	}
}

Test(auth, bad_key_sizes_are_refused)
{
	static const char big[66] = "0123456789012345678901234567890123456789012345678901234567890123x";
	struct fi_info *hints, *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_ep *ep;

	/* 1 and 64 bytes are taken */
	hints = key_hints(FI_EP_RDM, "k", false);
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	hints = key_hints(FI_EP_RDM, "0123456789012345678901234567890123456789012345678901234567890123", false);
	cr_assert_eq(hints->domain_attr->auth_key_size, 64);
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), 0);
	fi_freeinfo(info);
	info = NULL;
	/* 65 bytes: braid says -FI_EINVAL, which fi_getinfo(3) reports as no match */
	free(hints->domain_attr->auth_key);
	hints->domain_attr->auth_key = key_dup_room(big, 128);
	hints->domain_attr->auth_key_size = 65;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), -FI_ENODATA);
	cr_assert_null(info);
	/* a size with no key, in either place */
	free(hints->domain_attr->auth_key);
	hints->domain_attr->auth_key = NULL;
	hints->domain_attr->auth_key_size = 4;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), -FI_ENODATA);
	hints->domain_attr->auth_key_size = 0;
	hints->ep_attr->auth_key_size = 70;
	hints->ep_attr->auth_key = key_dup_room(big, 128);
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);

	/* fi_domain and fi_endpoint check the sizes they are given: -FI_EINVAL */
	info = key_info(FI_EP_RDM, KEY_A);
	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	info->domain_attr->auth_key_size = 65;
	free(info->domain_attr->auth_key);
	info->domain_attr->auth_key = key_dup_room(big, 128);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), -FI_EINVAL);
	info->domain_attr->auth_key_size = strlen(KEY_A);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	info->ep_attr->auth_key = key_dup_room(big, 128);
	info->ep_attr->auth_key_size = 65;
	cr_assert_eq(fi_endpoint(domain, info, &ep, NULL), -FI_EINVAL);
	info->ep_attr->auth_key_size = 64;
	cr_assert_eq(fi_endpoint(domain, info, &ep, NULL), 0);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);

	/* and so does fi_passive_ep, which has no domain: the endpoint's key, else the domain's */
	info = key_info(FI_EP_MSG, KEY_A);
	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	info->ep_attr->auth_key = key_dup_room(big, 128);
	info->ep_attr->auth_key_size = 65;
	cr_assert_eq(fi_passive_ep(fabric, info, &pep, NULL), -FI_EINVAL);
	info->ep_attr->auth_key_size = 0;
	info->domain_attr->auth_key_size = 65;
	free(info->domain_attr->auth_key);
	info->domain_attr->auth_key = key_dup_room(big, 128);
	cr_assert_eq(fi_passive_ep(fabric, info, &pep, NULL), -FI_EINVAL);
	info->domain_attr->auth_key_size = strlen(KEY_A);
	cr_assert_eq(fi_passive_ep(fabric, info, &pep, NULL), 0);
	cr_assert_eq(fi_close(&pep->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

/* a sends @len bytes of a pattern to b (tagged or not), b checks every byte */
static void exchange(struct side *a, struct side *b, size_t len, bool tagged, unsigned seed)
{
	uint8_t *src = malloc(len + 1), *dst = calloc(1, len + 1);
	struct fi_cq_tagged_entry e;

	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(seed * 29 + i * 7 + (i >> 12));
	if (tagged) {
		cr_assert_eq(fi_trecv(b->e.ep, dst, len, NULL, FI_ADDR_UNSPEC, 0x77 + seed, 0, dst), 0);
		cr_assert_eq(fi_tsend(a->e.ep, src, len, NULL, a->e.peer, 0x77 + seed, src), 0);
	} else {
		cr_assert_eq(fi_recv(b->e.ep, dst, len, NULL, FI_ADDR_UNSPEC, dst), 0);
		cr_assert_eq(fi_send(a->e.ep, src, len, NULL, a->e.peer, src), 0);
	}
	cr_assert_eq(wait2(a, b, b->e.rx_cq, &e, NULL, WAIT_MS), 1, "%zu bytes received", len);
	cr_assert_eq(e.op_context, dst);
	cr_assert_eq(e.len, len);
	if (tagged)
		cr_assert_eq(e.tag, 0x77 + seed);
	cr_assert_eq(memcmp(src, dst, len), 0, "%zu bytes intact", len);
	cr_assert_eq(wait2(a, b, a->e.tx_cq, &e, NULL, WAIT_MS), 1);
	cr_assert_eq(e.op_context, src);
	free(src);
	free(dst);
}

/* a writes into a region of b's; the write's completion status */
static int rma_write(struct side *a, struct side *b, size_t len)
{
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_mr *mr;
	ssize_t ret;

	memset(src, 0x3c, len);
	cr_assert_eq(fi_mr_reg(b->d.domain, dst, len, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL), 0);
	cr_assert_eq(fi_write(a->e.ep, src, len, NULL, a->e.peer, (uint64_t)(uintptr_t)dst,
			      fi_mr_key(mr), src), 0);
	ret = wait2(a, b, a->e.tx_cq, &e, &err, WAIT_MS);
	if (ret == 1)
		cr_assert_eq(memcmp(src, dst, len), 0, "the write is in b's memory");
	else
		cr_assert_eq(ret, -FI_EAVAIL);
	cr_assert_eq(fi_close(&mr->fid), 0);
	free(src);
	free(dst);
	return ret == 1 ? 0 : err.err;
}

static void same_key_talks(const char *node)
{
	struct side a, b;

	side_open_at(&a, FI_EP_RDM, KEY_A, NULL, node);
	side_open_at(&b, FI_EP_RDM, KEY_A, NULL, node);
	sides_link(&a, &b);
	exchange(&a, &b, 0, false, 1);
	exchange(&a, &b, 100, true, 2);
	exchange(&b, &a, 5000, false, 3);
	/* full packets, received straight into place (job mode), and a rendezvous */
	exchange(&a, &b, 3 << 20, true, 4);
	exchange(&b, &a, 200000, false, 5);
	cr_assert_eq(rma_write(&a, &b, 300000), 0);
	side_close(&a);
	side_close(&b);
}

Test(auth, rdm_same_key_exchanges_messages_tagged_large_and_rma, .timeout = 60)
{
	same_key_talks("127.0.0.1");
}

Test(auth, rdm_same_key_exchanges_in_mac_mode, .timeout = 60)
{
	setenv("FI_BRAID_AUTH", "mac", 1);
	same_key_talks("127.0.0.1");
}

/*
 * On an interface of an Ethernet MTU full packets go in UDP GSO runs, each
 * datagram of a run keyed on its own (the UDP wire offers runs where the
 * MTU is small: not on loopback). The host's first such address, if any.
 */
Test(auth, rdm_same_key_exchanges_in_gso_runs, .timeout = 60)
{
	struct ifaddrs *ifs, *i;
	char node[INET_ADDRSTRLEN] = "";

	cr_assert_eq(getifaddrs(&ifs), 0);
	for (i = ifs; i && !*node; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
		    !(i->ifa_flags & IFF_LOOPBACK))
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, node,
				  sizeof(node));
	freeifaddrs(ifs);
	if (!*node)
		cr_skip_test("no IPv4 interface but loopback");
	same_key_talks(node);
}

/*
 * a sends to b, which cannot take a's datagrams: a's send fails with
 * FI_EHOSTUNREACH (at the peer timeout, fi_braid(7); the wait's own limit
 * only catches a hang), b receives nothing, and b's close line shows the
 * drops and no peer in b's domain.
 */
static void nothing_crosses(struct side *a, struct side *b)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[64] = "";
	long bad_auth, peers;

	cr_assert_eq(fi_recv(b->e.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(fi_send(a->e.ep, "from another job", 17, NULL, a->e.peer, (void *)1), 0);
	cr_assert_eq(wait2(a, b, a->e.tx_cq, &e, &err, 5000), -FI_EAVAIL, "the send fails");
	cr_assert_eq(err.err, FI_EHOSTUNREACH, "err %d (%s)", err.err, fi_strerror(err.err));
	cr_assert_eq(err.op_context, (void *)1);
	pt_cq_expect_empty(b->e.rx_cq);
	cr_assert_str_eq(buf, "", "nothing landed in b's buffer");
	close_and_count(b, &bad_auth, &peers);
	cr_assert_geq(bad_auth, 1, "b counted a's datagrams as bad_auth");
	cr_assert_eq(peers, 0, "a's datagrams created no peer in b's domain");
}

/* nothing_crosses() from an RDM endpoint of @akey's domain to one of @bkey's (its own key @b_ep_key) */
static void rdm_apart(const char *akey, const char *bkey, const char *b_ep_key)
{
	struct side a, b;

	side_open(&a, FI_EP_RDM, akey, NULL);
	side_open(&b, FI_EP_RDM, bkey, b_ep_key);
	sides_link(&a, &b);
	nothing_crosses(&a, &b);
	side_close(&a);
	side_close(&b);
}

Test(auth, rdm_different_keys_exchange_nothing, .timeout = 30)
{
	log_and_timeout();
	rdm_apart(KEY_A, KEY_B, NULL);
}

Test(auth, rdm_keyless_to_keyed_exchanges_nothing, .timeout = 30)
{
	log_and_timeout();
	rdm_apart(NULL, KEY_A, NULL);
}

Test(auth, rdm_keyed_to_keyless_exchanges_nothing, .timeout = 30)
{
	log_and_timeout();
	rdm_apart(KEY_A, NULL, NULL);
}

Test(auth, rdm_mac_mode_keeps_other_keys_out, .timeout = 30)
{
	log_and_timeout();
	setenv("FI_BRAID_AUTH", "mac", 1);
	rdm_apart(KEY_A, KEY_B, NULL);
}

Test(auth, endpoint_key_overrides_the_domain_key, .timeout = 60)
{
	long bad_auth, peers;
	struct side a, b;

	log_and_timeout();
	/* domains of one key, one endpoint of another: nothing crosses */
	rdm_apart(KEY_A, KEY_A, KEY_B);
	/* domains of different keys, both endpoints of a third: they talk */
	side_open(&a, FI_EP_RDM, KEY_A, "job-4713");
	side_open(&b, FI_EP_RDM, KEY_B, "job-4713");
	sides_link(&a, &b);
	exchange(&a, &b, 1000, true, 9);
	exchange(&b, &a, 100000, false, 10);
	/* but b's regions carry b's domain key, not its peer's: fi_mr(3), access refused */
	cr_assert_eq(rma_write(&a, &b, 4096), FI_EACCES);
	close_and_count(&b, &bad_auth, &peers);
	cr_assert_eq(bad_auth, 0);
	cr_assert_eq(peers, 1, "a, the one peer b had");
	side_close(&a);
	side_close(&b);
}

Test(auth, mr_key_is_the_domain_key)
{
	struct fi_mr_attr attr = { 0 };
	uint8_t buf[64];
	struct iovec iov = { buf, sizeof(buf) };
	struct fid_mr *mr;
	struct side s;

	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = FI_REMOTE_WRITE;
	side_open(&s, FI_EP_RDM, KEY_A, NULL);
	cr_assert_eq(fi_mr_regattr(s.d.domain, &attr, 0, &mr), 0, "no key: the domain's");
	cr_assert_eq(fi_close(&mr->fid), 0);
	attr.auth_key = (uint8_t *)KEY_A;
	attr.auth_key_size = strlen(KEY_A);
	cr_assert_eq(fi_mr_regattr(s.d.domain, &attr, 0, &mr), 0, "the domain's key itself");
	cr_assert_eq(fi_close(&mr->fid), 0);
	attr.auth_key = (uint8_t *)KEY_B;
	attr.auth_key_size = strlen(KEY_B);
	cr_assert_eq(fi_mr_regattr(s.d.domain, &attr, 0, &mr), -FI_EINVAL, "another key");
	attr.auth_key_size = strlen(KEY_A) - 1;
	attr.auth_key = (uint8_t *)KEY_A;
	cr_assert_eq(fi_mr_regattr(s.d.domain, &attr, 0, &mr), -FI_EINVAL, "a prefix of it");
	side_close(&s);
	side_open(&s, FI_EP_RDM, NULL, NULL);
	attr.auth_key_size = strlen(KEY_A);
	cr_assert_eq(fi_mr_regattr(s.d.domain, &attr, 0, &mr), -FI_EINVAL, "a key in a keyless domain");
	side_close(&s);
}

Test(auth, dgram_same_key_talks_other_keys_get_nothing, .timeout = 30)
{
	struct fi_cq_tagged_entry e;
	static uint8_t src[70000], dst[70000];
	long bad_auth, peers;
	struct side a, b;
	size_t max;

	log_and_timeout();
	side_open(&a, FI_EP_DGRAM, KEY_A, NULL);
	side_open(&b, FI_EP_DGRAM, KEY_A, NULL);
	sides_link(&a, &b);
	max = a.d.info->ep_attr->max_msg_size;
	cr_assert_leq(max, sizeof(src));
	for (size_t i = 0; i < max; i++)
		src[i] = (uint8_t)(i * 3 + 1);
	/* the largest keyed datagram, then one byte more */
	cr_assert_eq(fi_recv(b.e.ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC, dst), 0);
	cr_assert_eq(fi_senddata(a.e.ep, src, max, NULL, 0xabcd, a.e.peer, src), 0);
	cr_assert_eq(wait2(&a, &b, b.e.rx_cq, &e, NULL, WAIT_MS), 1);
	cr_assert_eq(e.len, max);
	cr_assert_eq(e.data, 0xabcd);
	cr_assert_eq(memcmp(src, dst, max), 0, "every byte, and no tag in the buffer");
	cr_assert_eq(fi_send(a.e.ep, src, max + 1, NULL, a.e.peer, NULL), -FI_EMSGSIZE);
	side_close(&a);
	/* another key: three datagrams sent, none received, three dropped */
	side_open(&a, FI_EP_DGRAM, KEY_B, NULL);
	pt_ep_connect(&a.e, &b.e);
	pt_ep_enable(&a.e);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(fi_recv(b.e.ep, dst + i * 100, 100, NULL, FI_ADDR_UNSPEC, NULL), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(fi_send(a.e.ep, src, 50, NULL, a.e.peer, NULL), 0);
		cr_assert_eq(wait2(&a, &b, a.e.tx_cq, &e, NULL, WAIT_MS), 1, "DGRAM sends complete locally");
	}
	cr_assert_eq(wait2(&a, &b, b.e.rx_cq, &e, NULL, 300), -FI_EAGAIN, "nothing received");
	close_and_count(&b, &bad_auth, &peers);
	cr_assert_eq(bad_auth, 3, "each of the three dropped");
	side_close(&a);
	side_close(&b);
}

/* ---- FI_EP_MSG: the handshake is keyed, the QPs get the key's P_Key ---- */

struct conn {
	struct side s, c;	/* the listener's and the connecting side's */
	struct fid_eq *seq, *ceq;
	struct fid_pep *pep;
	struct fid_ep *sep;
	struct fid_cq *scq;
};

/* both sides set up, the client's fi_connect issued */
static void conn_start(struct conn *p, const char *skey, const char *ckey)
{
	struct sockaddr_in listen;
	size_t len = sizeof(listen);

	memset(p, 0, sizeof(*p));
	side_open(&p->s, FI_EP_MSG, skey, NULL);
	side_open(&p->c, FI_EP_MSG, ckey, NULL);
	p->seq = pt_eq_open(p->s.d.fabric);
	p->ceq = pt_eq_open(p->c.d.fabric);
	cr_assert_eq(fi_passive_ep(p->s.d.fabric, p->s.d.info, &p->pep, NULL), 0);
	cr_assert_eq(fi_pep_bind(p->pep, &p->seq->fid, 0), 0);
	cr_assert_eq(fi_listen(p->pep), 0);
	cr_assert_eq(fi_getname(&p->pep->fid, &listen, &len), 0);
	cr_assert_eq(fi_ep_bind(p->c.e.ep, &p->ceq->fid, 0), 0);
	pt_ep_enable(&p->c.e);
	cr_assert_eq(fi_connect(p->c.e.ep, &listen, NULL, 0), 0);
}

static void conn_close(struct conn *p)
{
	if (p->sep)
		cr_assert_eq(fi_close(&p->sep->fid), 0);
	if (p->scq)
		cr_assert_eq(fi_close(&p->scq->fid), 0);
	cr_assert_eq(fi_close(&p->pep->fid), 0);
	pt_ep_close(&p->c.e);
	pt_ep_close(&p->s.e);
	cr_assert_eq(fi_close(&p->seq->fid), 0);
	cr_assert_eq(fi_close(&p->ceq->fid), 0);
	pt_dom_close(&p->c.d);
	pt_dom_close(&p->s.d);
}

static ssize_t eq_wait(struct fid_eq *eq, struct fid_eq *other, uint32_t *ev, void *buf, size_t len,
		       long ms)
{
	long deadline = pt_now_ms() + ms;
	ssize_t ret;

	do {
		uint8_t peek[sizeof(struct fi_eq_cm_entry) + 256];
		uint32_t pev;

		(void)fi_eq_read(other, &pev, peek, sizeof(peek), FI_PEEK);	/* its progress */
		ret = fi_eq_sread(eq, ev, buf, len, 10, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

Test(auth, msg_same_key_connects_and_talks, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct fi_cq_tagged_entry c;
	char rx[32] = "";
	struct conn p;
	uint32_t ev;

	conn_start(&p, KEY_A, KEY_A);
	cr_assert_gt(eq_wait(p.seq, p.ceq, &ev, buf, sizeof(buf), WAIT_MS), 0);
	cr_assert_eq(ev, FI_CONNREQ);
	cr_assert_eq(e->info->domain_attr->auth_key_size, strlen(KEY_A), "the request's info has the key");
	cr_assert_eq(fi_endpoint(p.s.d.domain, e->info, &p.sep, NULL), 0);
	fi_freeinfo(e->info);
	p.scq = pt_cq_open(p.s.d.domain, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(p.sep, &p.seq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(p.sep, &p.scq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(p.sep), 0);
	cr_assert_eq(fi_accept(p.sep, NULL, 0), 0);
	cr_assert_gt(eq_wait(p.ceq, p.seq, &ev, buf, sizeof(buf), WAIT_MS), 0);
	cr_assert_eq(ev, FI_CONNECTED);
	cr_assert_gt(eq_wait(p.seq, p.ceq, &ev, buf, sizeof(buf), WAIT_MS), 0);
	cr_assert_eq(ev, FI_CONNECTED);
	/* RoCEv2 with the key's P_Key on both QPs: a message each way */
	cr_assert_eq(fi_recv(p.sep, rx, sizeof(rx), NULL, 0, rx), 0);
	cr_assert_eq(fi_send(p.c.e.ep, "over RC", 8, NULL, 0, NULL), 0);
	cr_assert_eq(pt_cq_poll(p.scq, &c, NULL, p.c.e.tx_cq), 1);
	cr_assert_str_eq(rx, "over RC");
	cr_assert_eq(fi_recv(p.c.e.ep, rx, sizeof(rx), NULL, 0, rx), 0);
	cr_assert_eq(fi_send(p.sep, "and back", 9, NULL, 0, NULL), 0);
	cr_assert_eq(pt_cq_poll(p.c.e.rx_cq, &c, NULL, p.scq), 1);
	cr_assert_str_eq(rx, "and back");
	conn_close(&p);
}

static void msg_no_connection(const char *skey, const char *ckey)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_err_entry err = { 0 };
	struct conn p;
	uint32_t ev;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "600", 1);
	conn_start(&p, skey, ckey);
	/* the listener hears no request; the client times out */
	cr_assert_eq(eq_wait(p.ceq, p.seq, &ev, buf, sizeof(buf), 5000), -FI_EAVAIL);
	cr_assert_eq(fi_eq_readerr(p.ceq, &err, 0), sizeof(err));
	cr_assert_eq(err.err, FI_ETIMEDOUT);
	cr_assert_eq(fi_eq_read(p.seq, &ev, buf, sizeof(buf), 0), -FI_EAGAIN, "no FI_CONNREQ");
	conn_close(&p);
}

Test(auth, msg_other_key_never_connects, .timeout = 30)
{
	msg_no_connection(KEY_A, KEY_B);
}

Test(auth, msg_keyless_never_connects_to_keyed, .timeout = 30)
{
	msg_no_connection(KEY_A, NULL);
}
