// Synthesises captures of complete iWARP and RDMA-over-SCTP sessions from the
// project's own encoders (MPA frames and FPDUs, DDP segmentation, RDMAP,
// RPC-over-RDMA, the RFC 5043 adaptation), optionally with one deliberate
// protocol fault. Used by the wire tests: tshark must decode the clean
// captures with every CRC good, and iwarp-decode must find exactly the fault.
#ifndef IWARPD_TOOLS_DECODE_SYNTH_H_
#define IWARPD_TOOLS_DECODE_SYNTH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/enum_names.h"

namespace iwarp::decode {

// X(enumerator, "name")
#define IWARP_DECODE_FAULTS(X)                                                                     \
  X(kNone, "none")                                                                                 \
  X(kCorruptPayload, "corrupt-payload")  /* one RDMA Write payload byte flipped after the CRC */   \
  X(kBadMarker, "bad-marker")  /* a Marker's FPDUPTR altered (use with crc = false) */             \
  X(kDataBeforeReply, "data-before-reply")  /* initiator sends its RTR before the MPA Reply */     \
  X(kNoRtr, "no-rtr")  /* initiator's first FPDU is not the negotiated RTR */                      \
  X(kMsnGap, "msn-gap")  /* a Send skips an MSN */                                                 \
  X(kOrphanReadResponse, "orphan-read-response")  /* a Read Response nobody asked for */           \
  X(kBadRpcVersion, "bad-rpc-version")  /* an RPC-over-RDMA call with rdma_vers 2 */               \
  /* SCTP sessions only: */                                                                        \
  X(kSctpOrdered, "sctp-ordered")  /* a DDP DATA chunk without the U (unordered) flag */           \
  X(kSctpNoIndication, "sctp-no-indication")  /* INIT-ACK without the DDP adaptation indication */ \
  X(kSctpNoInitiate, "sctp-no-initiate")  /* DDP segments on a stream with no session initiated */
enum class Fault { IWARP_DECODE_FAULTS(IWARP_ENUMERATOR) };

std::string_view FaultName(Fault f);
// Parses a FaultName; false if unknown.
bool ParseFault(std::string_view name, Fault* out);

struct SynthOptions {
  bool markers = false;  // Markers requested by both ends
  bool crc = true;       // CRC requested by both ends
  uint32_t mss = 1460;   // TCP EMSS; FPDUs are sized to it (one per segment)
  uint32_t write_size = 5000;  // bytes of the RDMA Write
  uint32_t read_size = 3000;   // bytes of the RDMA Read
  Fault fault = Fault::kNone;
  // STag of the zero-length RDMA Write RTR. RFC 5041 7.1 does not validate
  // it; deployed stacks send non-zero (siw 1), and 0 is what iwarp-decode
  // warns about.
  uint32_t rtr_stag = 1;
};

// What a clean session holds, for tests to compare against the decoder.
struct SynthCounts {
  uint64_t rdmap_messages = 0;
  uint64_t rpcrdma_messages = 0;
  uint64_t ddp_segments = 0;
};

// A TCP connection 198.18.0.2:40000 -> 198.18.0.1:4791 with: three-way
// handshake, MPA Request/Reply (Rev 2, RFC 6581 peer-to-peer with Write RTR),
// the RTR, an RPC-over-RDMA call and reply in Sends, an RDMA Write, an RDMA
// Read (Request and segmented Response), a Send with Invalidate and a FIN.
absl::Status WriteTcpSession(const std::string& path, const SynthOptions& options,
                             SynthCounts* counts = nullptr);

// The same RDMAP traffic over an SCTP association (RFC 5043): INIT/INIT-ACK
// with the adaptation indication, a DDP stream session on stream 1, then
// unordered DDP Segment chunks.
absl::Status WriteSctpSession(const std::string& path, const SynthOptions& options,
                              SynthCounts* counts = nullptr);

}  // namespace iwarp::decode

#endif  // IWARPD_TOOLS_DECODE_SYNTH_H_
