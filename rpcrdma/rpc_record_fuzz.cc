// Fuzz target `rpc_record`: RFC 5531 11 record marking reassembly of an
// arbitrary byte stream, delivered in arbitrary splits.
//
// Input: two bytes of maximum record size (big-endian, 0 = 65536), one byte
// of split step, then the stream. Traps when the reassembler's records
// differ from a reference parse of the whole stream (written here, not
// sharing code with it), when a record exceeds the maximum, or when it
// reports oversize where the reference does not (or the reverse).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "rpcrdma/rpc_tcp.h"

namespace iwarp::rpc {
namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

// Whole-buffer reference: records, and whether parsing stopped on oversize.
bool Reference(ByteSpan s, size_t max, std::vector<std::vector<uint8_t>>* out) {
  std::vector<uint8_t> cur;
  size_t off = 0;
  while (s.size() - off >= 4) {
    const uint32_t w = LoadBe32(s.data() + off);
    const size_t len = w & 0x7fffffffu;
    off += 4;
    if (cur.size() + len > max) return true;
    const size_t take = std::min(len, s.size() - off);
    cur.insert(cur.end(), s.data() + off, s.data() + off + take);
    off += take;
    if (take < len) return false;
    if (w & 0x80000000u) {
      out->push_back(cur);
      cur.clear();
    }
  }
  return false;
}

void One(const uint8_t* data, size_t size) {
  if (size < 3) return;
  size_t max = (size_t{data[0]} << 8) | data[1];
  if (max == 0) max = 65536;
  const size_t step = size_t{data[2]} + 1;
  const ByteSpan stream(data + 3, size - 3);

  std::vector<std::vector<uint8_t>> want;
  const bool want_oversize = Reference(stream, max, &want);

  RecordReassembler r(max);
  std::vector<std::vector<uint8_t>> got;
  bool oversize = false;
  for (size_t off = 0; off < stream.size() && !oversize; off += step) {
    const ByteSpan piece = stream.subspan(off, std::min(step, stream.size() - off));
    oversize = r.Feed(piece, [&](std::vector<uint8_t>& rec) {
      Check(rec.size() <= max);
      got.push_back(rec);
    }) == RecordError::kOversize;
  }
  Check(oversize == want_oversize);
  Check(got == want);
  Check(r.partial_bytes() <= max);
}

}  // namespace
}  // namespace iwarp::rpc

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarp::rpc::One(data, size);
  return 0;
}
