/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_pep.c: passive endpoints (fi_passive_ep, fi_listen, fi_reject): the listening side of the MSG handshake (protocol.md §6). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"

#define PEP_CM_BUF	(sizeof(struct braid_cm_hdr) + BRAID_AUTH_TAG + BRAID_CM_DATA_MAX)

struct braid_pep {
	struct fid_pep pep_fid;
	struct braid_fabric *fabric;
	struct fi_info *info;
	struct braid_eq *eq;
	const struct braid_wire_ops *wire_ops;
	/** @wire: the listening socket (bound at creation, so fi_getname works before fi_listen). */
	struct braid_wire *wire;
	struct braid_cm_obj cm;
	/** @lock: guards @cml and @listening. */
	pthread_mutex_t lock;
	/** @cml: connection requests reported and not refused (accepted ones until their endpoint closes). */
	struct braid_cm_listener cml;
	bool listening;
	uint64_t drops;
	/** @auth: its authorization key (ep_attr's, else domain_attr's of its fi_info). */
	struct braid_auth auth;
};

static struct braid_pep *pep_of(struct fid *fid)
{
	return braid_container_of(fid, struct braid_pep, pep_fid.fid);
}

void braid_pep_hold(struct braid_connreq *cr)
{
	struct braid_pep *pep = cr->pep;

	if (pep)
		pthread_mutex_lock(&pep->lock);
	cr->held++;
	if (pep)
		pthread_mutex_unlock(&pep->lock);
}

void braid_pep_forget(struct braid_connreq *cr)
{
	struct braid_pep *pep = cr->pep;
	bool last;

	if (pep) {
		pthread_mutex_lock(&pep->lock);
		/* accepted: the listener is done with it (an unanswered one stays its) */
		if (cr->req.accepted) {
			braid_cm_listener_remove(&cr->req);
			cr->pep = NULL;
		}
		last = --cr->held == 0 && !cr->pep;
		pthread_mutex_unlock(&pep->lock);
	} else {
		last = --cr->held == 0;
	}
	if (last)
		free(cr);
}

/* @cr was refused (pep->lock held): the listener lets go of it, freed unless an endpoint holds it */
static void pep_refused_locked(struct braid_connreq *cr)
{
	cr->pep = NULL;
	cr->refused = true;
	if (!cr->held)
		free(cr);
}

/* A REQ: report FI_CONNREQ with an fi_info the application opens its endpoint with. */
static void pep_req(struct braid_pep *pep, const struct braid_cm_view *v,
		    const struct sockaddr_in *from)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + BRAID_CM_DATA_MAX];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	uint32_t ip = ntohl(from->sin_addr.s_addr);
	uint16_t port = ntohs(from->sin_port);
	struct braid_connreq *cr;
	struct sockaddr_in *src, *dst;
	struct braid_cm_view rej;
	struct fi_info *info;

	if (braid_cm_listener_find(&pep->cml, v, ip, port))
		return;	/* a resent REQ: the first is being answered */
	cr = calloc(1, sizeof(*cr));
	info = fi_dupinfo(pep->info);
	src = malloc(sizeof(*src));
	dst = malloc(sizeof(*dst));
	if (!cr || !info || !src || !dst)
		goto busy;
	/* the accepting endpoint gets a socket of its own on the listener's IP */
	cr->local = pep->wire->name;
	*src = pep->wire->name;
	src->sin_port = 0;
	*dst = *from;
	free(info->src_addr);
	free(info->dest_addr);
	info->src_addr = src;
	info->src_addrlen = sizeof(*src);
	info->dest_addr = dst;
	info->dest_addrlen = sizeof(*dst);
	src = dst = NULL;
	cr->fid.fclass = FI_CLASS_CONNREQ;
	cr->pep = pep;
	cr->peer = *from;
	info->handle = &cr->fid;
	memset(e, 0, sizeof(*e));
	e->fid = &pep->pep_fid.fid;
	e->info = info;
	memcpy(e->data, v->pdata, v->pdata_len);
	braid_cm_listener_add(&pep->cml, &cr->req, v, ip, port);
	if (braid_eq_report(pep->eq, FI_CONNREQ, e, sizeof(*e) + v->pdata_len, 0, false)) {
		braid_cm_listener_remove(&cr->req);
		goto busy;
	}
	return;
busy:
	/* no room to report it: refuse, the active side hears at once */
	braid_cm_listener_busy(v, &rej);
	braid_msg_cm_send(pep->wire, &pep->auth, from, &rej);
	fi_freeinfo(info);
	free(cr);
	free(src);
	free(dst);
}

static void pep_cm_progress(struct braid_cm_obj *obj)
{
	struct braid_pep *pep = braid_container_of(obj, struct braid_pep, cm);
	uint8_t buf[PEP_CM_BUF];
	struct iovec iov = { buf, sizeof(buf) };
	struct braid_pkt pkt = { .iov = &iov, .iovcnt = 1 };
	int guard;

	pthread_mutex_lock(&pep->lock);
	for (guard = 0; guard < 64; guard++) {
		struct braid_cm_view v;
		const uint8_t *cm;
		size_t len;

		if (pep->wire->ops->rx_burst(pep->wire, &pkt, 1) != 1)
			break;
		if (braid_msg_cm_open(&pep->auth, &pkt, &cm, &len) || braid_cm_decode(cm, len, &v) ||
		    v.kind != BRAID_CM_REQ || !pep->listening) {
			pep->drops++;
			continue;
		}
		pep_req(pep, &v, &pkt.addr);
	}
	pthread_mutex_unlock(&pep->lock);
}

static int pep_close(struct fid *fid)
{
	struct braid_pep *pep = pep_of(fid);
	struct braid_cm_req *r;

	if (pep->eq) {
		braid_eq_del_cm(pep->eq, &pep->cm);
		atomic_fetch_sub(&pep->eq->ref, 1);
	}
	pthread_mutex_lock(&pep->lock);
	while ((r = braid_cm_listener_first(&pep->cml))) {
		struct braid_connreq *cr = braid_container_of(r, struct braid_connreq, req);
		struct braid_cm_view rej;

		/* requests not yet answered are refused; accepted ones live on */
		if (braid_cm_listener_reject(r, FI_ECONNREFUSED, NULL, 0, &rej)) {
			braid_cm_listener_remove(r);
			cr->pep = NULL;	/* its endpoint frees it */
			continue;
		}
		braid_msg_cm_send(pep->wire, &pep->auth, &cr->peer, &rej);
		pep_refused_locked(cr);
	}
	pthread_mutex_unlock(&pep->lock);
	pep->wire->ops->close(pep->wire);
	pthread_mutex_destroy(&pep->lock);
	fi_freeinfo(pep->info);
	atomic_fetch_sub(&pep->fabric->ref, 1);
	free(pep);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct braid_pep *pep = pep_of(fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (pep->eq)
		return -FI_EINVAL;
	pep->eq = braid_container_of(bfid, struct braid_eq, eq_fid.fid);
	atomic_fetch_add(&pep->eq->ref, 1);
	braid_eq_add_cm(pep->eq, &pep->cm);
	return 0;
}

static int pep_listen(struct fid_pep *pep_fid)
{
	struct braid_pep *pep = pep_of(&pep_fid->fid);

	if (!pep->eq)
		return -FI_ENOEQ;
	pthread_mutex_lock(&pep->lock);
	pep->listening = true;
	pthread_mutex_unlock(&pep->lock);
	BRAID_INFO(FI_LOG_EP_CTRL, "listening on %s:%u\n", inet_ntoa(pep->wire->name.sin_addr),
		   ntohs(pep->wire->name.sin_port));
	return 0;
}

static int pep_reject(struct fid_pep *pep_fid, fid_t handle, const void *param, size_t len)
{
	struct braid_pep *pep = pep_of(&pep_fid->fid);
	struct braid_connreq *cr;
	struct braid_cm_view rej;
	int ret;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ || len > BRAID_CM_DATA_MAX ||
	    (len && !param))
		return -FI_EINVAL;
	cr = braid_container_of(handle, struct braid_connreq, fid);
	if (cr->pep != pep)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
	ret = braid_cm_listener_reject(&cr->req, FI_ECONNREFUSED, param, len, &rej);
	if (!ret) {
		braid_msg_cm_send(pep->wire, &pep->auth, &cr->peer, &rej);
		pep_refused_locked(cr);
	}
	pthread_mutex_unlock(&pep->lock);
	return ret;
}

static struct fi_ops pep_fi_ops;

/*
 * braid_pep_give_wire() - an active endpoint opened with info->handle set to
 * this passive endpoint takes over its address (fi_endpoint(3)): it gets the
 * socket; the passive endpoint, which only waits to be closed, gets a fresh
 * one on the same IP. A listening one keeps its own (-FI_EBUSY).
 */
int braid_pep_give_wire(struct fid *handle, struct braid_wire **wire)
{
	struct braid_pep *pep;
	struct braid_wire_params params = { .paths = 1, .sockbuf = braid_cfg.sockbuf };
	struct braid_wire *fresh;
	int ret;

	if (handle->fclass != FI_CLASS_PEP || handle->ops != &pep_fi_ops)
		return -FI_EINVAL;
	pep = pep_of(handle);
	pthread_mutex_lock(&pep->lock);
	if (pep->listening || pep->eq) {
		pthread_mutex_unlock(&pep->lock);
		return -FI_EBUSY;
	}
	params.addr = pep->wire->name;
	params.addr.sin_port = 0;
	ret = pep->wire_ops->open(&params, &fresh);
	if (!ret) {
		*wire = pep->wire;
		pep->wire = fresh;
		pep->cm.fd = fresh->ops->wait_fd(fresh);
	}
	pthread_mutex_unlock(&pep->lock);
	return ret;
}

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return braid_name_copy(&pep_of(fid)->wire->name, addr, addrlen);
}

static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct braid_pep *pep = pep_of(fid);
	struct braid_wire_params params = { .paths = 1, .sockbuf = braid_cfg.sockbuf };
	struct braid_wire *wire;
	int ret;

	if (!addr || addrlen != sizeof(struct sockaddr_in) ||
	    ((struct sockaddr *)addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	if (pep->listening || pep->eq)
		return -FI_EOPBADSTATE;
	memcpy(&params.addr, addr, sizeof(params.addr));
	ret = pep->wire_ops->open(&params, &wire);
	if (ret)
		return ret;
	pep->wire->ops->close(pep->wire);
	pep->wire = wire;
	pep->cm.fd = wire->ops->wait_fd(wire);
	return 0;
}

static int pep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || !optval || !optlen)
		return -FI_EINVAL;
	if (optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*(size_t *)optval = BRAID_CM_DATA_MAX;
	*optlen = sizeof(size_t);
	return 0;
}

static int pep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static int pep_connect(struct fid_ep *ep, const void *addr, const void *param, size_t len)
{
	return -FI_ENOSYS;
}

static int pep_accept(struct fid_ep *ep, const void *param, size_t len)
{
	return -FI_ENOSYS;
}

static int pep_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int pep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int pep_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		    void *context)
{
	return -FI_ENOSYS;
}

static ssize_t pep_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

static int pep_ctx(struct fid_ep *sep, int index, void *attr, struct fid_ep **ep, void *context)
{
	return -FI_ENOSYS;
}

static int pep_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		      struct fid_ep **ep, void *context)
{
	return pep_ctx(sep, index, attr, ep, context);
}

static int pep_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		      struct fid_ep **ep, void *context)
{
	return pep_ctx(sep, index, attr, ep, context);
}

static ssize_t pep_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static struct fi_ops pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pep_close,
	.bind = pep_bind,
	.control = braid_nosys_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_ep pep_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = pep_cancel,
	.getopt = pep_getopt,
	.setopt = pep_setopt,
	.tx_ctx = pep_tx_ctx,
	.rx_ctx = pep_rx_ctx,
	.rx_size_left = pep_size_left,
	.tx_size_left = pep_size_left,
};

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pep_setname,
	.getname = pep_getname,
	.getpeer = pep_getpeer,
	.connect = pep_connect,
	.listen = pep_listen,
	.accept = pep_accept,
	.reject = pep_reject,
	.shutdown = pep_shutdown,
	.join = pep_join,
};

int braid_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep_out,
		   void *context)
{
	struct braid_wire_params params = { .paths = 1, .sockbuf = braid_cfg.sockbuf };
	struct braid_pep *pep;
	int ret;

	if (!fabric || !info || !pep_out || !info->ep_attr || info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	ret = braid_check_info(info);
	if (ret)
		return ret;
	params.addr.sin_family = AF_INET;
	if (info->src_addr) {
		if (info->src_addrlen != sizeof(params.addr) ||
		    ((struct sockaddr *)info->src_addr)->sa_family != AF_INET)
			return -FI_EINVAL;
		memcpy(&params.addr, info->src_addr, sizeof(params.addr));
	}
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	/* no domain yet: the endpoint's key, else the default one its fi_info names */
	ret = info->ep_attr->auth_key_size ?
	      braid_auth_attr(&pep->auth, info->ep_attr->auth_key, info->ep_attr->auth_key_size) :
	      braid_auth_attr(&pep->auth, info->domain_attr ? info->domain_attr->auth_key : NULL,
			      info->domain_attr ? info->domain_attr->auth_key_size : 0);
	if (ret) {
		free(pep);
		return ret;
	}
	pep->info = fi_dupinfo(info);
	pep->wire_ops = braid_wire_find(braid_cfg.wire);
	if (!pep->info || !pep->wire_ops) {
		ret = pep->info ? -FI_ENODEV : -FI_ENOMEM;
		goto err;
	}
	ret = pep->wire_ops->open(&params, &pep->wire);
	if (ret)
		goto err;
	pep->fabric = braid_container_of(fabric, struct braid_fabric, fabric_fid);
	pthread_mutex_init(&pep->lock, NULL);
	braid_cm_listener_construct(&pep->cml);
	braid_dlist_init(&pep->cm.node);
	pep->cm.progress = pep_cm_progress;
	pep->cm.listener = true;
	pep->cm.fd = pep->wire->ops->wait_fd(pep->wire);
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &pep_fi_ops;
	pep->pep_fid.ops = &pep_ep_ops;
	pep->pep_fid.cm = &pep_cm_ops;
	atomic_fetch_add(&pep->fabric->ref, 1);
	*pep_out = &pep->pep_fid;
	return 0;
err:
	fi_freeinfo(pep->info);
	free(pep);
	return ret;
}
