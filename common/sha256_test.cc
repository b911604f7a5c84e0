#include "common/sha256.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp {
namespace {

ByteSpan Bytes(std::string_view s) {
  return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// NIST CSRC "Examples with intermediate values" for SHA-256 (FIPS 180-4):
// one-block, two-block and the long message; plus the empty message.
struct Vector {
  std::string message;
  std::string digest;
};

std::vector<Vector> NistVectors() {
  return {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmno"
       "pqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
      {std::string(1000000, 'a'),
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
}

TEST(Sha256, NistVectorsOneShot) {
  for (const Vector& v : NistVectors()) {
    EXPECT_EQ(ToHex(Sha256::Hash(Bytes(v.message))), v.digest) << "length " << v.message.size();
  }
}

// The same digests however the message is cut into Update calls, including
// cuts at and around the 55/56/64-byte padding boundaries.
TEST(Sha256, IncrementalMatchesOneShotForEveryChunkSize) {
  for (const Vector& v : NistVectors()) {
    if (v.message.size() > 200) continue;
    for (size_t chunk = 1; chunk <= 70; ++chunk) {
      Sha256 s;
      for (size_t off = 0; off < v.message.size(); off += chunk) {
        s.Update(Bytes(std::string_view(v.message).substr(off, chunk)));
      }
      EXPECT_EQ(s.length(), v.message.size());
      EXPECT_EQ(ToHex(s.Finish()), v.digest) << "chunk " << chunk;
    }
  }
}

TEST(Sha256, MillionAsInOddChunks) {
  const std::string a(1000000, 'a');
  Sha256 s;
  size_t off = 0;
  for (size_t chunk = 1; off < a.size(); chunk = chunk * 7 % 1499 + 1) {
    const size_t n = std::min(chunk, a.size() - off);
    s.Update(Bytes(std::string_view(a).substr(off, n)));
    off += n;
  }
  EXPECT_EQ(ToHex(s.Finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding edge, checked against values from an
// independent implementation (python3 hashlib).
TEST(Sha256, PaddingBoundaries) {
  struct Case {
    size_t len;
    const char* digest;
  };
  const Case cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ToHex(Sha256::Hash(Bytes(std::string(c.len, 'a')))), c.digest) << c.len;
  }
}

TEST(Sha256, ResetStartsOver) {
  Sha256 s;
  s.Update(Bytes("junk"));
  s.Reset();
  s.Update(Bytes("abc"));
  EXPECT_EQ(ToHex(s.Finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The two block functions fold the same blocks into the same state: random
// states and data, 1 to 40 blocks, from every alignment.
TEST(Sha256, ShaNiMatchesPortable) {
  if (!Sha256::Accelerated()) {
    std::printf("SKIP reason: this CPU has no SHA extensions; only the portable path runs\n");
    GTEST_SKIP() << "no SHA extensions on this CPU";
  }
  std::mt19937_64 rng(20261123);
  std::vector<uint8_t> data(40 * Sha256::kBlockBytes + 16);
  for (int round = 0; round < 300; ++round) {
    for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
    uint32_t a[8];
    for (uint32_t& w : a) w = static_cast<uint32_t>(rng());
    uint32_t b[8];
    std::memcpy(b, a, sizeof(a));
    const size_t blocks = 1 + rng() % 40;
    const size_t align = rng() % 16;
    sha256_internal::CompressPortable(a, data.data() + align, blocks);
    ASSERT_TRUE(sha256_internal::CompressShaNi(b, data.data() + align, blocks));
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(a[i], b[i]) << "round " << round << " word " << i << " blocks " << blocks;
    }
  }
}

// Where /proc/cpuinfo lists sha_ni, the accelerated path is the one taken.
TEST(Sha256, UsesTheShaExtensionsWhereTheCpuHasThem) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool listed = false;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      listed = (" " + line + " ").find(" sha_ni ") != std::string::npos;
      break;
    }
  }
  EXPECT_EQ(Sha256::Accelerated(), listed);
}

// NIST's digests through the portable path alone (the Sha256 class takes the
// SHA extensions where it can).
TEST(Sha256, PortablePathGivesNistDigests) {
  // "abc" padded to one block (FIPS 180-4 5.1.1).
  uint8_t block[64] = {'a', 'b', 'c', 0x80};
  block[63] = 24;
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  sha256_internal::CompressPortable(h, block, 1);
  Sha256::Digest d;
  for (size_t i = 0; i < 8; ++i) StoreBe32(d.data() + 4 * i, h[i]);
  EXPECT_EQ(ToHex(d), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace iwarp
