-- Scenario 'throughput' (RFC 2544-style): pktgen replays the pcap given with
-- -s 0:FILE (ICMP echo requests of one frame size, built by pktgen_traffic.py)
-- at each rate in RATES for STEP_MS, and writes per step how many frames it
-- sent and how many came back. The harness prepends the parameters:
--   PKTGEN_DIR, OUT, RATES (percent of the link rate), STEP_MS, SETTLE_MS
package.path = package.path .. ";" .. PKTGEN_DIR .. "/?.lua"
require "Pktgen"

local out = io.open(OUT, "w")
local function emit(line)
  out:write(line .. "\n")
  out:flush()
end

local function stats()
  local s = pktgen.portStats("0", "port")[0]
  return s.opackets, s.ipackets, s.ierrors or 0, s.oerrors or 0, s.imissed or 0
end

pktgen.pcap("0", "on")
local info = pktgen.portInfo("0")
emit("begin")
for _, rate in ipairs(RATES) do
  pktgen.stop("0")
  pktgen.delay(SETTLE_MS)
  pktgen.set("0", "rate", rate)
  local tx0, rx0, ie0, oe0, im0 = stats()
  local t0 = os.clock()
  pktgen.start("0")
  pktgen.delay(STEP_MS)
  pktgen.stop("0")
  -- Replies still in flight come in while the port is stopped.
  pktgen.delay(SETTLE_MS)
  local tx1, rx1, ie1, oe1, im1 = stats()
  emit(string.format("step rate=%s ms=%d tx=%d rx=%d ierrors=%d oerrors=%d imissed=%d",
                     tostring(rate), STEP_MS, tx1 - tx0, rx1 - rx0, ie1 - ie0, oe1 - oe0,
                     im1 - im0))
end
emit("done")
out:close()
