/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_roce.h: RoCEv2 wire format (IBTA spec vol. 1 ch. 9, Annex A17): BTH, RETH, AETH, ImmDt and the ICRC. */
#ifndef BRAID_ROCE_H
#define BRAID_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * A RoCEv2 packet inside a UDP datagram (docs/protocol.md §5):
 *
 *   BTH (12) | RETH (16) / AETH (4) / ImmDt (4), as the opcode says |
 *   payload | pad (0..3 zero bytes, BTH.PadCnt) | ICRC (4)
 *
 * Every multi-byte field is big-endian on the wire, except the ICRC, which
 * is sent as the CRC-32 register's bytes, least significant first (as Linux
 * rxe and the NICs do). Views carry host-order values.
 */

#define BRAID_ROCE_UDP_PORT	4791
#define BRAID_ROCE_BTH_LEN	12
#define BRAID_ROCE_RETH_LEN	16
#define BRAID_ROCE_AETH_LEN	4
#define BRAID_ROCE_IMM_LEN	4
#define BRAID_ROCE_ICRC_LEN	4
/* the longest header any opcode here has: BTH + RETH + ImmDt */
#define BRAID_ROCE_MAX_HDR	(BRAID_ROCE_BTH_LEN + BRAID_ROCE_RETH_LEN + BRAID_ROCE_IMM_LEN)
/* pad + ICRC */
#define BRAID_ROCE_MAX_TRAILER	(3 + BRAID_ROCE_ICRC_LEN)
#define BRAID_ROCE_DEFAULT_PKEY	0xffff
#define BRAID_ROCE_PSN_MASK	0xffffffu
#define BRAID_ROCE_QPN_MASK	0xffffffu

/* RC opcodes (IBTA Table 38; transport bits 000 = RC). Frozen by the spec. */
enum braid_roce_opcode {
	BRAID_ROCE_SEND_FIRST = 0x00,
	BRAID_ROCE_SEND_MIDDLE = 0x01,
	BRAID_ROCE_SEND_LAST = 0x02,
	BRAID_ROCE_SEND_LAST_IMM = 0x03,
	BRAID_ROCE_SEND_ONLY = 0x04,
	BRAID_ROCE_SEND_ONLY_IMM = 0x05,
	BRAID_ROCE_WRITE_FIRST = 0x06,
	BRAID_ROCE_WRITE_MIDDLE = 0x07,
	BRAID_ROCE_WRITE_LAST = 0x08,
	BRAID_ROCE_WRITE_LAST_IMM = 0x09,
	BRAID_ROCE_WRITE_ONLY = 0x0a,
	BRAID_ROCE_WRITE_ONLY_IMM = 0x0b,
	BRAID_ROCE_READ_REQ = 0x0c,
	BRAID_ROCE_READ_RESP_FIRST = 0x0d,
	BRAID_ROCE_READ_RESP_MIDDLE = 0x0e,
	BRAID_ROCE_READ_RESP_LAST = 0x0f,
	BRAID_ROCE_READ_RESP_ONLY = 0x10,
	BRAID_ROCE_ACK = 0x11,
	/* 0x12 ATOMIC ACKNOWLEDGE, 0x13 COMPARE SWAP, 0x14 FETCH ADD: reserved for later */
};

/* which extension headers an opcode carries (braid_roce_opcode_hdrs()) */
#define BRAID_ROCE_HAS_RETH	(1u << 0)
#define BRAID_ROCE_HAS_AETH	(1u << 1)
#define BRAID_ROCE_HAS_IMM	(1u << 2)
#define BRAID_ROCE_HAS_PAYLOAD	(1u << 3)	/* may carry payload */

/* AETH syndrome (IBTA 9.3.5, Table 43): bits 7..5 kind, 4..0 value */
#define BRAID_ROCE_AETH_ACK		0x00	/* | credit count (0x1f: none/invalid) */
#define BRAID_ROCE_AETH_RNR_NAK		0x20	/* | RNR timer code (Table 45) */
#define BRAID_ROCE_AETH_NAK		0x60	/* | NAK code: */
#define BRAID_ROCE_NAK_PSN_SEQ_ERR	0x00
#define BRAID_ROCE_NAK_INVALID_REQ	0x01
#define BRAID_ROCE_NAK_REM_ACCESS_ERR	0x02
#define BRAID_ROCE_NAK_REM_OP_ERR	0x03
#define BRAID_ROCE_NAK_INVALID_RD_REQ	0x04
#define BRAID_ROCE_AETH_CREDIT_INVALID	0x1f

/** struct braid_roce_addr - the IPv4/UDP addresses of a packet (host order); the ICRC covers them. */
struct braid_roce_addr {
	uint32_t src_ip, dst_ip;
	uint16_t src_port, dst_port;
	/*
	 * IPv4 Identification, also covered by the ICRC: 0 for what braid sends
	 * (Linux sends ID 0 on unconnected DF datagrams); a received packet's
	 * own ID where its IP header is seen (NICs and rxe send non-zero IDs).
	 */
	uint16_t ip_id;
};

/** struct braid_roce_view - a packet's headers, decoded (host order). */
struct braid_roce_view {
	/* BTH */
	uint8_t opcode;
	bool se;		/* solicited event */
	bool mig;		/* MigReq: always 1 from us (no APM) */
	uint8_t pad;		/* PadCnt, 0..3 (set by braid_roce_write from @payload_len) */
	uint16_t pkey;
	uint32_t dest_qp;	/* 24 bits */
	bool ack_req;		/* A bit */
	uint32_t psn;		/* 24 bits */
	/* RETH (WRITE_FIRST/ONLY, READ_REQ) */
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
	/* AETH (ACK, READ_RESP_FIRST/LAST/ONLY) */
	uint8_t syndrome;
	uint32_t msn;		/* 24 bits */
	/* ImmDt (*_IMM) */
	uint32_t imm;
	/* payload (parse: points into the packet; write: the length to pad for) */
	const uint8_t *payload;
	size_t payload_len;
	/* parse: bytes of BTH + extension headers */
	size_t hdr_len;
};

/** braid_roce_opcode_hdrs() - BRAID_ROCE_HAS_* of @opcode, or 0 for an opcode braid does not speak. */
uint32_t braid_roce_opcode_hdrs(uint8_t opcode);

/** braid_roce_opcode_name() - e.g. "SEND_ONLY", or "?" . */
const char *braid_roce_opcode_name(uint8_t opcode);

/** braid_roce_hdr_len() - bytes of BTH + extension headers of @opcode (0 if unknown). */
size_t braid_roce_hdr_len(uint8_t opcode);

/**
 * braid_roce_path_mtu() - the largest IB MTU (4096, 2048, 1024, 512 or 256
 * payload bytes) whose every packet (BTH + RETH + ImmDt, payload, pad +
 * ICRC) fits in a UDP payload of @udp_payload bytes; 256 when none does.
 */
uint32_t braid_roce_path_mtu(size_t udp_payload);

/**
 * braid_roce_write() - write BTH and the opcode's extension headers into
 * @buf (at least BRAID_ROCE_MAX_HDR bytes). PadCnt comes from
 * @v->payload_len. TVer is 0.
 * Return: bytes written, or 0 for an unknown opcode.
 */
size_t braid_roce_write(uint8_t *buf, const struct braid_roce_view *v);

/* parse results: 0, or one of these (negative) */
enum braid_roce_parse_err {
	BRAID_ROCE_ERR_SHORT = 1,	/* shorter than BTH + headers + pad + ICRC */
	BRAID_ROCE_ERR_TVER,		/* BTH.TVer != 0 */
	BRAID_ROCE_ERR_OPCODE,		/* an opcode braid does not speak (not RC, or atomics) */
	BRAID_ROCE_ERR_PAD,		/* payload + pad not a multiple of 4 (pad on an empty payload),
					 * or pad or payload bytes on an opcode without payload */
};

/**
 * braid_roce_parse() - decode and validate the headers of the @len bytes at
 * @pkt (the UDP payload). The ICRC is not checked here (braid_roce_icrc_ok).
 * Return: 0, or -enum braid_roce_parse_err.
 */
int braid_roce_parse(const uint8_t *pkt, size_t len, struct braid_roce_view *v);

/**
 * braid_roce_dest_qp() - the BTH's DestQP of the @len bytes at @pkt, to hand
 * a packet to its QP before anything else is decoded (braid_roce_parse, run
 * by the QP, validates the rest). Return: 0, or -BRAID_ROCE_ERR_SHORT or
 * -BRAID_ROCE_ERR_TVER.
 */
int braid_roce_dest_qp(const uint8_t *pkt, size_t len, uint32_t *qpn);

/**
 * braid_roce_icrc() - the ICRC of a packet to be sent from @a: over the
 * IPv4 and UDP headers the packet will have on the wire (version 4, IHL 5,
 * ID @a->ip_id, DF set, protocol 17, lengths from the packet's size;
 * TOS, TTL, IP checksum and UDP checksum masked to ones as Annex A17.8
 * says), preceded by 8 bytes of ones for the masked LRH, then the BTH with
 * its reserved byte (resv8a) masked to ones, the rest of @hdr, the payload
 * and the pad.
 * @hdr/@hdr_len: BTH + extension headers; @payload/@iovcnt/@payload_len:
 * the payload; @pad: 0..3 zero bytes after it.
 * Return: the value to store with braid_roce_icrc_put().
 */
uint32_t braid_roce_icrc(const struct braid_roce_addr *a, const uint8_t *hdr, size_t hdr_len,
			 const struct iovec *payload, int iovcnt, size_t payload_len, size_t pad);

/** braid_roce_icrc_put() - store @icrc in its 4 wire bytes at @p. */
void braid_roce_icrc_put(uint8_t *p, uint32_t icrc);

/**
 * braid_roce_icrc_ok() - check the ICRC of the received UDP payload @pkt
 * (@len bytes, ICRC last) that came from @a.
 */
bool braid_roce_icrc_ok(const struct braid_roce_addr *a, const uint8_t *pkt, size_t len);

/*
 * braid's message header (protocol.md §5.10): on a connection where both
 * sides asked for tagged messages (the CM flag BRAID_CM_F_TAGGED, §6.2),
 * every SEND's payload starts with these 16 bytes and the application's
 * data follows. It is braid's own header inside the payload, as an upper
 * layer protocol's: the RoCEv2 packets are unchanged.
 *
 *   0  kind (BRAID_ROCE_MSG_*)   1  reserved (0)   2  reserved (0, 16 bits)
 *   4  length: the data's bytes after the header (32 bits)
 *   8  tag (64 bits; 0 in an untagged message)
 */
#define BRAID_ROCE_MSG_HDR_LEN	16
#define BRAID_ROCE_MSG_UNTAGGED	0	/* a message for fi_recv */
#define BRAID_ROCE_MSG_TAGGED	1	/* a message for fi_trecv, matched by its tag */

/** struct braid_roce_msg_view - a message header's fields, host order. */
struct braid_roce_msg_view {
	uint8_t kind;
	/** @len: the bytes of data the sender put after the header. */
	uint32_t len;
	uint64_t tag;
};

/** braid_roce_msg_write() - the header of @v into @buf (BRAID_ROCE_MSG_HDR_LEN bytes). */
void braid_roce_msg_write(uint8_t *buf, const struct braid_roce_msg_view *v);

/**
 * braid_roce_msg_parse() - the header at the start of a SEND's first packet
 * payload (@len bytes at @buf): at least BRAID_ROCE_MSG_HDR_LEN bytes and a
 * known kind. Return: 0, or -1 (not a valid header: the message is dropped).
 */
int braid_roce_msg_parse(const uint8_t *buf, size_t len, struct braid_roce_msg_view *v);

/* PSN arithmetic: 24-bit serial numbers (IBTA 9.7.1), wrap-safe. */
static inline uint32_t braid_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & BRAID_ROCE_PSN_MASK;
}

/* signed distance b - a in the 24-bit space, in [-2^23, 2^23) */
static inline int32_t braid_psn_diff(uint32_t b, uint32_t a)
{
	return (int32_t)(((b - a) & BRAID_ROCE_PSN_MASK) << 8) >> 8;
}

#endif /* BRAID_ROCE_H */
