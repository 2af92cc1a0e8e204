/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * make_seeds.c: writes the fuzz targets' seed corpus: well-formed inputs
 * (fuzz_common.h's format) that take each engine through its usual
 * exchanges, so the fuzzer starts deep: RD messages, ACKs, bundles, RMA and
 * placement; RoCEv2 SEND, WRITE, READ and ACK with good ICRCs; the CM
 * handshake on both sides; one packet of each type for the decoders; keyed
 * datagrams (job-tag and mac modes) and plain ones to key; a local
 * sender's ring records (datagrams, a wrap mark, lent ones, nonsense).
 * Usage: make_seeds DIR (writes DIR/<target>/<name>; tests/fuzz/corpus is the one kept).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/stat.h>
#include <rdma/fi_errno.h>
#include <sodium.h>

#include "braid_auth.h"
#include "braid_atomic.h"
#include "braid_hdr.h"
#include "braid_roce.h"
#include "fuzz_common.h"

#define PEER_EPOCH	9

static const char *out_dir;
static uint8_t pkt[9000];

static FILE *seed(const char *target, const char *name, uint8_t config, bool framed)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		goto fail;
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	f = fopen(path, "wb");
	if (!f)
		goto fail;
	if (framed)
		fputc(config, f);
	return f;
fail:
	perror(path);
	exit(1);
}

static void done(FILE *f)
{
	if (fclose(f)) {
		perror("fclose");
		exit(1);
	}
}

/* ---- RD: the peer (FRD_PEER_IP:FRD_PEER_PORT, epoch PEER_EPOCH) talks to the target ---- */

static struct braid_rd_data_view rd_view(uint32_t psn, uint32_t msg_id, uint32_t off,
					 uint32_t msg_len)
{
	return (struct braid_rd_data_view){
		.src_port = FRD_PEER_PORT, .src_epoch = PEER_EPOCH, .dst_epoch = FRD_EPOCH,
		.psn = psn, .msg_id = msg_id, .offset = off, .msg_len = msg_len,
		.tx_time = 100 + psn,
	};
}

/* an RD_DATA or RD_RMA packet of @v with @plen bytes of payload */
static size_t rd_data(uint8_t *buf, const struct braid_rd_data_view *v, size_t plen)
{
	size_t hlen = braid_rd_data_write(buf, v);

	for (size_t i = 0; i < plen; i++)
		buf[hlen + i] = (uint8_t)(v->offset + i);
	return hlen + plen;
}

/* an RD_ACK of the target's packets before @cum, and of those after it in @sack's bits */
static size_t rd_ack(uint8_t *buf, uint32_t cum, uint32_t sack)
{
	struct braid_rd_ack_view v = {
		.src_port = FRD_PEER_PORT, .src_epoch = PEER_EPOCH, .dst_epoch = FRD_EPOCH,
		.cum_psn = cum, .echo_psn = cum - 1, .echo_time = 1000, .rwnd = 64,
	};

	memcpy(v.sack, &sack, sizeof(sack));
	braid_rd_ack_write((struct braid_rd_ack_hdr *)buf, &v);
	return sizeof(struct braid_rd_ack_hdr);
}

static size_t rd_cts(uint8_t *buf, uint32_t msg_id)
{
	braid_rd_cts_write((struct braid_rd_cts_hdr *)buf, FRD_PEER_PORT, PEER_EPOCH, FRD_EPOCH,
			   msg_id);
	return sizeof(struct braid_rd_cts_hdr);
}

/* a bundle of the @n packets at @recs (lengths @lens) */
static size_t rd_bundle(uint8_t *buf, const uint8_t *const *recs, const size_t *lens, int n)
{
	size_t at = BRAID_RD_BUNDLE_HDR;

	braid_rd_bundle_hdr_write(buf, FRD_PEER_PORT);
	for (int i = 0; i < n; i++) {
		buf[at] = (uint8_t)(lens[i] >> 8);
		buf[at + 1] = (uint8_t)lens[i];
		memcpy(buf + at + BRAID_RD_BUNDLE_REC, recs[i], lens[i]);
		at += BRAID_RD_BUNDLE_REC + lens[i];
	}
	return at;
}

#define PEER		1			/* ctl: from FRD_PEER_IP */
#define ROUTE(n)	((n) << 5 & FRD_CTL_ROUTE)	/* ctl: by route n */

/*
 * The target's endpoint starts with 8 packets to the peer: a 3000-byte
 * message (PSNs 0-2, msg 0), the tagged inject with delivery complete
 * (3, msg 1), the READ request (4, msg 2), the WRITE (5-6, msg 3) and the
 * fetching add (7, msg 4).
 */
static void rd_seeds(void)
{
	const char *t = "fuzz_rd_input";
	struct braid_rd_data_view v;
	uint8_t a[200], b[200], c[200];
	FILE *f;

	/* a message in two packets, the second received in place; ACKs, one with SACK bits */
	f = seed(t, "data_placed", 0, true);
	v = rd_view(0, 0, 0, 2000);
	fuzz_put_rec(f, PEER, pkt, rd_data(pkt, &v, 1000));
	v = rd_view(1, 0, 1000, 2000);
	fuzz_put_rec(f, PEER | FRD_CTL_PLACE, pkt, rd_data(pkt, &v, 1000));
	fuzz_put_rec(f, PEER, pkt, rd_ack(pkt, 3, 0x6));
	fuzz_put_rec(f, PEER | FRD_CTL_APP, pkt, rd_ack(pkt, 8, 0));
	done(f);

	/* a bundle: a tagged message with CQ data, a second message, and an ACK */
	f = seed(t, "bundle", 0, true);
	{
		const uint8_t *recs[3] = { a, b, c };
		size_t lens[3];

		v = rd_view(0, 0, 0, 10);
		v.flags = BRAID_RD_F_TAGGED | BRAID_RD_F_CQ_DATA;
		v.tag = 0x55;
		v.cq_data = 0x66;
		lens[0] = rd_data(a, &v, 10);
		v = rd_view(1, 1, 0, 20);
		lens[1] = rd_data(b, &v, 20);
		lens[2] = rd_ack(c, 8, 0);
		fuzz_put_rec(f, PEER, pkt, rd_bundle(pkt, recs, lens, 3));
	}
	done(f);

	/* the ACK (the peer's epoch known), a WRITE to the target's region, in place */
	f = seed(t, "rma_write", 0, true);
	fuzz_put_rec(f, PEER, pkt, rd_ack(pkt, 8, 0));
	for (uint32_t i = 0; i < 2; i++) {
		v = rd_view(i, 0, i * 1420, 2000);
		v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_WRITE, .rkey = FRD_REGION_KEY,
						   .raddr = FRD_REGION_BASE + 100 };
		v.flags = BRAID_RD_F_CQ_DATA;
		v.cq_data = 0x99;
		fuzz_put_rec(f, PEER | FRD_CTL_PLACE, pkt, rd_data(pkt, &v, i ? 580 : 1420));
	}
	done(f);

	/* every answer the target waits for: the READ's data (in place), the WRITE's, the add's,
	 * the DC send's */
	f = seed(t, "rma_resp", 0, true);
	fuzz_put_rec(f, PEER, pkt, rd_ack(pkt, 8, 0));
	for (uint32_t i = 0; i < 2; i++) {
		v = rd_view(i, 0, i * 1420, 2000);
		v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_RESP, .ref = 2 };
		fuzz_put_rec(f, PEER | FRD_CTL_PLACE, pkt, rd_data(pkt, &v, i ? 580 : 1420));
	}
	v = rd_view(2, 1, 0, 0);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_RESP, .ref = 3 };
	fuzz_put_rec(f, PEER, pkt, rd_data(pkt, &v, 0));
	v = rd_view(3, 2, 0, 8);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_RESP, .ref = 4 };
	fuzz_put_rec(f, PEER, pkt, rd_data(pkt, &v, 8));
	v = rd_view(4, 3, 0, 0);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_RESP, .ref = 1 };
	fuzz_put_rec(f, PEER | FRD_CTL_APP, pkt, rd_data(pkt, &v, 0));
	done(f);

	/* requests the target serves: a READ of its region, a fetching add, a compare-swap */
	f = seed(t, "rma_requests", 0, true);
	v = rd_view(0, 0, 0, 0);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_READ_REQ, .ref = 1600,
					   .rkey = FRD_REGION_KEY, .raddr = FRD_REGION_BASE };
	fuzz_put_rec(f, PEER, pkt, rd_data(pkt, &v, 0));
	v = rd_view(1, 1, 0, 8);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_FETCH_REQ, .aop = BRAID_AOP_SUM,
					   .dt = BRAID_ADT_UINT64, .ref = 1, .rkey = FRD_REGION_KEY,
					   .raddr = FRD_REGION_BASE + 64 };
	fuzz_put_rec(f, PEER, pkt, rd_data(pkt, &v, 8));
	v.psn = v.msg_id = 2;
	v.msg_len = 16;
	v.rma.aop = BRAID_AOP_CSWAP;
	fuzz_put_rec(f, PEER | FRD_CTL_JUMP, pkt, rd_data(pkt, &v, 16));
	fuzz_put_rec(f, PEER, pkt, rd_ack(pkt, 8, 0));
	done(f);

	/* rendezvous: the target's 3000-byte send waits for this CTS; the peer's own message */
	f = seed(t, "rendezvous", FRD_CFG_RDV, true);
	fuzz_put_rec(f, PEER, pkt, rd_cts(pkt, 0));
	v = rd_view(0, 0, 0, 2800);
	v.flags = BRAID_RD_F_RDV;
	fuzz_put_rec(f, PEER, pkt, rd_data(pkt, &v, 1400));
	v = rd_view(1, 0, 1400, 2800);
	fuzz_put_rec(f, PEER | FRD_CTL_PLACE, pkt, rd_data(pkt, &v, 1400));
	fuzz_put_rec(f, PEER | FRD_CTL_JUMP, pkt, rd_ack(pkt, 3, 0));
	done(f);

	/* more messages than receives and staging from a third endpoint, ECN marked; the app
	 * catches up */
	f = seed(t, "unexpected", FRD_CFG_FEW, true);
	for (uint32_t i = 0; i < 6; i++) {
		v = rd_view(i, i, 0, 300);
		v.src_port = 6000;
		v.dst_epoch = 0;
		v.flags = i & 1 ? BRAID_RD_F_TAGGED : 0;
		fuzz_put_rec(f, 2 | FRD_CTL_ECN | (i == 5 ? FRD_CTL_APP : 0), pkt,
			     rd_data(pkt, &v, 300));
	}
	done(f);

	/* tagged messages the receives do not take: peeked at, claimed, received, discarded */
	f = seed(t, "peek_claim", 0, true);
	for (uint32_t i = 0; i < 8; i++) {
		v = rd_view(i, i, 0, 100);
		v.flags = BRAID_RD_F_TAGGED;
		v.tag = 0x100 + i;
		fuzz_put_rec(f, PEER, pkt, rd_data(pkt, &v, 100));
	}
	for (int i = 0; i < 6; i++)
		fuzz_put_rec(f, FRD_CTL_APP, pkt, 0);
	done(f);

	/* the peer restarts (a later epoch): what was in flight to it fails */
	f = seed(t, "restart", FRD_CFG_NO_BUNDLE | FRD_CFG_WINDOW16, true);
	v = rd_view(0, 0, 0, 10);
	fuzz_put_rec(f, PEER | ROUTE(1), pkt, rd_data(pkt, &v, 10));
	v.src_epoch = PEER_EPOCH + 1;
	v.dst_epoch = 0;
	fuzz_put_rec(f, PEER | ROUTE(2), pkt, rd_data(pkt, &v, 10));
	done(f);

	/* the peer is silent: retransmission timeouts until the peer timeout fails the sends */
	f = seed(t, "timeout", FRD_CFG_NO_HEALTH, true);
	for (int i = 0; i < 40; i++)
		fuzz_put_rec(f, FRD_CTL_JUMP, pkt, 0);
	done(f);
}

/* ---- RC: the peer (FRC_QPN_B at FRC_IP_B:FRC_PORT_B) talks to the target's QP ---- */

static struct braid_roce_view rc_view(uint8_t op, uint32_t psn)
{
	return (struct braid_roce_view){ .opcode = op, .mig = true, .pkey = BRAID_ROCE_DEFAULT_PKEY,
					 .dest_qp = FRC_QPN_A, .psn = psn, .ack_req = true };
}

/* a WRITE_FIRST, WRITE_ONLY or READ_REQ: its RETH names @len bytes at @off of the region */
static struct braid_roce_view rc_reth(uint8_t op, uint32_t psn, uint64_t off, uint32_t len)
{
	struct braid_roce_view v = rc_view(op, psn);

	v.va = FRC_REGION_BASE + off;
	v.rkey = FRC_REGION_KEY;
	v.dma_len = len;
	return v;
}

/* a packet as the peer sends it: headers, @plen bytes, pad and a good ICRC (test_rc.c's craft()) */
static size_t rc_pkt(uint8_t *buf, struct braid_roce_view *v, size_t plen)
{
	static const struct braid_roce_addr from = FRC_RX_ADDR;
	size_t hl, pad = (4 - (plen & 3)) & 3;
	struct iovec iov;

	v->payload_len = plen;
	hl = braid_roce_write(buf, v);
	for (size_t i = 0; i < plen; i++)
		buf[hl + i] = (uint8_t)(i * 3);
	memset(buf + hl + plen, 0, pad);
	iov = (struct iovec){ buf + hl, plen };
	braid_roce_icrc_put(buf + hl + plen + pad,
			    braid_roce_icrc(&from, buf, hl, &iov, plen ? 1 : 0, plen, pad));
	return hl + plen + pad + BRAID_ROCE_ICRC_LEN;
}

/* an ACK (or NAK: @syndrome) of the target's requests up to @psn */
static size_t rc_ack(uint8_t *buf, uint32_t psn, uint8_t syndrome, uint32_t msn)
{
	struct braid_roce_view v = rc_view(BRAID_ROCE_ACK, psn);

	v.ack_req = false;
	v.syndrome = syndrome;
	v.msn = msn;
	return rc_pkt(buf, &v, 0);
}

/*
 * The target's QP (MTU 256) starts with its requests at PSN 0x100: the
 * 600-byte SEND (0x100-0x102), the WRITE with immediate (0x103-0x104), the
 * 500-byte READ (0x105, its responses 0x105-0x106) and the inject SEND (0x107).
 */
static void rc_seeds(void)
{
	const char *t = "fuzz_rc";
	const uint8_t ok = BRAID_ROCE_AETH_ACK | BRAID_ROCE_AETH_CREDIT_INVALID;
	const uint8_t nak = BRAID_ROCE_AETH_NAK;
	struct braid_roce_view v;
	FILE *f;

	/* a SEND in three packets, one alone with immediate data; then the ACKs of the target's */
	f = seed(t, "send", 0, true);
	v = rc_view(BRAID_ROCE_SEND_FIRST, FRC_RQ_PSN);
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 256));
	v = rc_view(BRAID_ROCE_SEND_MIDDLE, FRC_RQ_PSN + 1);
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 256));
	v = rc_view(BRAID_ROCE_SEND_LAST, FRC_RQ_PSN + 2);
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 60));
	v = rc_view(BRAID_ROCE_SEND_ONLY_IMM, FRC_RQ_PSN + 3);
	v.imm = 0xabcd;
	fuzz_put_rec(f, FRC_CTL_APP, pkt, rc_pkt(pkt, &v, 50));
	fuzz_put_rec(f, 0, pkt, rc_ack(pkt, FRC_SQ_PSN + 4, ok, 2));
	done(f);

	/* WRITEs into the target's region: three packets ending with immediate data, one alone */
	f = seed(t, "write", 0, true);
	v = rc_reth(BRAID_ROCE_WRITE_FIRST, FRC_RQ_PSN, 8, 600);
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 256));
	v = rc_view(BRAID_ROCE_WRITE_MIDDLE, FRC_RQ_PSN + 1);
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 256));
	v = rc_view(BRAID_ROCE_WRITE_LAST_IMM, FRC_RQ_PSN + 2);
	v.imm = 7;
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 88));
	v = rc_reth(BRAID_ROCE_WRITE_ONLY, FRC_RQ_PSN + 3, 1000, 100);
	fuzz_put_rec(f, FRC_CTL_JUMP, pkt, rc_pkt(pkt, &v, 100));
	done(f);

	/* a READ of the target's region (its responses go out), then one out of range */
	f = seed(t, "read_req", FRC_CFG_MTU1024, true);
	v = rc_reth(BRAID_ROCE_READ_REQ, FRC_RQ_PSN, 16, 2000);
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 0));
	v = rc_reth(BRAID_ROCE_READ_REQ, FRC_RQ_PSN + 2, FRC_REGION_LEN, 8);
	fuzz_put_rec(f, FRC_CTL_JUMP, pkt, rc_pkt(pkt, &v, 0));
	done(f);

	/* the answers to the target's requests: ACKs, the READ's data, a final ACK */
	f = seed(t, "responses", 0, true);
	fuzz_put_rec(f, 0, pkt, rc_ack(pkt, FRC_SQ_PSN + 2, ok, 1));
	fuzz_put_rec(f, 0, pkt, rc_ack(pkt, FRC_SQ_PSN + 4, ok, 2));
	v = rc_view(BRAID_ROCE_READ_RESP_FIRST, FRC_SQ_PSN + 5);
	v.ack_req = false;
	v.syndrome = ok;
	v.msn = 2;
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 256));
	v = rc_view(BRAID_ROCE_READ_RESP_LAST, FRC_SQ_PSN + 6);
	v.ack_req = false;
	v.syndrome = ok;
	v.msn = 3;
	fuzz_put_rec(f, 0, pkt, rc_pkt(pkt, &v, 244));
	fuzz_put_rec(f, 0, pkt, rc_ack(pkt, FRC_SQ_PSN + 7, ok, 4));
	done(f);

	/* NAKs: a PSN sequence error (go back), RNR (wait), a remote access error (the QP fails);
	 * a new QP takes a SEND */
	f = seed(t, "naks", 0, true);
	fuzz_put_rec(f, 0, pkt, rc_ack(pkt, FRC_SQ_PSN + 1, nak | BRAID_ROCE_NAK_PSN_SEQ_ERR, 1));
	fuzz_put_rec(f, FRC_CTL_JUMP, pkt, rc_ack(pkt, FRC_SQ_PSN, BRAID_ROCE_AETH_RNR_NAK | 12,
						   0));
	fuzz_put_rec(f, FRC_CTL_JUMP, pkt,
		     rc_ack(pkt, FRC_SQ_PSN + 3, nak | BRAID_ROCE_NAK_REM_ACCESS_ERR, 1));
	v = rc_view(BRAID_ROCE_SEND_ONLY, FRC_RQ_PSN);
	fuzz_put_rec(f, FRC_CTL_RENEW, pkt, rc_pkt(pkt, &v, 20));	/* to a new QP */
	done(f);

	/* a SEND whose ICRC is wrong (dropped), then the same with the target fixing the ICRC */
	f = seed(t, "icrc", FRC_CFG_PSN_WRAP | FRC_CFG_SRQ, true);
	v = rc_view(BRAID_ROCE_SEND_ONLY, 0xfffffd);
	{
		size_t n = rc_pkt(pkt, &v, 40);

		pkt[n - 1] ^= 0xff;
		fuzz_put_rec(f, 0, pkt, n);
		fuzz_put_rec(f, FRC_CTL_ICRC, pkt, n);
	}
	v = rc_view(BRAID_ROCE_SEND_ONLY, 0xfffffe);
	fuzz_put_rec(f, FRC_CTL_FLUSH, pkt, rc_pkt(pkt, &v, 40));
	done(f);
}

/* ---- CM: packets from the peer to the listener, the active side, the passive side ---- */

static size_t cm_msg(uint8_t *buf, uint8_t kind, uint64_t conn_id, uint32_t status,
		     size_t pdata_len)
{
	struct braid_cm_view v = {
		.kind = kind, .status = status, .conn_id = conn_id, .qpn = 0x000c33, .psn = 0x111,
		.mtu = 1024, .rc_port = 4793, .pdata_len = pdata_len,
	};

	braid_cm_write((struct braid_cm_hdr *)buf, 50000, &v);
	memset(buf + sizeof(struct braid_cm_hdr), 'p', pdata_len);
	return sizeof(struct braid_cm_hdr) + pdata_len;
}

#define CM_ACT(a)	((a) << 2)
#define CM_PASSIVE_REQ	0x0fedcba987654321ULL

static void cm_seeds(void)
{
	const char *t = "fuzz_cm";
	FILE *f;

	/* active: the REP (the QP is created, RTU), a repeated REP (RTU again), the peer's DREQ */
	f = seed(t, "active_rep", FCM_CFG_PDATA, true);
	fuzz_put_rec(f, 1, pkt, cm_msg(pkt, BRAID_CM_REP, FCM_CONN_ID, 0, 8));
	fuzz_put_rec(f, 1, pkt, cm_msg(pkt, BRAID_CM_REP, FCM_CONN_ID, 0, 8));
	fuzz_put_rec(f, 1, pkt, cm_msg(pkt, BRAID_CM_DREQ, FCM_CONN_ID, 0, 0));
	done(f);

	/* active: refused, then connects anew and times out */
	f = seed(t, "active_rej", 0, true);
	fuzz_put_rec(f, 1 | CM_ACT(FCM_RENEW), pkt,
		     cm_msg(pkt, BRAID_CM_REJ, FCM_CONN_ID, FI_ECONNREFUSED, 4));
	for (int i = 0; i < 30; i++)
		fuzz_put_rec(f, 3 | FCM_CTL_JUMP, pkt, 0);
	done(f);

	/* passive: a REQ to the listener, accepted (REP), the RTU, our shutdown (DREQ), the DREP */
	f = seed(t, "passive", 0, true);
	fuzz_put_rec(f, 0 | CM_ACT(FCM_ACCEPT), pkt,
		     cm_msg(pkt, BRAID_CM_REQ, CM_PASSIVE_REQ, 0, 16));
	fuzz_put_rec(f, 2, pkt, cm_msg(pkt, BRAID_CM_RTU, CM_PASSIVE_REQ, 0, 0));
	fuzz_put_rec(f, 3 | CM_ACT(FCM_SHUTDOWN) | FCM_CTL_PASSIVE, pkt, 0);
	fuzz_put_rec(f, 2, pkt, cm_msg(pkt, BRAID_CM_DREP, CM_PASSIVE_REQ, 0, 0));
	done(f);

	/* the listener: REQs, a repeat, one rejected, one forgotten, more than it keeps (busy) */
	f = seed(t, "listener", 0, true);
	for (uint64_t i = 0; i < 6; i++)
		fuzz_put_rec(f, 0, pkt, cm_msg(pkt, BRAID_CM_REQ, CM_PASSIVE_REQ + i % 5, 0, 0));
	fuzz_put_rec(f, 3 | CM_ACT(FCM_REJECT), pkt, 0);
	fuzz_put_rec(f, 3 | CM_ACT(FCM_FORGET), pkt, 0);
	fuzz_put_rec(f, 0 | CM_ACT(FCM_ACCEPT) | FCM_CTL_QP_FAIL, pkt,
		     cm_msg(pkt, BRAID_CM_REQ, 1, 0, 0));
	done(f);

	/* QPs fail: the active side's at its creation (REJ back), the passive's once established */
	f = seed(t, "qp_errors", FCM_CFG_NO_DREQ_TRY, true);
	fuzz_put_rec(f, 1 | FCM_CTL_QP_FAIL, pkt, cm_msg(pkt, BRAID_CM_REP, FCM_CONN_ID, 0, 0));
	fuzz_put_rec(f, 0 | CM_ACT(FCM_ACCEPT) | FCM_CTL_QP_FAIL, pkt,
		     cm_msg(pkt, BRAID_CM_REQ, CM_PASSIVE_REQ, 0, 0));
	fuzz_put_rec(f, 3 | CM_ACT(FCM_ESTABLISHED) | FCM_CTL_PASSIVE, pkt, 0);
	fuzz_put_rec(f, 3 | CM_ACT(FCM_QP_ERROR) | FCM_CTL_PASSIVE | FCM_CTL_JUMP, pkt, 0);
	done(f);
}

/* ---- the decoders: one datagram each ---- */

static void dgram_seeds(void)
{
	const char *t = "fuzz_dgram";
	struct braid_rd_data_view v = rd_view(5, 2, 0, 100);
	uint8_t a[200], b[200];
	const uint8_t *recs[2] = { a, b };
	size_t lens[2];
	FILE *f;

	f = seed(t, "dgram_cq_data", 0, false);
	braid_dgram_hdr_write((struct braid_dgram_hdr *)pkt, 7000, 1, 0x1122334455667788ULL);
	fwrite(pkt, 1, sizeof(struct braid_dgram_hdr) + 12, f);
	done(f);

	f = seed(t, "rd_data", 0, false);
	fwrite(pkt, 1, rd_data(pkt, &v, 40), f);
	done(f);

	f = seed(t, "rd_rma", 0, false);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_WRITE, .rkey = 1, .raddr = 0x1000 };
	fwrite(pkt, 1, rd_data(pkt, &v, 40), f);
	done(f);

	f = seed(t, "rd_ack", 0, false);
	fwrite(pkt, 1, rd_ack(pkt, 20, 0x5), f);
	done(f);

	f = seed(t, "rd_cts", 0, false);
	fwrite(pkt, 1, rd_cts(pkt, 3), f);
	done(f);

	f = seed(t, "bundle", 0, false);
	lens[0] = rd_ack(a, 20, 0);
	lens[1] = rd_cts(b, 3);
	fwrite(pkt, 1, rd_bundle(pkt, recs, lens, 2), f);
	done(f);

	f = seed(t, "cm_req", 0, false);
	fwrite(pkt, 1, cm_msg(pkt, BRAID_CM_REQ, 7, 0, 12), f);
	done(f);
}

/* ---- keyed datagrams: a config byte, two cut bytes, one datagram ---- */

static void auth_seed(const char *name, enum braid_auth_mode mode, const uint8_t *dgram,
		      size_t len, bool keyed)
{
	uint8_t cfg[2] = { (uint8_t)((mode == BRAID_AUTH_MAC ? FAUTH_CFG_MAC : 0) | 0x0e), 0x21 };
	uint8_t hdr[BRAID_AUTH_HDR_MAX], scratch[1600];
	size_t hl = (size_t)dgram[6] << 8 | dgram[7];
	struct iovec rest = { (void *)(dgram + hl), len - hl };
	struct braid_auth a;
	FILE *f = seed("fuzz_auth", name, 0, false);
	int klen;

	if (braid_auth_init(&a, FAUTH_KEY, strlen(FAUTH_KEY), mode))
		exit(1);
	fwrite(cfg, 1, sizeof(cfg), f);
	if (!keyed) {
		fwrite(dgram, 1, len, f);
		done(f);
		return;
	}
	memcpy(hdr, dgram, hl);
	klen = braid_auth_seal(&a, hdr, &rest, 1, scratch);
	if (klen < 0)
		exit(1);
	fwrite(hdr, 1, (size_t)klen, f);
	fwrite(dgram + hl, 1, len - hl, f);
	done(f);
}

static void auth_seeds(void)
{
	struct braid_rd_data_view v = rd_view(5, 2, 0, 100);
	uint8_t a[200], b[200];
	const uint8_t *recs[2] = { a, b };
	size_t lens[2], n;

	if (sodium_init() < 0)
		exit(1);
	n = rd_data(pkt, &v, 40);
	auth_seed("rd_data_job", BRAID_AUTH_JOB, pkt, n, true);
	auth_seed("rd_data_mac", BRAID_AUTH_MAC, pkt, n, true);
	auth_seed("rd_data_plain", BRAID_AUTH_JOB, pkt, n, false);
	lens[0] = rd_ack(a, 20, 0);
	lens[1] = rd_data(b, &v, 30);
	n = rd_bundle(pkt, recs, lens, 2);
	auth_seed("bundle_job", BRAID_AUTH_JOB, pkt, n, true);
	auth_seed("bundle_plain", BRAID_AUTH_JOB, pkt, n, false);
	n = cm_msg(pkt, BRAID_CM_REQ, 7, 0, 12);
	auth_seed("cm_req_job", BRAID_AUTH_JOB, pkt, n, true);
	braid_dgram_hdr_write((struct braid_dgram_hdr *)pkt, 7000, 1, 0x1122334455667788ULL);
	auth_seed("dgram_mac", BRAID_AUTH_MAC, pkt, sizeof(struct braid_dgram_hdr) + 12, true);
}

/* ---- local peers' rings: steps of a sender writing records, the receiver's calls ---- */

/* a step: its ctl, the header fields, then @n ring bytes */
static void shm_step(FILE *f, uint8_t ctl, uint16_t delta, uint8_t npk, uint8_t sel, uint16_t cap,
		     const uint8_t *bytes, size_t n)
{
	uint8_t rec[FSHM_STEP_HDR + 4096];
	uint8_t h[FSHM_STEP_HDR] = { (uint8_t)delta, (uint8_t)(delta >> 8), npk, sel, (uint8_t)cap,
				     (uint8_t)(cap >> 8) };

	memcpy(rec, h, sizeof(h));
	memcpy(rec + sizeof(h), bytes, n);
	fuzz_put_rec(f, ctl, rec, sizeof(h) + n);
}

/* a record of @len bytes at @at (its header as a sender writes it), @payload's @plen after it */
static size_t shm_rec(uint8_t *at, uint32_t len, uint16_t flags, const void *payload, size_t plen)
{
	uint32_t ip = htonl(0x7f000001u);
	uint16_t sport = htons(40000), home = htons(40001), dport = 0;

	memcpy(at, &len, 4);
	memcpy(at + 4, &ip, 4);
	memcpy(at + 8, &sport, 2);
	memcpy(at + 10, &home, 2);
	memcpy(at + 12, &dport, 2);
	memcpy(at + 14, &flags, 2);
	memcpy(at + FSHM_REC_HDR, payload, plen);
	return (FSHM_REC_HDR + plen + 15) & ~(size_t)15;
}

/* a lent record's head: the datagram's first @head bytes here, @len more at @addr of @pid */
static size_t shm_lent(uint8_t *at, uint64_t addr, uint32_t len, uint32_t pid, const char *head)
{
	uint8_t l[FSHM_LENT_BYTES + 64] = { 0 };
	uint32_t hl = (uint32_t)strlen(head);

	memcpy(l + FSHM_LENT_ADDR, &addr, 8);
	memcpy(l + 16, &len, 4);
	memcpy(l + FSHM_LENT_PID, &pid, 4);
	memcpy(l + 24, &hl, 4);
	memcpy(l + FSHM_LENT_BYTES, head, hl);
	return shm_rec(at, FSHM_LENT_BYTES + hl, FSHM_REC_LENT, l, FSHM_LENT_BYTES + hl);
}

static void shm_seeds(void)
{
	const char *t = "fuzz_shm";
	const uint8_t burst = FSHM_CALL_BURST << 1, peek = FSHM_CALL_PEEK << 1,
		      rewrite = FSHM_CALL_REWRITE << 1, plus = 1 << 3;
	uint8_t b[512];
	size_t n, m;
	uint32_t wrap = UINT32_MAX;
	FILE *f;

	/* two datagrams, received into small buffers (the second truncated) */
	f = seed(t, "good", 0, true);
	memset(b, 0, sizeof(b));
	n = shm_rec(b, 5, 0, "hello", 5);
	n += shm_rec(b + n, 100, 0, pkt, 100);
	shm_step(f, burst, 0, 1, 0x04, 0, b, n);
	done(f);

	/* the ring filled to 32 bytes before its end (two big datagrams), a wrap mark there, a datagram */
	f = seed(t, "wrap", 0, true);
	memset(b, 0, sizeof(b));
	shm_rec(b, 65520, 0, "", 0);
	shm_step(f, burst | 2 << 3, 1, 0, 0x03, 0, b, FSHM_REC_HDR);
	shm_rec(b, 65488, 0, "", 0);
	shm_step(f, burst | plus, 65504, 0, 0x03, 0, b, FSHM_REC_HDR);
	memset(b, 0, sizeof(b));
	memcpy(b, &wrap, 4);
	n = 32 + shm_rec(b + 32, 3, 0, "abc", 3);
	shm_step(f, burst, 0, 0, 0x03, 0, b, n);
	done(f);

	/* a lent payload of 100 bytes read from the harness's buffer, and one from no process */
	f = seed(t, "lent", 0, true);
	memset(b, 0, sizeof(b));
	n = shm_lent(b, 256, 100, 1, "head");
	shm_step(f, burst | FSHM_CTL_LEND_OWN, 0, 0, 0x02, 0, b, n);
	n = shm_lent(b, 256, 100, 2, "head");
	shm_step(f, burst, 0, 0, 0x02, 0, b, n);
	done(f);

	/* a length past the bytes written */
	f = seed(t, "bad_len", 0, true);
	memset(b, 0, sizeof(b));
	shm_rec(b, 60000, 0, "", 0);
	shm_step(f, burst | plus, 32, 0, 0x03, 0, b, 32);
	done(f);

	/* peeked, then taken into three buffers; then peeked and changed before it is taken */
	f = seed(t, "peek", 0, true);
	memset(b, 0, sizeof(b));
	n = shm_rec(b, 100, 0, pkt, 100);
	shm_step(f, peek, 0, 0, 0x16, 8, b, n);
	memcpy(b + n, b, n);
	b[n + FSHM_REC_HDR] ^= 0xff;
	shm_step(f, rewrite, 0, 0, 0x16, 8, b, 2 * n);
	done(f);

	/* a lent payload peeked, then taken; on ring 1 */
	f = seed(t, "lent_peek", 0, true);
	memset(b, 0, sizeof(b));
	n = shm_lent(b, 4096, 3000, 1, "0123456789abcdef");
	shm_step(f, peek | FSHM_CTL_LEND_OWN | FSHM_CTL_RING, 0, 0, 0x1e, 10, b, n);
	done(f);

	/* a tail behind the head, then a good datagram */
	f = seed(t, "tail_behind", 0, true);
	memset(b, 0, sizeof(b));
	m = shm_rec(b, 8, 0, "12345678", 8);
	shm_step(f, burst | 3 << 3, 5, 0, 0x01, 0, b, m);
	shm_step(f, burst, 0, 0, 0x01, 0, b, m);
	done(f);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	if (mkdir(out_dir, 0755) && errno != EEXIST) {
		perror(out_dir);
		return 1;
	}
	rd_seeds();
	rc_seeds();
	cm_seeds();
	dgram_seeds();
	auth_seeds();
	shm_seeds();
	return 0;
}
