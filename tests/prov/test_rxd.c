/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rxd.c: "braid;ofi_rxd": libfabric's software RDM (ofi_rxd) layered over braid DGRAM endpoints. */
#include "prov_test.h"

#define RXD_PROV	"braid;ofi_rxd"
#define PINGS		100
#define MAX_MSG		4096

static struct fi_info *rxd_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	cr_assert_not_null(hints);
	hints->fabric_attr->prov_name = strdup(RXD_PROV);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->addr_format = FI_SOCKADDR_IN;
	return hints;
}

Test(fi_getinfo, rxd_rdm)
{
	struct fi_info *hints = rxd_hints(), *info = NULL, *cur;
	int ret;

	ret = fi_getinfo(PT_VERSION, NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo(%s, FI_EP_RDM) = %d (%s)", RXD_PROV, ret, fi_strerror(-ret));
	cr_assert_not_null(info);
	for (cur = info; cur; cur = cur->next) {
		cr_expect_str_eq(cur->fabric_attr->prov_name, RXD_PROV);
		cr_expect_eq(cur->ep_attr->type, FI_EP_RDM);
		cr_expect(cur->caps & FI_MSG, "FI_MSG not offered");
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* One RDM endpoint with one CQ for both directions. */
struct rxd_ep {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	fi_addr_t peer;
	uint8_t name[64];
	size_t namelen;
	/* completions seen so far */
	int sends, recvs;
	size_t last_len;
};

struct rxd_pair {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct rxd_ep a, b;
};

static void rxd_ep_open(struct rxd_pair *p, struct rxd_ep *e)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE };
	int ret;

	memset(e, 0, sizeof(*e));
	ret = fi_endpoint(p->domain, p->info, &e->ep, NULL);
	cr_assert_eq(ret, 0, "fi_endpoint = %d (%s)", ret, fi_strerror(-ret));
	cr_assert_eq(fi_av_open(p->domain, &av_attr, &e->av, NULL), 0);
	cr_assert_eq(fi_cq_open(p->domain, &cq_attr, &e->cq, NULL), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	ret = fi_enable(e->ep);
	cr_assert_eq(ret, 0, "fi_enable = %d (%s)", ret, fi_strerror(-ret));
	e->namelen = sizeof(e->name);
	ret = fi_getname(&e->ep->fid, e->name, &e->namelen);
	cr_assert_eq(ret, 0, "fi_getname = %d", ret);
}

static void rxd_pair_open(struct rxd_pair *p)
{
	struct fi_info *hints = rxd_hints();
	int ret;

	memset(p, 0, sizeof(*p));
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &p->info);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(%s, 127.0.0.1) = %d (%s)", RXD_PROV, ret, fi_strerror(-ret));
	cr_assert_eq(fi_fabric(p->info->fabric_attr, &p->fabric, NULL), 0);
	cr_assert_eq(fi_domain(p->fabric, p->info, &p->domain, NULL), 0);
	rxd_ep_open(p, &p->a);
	rxd_ep_open(p, &p->b);
	cr_assert_eq(fi_av_insert(p->a.av, p->b.name, 1, &p->a.peer, 0, NULL), 1);
	cr_assert_eq(fi_av_insert(p->b.av, p->a.name, 1, &p->b.peer, 0, NULL), 1);
}

static void rxd_ep_close(struct rxd_ep *e)
{
	cr_assert_eq(fi_close(&e->ep->fid), 0);
	cr_assert_eq(fi_close(&e->cq->fid), 0);
	cr_assert_eq(fi_close(&e->av->fid), 0);
}

static void rxd_pair_close(struct rxd_pair *p)
{
	rxd_ep_close(&p->a);
	rxd_ep_close(&p->b);
	cr_assert_eq(fi_close(&p->domain->fid), 0);
	cr_assert_eq(fi_close(&p->fabric->fid), 0);
	fi_freeinfo(p->info);
}

/* Read everything @e's CQ has (this also drives its progress); fail on an error entry. */
static void rxd_drain(struct rxd_ep *e)
{
	struct fi_cq_data_entry c[8];
	ssize_t n, i;

	n = fi_cq_read(e->cq, c, 8);
	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		(void)fi_cq_readerr(e->cq, &err, 0);
		cr_assert_fail("error completion: err %d (%s), prov_errno %d", err.err,
			       fi_strerror(err.err), err.prov_errno);
	}
	cr_assert_gt(n, 0, "fi_cq_read = %zd", n);
	for (i = 0; i < n; i++) {
		if (c[i].flags & FI_RECV) {
			e->recvs++;
			e->last_len = c[i].len;
		} else if (c[i].flags & FI_SEND) {
			e->sends++;
		}
	}
}

/* Progress both endpoints until *@count (a completion tally) reaches @want (bounded). */
static void rxd_wait(struct rxd_pair *p, const int *count, int want)
{
	long deadline = pt_now_ms() + 5 * PT_POLL_MS;

	while (*count < want && pt_now_ms() < deadline) {
		rxd_drain(&p->a);
		rxd_drain(&p->b);
	}
	cr_assert_geq(*count, want, "completion %d did not come (have %d)", want, *count);
}

static ssize_t rxd_send(struct rxd_pair *p, struct rxd_ep *e, const void *buf, size_t len,
			struct fi_context2 *ctx)
{
	long deadline = pt_now_ms() + 5 * PT_POLL_MS;
	ssize_t ret;

	do {
		ret = fi_send(e->ep, buf, len, NULL, e->peer, ctx);
		if (ret == -FI_EAGAIN) {
			rxd_drain(&p->a);
			rxd_drain(&p->b);
		}
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

static void pattern(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

Test(fi_send, rxd_pingpong, .timeout = 60)
{
	static uint8_t arecv[MAX_MSG], asend[MAX_MSG], brecv[MAX_MSG], bsend[MAX_MSG];
	/* with FI_CONTEXT2 the provider owns each context until its operation completes */
	static struct fi_context2 arx[PINGS], brx[PINGS], atx[PINGS], btx[PINGS];
	struct rxd_pair p;
	int i;

	rxd_pair_open(&p);
	for (i = 0; i < PINGS; i++) {
		size_t len = (size_t)(i * 41) % MAX_MSG + 1;

		/* a send buffer is reused only once its previous send has completed */
		rxd_wait(&p, &p.a.sends, i);
		rxd_wait(&p, &p.b.sends, i);

		/* ping: a -> b */
		memset(brecv, 0, sizeof(brecv));
		cr_assert_eq(fi_recv(p.b.ep, brecv, sizeof(brecv), NULL, FI_ADDR_UNSPEC, &brx[i]), 0);
		pattern(asend, len, (unsigned)i);
		cr_assert_eq(rxd_send(&p, &p.a, asend, len, &atx[i]), 0, "ping %d", i);
		rxd_wait(&p, &p.b.recvs, i + 1);
		cr_assert_eq(p.b.last_len, len, "ping %d: len %zu", i, p.b.last_len);
		cr_assert_arr_eq(brecv, asend, len, "ping %d: data differ", i);

		/* pong: b -> a, the bytes inverted */
		memset(arecv, 0, sizeof(arecv));
		cr_assert_eq(fi_recv(p.a.ep, arecv, sizeof(arecv), NULL, FI_ADDR_UNSPEC, &arx[i]), 0);
		for (size_t k = 0; k < len; k++)
			bsend[k] = (uint8_t)~brecv[k];
		cr_assert_eq(rxd_send(&p, &p.b, bsend, len, &btx[i]), 0, "pong %d", i);
		rxd_wait(&p, &p.a.recvs, i + 1);
		cr_assert_eq(p.a.last_len, len, "pong %d: len %zu", i, p.a.last_len);
		cr_assert_arr_eq(arecv, bsend, len, "pong %d: data differ", i);
	}
	/* every send completes too */
	rxd_wait(&p, &p.a.sends, PINGS);
	rxd_wait(&p, &p.b.sends, PINGS);
	rxd_pair_close(&p);
}
