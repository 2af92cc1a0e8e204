/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_cli.h: the command-line conventions braid's programs (bench/, tools/) share:
 * --help prints the usage on stdout and exits 0; a bad argument prints what is
 * wrong and the usage on stderr and exits BRAID_CLI_EXIT_USAGE, before any work.
 * Numbers are taken whole (no trailing characters) and within their range.
 */
#ifndef BRAID_CLI_H
#define BRAID_CLI_H

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define BRAID_CLI_EXIT_USAGE	2

/*
 * braid_cli_long() - @s as a whole integer (decimal, 0x hex or 0 octal) in
 * [@lo, @hi] into *@out; false (and *@out unchanged) when it is not one.
 */
static inline bool braid_cli_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (!*s || *end || errno || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* braid_cli_double() - @s as a whole finite number in [@lo, @hi] into *@out; false when not. */
static inline bool braid_cli_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/*
 * braid_cli_bad() - a bad value @arg for option @opt (wanted: @want): says so
 * on stderr after @prog's name, prints the usage there, returns
 * BRAID_CLI_EXIT_USAGE for main to return.
 */
static inline int braid_cli_bad(void (*usage)(FILE *out), const char *prog, const char *opt,
				const char *arg, const char *want)
{
	fprintf(stderr, "%s: %s '%s': want %s\n", prog, opt, arg, want);
	usage(stderr);
	return BRAID_CLI_EXIT_USAGE;
}

/*
 * braid_cli_extra() - after the options (getopt's optind): an operand left
 * over, which the program does not take, is said on stderr with the usage;
 * returns BRAID_CLI_EXIT_USAGE then, 0 when nothing is left.
 */
static inline int braid_cli_extra(void (*usage)(FILE *out), const char *prog, int argc,
				  char **argv)
{
	if (optind >= argc)
		return 0;
	fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
	usage(stderr);
	return BRAID_CLI_EXIT_USAGE;
}

#endif /* BRAID_CLI_H */
