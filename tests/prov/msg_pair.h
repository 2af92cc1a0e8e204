/* SPDX-License-Identifier: BSD-2-Clause */
/* msg_pair.h: both ends of one FI_EP_MSG connection in one process, for the MSG tests (test_msg.c, test_msg_rx.c). */
#ifndef MSG_PAIR_H
#define MSG_PAIR_H

#include "prov_test.h"

/* Both sides of one connection in this process, on 127.0.0.1, one domain (so
 * both QPs share the domain's RoCEv2 port and are told apart by QPN). */
struct mpair {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	/** @cdomain: the client's domain when it has its own (else @domain) */
	struct fid_domain *cdomain;
	struct fid_eq *seq, *ceq;	/* server's, client's */
	struct fid_pep *pep;
	struct sockaddr_in listen;
	struct fid_ep *sep, *cep;	/* accepted and active endpoints */
	struct fid_cq *scq, *ccq;
};

/* the MSG entry for hints that allow @mode */
static inline struct fi_info *msg_info_caps(uint64_t caps, uint64_t mode)
{
	struct fi_info *hints = pt_hints(FI_EP_MSG), *info = NULL;
	int ret;

	hints->caps = caps;
	hints->mode = mode;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(braid, msg) = %d (%s)", ret, fi_strerror(-ret));
	cr_assert(pt_is_plain_braid(info));
	cr_assert_eq(info->ep_attr->type, FI_EP_MSG);
	return info;
}

static inline struct fi_info *msg_info_mode(uint64_t mode)
{
	return msg_info_caps(FI_MSG | FI_RMA, mode);
}

static inline struct fi_info *msg_info(void)
{
	return msg_info_mode(FI_RX_CQ_DATA | FI_CONTEXT);
}

/* Wait for @want on @eq; returns the bytes read. */
static inline ssize_t eq_expect(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *e,
				size_t len)
{
	long deadline = pt_now_ms() + 5000;
	uint32_t event = 0;
	ssize_t ret;

	do {
		ret = fi_eq_sread(eq, &event, e, len, 20, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	if (ret == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };

		cr_assert_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
		cr_assert_fail("error event %d (%s) instead of %u", err.err, fi_strerror(err.err), want);
	}
	cr_assert_gt(ret, 0, "fi_eq_sread = %zd (%s) waiting for event %u", ret,
		     fi_strerror((int)-ret), want);
	cr_assert_eq(event, want, "event %u, want %u", event, want);
	return ret;
}

static inline void ep_setup(struct mpair *p, struct fid_ep *ep, struct fid_eq *eq,
			    struct fid_cq *cq)
{
	cr_assert_eq(fi_ep_bind(ep, &eq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), 0);
}

/*
 * Both sides' endpoints of @caps with CQs of @format; @two_domains: the
 * client in a domain of its own (its own RoCEv2 port, progress apart).
 */
static inline void pair_open_full(struct mpair *p, uint64_t caps, uint64_t mode, bool two_domains,
				  enum fi_cq_format format)
{
	size_t len = sizeof(p->listen);

	memset(p, 0, sizeof(*p));
	p->info = msg_info_caps(caps, mode);
	cr_assert_eq(fi_fabric(p->info->fabric_attr, &p->fabric, NULL), 0);
	cr_assert_eq(fi_domain(p->fabric, p->info, &p->domain, NULL), 0);
	p->cdomain = p->domain;
	if (two_domains)
		cr_assert_eq(fi_domain(p->fabric, p->info, &p->cdomain, NULL), 0);
	p->seq = pt_eq_open(p->fabric);
	p->ceq = pt_eq_open(p->fabric);
	p->scq = pt_cq_open(p->domain, format, FI_WAIT_UNSPEC);
	p->ccq = pt_cq_open(p->cdomain, format, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_passive_ep(p->fabric, p->info, &p->pep, NULL), 0);
	cr_assert_eq(fi_pep_bind(p->pep, &p->seq->fid, 0), 0);
	cr_assert_eq(fi_listen(p->pep), 0);
	cr_assert_eq(fi_getname(&p->pep->fid, &p->listen, &len), 0);
	cr_assert_neq(p->listen.sin_port, 0);
	cr_assert_eq(fi_endpoint(p->cdomain, p->info, &p->cep, NULL), 0);
	ep_setup(p, p->cep, p->ceq, p->ccq);
}

static inline void pair_open_domains(struct mpair *p, uint64_t mode, bool two_domains)
{
	pair_open_full(p, FI_MSG | FI_RMA, mode, two_domains, FI_CQ_FORMAT_DATA);
}

static inline void pair_open_mode(struct mpair *p, uint64_t mode)
{
	pair_open_domains(p, mode, false);
}

static inline void pair_open(struct mpair *p)
{
	pair_open_mode(p, FI_RX_CQ_DATA | FI_CONTEXT);
}

/* Connect with @cpd, accept with @spd; both sides see FI_CONNECTED. */
static inline void pair_connect(struct mpair *p, const char *cpd, const char *spd,
				void (*before_accept)(struct mpair *))
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	ssize_t n;

	cr_assert_eq(fi_connect(p->cep, &p->listen, cpd, strlen(cpd) + 1), 0);
	n = eq_expect(p->seq, FI_CONNREQ, e, sizeof(buf));
	cr_assert_eq((size_t)n, sizeof(*e) + strlen(cpd) + 1, "CONNREQ carries the private data");
	cr_assert_str_eq((char *)e->data, cpd);
	cr_assert_not_null(e->info);
	cr_assert_not_null(e->info->handle);
	cr_assert_eq(e->info->ep_attr->type, FI_EP_MSG);
	cr_assert_eq(fi_endpoint(p->domain, e->info, &p->sep, NULL), 0);
	fi_freeinfo(e->info);
	ep_setup(p, p->sep, p->seq, p->scq);
	if (before_accept)
		before_accept(p);
	cr_assert_eq(fi_accept(p->sep, spd, strlen(spd) + 1), 0);
	n = eq_expect(p->ceq, FI_CONNECTED, e, sizeof(buf));
	cr_assert_eq(e->fid, &p->cep->fid);
	cr_assert_str_eq((char *)e->data, spd, "FI_CONNECTED carries the accept data");
	(void)n;
	eq_expect(p->seq, FI_CONNECTED, e, sizeof(buf));
	cr_assert_eq(e->fid, &p->sep->fid);
}

static inline void pair_close(struct mpair *p)
{
	if (p->sep)
		cr_assert_eq(fi_close(&p->sep->fid), 0);
	if (p->cep)
		cr_assert_eq(fi_close(&p->cep->fid), 0);
	cr_assert_eq(fi_close(&p->pep->fid), 0);
	cr_assert_eq(fi_close(&p->scq->fid), 0);
	cr_assert_eq(fi_close(&p->ccq->fid), 0);
	cr_assert_eq(fi_close(&p->seq->fid), 0);
	cr_assert_eq(fi_close(&p->ceq->fid), 0);
	if (p->cdomain != p->domain)
		cr_assert_eq(fi_close(&p->cdomain->fid), 0);
	cr_assert_eq(fi_close(&p->domain->fid), 0);
	cr_assert_eq(fi_close(&p->fabric->fid), 0);
	fi_freeinfo(p->info);
}

/* One completion from @cq into @e (of its format) within 5 s; @other is read too, for its progress. */
static inline ssize_t cq_one(struct fid_cq *cq, struct fid_cq *other, void *e)
{
	long deadline = pt_now_ms() + 5000;
	ssize_t ret;

	do {
		if (other)
			(void)fi_cq_read(other, NULL, 0);
		ret = fi_cq_read(cq, e, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

static inline struct fi_cq_err_entry cq_err(struct fid_cq *cq)
{
	struct fi_cq_err_entry err = { 0 };

	cr_assert_eq(fi_cq_readerr(cq, &err, 0), 1);
	return err;
}

static inline void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

#endif /* MSG_PAIR_H */
