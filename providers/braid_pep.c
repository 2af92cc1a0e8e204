/* braid_pep.c: passive endpoints (fi_passive_ep, fi_listen, fi_reject): the listening side of the MSG handshake (protocol.md §6). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"

#define PEP_CM_BUF	(sizeof(struct braid_cm_hdr) + BRAID_CM_DATA_MAX)

struct braid_pep {
	struct fid_pep pep_fid;
	struct braid_fabric *fabric;
	struct fi_info *info;
	struct braid_eq *eq;
	const struct braid_wire_ops *wire_ops;
	/** @wire: the listening socket (bound at creation, so fi_getname works before fi_listen). */
	struct braid_wire *wire;
	struct braid_cm_obj cm;
	/** @lock: guards @crs and @listening. */
	pthread_mutex_t lock;
	/** @crs: connection requests reported and not refused (accepted ones until their endpoint closes). */
	struct braid_dlist crs;
	bool listening;
	uint64_t drops;
};

static struct braid_pep *pep_of(struct fid *fid)
{
	return braid_container_of(fid, struct braid_pep, pep_fid.fid);
}

static void cm_reply(struct braid_wire *wire, const struct sockaddr_in *to, uint8_t kind,
		     uint32_t status, uint64_t conn_id, const void *pdata, size_t len)
{
	struct braid_cm_hdr h;
	struct braid_cm_view v = { .kind = kind, .status = status, .conn_id = conn_id,
				   .pdata_len = len };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)pdata, len } };
	struct braid_pkt pkt = { .iov = iov, .iovcnt = len ? 2 : 1, .path = 0, .addr = *to };

	braid_cm_write(&h, ntohs(wire->name.sin_port), &v);
	(void)wire->ops->tx_burst(wire, &pkt, 1);
}

void braid_pep_forget(struct braid_connreq *cr)
{
	struct braid_pep *pep = cr->pep;

	if (pep) {
		pthread_mutex_lock(&pep->lock);
		braid_dlist_remove(&cr->node);
		pthread_mutex_unlock(&pep->lock);
	}
	free(cr);
}

static struct braid_connreq *cr_find(struct braid_pep *pep, const struct sockaddr_in *from,
				     uint64_t conn_id)
{
	struct braid_dlist *it;

	for (it = pep->crs.next; it != &pep->crs; it = it->next) {
		struct braid_connreq *cr = braid_container_of(it, struct braid_connreq, node);

		if (cr->req.conn_id == conn_id && cr->peer.sin_addr.s_addr == from->sin_addr.s_addr &&
		    cr->peer.sin_port == from->sin_port)
			return cr;
	}
	return NULL;
}

/* A REQ: report FI_CONNREQ with an fi_info the application opens its endpoint with. */
static void pep_req(struct braid_pep *pep, const struct braid_cm_view *v,
		    const struct sockaddr_in *from)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + BRAID_CM_DATA_MAX];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct braid_connreq *cr;
	struct sockaddr_in *src, *dst;
	struct fi_info *info;

	if (cr_find(pep, from, v->conn_id))
		return;	/* a resent REQ: the first is being answered */
	cr = calloc(1, sizeof(*cr));
	info = fi_dupinfo(pep->info);
	src = malloc(sizeof(*src));
	dst = malloc(sizeof(*dst));
	if (!cr || !info || !src || !dst)
		goto busy;
	/* the accepting endpoint gets a socket of its own on the listener's IP */
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
	cr->req = *v;
	cr->req.pdata = NULL;
	info->handle = &cr->fid;
	memset(e, 0, sizeof(*e));
	e->fid = &pep->pep_fid.fid;
	e->info = info;
	memcpy(e->data, v->pdata, v->pdata_len);
	braid_dlist_insert_tail(&cr->node, &pep->crs);
	if (braid_eq_report(pep->eq, FI_CONNREQ, e, sizeof(*e) + v->pdata_len, 0, false)) {
		braid_dlist_remove(&cr->node);
		goto busy;
	}
	return;
busy:
	/* no room to report it: refuse, the active side hears at once */
	cm_reply(pep->wire, from, BRAID_CM_REJ, FI_EBUSY, v->conn_id, NULL, 0);
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

		if (pep->wire->ops->rx_burst(pep->wire, &pkt, 1) != 1)
			break;
		if ((pkt.flags & BRAID_PKT_TRUNC) || braid_cm_decode(buf, pkt.len, &v) ||
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
	struct braid_dlist *it;

	if (pep->eq) {
		braid_eq_del_cm(pep->eq, &pep->cm);
		atomic_fetch_sub(&pep->eq->ref, 1);
	}
	pthread_mutex_lock(&pep->lock);
	while ((it = braid_dlist_pop_head(&pep->crs))) {
		struct braid_connreq *cr = braid_container_of(it, struct braid_connreq, node);

		braid_dlist_init(&cr->node);
		if (cr->ep) {
			cr->pep = NULL;	/* its endpoint frees it */
		} else {
			cm_reply(pep->wire, &cr->peer, BRAID_CM_REJ, FI_ECONNREFUSED,
				 cr->req.conn_id, NULL, 0);
			free(cr);
		}
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

	if (!handle || handle->fclass != FI_CLASS_CONNREQ || len > BRAID_CM_DATA_MAX ||
	    (len && !param))
		return -FI_EINVAL;
	cr = braid_container_of(handle, struct braid_connreq, fid);
	if (cr->pep != pep || cr->ep)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
	cm_reply(pep->wire, &cr->peer, BRAID_CM_REJ, FI_ECONNREFUSED, cr->req.conn_id, param, len);
	braid_dlist_remove(&cr->node);
	pthread_mutex_unlock(&pep->lock);
	free(cr);
	return 0;
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
	braid_dlist_init(&pep->crs);
	braid_dlist_init(&pep->cm.node);
	pep->cm.progress = pep_cm_progress;
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
