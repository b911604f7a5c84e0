// Test-only: the annotated FPDU hex dumps of RFC 5044 section 4.4, typed in
// octet by octet from the RFC.
#ifndef IWARPD_MPA_MPA_TEST_VECTORS_H_
#define IWARPD_MPA_MPA_TEST_VECTORS_H_

#include <cstdint>
#include <vector>

namespace iwarp::mpa::testing {

// The 18-octet DDP untagged header the dumps carry: control 41 43 (Send,
// Last), reserved STag, QN 0, the given MSN, MO 0.
inline std::vector<uint8_t> DdpSendHeader(uint8_t msn) {
  return {0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, msn, 0, 0, 0, 0};
}

// Figure 5: first FPDU of the stream (sequence 0 = marker origin): a Marker,
// ULPDU_Length 42, the DDP header with MSN 1, 24 zero octets, CRC 52 23 99 83.
inline std::vector<uint8_t> Rfc5044Figure5() {
  std::vector<uint8_t> v = {0x00, 0x00, 0x00, 0x00,  // 0000 Marker
                            0x00, 0x2a,              // 0004 ULPDU Length
                            0x41, 0x43,              // 0006 DDP control
                            0x00, 0x00, 0x00, 0x00,  // 0008 reserved (STag)
                            0x00, 0x00, 0x00, 0x00,  // 000c Queue 0
                            0x00, 0x00, 0x00, 0x01,  // 0010 MSN 1
                            0x00, 0x00, 0x00, 0x00}; // 0014 MO 0
  v.resize(v.size() + 24, 0x00);                     // 0018..002f Send data
  v.insert(v.end(), {0x52, 0x23, 0x99, 0x83});       // 0030 CRC32c
  return v;
}

// Figure 6: the second FPDU of a stream whose first FPDU took octets
// 0x000..0x1eb; it starts at sequence 0x1ec and holds a Marker at 0x200 with
// FPDUPTR 0x14. CRC 84 92 58 98.
inline constexpr uint32_t kFigure6Seq = 0x1ec;
inline std::vector<uint8_t> Rfc5044Figure6() {
  std::vector<uint8_t> v = {0x00, 0x2a,              // 01ec Length
                            0x41, 0x43,              // 01ee DDP control
                            0x00, 0x00, 0x00, 0x00,  // 01f0 reserved (STag)
                            0x00, 0x00, 0x00, 0x00,  // 01f4 Queue 0
                            0x00, 0x00, 0x00, 0x02,  // 01f8 MSN 2
                            0x00, 0x00, 0x00, 0x00,  // 01fc MO 0
                            0x00, 0x00, 0x00, 0x14}; // 0200 Marker, FPDUPTR 0x14
  v.resize(v.size() + 24, 0x00);                     // 0204..021b Send data
  v.insert(v.end(), {0x84, 0x92, 0x58, 0x98});       // 021c CRC32c
  return v;
}

}  // namespace iwarp::mpa::testing

#endif  // IWARPD_MPA_MPA_TEST_VECTORS_H_
