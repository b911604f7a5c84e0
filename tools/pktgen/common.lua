-- Shared by the scenario scripts (loaded with dofile after the parameters the
-- harness prepends: PKTGEN_DIR, OUT, ...).
package.path = package.path .. ";" .. PKTGEN_DIR .. "/?.lua"
require "Pktgen"

OUT_FILE = io.open(OUT, "w")
function emit(line)
  OUT_FILE:write(line .. "\n")
  OUT_FILE:flush()
end

-- pktgen refreshes its port counters once a second (its timer), so a value
-- read right after a start or stop is stale: counters are read after
-- SETTLE_MS (> 2 s) of a stopped port.
function port_counters()
  local s = pktgen.portStats("0", "port")[0]
  return {tx = s.opackets, rx = s.ipackets, ierrors = s.ierrors or 0,
          oerrors = s.oerrors or 0, imissed = s.imissed or 0}
end

function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- Waits are wall-clock. pktgen.delay(ms) sleeps in 10 ms steps, each a
-- wake-up of pktgen's main thread, which shares its CPU with pktgen's
-- spinning timer thread and the daemons' busy-polling workers: a step can
-- last ten times longer, so counting delays (not reading a clock) made a
-- 100 ms wait last seconds and a flood's length come out too short. Lua has
-- no sub-second wall clock; /proc/uptime has one of 10 ms.
function now_ms()
  local f = io.open("/proc/uptime", "r")
  local s = f:read("n")
  f:close()
  return math.floor(s * 1000 + 0.5)
end

-- Sleeps `ms` of wall-clock time.
function sleep_ms(ms)
  local until_ms = now_ms() + ms
  repeat pktgen.delay(10) until now_ms() >= until_ms
end

-- Waits until `path` exists or `max_ms` pass, looking after every step;
-- returns the ms waited and whether it appeared.
function wait_file(path, max_ms)
  local t0 = now_ms()
  while true do
    if exists(path) then return now_ms() - t0, true end
    local t = now_ms() - t0
    if t >= max_ms then return t, false end
    pktgen.delay(10)
  end
end

-- pktgen 23.06.1 turns the rate into a burst interval from the port's link
-- speed; its screen refresh (a thread of its own) re-reads the link by
-- zeroing the record first, so a rate computed meanwhile sees speed 0 and
-- sends one burst a minute (a flood that sent nothing; 30-40 s stalls in
-- the middle of a transmit count). Call this once the port is set up: it
-- waits (at most 10 s) for the link, writes the link line and turns the
-- screen off, after which nothing rewrites the record. Set the rate (and
-- burst) after it.
function link_up_screen_off()
  local t0 = now_ms()
  while string.sub(pktgen.linkState("0")[0], 1, 4) ~= "<UP-" and now_ms() - t0 < 10000 do
    pktgen.delay(10)
  end
  emit("link " .. pktgen.linkState("0")[0])
  pktgen.screen("off")
end

local ok, info = pcall(function() return pktgen.info end)
if ok and info then
  emit(string.format("version pktgen=%s dpdk=%s lua=%s", tostring(info.Pktgen_Version),
                     tostring(info.DPDK_Version), tostring(info.Lua_Version)))
end
