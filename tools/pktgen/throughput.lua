-- Scenario 'throughput' (RFC 2544-style): pktgen replays the pcap given with
-- -s 0:FILE (ICMP echo requests of one frame size, built by pktgen_traffic.py)
-- at each rate in RATES (percent of the link rate net_memif reports,
-- 100 Gbit/s) for STEP_MS, and writes per step how many frames it sent and
-- how many came back. Parameters: PKTGEN_DIR, OUT, COMMON, RATES, STEP_MS,
-- SETTLE_MS.
dofile(COMMON)

pktgen.pcap("0", "on")
pktgen.delay(SETTLE_MS)
for _, rate in ipairs(RATES) do
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
end
emit("done")
OUT_FILE:close()
