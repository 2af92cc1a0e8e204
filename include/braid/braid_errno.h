/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_errno.h: braid's provider error numbers (prov_errno) and their strings. */
#ifndef BRAID_ERRNO_H
#define BRAID_ERRNO_H

#include <stddef.h>

/*
 * One X-macro table: name, value, message. The value goes into
 * fi_cq_err_entry.prov_errno; fi_cq_strerror() gives the message.
 * Values are frozen once released: append, never renumber.
 */
#define BRAID_PROV_ERRNO_TABLE(X) \
	X(BRAID_PERR_OK,		0, "success") \
	X(BRAID_PERR_TRUNC,		1, "message larger than the posted receive buffer; the excess was discarded") \
	X(BRAID_PERR_CANCELED,		2, "operation canceled by fi_cancel") \
	X(BRAID_PERR_WIRE_SEND,		3, "the wire could not transmit the packet") \
	X(BRAID_PERR_PEER_UNREACHABLE,	4, "the peer stopped answering within the configured time") \
	X(BRAID_PERR_PEER_RESTARTED,	5, "the peer restarted (new incarnation); operations of the old one were failed") \
	X(BRAID_PERR_BAD_ADDR,		6, "destination fi_addr is not in the address vector") \
	X(BRAID_PERR_REMOTE_ACCESS,	7, "remote access error: bad key, bounds or permission") \
	X(BRAID_PERR_SHUTDOWN,		8, "endpoint closed with the operation pending") \
	X(BRAID_PERR_RC_RETRY,		9, "RC: the transport retry count was exceeded (no ACK from the peer)") \
	X(BRAID_PERR_RC_RNR,		10, "RC: the receiver-not-ready retry count was exceeded (no receive posted)") \
	X(BRAID_PERR_RC_INVALID,	11, "RC: the peer refused the request as invalid") \
	X(BRAID_PERR_RC_FLUSHED,	12, "RC: flushed: the queue pair is in error or was shut down") \
	X(BRAID_PERR_REMOTE_INVALID,	13, "the target refused the operation: an atomic op or datatype it does not do, or a bad length") \
	X(BRAID_PERR_HMEM_COPY,		14, "a copy between device memory and its host staging failed (the CUDA driver refused it)") \
	X(BRAID_PERR_SENDER_BAD,	15, "the sender could not read the message's bytes (a copy from its device memory failed); none was delivered")

enum braid_prov_errno {
#define BRAID_X_ENUM(name, value, msg) name = value,
	BRAID_PROV_ERRNO_TABLE(BRAID_X_ENUM)
#undef BRAID_X_ENUM
	BRAID_PERR_MAX
};

/**
 * braid_prov_strerror() - the message for a braid prov_errno.
 * Return: a static string; "unknown braid error" for values not in the table.
 */
const char *braid_prov_strerror(int prov_errno);

/**
 * braid_prov_strerror_r() - the message copied into @buf (truncated, always
 * NUL-terminated) when @buf and @len are given, as fi_cq_strerror(3) asks.
 * Return: @buf, or the static message when @buf is NULL or @len is 0.
 */
const char *braid_prov_strerror_r(int prov_errno, char *buf, size_t len);

#endif /* BRAID_ERRNO_H */
