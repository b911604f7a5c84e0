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

local ok, info = pcall(function() return pktgen.info end)
if ok and info then
  emit(string.format("version pktgen=%s dpdk=%s lua=%s", tostring(info.Pktgen_Version),
                     tostring(info.DPDK_Version), tostring(info.Lua_Version)))
end
