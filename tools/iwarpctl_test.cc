#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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
  for (const char* bad : {"", " ", "{", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "{\"a\":1}x",
                          "{\"a\":1}{\"b\":2}", "\"abc", "tru", "nul", "{\"a\":\"\x01\"}",
                          "\"\\q\"", "\"\\u12\"", "-", "01", "1.2.3", "--1", "1e", "{a:1}",
                          "['a']", "\"\xff\xfe\"", "\"\xc3\""}) {
    const absl::StatusOr<JsonValue> v = ParseJson(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(v.status())) << bad;
  }
  // An embedded NUL is not the end of the document.
  EXPECT_FALSE(ParseJson(std::string_view("{}\0", 3)).ok());
}

// What the operator reads when the daemon sends something broken: where
// and what.
TEST(IwarpctlJson, ErrorSaysWhereAndWhat) {
  const absl::StatusOr<JsonValue> v = ParseJson("{\"a\": 1,\n \"b\": tru}");
  ASSERT_FALSE(v.ok());
  const std::string message(v.status().message());
  EXPECT_EQ(message.rfind("bad JSON: parse error at line 2, column 10: ", 0), 0u) << message;
  EXPECT_NE(message.find("invalid literal"), std::string::npos) << message;
  EXPECT_NE(message.find("tru"), std::string::npos) << message;
  const absl::StatusOr<JsonValue> cut = ParseJson("{\"lcores\": [1, 2");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("unexpected end of input"), std::string::npos)
      << cut.status();
}

TEST(IwarpctlJson, NestingIsBoundedAt64Levels) {
  const std::string ok64 = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(ParseJson(ok64).ok());
  const std::string deep65 = std::string(65, '[') + std::string(65, ']');
  const absl::StatusOr<JsonValue> v = ParseJson(deep65);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "bad JSON: nested deeper than 64 levels");
  // A hostile depth ends in the same error, not in a stack overflow.
  EXPECT_FALSE(ParseJson(std::string(1 << 20, '[')).ok());
  EXPECT_FALSE(ParseJson(std::string(1 << 20, '{')).ok());
}

TEST(IwarpctlJson, ObjectsKeepDocumentOrderAndFindTheFirstOfDuplicates) {
  auto v = ParseJson(R"({"z": 1, "a": {"y": [true, null, "s"], "b": {}}, "z": 2, "m": []})");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->type, JsonValue::Type::kObject);
  ASSERT_EQ(v->object.size(), 4u);
  EXPECT_EQ(v->object[0].key, "z");
  EXPECT_EQ(v->object[1].key, "a");
  EXPECT_EQ(v->object[2].key, "z");
  EXPECT_EQ(v->object[3].key, "m");
  EXPECT_EQ(v->Uint("z"), 1u);
  const JsonValue* a = v->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->object.size(), 2u);
  const JsonValue* y = a->Find("y");
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(y->array.size(), 3u);
  EXPECT_EQ(y->array[0].type, JsonValue::Type::kBool);
  EXPECT_TRUE(y->array[0].boolean);
  EXPECT_EQ(y->array[1].type, JsonValue::Type::kNull);
  EXPECT_EQ(y->array[2].string, "s");
  EXPECT_EQ(a->Find("b")->type, JsonValue::Type::kObject);
  EXPECT_EQ(v->Find("m")->type, JsonValue::Type::kArray);
  EXPECT_TRUE(v->Find("m")->array.empty());
}

TEST(IwarpctlJson, ScalarDocumentsAndEscapes) {
  auto n = ParseJson(" 42 \n");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->type, JsonValue::Type::kNumber);
  EXPECT_EQ(n->uint_value, 42u);
  EXPECT_EQ(n->number_text, "42");
  auto neg = ParseJson("-7");
  ASSERT_TRUE(neg.ok());
  EXPECT_FALSE(neg->is_uint);
  EXPECT_EQ(neg->number_text, "-7");
  // A surrogate pair is one code point (U+1F600), four UTF-8 octets.
  auto s = ParseJson(R"({"s": "\ud83d\ude00 \u00e9\t"})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->Text("s"), "\xf0\x9f\x98\x80 \xc3\xa9\t");
  EXPECT_FALSE(ParseJson(R"("\ud83d")").ok());  // a lone high surrogate
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
      R"( "tx_queues": 1, "rx_descriptors": 1024, "tx_descriptors": 1024, "steering": "single_worker", "tso": "on",)"
      R"( "ipackets": 6, "opackets": 6, "ibytes": 532, "obytes": 532, "imissed": 0, "ierrors": 0,)"
      R"( "oerrors": 0, "rx_nombuf": 0}})");
  ASSERT_TRUE(doc.ok());
  auto text = FormatPorts(*doc);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "port 0 'tap0' net_tap0 (net_tap)\n"
            "  mac 2e:77:14:35:0e:d4  ipv4 198.18.5.1/24  mtu 1500\n"
            "  link up 10000 Mb/s full-duplex  socket 0\n"
            "  queues rx 1 x 1024, tx 1 x 1024  steering single_worker  tso on\n"
            "  rx 6 packets 532 bytes  missed 0  errors 0  no_mbuf 0\n"
            "  tx 6 packets 532 bytes  errors 0\n");
}

TEST(IwarpctlFormat, ConnectionsFromSeveralPages) {
  auto p1 = ParseJson(
      R"({"total": 2, "first": 0, "shown": 1, "conn_0": {"lcore": 1, "local": "198.18.0.1:7",)"
      R"( "remote": "198.18.0.2:40000", "state": "ESTABLISHED", "service": "echo", "bytes_in": 10,)"
      R"( "bytes_out": 10, "retrans": 0, "timeouts": 0, "srtt_us": 55, "cwnd": 14600, "unacked": 0}})");
  auto p2 = ParseJson(
      R"({"total": 2, "first": 1, "shown": 1, "conn_1": {"lcore": 2, "local": "198.18.0.1:9",)"
      R"( "remote": "198.18.0.2:40001", "state": "TIME-WAIT", "service": "", "bytes_in": 123456789,)"
      R"( "bytes_out": 0, "retrans": 3, "timeouts": 1, "srtt_us": 70, "cwnd": 2920, "unacked": 0}})");
  ASSERT_TRUE(p1.ok() && p2.ok());
  auto text = FormatConnections({*p1, *p2});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("198.18.0.2:40000  ESTABLISHED"), std::string::npos) << *text;
  EXPECT_NE(text->find("123456789"), std::string::npos) << *text;
  EXPECT_NE(text->find("2 of 2 connections\n"), std::string::npos) << *text;
  EXPECT_FALSE(FormatConnections({JsonValue{}}).ok());
}

TEST(IwarpctlFormat, ServicesWithTransfers) {
  auto doc = ParseJson(
      R"({"names": ["sink"], "svc_0": {"name": "sink", "type": "sink", "port": 9, "accepted": 2,)"
      R"( "connected": 0, "connect_failed": 0, "active": 0, "closed": 2, "closed_abnormal": 1,)"
      R"( "bytes_in": 30, "bytes_out": 0}, "transfers_0": ["10 abc complete 198.18.0.2:1",)"
      R"( "20 def reset 198.18.0.2:2"]})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto text = FormatServices(*doc);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "service sink (sink, port 9): active 0, accepted 2, connected 0, closed 2 (abnormal "
            "1), bytes in 30, out 0\n"
            "  transfer 10 abc complete 198.18.0.2:1\n"
            "  transfer 20 def reset 198.18.0.2:2\n");
}

TEST(IwarpctlFormat, QpsWithTerminate) {
  auto doc = ParseJson(
      R"({"total": 2, "qp_0": {"lcore": 1, "service": "r", "state": "RTS",)"
      R"( "local": "198.18.0.1:9999", "remote": "198.18.0.2:32768", "mpa_revision": 2, "crc": 1,)"
      R"( "tx_markers": 0, "rx_markers": 1, "enhanced": 1, "ird": 32, "ord": 8, "rtr": "write",)"
      R"( "fpdus_in": 10, "fpdus_out": 12, "bytes_placed": 4096, "bytes_sent": 100,)"
      R"( "read_responses_sent": 1, "crc_errors": 1, "marker_errors": 0,)"
      R"( "terminate_sent": "layer 2 etype 0 code 2", "terminate_received": "-"}, "shown": 1})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto text = FormatQps(*doc);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "r 198.18.0.1:9999 -> 198.18.0.2:32768 RTS  mpa rev 2 crc 1 markers tx 0 rx 1 ird 32 "
            "ord 8 rtr write\n"
            "  fpdus in 10 out 12  bytes placed 4096 sent 100  read responses 1  crc errors 1  "
            "marker errors 0\n"
            "  terminate sent layer 2 etype 0 code 2, received -\n"
            "1 of 2 QPs\n");
  auto bad = ParseJson(R"({"names": []})");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(FormatQps(*bad).ok());
}

// Ended QPs: a graceful close shows CLOSED, a failure ERROR, each with why
// it ended ("end"); a live QP ("end": "-") shows its state alone.
TEST(IwarpctlFormat, QpsShowHowTheyEnded) {
  auto qp = [](int i, const char* state, const char* end) {
    return absl::StrCat(R"( "qp_)", i, R"(": {"lcore": 1, "service": "r", "state": ")", state,
                        R"(", "end": ")", end, R"(", "local": "198.18.0.1:9999",)",
                        R"( "remote": "198.18.0.2:3276)", i, R"(", "mpa_revision": 2, "crc": 1,)",
                        R"( "tx_markers": 0, "rx_markers": 0, "ird": 8, "ord": 8, "rtr": "none",)",
                        R"( "fpdus_in": 1, "fpdus_out": 1, "bytes_placed": 0, "bytes_sent": 0,)",
                        R"( "read_responses_sent": 0, "crc_errors": 0, "marker_errors": 0,)",
                        R"( "terminate_sent": "-", "terminate_received": "-"})");
  };
  auto doc = ParseJson(absl::StrCat(R"({"total": 3,)", qp(0, "CLOSED", "closed"), ",",
                                    qp(1, "ERROR", "reset"), ",", qp(2, "RTS", "-"),
                                    R"(, "shown": 3})"));
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto text = FormatQps(*doc);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("r 198.18.0.1:9999 -> 198.18.0.2:32760 CLOSED (closed)  mpa rev 2"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("r 198.18.0.1:9999 -> 198.18.0.2:32761 ERROR (reset)  mpa rev 2"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("r 198.18.0.1:9999 -> 198.18.0.2:32762 RTS  mpa rev 2"), std::string::npos)
      << *text;
  EXPECT_NE(text->find("3 of 3 QPs\n"), std::string::npos) << *text;
}

TEST(IwarpctlFormat, App) {
  auto doc = ParseJson(
      R"({"state": "running", "sessions_active": 2, "sessions_opened": 5, "sessions_closed": 3,)"
      R"( "sessions_refused": 1, "pds_active": 2, "mrs_active": 4, "cqs_active": 4,)"
      R"( "qps_active": 2, "stags_in_use": 4, "registered_bytes": 8192, "mapped_bytes": 9000,)"
      R"( "connections": 1, "wrs_completed": 77, "wrs_failed": 2, "wrs_flushed": 3,)"
      R"( "bytes_moved": 123456, "events_posted": 6, "events_dropped": 0,)"
      R"( "ring_corruptions": 0, "doorbells": 9, "requests_failed": 1})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto text = FormatApp(*doc);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "application interface: running\n"
            "  sessions       active 2  opened 5  closed 3  refused 1\n"
            "  objects        PDs 2  MRs 4  CQs 4  QPs 2  STags in use 4\n"
            "  memory         registered 8192 bytes  mapped 9000 bytes\n"
            "  work requests  completed 77  failed 2  flushed 3\n"
            "  bytes moved    123456\n"
            "  connections    1 loopback QP pairs\n"
            "  events         posted 6  dropped 0  doorbells 9\n"
            "  errors         requests failed 1  ring corruptions 0\n");
  auto wire = ParseJson(
      R"({"state": "running", "sessions_active": 1, "sessions_opened": 1, "sessions_closed": 0,)"
      R"( "sessions_refused": 0, "pds_active": 1, "mrs_active": 2, "cqs_active": 1,)"
      R"( "qps_active": 1, "stags_in_use": 2, "registered_bytes": 4096, "mapped_bytes": 8192,)"
      R"( "connections": 1, "wrs_completed": 0, "wrs_failed": 0, "wrs_flushed": 0,)"
      R"( "bytes_moved": 0, "events_posted": 3, "events_dropped": 0,)"
      R"( "ring_corruptions": 0, "doorbells": 4, "requests_failed": 0,)"
      R"( "wire_qps_active": 1, "wire_connections": 1, "wire_ack_timeouts": 0,)"
      R"( "wire_requests": 1, "wire_engine": "on", "wire_commands": 5, "wire_events": 6,)"
      R"( "wire_events_dropped": 0, "wire_wrs_posted": 40, "wire_recvs_posted": 41,)"
      R"( "wire_completions": 81, "wire_wrs_flushed": 2, "wire_bad_sqes": 1, "wire_bad_rqes": 2,)"
      R"( "wire_ring_corruptions": 0, "wire_engine_requests": 1, "wire_requests_refused": 0,)"
      R"( "wire_engine_connections": 1, "wire_sctp_associations": 3,)"
      R"( "wire_sctp_associations_active": 1, "wire_sctp_associations_refused": 0,)"
      R"( "wire_sctp_initiates_refused": 2})");
  ASSERT_TRUE(wire.ok()) << wire.status();
  auto wire_text = FormatApp(*wire);
  ASSERT_TRUE(wire_text.ok()) << wire_text.status();
  EXPECT_NE(wire_text->find("  wire QPs       active 1  connected 1  MPA requests 1  ack timeouts 0\n"
                                 "  wire engine    commands 5  events 6 (dropped 0)  connections 1\n"
                                 "  wire WRs       posted 40  recvs 41  completions 81  flushed 2\n"
                                 "  wire errors    bad SQEs 1  bad RQEs 2  ring corruptions 0  requests 1 (refused 0)\n"
                                 "  wire SCTP      associations 3  active 1  refused 0  Initiates refused 2\n"),
            std::string::npos)
      << *wire_text;
  auto no_engine = ParseJson(R"({"state": "running", "wire_qps_active": 0, "wire_connections": 0,)"
                             R"( "wire_ack_timeouts": 0, "wire_requests": 0, "wire_engine": "off"})");
  ASSERT_TRUE(no_engine.ok());
  auto no_engine_text = FormatApp(*no_engine);
  ASSERT_TRUE(no_engine_text.ok());
  EXPECT_NE(no_engine_text->find("  wire engine    off (loopback QPs only)\n"), std::string::npos)
      << *no_engine_text;
  EXPECT_EQ(no_engine_text->find("wire WRs"), std::string::npos) << *no_engine_text;
  // A daemon that holds objects for unacknowledged commands says how many.
  auto held = ParseJson(R"({"state": "running", "wire_qps_active": 0, "wire_connections": 0,)"
                        R"( "wire_ack_timeouts": 3, "wire_requests": 0, "wire_unacked_held": 2,)"
                        R"( "wire_engine": "on"})");
  ASSERT_TRUE(held.ok());
  auto held_text = FormatApp(*held);
  ASSERT_TRUE(held_text.ok());
  EXPECT_NE(held_text->find("  wire QPs       active 0  connected 0  MPA requests 0  ack timeouts 3 "
                            "(held 2)\n"),
            std::string::npos)
      << *held_text;
  auto off = ParseJson(R"({"state": "off"})");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*FormatApp(*off), "application interface: off (no app_interface server running)\n");
  auto bad = ParseJson(R"({"lcores": []})");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(FormatApp(*bad).ok());
}

}  // namespace
}  // namespace iwarp::tools
