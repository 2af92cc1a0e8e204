/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_errno.c: the strings of braid's provider error numbers. */
#include <string.h>

#include "braid/braid_errno.h"

static const char *const braid_perr_msgs[BRAID_PERR_MAX] = {
#define BRAID_X_MSG(name, value, msg) [value] = msg,
	BRAID_PROV_ERRNO_TABLE(BRAID_X_MSG)
#undef BRAID_X_MSG
};

const char *braid_prov_strerror(int prov_errno)
{
	if (prov_errno < 0 || prov_errno >= BRAID_PERR_MAX ||
	    !braid_perr_msgs[prov_errno])
		return "unknown braid error";
	return braid_perr_msgs[prov_errno];
}

const char *braid_prov_strerror_r(int prov_errno, char *buf, size_t len)
{
	const char *msg = braid_prov_strerror(prov_errno);

	if (!buf || !len)
		return msg;
	strncpy(buf, msg, len - 1);
	buf[len - 1] = '\0';
	return buf;
}
