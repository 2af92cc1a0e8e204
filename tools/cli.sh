# SPDX-License-Identifier: BSD-2-Clause
# cli.sh: the command-line conventions of braid's scripts, sourced by them (tools/braid_cli.h
# holds the programs'): -h or --help prints the script's usage on stdout and exits 0; a bad
# argument prints what is wrong and the usage on stderr and exits 2, before any work.
# The script sets CLI_NAME (its name in messages) and defines usage (the text, on stdout)
# before it calls these. POSIX sh: sourced by sh and bash scripts alike.

# cli_usage_error MESSAGE...: MESSAGE and the usage on stderr, then exit 2.
cli_usage_error() {
	echo "$CLI_NAME: $*" >&2
	usage >&2
	exit 2
}

# cli_operands MIN MAX "$@": for a script that takes operands and no options: -h/--help
# answered, any other option refused, and from MIN to MAX operands.
cli_operands() {
	cli_min=$1 cli_max=$2
	shift 2
	for cli_arg in "$@"; do
		case $cli_arg in
		-h | --help) usage; exit 0 ;;
		-?*) cli_usage_error "unknown option '$cli_arg'" ;;
		esac
	done
	[ $# -ge "$cli_min" ] || cli_usage_error "too few arguments"
	[ $# -le "$cli_max" ] || cli_usage_error "too many arguments ($*)"
}

# cli_count WHAT VALUE: VALUE is a whole number of 1 or more, else a usage error about WHAT.
cli_count() {
	case $2 in
	'' | *[!0-9]* | 0*) cli_usage_error "$1 must be a whole number of 1 or more, not '$2'" ;;
	esac
}
