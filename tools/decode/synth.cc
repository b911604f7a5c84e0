#include "tools/decode/synth.h"

#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ddp/ddp_header.h"
#include "ddp/rdmap.h"
#include "ddp/segmenter.h"
#include "mpa/mpa_fpdu.h"
#include "mpa/mpa_frame.h"
#include "rpcrdma/header.h"
#include "sctp/adaptation.h"
#include "tools/decode/capture.h"

namespace iwarp::decode {
namespace {

// 198.18.0.0/15 (RFC 2544 benchmarking range): never routed.
constexpr Endpoint kClient{0xC6120002u, 40000};
constexpr Endpoint kServer{0xC6120001u, 4791};
constexpr int kC = 0;  // client side index
constexpr int kS = 1;  // server side index

constexpr uint32_t kRpcXid = 0x5eed0001u;
constexpr uint32_t kWriteStag = 0x01000200u;
constexpr uint32_t kSinkStag = 0x02000300u;
constexpr uint32_t kSourceStag = 0x03000400u;

struct Message {
  int from = kC;
  ddp::OutboundMessage m;
  std::vector<uint8_t> payload;
};

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return v;
}

void PutWords(std::vector<uint8_t>& out, std::initializer_list<uint32_t> words) {
  for (uint32_t w : words) {
    uint8_t b[4];
    StoreBe32(b, w);
    out.insert(out.end(), b, b + 4);
  }
}

// An RPC-over-RDMA RDMA_MSG (no chunks) carrying an ONC RPC (RFC 5531) NFSv3
// NULL call or its reply.
std::vector<uint8_t> RpcOverRdma(bool call, uint32_t vers) {
  rpcrdma::HeaderSpec spec;
  spec.xid = kRpcXid;
  spec.vers = vers;
  spec.credit = 32;
  spec.proc = rpcrdma::Proc::kMsg;
  std::vector<uint8_t> out(rpcrdma::EncodedHeaderSize(spec));
  size_t n = 0;
  if (rpcrdma::EncodeHeader(spec, out, &n) != rpcrdma::EncodeStatus::kOk) return {};
  out.resize(n);
  if (call) {
    // xid, CALL, rpcvers 2, prog NFS, vers 3, proc NULL, AUTH_NONE cred and verf.
    PutWords(out, {kRpcXid, 0, 2, 100003, 3, 0, 0, 0, 0, 0});
  } else {
    // xid, REPLY, MSG_ACCEPTED, AUTH_NONE verf, SUCCESS.
    PutWords(out, {kRpcXid, 1, 0, 0, 0, 0});
  }
  return out;
}

// The RDMAP traffic of one session, in send order.
std::vector<Message> Traffic(const SynthOptions& o, bool with_rtr) {
  std::vector<Message> t;
  auto add = [&](int from, ddp::OutboundMessage m, std::vector<uint8_t> payload) {
    m.length = static_cast<uint32_t>(payload.size());
    t.push_back(Message{from, m, std::move(payload)});
  };
  if (with_rtr && o.fault != Fault::kNoRtr) {
    // RFC 6581 Write RTR: zero-length RDMA Write (non-zero STag by default).
    add(kC, rdmap::RdmaWriteMessage(o.rtr_stag, 0, 0), {});
  }
  add(kC, rdmap::SendMessage(rdmap::Opcode::kSend, Seq32(1), 0, 0),
      RpcOverRdma(true, o.fault == Fault::kBadRpcVersion ? 2 : rpcrdma::kVersion1));
  add(kS, rdmap::SendMessage(rdmap::Opcode::kSend, Seq32(1), 0, 0), RpcOverRdma(false, 1));
  add(kC, rdmap::RdmaWriteMessage(kWriteStag, 0x10000, 0), Pattern(o.write_size, 1));
  rdmap::ReadRequest rr{kSinkStag, 0x20000, o.read_size, kSourceStag, 0x30000};
  std::vector<uint8_t> body(rdmap::kReadRequestSize);
  rdmap::EncodeReadRequest(rr, body);
  add(kC, rdmap::ReadRequestMessage(Seq32(1)), body);
  add(kS, rdmap::ReadResponseMessage(kSinkStag, 0x20000, 0), Pattern(o.read_size, 2));
  if (o.fault == Fault::kOrphanReadResponse) {
    add(kS, rdmap::ReadResponseMessage(0x0badbad0u, 0, 0), Pattern(64, 3));
  }
  add(kC,
      rdmap::SendMessage(rdmap::Opcode::kSendInvalidate, Seq32(o.fault == Fault::kMsnGap ? 3 : 2), 0,
                         kWriteStag),
      Pattern(64, 4));
  return t;
}

uint64_t CountRpc(const std::vector<Message>& t) {
  uint64_t n = 0;
  for (const Message& m : t) {
    if (!m.m.tagged && m.m.rsvd_ulp0 == rdmap::MakeControl(rdmap::Opcode::kSend)) ++n;
  }
  return n;
}

// Runs the segmenter over one message, calling emit(header, payload, last).
template <typename Emit>
uint64_t Segment(const Message& msg, uint32_t mulpdu, Emit emit) {
  ddp::OutboundMessage m = msg.m;
  m.length = static_cast<uint32_t>(msg.payload.size());
  ddp::Segmenter seg(m, mulpdu);
  std::array<uint8_t, ddp::kMaxHeaderSize> hdr{};
  ddp::SegmentDesc d;
  uint64_t n = 0;
  while (seg.Next(hdr, &d)) {
    emit(ByteSpan(hdr.data(), d.header_length),
         ByteSpan(msg.payload).subspan(d.message_offset, d.payload_length), n);
    ++n;
  }
  return n;
}

class TcpSynth {
 public:
  explicit TcpSynth(CaptureWriter& w) : w_(w) {}

  void Handshake() {
    w_.Tcp(kClient, kServer, seq_[kC] - 1, 0, kTcpSyn, {});
    w_.Tcp(kServer, kClient, seq_[kS] - 1, seq_[kC], kTcpSyn | kTcpAck, {});
    w_.Tcp(kClient, kServer, seq_[kC], seq_[kS], kTcpAck, {});
  }
  void Send(int side, ByteSpan bytes, uint8_t flags = kTcpPsh | kTcpAck) {
    w_.Tcp(ep(side), ep(1 - side), seq_[side], seq_[1 - side], flags, bytes);
    seq_[side] += static_cast<uint32_t>(bytes.size());
    if (flags & kTcpFin) ++seq_[side];
  }
  void Startup(int side, const mpa::StartupFrame& f) {
    std::vector<uint8_t> buf(mpa::StartupFrameSize(f));
    mpa::EncodeStartupFrame(f, buf);
    Send(side, buf);
    cfg_[side].marker_origin = Seq32(seq_[side]);
  }
  void Configure(bool markers, bool crc) {
    for (auto& c : cfg_) {
      c.markers = markers;
      c.crc = crc;
    }
  }
  // Frames one DDP segment as an FPDU in its own TCP segment.
  void Fpdu(int side, ByteSpan header, ByteSpan payload, Fault fault) {
    const Seq32 start(seq_[side]);
    std::vector<uint8_t> out(mpa::FpduWireSize(header.size() + payload.size(), start, cfg_[side]));
    mpa::EncodeFpdu(header, payload, start, cfg_[side], out);
    if (fault == Fault::kCorruptPayload && out.size() > 40) {
      out[out.size() - 9] ^= 0x20;  // inside the ULPDU, after the CRC was computed
    }
    if (fault == Fault::kBadMarker) {
      for (size_t k = 0; k + mpa::kMarkerSize <= out.size(); ++k) {
        if (mpa::DistanceToMarker(start + static_cast<uint32_t>(k), cfg_[side].marker_origin) == 0 && k > 0) {
          out[k + 3] ^= 0x04;  // FPDUPTR off by four octets
          break;
        }
      }
    }
    Send(side, out);
  }
  uint32_t Mulpdu(int side) const { return mpa::Mulpdu(mss_, cfg_[side].markers); }
  void set_mss(uint32_t mss) { mss_ = mss; }

 private:
  static Endpoint ep(int side) { return side == kC ? kClient : kServer; }
  CaptureWriter& w_;
  uint32_t seq_[2] = {0x10000001u, 0xfffff001u};  // the server's wraps during the session
  mpa::FpduConfig cfg_[2];
  uint32_t mss_ = 1460;
};

}  // namespace

std::string_view FaultName(Fault f) {
  using Enum = Fault;
  switch (f) { IWARP_DECODE_FAULTS(IWARP_ENUM_NAME_CASE) }
  return "?";
}

bool ParseFault(std::string_view name, Fault* out) {
  for (int i = 0; i <= static_cast<int>(Fault::kSctpNoInitiate); ++i) {
    if (FaultName(static_cast<Fault>(i)) == name) {
      *out = static_cast<Fault>(i);
      return true;
    }
  }
  return false;
}

absl::Status WriteTcpSession(const std::string& path, const SynthOptions& o, SynthCounts* counts) {
  CaptureWriter w;
  if (absl::Status s = w.Open(path); !s.ok()) return s;
  TcpSynth t(w);
  t.set_mss(o.mss);
  t.Handshake();
  t.Configure(o.markers, o.crc);

  static constexpr uint8_t kPd[] = {'i', 'w', 'a', 'r', 'p', 'd'};
  mpa::StartupFrame req;
  req.type = mpa::FrameType::kRequest;
  req.markers = o.markers;
  req.crc = o.crc;
  req.revision = mpa::kRevision2;
  req.ird_ord = mpa::IrdOrd{32, 32, true, false, true, true};
  req.private_data = kPd;
  mpa::StartupFrame rep = req;
  rep.type = mpa::FrameType::kReply;
  rep.ird_ord = mpa::IrdOrd{32, 32, true, false, true, false};  // Write RTR chosen

  std::vector<Message> traffic = Traffic(o, true);
  SynthCounts c;
  c.rdmap_messages = traffic.size();
  c.rpcrdma_messages = CountRpc(traffic);
  auto send_msg = [&](const Message& m, size_t index) {
    c.ddp_segments += Segment(m, t.Mulpdu(m.from), [&](ByteSpan h, ByteSpan p, uint64_t seg_no) {
      Fault f = Fault::kNone;
      if (index == 3 && seg_no == 1 && o.fault == Fault::kCorruptPayload) f = o.fault;
      if (index == 3 && seg_no == 0 && o.fault == Fault::kBadMarker) f = o.fault;
      t.Fpdu(m.from, h, p, f);
    });
  };

  t.Startup(kC, req);
  size_t next = 0;
  if (o.fault == Fault::kDataBeforeReply) send_msg(traffic[next], next), ++next;
  t.Startup(kS, rep);
  for (; next < traffic.size(); ++next) send_msg(traffic[next], next);
  t.Send(kC, {}, kTcpFin | kTcpAck);
  t.Send(kS, {}, kTcpFin | kTcpAck);
  t.Send(kC, {}, kTcpAck);
  if (counts != nullptr) *counts = c;
  return w.Close();
}

namespace {

constexpr uint8_t kDataUnordered = 0x04;
constexpr uint8_t kDataBeginEnd = 0x03;
constexpr uint16_t kDdpStream = 1;

class SctpSynth {
 public:
  explicit SctpSynth(CaptureWriter& w) : w_(w) {}

  void InitExchange(bool server_indicates) {
    Init(kC, 1, server_indicates);
    Init(kS, 2, server_indicates);
    Chunk(kC, 10, 0, {});  // COOKIE ECHO (cookie elided)
    Chunk(kS, 11, 0, {});  // COOKIE ACK
  }
  void Data(int side, uint32_t ppid, ByteSpan user, bool unordered = true) {
    std::vector<uint8_t> v(12 + user.size());
    StoreBe32(v.data(), tsn_[side]++);
    StoreBe16(v.data() + 4, kDdpStream);
    StoreBe16(v.data() + 6, 0);  // SSN: unused for unordered chunks
    StoreBe32(v.data() + 8, ppid);
    std::copy(user.begin(), user.end(), v.begin() + 12);
    Chunk(side, 0, static_cast<uint8_t>(kDataBeginEnd | (unordered ? kDataUnordered : 0)), v);
  }
  void Session(int side, sctp::FunctionCode fn, ByteSpan pd) {
    sctp::SessionControl m;
    m.ssn = Seq16(ssn_[side]++);
    m.function = fn;
    m.private_data = pd;
    std::vector<uint8_t> buf(sctp::kSessionControlHeaderSize + pd.size());
    size_t n = 0;
    sctp::EncodeSessionControl(m, buf, &n);
    buf.resize(n);
    Data(side, sctp::kPpidSessionControl, buf);
  }
  void Segment(int side, ByteSpan header, ByteSpan payload, bool unordered) {
    std::vector<uint8_t> user(sctp::kSsnSize + header.size() + payload.size());
    sctp::EncodeSegmentChunkPrefix(Seq16(ssn_[side]++), user);
    std::copy(header.begin(), header.end(), user.begin() + sctp::kSsnSize);
    std::copy(payload.begin(), payload.end(),
              user.begin() + static_cast<ptrdiff_t>(sctp::kSsnSize + header.size()));
    Data(side, sctp::kPpidDdpSegment, user, unordered);
  }

 private:
  static Endpoint ep(int side) { return side == kC ? kClient : kServer; }
  void Init(int side, uint8_t type, bool server_indicates) {
    std::vector<uint8_t> v(16);
    StoreBe32(v.data(), side == kC ? kTagC : kTagS);  // initiate tag
    StoreBe32(v.data() + 4, 1u << 20);                // a_rwnd
    StoreBe16(v.data() + 8, 16);                      // outbound streams
    StoreBe16(v.data() + 10, 16);                     // inbound streams
    StoreBe32(v.data() + 12, tsn_[side]);             // initial TSN
    if (type == 2) {  // INIT ACK carries a State Cookie (RFC 9260 3.3.3)
      const uint8_t cookie[] = {0, 7, 0, 8, 'c', 'o', 'o', 'k'};
      v.insert(v.end(), cookie, cookie + sizeof(cookie));
    }
    if (side == kC || server_indicates) {
      uint8_t p[sctp::kAdaptationParamSize];
      sctp::EncodeAdaptationParam(sctp::kDdpAdaptationIndication, p);
      v.insert(v.end(), p, p + sizeof(p));
    }
    Chunk(side, type, 0, v);
  }
  void Chunk(int side, uint8_t type, uint8_t flags, ByteSpan body) {
    std::vector<uint8_t> c(4 + body.size());
    c[0] = type;
    c[1] = flags;
    StoreBe16(c.data() + 2, static_cast<uint16_t>(c.size()));
    std::copy(body.begin(), body.end(), c.begin() + 4);
    c.resize((c.size() + 3) & ~size_t{3}, 0);
    // The INIT carries verification tag 0 (RFC 9260 8.5.1).
    const uint32_t vtag = type == 1 ? 0 : (side == kC ? kTagS : kTagC);
    w_.Sctp(ep(side), ep(1 - side), vtag, c);
  }

  static constexpr uint32_t kTagC = 0x1111c11eu;
  static constexpr uint32_t kTagS = 0x5e7e5e7eu;
  CaptureWriter& w_;
  uint32_t tsn_[2] = {1000, 9000};
  uint16_t ssn_[2] = {0, 0};  // RFC 5043 6.1: every session starts at DDP-SSN 0
};

}  // namespace

absl::Status WriteSctpSession(const std::string& path, const SynthOptions& o, SynthCounts* counts) {
  CaptureWriter w;
  if (absl::Status s = w.Open(path); !s.ok()) return s;
  SctpSynth s(w);
  s.InitExchange(o.fault != Fault::kSctpNoIndication);
  static constexpr uint8_t kPd[] = {'i', 'w', 'a', 'r', 'p', 'd'};
  if (o.fault != Fault::kSctpNoInitiate) {
    s.Session(kC, sctp::FunctionCode::kInitiate, kPd);
    s.Session(kS, sctp::FunctionCode::kAccept, kPd);
  }
  sctp::PathParams path_params;
  path_params.path_mtu = o.mss + 40;
  const uint32_t mulpdu = sctp::MaxDdpSegmentSize(path_params);
  std::vector<Message> traffic = Traffic(o, false);
  SynthCounts c;
  c.rdmap_messages = traffic.size();
  c.rpcrdma_messages = CountRpc(traffic);
  bool first = true;
  for (const Message& m : traffic) {
    c.ddp_segments += Segment(m, mulpdu, [&](ByteSpan h, ByteSpan p, uint64_t) {
      s.Segment(m.from, h, p, !(first && o.fault == Fault::kSctpOrdered));
      first = false;
    });
  }
  if (counts != nullptr) *counts = c;
  return w.Close();
}

}  // namespace iwarp::decode
