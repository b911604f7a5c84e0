#include <string>

#include "gtest/gtest.h"
#include "tools/iwarpctl_format.h"
#include "tools/iwarpctl_json.h"

namespace iwarp::tools {
namespace {

TEST(IwarpctlJson, ParsesTelemetryShapes) {
  auto v = ParseJson(
      R"({"version":"DPDK 22.11.11","pid":17496,"max_output_len":16384,)"
      R"( "a":[1, 2,3], "s":"x\"\\\/\u00e9", "t":true, "n":null, "neg":-1.5e3,)"
      R"( "big":18446744073709551615, "huge":18446744073709551616})");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->Text("version"), "DPDK 22.11.11");
  EXPECT_EQ(v->Uint("max_output_len"), 16384u);
  ASSERT_NE(v->Find("a"), nullptr);
  EXPECT_EQ(v->Find("a")->array.size(), 3u);
  EXPECT_EQ(v->Find("a")->array[2].uint_value, 3u);
  EXPECT_EQ(v->Text("s"), "x\"\\/\xc3\xa9");
  EXPECT_EQ(v->Text("t"), "true");
  EXPECT_EQ(v->Find("n")->type, JsonValue::Type::kNull);
  EXPECT_FALSE(v->Find("neg")->is_uint);
  EXPECT_EQ(v->Text("neg"), "-1.5e3");
  EXPECT_EQ(v->Uint("big"), 18446744073709551615ULL);
  EXPECT_FALSE(v->Find("huge")->is_uint);
  EXPECT_EQ(v->Uint("missing", 7), 7u);
}

TEST(IwarpctlJson, RejectsMalformedInput) {
  for (const char* bad : {"", "{", "{\"a\" 1}", "[1,]", "{\"a\":1}x", "\"abc", "tru",
                          "{\"a\":\"\x01\"}", "\"\\q\"", "-"}) {
    EXPECT_FALSE(ParseJson(bad).ok()) << bad;
  }
  std::string deep(100, '[');
  deep += std::string(100, ']');
  EXPECT_FALSE(ParseJson(deep).ok());
}

constexpr char kStats[] =
    R"({"/iwarpd/stats": {"lcores": [1, 2],)"
    R"( "lcore_1": {"rx_packets": 10, "drops": 3, "drop_eth_truncated": 0, "drop_ipv4_bad_checksum": 3},)"
    R"( "lcore_2": {"rx_packets": 5, "drops": 1, "drop_eth_truncated": 1, "drop_ipv4_bad_checksum": 0},)"
    R"( "total": {"rx_packets": 15, "drops": 4, "drop_eth_truncated": 1, "drop_ipv4_bad_checksum": 3,)"
    R"( "drop_icmp_truncated": 0}}})";

TEST(IwarpctlFormat, StatsTableHasLcoreColumnsAndNamesNonZeroDrops) {
  auto doc = ParseJson(kStats);
  ASSERT_TRUE(doc.ok());
  auto text = FormatStats(*doc->Find("/iwarpd/stats"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "counter                  lcore 1   lcore 2     total\n"
            "rx_packets                    10         5        15\n"
            "drops                          3         1         4\n"
            "  eth_truncated                0         1         1\n"
            "  ipv4_bad_checksum            3         0         3\n");
}

TEST(IwarpctlFormat, StatsRejectsOtherShapes) {
  auto doc = ParseJson(R"({"lcores": [1], "total": {}})");
  ASSERT_TRUE(doc.ok());
  EXPECT_FALSE(FormatStats(*doc).ok());  // lcore_1 missing
  EXPECT_FALSE(FormatStats(JsonValue{}).ok());
}

TEST(IwarpctlFormat, Ports) {
  auto doc = ParseJson(
      R"({"port_ids": [0], "port_0": {"name": "tap0", "ethdev": "net_tap0", "driver": "net_tap",)"
      R"( "mac": "2e:77:14:35:0e:d4", "ipv4": "198.18.5.1/24", "gateway": "", "link": "up",)"
      R"( "speed_mbps": 10000, "duplex": "full", "mtu": 1500, "socket": 0, "rx_queues": 1,)"
      R"( "tx_queues": 1, "rx_descriptors": 1024, "tx_descriptors": 1024, "steering": "single_worker",)"
      R"( "ipackets": 6, "opackets": 6, "ibytes": 532, "obytes": 532, "imissed": 0, "ierrors": 0,)"
      R"( "oerrors": 0, "rx_nombuf": 0}})");
  ASSERT_TRUE(doc.ok());
  auto text = FormatPorts(*doc);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "port 0 'tap0' net_tap0 (net_tap)\n"
            "  mac 2e:77:14:35:0e:d4  ipv4 198.18.5.1/24  mtu 1500\n"
            "  link up 10000 Mb/s full-duplex  socket 0\n"
            "  queues rx 1 x 1024, tx 1 x 1024  steering single_worker\n"
            "  rx 6 packets 532 bytes  missed 0  errors 0  no_mbuf 0\n"
            "  tx 6 packets 532 bytes  errors 0\n");
}

}  // namespace
}  // namespace iwarp::tools
