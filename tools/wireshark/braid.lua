-- SPDX-License-Identifier: BSD-2-Clause
-- braid.lua: a Wireshark/tshark dissector (Lua, Wireshark 3.6 and 4.x) for
-- braid's own packets, as docs/protocol.md specifies them: the common header
-- (§2), DGRAM (§3), RD_DATA (§4.2), RD_ACK (§4.3), RD_CTS (§4.6), RD_RMA (§4.7), RD_CHALLENGE (§4.9),
-- RD_BUNDLE (§4.8, every record dissected as a braid packet of its own) and CM
-- (§6.2). Its checks are those of core/braid_hdr.c (the validating decoders):
-- a packet braid would drop gets an expert error naming braid's drop reason
-- (short, bad_magic, bad_version, bad_type, bad_hdr_len, bad_flags, bad_len,
-- stale_epoch, bad_bundle, bad_auth); nothing is read beyond the captured bytes.
-- A keyed datagram (§2.4: version 2, an 8-byte tag after its first header) shows
-- its tag (unchecked: the dissector has no key) and then the version-1 packet it
-- carries, dissected from a copy with the tag taken out.
--
-- braid runs on ephemeral UDP ports, so the dissector is a heuristic one on
-- UDP (magic 0xBD, version 1 or 2, a known type, at least the 8-byte common
-- header), and it is offered for "Decode As" (udp.port). RoCEv2 (UDP 4791,
-- protocol.md §5) is not braid's header: Wireshark's own InfiniBand
-- dissector takes it, and the heuristic leaves that port alone.
--
--   tshark -X lua_script:tools/wireshark/braid.lua -r capture.pcap -Y braid
--   (or copy it to ~/.local/lib/wireshark/plugins/; docs/wireshark.md)
-- Where a registered UDP port dissector could claim an ephemeral port first,
-- add -o udp.try_heuristic_first:TRUE.

local braid = Proto("braid", "braid")

local TYPE = { DGRAM = 1, RD_DATA = 2, RD_ACK = 3, RD_CTS = 4, CM = 5, RD_RMA = 6, RD_BUNDLE = 7,
	RD_CHALLENGE = 8 }
local type_names = {
	[1] = "DGRAM", [2] = "RD_DATA", [3] = "RD_ACK", [4] = "RD_CTS", [5] = "CM",
	[6] = "RD_RMA", [7] = "RD_BUNDLE", [8] = "RD_CHALLENGE",
}
-- §2.2: the exact header length and the defined flags of each type (braid_hdr.c type_info)
local HDR_LEN = { [1] = 16, [2] = 56, [3] = 72, [4] = 24, [5] = 40, [6] = 80, [7] = 8, [8] = 24 }
local FLAGS = { [1] = 0x01, [2] = 0xff, [3] = 0x01, [4] = 0x00, [5] = 0x00, [6] = 0x5d, [7] = 0x00,
	[8] = 0x03 }
local MAGIC, VERSION, VERSION_KEYED, TAG_LEN = 0xbd, 1, 2, 8
local BUNDLE_MAX = 64
local SACK_BITS = 256
local CM_DATA_MAX = 256

local rma_ops = { [1] = "WRITE", [2] = "READ_REQ", [3] = "ATOMIC_REQ", [4] = "RESP", [5] = "FETCH_REQ" }
local rma_status = { [0] = "OK", [1] = "ACCESS", [2] = "INVALID" }
local cm_kinds = { [1] = "REQ", [2] = "REP", [3] = "RTU", [4] = "REJ", [5] = "DREQ", [6] = "DREP" }
local set_unset = { "Set", "Not set" }

local f = {
	-- §2.1 common header
	magic = ProtoField.uint8("braid.magic", "Magic", base.HEX),
	version = ProtoField.uint8("braid.version", "Version", base.DEC),
	type = ProtoField.uint8("braid.type", "Type", base.DEC, type_names),
	flags = ProtoField.uint8("braid.flags", "Flags", base.HEX),
	src_port = ProtoField.uint16("braid.src_port", "Source home port", base.DEC),
	hdr_len = ProtoField.uint16("braid.hdr_len", "Header length", base.DEC),
	payload_len = ProtoField.uint32("braid.payload_len", "Payload length", base.DEC),
	-- §2.4 keyed datagrams
	auth_tag = ProtoField.bytes("braid.auth_tag", "Job tag (SipHash-2-4; not checked here: no key)"),
	-- §3 DGRAM
	dgram_f_cq_data = ProtoField.bool("braid.dgram.flags.cq_data", "CQ_DATA", 8, set_unset, 0x01),
	dgram_cq_data = ProtoField.uint64("braid.dgram.cq_data", "CQ data", base.HEX),
	-- §4.2 RD_DATA (and the first 56 bytes of RD_RMA); epochs of every RD type
	rd_f_cq_data = ProtoField.bool("braid.rd.flags.cq_data", "CQ_DATA", 8, set_unset, 0x01),
	rd_f_tagged = ProtoField.bool("braid.rd.flags.tagged", "TAGGED", 8, set_unset, 0x02),
	rd_f_ack = ProtoField.bool("braid.rd.flags.ack", "ACK (ack_psn valid)", 8, set_unset, 0x04),
	rd_f_retx = ProtoField.bool("braid.rd.flags.retx", "RETX (retransmission)", 8, set_unset, 0x08),
	rd_f_rdv = ProtoField.bool("braid.rd.flags.rdv", "RDV (rendezvous)", 8, set_unset, 0x10),
	rd_f_dc = ProtoField.bool("braid.rd.flags.dc", "DC (delivery complete)", 8, set_unset, 0x20),
	rd_f_lent = ProtoField.bool("braid.rd.flags.lent", "LENT (payload read when delivered)", 8, set_unset, 0x40),
	rd_f_bad = ProtoField.bool("braid.rd.flags.bad", "BAD (the sender could not read the bytes: the receive fails)", 8, set_unset, 0x80),
	src_epoch = ProtoField.uint32("braid.rd.src_epoch", "Source epoch", base.HEX),
	dst_epoch = ProtoField.uint32("braid.rd.dst_epoch", "Destination epoch", base.HEX),
	psn = ProtoField.uint32("braid.rd.psn", "PSN", base.DEC),
	ack_psn = ProtoField.uint32("braid.rd.ack_psn", "Piggybacked ACK PSN", base.DEC),
	msg_id = ProtoField.uint32("braid.rd.msg_id", "Message id", base.DEC),
	offset = ProtoField.uint32("braid.rd.offset", "Offset", base.DEC),
	msg_len = ProtoField.uint32("braid.rd.msg_len", "Message length", base.DEC),
	tx_time = ProtoField.uint32("braid.rd.tx_time", "Transmit time (us)", base.DEC),
	tag = ProtoField.uint64("braid.rd.tag", "Tag", base.HEX),
	rd_cq_data = ProtoField.uint64("braid.rd.cq_data", "CQ data", base.HEX),
	-- §4.7 RD_RMA
	rma_op = ProtoField.uint8("braid.rma.op", "Operation", base.DEC, rma_ops),
	rma_aop = ProtoField.uint8("braid.rma.aop", "Atomic op (enum fi_op)", base.DEC),
	rma_dt = ProtoField.uint8("braid.rma.dt", "Datatype (enum fi_datatype)", base.DEC),
	rma_status = ProtoField.uint8("braid.rma.status", "Status", base.DEC, rma_status),
	rma_ref = ProtoField.uint32("braid.rma.ref", "Ref", base.DEC),
	rma_rkey = ProtoField.uint64("braid.rma.rkey", "Remote key", base.HEX),
	rma_raddr = ProtoField.uint64("braid.rma.raddr", "Remote address", base.HEX),
	-- §4.3 RD_ACK
	ack_f_ecn_ce = ProtoField.bool("braid.ack.flags.ecn_ce", "ECN_CE", 8, set_unset, 0x01),
	cum_psn = ProtoField.uint32("braid.ack.cum_psn", "Cumulative PSN", base.DEC),
	echo_psn = ProtoField.uint32("braid.ack.echo_psn", "Echoed PSN", base.DEC),
	echo_time = ProtoField.uint32("braid.ack.echo_time", "Echoed transmit time (us)", base.DEC),
	rwnd = ProtoField.uint32("braid.ack.rwnd", "Receive window (packets)", base.DEC),
	dups = ProtoField.uint32("braid.ack.dups", "Duplicates received", base.DEC),
	ack_hold_us = ProtoField.uint32("braid.ack.hold_us", "Hold (us)", base.DEC),
	sack = ProtoField.bytes("braid.ack.sack", "SACK bitmap"),
	sack_count = ProtoField.uint32("braid.ack.sack.count", "PSNs selectively acknowledged", base.DEC),
	sack_blocks = ProtoField.uint32("braid.ack.sack.blocks", "SACK blocks", base.DEC),
	sack_left = ProtoField.uint32("braid.ack.sack.left", "First PSN", base.DEC),
	sack_right = ProtoField.uint32("braid.ack.sack.right", "Last PSN", base.DEC),
	sack_psn = ProtoField.uint32("braid.ack.sack.psn", "PSN", base.DEC),
	-- §4.6 RD_CTS
	cts_msg_id = ProtoField.uint32("braid.cts.msg_id", "Message id", base.DEC),
	cts_reserved = ProtoField.uint32("braid.cts.reserved", "Reserved", base.HEX),
	-- §4.9 RD_CHALLENGE
	chal_f_response = ProtoField.bool("braid.chal.flags.response", "RESPONSE", 8, set_unset, 0x01),
	chal_f_forget = ProtoField.bool("braid.chal.flags.forget", "FORGET", 8, set_unset, 0x02),
	chal_cookie = ProtoField.uint32("braid.chal.cookie", "Cookie", base.HEX),
	chal_reserved = ProtoField.uint32("braid.chal.reserved", "Confirm (FORGET answer) or reserved", base.HEX),
	-- §4.8 RD_BUNDLE
	bundle_records = ProtoField.uint32("braid.bundle.records", "Records", base.DEC),
	bundle_len = ProtoField.uint16("braid.bundle.len", "Record length", base.DEC),
	-- §6.2 CM
	cm_kind = ProtoField.uint8("braid.cm.kind", "Kind", base.DEC, cm_kinds),
	cm_flags = ProtoField.uint8("braid.cm.flags", "Flags (0x01: tagged SENDs, §5.10)", base.HEX),
	cm_pdata_len = ProtoField.uint16("braid.cm.pdata_len", "Private data length", base.DEC),
	cm_status = ProtoField.uint32("braid.cm.status", "Status (FI_E*)", base.DEC),
	cm_conn_id = ProtoField.uint64("braid.cm.conn_id", "Connection id", base.HEX),
	cm_qpn = ProtoField.uint32("braid.cm.qpn", "QP number", base.HEX),
	cm_psn = ProtoField.uint32("braid.cm.psn", "First PSN", base.DEC),
	cm_mtu = ProtoField.uint32("braid.cm.mtu", "MTU", base.DEC),
	cm_rc_port = ProtoField.uint16("braid.cm.rc_port", "RoCEv2 receive port", base.DEC),
	cm_reserved2 = ProtoField.uint16("braid.cm.reserved2", "Reserved", base.HEX),
	cm_pdata = ProtoField.bytes("braid.cm.pdata", "Private data"),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
braid.fields = fl

local function E(name, text, group, sev)
	return ProtoExpert.new("braid." .. name, text, group, sev)
end
local ex = {
	short = E("short", "Shorter than its headers (braid drops it: short)", expert.group.MALFORMED, expert.severity.ERROR),
	bad_magic = E("bad_magic", "Not braid's magic 0xBD (bad_magic)", expert.group.MALFORMED, expert.severity.ERROR),
	bad_version = E("bad_version", "Protocol version not 1 (bad_version)", expert.group.PROTOCOL, expert.severity.ERROR),
	bad_type = E("bad_type", "Unknown or misplaced packet type (bad_type)", expert.group.PROTOCOL, expert.severity.ERROR),
	bad_hdr_len = E("bad_hdr_len", "hdr_len is not the header length of this type (bad_hdr_len)", expert.group.MALFORMED, expert.severity.ERROR),
	bad_flags = E("bad_flags", "Flags undefined for this type (bad_flags)", expert.group.PROTOCOL, expert.severity.ERROR),
	bad_len = E("bad_len", "Lengths or fields disagree (braid drops it: bad_len)", expert.group.MALFORMED, expert.severity.ERROR),
	stale_epoch = E("stale_epoch", "Epoch 0 where braid needs one (stale_epoch)", expert.group.PROTOCOL, expert.severity.ERROR),
	bad_auth = E("bad_auth", "Keyed (version 2) where braid takes version 1 only: a bundle's record (bad_auth)", expert.group.PROTOCOL, expert.severity.ERROR),
	keyed = E("keyed", "Keyed datagram (protocol.md 2.4): the tag is shown, not checked", expert.group.SECURITY, expert.severity.CHAT),
	bad_bundle = E("bad_bundle", "Bundle framing broken (braid drops the whole bundle: bad_bundle)", expert.group.MALFORMED, expert.severity.ERROR),
	truncated = E("truncated", "Packet cut short by the capture (snaplen)", expert.group.UNDECODED, expert.severity.NOTE),
	retx = E("retx", "Retransmission", expert.group.SEQUENCE, expert.severity.NOTE),
	probe = E("probe", "Keepalive probe (RETX + RDV, no payload)", expert.group.SEQUENCE, expert.severity.NOTE),
	zero_window = E("zero_window", "Zero window (rwnd 0)", expert.group.SEQUENCE, expert.severity.NOTE),
	ecn_ce = E("ecn_ce", "Echoed packet arrived CE-marked", expert.group.SEQUENCE, expert.severity.CHAT),
}
local el = {}
for _, v in pairs(ex) do el[#el + 1] = v end
braid.experts = el

local data_dissector = Dissector.get("data")

-- a field of @size bytes at @off of @tvb, when the capture holds it; else nil
local function add(tree, field, tvb, off, size)
	if off + size > tvb:len() then return nil end
	return tree:add(field, tvb(off, size))
end
local function u8(tvb, off) return tvb(off, 1):uint() end
local function u16(tvb, off) return tvb(off, 2):uint() end
local function u32(tvb, off) return tvb(off, 4):uint() end

local function add_payload(tvb, pinfo, tree, off, rlen)
	tree:add(f.payload_len, rlen - off):set_generated()
	if off < tvb:len() then
		data_dissector:call(tvb(off):tvb(), pinfo, tree)
	end
end

-- RD_DATA / RD_RMA (§4.2, §4.7): returns the Info summary
local function dissect_rd_data(tvb, pinfo, tree, ptype, flags, rlen)
	local hl = HDR_LEN[ptype]
	tree:add(f.src_epoch, tvb(8, 4))
	tree:add(f.dst_epoch, tvb(12, 4))
	tree:add(f.psn, tvb(16, 4))
	tree:add(f.ack_psn, tvb(20, 4))
	tree:add(f.msg_id, tvb(24, 4))
	tree:add(f.offset, tvb(28, 4))
	tree:add(f.msg_len, tvb(32, 4))
	tree:add(f.tx_time, tvb(36, 4))
	tree:add(f.tag, tvb(40, 8))
	tree:add(f.rd_cq_data, tvb(48, 8))
	local src_epoch, psn, msg_id = u32(tvb, 8), u32(tvb, 16), u32(tvb, 24)
	local offset, msg_len = u32(tvb, 28), u32(tvb, 32)
	local tag = tvb(40, 8):uint64()
	local plen = rlen - hl
	local s = string.format("%s psn=%u msg=%u off=%u/%u len=%d", type_names[ptype], psn, msg_id,
		offset, msg_len, plen)
	if ptype == TYPE.RD_RMA then
		local rt = tree:add(braid, tvb(56, 24), "RMA fields")
		rt:add(f.rma_op, tvb(56, 1))
		rt:add(f.rma_aop, tvb(57, 1))
		rt:add(f.rma_dt, tvb(58, 1))
		rt:add(f.rma_status, tvb(59, 1))
		rt:add(f.rma_ref, tvb(60, 4))
		rt:add(f.rma_rkey, tvb(64, 8))
		rt:add(f.rma_raddr, tvb(72, 8))
		local op, aop, dt, st, ref = u8(tvb, 56), u8(tvb, 57), u8(tvb, 58), u8(tvb, 59), u32(tvb, 60)
		local rkey, raddr = tvb(64, 8):uint64(), tvb(72, 8):uint64()
		s = s .. " " .. (rma_ops[op] or ("op " .. op))
		if op == 4 then s = s .. string.format(" ref=%u %s", ref, rma_status[st] or tostring(st)) end
		-- braid_hdr.c rma_fields_check
		local why
		if op == 0 or op > 5 then why = "op outside 1..5"
		elseif tag ~= UInt64(0) then why = "tag not 0"
		elseif op == 4 and (st > 2 or rkey ~= UInt64(0) or raddr ~= UInt64(0)) then why = "RESP with a bad status or a key"
		elseif op ~= 4 and st ~= 0 then why = "status on a request"
		elseif op ~= 3 and op ~= 5 and (aop ~= 0 or dt ~= 0) then why = "aop/dt on a non-atomic op"
		elseif op == 1 and ref ~= 0 then why = "WRITE with ref not 0"
		elseif op == 2 and msg_len ~= 0 then why = "READ_REQ with msg_len not 0"
		end
		if why then
			rt:add_proto_expert_info(ex.bad_len, "RD_RMA fields disagree with the op: " .. why .. " (bad_len)")
		elseif op ~= 1 and bit32.band(flags, 0x01) ~= 0 then
			rt:add_proto_expert_info(ex.bad_flags, "CQ_DATA on an RD_RMA op other than WRITE (bad_flags)")
		end
	end
	if bit32.band(flags, 0x08) ~= 0 then
		if bit32.band(flags, 0x10) ~= 0 and plen == 0 then
			tree:add_proto_expert_info(ex.probe)
			s = s .. " [probe]"
		else
			tree:add_proto_expert_info(ex.retx)
			s = s .. " [RETX]"
		end
	elseif bit32.band(flags, 0x10) ~= 0 then
		s = s .. " [RDV]"
	end
	if bit32.band(flags, 0x04) ~= 0 then s = s .. string.format(" ack=%u", u32(tvb, 20)) end
	-- §4.2 rule 1 (64-bit sum in C: no wrap here either, Lua numbers are doubles)
	if offset + plen > msg_len then
		tree:add_proto_expert_info(ex.bad_len,
			string.format("offset %u + payload %d > msg_len %u (bad_len)", offset, plen, msg_len))
	end
	if src_epoch == 0 then tree:add_proto_expert_info(ex.stale_epoch, "src_epoch 0 (stale_epoch)") end
	add_payload(tvb, pinfo, tree, hl, rlen)
	return s
end

-- RD_ACK (§4.3)
local function dissect_rd_ack(tvb, pinfo, tree, flags, rlen)
	tree:add(f.src_epoch, tvb(8, 4))
	tree:add(f.dst_epoch, tvb(12, 4))
	tree:add(f.cum_psn, tvb(16, 4))
	tree:add(f.echo_psn, tvb(20, 4))
	tree:add(f.echo_time, tvb(24, 4))
	local rw = tree:add(f.rwnd, tvb(28, 4))
	tree:add(f.dups, tvb(32, 4))
	tree:add(f.ack_hold_us, tvb(36, 4))
	local cum, rwnd = u32(tvb, 16), u32(tvb, 28)
	local st = tree:add(f.sack, tvb(40, 32))
	-- bit i (byte i/8, bit i%8, LSB first): PSN cum_psn + 1 + i arrived
	local count, blocks, start = 0, {}, nil
	local bits = { tvb:raw(40, 32):byte(1, 32) }
	bits[33] = 0	-- closes a block that reaches the last bit
	for byte = 0, 32 do
		local v = bits[byte + 1]
		if v == 0 and not start then
			-- a byte of no bits, nothing open (the usual case)
		elseif v == 0xff and start then
			count = count + 8
		else
			for b = 0, 7 do
				local i = byte * 8 + b
				if byte < 32 and bit32.band(v, bit32.lshift(1, b)) ~= 0 then
					count = count + 1
					if not start then start = i end
				elseif start then
					blocks[#blocks + 1] = { start, i - 1 }
					start = nil
				end
			end
		end
	end
	st:add(f.sack_count, count):set_generated()
	st:add(f.sack_blocks, #blocks):set_generated()
	local desc = {}
	for _, b in ipairs(blocks) do
		local l = (cum + 1 + b[1]) % 4294967296
		local r = (cum + 1 + b[2]) % 4294967296
		local bt = st:add(braid, tvb(40 + math.floor(b[1] / 8), math.floor(b[2] / 8) - math.floor(b[1] / 8) + 1),
			string.format("SACK block: PSN %u-%u (%d)", l, r, b[2] - b[1] + 1))
		bt:add(f.sack_left, l):set_generated()
		bt:add(f.sack_right, r):set_generated()
		for i = b[1], b[2] do
			bt:add(f.sack_psn, tvb(40 + math.floor(i / 8), 1), (cum + 1 + i) % 4294967296):set_generated()
		end
		desc[#desc + 1] = (l == r) and tostring(l) or string.format("%u-%u", l, r)
	end
	local s = string.format("RD_ACK cum=%u echo=%u rwnd=%u", cum, u32(tvb, 20), rwnd)
	if #desc > 0 then s = s .. " sack=" .. table.concat(desc, ",") end
	if rwnd == 0 then rw:add_proto_expert_info(ex.zero_window); s = s .. " [ZeroWindow]" end
	if bit32.band(flags, 0x01) ~= 0 then tree:add_proto_expert_info(ex.ecn_ce); s = s .. " [CE]" end
	if rlen ~= 72 then
		tree:add_proto_expert_info(ex.bad_len, string.format("RD_ACK of %d bytes, not 72 (bad_len)", rlen))
	end
	if u32(tvb, 8) == 0 or u32(tvb, 12) == 0 then
		tree:add_proto_expert_info(ex.stale_epoch, "src_epoch or dst_epoch 0 (stale_epoch)")
	end
	return s
end

-- RD_CTS (§4.6) and RD_CHALLENGE (§4.9) share a layout: the two epochs, a
-- 32-bit value (a message id, a cookie), reserved
local function dissect_short(tvb, tree, rlen, name, value_field, reserved_field)
	tree:add(f.src_epoch, tvb(8, 4))
	tree:add(f.dst_epoch, tvb(12, 4))
	tree:add(value_field, tvb(16, 4))
	tree:add(reserved_field, tvb(20, 4))
	if rlen ~= 24 then
		tree:add_proto_expert_info(ex.bad_len, string.format("%s of %d bytes, not 24 (bad_len)", name, rlen))
	end
	if u32(tvb, 8) == 0 or u32(tvb, 12) == 0 then
		tree:add_proto_expert_info(ex.stale_epoch, "src_epoch or dst_epoch 0 (stale_epoch)")
	end
end

local function dissect_rd_cts(tvb, pinfo, tree, rlen)
	dissect_short(tvb, tree, rlen, "RD_CTS", f.cts_msg_id, f.cts_reserved)
	return string.format("RD_CTS msg=%u", u32(tvb, 16))
end

local function dissect_rd_chal(tvb, pinfo, tree, flags, rlen)
	dissect_short(tvb, tree, rlen, "RD_CHALLENGE", f.chal_cookie, f.chal_reserved)
	return string.format("RD_CHALLENGE%s%s epoch=%u cookie=0x%08x",
		bit32.band(flags, 0x02) ~= 0 and " FORGET" or "",
		bit32.band(flags, 0x01) ~= 0 and " RESPONSE" or "", u32(tvb, 12), u32(tvb, 16))
end

-- CM (§6.2)
local function dissect_cm(tvb, pinfo, tree, rlen)
	local kt = tree:add(f.cm_kind, tvb(8, 1))
	tree:add(f.cm_flags, tvb(9, 1))
	local pt = tree:add(f.cm_pdata_len, tvb(10, 2))
	tree:add(f.cm_status, tvb(12, 4))
	tree:add(f.cm_conn_id, tvb(16, 8))
	tree:add(f.cm_qpn, tvb(24, 4))
	tree:add(f.cm_psn, tvb(28, 4))
	tree:add(f.cm_mtu, tvb(32, 4))
	tree:add(f.cm_rc_port, tvb(36, 2))
	tree:add(f.cm_reserved2, tvb(38, 2))
	local kind, pdl, status = u8(tvb, 8), u16(tvb, 10), u32(tvb, 12)
	local qpn, psn, mtu, rc_port = u32(tvb, 24), u32(tvb, 28), u32(tvb, 32), u16(tvb, 36)
	if pdl > 0 and 40 < tvb:len() then
		tree:add(f.cm_pdata, tvb(40, math.min(pdl, tvb:len() - 40)))
	end
	local s = "CM " .. (cm_kinds[kind] or ("kind " .. kind)) .. string.format(" conn=%s", tostring(tvb(16, 8):uint64():tohex()))
	if kind == 4 then s = s .. string.format(" status=%u", status) end
	if kind == 1 or kind == 2 then s = s .. string.format(" qpn=0x%x psn=%u mtu=%u rc_port=%u", qpn, psn, mtu, rc_port) end
	-- braid_hdr.c braid_cm_decode
	if kind == 0 or kind > 6 then
		kt:add_proto_expert_info(ex.bad_type, "CM kind outside 1..6 (bad_type)")
	elseif pdl > CM_DATA_MAX or 40 + pdl ~= rlen then
		pt:add_proto_expert_info(ex.bad_len,
			string.format("pdata_len %u: the packet is %d bytes, not 40 + pdata_len (<= 256) (bad_len)", pdl, rlen))
	elseif qpn > 0xffffff or psn > 0xffffff then
		tree:add_proto_expert_info(ex.bad_len, "qpn or psn beyond 24 bits (bad_len)")
	elseif (kind == 1 or kind == 2) and ((mtu ~= 256 and mtu ~= 512 and mtu ~= 1024 and mtu ~= 2048 and mtu ~= 4096)
		or rc_port == 0) then
		tree:add_proto_expert_info(ex.bad_len, "REQ/REP with an MTU not an IB MTU, or rc_port 0 (bad_len)")
	end
	return s
end

local dissect_packet

-- RD_BUNDLE (§4.8): the framing check of braid_rd_bundle_check, then every record
local function dissect_bundle(tvb, pinfo, tree, rlen, depth)
	local n = tvb:len()
	local off, count, bad = 8, 0, nil
	local sp = (n >= 6) and u16(tvb, 4) or nil
	local parts = {}
	while off < rlen do
		if off + 2 > rlen then
			bad = bad or string.format("%d trailing byte(s) at %d, no room for a record length", rlen - off, off)
			break
		end
		if off + 2 > n then
			tree:add_proto_expert_info(ex.truncated)
			break
		end
		local len = u16(tvb, off)
		count = count + 1
		if count > BUNDLE_MAX then bad = bad or string.format("more than %d records", BUNDLE_MAX) end
		if off + 2 + len > rlen then
			tree:add(f.bundle_len, tvb(off, 2))
			bad = bad or string.format("record %d of %d bytes at %d runs past the datagram's end", count, len, off)
			break
		end
		local rec_tree = tree:add(braid, tvb(off, math.min(2 + len, n - off)),
			string.format("Record %d (%d bytes)", count, len))
		rec_tree:add(f.bundle_len, tvb(off, 2))
		if len < 8 then
			bad = bad or string.format("record %d of %d bytes, under 8", count, len)
		elseif off + 2 + 8 <= n then
			local rtype, rport = u8(tvb, off + 4), u16(tvb, off + 6)
			if rtype ~= TYPE.RD_DATA and rtype ~= TYPE.RD_ACK and rtype ~= TYPE.RD_CTS and rtype ~= TYPE.RD_RMA then
				bad = bad or string.format("record %d of type %d: a bundle carries RD_DATA, RD_ACK, RD_CTS and RD_RMA only",
					count, rtype)
			elseif rport ~= sp then
				bad = bad or string.format("record %d from port %d, the bundle from %d", count, rport, sp)
			end
		end
		if len > 0 and off + 2 < n and depth == 0 then
			-- a record is a packet of its own: its reported length is len, its captured
			-- bytes what the capture holds of it
			local rtvb = tvb(off + 2, math.min(len, n - off - 2)):tvb()
			parts[#parts + 1] = dissect_packet(rtvb, pinfo, rec_tree, len, depth + 1)
		end
		off = off + 2 + len
	end
	if count == 0 and not bad then bad = "no record" end
	tree:add(f.bundle_records, count):set_generated()
	if bad then
		tree:add_proto_expert_info(ex.bad_bundle, "Bundle framing broken: " .. bad .. " (bad_bundle)")
	end
	return string.format("RD_BUNDLE(%d) [%s]", count, table.concat(parts, "; "))
end

local dissect_one

-- A keyed datagram (§2.4): its first header (version 2, hdr_len with the tag), the tag,
-- then the version-1 packet it carries (a copy without the tag, a data source of its own)
local function dissect_keyed(tvb, pinfo, tree, rlen, ptype, hi)
	local hl, name = HDR_LEN[ptype], type_names[ptype]
	if u16(tvb, 6) ~= hl + TAG_LEN then
		hi:add_proto_expert_info(ex.bad_hdr_len, string.format(
			"hdr_len %d: a keyed %s header and its tag are %d bytes (bad_hdr_len)", u16(tvb, 6), name, hl + TAG_LEN))
		return name .. " [keyed, bad hdr_len]"
	end
	if rlen < hl + TAG_LEN then
		tree:add_proto_expert_info(ex.short,
			string.format("%d bytes: under the keyed %s header and tag, %d (short)", rlen, name, hl + TAG_LEN))
		return name .. " [keyed, short]"
	end
	if tvb:len() < hl + TAG_LEN then
		tree:add_proto_expert_info(ex.truncated)
		return name .. " [keyed, truncated]"
	end
	tree:add(f.auth_tag, tvb(hl, TAG_LEN))
	tree:add_proto_expert_info(ex.keyed)
	local ba = tvb:bytes(0, hl)
	ba:set_index(1, VERSION)
	ba:set_index(6, math.floor(hl / 256))
	ba:set_index(7, hl % 256)
	if tvb:len() > hl + TAG_LEN then ba = ba .. tvb:bytes(hl + TAG_LEN) end
	local inner = ba:tvb("braid, tag taken out")
	local it = tree:add(braid, inner(0, inner:len()), "The version-1 packet it carries")
	return "[keyed] " .. dissect_one(inner, pinfo, it, rlen - TAG_LEN, 0)
end

-- One braid packet in @tvb (captured bytes), @rlen its real length, under @parent.
-- Returns a one-line summary for the Info column.
dissect_one = function(tvb, pinfo, tree, rlen, depth)
	local n = tvb:len()
	if rlen < 8 then
		tree:add_proto_expert_info(ex.short, string.format("%d bytes: under the 8-byte common header (short)", rlen))
		return "short packet"
	end
	if n < 8 then
		tree:add_proto_expert_info(ex.truncated)
		return "truncated"
	end
	local mi = tree:add(f.magic, tvb(0, 1))
	local vi = tree:add(f.version, tvb(1, 1))
	local ti = tree:add(f.type, tvb(2, 1))
	local fi = tree:add(f.flags, tvb(3, 1))
	tree:add(f.src_port, tvb(4, 2))
	local hi = tree:add(f.hdr_len, tvb(6, 2))
	local magic, version, ptype, flags, hdr_len = u8(tvb, 0), u8(tvb, 1), u8(tvb, 2), u8(tvb, 3), u16(tvb, 6)
	local name = type_names[ptype] or ("type " .. ptype)
	-- §2.3, in order; the first failure is the drop reason
	if magic ~= MAGIC then
		mi:add_proto_expert_info(ex.bad_magic)
		return "not braid (magic)"
	end
	if version == VERSION_KEYED and depth == 0 and HDR_LEN[ptype] then
		return dissect_keyed(tvb, pinfo, tree, rlen, ptype, hi)
	elseif version == VERSION_KEYED then
		vi:add_proto_expert_info(ex.bad_auth)
		return name .. " [keyed record]"
	end
	if version ~= VERSION then
		vi:add_proto_expert_info(ex.bad_version)
		return "braid version " .. version
	end
	if not HDR_LEN[ptype] then
		ti:add_proto_expert_info(ex.bad_type)
		return name
	end
	-- flags, decoded for the type
	if ptype == TYPE.DGRAM then
		fi:add(f.dgram_f_cq_data, tvb(3, 1))
	elseif ptype == TYPE.RD_DATA or ptype == TYPE.RD_RMA then
		fi:add(f.rd_f_cq_data, tvb(3, 1))
		if ptype == TYPE.RD_DATA then fi:add(f.rd_f_tagged, tvb(3, 1)) end
		fi:add(f.rd_f_ack, tvb(3, 1))
		fi:add(f.rd_f_retx, tvb(3, 1))
		fi:add(f.rd_f_rdv, tvb(3, 1))
		if ptype == TYPE.RD_DATA then fi:add(f.rd_f_dc, tvb(3, 1)) end
		fi:add(f.rd_f_lent, tvb(3, 1))
		if ptype == TYPE.RD_DATA then fi:add(f.rd_f_bad, tvb(3, 1)) end
	elseif ptype == TYPE.RD_ACK then
		fi:add(f.ack_f_ecn_ce, tvb(3, 1))
	elseif ptype == TYPE.RD_CHALLENGE then
		fi:add(f.chal_f_response, tvb(3, 1))
		fi:add(f.chal_f_forget, tvb(3, 1))
	end
	local hl = HDR_LEN[ptype]
	if hdr_len ~= hl then
		hi:add_proto_expert_info(ex.bad_hdr_len,
			string.format("hdr_len %d: %s headers are %d bytes (bad_hdr_len)", hdr_len, name, hl))
		return name .. " [bad hdr_len]"
	end
	if rlen < hl then
		tree:add_proto_expert_info(ex.short,
			string.format("%d bytes: under the %d-byte %s header (short)", rlen, hl, name))
		return name .. " [short]"
	end
	if bit32.band(flags, bit32.bnot(FLAGS[ptype])) ~= 0 then
		fi:add_proto_expert_info(ex.bad_flags,
			string.format("flags 0x%02x: undefined bits 0x%02x for %s (bad_flags)", flags,
				bit32.band(flags, bit32.bnot(FLAGS[ptype])), name))
	end
	if n < hl then
		tree:add_proto_expert_info(ex.truncated)
		return name .. " [truncated]"
	end
	local s
	if ptype == TYPE.DGRAM then
		tree:add(f.dgram_cq_data, tvb(8, 8))
		s = string.format("DGRAM len=%d", rlen - 16)
		if bit32.band(flags, 0x01) ~= 0 then s = s .. " cq_data=" .. tvb(8, 8):uint64():tohex() end
		add_payload(tvb, pinfo, tree, 16, rlen)
	elseif ptype == TYPE.RD_DATA or ptype == TYPE.RD_RMA then
		s = dissect_rd_data(tvb, pinfo, tree, ptype, flags, rlen)
	elseif ptype == TYPE.RD_ACK then
		s = dissect_rd_ack(tvb, pinfo, tree, flags, rlen)
	elseif ptype == TYPE.RD_CTS then
		s = dissect_rd_cts(tvb, pinfo, tree, rlen)
	elseif ptype == TYPE.RD_CHALLENGE then
		s = dissect_rd_chal(tvb, pinfo, tree, flags, rlen)
	elseif ptype == TYPE.CM then
		s = dissect_cm(tvb, pinfo, tree, rlen)
	else
		s = dissect_bundle(tvb, pinfo, tree, rlen, depth)
	end
	return s
end

dissect_packet = function(tvb, pinfo, parent, rlen, depth)
	local tree = parent:add(braid, tvb(0, tvb:len()))
	local s = dissect_one(tvb, pinfo, tree, rlen, depth)
	tree:append_text(", " .. s)
	return s
end

function braid.dissector(tvb, pinfo, tree)
	pinfo.cols.protocol = "BRAID"
	local s = dissect_packet(tvb, pinfo, tree, tvb:reported_len(), 0)
	pinfo.cols.info = string.format("%u → %u %s", pinfo.src_port, pinfo.dst_port, s)
	return tvb:len()
end

-- the heuristic: magic, version, a known type and the common header's 8 bytes;
-- never RoCEv2's port (Wireshark's own InfiniBand dissector takes those)
local function heuristic(tvb, pinfo, tree)
	if pinfo.src_port == 4791 or pinfo.dst_port == 4791 then return false end
	if tvb:len() < 8 then return false end
	if u8(tvb, 0) ~= MAGIC or (u8(tvb, 1) ~= VERSION and u8(tvb, 1) ~= VERSION_KEYED) or
		not HDR_LEN[u8(tvb, 2)] then return false end
	braid.dissector(tvb, pinfo, tree)
	return true
end

braid:register_heuristic("udp", heuristic)
DissectorTable.get("udp.port"):add_for_decode_as(braid)
