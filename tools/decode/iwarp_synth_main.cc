// iwarp-synth: writes reference captures of iWARP (TCP/MPA) and RDMA over SCTP
// sessions built by iwarpd's own encoders, optionally with one protocol fault.
// Useful to check a dissector or iwarp-decode itself.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/decode/synth.h"

namespace {

constexpr char kUsage[] =
    "usage: iwarp-synth [options] OUTPUT.pcap\n"
    "\n"
    "options:\n"
    "  --sctp             RDMA over SCTP (RFC 5043) instead of TCP/MPA\n"
    "  --markers          MPA Markers requested by both ends\n"
    "  --no-crc           MPA CRC not requested by either end\n"
    "  --mss N            TCP EMSS / SCTP path MTU - 40 (default 1460)\n"
    "  --write-size N     bytes of the RDMA Write (default 5000)\n"
    "  --read-size N      bytes of the RDMA Read (default 3000)\n"
    "  --fault NAME       none, corrupt-payload, bad-marker, data-before-reply,\n"
    "                     no-rtr, msn-gap, orphan-read-response, bad-rpc-version,\n"
    "                     sctp-ordered, sctp-no-indication, sctp-no-initiate\n";

bool ParseU32(const char* s, uint32_t* out) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (end == s || *end != '\0' || v > 0xffffffffUL) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  iwarp::decode::SynthOptions o;
  bool sctp = false;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--sctp") {
      sctp = true;
    } else if (a == "--markers") {
      o.markers = true;
    } else if (a == "--no-crc") {
      o.crc = false;
    } else if ((a == "--mss" || a == "--write-size" || a == "--read-size") && has_value) {
      uint32_t* field = a == "--mss" ? &o.mss : a == "--write-size" ? &o.write_size : &o.read_size;
      if (!ParseU32(argv[++i], field) || (a == "--mss" && (*field < 576 || *field > 9000))) {
        std::fprintf(stderr, "iwarp-synth: bad value '%s' for %s (mss: 576..9000)\n", argv[i], a.c_str());
        return 2;
      }
    } else if (a == "--fault" && has_value) {
      if (!iwarp::decode::ParseFault(argv[++i], &o.fault)) {
        std::fprintf(stderr, "iwarp-synth: unknown fault '%s'\n\n%s", argv[i], kUsage);
        return 2;
      }
    } else if (!a.empty() && a[0] != '-' && out.empty()) {
      out = a;
    } else {
      std::fprintf(stderr, "iwarp-synth: unexpected argument '%s'\n\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "iwarp-synth: no output file\n\n%s", kUsage);
    return 2;
  }
  const absl::Status s = sctp ? iwarp::decode::WriteSctpSession(out, o)
                              : iwarp::decode::WriteTcpSession(out, o);
  if (!s.ok()) {
    std::fprintf(stderr, "iwarp-synth: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  return 0;
}
