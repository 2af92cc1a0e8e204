/* braid_errno.c: the strings of braid's provider error numbers. */
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
