-- Scenario 'flood': pktgen replays the flood mix given with -s 0:FILE at its
-- full rate until the harness creates the file STOP (or MAX_MS passes), then
-- writes how many frames it sent and received, and for how many ms (wall
-- clock, 10 ms resolution). Parameters: PKTGEN_DIR, OUT,
-- COMMON, GO, STOP, MAX_MS, SRC_IP, SETTLE_MS.
dofile(COMMON)

-- pktgen answers ARP for its address (iwarpd's SYN-ACKs to the flood sources
-- go through it: it is their gateway).
pktgen.set_ipaddr("0", "src", SRC_IP)
pktgen.process("0", "on")
pktgen.pcap("0", "on")
link_up_screen_off()
pktgen.set("0", "rate", 100)
sleep_ms(SETTLE_MS)
local a = port_counters()
-- The harness reads iwarpd's counters now, then creates GO.
emit("ready")
wait_file(GO, 600000)
pktgen.start("0")
emit("flooding")
local ms = wait_file(STOP, MAX_MS)
emit("stopping")
pktgen.stop("0")
emit("settling")
sleep_ms(SETTLE_MS)
local b = port_counters()
emit(string.format("flood ms=%d tx=%d rx=%d oerrors=%d imissed=%d", ms, b.tx - a.tx, b.rx - a.rx,
                   b.oerrors - a.oerrors, b.imissed - a.imissed))
emit("done")
OUT_FILE:close()
