#include "dataplane/l3/flow_hash.h"

#include "dataplane/l3/ipv4.h"
#include "dataplane/l3/mac.h"

namespace iwarp::dataplane {

const std::array<uint8_t, kRssKeyLen> kRssKey = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

bool ExtractFlowKey(ByteSpan frame, FlowKey* key) {
  if (frame.size() < kEthHeaderLen + kIpv4MinHeaderLen) return false;
  if (LoadBe16(frame.data() + kEthTypeOffset) != kEtherTypeIpv4) return false;
  const uint8_t* ip = frame.data() + kEthHeaderLen;
  if ((ip[kIpv4VersionIhlOffset] >> 4) != 4) return false;
  const size_t ihl = (ip[kIpv4VersionIhlOffset] & 0x0f) * size_t{4};
  if (ihl < kIpv4MinHeaderLen) return false;
  const uint8_t proto = ip[kIpv4ProtocolOffset];
  if (proto != kIpProtoTcp && proto != kIpProtoUdp) return false;
  const uint16_t frag = LoadBe16(ip + kIpv4FlagsFragOffset);
  if ((frag & (kIpv4FlagMoreFragments | kIpv4FragOffsetMask)) != 0) return false;
  if (frame.size() < kEthHeaderLen + ihl + 4) return false;
  key->src_ip = LoadBe32(ip + kIpv4SrcOffset);
  key->dst_ip = LoadBe32(ip + kIpv4DstOffset);
  key->src_port = LoadBe16(ip + ihl);
  key->dst_port = LoadBe16(ip + ihl + 2);
  return true;
}

uint32_t ToeplitzHash(std::span<const uint8_t> key, ByteSpan input) {
  if (key.size() < input.size() + 4) return 0;
  uint32_t result = 0;
  // The 32-bit window of the key aligned with the current input bit.
  uint32_t window = LoadBe32(key.data());
  for (size_t i = 0; i < input.size(); ++i) {
    const uint8_t next_key_byte = key[i + 4];
    for (int b = 7; b >= 0; --b) {
      if ((input[i] >> b) & 1) result ^= window;
      window = (window << 1) | ((next_key_byte >> b) & 1);
    }
  }
  return result;
}

uint32_t FlowHash(const FlowKey& key, std::span<const uint8_t> rss_key) {
  uint8_t input[12];
  StoreBe32(input, key.src_ip);
  StoreBe32(input + 4, key.dst_ip);
  StoreBe16(input + 8, key.src_port);
  StoreBe16(input + 10, key.dst_port);
  return ToeplitzHash(rss_key, ByteSpan(input, sizeof(input)));
}

}  // namespace iwarp::dataplane
