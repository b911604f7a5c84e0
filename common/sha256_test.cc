#include "common/sha256.h"

#include <algorithm>
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

// The services read a running hash's digest from a copy (tcp_services.cc,
// iwarp_services.cc) and go on hashing: the copy and the original are
// independent values.
TEST(Sha256, CopyIsAnIndependentRunningHash) {
  Sha256 s;
  s.Update(Bytes("abcdbcdecdefdefgefghfghighijhijk"));
  Sha256 copy = s;
  s.Update(Bytes("ijkljklmklmnlmnomnopnopq"));
  copy.Update(Bytes("junk"));
  Sha256 reset_copy = copy;
  reset_copy.Reset();
  reset_copy.Update(Bytes("abc"));
  EXPECT_EQ(ToHex(s.Finish()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(ToHex(reset_copy.Finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(copy.length(), 36u);
  EXPECT_EQ(ToHex(copy.Finish()),
            ToHex(Sha256::Hash(Bytes("abcdbcdecdefdefgefghfghighijhijkjunk"))));
}

// Random messages cut at random points, against the one-shot digest, from
// every alignment: the block code libcrypto picked for this CPU sees
// unaligned and partial blocks.
TEST(Sha256, RandomCutsMatchOneShot) {
  std::mt19937_64 rng(20261123);
  std::vector<uint8_t> data(40 * Sha256::kBlockBytes + 16);
  for (int round = 0; round < 200; ++round) {
    for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
    const size_t align = rng() % 16;
    const size_t n = rng() % (data.size() - align);
    const ByteSpan msg(data.data() + align, n);
    Sha256 s;
    for (size_t off = 0; off < n;) {
      const size_t take = std::min<size_t>(n - off, rng() % 200);
      s.Update(msg.subspan(off, take));
      off += take;
    }
    ASSERT_EQ(s.Finish(), Sha256::Hash(msg)) << "round " << round << " length " << n;
  }
}

}  // namespace
}  // namespace iwarp
