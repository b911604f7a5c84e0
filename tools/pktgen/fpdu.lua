-- Scenario 'fpdu': pktgen replays the TCP stream of FPDUs given with -s 0:FILE
-- (built by pktgen_traffic.py) at RATE percent, always a whole number of
-- connection passes, using pktgen's transmit count. pktgen's pcap mbuf pool
-- is a whole number of pcap cycles drawn in order, so the frames on the wire
-- are the pcap repeated, and a run or step stops on a pass boundary.
--   STEPS empty (a valid stream): CYCLE * k frames at a time, doubling k
--     while a chunk takes less than CHUNK_MS, until the harness creates STOP
--     (or MAX_MS of sending pass).
--   STEPS = {frames, ...} (a fault pcap, one entry per block): for step
--     n = 1, 2, ... the harness creates GO .. n, and pktgen sends the next
--     block's frames (the list repeats), until STOP.
-- BURST > 0 sets pktgen's transmit burst (frames sent back to back at each
-- rate interval; 0 leaves its default, 64). Parameters: PKTGEN_DIR, OUT,
-- COMMON, GO, STOP, SRC_IP, RATE, BURST, CYCLE, STEPS, CHUNK_MS, MAX_MS,
-- SETTLE_MS.
dofile(COMMON)

-- Sends `count` frames; returns how many ms (wall clock) that took, the end
-- polled every 10 ms.
local function send(count)
  pktgen.set("0", "count", count)
  local t0 = now_ms()
  pktgen.start("0")
  while pktgen.isSending("0")[0] == "y" do
    pktgen.delay(10)
  end
  return now_ms() - t0
end

-- pktgen answers ARP for its address (iwarpd sends its ACKs, Terminates and
-- RSTs to it).
pktgen.set_ipaddr("0", "src", SRC_IP)
pktgen.process("0", "on")
pktgen.pcap("0", "on")
sleep_ms(SETTLE_MS)
link_up_screen_off()
if BURST > 0 then pktgen.set("0", "burst", BURST) end
pktgen.set("0", "rate", RATE)
emit("ready")
local frames, n, ms = 0, 0, 0
if #STEPS == 0 then
  wait_file(GO, 600000)
  emit("sending")
  local chunk = CYCLE
  repeat
    local t = send(chunk)
    frames = frames + chunk
    n = n + 1
    ms = ms + t
    emit(string.format("chunk frames=%d ms=%d", chunk, t))
    if t < CHUNK_MS and chunk < 64 * 1024 * 1024 then chunk = chunk * 2 end
  until exists(STOP) or ms >= MAX_MS
else
  while ms < MAX_MS do
    while not exists(GO .. (n + 1)) and not exists(STOP) do pktgen.delay(10) end
    if exists(STOP) then break end
    local count = STEPS[n % #STEPS + 1]
    local t = send(count)
    frames = frames + count
    n = n + 1
    ms = ms + t
    emit(string.format("step n=%d frames=%d ms=%d", n, count, t))
  end
end
emit(string.format("fpdu chunks=%d frames=%d ms=%d", n, frames, ms))
emit("done")
OUT_FILE:close()
-- The harness reads iwarpd's port counters while the link is up (memif's go
-- with it), then creates STOP .. ".quit"; quitting here saves it the wait on
-- ending the process group.
wait_file(STOP .. ".quit", 20000)
pktgen.quit()
