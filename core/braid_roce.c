/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_roce.c: encode, decode and checksum RoCEv2 RC packets (docs/protocol.md §5). */
#include <assert.h>
#include <string.h>
#include <zlib.h>

#include "braid_roce.h"

#define RETH	BRAID_ROCE_HAS_RETH
#define AETH	BRAID_ROCE_HAS_AETH
#define IMM	BRAID_ROCE_HAS_IMM
#define PAY	BRAID_ROCE_HAS_PAYLOAD

/* §5.3: the headers of each RC opcode (IBTA vol. 1 §9.2.1, Table 38); 0: not spoken */
static const uint8_t op_hdrs[] = {
	[BRAID_ROCE_SEND_FIRST] = PAY,
	[BRAID_ROCE_SEND_MIDDLE] = PAY,
	[BRAID_ROCE_SEND_LAST] = PAY,
	[BRAID_ROCE_SEND_LAST_IMM] = IMM | PAY,
	[BRAID_ROCE_SEND_ONLY] = PAY,
	[BRAID_ROCE_SEND_ONLY_IMM] = IMM | PAY,
	[BRAID_ROCE_WRITE_FIRST] = RETH | PAY,
	[BRAID_ROCE_WRITE_MIDDLE] = PAY,
	[BRAID_ROCE_WRITE_LAST] = PAY,
	[BRAID_ROCE_WRITE_LAST_IMM] = IMM | PAY,
	[BRAID_ROCE_WRITE_ONLY] = RETH | PAY,
	[BRAID_ROCE_WRITE_ONLY_IMM] = RETH | IMM | PAY,
	[BRAID_ROCE_READ_REQ] = RETH,
	[BRAID_ROCE_READ_RESP_FIRST] = AETH | PAY,
	[BRAID_ROCE_READ_RESP_MIDDLE] = PAY,
	[BRAID_ROCE_READ_RESP_LAST] = AETH | PAY,
	[BRAID_ROCE_READ_RESP_ONLY] = AETH | PAY,
	[BRAID_ROCE_ACK] = AETH,
};

#define N_OPS (sizeof(op_hdrs) / sizeof(op_hdrs[0]))

static const char *const op_names[N_OPS] = {
	[BRAID_ROCE_SEND_FIRST] = "SEND_FIRST",
	[BRAID_ROCE_SEND_MIDDLE] = "SEND_MIDDLE",
	[BRAID_ROCE_SEND_LAST] = "SEND_LAST",
	[BRAID_ROCE_SEND_LAST_IMM] = "SEND_LAST_IMM",
	[BRAID_ROCE_SEND_ONLY] = "SEND_ONLY",
	[BRAID_ROCE_SEND_ONLY_IMM] = "SEND_ONLY_IMM",
	[BRAID_ROCE_WRITE_FIRST] = "WRITE_FIRST",
	[BRAID_ROCE_WRITE_MIDDLE] = "WRITE_MIDDLE",
	[BRAID_ROCE_WRITE_LAST] = "WRITE_LAST",
	[BRAID_ROCE_WRITE_LAST_IMM] = "WRITE_LAST_IMM",
	[BRAID_ROCE_WRITE_ONLY] = "WRITE_ONLY",
	[BRAID_ROCE_WRITE_ONLY_IMM] = "WRITE_ONLY_IMM",
	[BRAID_ROCE_READ_REQ] = "READ_REQ",
	[BRAID_ROCE_READ_RESP_FIRST] = "READ_RESP_FIRST",
	[BRAID_ROCE_READ_RESP_MIDDLE] = "READ_RESP_MIDDLE",
	[BRAID_ROCE_READ_RESP_LAST] = "READ_RESP_LAST",
	[BRAID_ROCE_READ_RESP_ONLY] = "READ_RESP_ONLY",
	[BRAID_ROCE_ACK] = "ACK",
};

uint32_t braid_roce_opcode_hdrs(uint8_t opcode)
{
	return opcode < N_OPS ? op_hdrs[opcode] : 0;
}

const char *braid_roce_opcode_name(uint8_t opcode)
{
	return opcode < N_OPS ? op_names[opcode] : "?";
}

static size_t hdrs_len(uint32_t hdrs)
{
	return BRAID_ROCE_BTH_LEN + (hdrs & RETH ? BRAID_ROCE_RETH_LEN : 0) +
	       (hdrs & AETH ? BRAID_ROCE_AETH_LEN : 0) + (hdrs & IMM ? BRAID_ROCE_IMM_LEN : 0);
}

size_t braid_roce_hdr_len(uint8_t opcode)
{
	uint32_t hdrs = braid_roce_opcode_hdrs(opcode);

	return hdrs ? hdrs_len(hdrs) : 0;
}

uint32_t braid_roce_path_mtu(size_t udp_payload)
{
	static const uint32_t ib[] = { 4096, 2048, 1024, 512, 256 };
	size_t i;

	for (i = 0; i < sizeof(ib) / sizeof(ib[0]); i++)
		if (ib[i] + BRAID_ROCE_MAX_HDR + BRAID_ROCE_MAX_TRAILER <= udp_payload)
			return ib[i];
	return 256;
}

/* big-endian field access; the 24-bit ones take the low 24 bits of a word */
static inline void put16(uint8_t *p, uint16_t x)
{
	p[0] = x >> 8;
	p[1] = x;
}

static inline void put24(uint8_t *p, uint32_t x)
{
	p[0] = x >> 16;
	p[1] = x >> 8;
	p[2] = x;
}

static inline void put32(uint8_t *p, uint32_t x)
{
	p[0] = x >> 24;
	put24(p + 1, x);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | get24(p + 1);
}

/* BTH byte 1 (§5.2): SE | M | PadCnt(2) | TVer(4) */
#define BTH1_SE		0x80
#define BTH1_M		0x40
#define BTH1_PAD_SHIFT	4
#define BTH1_TVER	0x0f
/* BTH byte 8: A | resv7 */
#define BTH8_A		0x80

size_t braid_roce_write(uint8_t *buf, const struct braid_roce_view *v)
{
	uint32_t hdrs = braid_roce_opcode_hdrs(v->opcode);
	/* payload and pad together a multiple of 4 (IBTA §9.2: PadCnt) */
	unsigned pad = hdrs & PAY ? (unsigned)(-v->payload_len & 3) : 0;
	uint8_t *p = buf + BRAID_ROCE_BTH_LEN;

	if (!hdrs)
		return 0;
	buf[0] = v->opcode;
	/* MigReq is always 1 from braid: no APM, the path is "migrated" (§5.2) */
	buf[1] = (v->se ? BTH1_SE : 0) | BTH1_M | pad << BTH1_PAD_SHIFT;
	put16(buf + 2, v->pkey);
	buf[4] = 0;
	put24(buf + 5, v->dest_qp);
	buf[8] = v->ack_req ? BTH8_A : 0;
	put24(buf + 9, v->psn);
	if (hdrs & RETH) {
		put32(p, (uint32_t)(v->va >> 32));
		put32(p + 4, (uint32_t)v->va);
		put32(p + 8, v->rkey);
		put32(p + 12, v->dma_len);
		p += BRAID_ROCE_RETH_LEN;
	}
	if (hdrs & AETH) {
		p[0] = v->syndrome;
		put24(p + 1, v->msn);
		p += BRAID_ROCE_AETH_LEN;
	}
	if (hdrs & IMM) {
		put32(p, v->imm);
		p += BRAID_ROCE_IMM_LEN;
	}
	return (size_t)(p - buf);
}

void braid_roce_msg_write(uint8_t *buf, const struct braid_roce_msg_view *v)
{
	buf[0] = v->kind;
	buf[1] = 0;
	put16(buf + 2, 0);
	put32(buf + 4, v->len);
	put32(buf + 8, (uint32_t)(v->tag >> 32));
	put32(buf + 12, (uint32_t)v->tag);
}

int braid_roce_msg_parse(const uint8_t *buf, size_t len, struct braid_roce_msg_view *v)
{
	if (!buf || len < BRAID_ROCE_MSG_HDR_LEN ||
	    (buf[0] != BRAID_ROCE_MSG_UNTAGGED && buf[0] != BRAID_ROCE_MSG_TAGGED))
		return -1;
	v->kind = buf[0];
	v->len = get32(buf + 4);
	v->tag = (uint64_t)get32(buf + 8) << 32 | get32(buf + 12);
	return 0;
}

int braid_roce_dest_qp(const uint8_t *pkt, size_t len, uint32_t *qpn)
{
	if (len < BRAID_ROCE_BTH_LEN + BRAID_ROCE_ICRC_LEN)
		return -BRAID_ROCE_ERR_SHORT;
	if (pkt[1] & BTH1_TVER)
		return -BRAID_ROCE_ERR_TVER;
	*qpn = get24(pkt + 5);
	return 0;
}

int braid_roce_parse(const uint8_t *pkt, size_t len, struct braid_roce_view *v)
{
	const uint8_t *p = pkt + BRAID_ROCE_BTH_LEN;
	uint32_t hdrs;
	size_t hlen;
	unsigned pad;
	int ret = braid_roce_dest_qp(pkt, len, &v->dest_qp);

	if (ret)
		return ret;
	hdrs = braid_roce_opcode_hdrs(pkt[0]);
	if (!hdrs)
		return -BRAID_ROCE_ERR_OPCODE;
	hlen = hdrs_len(hdrs);
	pad = pkt[1] >> BTH1_PAD_SHIFT & 3;
	if (len < hlen + pad + BRAID_ROCE_ICRC_LEN)
		return -BRAID_ROCE_ERR_SHORT;
	v->payload_len = len - hlen - pad - BRAID_ROCE_ICRC_LEN;
	/*
	 * PadCnt pads the payload to 4 bytes (IBTA §9.2): payload + pad is a
	 * multiple of 4, so an empty payload has no pad; an opcode without
	 * payload has neither.
	 */
	if ((v->payload_len + pad) & 3 || (!(hdrs & PAY) && v->payload_len + pad))
		return -BRAID_ROCE_ERR_PAD;

	v->opcode = pkt[0];
	v->se = pkt[1] & BTH1_SE;
	v->mig = pkt[1] & BTH1_M;
	v->pad = pad;
	v->pkey = get16(pkt + 2);
	v->ack_req = pkt[8] & BTH8_A;
	v->psn = get24(pkt + 9);
	v->va = 0;
	v->rkey = v->dma_len = 0;
	v->syndrome = 0;
	v->msn = 0;
	v->imm = 0;
	if (hdrs & RETH) {
		v->va = (uint64_t)get32(p) << 32 | get32(p + 4);
		v->rkey = get32(p + 8);
		v->dma_len = get32(p + 12);
		p += BRAID_ROCE_RETH_LEN;
	}
	if (hdrs & AETH) {
		v->syndrome = p[0];
		v->msn = get24(p + 1);
		p += BRAID_ROCE_AETH_LEN;
	}
	if (hdrs & IMM) {
		v->imm = get32(p);
		p += BRAID_ROCE_IMM_LEN;
	}
	v->payload = p;
	v->hdr_len = hlen;
	return 0;
}

/*
 * §5.5: the start of every ICRC: 8 bytes of ones (the masked LRH), the IPv4
 * and UDP headers with their variant fields masked to ones, and the BTH
 * with resv8a masked (IBTA Annex A17.8). @udp_len is the UDP length.
 */
static uLong icrc_start(const struct braid_roce_addr *a, const uint8_t *bth, size_t udp_len)
{
	uint8_t ps[8 + 20 + 8 + BRAID_ROCE_BTH_LEN];
	uint8_t *ip = ps + 8, *udp = ip + 20, *b = udp + 8;

	memset(ps, 0xff, 8);
	ip[0] = 0x45;				/* version 4, IHL 5 */
	ip[1] = 0xff;				/* TOS (DSCP, ECN): masked */
	put16(ip + 2, (uint16_t)(20 + udp_len));
	put16(ip + 4, a->ip_id);
	put16(ip + 6, 0x4000);			/* DF, fragment offset 0 */
	ip[8] = 0xff;				/* TTL: masked */
	ip[9] = 17;				/* UDP */
	put16(ip + 10, 0xffff);			/* header checksum: masked */
	put32(ip + 12, a->src_ip);
	put32(ip + 16, a->dst_ip);
	put16(udp, a->src_port);
	put16(udp + 2, a->dst_port);
	put16(udp + 4, (uint16_t)udp_len);
	put16(udp + 6, 0xffff);			/* checksum: masked */
	memcpy(b, bth, BRAID_ROCE_BTH_LEN);
	b[4] = 0xff;				/* resv8a (FECN/BECN live here): masked */
	return crc32(0, ps, sizeof(ps));
}

uint32_t braid_roce_icrc(const struct braid_roce_addr *a, const uint8_t *hdr, size_t hdr_len,
			 const struct iovec *payload, int iovcnt, size_t payload_len, size_t pad)
{
	static const uint8_t zeros[3];
	size_t udp_len = 8 + hdr_len + payload_len + pad + BRAID_ROCE_ICRC_LEN;
	size_t left = payload_len;
	uLong crc;

	assert(hdr_len >= BRAID_ROCE_BTH_LEN && pad <= 3);
	crc = icrc_start(a, hdr, udp_len);
	crc = crc32(crc, hdr + BRAID_ROCE_BTH_LEN, (uInt)(hdr_len - BRAID_ROCE_BTH_LEN));
	for (int i = 0; i < iovcnt && left; i++) {
		size_t n = payload[i].iov_len < left ? payload[i].iov_len : left;

		crc = crc32(crc, payload[i].iov_base, (uInt)n);
		left -= n;
	}
	assert(left == 0);
	return (uint32_t)crc32(crc, zeros, (uInt)pad);
}

/* the ICRC goes out as the register's bytes, least significant first (as rxe, §5.5) */
void braid_roce_icrc_put(uint8_t *p, uint32_t icrc)
{
	p[0] = icrc;
	p[1] = icrc >> 8;
	p[2] = icrc >> 16;
	p[3] = icrc >> 24;
}

bool braid_roce_icrc_ok(const struct braid_roce_addr *a, const uint8_t *pkt, size_t len)
{
	const uint8_t *ic;
	uLong crc;

	/* everything after the BTH is covered unmasked: no need to know the opcode */
	if (len < BRAID_ROCE_BTH_LEN + BRAID_ROCE_ICRC_LEN || len > 0xffff - 8 - 20)
		return false;
	ic = pkt + len - BRAID_ROCE_ICRC_LEN;
	crc = icrc_start(a, pkt, 8 + len);
	crc = crc32(crc, pkt + BRAID_ROCE_BTH_LEN, (uInt)(len - BRAID_ROCE_BTH_LEN - BRAID_ROCE_ICRC_LEN));
	return (uint32_t)crc == ((uint32_t)ic[0] | (uint32_t)ic[1] << 8 | (uint32_t)ic[2] << 16 |
				 (uint32_t)ic[3] << 24);
}
