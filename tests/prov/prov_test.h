/* SPDX-License-Identifier: BSD-2-Clause */
/* prov_test.h: helpers shared by the provider tests; everything goes through the public fi_* API. */
#ifndef PROV_TEST_H
#define PROV_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* pthread_timedjoin_np */
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_braid.h>

#include "braid_compat.h"

/*
 * Wait sets, poll sets and fi_av_bind are deprecated by libfabric 2.0 but
 * stay in its API, and braid serves them: the tests of them build against
 * 2.x headers without a warning each.
 */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* The API version every test asks for: the headers' (1.17 to 2.6); the tests of older APIs name theirs. */
#define PT_VERSION	BRAID_FI_HDR_VERSION
/* How long a bounded poll loop may spin before the test gives up. */
#define PT_POLL_MS	2000

/* A byte pattern of @seed over @n bytes (not periodic in a page): pt_fill writes it. */
static inline void pt_fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 29 + i * 13 + (i >> 9));
}

/* Where @p first differs from pt_fill's pattern of @seed (@n: nowhere); no assertion, so a child process may ask. */
static inline size_t pt_mismatch(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed * 29 + i * 13 + (i >> 9)))
			return i;
	return n;
}

static inline bool pt_same(const uint8_t *p, size_t n, unsigned seed)
{
	return pt_mismatch(p, n, seed) == n;
}

/* Counter @name of @ep (fi_braid(7): FI_BRAID_STAT_OPS). */
static inline uint64_t pt_stat(struct fid_ep *ep, const char *name)
{
	struct fi_braid_stat_ops *ops = NULL;
	uint64_t v = 0;

	cr_assert_eq(fi_open_ops(&ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL), 0);
	cr_assert_eq(ops->value(&ep->fid, name, &v), 0, "counter %s", name);
	return v;
}

static inline long pt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Hints that select the plain braid provider (no utility layering). */
static inline struct fi_info *pt_hints(enum fi_ep_type type)
{
	struct fi_info *hints = fi_allocinfo();

	cr_assert_not_null(hints);
	hints->fabric_attr->prov_name = strdup("braid");
	hints->ep_attr->type = type;
	return hints;
}

/* Is @info served by braid itself (not "braid;ofi_rxd" and the like)? */
static inline bool pt_is_plain_braid(const struct fi_info *info)
{
	return info->fabric_attr && info->fabric_attr->prov_name &&
	       !strcmp(info->fabric_attr->prov_name, "braid");
}

/*
 * pt_take_plain_braid() - a copy of @list's first entry served by braid
 * itself (not a utility provider layered over it); @list is freed. The
 * caller frees the copy (fi_freeinfo).
 */
static inline struct fi_info *pt_take_plain_braid(struct fi_info *list)
{
	struct fi_info *cur, *info = NULL;

	for (cur = list; cur && !info; cur = cur->next)
		if (pt_is_plain_braid(cur))
			info = fi_dupinfo(cur);
	fi_freeinfo(list);
	cr_assert_not_null(info, "no entry of braid's own");
	return info;
}

/*
 * fi_getinfo for a braid DGRAM endpoint bound to 127.0.0.1 with a port the
 * kernel picks; @caps (0: provider default) are the requested capabilities.
 */
static inline struct fi_info *pt_getinfo_lo(uint64_t caps)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info = NULL;
	int ret;

	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(braid, 127.0.0.1) = %d (%s)", ret, fi_strerror(-ret));
	cr_assert_not_null(info);
	cr_assert(pt_is_plain_braid(info), "first entry is %s", info->fabric_attr->prov_name);
	return info;
}

/* An open fabric and domain on 127.0.0.1. */
struct pt_dom {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

static inline void pt_dom_open_caps(struct pt_dom *d, uint64_t caps)
{
	int ret;

	memset(d, 0, sizeof(*d));
	d->info = pt_getinfo_lo(caps);
	ret = fi_fabric(d->info->fabric_attr, &d->fabric, NULL);
	cr_assert_eq(ret, 0, "fi_fabric = %d", ret);
	ret = fi_domain(d->fabric, d->info, &d->domain, NULL);
	cr_assert_eq(ret, 0, "fi_domain = %d", ret);
}

static inline void pt_dom_open(struct pt_dom *d)
{
	pt_dom_open_caps(d, 0);
}

static inline void pt_dom_close(struct pt_dom *d)
{
	if (d->domain)
		cr_assert_eq(fi_close(&d->domain->fid), 0);
	if (d->fabric)
		cr_assert_eq(fi_close(&d->fabric->fid), 0);
	fi_freeinfo(d->info);
	memset(d, 0, sizeof(*d));
}

static inline struct fid_cq *pt_cq_open(struct fid_domain *domain, enum fi_cq_format format,
					enum fi_wait_obj wait_obj)
{
	struct fi_cq_attr attr = { .format = format, .wait_obj = wait_obj };
	struct fid_cq *cq = NULL;
	int ret;

	ret = fi_cq_open(domain, &attr, &cq, NULL);
	cr_assert_eq(ret, 0, "fi_cq_open = %d (%s)", ret, fi_strerror(-ret));
	return cq;
}

static inline struct fid_av *pt_av_open(struct fid_domain *domain, enum fi_av_type type)
{
	struct fi_av_attr attr = { .type = type };
	struct fid_av *av = NULL;
	int ret;

	ret = fi_av_open(domain, &attr, &av, NULL);
	cr_assert_eq(ret, 0, "fi_av_open = %d (%s)", ret, fi_strerror(-ret));
	return av;
}

/* An EQ of 16 entries that blocking reads can wait on (the MSG handshake's). */
static inline struct fid_eq *pt_eq_open(struct fid_fabric *fabric)
{
	struct fi_eq_attr attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq = NULL;

	cr_assert_eq(fi_eq_open(fabric, &attr, &eq, NULL), 0);
	return eq;
}

static inline struct fid_cntr *pt_cntr_open(struct fid_domain *domain, enum fi_wait_obj wait_obj)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = wait_obj };
	struct fid_cntr *cntr = NULL;
	int ret;

	ret = fi_cntr_open(domain, &attr, &cntr, NULL);
	cr_assert_eq(ret, 0, "fi_cntr_open = %d (%s)", ret, fi_strerror(-ret));
	return cntr;
}

static inline struct sockaddr_in pt_sin(const char *ip, uint16_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	return sin;
}

/*
 * Read one entry from @cq, retrying -FI_EAGAIN for at most PT_POLL_MS.
 * Returns what the last fi_cq_readfrom returned (1, -FI_EAVAIL, -FI_EAGAIN ...).
 * @other, if not NULL, is read with count 0 in the loop to drive its progress.
 */
static inline ssize_t pt_cq_poll(struct fid_cq *cq, void *entry, fi_addr_t *src,
				 struct fid_cq *other)
{
	long deadline = pt_now_ms() + PT_POLL_MS;
	ssize_t ret;

	do {
		if (other)
			(void)fi_cq_read(other, NULL, 0);
		ret = src ? fi_cq_readfrom(cq, entry, 1, src) : fi_cq_read(cq, entry, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

/* Read @cq a few times and expect nothing there (successful or in error). */
static inline void pt_cq_expect_empty(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;
	ssize_t ret;
	int i;

	for (i = 0; i < 50; i++) {
		ret = fi_cq_read(cq, &e, 1);
		cr_assert_eq(ret, -FI_EAGAIN, "CQ expected empty, fi_cq_read = %zd", ret);
	}
}

/*
 * Join @t, waiting at most 5 * PT_POLL_MS; @kick (if not NULL) is called before
 * each 50 ms wait, e.g. to signal the object the thread blocks on.
 */
static inline bool pt_join_within(pthread_t t, void (*kick)(void *), void *arg)
{
	long deadline = pt_now_ms() + 5 * PT_POLL_MS;
	struct timespec ts;

	while (pt_now_ms() < deadline) {
		if (kick)
			kick(arg);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!pthread_timedjoin_np(t, NULL, &ts))
			return true;
	}
	return false;
}

/* A free UDP port on 127.0.0.1 (bound, read back, released). */
static inline uint16_t pt_free_udp_port(void)
{
	struct sockaddr_in sin = pt_sin("127.0.0.1", 0);
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	close(fd);
	return ntohs(sin.sin_port);
}

/*
 * A DGRAM endpoint on 127.0.0.1 with its own AV and CQs. Tests that need an
 * unusual setup call pt_ep_create, bind what they want, then pt_ep_enable.
 */
struct pt_ep {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *tx_cq, *rx_cq;
	struct fid_cntr *tx_cntr, *rx_cntr;
	/** @name: what fi_getname reports. */
	struct sockaddr_in name;
	/** @peer: the other endpoint of a pair, as inserted into @av. */
	fi_addr_t peer;
};

static inline void pt_ep_create(struct pt_dom *d, struct pt_ep *e, struct fi_info *info)
{
	size_t len = sizeof(e->name);
	int ret;

	memset(e, 0, sizeof(*e));
	e->peer = FI_ADDR_NOTAVAIL;
	ret = fi_endpoint(d->domain, info ? info : d->info, &e->ep, NULL);
	cr_assert_eq(ret, 0, "fi_endpoint = %d (%s)", ret, fi_strerror(-ret));
	e->av = pt_av_open(d->domain, FI_AV_TABLE);
	cr_assert_eq(fi_ep_bind(e->ep, &e->av->fid, 0), 0);
	ret = fi_getname(&e->ep->fid, &e->name, &len);
	cr_assert_eq(ret, 0, "fi_getname = %d", ret);
	cr_assert_eq(len, sizeof(e->name));
}

static inline void pt_ep_bind_cqs(struct pt_dom *d, struct pt_ep *e, enum fi_cq_format format,
				  enum fi_wait_obj wait_obj, uint64_t tx_flags, uint64_t rx_flags)
{
	int ret;

	e->tx_cq = pt_cq_open(d->domain, format, FI_WAIT_NONE);
	e->rx_cq = pt_cq_open(d->domain, format, wait_obj);
	ret = fi_ep_bind(e->ep, &e->tx_cq->fid, FI_TRANSMIT | tx_flags);
	cr_assert_eq(ret, 0, "bind tx CQ = %d", ret);
	ret = fi_ep_bind(e->ep, &e->rx_cq->fid, FI_RECV | rx_flags);
	cr_assert_eq(ret, 0, "bind rx CQ = %d", ret);
}

static inline void pt_ep_bind_cntrs(struct pt_dom *d, struct pt_ep *e)
{
	e->tx_cntr = pt_cntr_open(d->domain, FI_WAIT_UNSPEC);
	e->rx_cntr = pt_cntr_open(d->domain, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_ep_bind(e->ep, &e->tx_cntr->fid, FI_SEND), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->rx_cntr->fid, FI_RECV), 0);
}

static inline void pt_ep_enable(struct pt_ep *e)
{
	int ret = fi_enable(e->ep);

	cr_assert_eq(ret, 0, "fi_enable = %d (%s)", ret, fi_strerror(-ret));
}

/* Insert @to's address into @from's AV: @from->peer addresses @to. */
static inline void pt_ep_connect(struct pt_ep *from, const struct pt_ep *to)
{
	cr_assert_eq(fi_av_insert(from->av, &to->name, 1, &from->peer, 0, NULL), 1);
}

static inline void pt_ep_close(struct pt_ep *e)
{
	if (e->ep)
		cr_assert_eq(fi_close(&e->ep->fid), 0);
	if (e->tx_cq)
		cr_assert_eq(fi_close(&e->tx_cq->fid), 0);
	if (e->rx_cq)
		cr_assert_eq(fi_close(&e->rx_cq->fid), 0);
	if (e->tx_cntr)
		cr_assert_eq(fi_close(&e->tx_cntr->fid), 0);
	if (e->rx_cntr)
		cr_assert_eq(fi_close(&e->rx_cntr->fid), 0);
	if (e->av)
		cr_assert_eq(fi_close(&e->av->fid), 0);
	memset(e, 0, sizeof(*e));
}

/* Two enabled endpoints that know each other: a sends to b and back. */
struct pt_pair {
	struct pt_dom d;
	struct pt_ep a, b;
};

static inline void pt_pair_open_opts(struct pt_pair *p, uint64_t caps, enum fi_cq_format format,
				     enum fi_wait_obj rx_wait, bool cntrs)
{
	pt_dom_open_caps(&p->d, caps);
	pt_ep_create(&p->d, &p->a, NULL);
	pt_ep_create(&p->d, &p->b, NULL);
	pt_ep_bind_cqs(&p->d, &p->a, format, rx_wait, 0, 0);
	pt_ep_bind_cqs(&p->d, &p->b, format, rx_wait, 0, 0);
	if (cntrs) {
		pt_ep_bind_cntrs(&p->d, &p->a);
		pt_ep_bind_cntrs(&p->d, &p->b);
	}
	pt_ep_connect(&p->a, &p->b);
	pt_ep_connect(&p->b, &p->a);
	pt_ep_enable(&p->a);
	pt_ep_enable(&p->b);
}

static inline void pt_pair_open(struct pt_pair *p)
{
	pt_pair_open_opts(p, 0, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, false);
}

static inline void pt_pair_close(struct pt_pair *p)
{
	pt_ep_close(&p->a);
	pt_ep_close(&p->b);
	pt_dom_close(&p->d);
}

/* fi_send, retrying -FI_EAGAIN (a full socket) for at most PT_POLL_MS. */
static inline ssize_t pt_send(struct pt_ep *e, const void *buf, size_t len, void *ctx)
{
	long deadline = pt_now_ms() + PT_POLL_MS;
	ssize_t ret;

	do {
		ret = fi_send(e->ep, buf, len, NULL, e->peer, ctx);
		if (ret == -FI_EAGAIN)
			(void)fi_cq_read(e->tx_cq, NULL, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

#endif /* PROV_TEST_H */
