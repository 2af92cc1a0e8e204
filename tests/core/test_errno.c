/* SPDX-License-Identifier: BSD-2-Clause */
/* test_errno.c: unit tests of core/braid_errno.c. */
#include <criterion/criterion.h>

#include "braid/braid_errno.h"

Test(braid_prov_strerror, known_and_unknown)
{
	cr_assert_str_eq(braid_prov_strerror(BRAID_PERR_OK), "success");
	cr_assert(strstr(braid_prov_strerror(BRAID_PERR_TRUNC), "larger") != NULL);
	cr_assert_str_eq(braid_prov_strerror(-1), "unknown braid error");
	cr_assert_str_eq(braid_prov_strerror(BRAID_PERR_MAX), "unknown braid error");
	for (int i = 0; i < BRAID_PERR_MAX; i++)
		cr_assert_str_neq(braid_prov_strerror(i), "unknown braid error");
}

Test(braid_prov_strerror_r, copies_and_truncates)
{
	char buf[8];

	cr_assert_eq(braid_prov_strerror_r(BRAID_PERR_OK, buf, sizeof(buf)), buf);
	cr_assert_str_eq(buf, "success");
	braid_prov_strerror_r(BRAID_PERR_TRUNC, buf, sizeof(buf));
	cr_assert_eq(strlen(buf), 7, "truncated to the buffer, NUL-terminated");
	cr_assert_str_eq(braid_prov_strerror_r(BRAID_PERR_OK, NULL, 0), "success");
}
