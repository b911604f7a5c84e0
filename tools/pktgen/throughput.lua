-- Scenario 'throughput' (RFC 2544-style): pktgen replays the pcap given with
-- -s 0:FILE (ICMP echo requests of one frame size, built by pktgen_traffic.py)
-- at each rate in RATES (percent of the link rate net_memif reports,
-- 100 Gbit/s) for STEP_MS, then SEARCH more trials halving the interval
-- between the highest rate that lost nothing and the lowest that lost
-- (RFC 2544 26.1's binary search), and writes per trial how many frames it
-- sent and how many came back.
--
-- Then, LAT_MS > 0, latency (RFC 2544 26.2) with pktgen's latency mode: it
-- puts one timestamped UDP probe (its LATENCY_PKT, TSTAMP_MAGIC in the
-- payload, destination port 1028) into its transmit
-- path at most every LAT_US while the port sends, and times the probes that
-- come back (iwarpd's udp_echo returns them). Probes only go out with the
-- port's own traffic, so each phase sends the pcap too: 'idle' at
-- IDLE_RATE with a burst of 1 (about one echo request per probe), then
-- 'load' at the highest rate the search held with every frame answered
-- and 'half' at half of it (pktgen's default burst). Before and after each
-- phase the script writes "sync TAG" and waits for the harness to create
-- SYNC .. TAG (it reads iwarpd's counters meanwhile). The probe is a
-- 72-byte frame (LATENCY_PKT_SIZE, without the FCS); starting pktgen's
-- latency sampler makes it 88 (it adds the timestamp's 16 bytes to probes
-- shorter than 76).
--
-- Parameters: PKTGEN_DIR, OUT, COMMON, RATES, STEP_MS, SETTLE_MS, SEARCH,
-- LAT_MS, LAT_US, DRAIN_MS, IDLE_RATE, DST_MAC, DST_IP, SRC_IP, SYNC,
-- SAMPLES.
dofile(COMMON)

local function trial(rate)
  pktgen.set("0", "rate", rate)
  local a = port_counters()
  local t0 = now_ms()
  pktgen.start("0")
  sleep_ms(STEP_MS)
  pktgen.stop("0")
  local ms = now_ms() - t0
  -- Replies still in flight come in while the port is stopped.
  sleep_ms(SETTLE_MS)
  local b = port_counters()
  emit(string.format("step rate=%s ms=%d tx=%d rx=%d ierrors=%d oerrors=%d imissed=%d",
                     tostring(rate), ms, b.tx - a.tx, b.rx - a.rx, b.ierrors - a.ierrors,
                     b.oerrors - a.oerrors, b.imissed - a.imissed))
  return b.tx > a.tx and (b.rx - a.rx) == (b.tx - a.tx)
end

local function sync(tag)
  emit("sync " .. tag)
  wait_file(SYNC .. tag, 30000)
end

local function lat_phase(name, rate, burst)
  pktgen.set("0", "burst", burst)
  pktgen.set("0", "rate", rate)
  -- clear zeroes the latency record too (count, min/avg/max, and the probe
  -- index both ends use: the first probe is not taken as out of order).
  pktgen.clear("0")
  -- The sampler keeps every probe's round trip (ns) and writes them to
  -- SAMPLES .. name when it is turned off.
  pktgen.latsampler_params("0", "simple", 50000, 1000000, SAMPLES .. name)
  pktgen.latsampler("0", "on")
  sync(name .. ".a")
  local t0 = now_ms()
  pktgen.start("0")
  sleep_ms(LAT_MS)
  pktgen.stop("0")
  local ms = now_ms() - t0
  sleep_ms(DRAIN_MS)
  pktgen.latsampler("0", "off")
  local l = pktgen.pktStats("0")[0].latency
  emit(string.format("lat phase=%s rate=%s burst=%d ms=%d num=%d skipped=%d min_us=%.3f " ..
                     "avg_us=%.3f max_us=%.3f min_cycles=%d avg_cycles=%d max_cycles=%d " ..
                     "rate_us=%d",
                     name, tostring(rate), burst, ms, l.num_pkts, l.num_skipped, l.min_us,
                     l.avg_us, l.max_us, l.min_cycles, l.avg_cycles, l.max_cycles, l.rate_us))
  sync(name .. ".b")
end

-- The harness puts pktgen's timer thread (it spins on the main lcore's CPU,
-- which iwarpd's worker has) under SCHED_IDLE meanwhile.
sync("start")
pktgen.pcap("0", "on")
sleep_ms(SETTLE_MS)
-- Each trial sets its rate after this (common.lua).
link_up_screen_off()

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
emit("held rate=" .. tostring(lo))

if LAT_MS > 0 then
  sync("ladder")
  -- The probe is a copy of the single-packet template made when latency is
  -- enabled: addresses first.
  pktgen.set_mac("0", "dst", DST_MAC)
  pktgen.set_ipaddr("0", "dst", DST_IP)
  pktgen.set_ipaddr("0", "src", SRC_IP)
  pktgen.latency("0", "rate", LAT_US)
  pktgen.latency("0", "enable")
  lat_phase("idle", IDLE_RATE, 1)
  if lo ~= nil then
    lat_phase("load", lo, 64)
    lat_phase("half", lo / 2, 64)
  end
  pktgen.latency("0", "disable")
end
emit("done")
OUT_FILE:close()
