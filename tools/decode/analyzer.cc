#include "tools/decode/analyzer.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ddp/ddp_header.h"
#include "ddp/rdmap.h"
#include "mpa/mpa_decoder.h"
#include "mpa/mpa_fpdu.h"
#include "mpa/mpa_frame.h"
#include "rpcrdma/header.h"
#include "rpcrdma/validate.h"
#include "sctp/adaptation.h"
#include "tools/decode/tcp_reassembly.h"

namespace iwarp::decode {
namespace {

using rdmap::Opcode;

// How much of a Send message is kept to decode the RPC-over-RDMA header and
// the RPC XID behind it; a Read Request body or Terminate fits many times.
constexpr size_t kKeepBytes = 4096;

// SCTP chunk types and DATA flags (RFC 9260 3.2, 3.3.1).
constexpr uint8_t kChunkData = 0;
constexpr uint8_t kChunkInit = 1;
constexpr uint8_t kChunkInitAck = 2;
constexpr uint8_t kDataFlagUnordered = 0x04;
constexpr uint8_t kDataFlagBegin = 0x02;
constexpr uint8_t kDataFlagEnd = 0x01;
constexpr size_t kChunkHeaderSize = 4;
constexpr size_t kInitFixedSize = 16;  // after the chunk header

std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

}  // namespace

// DDP/RDMAP state of one sender on one DDP stream.
struct Analyzer::Direction {
  struct Untagged {
    Opcode op = Opcode::kSend;
    uint64_t bytes = 0;
    uint32_t segments = 0;
    uint32_t next_mo = 0;
    uint32_t inv_stag = 0;
    std::vector<uint8_t> data;  // first kKeepBytes of the message
  };
  struct Tagged {
    Opcode op = Opcode::kRdmaWrite;
    uint64_t first_to = 0;
    uint64_t next_to = 0;
    uint64_t bytes = 0;
    uint32_t segments = 0;
  };
  bool calls = true;  // RPC: this side sends calls (the connection's initiator)
  Direction* peer = nullptr;
  bool terminated = false;
  // The stream stopped decoding (MPA error): checks that need what it sent,
  // like matching Read Responses to its Read Requests, are suspended.
  bool lost = false;
  // RFC 6581 ready-to-receive the first FPDU must be: 0 none, else 'S','W','R'.
  char expect_rtr = 0;
  bool seen_segment = false;
  uint32_t next_msn[rdmap::kNumQueues] = {1, 1, 1};
  std::map<std::pair<uint32_t, uint32_t>, Untagged> untagged;
  std::map<uint32_t, Tagged> tagged;            // by STag
  std::deque<rdmap::ReadRequest> reads_sent;    // answered by the peer's Read Responses
};

struct Analyzer::TcpConn {
  enum class Phase { kStartup, kHeld, kFull, kNotMpa, kDead };
  Endpoint ep[2];
  std::string who[2];
  TcpReassembler rx[2];
  Phase phase[2] = {Phase::kStartup, Phase::kStartup};
  std::vector<uint8_t> buf[2];  // startup bytes, then bytes held for the Reply
  Seq32 full_seq[2];            // first octet of Full Operation
  int initiator = -1;
  bool have_req = false, have_rep = false;
  mpa::StartupFrame req, rep;
  std::unique_ptr<mpa::FpduDecoder> dec[2];
  Direction ddp[2];
  uint64_t first_fpdu_frame[2] = {0, 0};
  bool counted_mpa = false;
};

// A chunk received ahead of its DDP-SSN turn (RFC 5043 10).
struct SctpHeld {
  uint64_t frame = 0;
  uint32_t ppid = 0;
  std::vector<uint8_t> user;
};

// One DDP stream (SCTP stream pair) of an association.
struct Analyzer::SctpStream {
  Direction ddp[2];
  std::optional<sctp::SessionSequencer> seq[2];  // checks what side i receives
  Seq16 next_ssn[2];                             // by sender
  std::map<uint16_t, SctpHeld> held[2];          // by sender, keyed by DDP-SSN
};

struct Analyzer::SctpAssoc {
  Endpoint ep[2];
  std::string who[2];
  bool init_seen[2] = {false, false};
  bool ddp_indicated[2] = {false, false};
  bool reported_no_ddp = false;
  std::set<uint32_t> tsns[2];
  std::map<uint16_t, SctpStream> streams;
};

Analyzer::Analyzer(std::ostream& out, const AnalyzerOptions& options)
    : out_(out), options_(options) {}
Analyzer::~Analyzer() = default;

void Analyzer::Line(uint64_t frame, const std::string& who, const std::string& what) {
  if (options_.quiet) return;
  out_ << absl::StrFormat("%6u  %-45s %s\n", frame, who, what);
}

void Analyzer::Violation(uint64_t frame, const std::string& who, const std::string& what) {
  ++summary_.violations;
  out_ << absl::StrFormat("%6u  %-45s VIOLATION: %s\n", frame, who, what);
}

void Analyzer::Warning(uint64_t frame, const std::string& who, const std::string& what) {
  ++summary_.warnings;
  out_ << absl::StrFormat("%6u  %-45s WARNING: %s\n", frame, who, what);
}

// The state of the conversation `pkt` belongs to, created on first sight:
// side 0 is whoever sent the first packet seen.
template <typename Conn>
Conn& Analyzer::FindOrAdd(std::map<ConnKey, std::unique_ptr<Conn>>& table, const L4Packet& pkt,
                          const char* suffix, uint64_t* created) {
  const bool fwd = std::tie(pkt.src.ip, pkt.src.port) < std::tie(pkt.dst.ip, pkt.dst.port);
  const ConnKey key = fwd ? ConnKey{pkt.src.ip, pkt.src.port, pkt.dst.ip, pkt.dst.port}
                          : ConnKey{pkt.dst.ip, pkt.dst.port, pkt.src.ip, pkt.src.port};
  std::unique_ptr<Conn>& slot = table[key];
  if (!slot) {
    slot = std::make_unique<Conn>();
    slot->ep[0] = pkt.src;
    slot->ep[1] = pkt.dst;
    slot->who[0] = FormatEndpoint(pkt.src) + " > " + FormatEndpoint(pkt.dst) + suffix;
    slot->who[1] = FormatEndpoint(pkt.dst) + " > " + FormatEndpoint(pkt.src) + suffix;
    ++*created;
  }
  return *slot;
}

void Analyzer::OnBadFrame(uint64_t frame, FrameResult r) {
  const char* what = r == FrameResult::kFragment    ? "IPv4 fragment (not reassembled)"
                     : r == FrameResult::kTruncated ? "frame truncated (headers or IP length beyond captured bytes)"
                                                    : "malformed IPv4/TCP/SCTP header";
  Violation(frame, "-", what);
}

void Analyzer::OnPacket(const L4Packet& pkt) {
  ++summary_.packets;
  if (pkt.protocol == kIpProtoTcp) {
    OnTcp(pkt);
  } else {
    OnSctp(pkt);
  }
}

// ---- TCP and MPA ------------------------------------------------------------

void Analyzer::OnTcp(const L4Packet& pkt) {
  TcpConn& c = FindOrAdd(tcp_, pkt, "", &summary_.tcp_connections);
  const int dir = c.ep[0] == pkt.src ? 0 : 1;
  if (pkt.tcp_flags & kTcpSyn) c.rx[dir].OnSyn(pkt.seq);
  if (pkt.payload.empty()) return;
  // A SYN may carry data (TFO); it starts at seq + 1.
  const uint32_t seq = (pkt.tcp_flags & kTcpSyn) ? pkt.seq + 1 : pkt.seq;
  c.rx[dir].OnData(seq, pkt.payload, [&](Seq32 s, ByteSpan data) {
    OnStream(c, dir, pkt.frame, s, data);
  });
}

namespace {

// Compares what has arrived against the front of a key.
bool KeyPrefixMatches(ByteSpan have, std::string_view key) {
  const size_t n = std::min(have.size(), key.size());
  return std::equal(have.begin(), have.begin() + static_cast<ptrdiff_t>(n), key.begin());
}

class SinkAdapter : public mpa::UlpduSink {
 public:
  explicit SinkAdapter(std::function<void(ByteSpan)> f) : f_(std::move(f)) {}
  void OnUlpdu(ByteSpan ulpdu, Seq32) override { f_(ulpdu); }

 private:
  std::function<void(ByteSpan)> f_;
};

}  // namespace

void Analyzer::OnStream(TcpConn& c, int dir, uint64_t frame, Seq32 seq, ByteSpan data) {
  using Phase = TcpConn::Phase;
  switch (c.phase[dir]) {
    case Phase::kNotMpa:
    case Phase::kDead:
      return;
    case Phase::kStartup: {
      if (c.buf[dir].empty()) c.full_seq[dir] = seq;  // start of the frame for now
      c.buf[dir].insert(c.buf[dir].end(), data.begin(), data.end());
      ByteSpan have(c.buf[dir]);
      mpa::FrameType type;
      if (KeyPrefixMatches(have, mpa::kRequestKey)) {
        type = mpa::FrameType::kRequest;
      } else if (KeyPrefixMatches(have, mpa::kReplyKey)) {
        type = mpa::FrameType::kReply;
      } else {
        c.phase[dir] = Phase::kNotMpa;
        Line(frame, c.who[dir], "TCP stream does not start with an MPA Request/Reply: not decoded");
        c.buf[dir].clear();
        return;
      }
      mpa::StartupFrame f;
      const mpa::FrameResult r = mpa::DecodeStartupFrame(have, type, &f);
      if (r.status == mpa::FrameStatus::kNeedMoreBytes) return;
      if (r.status != mpa::FrameStatus::kOk) {
        Violation(frame, c.who[dir],
                  absl::StrCat("invalid MPA ", type == mpa::FrameType::kRequest ? "Request" : "Reply",
                               " frame: ", std::string(mpa::FrameStatusName(r.status)),
                               " (RFC 5044 8 code 4)"));
        c.phase[dir] = Phase::kDead;
        return;
      }
      if (!c.counted_mpa) {
        c.counted_mpa = true;
        ++summary_.mpa_connections;
      }
      std::string desc = absl::StrFormat(
          "MPA %s rev=%u M=%d C=%d R=%d", type == mpa::FrameType::kRequest ? "Request" : "Reply",
          f.revision, f.markers, f.crc, f.reject);
      if (f.ird_ord) {
        absl::StrAppendFormat(&desc, " S=1 ird=%u ord=%u%s%s%s%s", f.ird_ord->ird, f.ird_ord->ord,
                              f.ird_ord->peer_to_peer ? " P2P" : "",
                              f.ird_ord->send_rtr ? " send-RTR" : "",
                              f.ird_ord->write_rtr ? " write-RTR" : "",
                              f.ird_ord->read_rtr ? " read-RTR" : "");
      }
      absl::StrAppendFormat(&desc, " private_data=%u", f.private_data.size());
      Line(frame, c.who[dir], desc);
      if (type == mpa::FrameType::kRequest) {
        if (c.have_req) {
          Violation(frame, c.who[dir], "second MPA Request on one connection (RFC 5044 7.1.2)");
          c.phase[dir] = Phase::kDead;
          return;
        }
        c.initiator = dir;
        c.have_req = true;
        c.req = f;
        c.req.private_data = {};
      } else {
        if (c.initiator == dir || (c.initiator < 0 && c.have_rep)) {
          Violation(frame, c.who[dir], "MPA Reply from the side that sent the Request");
          c.phase[dir] = Phase::kDead;
          return;
        }
        if (c.initiator < 0) {
          c.initiator = 1 - dir;  // capture started after the Request
          Line(frame, c.who[dir], "no MPA Request seen; negotiation taken from the Reply alone");
          c.req = f;
          c.req.type = mpa::FrameType::kRequest;
          c.req.private_data = {};
        }
        if (c.have_req && c.req.revision != f.revision) {
          Violation(frame, c.who[dir],
                    absl::StrFormat("Reply revision %u differs from the Request's %u",
                                    f.revision, c.req.revision));
        }
        c.have_rep = true;
        c.rep = f;
        c.rep.private_data = {};
      }
      // Full Operation starts right after the frame (RFC 5044 4.3: the marker origin).
      std::vector<uint8_t> rest(c.buf[dir].begin() + static_cast<ptrdiff_t>(r.size), c.buf[dir].end());
      c.full_seq[dir] = c.full_seq[dir] + static_cast<uint32_t>(r.size);
      c.buf[dir] = std::move(rest);
      c.phase[dir] = Phase::kHeld;
      if (c.have_rep) {
        if (c.rep.reject) {
          Line(frame, c.who[dir], "connection rejected by the responder");
        }
        // Both directions are now negotiated (RFC 5044 7.1.1): Markers go to
        // whoever asked for them, CRC is on if either side asked.
        const bool crc = c.req.crc || c.rep.crc;
        for (int d = 0; d < 2; ++d) {
          const bool from_initiator = d == c.initiator;
          if (c.phase[d] != Phase::kHeld) continue;
          mpa::FpduConfig cfg;
          cfg.crc = crc;
          cfg.markers = from_initiator ? c.rep.markers : c.req.markers;
          cfg.marker_origin = c.full_seq[d];
          c.dec[d] = std::make_unique<mpa::FpduDecoder>(cfg, c.full_seq[d], mpa::kMaxUlpduLength);
          c.ddp[d].calls = from_initiator;
          c.ddp[d].peer = &c.ddp[1 - d];
          // A Reject Reply selects no RTR type (nothing follows it).
          if (from_initiator && !c.rep.reject && c.req.ird_ord && c.rep.ird_ord &&
              c.rep.ird_ord->peer_to_peer) {
            const mpa::IrdOrd& a = *c.rep.ird_ord;
            c.ddp[d].expect_rtr = a.write_rtr ? 'W' : a.read_rtr ? 'R' : a.send_rtr ? 'S' : 0;
            if (c.ddp[d].expect_rtr == 0) {
              Violation(frame, c.who[1 - c.initiator],
                        "peer-to-peer Reply selects no RTR type (RFC 6581: exactly one)");
            }
          }
          c.phase[d] = Phase::kFull;
          std::vector<uint8_t> held = std::move(c.buf[d]);
          c.buf[d].clear();
          if (!held.empty()) {
            if (d == c.initiator) {
              Violation(frame, c.who[d],
                        absl::StrFormat("initiator sent %u bytes after its Request before the Reply "
                                        "(RFC 5044 7.1.2)", held.size()));
            }
            OnStream(c, d, frame, cfg.marker_origin, held);
          }
        }
      }
      return;
    }
    case Phase::kHeld:
      c.buf[dir].insert(c.buf[dir].end(), data.begin(), data.end());
      return;
    case Phase::kFull:
      break;
  }
  if (c.rep.reject) {
    // RFC 5044 7.1.2 rules 2 and 3: after a Reject both ends exit MPA and
    // "the ULP may close TCP or use the connection for other purposes": what
    // follows is not MPA, and no violation.
    Line(frame, c.who[dir], "bytes after the Reject (not MPA: RFC 5044 7.1.2)");
    c.phase[dir] = Phase::kDead;
    return;
  }
  if (c.first_fpdu_frame[dir] == 0) c.first_fpdu_frame[dir] = frame;
  if (dir != c.initiator && c.ddp[1 - dir].expect_rtr != 0 && c.first_fpdu_frame[1 - dir] == 0) {
    Violation(frame, c.who[dir],
              "responder sent FPDUs before the initiator's ready-to-receive (RFC 6581)");
  }
  mpa::FpduDecoder& dec = *c.dec[dir];
  const uint64_t markers_before = dec.stats().markers;
  SinkAdapter sink([&](ByteSpan ulpdu) {
    ++summary_.fpdus;
    OnUlpdu(c.ddp[dir], c.who[dir], frame, ulpdu);
  });
  const mpa::FeedResult r = dec.Feed(data, sink);
  summary_.markers += dec.stats().markers - markers_before;
  if (r.status != mpa::DecodeStatus::kOk) {
    Violation(frame, c.who[dir],
              absl::StrFormat("MPA %s in the FPDU at seq %u (RFC 5044 8 code %u)",
                              mpa::DecodeStatusName(r.status), dec.error_fpdu_seq().value(),
                              static_cast<unsigned>(mpa::ToMpaError(r.status))));
    c.phase[dir] = Phase::kDead;
    c.ddp[dir].lost = true;
  }
}

// ---- DDP and RDMAP -----------------------------------------------------------

void Analyzer::OnUlpdu(Direction& d, const std::string& who, uint64_t frame, ByteSpan ulpdu) {
  ++summary_.ddp_segments;
  ddp::DdpHeader h;
  const ddp::HeaderStatus hs = ddp::ParseHeader(ulpdu, &h);
  if (hs != ddp::HeaderStatus::kOk) {
    Violation(frame, who, absl::StrCat("DDP header ", std::string(ddp::HeaderStatusName(hs)), " (RFC 5041 4.1)"));
    return;
  }
  Opcode op;
  const rdmap::ControlStatus cs = rdmap::ParseControl(h.rsvd_ulp0, &op);
  if (cs != rdmap::ControlStatus::kOk) {
    Violation(frame, who,
              absl::StrFormat("RDMAP control byte %s: %s (RFC 5040 4.1)", Hex(h.rsvd_ulp0),
                              cs == rdmap::ControlStatus::kBadVersion ? "RDMAP version is not 1"
                                                                      : "reserved opcode"));
    return;
  }
  rdmap::OpcodeInfo info;
  rdmap::DescribeOpcode(op, &info);
  if (h.tagged != info.tagged || (!h.tagged && h.qn != info.qn)) {
    Violation(frame, who,
              absl::StrFormat("%s sent %s%s (RFC 5040 4.2)", rdmap::OpcodeName(op),
                              h.tagged ? "tagged" : "untagged",
                              h.tagged ? "" : absl::StrFormat(" on QN %u", h.qn)));
    return;
  }
  if (d.terminated) {
    Violation(frame, who, absl::StrCat(std::string(rdmap::OpcodeName(op)), " after this side sent a Terminate"));
  }
  const ByteSpan payload = ulpdu.subspan(h.size());
  if (!d.seen_segment) {
    d.seen_segment = true;
    if (d.expect_rtr != 0) {
      // RFC 6581: the RTR is a zero-length message of the negotiated type.
      // Its STags are not validated (RFC 5041 7.1: a zero-length tagged
      // segment places nothing), so STag 0 is legal; deployed stacks send a
      // non-zero one (cxgb4 refuses tagged frames with STag 0): a warning.
      bool ok = payload.empty() && h.last;
      bool stag_zero = false;
      if (d.expect_rtr == 'W') {
        ok = ok && op == Opcode::kRdmaWrite;
        stag_zero = h.stag == 0;
      }
      if (d.expect_rtr == 'S') ok = ok && op == Opcode::kSend;
      if (d.expect_rtr == 'R') {
        rdmap::ReadRequest rr;
        ok = op == Opcode::kReadRequest &&
             rdmap::ParseReadRequest(payload, &rr) == rdmap::BodyStatus::kOk && rr.read_size == 0;
        stag_zero = ok && (rr.source_stag == 0 || rr.sink_stag == 0);
      }
      const char* what = d.expect_rtr == 'W'   ? "zero-length RDMA Write"
                         : d.expect_rtr == 'R' ? "zero-length RDMA Read"
                                               : "zero-length Send";
      if (!ok) {
        Violation(frame, who, absl::StrFormat("first FPDU is not the negotiated %s RTR (RFC 6581)", what));
      } else if (stag_zero) {
        Warning(frame, who,
                absl::StrFormat("%s RTR with STag 0: legal (RFC 5041 7.1), but some peers "
                                "(cxgb4) refuse tagged frames with STag 0",
                                what));
      }
    }
  }
  if (options_.segments) {
    Line(frame, who,
         h.tagged ? absl::StrFormat("  DDP tagged%s stag=%s to=%s len=%u", h.last ? " L" : "",
                                    Hex(h.stag), Hex(h.to), payload.size())
                  : absl::StrFormat("  DDP untagged%s qn=%u msn=%u mo=%u len=%u", h.last ? " L" : "",
                                    h.qn, h.msn.value(), h.mo, payload.size()));
  }

  if (h.tagged) {
    if (h.to + payload.size() < h.to) {
      Violation(frame, who, absl::StrFormat("TO wraps: to=%s len=%u (RFC 5041 7.1)", Hex(h.to),
                                            payload.size()));
    }
    auto [it, fresh] = d.tagged.try_emplace(h.stag);
    Direction::Tagged& t = it->second;
    if (fresh) {
      t.op = op;
      t.first_to = t.next_to = h.to;
    } else if (t.op != op || t.next_to != h.to) {
      Violation(frame, who,
                absl::StrFormat("tagged message on stag %s continues at to=%s, expected %s",
                                Hex(h.stag), Hex(h.to), Hex(t.next_to)));
    }
    t.next_to = h.to + payload.size();
    t.bytes += payload.size();
    ++t.segments;
    if (!h.last) return;
    ++summary_.rdmap_messages;
    Line(frame, who, absl::StrFormat("%s stag=%s to=%s len=%u segments=%u", rdmap::OpcodeName(op),
                                     Hex(h.stag), Hex(t.first_to), t.bytes, t.segments));
    if (op == Opcode::kReadResponse) {
      auto& q = d.peer ? d.peer->reads_sent : d.reads_sent;
      if (d.peer != nullptr && d.peer->lost) {
        // Its Read Request may be among what could not be decoded.
      } else if (q.empty()) {
        Violation(frame, who, "Read Response with no outstanding Read Request (RFC 5040 5.2)");
      } else {
        const rdmap::ReadRequest rr = q.front();
        q.pop_front();
        if (rr.sink_stag != h.stag || rr.sink_to != t.first_to || rr.read_size != t.bytes) {
          Violation(frame, who,
                    absl::StrFormat("Read Response stag=%s to=%s len=%u does not answer the Read "
                                    "Request for stag=%s to=%s len=%u",
                                    Hex(h.stag), Hex(t.first_to), t.bytes, Hex(rr.sink_stag),
                                    Hex(rr.sink_to), rr.read_size));
        }
      }
    }
    d.tagged.erase(it);
    return;
  }

  // Untagged: MSN per queue starts at 1 and grows by one per message (RFC 5041 4.3).
  const auto key = std::make_pair(h.qn, h.msn.value());
  auto [it, fresh] = d.untagged.try_emplace(key);
  Direction::Untagged& u = it->second;
  if (fresh) {
    if (h.msn.value() != d.next_msn[h.qn]) {
      Violation(frame, who, absl::StrFormat("QN %u MSN %u, expected %u (RFC 5041 4.3)", h.qn,
                                            h.msn.value(), d.next_msn[h.qn]));
    }
    d.next_msn[h.qn] = h.msn.value() + 1;
    u.op = op;
    u.inv_stag = h.rsvd_ulp1;
  }
  if (h.mo != u.next_mo) {
    Violation(frame, who, absl::StrFormat("QN %u MSN %u: MO %u, expected %u", h.qn, h.msn.value(),
                                          h.mo, u.next_mo));
  }
  u.next_mo = h.mo + static_cast<uint32_t>(payload.size());
  u.bytes += payload.size();
  ++u.segments;
  if (u.data.size() < kKeepBytes) {
    const size_t take = std::min(kKeepBytes - u.data.size(), payload.size());
    u.data.insert(u.data.end(), payload.begin(), payload.begin() + static_cast<ptrdiff_t>(take));
  }
  if (!h.last) return;
  ++summary_.rdmap_messages;
  const ByteSpan body(u.data);
  switch (op) {
    case Opcode::kReadRequest: {
      rdmap::ReadRequest rr;
      if (u.bytes != rdmap::kReadRequestSize ||
          rdmap::ParseReadRequest(body, &rr) != rdmap::BodyStatus::kOk) {
        Violation(frame, who, absl::StrFormat("Read Request of %u bytes, must be 28 (RFC 5040 4.4)", u.bytes));
        break;
      }
      Line(frame, who,
           absl::StrFormat("RDMA Read Request msn=%u sink stag=%s to=%s len=%u source stag=%s to=%s",
                           h.msn.value(), Hex(rr.sink_stag), Hex(rr.sink_to), rr.read_size,
                           Hex(rr.source_stag), Hex(rr.source_to)));
      d.reads_sent.push_back(rr);
      break;
    }
    case Opcode::kTerminate: {
      rdmap::Terminate t;
      size_t used = 0;
      const rdmap::BodyStatus bs = rdmap::ParseTerminate(body, &t, &used);
      if (bs != rdmap::BodyStatus::kOk) {
        Violation(frame, who, absl::StrCat("malformed Terminate: ", std::string(rdmap::BodyStatusName(bs))));
      } else {
        Line(frame, who,
             absl::StrFormat("Terminate layer=%u etype=%u code=%s (%s)%s%s", t.code.layer, t.code.etype,
                             Hex(t.code.code), rdmap::TerminateCodeName(t.code),
                             t.d ? " +ddp-header" : "", t.r ? " +rdma-header" : ""));
      }
      d.terminated = true;
      break;
    }
    default: {
      std::string desc = absl::StrFormat("%s msn=%u len=%u segments=%u", rdmap::OpcodeName(op),
                                         h.msn.value(), u.bytes, u.segments);
      if (op == Opcode::kSendInvalidate || op == Opcode::kSendSeInvalidate) {
        absl::StrAppendFormat(&desc, " invalidate stag=%s", Hex(u.inv_stag));
      }
      Line(frame, who, desc);
      if (u.bytes == u.data.size()) OnRpc(d, who, frame, body);
      break;
    }
  }
  d.untagged.erase(it);
}

void Analyzer::OnRpc(Direction& d, const std::string& who, uint64_t frame, ByteSpan msg) {
  using Rpc = AnalyzerOptions::Rpc;
  if (options_.rpc == Rpc::kOff || msg.empty()) return;
  if (options_.rpc == Rpc::kAuto) {
    // Looks like a transport header (RFC 8166 4.2): a small version number
    // (so that a wrong version is still judged) and a known procedure.
    const uint32_t vers = msg.size() >= rpcrdma::kFixedHeaderSize ? LoadBe32(msg.data() + 4) : 0;
    if (msg.size() < rpcrdma::kFixedHeaderSize || vers == 0 || vers > 255 ||
        LoadBe32(msg.data() + 12) > static_cast<uint32_t>(rpcrdma::Proc::kError)) {
      return;
    }
  }
  ++summary_.rpcrdma_messages;
  rpcrdma::CheckOptions opts;
  rpcrdma::HeaderView hv;
  rpcrdma::HeaderError err;
  bool accepted;
  if (d.calls) {
    const rpcrdma::CallCheck c = rpcrdma::CheckCall(msg, opts);
    hv = c.header;
    err = c.reason;
    accepted = c.verdict == rpcrdma::CallVerdict::kAccept;
  } else {
    const rpcrdma::ReplyCheck c = rpcrdma::CheckReply(msg, opts);
    hv = c.header;
    err = c.reason;
    accepted = c.verdict == rpcrdma::ReplyVerdict::kAccept;
  }
  static constexpr const char* kProcs[] = {"RDMA_MSG", "RDMA_NOMSG", "RDMA_MSGP", "RDMA_DONE", "RDMA_ERROR"};
  const char* proc = hv.proc_raw() <= 4 ? kProcs[hv.proc_raw()] : "unknown";
  if (!accepted) {
    Violation(frame, who,
              absl::StrFormat("RPC-over-RDMA %s xid=%s: %s (RFC 8166)", d.calls ? "call" : "reply",
                              Hex(hv.xid()), rpcrdma::HeaderErrorName(err)));
    return;
  }
  std::string desc = absl::StrFormat("  RPC-over-RDMA %s %s xid=%s credits=%u", d.calls ? "call" : "reply",
                                     proc, Hex(hv.xid()), hv.credit());
  if (hv.proc() == rpcrdma::Proc::kError) {
    absl::StrAppendFormat(&desc, " %s", hv.err() == rpcrdma::ErrCode::kVers ? "ERR_VERS" : "ERR_CHUNK");
    if (hv.err() == rpcrdma::ErrCode::kVers) {
      absl::StrAppendFormat(&desc, " low=%u high=%u", hv.vers_low(), hv.vers_high());
    }
  } else {
    absl::StrAppendFormat(&desc, " read_segments=%u write_chunks=%u reply_chunk=%s payload=%u",
                          hv.read_segment_count(), hv.write_chunk_count(),
                          hv.has_reply_chunk() ? "yes" : "no", hv.payload().size());
  }
  Line(frame, who, desc);
}

// ---- SCTP and the RFC 5043 adaptation ------------------------------------------

void Analyzer::OnSctp(const L4Packet& pkt) {
  SctpAssoc& a = FindOrAdd(sctp_, pkt, " sctp", &summary_.sctp_associations);
  const int dir = a.ep[0] == pkt.src ? 0 : 1;
  const std::string& who = a.who[dir];
  ByteSpan chunks = pkt.payload;
  while (!chunks.empty()) {
    if (chunks.size() < kChunkHeaderSize) {
      Violation(pkt.frame, who, "SCTP chunk header truncated");
      return;
    }
    const uint8_t type = chunks[0];
    const uint8_t flags = chunks[1];
    const size_t len = LoadBe16(chunks.data() + 2);
    if (len < kChunkHeaderSize || len > chunks.size()) {
      Violation(pkt.frame, who, absl::StrFormat("SCTP chunk length %u out of range", len));
      return;
    }
    const ByteSpan chunk = chunks.first(len);
    chunks = chunks.subspan(std::min(chunks.size(), (len + 3) & ~size_t{3}));

    if (type == kChunkInit || type == kChunkInitAck) {
      a.init_seen[dir] = true;
      ByteSpan params = chunk.size() > kChunkHeaderSize + kInitFixedSize
                            ? chunk.subspan(kChunkHeaderSize + kInitFixedSize)
                            : ByteSpan{};
      uint32_t indication = 0;
      bool present = false;
      while (params.size() >= 4) {
        const uint16_t ptype = LoadBe16(params.data());
        const size_t plen = LoadBe16(params.data() + 2);
        if (plen < 4 || plen > params.size()) break;
        if (ptype == sctp::kAdaptationParamType) {
          present = sctp::ParseAdaptationParam(params.first(plen), &indication) == sctp::AdaptStatus::kOk;
        }
        params = params.subspan(std::min(params.size(), (plen + 3) & ~size_t{3}));
      }
      a.ddp_indicated[dir] = sctp::ClassifyPeer(present, indication) == sctp::PeerAdaptation::kDdp;
      Line(pkt.frame, who,
           absl::StrFormat("SCTP %s adaptation=%s", type == kChunkInit ? "INIT" : "INIT-ACK",
                           present ? Hex(indication) : std::string("none")));
      continue;
    }
    if (type != kChunkData) continue;
    if (chunk.size() < 16) {
      Violation(pkt.frame, who, "SCTP DATA chunk shorter than its header");
      continue;
    }
    const uint32_t tsn = LoadBe32(chunk.data() + 4);
    const uint16_t stream = LoadBe16(chunk.data() + 8);
    const uint32_t ppid = LoadBe32(chunk.data() + 12);
    const ByteSpan user = chunk.subspan(16);
    if (ppid != sctp::kPpidDdpSegment && ppid != sctp::kPpidSessionControl) continue;
    if (!a.tsns[dir].insert(tsn).second) continue;  // retransmission
    if (a.init_seen[0] && a.init_seen[1] && !(a.ddp_indicated[0] && a.ddp_indicated[1]) &&
        !a.reported_no_ddp) {
      a.reported_no_ddp = true;
      Violation(pkt.frame, who, "DDP traffic on an association without the DDP adaptation indication "
                                "from both ends (RFC 5043 11.1)");
    }
    if ((flags & kDataFlagUnordered) == 0) {
      Violation(pkt.frame, who, absl::StrFormat("DDP DATA chunk TSN %u not sent unordered (RFC 5043 5.1)", tsn));
    }
    if ((flags & (kDataFlagBegin | kDataFlagEnd)) != (kDataFlagBegin | kDataFlagEnd)) {
      Violation(pkt.frame, who, absl::StrFormat("DDP DATA chunk TSN %u is an SCTP fragment (RFC 5043 9)", tsn));
      continue;
    }
    OnSctpUserData(a, dir, stream, ppid, pkt.frame, user);
  }
}

void Analyzer::OnSctpUserData(SctpAssoc& a, int dir, uint16_t stream, uint32_t ppid, uint64_t frame,
                              ByteSpan user) {
  SctpStream& s = a.streams[stream];
  const std::string swho = absl::StrCat(a.who[dir], " s", stream);
  if (user.size() < sctp::kSsnSize) {
    Violation(frame, swho, "DDP chunk shorter than its DDP-SSN (RFC 5043 5.2.1)");
    return;
  }
  const Seq16 ssn(LoadBe16(user.data()));
  // RFC 5043 6.1: DDP-SSNs restart at 0 with each session; an Initiate with
  // DDP-SSN 0 after the previous session ended starts the next one.
  const bool initiate = ppid == sctp::kPpidSessionControl && user.size() >= sctp::kSessionControlHeaderSize &&
                        LoadBe16(user.data() + 2) == static_cast<uint16_t>(sctp::FunctionCode::kInitiate);
  const bool over = (s.seq[0] && s.seq[0]->closed()) || (s.seq[1] && s.seq[1]->closed());
  if (initiate && ssn.value() == 0 && over) {
    for (int d = 0; d < 2; ++d) {
      s.seq[d].reset();
      s.next_ssn[d] = Seq16(0);
      s.held[d].clear();
      s.ddp[d] = Direction{};
    }
  }
  if (initiate && !s.seq[0] && !s.seq[1] && s.held[dir].empty() && s.next_ssn[dir].value() == 0 &&
      ssn.value() != 0) {
    Violation(frame, swho,
              absl::StrFormat("session starts at DDP-SSN %u, not 0 (RFC 5043 6.1)", ssn.value()));
    s.next_ssn[dir] = ssn;  // decode the rest relative to it
  }
  // RFC 5043 10: chunks are unordered; DDP sees them in DDP-SSN order.
  const uint16_t ahead = static_cast<uint16_t>(ssn.value() - s.next_ssn[dir].value());
  if (ahead != 0) {
    if (ahead >= 32768 || s.held[dir].count(ssn.value()) != 0) {
      Violation(frame, swho,
                absl::StrFormat("DDP-SSN %u repeated or behind the next expected %u (RFC 5043 10)",
                                ssn.value(), s.next_ssn[dir].value()));
      return;
    }
    s.held[dir][ssn.value()] = SctpHeld{frame, ppid, std::vector<uint8_t>(user.begin(), user.end())};
    return;
  }
  OnSctpInOrder(s, dir, swho, ppid, frame, user);
  for (auto it = s.held[dir].find(s.next_ssn[dir].value()); it != s.held[dir].end();
       it = s.held[dir].find(s.next_ssn[dir].value())) {
    const SctpHeld h = std::move(it->second);
    s.held[dir].erase(it);
    OnSctpInOrder(s, dir, swho, h.ppid, h.frame, ByteSpan(h.user));
  }
}

void Analyzer::OnSctpInOrder(SctpStream& s, int dir, const std::string& swho, uint32_t ppid,
                             uint64_t frame, ByteSpan user) {
  s.next_ssn[dir] += 1;
  if (ppid == sctp::kPpidSessionControl) {
    ++summary_.session_control;
    sctp::SessionControl sc;
    const sctp::AdaptStatus st = sctp::ParseSessionControl(user, &sc);
    if (st != sctp::AdaptStatus::kOk) {
      Violation(frame, swho, absl::StrCat("DDP Stream Session Control: ", std::string(sctp::AdaptStatusName(st))));
      return;
    }
    static constexpr const char* kFns[] = {"?", "Initiate", "Accept", "Reject", "Terminate"};
    const auto fn = static_cast<uint16_t>(sc.function);
    Line(frame, swho,
         absl::StrFormat("DDP Session %s ssn=%u private_data=%u", kFns[fn <= 4 ? fn : 0], sc.ssn.value(),
                         sc.private_data.size()));
    if (sc.function == sctp::FunctionCode::kInitiate && !s.seq[0] && !s.seq[1]) {
      // The receiver of the Initiate is passive, the sender active.
      s.seq[1 - dir].emplace(sctp::Role::kPassive);
      s.seq[dir].emplace(sctp::Role::kActive);
      s.ddp[dir].calls = true;
      s.ddp[1 - dir].calls = false;
      s.ddp[0].peer = &s.ddp[1];
      s.ddp[1].peer = &s.ddp[0];
    }
    if (!s.seq[1 - dir]) {
      Violation(frame, swho, "session control before any Initiate on this stream (RFC 5043 6)");
      return;
    }
    static constexpr sctp::ChunkKind kKinds[] = {sctp::ChunkKind::kInitiate, sctp::ChunkKind::kInitiate,
                                                 sctp::ChunkKind::kAccept, sctp::ChunkKind::kReject,
                                                 sctp::ChunkKind::kTerminate};
    if (s.seq[1 - dir]->OnReceive(kKinds[fn]) != sctp::AdaptStatus::kOk) {
      Violation(frame, swho, absl::StrFormat("illegal session sequence: %s here (RFC 5043 6.2-6.6)", kFns[fn]));
    }
    return;
  }
  sctp::SegmentChunk seg;
  const sctp::AdaptStatus st = sctp::ParseSegmentChunk(user, UINT32_MAX, &seg);
  if (st != sctp::AdaptStatus::kOk) {
    Violation(frame, swho, absl::StrCat("DDP Segment chunk: ", std::string(sctp::AdaptStatusName(st))));
    return;
  }
  if (!s.seq[1 - dir]) {
    Violation(frame, swho, "DDP segment before the stream session was initiated (RFC 5043 6)");
  } else if (s.seq[1 - dir]->OnReceive(sctp::ChunkKind::kDdpSegment) != sctp::AdaptStatus::kOk) {
    Violation(frame, swho, "DDP segment outside an open stream session (RFC 5043 6)");
  }
  OnUlpdu(s.ddp[dir], swho, frame, seg.segment);
}

void Analyzer::Finish() {
  for (auto& [key, a] : sctp_) {
    for (auto& [id, st] : a->streams) {
      for (int d = 0; d < 2; ++d) {
        if (!st.held[d].empty()) {
          Line(0, absl::StrCat(a->who[d], " s", id),
               absl::StrFormat("capture ends with %u chunks waiting for DDP-SSN %u", st.held[d].size(),
                               st.next_ssn[d].value()));
        }
      }
    }
  }
  for (auto& [key, c] : tcp_) {
    for (int d = 0; d < 2; ++d) {
      if (c->phase[d] == TcpConn::Phase::kFull && !c->dec[d]->at_fpdu_boundary()) {
        Line(0, c->who[d], "capture ends inside an FPDU");
      }
      if (!c->ddp[d].untagged.empty() || !c->ddp[d].tagged.empty()) {
        Line(0, c->who[d],
             absl::StrFormat("capture ends with %u DDP message(s) incomplete",
                             c->ddp[d].untagged.size() + c->ddp[d].tagged.size()));
      }
    }
  }
  const Summary& s = summary_;
  out_ << absl::StrFormat(
      "summary: packets=%u tcp_connections=%u mpa_connections=%u sctp_associations=%u fpdus=%u "
      "markers=%u ddp_segments=%u rdmap_messages=%u rpcrdma_messages=%u session_control=%u "
      "violations=%u warnings=%u\n",
      s.packets, s.tcp_connections, s.mpa_connections, s.sctp_associations, s.fpdus, s.markers,
      s.ddp_segments, s.rdmap_messages, s.rpcrdma_messages, s.session_control, s.violations,
      s.warnings);
}

}  // namespace iwarp::decode
