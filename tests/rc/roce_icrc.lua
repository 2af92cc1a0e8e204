-- SPDX-License-Identifier: BSD-2-Clause
-- roce_icrc.lua: a tshark postdissector that checks the RoCEv2 ICRC of every
-- Ethernet/IPv4/UDP:4791 frame from the frame's own bytes (IBTA Annex A17;
-- the computation of Linux rxe_icrc.c). Wireshark 4.0 shows the ICRC but
-- never checks it.  Use: tshark -X lua_script:roce_icrc.lua -r f.pcap
--   -T fields -e roce_icrc.status -e roce_icrc.computed -e roce_icrc.wire
local p = Proto("roce_icrc", "RoCEv2 ICRC check")
local f_status = ProtoField.uint8("roce_icrc.status", "ICRC status", base.DEC,
                                  { [0] = "Bad", [1] = "Good" })
local f_computed = ProtoField.uint32("roce_icrc.computed", "Computed ICRC (register)", base.HEX)
local f_wire = ProtoField.uint32("roce_icrc.wire", "ICRC on the wire (register, read LSB first)", base.HEX)
p.fields = { f_status, f_computed, f_wire }
local e_bad = ProtoExpert.new("roce_icrc.bad", "RoCEv2 ICRC incorrect", expert.group.CHECKSUM, expert.severity.ERROR)
p.experts = { e_bad }

local band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
local T = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if band(c, 1) ~= 0 then c = bxor(0xedb88320, rshift(c, 1)) else c = rshift(c, 1) end
  end
  T[i] = c
end
local function upd(c, b) return bxor(T[band(bxor(c, b), 0xff)], rshift(c, 8)) end

function p.dissector(tvb, pinfo, tree)
  local n = tvb:len()
  if n < 14 + 20 + 8 + 16 then return end
  local off = 12
  local et = tvb(off, 2):uint()
  while et == 0x8100 do off = off + 4; et = tvb(off, 2):uint() end
  if et ~= 0x0800 then return end
  local ip = off + 2
  if tvb(ip, 1):uint() ~= 0x45 or tvb(ip + 9, 1):uint() ~= 17 then return end
  local udp = ip + 20
  if tvb(udp + 2, 2):uint() ~= 4791 then return end
  local ulen = tvb(udp + 4, 2):uint()
  local bth = udp + 8
  local last = udp + ulen - 4          -- first ICRC byte
  if ulen < 8 + 12 + 4 or udp + ulen > n then return end
  local c = 0xffffffff
  for _ = 1, 8 do c = upd(c, 0xff) end -- masked LRH
  for i = ip, bth + 11 do
    local b = tvb(i, 1):uint()
    local k = i - ip
    if k == 1 or k == 8 or k == 10 or k == 11 then b = 0xff end      -- TOS, TTL, IP checksum
    if k == 26 or k == 27 then b = 0xff end                          -- UDP checksum
    if i == bth + 4 then b = 0xff end                                -- BTH resv8a
    c = upd(c, b)
  end
  for i = bth + 12, last - 1 do c = upd(c, tvb(i, 1):uint()) end
  c = bxor(c, 0xffffffff)
  local wire = tvb(last, 4):le_uint()
  local t = tree:add(p, tvb(last, 4))
  t:add(f_computed, tvb(last, 4), c)
  t:add(f_wire, tvb(last, 4), wire)
  local st = t:add(f_status, tvb(last, 4), c == wire and 1 or 0)
  if c ~= wire then st:add_proto_expert_info(e_bad) end
end
register_postdissector(p)
