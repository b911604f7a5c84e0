-- Scenario 'throughput' (RFC 2544-style): pktgen replays the pcap given with
-- -s 0:FILE (ICMP echo requests of one frame size, built by pktgen_traffic.py)
-- at each rate in RATES (percent of the link rate net_memif reports,
-- 100 Gbit/s) for STEP_MS, then SEARCH more trials halving the interval
-- between the highest rate that lost nothing and the lowest that lost
-- (RFC 2544 26.1's binary search), and writes per trial how many frames it
-- sent and how many came back. Parameters: PKTGEN_DIR, OUT, COMMON, RATES,
-- STEP_MS, SETTLE_MS, SEARCH.
dofile(COMMON)

local function trial(rate)
  pktgen.set("0", "rate", rate)
  local a = port_counters()
  pktgen.start("0")
  pktgen.delay(STEP_MS)
  pktgen.stop("0")
  -- Replies still in flight come in while the port is stopped.
  pktgen.delay(SETTLE_MS)
  local b = port_counters()
  emit(string.format("step rate=%s ms=%d tx=%d rx=%d ierrors=%d oerrors=%d imissed=%d",
                     tostring(rate), STEP_MS, b.tx - a.tx, b.rx - a.rx, b.ierrors - a.ierrors,
                     b.oerrors - a.oerrors, b.imissed - a.imissed))
  return b.tx > a.tx and (b.rx - a.rx) == (b.tx - a.tx)
end

pktgen.pcap("0", "on")
pktgen.delay(SETTLE_MS)
local lo, hi = nil, nil
for _, rate in ipairs(RATES) do
  if trial(rate) then
    if hi == nil then lo = rate end
  elseif hi == nil then
    hi = rate
  end
end
if lo ~= nil and hi ~= nil then
  for _ = 1, SEARCH do
    local mid = math.floor((lo + hi) / 2 * 1000 + 0.5) / 1000
    if mid <= lo or mid >= hi then break end
    if trial(mid) then lo = mid else hi = mid end
  end
end
emit("done")
OUT_FILE:close()
