-- Scenario 'tuple_flood' (tuple_flood.py): pktgen replays the pcap given with
-- -s 0:FILE (segments aimed at one iWARP connection's 4-tuple) at its full
-- rate from the moment the harness creates GO until it creates STOP (or
-- MAX_MS passes), then writes how many frames it sent and received, and for
-- how many ms (wall clock). Parameters: PKTGEN_DIR, OUT,
-- COMMON, GO, STOP, MAX_MS, SETTLE_MS.
-- Unlike flood.lua it gives the port no address and leaves packet
-- processing off: pktgen answers nothing and sends nothing but the pcap.
dofile(COMMON)

pktgen.pcap("0", "on")
link_up_screen_off()
pktgen.set("0", "rate", 100)
sleep_ms(SETTLE_MS)
local a = port_counters()
emit("ready")
wait_file(GO, 600000)
pktgen.start("0")
emit("flooding")
local ms = wait_file(STOP, MAX_MS)
pktgen.stop("0")
sleep_ms(SETTLE_MS)
local b = port_counters()
emit(string.format("flood ms=%d tx=%d rx=%d oerrors=%d imissed=%d", ms, b.tx - a.tx, b.rx - a.rx,
                   b.oerrors - a.oerrors, b.imissed - a.imissed))
emit("done")
OUT_FILE:close()
