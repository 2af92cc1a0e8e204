#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# tshark_rc.sh: proof that braid's RC traffic is real RoCEv2. In a network
# namespace of its own (two loopback addresses, so both sides receive on UDP
# 4791), runs RDM tagged bandwidth over braid;ofi_rxm (ofi_rxm over braid's
# FI_EP_MSG: SENDs, and RDMA READ rendezvous for large messages) while tshark
# captures, then checks with tshark that every packet decodes as
# InfiniBand/RoCEv2, none is malformed, every ICRC is right (roce_icrc.lua:
# Wireshark 4.0 shows the ICRC but does not check it), the expected opcodes
# are there, and the request PSNs of every QP advance one by one.
#
# usage: tshark_rc.sh TAGGED_PROGRAM     (fabtests/braid_tagged)
# Exit: 0 pass, 1 fail, 77 skip (not root, no tshark, no namespaces).
set -uo pipefail
prog=$1
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${BRAID_TSHARK_NETNS:-}" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: needs root (a network namespace and a capture on its loopback)"
		exit 77
	fi
	for t in tshark unshare ip python3; do
		if ! command -v $t >/dev/null; then
			echo "SKIP: $t not found (tools/setup.sh installs tshark)"
			exit 77
		fi
	done
	if ! unshare -n true 2>/dev/null; then
		echo "SKIP: cannot create a network namespace here (unshare -n failed)"
		exit 77
	fi
	# the namespace goes away with this process: nothing to clean up outside
	exec unshare -n env BRAID_TSHARK_NETNS=1 "$0" "$@"
fi

ip link set lo up
ip addr add 127.0.0.2/8 dev lo
tmp=$(mktemp -d)
trap 'kill $cap 2>/dev/null; rm -rf "$tmp"' EXIT

tshark -q -B 64 -i lo -f "udp port 4791" -w "$tmp/rc.pcap" 2>"$tmp/tshark.err" &
cap=$!
for _ in $(seq 100); do
	grep -q "Capturing on" "$tmp/tshark.err" 2>/dev/null && break
	sleep 0.1
done
if ! grep -q "Capturing on" "$tmp/tshark.err"; then
	echo "SKIP: tshark cannot capture here:"; cat "$tmp/tshark.err"
	exit 77
fi

# ping-pong: eager SENDs (1 B; 5000 B: FIRST and LAST) and 300 KB messages, past rxm's
# 128 KiB eager limit, so RDMA READ rendezvous; few enough packets that the capture
# keeps every one (the PSN check needs them all)
args=(-p "braid;ofi_rxm" -x -e rdm -S 1,5000,300000 -I 10)
export FI_OFI_RXM_ENABLE_DYN_RBUF=0
timeout 60 "$prog" "${args[@]}" -s 127.0.0.1 -B 9228 >"$tmp/server.out" 2>&1 &
srv=$!
sleep 0.5
timeout 60 "$prog" "${args[@]}" -s 127.0.0.2 -P 9228 127.0.0.1 >"$tmp/client.out" 2>&1
crc=$?
wait $srv
src=$?
sleep 0.5
kill -INT $cap
wait $cap 2>/dev/null
if grep -q "dropped" "$tmp/tshark.err" && ! grep -q "0 packets dropped" "$tmp/tshark.err"; then
	echo "tshark_rc: the capture lost packets:"; cat "$tmp/tshark.err"
fi
sed 's/^/server: /' "$tmp/server.out"
sed 's/^/client: /' "$tmp/client.out"
if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
	echo "tshark_rc: FAIL: the transfer failed (client $crc, server $src)"
	exit 1
fi

heur=()
for h in eth_over_ib fc_infiniband iser_infiniband lnet_ib rpcrdma_infiniband sdp_infiniband \
	 smb_direct_infiniband smcr_infiniband nvme_rdma mellanox_eoib; do
	heur+=(--disable-heuristic "$h")
done
tshark -r "$tmp/rc.pcap" -X "lua_script:$here/roce_icrc.lua" "${heur[@]}" \
	-T fields -E separator=/t -E occurrence=f \
	-e frame.number -e ip.dst -e udp.dstport -e infiniband.bth.opcode -e infiniband.bth.psn \
	-e infiniband.bth.destqp -e infiniband.reth.dmalen -e roce_icrc.status \
	-e _ws.malformed -e _ws.expert.severity >"$tmp/fields.tsv" 2>"$tmp/decode.err"
if [ -s "$tmp/decode.err" ]; then
	echo "tshark_rc: tshark said:"; cat "$tmp/decode.err"
fi
python3 "$here/check_capture.py" "$tmp/fields.tsv"
