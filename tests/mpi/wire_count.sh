# SPDX-License-Identifier: BSD-2-Clause
# wire_count.sh (sourced by the MPI tests): what braid's wire carried during a run. Ranks on one
# host reach each other through shared memory (fi_braid(7), LOCAL PEERS) unless FI_BRAID_SHM=0,
# so the count is the UDP datagrams sent on this host (the kernel's count, udp_out before and
# after) and the datagrams braid's RDM endpoints wrote into local peers' rings (each endpoint's
# closing line in braid's log: the ranks run with wire_log_env).

# the kernel's count of UDP datagrams sent
udp_out() { awk '/^Udp:/ { if (++n == 2) print $5 }' /proc/net/snmp; }

# the environment that makes each rank's braid say what it carried when its endpoint closes
wire_log_env() {
	export FI_LOG_LEVEL=info FI_LOG_PROV=braid
}

# local_sent LOG: datagrams braid's endpoints wrote into local peers' rings, by their log lines
local_sent() {
	sed -n "s/.*datagrams through local peers' shared memory: \([0-9]*\) sent.*/\1/p" "$1" |
		awk '{ s += $1 } END { print s + 0 }'
}
