/* SPDX-License-Identifier: BSD-2-Clause */
/* test_pep.c: passive endpoints (fi_passive_ep, fi_listen, fi_getname / fi_setname, FI_CONNREQ, fi_reject, fi_accept's errors, closing a listener with requests pending), on 127.0.0.1. */
#include "prov_test.h"

#include <errno.h>

/* braid's MSG entry (the caller frees it) */
static struct fi_info *msg_info(void)
{
	struct fi_info *hints = pt_hints(FI_EP_MSG), *list = NULL;

	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_RX_CQ_DATA;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list), 0);
	fi_freeinfo(hints);
	return pt_take_plain_braid(list);
}

/* A fabric, a domain, a listener's EQ and a client's EQ (of 16 entries). */
struct lis {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *seq, *ceq;
	struct fid_pep *pep;
	/** @addr: the listener's address (fi_getname). */
	struct sockaddr_in addr;
	/** @cep: the client's endpoint, @ccq its CQ. */
	struct fid_ep *cep;
	struct fid_cq *ccq;
};

static void lis_open_base(struct lis *l)
{
	memset(l, 0, sizeof(*l));
	l->info = msg_info();
	cr_assert_eq(fi_fabric(l->info->fabric_attr, &l->fabric, NULL), 0);
	cr_assert_eq(fi_domain(l->fabric, l->info, &l->domain, NULL), 0);
	l->seq = pt_eq_open(l->fabric);
	l->ceq = pt_eq_open(l->fabric);
}

/* an endpoint of @info on @eq with a CQ of its own (in *@cq), enabled */
static struct fid_ep *ep_open(struct lis *l, struct fi_info *info, struct fid_eq *eq,
			      struct fid_cq **cq)
{
	struct fid_ep *ep;

	*cq = pt_cq_open(l->domain, FI_CQ_FORMAT_DATA, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_endpoint(l->domain, info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &eq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), 0);
	return ep;
}

/* a client endpoint, bound and enabled */
static struct fid_ep *client_open(struct lis *l, struct fid_cq **cq)
{
	return ep_open(l, l->info, l->ceq, cq);
}

/* a listening passive endpoint on the server's EQ, and a client endpoint */
static void lis_open(struct lis *l)
{
	size_t len = sizeof(l->addr);

	lis_open_base(l);
	cr_assert_eq(fi_passive_ep(l->fabric, l->info, &l->pep, &l->addr), 0);
	cr_assert_eq(fi_pep_bind(l->pep, &l->seq->fid, 0), 0);
	cr_assert_eq(fi_listen(l->pep), 0);
	cr_assert_eq(fi_getname(&l->pep->fid, &l->addr, &len), 0);
	l->cep = client_open(l, &l->ccq);
}

static void lis_close(struct lis *l)
{
	if (l->cep)
		cr_assert_eq(fi_close(&l->cep->fid), 0);
	if (l->ccq)
		cr_assert_eq(fi_close(&l->ccq->fid), 0);
	if (l->pep)
		cr_assert_eq(fi_close(&l->pep->fid), 0);
	cr_assert_eq(fi_close(&l->seq->fid), 0);
	cr_assert_eq(fi_close(&l->ceq->fid), 0);
	cr_assert_eq(fi_close(&l->domain->fid), 0);
	cr_assert_eq(fi_close(&l->fabric->fid), 0);
	fi_freeinfo(l->info);
}

/*
 * Wait on @eq (reading @also with FI_PEEK meanwhile, for its progress) for
 * an event: its number, or for an error event -FI_EAVAIL with *@err read
 * (its err_data into @edata); -FI_EAGAIN when none came in 10 s.
 */
static int eq_next(struct fid_eq *eq, struct fid_eq *also, void *buf, size_t len,
		   struct fi_eq_err_entry *err, void *edata, size_t edata_len)
{
	long deadline = pt_now_ms() + 10000;
	uint32_t event;
	uint8_t peek[sizeof(struct fi_eq_cm_entry) + 256];
	ssize_t ret;

	do {
		if (also)
			(void)fi_eq_read(also, &event, peek, sizeof(peek), FI_PEEK);
		ret = fi_eq_sread(eq, &event, buf, len, 10, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	if (ret == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		err->err_data = edata;
		err->err_data_size = edata_len;
		cr_assert_eq(fi_eq_readerr(eq, err, 0), (ssize_t)sizeof(*err));
		return -FI_EAVAIL;
	}
	if (ret < 0)
		return (int)ret;
	return (int)event;
}

/* The client connects with @pdata; the server's FI_CONNREQ is read into @buf (@len). */
static struct fi_eq_cm_entry *connreq(struct lis *l, const char *pdata, uint8_t *buf, size_t len)
{
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct fi_eq_err_entry err;

	cr_assert_eq(fi_connect(l->cep, &l->addr, pdata, pdata ? strlen(pdata) + 1 : 0), 0);
	cr_assert_eq(eq_next(l->seq, l->ceq, buf, len, &err, NULL, 0), FI_CONNREQ);
	return e;
}

/* The client's error event: its err, the reject's data in @edata. */
static struct fi_eq_err_entry client_error(struct lis *l, void *edata, size_t edata_len)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_err_entry err;

	cr_assert_eq(eq_next(l->ceq, l->seq, buf, sizeof(buf), &err, edata, edata_len), -FI_EAVAIL,
		     "the client gets an error event");
	cr_assert_eq(err.fid, &l->cep->fid);
	return err;
}

Test(fi_passive_ep, bad_arguments)
{
	struct fid_fabric *fabric;
	struct fid_pep *pep = NULL;
	struct fi_info *info = msg_info(), *bad;
	struct sockaddr_in6 *six;

	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_passive_ep(fabric, NULL, &pep, NULL), -FI_EINVAL);
	/* passive endpoints are connection-oriented */
	bad = fi_dupinfo(info);
	bad->ep_attr->type = FI_EP_RDM;
	cr_assert_eq(fi_passive_ep(fabric, bad, &pep, NULL), -FI_EINVAL);
	fi_freeinfo(bad);
	/* an address braid cannot listen on (IPv6), or a length that is no sockaddr_in's */
	bad = fi_dupinfo(info);
	free(bad->src_addr);
	six = calloc(1, sizeof(*six));
	six->sin6_family = AF_INET6;
	bad->src_addr = six;
	bad->src_addrlen = sizeof(*six);
	cr_assert_eq(fi_passive_ep(fabric, bad, &pep, NULL), -FI_EINVAL);
	bad->addr_format = FI_SOCKADDR_IN;
	((struct sockaddr_in *)six)->sin_family = AF_INET;
	bad->src_addrlen = sizeof(struct sockaddr_in) + 1;
	cr_assert_eq(fi_passive_ep(fabric, bad, &pep, NULL), -FI_EINVAL);
	fi_freeinfo(bad);
	cr_assert_null(pep);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

/*
 * A passive endpoint has its address from its creation (a UDP port of its
 * own on the entry's IP, bound: nobody else gets it), before fi_listen;
 * fi_getname says how long the address is when the buffer is short.
 */
Test(fi_getname, a_passive_endpoint_is_bound_from_its_creation)
{
	struct sockaddr_in name, other;
	struct lis l;
	size_t len = sizeof(name);
	int fd;

	lis_open_base(&l);
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &l.pep, NULL), 0);
	cr_assert_eq(l.pep->fid.fclass, FI_CLASS_PEP);
	cr_assert_eq(fi_getname(&l.pep->fid, &name, &len), 0);
	cr_assert_eq(len, sizeof(name));
	cr_assert_eq(name.sin_family, AF_INET);
	cr_assert_eq(name.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	cr_assert_neq(name.sin_port, 0);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	other = name;
	cr_assert_neq(bind(fd, (struct sockaddr *)&other, sizeof(other)), 0, "the port is taken");
	cr_assert_eq(errno, EADDRINUSE);
	close(fd);
	len = 4;
	cr_assert_eq(fi_getname(&l.pep->fid, &other, &len), -FI_ETOOSMALL);
	cr_assert_eq(len, sizeof(name), "the length it needs");
	len = 0;
	cr_assert_eq(fi_getname(&l.pep->fid, NULL, &len), -FI_ETOOSMALL);
	cr_assert_eq(len, sizeof(name));
	cr_assert_eq(fi_getname(&l.pep->fid, &other, NULL), -FI_EINVAL);
	lis_close(&l);
}

/*
 * fi_setname moves a passive endpoint that is not bound to an EQ yet; the
 * address must be an IPv4 one, free; once bound (or listening) it stays.
 * A client reaches it at its new address.
 */
Test(fi_setname, moves_a_passive_endpoint_until_it_is_bound, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct sockaddr_in to, name, taken;
	struct sockaddr_in6 six = { .sin6_family = AF_INET6 };
	struct fid_pep *other;
	struct fi_eq_cm_entry *e;
	struct lis l;
	size_t len = sizeof(taken);

	lis_open_base(&l);
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &l.pep, NULL), 0);
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &other, NULL), 0);
	cr_assert_eq(fi_getname(&other->fid, &taken, &len), 0);
	to = pt_sin("127.0.0.1", pt_free_udp_port());
	cr_assert_eq(fi_setname(&l.pep->fid, NULL, sizeof(to)), -FI_EINVAL);
	cr_assert_eq(fi_setname(&l.pep->fid, &to, sizeof(to) - 1), -FI_EINVAL);
	cr_assert_eq(fi_setname(&l.pep->fid, &six, sizeof(to)), -FI_EINVAL);
	cr_assert_eq(fi_setname(&l.pep->fid, &taken, sizeof(taken)), -FI_EADDRINUSE);
	cr_assert_eq(fi_setname(&l.pep->fid, &to, sizeof(to)), 0);
	len = sizeof(name);
	cr_assert_eq(fi_getname(&l.pep->fid, &name, &len), 0);
	cr_assert_eq(name.sin_port, to.sin_port, "at its new address");
	cr_assert_eq(fi_close(&other->fid), 0);
	cr_assert_eq(fi_pep_bind(l.pep, &l.seq->fid, 0), 0);
	cr_assert_eq(fi_setname(&l.pep->fid, &to, sizeof(to)), -FI_EOPBADSTATE, "bound: it stays");
	cr_assert_eq(fi_listen(l.pep), 0);
	l.addr = to;
	l.cep = client_open(&l, &l.ccq);
	e = connreq(&l, "moved", buf, sizeof(buf));
	cr_assert_str_eq((char *)e->data, "moved");
	cr_assert_eq(fi_reject(l.pep, e->info->handle, NULL, 0), 0);
	fi_freeinfo(e->info);
	lis_close(&l);
}

/* fi_listen needs an EQ; a passive endpoint is bound to one EQ, which stays open while it is. */
Test(fi_listen, needs_one_eq)
{
	struct fid_cq *cq;
	struct lis l;

	lis_open_base(&l);
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &l.pep, NULL), 0);
	cr_assert_eq(fi_listen(l.pep), -FI_ENOEQ);
	cq = pt_cq_open(l.domain, FI_CQ_FORMAT_DATA, FI_WAIT_NONE);
	cr_assert_eq(fi_pep_bind(l.pep, &cq->fid, 0), -FI_EINVAL, "a CQ is no EQ");
	cr_assert_eq(fi_pep_bind(l.pep, &l.seq->fid, 0), 0);
	cr_assert_eq(fi_pep_bind(l.pep, &l.ceq->fid, 0), -FI_EINVAL, "a second EQ");
	cr_assert_eq(fi_listen(l.pep), 0);
	cr_assert_eq(fi_close(&l.seq->fid), -FI_EBUSY, "its EQ stays open while it is");
	cr_assert_eq(fi_close(&cq->fid), 0);
	lis_close(&l);
}

/* What a passive endpoint answers to options and to operations of active endpoints. */
Test(fi_getopt, passive_endpoint_options_and_operations)
{
	struct lis l;
	size_t sz = 0, szlen = sizeof(sz);
	uint32_t small;

	lis_open_base(&l);
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &l.pep, NULL), 0);
	cr_assert_eq(fi_getopt(&l.pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &szlen), 0);
	cr_assert_eq(sz, 256, "fi_braid(7): 256 bytes of connection data");
	cr_assert_eq(szlen, sizeof(size_t));
	szlen = sizeof(small);
	cr_assert_eq(fi_getopt(&l.pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &small, &szlen),
		     -FI_ETOOSMALL);
	szlen = sizeof(sz);
	cr_assert_eq(fi_getopt(&l.pep->fid, FI_OPT_ENDPOINT + 1, FI_OPT_CM_DATA_SIZE, &sz, &szlen),
		     -FI_EINVAL);
	cr_assert_eq(fi_getopt(&l.pep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &sz, &szlen),
		     -FI_ENOPROTOOPT);
	cr_assert_eq(fi_getopt(&l.pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, NULL, &szlen),
		     -FI_EINVAL);
	cr_assert_eq(fi_setopt(&l.pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, sizeof(sz)),
		     -FI_ENOPROTOOPT);
	cr_assert_eq(fi_cancel(&l.pep->fid, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_control(&l.pep->fid, FI_GETWAIT, &sz), -FI_ENOSYS);
	lis_close(&l);
}

/*
 * FI_CONNREQ: from the passive endpoint, with the request's private data and
 * an fi_info to open the accepting endpoint with: its handle the request,
 * its destination the client's address, its source the listener's IP (a
 * port of the endpoint's own).
 */
Test(fi_listen, connreq_carries_the_request, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e;
	struct sockaddr_in cname, *src, *dst;
	struct lis l;
	size_t len = sizeof(cname);

	lis_open(&l);
	cr_assert_eq(fi_getname(&l.cep->fid, &cname, &len), 0);
	e = connreq(&l, "knock knock", buf, sizeof(buf));
	cr_assert_eq(e->fid, &l.pep->fid);
	cr_assert_str_eq((char *)e->data, "knock knock");
	cr_assert_not_null(e->info);
	cr_assert_not_null(e->info->handle);
	cr_assert_eq(e->info->handle->fclass, FI_CLASS_CONNREQ);
	cr_assert_eq(e->info->ep_attr->type, FI_EP_MSG);
	cr_assert_eq(e->info->dest_addrlen, sizeof(*dst));
	dst = e->info->dest_addr;
	cr_assert_eq(dst->sin_addr.s_addr, cname.sin_addr.s_addr);
	cr_assert_eq(dst->sin_port, cname.sin_port, "the client's address");
	cr_assert_eq(e->info->src_addrlen, sizeof(*src));
	src = e->info->src_addr;
	cr_assert_eq(src->sin_addr.s_addr, l.addr.sin_addr.s_addr, "the listener's IP");
	cr_assert_eq(src->sin_port, 0, "a port of its own");
	cr_assert_eq(fi_reject(l.pep, e->info->handle, NULL, 0), 0);
	fi_freeinfo(e->info);
	lis_close(&l);
}

/*
 * fi_reject's bad arguments leave the request as it was; refused without
 * data, the client gets FI_ECONNREFUSED with no error data.
 */
Test(fi_reject, bad_arguments_then_refused_without_data, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	char big[257] = { 0 }, edata[64];
	struct fi_eq_cm_entry *e;
	struct fi_eq_err_entry err;
	struct fid_pep *other;
	struct lis l;

	lis_open(&l);
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &other, NULL), 0);
	e = connreq(&l, "let me in", buf, sizeof(buf));
	cr_assert_eq(fi_reject(l.pep, NULL, NULL, 0), -FI_EINVAL);
	cr_assert_eq(fi_reject(l.pep, &l.pep->fid, NULL, 0), -FI_EINVAL, "not a request");
	cr_assert_eq(fi_reject(l.pep, e->info->handle, big, sizeof(big)), -FI_EINVAL, "257 bytes");
	cr_assert_eq(fi_reject(l.pep, e->info->handle, NULL, 4), -FI_EINVAL);
	cr_assert_eq(fi_reject(other, e->info->handle, NULL, 0), -FI_EINVAL, "another's request");
	cr_assert_eq(fi_reject(l.pep, e->info->handle, NULL, 0), 0);
	fi_freeinfo(e->info);
	memset(edata, 0x5a, sizeof(edata));
	err = client_error(&l, edata, sizeof(edata));
	cr_assert_eq(err.err, FI_ECONNREFUSED);
	cr_assert_eq(err.err_data_size, 0, "no data");
	cr_assert_eq((uint8_t)edata[0], 0x5a, "nothing written");
	cr_assert_eq(fi_close(&other->fid), 0);
	lis_close(&l);
}

/*
 * fi_accept's errors: on an endpoint not opened for a request, before
 * fi_enable, with too much data, twice; an accepted request cannot be
 * rejected. The connection it made outlives its passive endpoint.
 */
Test(fi_accept, errors_and_the_connection_outlives_its_listener, .timeout = 60)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256], rbuf[16];
	char big[257] = { 0 };
	struct fi_eq_cm_entry *e;
	struct fi_eq_err_entry err;
	struct fi_cq_data_entry c;
	struct fid_ep *sep;
	struct fid_cq *scq;
	struct lis l;
	long deadline;
	ssize_t ret;

	lis_open(&l);
	e = connreq(&l, "hello", buf, sizeof(buf));
	cr_assert_eq(fi_accept(l.cep, NULL, 0), -FI_EINVAL, "no request to accept");
	scq = pt_cq_open(l.domain, FI_CQ_FORMAT_DATA, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_endpoint(l.domain, e->info, &sep, NULL), 0);
	cr_assert_eq(fi_ep_bind(sep, &l.seq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(sep, &scq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_accept(sep, NULL, 0), -FI_EOPBADSTATE, "not enabled");
	cr_assert_eq(fi_enable(sep), 0);
	cr_assert_eq(fi_accept(sep, big, sizeof(big)), -FI_EINVAL, "257 bytes");
	cr_assert_eq(fi_accept(sep, NULL, 1), -FI_EINVAL);
	cr_assert_eq(fi_recv(sep, rbuf, sizeof(rbuf), NULL, 0, rbuf), 0);
	cr_assert_eq(fi_accept(sep, "welcome", 8), 0);
	cr_assert_eq(fi_accept(sep, NULL, 0), -FI_EALREADY, "accepted once");
	cr_assert_eq(fi_reject(l.pep, e->info->handle, NULL, 0), -FI_EINVAL, "accepted: no reject");
	fi_freeinfo(e->info);
	cr_assert_eq(eq_next(l.ceq, l.seq, buf, sizeof(buf), &err, NULL, 0), FI_CONNECTED);
	cr_assert_str_eq((char *)e->data, "welcome");
	cr_assert_eq(eq_next(l.seq, NULL, buf, sizeof(buf), &err, NULL, 0), FI_CONNECTED);
	cr_assert_eq(e->fid, &sep->fid);
	/* the listener goes; its connection stays */
	cr_assert_eq(fi_close(&l.pep->fid), 0);
	l.pep = NULL;
	cr_assert_eq(fi_send(l.cep, "still", 6, NULL, 0, NULL), 0);
	deadline = pt_now_ms() + 10000;
	do {
		(void)fi_cq_read(l.ccq, &c, 1);
		ret = fi_cq_read(scq, &c, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_assert_eq(ret, 1, "the message arrived after the listener closed");
	cr_assert_eq(c.op_context, rbuf);
	cr_assert_str_eq((char *)rbuf, "still");
	cr_assert_eq(fi_close(&sep->fid), 0);
	cr_assert_eq(fi_close(&scq->fid), 0);
	lis_close(&l);
}

/*
 * Closing a passive endpoint refuses the requests it reported and nobody
 * answered: their clients get FI_ECONNREFUSED at once, not a time-out.
 */
Test(fi_close, a_passive_endpoint_refuses_the_requests_it_has_not_answered, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e;
	struct fi_eq_err_entry err;
	struct lis l;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "60000", 1);	/* a refusal, not a time-out */
	lis_open(&l);
	e = connreq(&l, "anyone?", buf, sizeof(buf));
	fi_freeinfo(e->info);
	cr_assert_eq(fi_close(&l.pep->fid), 0);
	l.pep = NULL;
	err = client_error(&l, NULL, 0);
	cr_assert_eq(err.err, FI_ECONNREFUSED, "err %d", err.err);
	lis_close(&l);
}

/*
 * A request that came while the EQ had no room for its FI_CONNREQ is
 * refused at once (the client hears it; nothing waits for a time-out);
 * one that came before fi_listen is not reported.
 */
Test(fi_listen, a_full_eq_refuses_the_request, .timeout = 30)
{
	struct fi_eq_attr attr = { .size = 1, .wait_obj = FI_WAIT_UNSPEC, .flags = FI_WRITE };
	struct fi_eq_entry ev = { .data = 1 };
	struct fi_eq_err_entry err;
	struct lis l;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "60000", 1);	/* a refusal, not a time-out */
	lis_open_base(&l);
	cr_assert_eq(fi_close(&l.seq->fid), 0);
	cr_assert_eq(fi_eq_open(l.fabric, &attr, &l.seq, NULL), 0);
	cr_assert_eq(fi_eq_write(l.seq, FI_NOTIFY, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &l.pep, NULL), 0);
	cr_assert_eq(fi_pep_bind(l.pep, &l.seq->fid, 0), 0);
	cr_assert_eq(fi_listen(l.pep), 0);
	{
		size_t len = sizeof(l.addr);

		cr_assert_eq(fi_getname(&l.pep->fid, &l.addr, &len), 0);
	}
	l.cep = client_open(&l, &l.ccq);
	cr_assert_eq(fi_connect(l.cep, &l.addr, "full?", 6), 0);
	/* the client's error comes while the server's EQ is looked at (FI_PEEK: it stays full) */
	err = client_error(&l, NULL, 0);
	cr_assert(err.err == FI_EBUSY || err.err == FI_ECONNREFUSED, "err %d", err.err);
	{
		uint32_t event;

		cr_assert_eq(fi_eq_read(l.seq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
		cr_assert_eq(event, FI_NOTIFY, "the EQ holds what it held, no FI_CONNREQ");
		cr_assert_eq(fi_eq_read(l.seq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	}
	lis_close(&l);
}

/* Requests to a passive endpoint bound but not listening are not reported; the client times out. */
Test(fi_listen, requests_before_it_are_not_reported, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_err_entry err;
	struct lis l;
	uint32_t event;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "500", 1);
	lis_open_base(&l);
	cr_assert_eq(fi_passive_ep(l.fabric, l.info, &l.pep, NULL), 0);
	cr_assert_eq(fi_pep_bind(l.pep, &l.seq->fid, 0), 0);
	{
		size_t len = sizeof(l.addr);

		cr_assert_eq(fi_getname(&l.pep->fid, &l.addr, &len), 0);
	}
	l.cep = client_open(&l, &l.ccq);
	cr_assert_eq(fi_connect(l.cep, &l.addr, NULL, 0), 0);
	err = client_error(&l, NULL, 0);
	cr_assert_eq(err.err, FI_ETIMEDOUT, "err %d", err.err);
	cr_assert_eq(fi_eq_read(l.seq, &event, buf, sizeof(buf), 0), -FI_EAGAIN, "nothing reported");
	lis_close(&l);
}

/* fi_endpoint(3): an endpoint takes over a passive endpoint's address, but not a listener's. */
Test(fi_endpoint, cannot_take_over_a_listening_passive_endpoint)
{
	struct fi_info *info;
	struct fid_ep *ep = NULL;
	struct lis l;

	lis_open(&l);
	info = fi_dupinfo(l.info);
	info->handle = &l.pep->fid;
	cr_assert_eq(fi_endpoint(l.domain, info, &ep, NULL), -FI_EBUSY);
	cr_assert_null(ep);
	info->handle = NULL;
	fi_freeinfo(info);
	lis_close(&l);
}

/* An endpoint opened for the request of @l's client, bound and enabled (its CQ in *@cq). */
static struct fid_ep *accepting_ep(struct lis *l, const char *pdata, struct fid_cq **cq)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = connreq(l, pdata, buf, sizeof(buf));
	struct fid_ep *ep = ep_open(l, e->info, l->seq, cq);

	fi_freeinfo(e->info);
	return ep;
}

/*
 * An endpoint opened for a request whose listener then closed (refusing it)
 * cannot accept it: fi_accept fails with -FI_ECONNREFUSED (the client was
 * refused), and the endpoint closes.
 */
Test(fi_accept, after_the_listener_closed_the_request_is_refused, .timeout = 30)
{
	struct fi_eq_err_entry err;
	struct fid_ep *sep;
	struct fid_cq *scq;
	struct lis l;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "60000", 1);	/* a refusal, not a time-out */
	lis_open(&l);
	sep = accepting_ep(&l, "late", &scq);
	cr_assert_eq(fi_close(&l.pep->fid), 0);
	l.pep = NULL;
	cr_assert_eq(fi_accept(sep, NULL, 0), -FI_ECONNREFUSED);
	err = client_error(&l, NULL, 0);
	cr_assert_eq(err.err, FI_ECONNREFUSED, "err %d", err.err);
	cr_assert_eq(fi_close(&sep->fid), 0);
	cr_assert_eq(fi_close(&scq->fid), 0);
	lis_close(&l);
}

/*
 * The same after fi_reject (a request refused cannot be refused again);
 * before it, a request whose endpoint closed without accepting it stayed
 * the listener's, to refuse.
 */
Test(fi_accept, after_fi_reject_the_request_is_refused, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	char edata[16] = "";
	struct fi_eq_cm_entry *e;
	struct fi_eq_err_entry err;
	struct fid_ep *sep;
	struct fid_cq *scq;
	struct lis l;

	lis_open(&l);
	e = connreq(&l, "knock", buf, sizeof(buf));
	sep = ep_open(&l, e->info, l.seq, &scq);
	cr_assert_eq(fi_close(&sep->fid), 0);
	cr_assert_eq(fi_close(&scq->fid), 0);
	sep = ep_open(&l, e->info, l.seq, &scq);
	cr_assert_eq(fi_reject(l.pep, e->info->handle, "no", 3), 0);
	cr_assert_eq(fi_reject(l.pep, e->info->handle, NULL, 0), -FI_EINVAL, "refused once");
	fi_freeinfo(e->info);
	cr_assert_eq(fi_accept(sep, NULL, 0), -FI_ECONNREFUSED);
	err = client_error(&l, edata, sizeof(edata));
	cr_assert_eq(err.err, FI_ECONNREFUSED);
	cr_assert_str_eq(edata, "no");
	cr_assert_eq(fi_close(&sep->fid), 0);
	cr_assert_eq(fi_close(&scq->fid), 0);
	lis_close(&l);
}
