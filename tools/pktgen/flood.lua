-- Scenario 'flood': pktgen replays the flood mix given with -s 0:FILE at its
-- full rate until the harness creates the file STOP (or MAX_MS passes), then
-- writes how many frames it sent and received. Parameters prepended by the
-- harness: PKTGEN_DIR, OUT, STOP, MAX_MS, SETTLE_MS
package.path = package.path .. ";" .. PKTGEN_DIR .. "/?.lua"
require "Pktgen"

local out = io.open(OUT, "w")
local function emit(line)
  out:write(line .. "\n")
  out:flush()
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

pktgen.pcap("0", "on")
pktgen.set("0", "rate", 100)
local s0 = pktgen.portStats("0", "port")[0]
pktgen.start("0")
emit("flooding")
local ms = 0
while ms < MAX_MS and not exists(STOP) do
  pktgen.delay(100)
  ms = ms + 100
end
pktgen.stop("0")
pktgen.delay(SETTLE_MS)
local s1 = pktgen.portStats("0", "port")[0]
emit(string.format("flood ms=%d tx=%d rx=%d oerrors=%d", ms, s1.opackets - s0.opackets,
                   s1.ipackets - s0.ipackets, (s1.oerrors or 0) - (s0.oerrors or 0)))
emit("done")
out:close()
