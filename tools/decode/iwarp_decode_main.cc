// iwarp-decode: reads pcap/pcapng captures of iWARP (TCP/MPA) or RDMA over SCTP
// (RFC 5043) traffic and prints MPA, DDP, RDMAP and RPC-over-RDMA per message,
// flagging every protocol violation.
//
// Exit status: 0 no violation, 1 at least one violation, 2 usage or file error.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tools/decode/analyzer.h"
#include "tools/decode/capture.h"

namespace {

constexpr char kUsage[] =
    "usage: iwarp-decode [options] CAPTURE...\n"
    "\n"
    "Decodes TCP -> MPA -> DDP -> RDMAP -> RPC-over-RDMA and SCTP -> RFC 5043 -> DDP\n"
    "from pcap or pcapng files and reports every violation of the RFCs (CRC, Marker,\n"
    "header rules, MSN/TO sequencing, illegal MPA and session sequences).\n"
    "\n"
    "options:\n"
    "  --segments        also print one line per DDP segment\n"
    "  --quiet           print only violations and the summary\n"
    "  --rpc=auto|on|off decode Sends as RPC-over-RDMA: when they look like a\n"
    "                    transport header (auto, default), always, or never\n"
    "  -h, --help        this text\n"
    "\n"
    "exit status: 0 no violation (warnings, legal but refused by some peers, do not count),\n"
    "1 violations found, 2 usage or file error\n";

}  // namespace

int main(int argc, char** argv) {
  iwarp::decode::AnalyzerOptions options;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--segments") {
      options.segments = true;
    } else if (a == "--quiet") {
      options.quiet = true;
    } else if (a == "--rpc=auto") {
      options.rpc = iwarp::decode::AnalyzerOptions::Rpc::kAuto;
    } else if (a == "--rpc=on") {
      options.rpc = iwarp::decode::AnalyzerOptions::Rpc::kOn;
    } else if (a == "--rpc=off") {
      options.rpc = iwarp::decode::AnalyzerOptions::Rpc::kOff;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "iwarp-decode: unknown option '%s'\n\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "iwarp-decode: no capture file given\n\n%s", kUsage);
    return 2;
  }
  uint64_t violations = 0;
  for (const std::string& f : files) {
    if (files.size() > 1) std::cout << "== " << f << "\n";
    iwarp::decode::Analyzer analyzer(std::cout, options);
    const absl::Status s = iwarp::decode::ReadCapture(
        f, [&](const iwarp::decode::L4Packet& p) { analyzer.OnPacket(p); },
        [&](uint64_t frame, iwarp::decode::FrameResult r) { analyzer.OnBadFrame(frame, r); });
    if (!s.ok()) {
      std::fprintf(stderr, "iwarp-decode: %s\n", std::string(s.message()).c_str());
      return 2;
    }
    analyzer.Finish();
    violations += analyzer.summary().violations;
  }
  return violations == 0 ? 0 : 1;
}
