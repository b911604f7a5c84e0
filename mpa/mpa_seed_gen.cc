// Writes the seed corpora of the mpa_frame and fpdu_stream fuzz targets.
// Usage: mpa_seed_gen SOURCE_DIR/mpa/fuzz_corpus
// The seeds are checked in; rerun this only when the input layouts change.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "mpa/mpa_fpdu.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_test_vectors.h"

namespace iwarp::mpa {
namespace {

using Bytes = std::vector<uint8_t>;

bool Write(const std::string& path, const Bytes& b) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return std::fclose(f) == 0 && ok;
}

Bytes Frame(uint8_t ctl, const StartupFrame& f) {
  Bytes out(1 + StartupFrameSize(f));
  out[0] = ctl;
  EncodeStartupFrame(f, MutableByteSpan(out).subspan(1));
  return out;
}

Bytes Raw(uint8_t ctl, std::string_view key, uint8_t flags, uint8_t rev, uint16_t pd_len,
          size_t pd_present) {
  Bytes out(1 + kStartupHeaderSize + pd_present, 0x33);
  out[0] = ctl;
  std::copy(key.begin(), key.end(), out.begin() + 1);
  out[17] = flags;
  out[18] = rev;
  StoreBe16(out.data() + 19, pd_len);
  return out;
}

// fpdu_stream header: flags, origin, start multiplier, max selector, splits.
Bytes StreamHeader(uint8_t flags, uint32_t origin, uint8_t start4, uint8_t max_sel,
                   const Bytes& splits) {
  Bytes out(8 + splits.size());
  out[0] = flags;
  StoreBe32(out.data() + 1, origin);
  out[5] = start4;
  out[6] = max_sel;
  out[7] = static_cast<uint8_t>(splits.size());
  std::copy(splits.begin(), splits.end(), out.begin() + 8);
  return out;
}

Bytes EncodeStream(const std::vector<Bytes>& ulpdus, const FpduConfig& c, uint32_t start) {
  Bytes wire;
  Seq32 seq(start);
  for (const Bytes& u : ulpdus) {
    const size_t at = wire.size();
    wire.resize(at + FpduWireSize(u.size(), seq, c));
    const auto r = EncodeFpdu({}, u, seq, c, MutableByteSpan(wire).subspan(at));
    seq += static_cast<uint32_t>(r.size);
  }
  return wire;
}

Bytes Cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

int WriteSeeds(const std::string& dir) {
  bool ok = true;
  auto frame = [&](const std::string& name, const Bytes& b) {
    ok = Write(dir + "/mpa_frame/" + name, b) && ok;
  };
  auto stream = [&](const std::string& name, const Bytes& b) {
    ok = Write(dir + "/fpdu_stream/" + name, b) && ok;
  };

  const Bytes pd = {0xf6, 0xab, 0x0e, 0x18, 0, 1, 0, 0, 0, 0, 0x10, 0};
  StartupFrame req;
  req.revision = kRevision1;
  req.markers = true;
  req.crc = true;
  frame("req_rev1", Frame(0, req));
  req.revision = kRevision2;
  req.ird_ord = IrdOrd{128, 128, true, false, true, true};
  req.private_data = pd;
  frame("req_rev2_irdord", Frame(0, req));
  StartupFrame rep;
  rep.type = FrameType::kReply;
  rep.crc = true;
  rep.reject = true;
  rep.ird_ord = IrdOrd{0x3FFF, 0x3FFF, false, false, false, true};
  frame("rep_rev2_reject", Frame(1, rep));
  rep.ird_ord.reset();
  rep.reject = false;
  rep.revision = kRevision1;
  rep.private_data = ByteSpan(pd).first(10);
  frame("rep_rev1_pd", Frame(1, rep));
  const Bytes full = Frame(0, req);
  frame("truncated", Bytes(full.begin(), full.begin() + 11));
  frame("bad_key", Raw(0, "MPA ID Xeq Frame", 0, 1, 0, 0));
  frame("pd_513", Raw(0, kRequestKey, 0, 1, 513, 513));
  frame("pd_512", Raw(4, kRequestKey, 0xC0, 2, 512, 512));
  frame("s_rev1", Raw(0, kRequestKey, 0x10, 1, 4, 4));
  frame("s_short", Raw(0, kRequestKey, 0x10, 2, 3, 3));
  frame("reserved_strict", Raw(2, kRequestKey, 0x4F, 2, 0, 0));
  frame("req_when_rep", Raw(1, kRequestKey, 0, 2, 0, 0));
  frame("rev0", Raw(0, kRequestKey, 0, 0, 0, 0));

  // fpdu_stream: raw mode (flags bit 2 clear).
  const Bytes fig5 = testing::Rfc5044Figure5();
  const Bytes fig6 = testing::Rfc5044Figure6();
  stream("fig5_whole", Cat(StreamHeader(3, 0, 0, 4, {}), fig5));
  stream("fig5_bytes", Cat(StreamHeader(3, 0, 0, 4, {1}), fig5));
  stream("fig6_alone", Cat(StreamHeader(3, 0, 0x1ec / 4, 4, {5, 17}), fig6));
  Bytes fig5_bad = fig5;
  fig5_bad[30] ^= 0x40;
  stream("fig5_crc_error", Cat(StreamHeader(3, 0, 0, 4, {}), fig5_bad));
  std::vector<Bytes> ulpdus;
  for (size_t len : {0, 1, 2, 3, 42, 600, 1454, 7}) {
    Bytes u(len);
    for (size_t i = 0; i < len; ++i) u[i] = static_cast<uint8_t>(i * 31 + len);
    ulpdus.push_back(u);
  }
  const FpduConfig mc{true, true, Seq32(0xFFFFFF00u)};
  stream("markers_wrap", Cat(StreamHeader(3, 0xFFFFFF00u, 40, 5, {200, 0, 3}),
                             EncodeStream(ulpdus, mc, 0xFFFFFF00u + 160)));
  const FpduConfig plain{false, true, Seq32(5)};
  stream("no_markers", Cat(StreamHeader(2, 5, 0, 5, {}), EncodeStream(ulpdus, plain, 5)));
  const FpduConfig no_crc{true, false, Seq32(0)};
  stream("markers_no_crc", Cat(StreamHeader(1, 0, 0, 5, {9}), EncodeStream(ulpdus, no_crc, 0)));
  stream("too_long", Cat(StreamHeader(2, 0, 0, 2, {}), Bytes{0x00, 0x11, 1, 2, 3}));
  // Encode mode (bit 2 set): [len_hi len_lo] data ...
  stream("encode_markers", Cat(StreamHeader(7, 0x1000, 3, 6, {1, 2, 250}),
                               Bytes{0x00, 0x05, 1, 2, 3, 4, 5, 0x02, 0x00, 9, 9, 0x00, 0x00}));
  stream("encode_plain", Cat(StreamHeader(6, 0, 0, 7, {}), Bytes{0x05, 0xAE, 0xAA, 0x00, 0x01, 0x77}));
  return ok ? 0 : 1;
}

}  // namespace iwarp::mpa

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (mpa/fuzz_corpus)\n", argv[0]);
    return 2;
  }
  return iwarp::mpa::WriteSeeds(argv[1]);
}
