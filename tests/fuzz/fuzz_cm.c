/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_cm.c: libFuzzer target for the connection handshake: the CM decoder
 * (braid_cm_decode, core/braid_hdr.c) and the CM engine (core/braid_cm.c).
 * Every input is a config byte and a sequence of packets (fuzz_common.h),
 * each decoded and handed, as the provider does (providers/braid_pep.c,
 * braid_msg.c), to a listener, to an active connection that sent a REQ, or
 * to a passive one that accepts the listener's requests; ctl bits add the
 * application's and the QP's part (accept, reject, shutdown, QP errors,
 * time). Nothing may crash, read or write out of bounds, leak or hit UB;
 * every message the engine sends must decode, every event's private data
 * be readable, and every state be a known one.
 */
#include <stdbool.h>
#include <rdma/fi_errno.h>

#include "braid_cm.h"
#include "fuzz_common.h"

#define PEER_IP		0x0a000002u
#define NREQS		4	/* requests the listener keeps; more are refused busy */
#define STEP_NS		(1000ULL * 1000)
#define MSG_MAX		(sizeof(struct braid_cm_hdr) + BRAID_CM_DATA_MAX)

struct cm_fuzz {
	struct braid_cm_listener l;
	struct braid_cm_conn c[2];	/* 0 active, 1 passive */
	int nreqs;
	bool qp_fail;
	uint8_t *msg;
	uint64_t now;
};

static const struct braid_cm_qp local_qp[2] = {
	{ .qpn = 0x000a11, .psn = 0x123456, .mtu = 4096, .rc_port = 4791 },
	{ .qpn = 0x000b22, .psn = 0x654321, .mtu = 1024, .rc_port = 4792 },
};
static const uint8_t pdata[BRAID_CM_DATA_MAX] = "braid";

/* a message as the provider sends it (braid_cm_write and the private data): it must decode */
static void cm_send(struct cm_fuzz *f, const struct braid_cm_view *v)
{
	struct braid_cm_view back;
	size_t len = sizeof(struct braid_cm_hdr) + v->pdata_len;

	FUZZ_CHECK(v->pdata_len <= BRAID_CM_DATA_MAX);
	braid_cm_write((struct braid_cm_hdr *)f->msg, 7471, v);
	if (v->pdata_len)
		memcpy(f->msg + sizeof(struct braid_cm_hdr), v->pdata, v->pdata_len);
	FUZZ_CHECK(braid_cm_decode(f->msg, len, &back) == 0 && back.kind == v->kind);
}

/* the provider's part after every call: events (the QP created or not), then messages */
static void cm_pump(struct cm_fuzz *f, struct braid_cm_conn *c)
{
	struct braid_cm_event ev;
	struct braid_cm_view out;

	while (braid_cm_poll(c, &ev, 1) == 1) {
		FUZZ_CHECK(ev.type >= BRAID_CM_EV_QP_CREATE && ev.type <= BRAID_CM_EV_SHUTDOWN);
		FUZZ_CHECK(ev.pdata_len <= BRAID_CM_DATA_MAX);
		fuzz_read(ev.pdata, ev.pdata_len);
		if (ev.type == BRAID_CM_EV_QP_CREATE)
			braid_cm_qp_created(c, f->qp_fail ? -FI_ENOMEM : 0, f->now);
	}
	while (braid_cm_output(c, &out, 1) == 1)
		cm_send(f, &out);
	FUZZ_CHECK(c->state < BRAID_CM_NSTATES && braid_cm_state_str(c->state)[0] != '?');
	(void)braid_cm_post_check(c);
}

/* providers/braid_pep.c: a REQ repeated is dropped, a new one kept (or refused when full) */
static void cm_listen(struct cm_fuzz *f, const struct braid_cm_view *v, uint16_t port)
{
	struct braid_cm_req *r;
	struct braid_cm_view rej;

	if (v->kind != BRAID_CM_REQ || braid_cm_listener_find(&f->l, v, PEER_IP, port))
		return;
	if (f->nreqs == NREQS) {
		braid_cm_listener_busy(v, &rej);
		cm_send(f, &rej);
		return;
	}
	r = fuzz_alloc(sizeof(*r));
	braid_cm_listener_add(&f->l, r, v, PEER_IP, port);
	f->nreqs++;
}

/* the oldest request kept that is not accepted */
static struct braid_cm_req *cm_pending(struct cm_fuzz *f)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&f->l.reqs, it) {
		struct braid_cm_req *r = braid_container_of(it, struct braid_cm_req, node);

		if (!r->accepted && r != f->c[1].req)
			return r;
	}
	return NULL;
}

static void cm_forget(struct cm_fuzz *f, struct braid_cm_req *r)
{
	braid_cm_listener_remove(r);
	free(r);
	f->nreqs--;
}

/*
 * A connection closed, refused or failed is made anew (the application's
 * next endpoint): the active side connects again, the passive side's
 * request goes with its endpoint and it may accept another.
 */
static void cm_renew(struct cm_fuzz *f, struct braid_cm_conn *c)
{
	const struct braid_cm_config cfg = c->cfg;

	if (c->state != BRAID_CM_CLOSED && c->state != BRAID_CM_ERROR && c->state != BRAID_CM_IDLE)
		return;
	if (c->req)
		cm_forget(f, c->req);
	braid_cm_construct(c, &cfg);
	if (c == &f->c[0])
		braid_cm_connect(c, FCM_CONN_ID + 1, &local_qp[0], pdata, 16, f->now);
}

static void cm_act(struct cm_fuzz *f, int act, struct braid_cm_conn *c)
{
	struct braid_cm_req *r = cm_pending(f);
	struct braid_cm_view rej;

	switch (act) {
	case FCM_ACCEPT:
		if (r)
			braid_cm_accept(&f->c[1], r, &local_qp[1], pdata, 8, f->now);
		break;
	case FCM_REJECT:
		if (r && braid_cm_listener_reject(r, FI_ECONNREFUSED, pdata, 4, &rej) == 0) {
			cm_send(f, &rej);
			cm_forget(f, r);	/* unlinked already: a second remove is harmless */
		}
		break;
	case FCM_SHUTDOWN:
		braid_cm_shutdown(c, f->now);
		break;
	case FCM_ESTABLISHED:
		braid_cm_comm_established(c);
		break;
	case FCM_QP_ERROR:
		braid_cm_qp_error(c);
		break;
	case FCM_FORGET:
		/* its FI_CONNREQ could not be reported */
		if (r)
			cm_forget(f, r);
		break;
	case FCM_RENEW:
		cm_renew(f, c);
		break;
	default:
		break;
	}
}

static void cm_packet(void *state, uint8_t ctl, uint8_t *pkt, size_t len)
{
	struct cm_fuzz *f = state;
	struct braid_cm_view v;
	int dst = ctl & FCM_CTL_DST;
	uint64_t a, b;

	if (ctl & FCM_CTL_QP_FAIL)
		f->qp_fail = !f->qp_fail;
	if (braid_cm_decode(pkt, len, &v) == 0) {
		FUZZ_CHECK(v.pdata_len <= BRAID_CM_DATA_MAX && v.pdata + v.pdata_len == pkt + len);
		if (dst == 0) {
			cm_listen(f, &v, v.src_port);
		} else if (dst < 3) {
			braid_cm_input(&f->c[dst - 1], &v, f->now);
			cm_pump(f, &f->c[dst - 1]);
		}
	}
	cm_act(f, (ctl & FCM_CTL_ACT) >> 2, &f->c[!!(ctl & FCM_CTL_PASSIVE)]);
	a = braid_cm_next_deadline(&f->c[0]);
	b = braid_cm_next_deadline(&f->c[1]);
	f->now = fuzz_time(f->now, ctl & FCM_CTL_JUMP, a < b ? a : b, STEP_NS);
	for (int i = 0; i < 2; i++) {
		cm_pump(f, &f->c[i]);
		if (braid_cm_next_deadline(&f->c[i]) <= f->now)
			braid_cm_timer(&f->c[i], f->now);
		cm_pump(f, &f->c[i]);
	}
}

/* the active side has sent its REQ; the passive side and the listener wait */
static struct cm_fuzz *cm_open(uint8_t conf)
{
	/* on the heap: the sanitizer sees the engine's rings and buffers overflow */
	struct cm_fuzz *f = fuzz_alloc(sizeof(*f));
	struct braid_cm_config cfg;

	f->msg = fuzz_alloc(MSG_MAX);
	f->now = 1000ULL * 1000 * 1000;
	braid_cm_config_default(&cfg);
	if (conf & FCM_CFG_NO_DREQ_TRY)
		cfg.dreq_tries = 0;
	braid_cm_listener_construct(&f->l);
	braid_cm_construct(&f->c[0], &cfg);
	braid_cm_construct(&f->c[1], &cfg);
	braid_cm_connect(&f->c[0], FCM_CONN_ID, &local_qp[0], pdata, conf & FCM_CFG_PDATA ? 40 : 0,
			 f->now);
	cm_pump(f, &f->c[0]);
	return f;
}

/* the endpoints close: their requests go */
static void cm_close(struct cm_fuzz *f)
{
	struct braid_cm_req *r;

	while ((r = braid_cm_listener_first(&f->l)))
		cm_forget(f, r);
	free(f->msg);
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_fuzz *f;

	if (!size)
		return 0;
	f = cm_open(data[0]);
	fuzz_records(data, size, cm_packet, f);
	cm_close(f);
	return 0;
}
