-- Scenario 'tuple_flood' (tuple_flood.py): pktgen replays the pcap given with
-- -s 0:FILE (segments aimed at one iWARP connection's 4-tuple) at its full
-- rate from the moment the harness creates GO until it creates STOP (or
-- MAX_MS passes), then writes how many frames it sent and received, and the
-- frames sent in each second of the flood. Parameters: PKTGEN_DIR, OUT,
-- COMMON, GO, STOP, MAX_MS, SETTLE_MS.
-- Unlike flood.lua it gives the port no address and leaves packet
-- processing off: pktgen answers nothing and sends nothing but the pcap.
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
emit("ready")
while not exists(GO) do pktgen.delay(50) end
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
