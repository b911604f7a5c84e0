-- Scenario 'flood': pktgen replays the flood mix given with -s 0:FILE at its
-- full rate until the harness creates the file STOP (or MAX_MS passes), then
-- writes how many frames it sent and received. Parameters: PKTGEN_DIR, OUT,
-- COMMON, STOP, MAX_MS, SETTLE_MS.
dofile(COMMON)

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

pktgen.pcap("0", "on")
pktgen.set("0", "rate", 100)
pktgen.delay(SETTLE_MS)
local a = port_counters()
pktgen.start("0")
emit("flooding")
local ms = 0
while ms < MAX_MS and not exists(STOP) do
  pktgen.delay(100)
  ms = ms + 100
end
pktgen.stop("0")
pktgen.delay(SETTLE_MS)
local b = port_counters()
emit(string.format("flood ms=%d tx=%d rx=%d oerrors=%d imissed=%d", ms, b.tx - a.tx, b.rx - a.rx,
                   b.oerrors - a.oerrors, b.imissed - a.imissed))
emit("done")
OUT_FILE:close()
