// iwarp-decode's protocol analysis: TCP -> MPA -> DDP -> RDMAP -> RPC-over-RDMA,
// and SCTP -> RFC 5043 adaptation -> DDP -> RDMAP -> RPC-over-RDMA.
//
// Fed the packets of a capture in order, it prints one line per protocol
// message and one line per violation of the RFCs (CRC, Marker, header rules,
// illegal sequences). It is the project's own conformance checker, built on
// the same codecs the data plane uses, for paths Wireshark cannot decode (DDP
// over SCTP) or only decodes without judging.
#ifndef IWARPD_TOOLS_DECODE_ANALYZER_H_
#define IWARPD_TOOLS_DECODE_ANALYZER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "common/seq.h"
#include "tools/decode/capture.h"

namespace iwarp::decode {

struct AnalyzerOptions {
  // Print one line per DDP segment in addition to one per message.
  bool segments = false;
  // Decode Sends as RPC-over-RDMA: kAuto when the first words look like a
  // transport header (small version number, known procedure), kOn always,
  // kOff never.
  enum class Rpc { kAuto, kOn, kOff } rpc = Rpc::kAuto;
  // Print nothing but violations and the summary.
  bool quiet = false;
};

struct Summary {
  uint64_t packets = 0;
  uint64_t tcp_connections = 0;
  uint64_t mpa_connections = 0;
  uint64_t sctp_associations = 0;
  uint64_t fpdus = 0;
  uint64_t markers = 0;
  uint64_t ddp_segments = 0;
  uint64_t rdmap_messages = 0;
  uint64_t rpcrdma_messages = 0;
  uint64_t session_control = 0;
  uint64_t violations = 0;
  // Legal but worth knowing (a peer may refuse it); not in the exit status.
  uint64_t warnings = 0;
};

class Analyzer {
 public:
  Analyzer(std::ostream& out, const AnalyzerOptions& options);
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  void OnPacket(const L4Packet& pkt);
  void OnBadFrame(uint64_t frame, FrameResult r);
  // End of capture: reports what was left incomplete and prints the summary.
  void Finish();

  const Summary& summary() const { return summary_; }

  // Implementation types, public so the .cc file's helpers can name them.
  struct Direction;
  struct TcpConn;
  struct SctpAssoc;
  struct SctpStream;

 private:
  using ConnKey = std::tuple<uint32_t, uint16_t, uint32_t, uint16_t>;

  template <typename Conn>
  Conn& FindOrAdd(std::map<ConnKey, std::unique_ptr<Conn>>& table, const L4Packet& pkt,
                  const char* suffix, uint64_t* created);
  void OnTcp(const L4Packet& pkt);
  void OnSctp(const L4Packet& pkt);
  void OnSctpUserData(SctpAssoc& a, int dir, uint16_t stream, uint32_t ppid, uint64_t frame, ByteSpan user);
  void OnSctpInOrder(SctpStream& s, int dir, const std::string& swho, uint32_t ppid, uint64_t frame,
                     ByteSpan user);
  void OnStream(TcpConn& c, int dir, uint64_t frame, Seq32 seq, ByteSpan data);
  void OnStartupFrame(TcpConn& c, int dir, uint64_t frame);
  void OnUlpdu(Direction& d, const std::string& who, uint64_t frame, ByteSpan ulpdu);
  void OnMessage(Direction& d, const std::string& who, uint64_t frame);
  void OnRpc(Direction& d, const std::string& who, uint64_t frame, ByteSpan msg);
  void Violation(uint64_t frame, const std::string& who, const std::string& what);
  void Warning(uint64_t frame, const std::string& who, const std::string& what);
  void Line(uint64_t frame, const std::string& who, const std::string& what);

  std::ostream& out_;
  AnalyzerOptions options_;
  Summary summary_;
  std::map<ConnKey, std::unique_ptr<TcpConn>> tcp_;
  std::map<ConnKey, std::unique_ptr<SctpAssoc>> sctp_;
};

}  // namespace iwarp::decode

#endif  // IWARPD_TOOLS_DECODE_ANALYZER_H_
