#include "config/config.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace iwarp::config {
namespace {

std::string ExamplesDir() {
  const char* dir = std::getenv("IWARPD_CONFIG_EXAMPLES");
  return dir != nullptr ? dir : "config/examples";
}

// The smallest valid config; the error tests edit one line of it.
constexpr char kMinimal[] =
    "version: 1\n"
    "ports:\n"
    "  - name: p0\n"
    "    vdev: net_null0\n"
    "workers:\n"
    "  lcores: [1]\n";

// Loads `yaml` as "t.yaml" and returns the error message ("" on success).
std::string Error(const std::string& yaml) {
  absl::StatusOr<Config> c = LoadConfigString(yaml, "t.yaml");
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  return std::string(c.status().message());
}

// kMinimal followed by `tail`.
std::string Error2(const std::string& tail) { return Error(std::string(kMinimal) + tail); }

TEST(ConfigLoad, MinimalGetsDefaults) {
  absl::StatusOr<Config> c = LoadConfigString(kMinimal);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source, "<string>");
  EXPECT_EQ(c->version, 1);
  EXPECT_EQ(c->eal, EalConfig{});
  ASSERT_EQ(c->ports.size(), 1u);
  EXPECT_EQ(c->ports[0].name, "p0");
  EXPECT_EQ(c->ports[0].vdev, "net_null0");
  EXPECT_EQ(c->ports[0].pci, "");
  EXPECT_EQ(c->ports[0].mtu, 1500u);
  EXPECT_EQ(c->ports[0].rx_descriptors, 1024);
  EXPECT_TRUE(c->interfaces.empty());
  EXPECT_EQ(c->workers.lcores, std::vector<uint32_t>{1});
  EXPECT_EQ(c->workers.burst, 32);
  EXPECT_EQ(c->mempools, MempoolConfig{});
  EXPECT_EQ(c->arp, ArpConfig{});
  EXPECT_EQ(c->logging.level, LogLevel::kInfo);
  EXPECT_TRUE(c->telemetry.enabled);
}

TEST(ConfigLoad, DefaultExample) {
  absl::StatusOr<Config> c = LoadConfigFile(ExamplesDir() + "/default.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eal.main_lcore, 0u);
  EXPECT_EQ(c->eal.memory_mb, 256u);
  EXPECT_EQ(c->eal.hugepages, HugepageMode::kAuto);
  EXPECT_EQ(c->eal.file_prefix, "iwarpd");
  ASSERT_EQ(c->ports.size(), 1u);
  EXPECT_EQ(c->ports[0].vdev, "net_tap0,iface=iw0");
  ASSERT_EQ(c->interfaces.size(), 1u);
  EXPECT_EQ(c->interfaces[0].port, c->ports[0].name);
  EXPECT_EQ(c->interfaces[0].ipv4.address, 0xc6120001u);  // 198.18.0.1
  EXPECT_EQ(c->interfaces[0].ipv4.prefix_len, 24);
  EXPECT_FALSE(c->interfaces[0].gateway.has_value());
  EXPECT_EQ(c->workers.lcores, std::vector<uint32_t>{1});
  EXPECT_EQ(c->workers.idle_sleep_us, 0u);
}

TEST(ConfigLoad, ReferenceExampleSetsEveryKey) {
  absl::StatusOr<Config> c = LoadConfigFile(ExamplesDir() + "/reference.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eal.extra_args, std::vector<std::string>{"--iova-mode=va"});
  ASSERT_EQ(c->ports.size(), 2u);
  EXPECT_EQ(c->ports[1].name, "nic0");
  EXPECT_EQ(c->ports[1].pci, "0000:03:00.0");
  EXPECT_EQ(c->ports[1].vdev, "");
  EXPECT_EQ(c->ports[1].mtu, 9000u);
  ASSERT_EQ(c->interfaces.size(), 2u);
  ASSERT_TRUE(c->interfaces[0].gateway.has_value());
  EXPECT_EQ(FormatIpv4(*c->interfaces[0].gateway), "198.18.0.254");
  EXPECT_EQ(c->interfaces[1].port, "nic0");
  EXPECT_EQ(c->workers.lcores, (std::vector<uint32_t>{1, 2}));
}

TEST(ConfigLoad, SctpSectionAndTransport) {
  absl::StatusOr<Config> r = LoadConfigFile(ExamplesDir() + "/reference.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->sctp.enabled);
  EXPECT_EQ(r->sctp.streams, 8u);
  bool responder = false, client = false;
  for (const ServiceConfig& s : r->services) {
    if (s.transport != IwarpTransport::kSctp) continue;
    responder |= s.type == ServiceType::kIwarpResponder && s.port == 5043;
    client |= s.type == ServiceType::kIwarpClient && s.stream == 0;
  }
  EXPECT_TRUE(responder);
  EXPECT_TRUE(client);
  const std::string kBase =
      "version: 1\nports: [{name: p, vdev: net_null0}]\n"
      "interfaces: [{port: p, ipv4: 198.18.0.1/24}]\nworkers: {lcores: [1]}\n";
  absl::StatusOr<Config> c = LoadConfigString(
      kBase + "sctp: {enabled: true, streams: 16, send_buffer_bytes: 1048576,"
              " receive_buffer_bytes: 65536, tx_queue_packets: 800, max_chunks_on_queue: 1024,"
              " rto_initial_ms: 300, rto_min_ms: 100, rto_max_ms: 900, delayed_sack_ms: 1,"
              " sack_frequency: 1, max_peers: 3, max_associations: 5}\n"
              "services:\n  - {name: c, type: iwarp_client, transport: sctp, stream: 3,"
              " remote: 198.18.0.2, remote_port: 5043}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sctp.streams, 16u);
  EXPECT_EQ(c->sctp.send_buffer_bytes, 1048576u);
  EXPECT_EQ(c->sctp.receive_buffer_bytes, 65536u);
  EXPECT_EQ(c->sctp.tx_queue_packets, 800u);
  EXPECT_EQ(c->sctp.max_chunks_on_queue, 1024u);
  EXPECT_EQ(c->sctp.rto_initial_ms, 300u);
  EXPECT_EQ(c->sctp.rto_min_ms, 100u);
  EXPECT_EQ(c->sctp.rto_max_ms, 900u);
  EXPECT_EQ(c->sctp.delayed_sack_ms, 1u);
  EXPECT_EQ(c->sctp.sack_frequency, 1u);
  EXPECT_EQ(c->sctp.max_peers, 3u);
  EXPECT_EQ(c->sctp.max_associations, 5u);
  EXPECT_EQ(c->services[0].transport, IwarpTransport::kSctp);
  EXPECT_EQ(c->services[0].stream, 3);
  // The effective config round-trips.
  absl::StatusOr<Config> again = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  again->source = c->source;
  EXPECT_EQ(*again, *c);
  const std::string described = DescribeConfig(*c);
  EXPECT_NE(described.find("  sctp: on worker 0, 16 DDP streams, buffers 1048576/65536 bytes, "
                           "rto 100..900 ms\n"),
            std::string::npos)
      << described;
  EXPECT_NE(described.find(", over sctp\n"), std::string::npos) << described;

  // Errors name the place and the fix.
  auto err = [&](const std::string& yaml) {
    absl::StatusOr<Config> e = LoadConfigString(kBase + yaml);
    return e.ok() ? std::string("ok") : std::string(e.status().message());
  };
  EXPECT_EQ(err("services:\n  - {name: r, type: iwarp_responder, transport: sctp, port: 1}\n"),
            "<string>:6:5: services[0].transport: transport: sctp needs sctp.enabled: true; "
            "add 'sctp: {enabled: true}' or use transport: tcp");
  EXPECT_NE(err("sctp: {enabled: true}\nservices:\n  - {name: r, type: iwarp_responder,"
                " port: 1, stream: 2}\n")
                .find("services[0].stream: stream does not apply to type iwarp_responder"),
            std::string::npos);
  EXPECT_NE(err("sctp: {enabled: true}\nservices:\n  - {name: c, type: iwarp_client,"
                " remote: 198.18.0.2, remote_port: 1, stream: 2}\n")
                .find("stream applies to transport: sctp only"),
            std::string::npos);
  // Buffers against the path MTU (1500: 1452-byte chunks): one send buffer
  // must fit the host queue, and no buffer may hold more than 32767 chunks.
  EXPECT_EQ(err("sctp: {enabled: true, send_buffer_bytes: 1048576, tx_queue_packets: 512}\n"),
            "<string>:5:69: sctp.tx_queue_packets: 512 cannot hold one send buffer (1048576 bytes "
            "= 723 full-size packets at MTU 1500) plus 64 control packets; allowed: at least 787, "
            "or lower sctp.send_buffer_bytes");
  EXPECT_EQ(err("sctp: {enabled: true, send_buffer_bytes: 1048576}\n"), "ok");
  EXPECT_EQ(err("sctp: {enabled: true, receive_buffer_bytes: 67108864}\n"),
            "<string>:5:45: sctp.receive_buffer_bytes: 67108864 bytes are 46219 full-size DATA "
            "chunks at MTU 1500; more than 32767 chunks in flight make DDP-SSNs ambiguous "
            "(RFC 5043 10); allowed: at most 47577684 bytes at this MTU (lower it or raise "
            "ports[].mtu)");
  EXPECT_NE(err("sctp: {enabled: true, rto_min_ms: 500, rto_initial_ms: 100}\n")
                .find("sctp.rto_initial_ms: 100 is outside [500, 60000]"),
            std::string::npos);
  EXPECT_NE(err("sctp: {streams: 0}\n").find("sctp.streams"), std::string::npos);
  EXPECT_NE(err("sctp: {enable: true}\n").find("did you mean 'enabled'"), std::string::npos);
  // TCP and SCTP responders may share a port number.
  EXPECT_EQ(err("sctp: {enabled: true}\nservices:\n"
                "  - {name: a, type: iwarp_responder, port: 7}\n"
                "  - {name: b, type: iwarp_responder, transport: sctp, port: 7}\n"),
            "ok");
}

TEST(ConfigLoad, EveryValueRead) {
  absl::StatusOr<Config> c = LoadConfigString(
      "version: 1\n"
      "eal: {main_lcore: 3, memory_mb: 1024, hugepages: off, file_prefix: a-1,"
      " extra_args: [--iova-mode=pa, \"x y\"], cpus: [1, 0]}\n"
      "ports:\n"
      "  - {name: Nic_1, pci: 03:1F.7, mtu: 9600, rx_queues: 4, tx_queues: 2,\n"
      "     rx_descriptors: 64, tx_descriptors: 16384, promiscuous: TRUE, tso: off}\n"
      "interfaces:\n"
      "  - {port: Nic_1, ipv4: 10.1.2.3/31, gateway: 10.1.2.2}\n"
      "  - {port: Nic_1, ipv4: 10.9.0.7/32}\n"
      "workers: {lcores: [0, 5], burst: 256, idle_sleep_us: 10000}\n"
      "mempools: {mbufs: 65535, cache: 0, data_room: 65535}\n"
      "arp: {cache_entries: 16, timeout_s: 86400, pending_packets: 1, retry_ms: 10}\n"
      "logging: {level: debug}\n"
      "telemetry: {enabled: false}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eal.main_lcore, 3u);
  EXPECT_EQ(c->eal.memory_mb, 1024u);
  EXPECT_EQ(c->eal.hugepages, HugepageMode::kOff);
  EXPECT_EQ(c->eal.file_prefix, "a-1");
  EXPECT_EQ(c->eal.extra_args, (std::vector<std::string>{"--iova-mode=pa", "x y"}));
  EXPECT_EQ(c->eal.cpus, (std::vector<uint32_t>{1, 0}));
  const PortConfig& p = c->ports.at(0);
  EXPECT_EQ(p.pci, "0000:03:1f.7");  // short form made long
  EXPECT_EQ(p.mtu, 9600u);
  EXPECT_EQ(p.rx_queues, 4);
  EXPECT_EQ(p.tx_queues, 2);
  EXPECT_EQ(p.rx_descriptors, 64);
  EXPECT_EQ(p.tx_descriptors, 16384);
  EXPECT_TRUE(p.promiscuous);
  EXPECT_EQ(p.tso, TsoMode::kOff);
  EXPECT_EQ(p.tso_origin.text, "<string>:5:73");
  EXPECT_EQ(c->interfaces.at(0).ipv4.address, 0x0a010203u);
  EXPECT_EQ(c->interfaces.at(0).ipv4.prefix_len, 31);
  EXPECT_EQ(c->interfaces.at(0).gateway, 0x0a010202u);
  EXPECT_EQ(c->interfaces.at(1).ipv4.prefix_len, 32);
  EXPECT_EQ(c->workers.lcores, (std::vector<uint32_t>{0, 5}));
  EXPECT_EQ(c->workers.burst, 256);
  EXPECT_EQ(c->workers.idle_sleep_us, 10000u);
  EXPECT_EQ(c->mempools.mbufs, 65535u);
  EXPECT_EQ(c->mempools.cache, 0u);
  EXPECT_EQ(c->mempools.data_room, 65535u);
  EXPECT_EQ(c->arp.cache_entries, 16u);
  EXPECT_EQ(c->arp.timeout_s, 86400u);
  EXPECT_EQ(c->arp.pending_packets, 1u);
  EXPECT_EQ(c->arp.retry_ms, 10u);
  EXPECT_EQ(c->logging.level, LogLevel::kDebug);
  EXPECT_FALSE(c->telemetry.enabled);
}

TEST(ConfigLoad, EmptySectionKeepsDefaults) {
  absl::StatusOr<Config> c = LoadConfigString(std::string(kMinimal) + "eal:\narp:\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eal, EalConfig{});
  EXPECT_EQ(c->arp, ArpConfig{});
}

TEST(ConfigFormat, RoundTripsExamples) {
  for (const char* name : {"default.yaml", "reference.yaml", "iwarp-responder.yaml"}) {
    absl::StatusOr<Config> a = LoadConfigFile(ExamplesDir() + "/" + name);
    ASSERT_TRUE(a.ok()) << a.status();
    std::string yaml = FormatConfigYaml(*a);
    absl::StatusOr<Config> b = LoadConfigString(yaml, a->source);
    ASSERT_TRUE(b.ok()) << b.status() << "\n" << yaml;
    EXPECT_EQ(*a, *b) << yaml;
  }
}

TEST(ConfigFormat, QuotesStrings) {
  absl::StatusOr<Config> a =
      LoadConfigString(std::string(kMinimal) + "eal: {extra_args: ['a\"b\\c', '#x']}\n");
  ASSERT_TRUE(a.ok()) << a.status();
  std::string yaml = FormatConfigYaml(*a);
  EXPECT_NE(yaml.find("  extra_args: [\"a\\\"b\\\\c\", \"#x\"]\n"), std::string::npos) << yaml;
  absl::StatusOr<Config> b = LoadConfigString(yaml);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
}

TEST(ConfigDescribe, DefaultExample) {
  absl::StatusOr<Config> c = LoadConfigString(
      std::string(kMinimal) +
      "interfaces: [{port: p0, ipv4: 198.18.0.1/24, gateway: 198.18.0.254}]\n", "d.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(DescribeConfig(*c),
            "config d.yaml (schema version 1)\n"
            "  eal: main lcore 0, memory 512 MiB, hugepages auto, file prefix iwarpd, extra args []\n"
            "  port p0: vdev net_null0, mtu 1500, rx queues 1 (one per worker) x 1024 descriptors,"
            " tx queues 1 (one per worker) x 1024 descriptors, promiscuous off, tso auto\n"
            "  interface on p0: 198.18.0.1/24, gateway 198.18.0.254\n"
            "  workers: lcores [1], burst 32, busy polling\n"
            "  mempools: 8191 mbufs per port, cache 256, data room 2176 bytes\n"
            "  arp: 1024 entries per worker, timeout 300 s, 64 pending packets per address,"
            " retry 1000 ms\n"
            "  logging: info; telemetry: enabled\n"
            "  app interface: /run/iwarpd/iwarpd.sock mode 0660, 64 sessions, per session 256 QPs"
            " 256 CQs 4096 MRs 1024 MiB, queues <= 4096, 65536 STags\n"
            "  tcp: 256 connections per worker, buffers 262144/262144 bytes (1024 FPDUs in "
            "flight at most), cubic, sack on, timestamps on, syn cookies on_pressure\n");
}

TEST(ConfigStrings, Names) {
  EXPECT_EQ(ToString(HugepageMode::kOn), "on");
  EXPECT_EQ(ToString(HugepageMode::kOff), "off");
  EXPECT_EQ(ToString(LogLevel::kWarning), "warning");
  EXPECT_EQ(ToString(LogLevel::kNotice), "notice");
  EXPECT_EQ(FormatIpv4(0xffffffffu), "255.255.255.255");
  EXPECT_EQ(FormatIpv4(0x0a000001u), "10.0.0.1");
}

// ---- document-level errors ----

TEST(ConfigErrors, MissingFile) {
  absl::StatusOr<Config> c = LoadConfigFile("/nonexistent/iwarpd.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(),
            "/nonexistent/iwarpd.yaml:1:1: (file): cannot read (No such file or directory); "
            "allowed: the path of a readable YAML config file");
}

TEST(ConfigErrors, DirectoryIsNotAFile) {
  absl::StatusOr<Config> c = LoadConfigFile(ExamplesDir());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            ExamplesDir() + ":1:1: (file): cannot read (Is a directory); "
                            "allowed: the path of a readable YAML config file");
}

TEST(ConfigErrors, DeviceIsNotAFile) {
  absl::StatusOr<Config> c = LoadConfigFile("/dev/null");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "/dev/null:1:1: (file): not a regular file; allowed: the path "
                                  "of a readable YAML config file");
}

TEST(ConfigErrors, FileNameAppearsInErrors) {
  std::string path = ::testing::TempDir() + "/config_test_bad.yaml";
  {
    std::ofstream out(path);
    out << "version: 1\nportz: []\n";
  }
  absl::StatusOr<Config> c = LoadConfigFile(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            path + ":2:1: portz: unknown key; allowed keys: version, eal, ports, interfaces, "
                   "workers, mempools, arp, logging, telemetry, app_interface, tcp, services, iwarp, sctp, udp_echo, test_mode (did you mean 'ports'?)");
  std::remove(path.c_str());
}

TEST(ConfigErrors, SyntaxError) {
  EXPECT_EQ(Error("version: 1\nports: [\n  {name: a}\nworkers: x\n"),
            "t.yaml:4:1: (yaml): end of sequence flow not found; allowed: well-formed YAML (check "
            "indentation, ':' after keys, brackets and quotes)");
  EXPECT_EQ(Error("version: 1\n  eal: 2\n"),
            "t.yaml:2:6: (yaml): illegal map value; allowed: well-formed YAML (check "
            "indentation, ':' after keys, brackets and quotes)");
}

TEST(ConfigErrors, ParserThatStopsProgressingIsCutShort) {
  // yaml-cpp 0.7 creates nodes forever on a top-level ',' without a budget.
  EXPECT_EQ(Error(",c"),
            "t.yaml:1:1: (yaml): the parser stopped making progress here; allowed: well-formed "
            "YAML (check indentation, ':' after keys, brackets and quotes)");
}

TEST(ConfigErrors, EmptyAndNonMapDocuments) {
  EXPECT_EQ(Error(""),
            "t.yaml:1:1: (document): the file holds no YAML document; a config needs at least "
            "version, ports and workers (see config/examples/default.yaml)");
  EXPECT_EQ(Error("# only a comment\n"),
            "t.yaml:1:1: (document): the file holds no YAML document; a config needs at least "
            "version, ports and workers (see config/examples/default.yaml)");
  EXPECT_EQ(Error("\n- 1\n"),
            "t.yaml:2:1: (document): the document is not a mapping; write top-level "
            "'key: value' sections starting with 'version: 1'");
  EXPECT_EQ(Error(std::string(kMinimal) + "---\nversion: 1\n"),
            "t.yaml:8:1: (document): a second YAML document starts here; allowed: one document "
            "per file (remove the '---' separator and what follows)");
}

TEST(ConfigErrors, TooLarge) {
  std::string big(kMinimal);
  big += "#";
  big.append(kMaxConfigBytes, 'x');
  EXPECT_EQ(Error(big), "t.yaml:1:1: (file): the file is 1048651 bytes; allowed: at most "
                        "1048576 bytes");
}

// ---- version ----

TEST(ConfigErrors, Version) {
  EXPECT_EQ(Error("version: 2\nports: []\n"),
            "t.yaml:1:10: version: schema version '2' is not supported; allowed: 1 (this iwarpd "
            "reads schema version 1)");
  EXPECT_EQ(Error("version: \"1\"\n"),
            "t.yaml:1:10: version: expected the integer 1, got the string '1'; allowed: 1 "
            "written without quotes");
  EXPECT_EQ(Error("ports: []\n"),
            "t.yaml:1:1: version: missing required key; add 'version: 1' as the first line "
            "(schema version 1)");
}

// ---- top level ----

TEST(ConfigErrors, UnknownTopLevelKey) {
  EXPECT_EQ(Error2("telemetri: {}\n"),
            "t.yaml:7:1: telemetri: unknown key; allowed keys: version, eal, ports, interfaces, "
            "workers, mempools, arp, logging, telemetry, app_interface, tcp, services, iwarp, sctp, udp_echo, test_mode (did you mean 'telemetry'?)");
  EXPECT_EQ(Error2("zzz: 1\n"),
            "t.yaml:7:1: zzz: unknown key; allowed keys: version, eal, ports, interfaces, "
            "workers, mempools, arp, logging, telemetry, app_interface, tcp, services, iwarp, sctp, udp_echo, test_mode");
}

TEST(ConfigErrors, DuplicateKey) {
  EXPECT_EQ(Error2("workers: {lcores: [2]}\n"),
            "t.yaml:7:1: workers: duplicate key (first at 5:1); allowed: each key once per "
            "mapping (remove one of them)");
}

TEST(ConfigErrors, MissingRequiredSections) {
  EXPECT_EQ(Error("version: 1\nworkers: {lcores: [1]}\n"),
            "t.yaml:1:1: ports: missing required key; add a 'ports' list, e.g. ports: "
            "[{name: p0, vdev: \"net_tap0,iface=iw0\"}]");
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0}]\n"),
            "t.yaml:1:1: workers: missing required key; add a 'workers' section, e.g. workers: "
            "{lcores: [1]}");
}

// ---- eal ----

TEST(ConfigErrors, Eal) {
  EXPECT_EQ(Error2("eal:\n  hugepage: on\n"),
            "t.yaml:8:3: eal.hugepage: unknown key; allowed keys: main_lcore, memory_mb, "
            "hugepages, file_prefix, extra_args, cpus (did you mean 'hugepages'?)");
  EXPECT_EQ(Error2("eal:\n  cpus: [0, 1, 0]\n"),
            "t.yaml:8:16: eal.cpus[2]: CPU 0 is listed twice; list every CPU once");
  EXPECT_EQ(Error2("eal:\n  hugepages: maybe\n"),
            "t.yaml:8:14: eal.hugepages: 'maybe' is not a known value; allowed: auto, on, off");
  EXPECT_EQ(Error2("eal:\n  memory_mb: 32\n"),
            "t.yaml:8:14: eal.memory_mb: 32 is out of range; allowed: an integer from 64 to "
            "1048576");
  EXPECT_EQ(Error2("eal:\n  main_lcore: 128\n"),
            "t.yaml:8:15: eal.main_lcore: 128 is out of range; allowed: an integer from 0 to 127");
  EXPECT_EQ(Error2("eal:\n  file_prefix: ../etc\n"),
            "t.yaml:8:16: eal.file_prefix: '../etc' is not a safe file prefix; allowed: 1 to 64 "
            "characters from A-Z a-z 0-9 '_' '-', starting with a letter or digit");
  EXPECT_EQ(Error2("eal:\n  extra_args: [--no-pci, --file-prefix=x]\n"),
            "t.yaml:8:16: eal.extra_args[0]: '--no-pci' is generated from ports[].pci; set "
            "ports[].pci instead");
  EXPECT_EQ(Error2("eal:\n  extra_args: [ok, --file-prefix=x]\n"),
            "t.yaml:8:20: eal.extra_args[1]: '--file-prefix=x' is generated from "
            "eal.file_prefix; set eal.file_prefix instead");
  EXPECT_EQ(Error2("eal:\n  extra_args: [\"a\\tb\"]\n"),
            "t.yaml:8:16: eal.extra_args[0]: 'a\\tb' is not a usable argument; allowed: 1 to 256 "
            "printable ASCII characters, one argument per item");
  EXPECT_EQ(Error2("eal:\n  extra_args: --x\n"),
            "t.yaml:8:15: eal.extra_args: expected a list; allowed: a list of 0 to 64 EAL "
            "arguments (strings)");
  EXPECT_EQ(Error2("eal: 5\n"),
            "t.yaml:7:6: eal: expected a mapping; write the section as indented 'key: value' "
            "lines with keys main_lcore, memory_mb, hugepages, file_prefix, extra_args, cpus");
}

// ---- integers in general ----

TEST(ConfigErrors, IntegerSyntax) {
  EXPECT_EQ(Error2("eal:\n  memory_mb: \"256\"\n"),
            "t.yaml:8:14: eal.memory_mb: expected an integer, got the string '256'; allowed: an "
            "integer from 64 to 1048576, written without quotes");
  EXPECT_EQ(Error2("eal:\n  memory_mb: 0x100\n"),
            "t.yaml:8:14: eal.memory_mb: '0x100' is not a decimal integer; allowed: an integer "
            "from 64 to 1048576 (digits only, no leading zero)");
  EXPECT_EQ(Error2("eal:\n  memory_mb: 0100\n"),
            "t.yaml:8:14: eal.memory_mb: '0100' is not a decimal integer; allowed: an integer "
            "from 64 to 1048576 (digits only, no leading zero)");
  EXPECT_EQ(Error2("eal:\n  main_lcore: -1\n"),
            "t.yaml:8:15: eal.main_lcore: '-1' is out of range; allowed: an integer from 0 to 127");
  EXPECT_EQ(Error2("eal:\n  main_lcore: 99999999999999999999999\n"),
            "t.yaml:8:15: eal.main_lcore: '99999999999999999999999' is out of range; allowed: an "
            "integer from 0 to 127");
  EXPECT_EQ(Error2("eal:\n  main_lcore:\n"),
            "t.yaml:8:3: eal.main_lcore: missing value; allowed: an integer from 0 to 127");
  EXPECT_EQ(Error2("eal:\n  main_lcore: [1]\n"),
            "t.yaml:8:15: eal.main_lcore: expected a single value, got a list; allowed: an "
            "integer from 0 to 127");
}

// ---- ports ----

TEST(ConfigErrors, Ports) {
  EXPECT_EQ(Error("version: 1\nports: []\nworkers: {lcores: [1]}\n"),
            "t.yaml:2:8: ports: the list is empty; allowed: a list of 1 to 32 ports");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n    mtu: 9601\n"
                  "workers: {lcores: [1]}\n"),
            "t.yaml:5:10: ports[0].mtu: 9601 is out of range; allowed: an integer from 68 to 9600");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n    mtus: 9000\n"
                  "workers: {lcores: [1]}\n"),
            "t.yaml:5:5: ports[0].mtus: unknown key; allowed keys: name, vdev, pci, mtu, "
            "rx_queues, tx_queues, rx_descriptors, tx_descriptors, promiscuous, tso, impairment "
            "(did you mean 'mtu'?)");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n"
                  "    rx_descriptors: 1000\nworkers: {lcores: [1]}\n"),
            "t.yaml:5:21: ports[0].rx_descriptors: 1000 is not a power of two; allowed: a power "
            "of two from 64 to 16384");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n"
                  "    promiscuous: yes\nworkers: {lcores: [1]}\n"),
            "t.yaml:5:18: ports[0].promiscuous: 'yes' is not a boolean; allowed: true or false");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n"
                  "    tso: yes\nworkers: {lcores: [1]}\n"),
            "t.yaml:5:10: ports[0].tso: 'yes' is not a known value; allowed: auto, on, off");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n"
                  "    tx_queues: 65\nworkers: {lcores: [1]}\n"),
            "t.yaml:5:16: ports[0].tx_queues: 65 is out of range; allowed: an integer from 0 to 64");
}

TEST(ConfigErrors, PortDevice) {
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    mtu: 1500\nworkers: {lcores: [1]}\n"),
            "t.yaml:3:5: ports[0].vdev: neither vdev nor pci is set; set exactly one of vdev "
            "(e.g. net_tap0,iface=iw0) or pci (e.g. 0000:03:00.0)");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n"
                  "    pci: 0000:03:00.0\nworkers: {lcores: [1]}\n"),
            "t.yaml:5:10: ports[0].pci: both vdev and pci are set; set exactly one of vdev "
            "(virtual device) or pci (physical NIC)");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    pci: 0000:03:20.0\n"
                  "workers: {lcores: [1]}\n"),
            "t.yaml:4:10: ports[0].pci: '0000:03:20.0' is not a PCI address; allowed: a PCI "
            "address DDDD:BB:DD.F or BB:DD.F in hex, e.g. 0000:03:00.0");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net tap0\n"
                  "workers: {lcores: [1]}\n"),
            "t.yaml:4:11: ports[0].vdev: 'net tap0' is not a vdev spec; allowed: a DPDK vdev "
            "spec DRIVERN[,key=value...] of at most 256 printable characters without spaces, "
            "e.g. net_tap0,iface=iw0");
  EXPECT_EQ(Error("version: 1\nports:\n  - {name: a, vdev: \"net_tap0,iface=x\"}\n"
                  "  - {name: b, vdev: \"net_tap0,iface=y\"}\nworkers: {lcores: [1]}\n"),
            "t.yaml:4:21: ports[1].vdev: device 'net_tap0' is already used by port 'a' (at "
            "3:21); each port must name a different device (vdev names carry a number, e.g. "
            "net_tap1)");
}

TEST(ConfigErrors, PortNames) {
  EXPECT_EQ(Error("version: 1\nports:\n  - {name: a, vdev: net_null0}\n"
                  "  - {name: a, vdev: net_null1}\nworkers: {lcores: [1]}\n"),
            "t.yaml:4:12: ports[1].name: duplicate port name 'a' (first at 3:12); give every "
            "port a unique name");
  EXPECT_EQ(Error("version: 1\nports:\n  - {vdev: net_null0}\nworkers: {lcores: [1]}\n"),
            "t.yaml:3:5: ports[0].name: missing required key; add 'name: NAME' (unique, "
            "interfaces refer to the port by it)");
  EXPECT_EQ(Error("version: 1\nports:\n  - {name: 0p, vdev: net_null0}\n"
                  "workers: {lcores: [1]}\n"),
            "t.yaml:3:12: ports[0].name: '0p' is not a valid port name; allowed: 1 to 32 "
            "characters from A-Z a-z 0-9 '_' '-', starting with a letter");
  EXPECT_EQ(Error("version: 1\nports:\n  - net_null0\nworkers: {lcores: [1]}\n"),
            "t.yaml:3:5: ports[0]: expected a mapping; write each port as '- name: NAME' "
            "followed by 'vdev: SPEC' or 'pci: ADDRESS'");
}

// ---- interfaces ----

TEST(ConfigErrors, Interfaces) {
  EXPECT_EQ(Error2("interfaces:\n  - port: p1\n    ipv4: 198.18.0.1/24\n"),
            "t.yaml:8:11: interfaces[0].port: unknown port 'p1'; allowed: a name from ports: p0");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.1\n"),
            "t.yaml:9:11: interfaces[0].ipv4: '198.18.0.1' is not an IPv4 prefix; allowed: "
            "A.B.C.D/LEN with LEN 1 to 32, a unicast host address that is neither the network "
            "nor the broadcast address, e.g. 198.18.0.1/24");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.256/24\n"),
            "t.yaml:9:11: interfaces[0].ipv4: '198.18.0.256/24' is not an IPv4 prefix; allowed: "
            "A.B.C.D/LEN with LEN 1 to 32, a unicast host address that is neither the network "
            "nor the broadcast address, e.g. 198.18.0.1/24");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.1/33\n"),
            "t.yaml:9:11: interfaces[0].ipv4: prefix length 33 is out of range; allowed: "
            "A.B.C.D/LEN with LEN 1 to 32, a unicast host address that is neither the network "
            "nor the broadcast address, e.g. 198.18.0.1/24");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.255/24\n"),
            "t.yaml:9:11: interfaces[0].ipv4: 198.18.0.255 is the broadcast address of "
            "198.18.0.0/24; allowed: A.B.C.D/LEN with LEN 1 to 32, a unicast host address that "
            "is neither the network nor the broadcast address, e.g. 198.18.0.1/24");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 224.0.0.1/4\n"),
            "t.yaml:9:11: interfaces[0].ipv4: 224.0.0.1 is not a unicast host address; allowed: "
            "A.B.C.D/LEN with LEN 1 to 32, a unicast host address that is neither the network "
            "nor the broadcast address, e.g. 198.18.0.1/24");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n"),
            "t.yaml:8:5: interfaces[0].ipv4: missing required key; add 'ipv4: A.B.C.D/LEN', "
            "e.g. ipv4: 198.18.0.1/24");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.1/24\n    gw: 198.18.0.2\n"),
            "t.yaml:10:5: interfaces[0].gw: unknown key; allowed keys: port, ipv4, gateway");
  EXPECT_EQ(Error2("interfaces:\n  - {port: p0, ipv4: 198.18.0.1/24}\n"
                   "  - {port: p0, ipv4: 198.18.0.9/16}\n"),
            "t.yaml:9:22: interfaces[1].ipv4: 198.18.0.9/16 overlaps interfaces[0].ipv4 "
            "198.18.0.1/24; interface prefixes must not overlap");
}

TEST(ConfigErrors, Gateway) {
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.1/24\n"
                   "    gateway: 198.19.0.1\n"),
            "t.yaml:10:14: interfaces[0].gateway: 198.19.0.1 is outside 198.18.0.0/24; allowed: "
            "an address inside 198.18.0.0/24 other than the interface's own");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.1/24\n"
                   "    gateway: 198.18.0.1\n"),
            "t.yaml:10:14: interfaces[0].gateway: 198.18.0.1 is the interface's own address; "
            "allowed: a host address inside 198.18.0.0/24 other than the interface's own");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.1/24\n"
                   "    gateway: 198.18.0.0\n"),
            "t.yaml:10:14: interfaces[0].gateway: 198.18.0.0 is not a host address in "
            "198.18.0.0/24; allowed: a host address inside 198.18.0.0/24 other than the "
            "interface's own");
  EXPECT_EQ(Error2("interfaces:\n  - port: p0\n    ipv4: 198.18.0.1/24\n"
                   "    gateway: 198.18.0\n"),
            "t.yaml:10:14: interfaces[0].gateway: '198.18.0' is not an IPv4 address; allowed: "
            "an IPv4 address A.B.C.D inside the interface's ipv4 prefix");
}

// ---- workers ----

TEST(ConfigErrors, Workers) {
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0}]\nworkers:\n  lcores: [1, 2, 1]\n"),
            "t.yaml:4:18: workers.lcores[2]: lcore 1 is listed twice (first at 4:12); list every "
            "worker lcore once");
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0}]\nworkers:\n  lcores: [2, 0]\n"),
            "t.yaml:4:15: workers.lcores[1]: lcore 0 is eal.main_lcore; allowed: any lcore other "
            "than eal.main_lcore (pick another one)");
  // The main lcore may come after the workers in the file.
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0}]\nworkers:\n  lcores: [2]\n"
                  "eal: {main_lcore: 2}\n"),
            "t.yaml:4:12: workers.lcores[0]: lcore 2 is eal.main_lcore; allowed: any lcore other "
            "than eal.main_lcore (pick another one)");
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0}]\nworkers:\n  lcores: []\n"),
            "t.yaml:4:11: workers.lcores: the list is empty; allowed: a list of 1 to 127 distinct "
            "lcores from 0 to 127");
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0}]\nworkers:\n  burst: 8\n"),
            "t.yaml:4:3: workers.lcores: missing required key; add 'lcores: [1]' (the lcores "
            "that run workers, not eal.main_lcore)");
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0}]\nworkers:\n"),
            "t.yaml:3:1: workers.lcores: missing required key; add 'lcores: [1]' (the lcores "
            "that run workers, not eal.main_lcore)");
  EXPECT_EQ(Error2("  burst: 0\n"),
            "t.yaml:7:10: workers.burst: 0 is out of range; allowed: an integer from 1 to 256");
  EXPECT_EQ(Error2("  idle_sleep_us: 10001\n"),
            "t.yaml:7:18: workers.idle_sleep_us: 10001 is out of range; allowed: an integer from "
            "0 to 10000");
  EXPECT_EQ(Error2("  lcore: [3]\n"),
            "t.yaml:7:3: workers.lcore: unknown key; allowed keys: lcores, burst, idle_sleep_us, "
            "idle_block_after_us, idle_block_max_ms (did you mean 'lcores'?)");
}

TEST(ConfigErrors, IdleBlock) {
  const std::string tap =
      "version: 1\nports:\n  - name: p0\n    vdev: net_tap0,iface=iw0\nworkers:\n"
      "  lcores: [1]\n";
  absl::StatusOr<Config> c = LoadConfigString(tap + "  idle_block_after_us: 500\n", "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->workers.idle_block_after_us, 500u);
  EXPECT_EQ(c->workers.idle_block_origin.text, "t.yaml:7:24");
  EXPECT_EQ(LoadConfigString(tap)->workers.idle_block_after_us, 0u);  // off by default
  // A driver without receive interrupts (kMinimal's net_null) is refused at
  // its vdev, naming the key that asks for them.
  EXPECT_EQ(Error2("  idle_block_after_us: 500\n"),
            "t.yaml:4:11: ports[0].vdev: net_null raises no receive interrupts, and "
            "workers.idle_block_after_us (7:24) blocks until one; set "
            "workers.idle_block_after_us to 0, or use workers.idle_sleep_us (a timed sleep) with "
            "this port");
  EXPECT_EQ(Error(tap + "  idle_sleep_us: 20\n  idle_block_after_us: 500\n"),
            "t.yaml:7:18: workers.idle_sleep_us: set together with workers.idle_block_after_us; "
            "choose one way to idle: remove idle_sleep_us (a timed sleep after a few empty polls) "
            "or idle_block_after_us (block until woken after a quiet spell)");
  EXPECT_EQ(Error(tap + "  idle_block_after_us: 5\n"),
            "t.yaml:7:24: workers.idle_block_after_us: 5 us is shorter than a wake-up costs; "
            "allowed: 0 (never block) or 10..1000000");
  EXPECT_EQ(Error(tap + "  idle_block_after_us: 1000001\n"),
            "t.yaml:7:24: workers.idle_block_after_us: 1000001 is out of range; allowed: an "
            "integer from 0 to 1000000");
  EXPECT_EQ(LoadConfigString(tap)->workers.idle_block_max_ms, 10u);
  EXPECT_EQ(LoadConfigString(tap + "  idle_block_max_ms: 1000\n")->workers.idle_block_max_ms,
            1000u);
  EXPECT_EQ(Error(tap + "  idle_block_max_ms: 0\n"),
            "t.yaml:7:22: workers.idle_block_max_ms: 0 is out of range; allowed: an integer from "
            "1 to 1000");
  // Zero with a timed sleep is fine.
  EXPECT_EQ(Error(tap + "  idle_sleep_us: 20\n  idle_block_after_us: 0\n"), "");
}

// ---- mempools ----

TEST(ConfigErrors, Mempools) {
  EXPECT_EQ(Error2("mempools:\n  cache: 513\n"),
            "t.yaml:8:10: mempools.cache: 513 is out of range; allowed: an integer from 0 to 512");
  EXPECT_EQ(Error2("mempools:\n  data_room: 70000\n"),
            "t.yaml:8:14: mempools.data_room: 70000 is out of range; allowed: an integer from "
            "1024 to 65535");
  EXPECT_EQ(Error2("mempools:\n  mbufs: 2048\n"),
            "t.yaml:8:10: mempools.mbufs: 2048 mbufs are too few for port 'p0' (needs 2624); "
            "allowed: at least rx_queues*rx_descriptors + tx_queues*tx_descriptors + "
            "(workers+1)*(cache+burst) (raise mempools.mbufs or lower the descriptors)");
  EXPECT_EQ(Error("version: 1\nports: [{name: a, vdev: net_null0, rx_descriptors: 8192}]\n"
                  "workers: {lcores: [1]}\n"),
            "t.yaml:1:1: mempools.mbufs: 8191 mbufs are too few for port 'a' (needs 9792); "
            "allowed: at least rx_queues*rx_descriptors + tx_queues*tx_descriptors + "
            "(workers+1)*(cache+burst) (raise mempools.mbufs or lower the descriptors)");
  // A net_memif zero-copy client receives into its own mbufs: a pool that
  // cannot fill its rings (2^rsize each) is refused at the vdev, with both
  // fixes. Copying clients, servers and pools that fit pass.
  const std::string zc = "version: 1\nports:\n  - name: m\n    vdev: "
                         "net_memif0,role=client,socket=/run/m.sock,zero-copy=yes,rsize=14\n"
                         "workers: {lcores: [1]}\nmempools: {mbufs: 16383}\n";
  EXPECT_EQ(Error(zc),
            "t.yaml:4:11: ports[0].vdev: net_memif zero-copy client with rsize=14 receives into 1 "
            "ring(s) of 16384 of this port's own mbufs, more than mempools.mbufs 16383 leaves after "
            "the lcore caches (needs 16960); the link would stay silent; raise mempools.mbufs to "
            "at least 16960 or lower rsize to at most 13");
  EXPECT_EQ(Error(absl::StrReplaceAll(zc, {{"{mbufs: 16383}", "{mbufs: 32767}"}})), "");
  EXPECT_EQ(Error(absl::StrReplaceAll(zc, {{"rsize=14", "rsize=13"}})), "");
  EXPECT_EQ(Error(absl::StrReplaceAll(zc, {{"zero-copy=yes", "zero-copy=no"}})), "");
  EXPECT_EQ(Error(absl::StrReplaceAll(zc, {{"role=client", "role=server"}})), "");
  // Without rsize, DPDK's default 10 (1024 descriptors) fits.
  EXPECT_EQ(Error(absl::StrReplaceAll(zc, {{",rsize=14", ""}})), "");
  EXPECT_EQ(Error2("mempools:\n  mbuf: 4096\n"),
            "t.yaml:8:3: mempools.mbuf: unknown key; allowed keys: mbufs, cache, data_room "
            "(did you mean 'mbufs'?)");
}

// ---- arp, logging, telemetry ----

TEST(ConfigErrors, Arp) {
  EXPECT_EQ(Error2("arp:\n  timeout_s: 0\n"),
            "t.yaml:8:14: arp.timeout_s: 0 is out of range; allowed: an integer from 1 to 86400");
  EXPECT_EQ(Error2("arp:\n  cache_entries: 8\n"),
            "t.yaml:8:18: arp.cache_entries: 8 is out of range; allowed: an integer from 16 to "
            "1048576");
  EXPECT_EQ(Error2("arp:\n  pending_packets: 1025\n"),
            "t.yaml:8:20: arp.pending_packets: 1025 is out of range; allowed: an integer from 1 "
            "to 1024");
  EXPECT_EQ(Error2("arp:\n  retry_ms: 5\n"),
            "t.yaml:8:13: arp.retry_ms: 5 is out of range; allowed: an integer from 10 to 60000");
}

TEST(ConfigErrors, Logging) {
  EXPECT_EQ(Error2("logging:\n  level: verbose\n"),
            "t.yaml:8:10: logging.level: 'verbose' is not a known value; allowed: error, "
            "warning, notice, info, debug");
  EXPECT_EQ(Error2("logging:\n  levl: info\n"),
            "t.yaml:8:3: logging.levl: unknown key; allowed keys: level (did you mean 'level'?)");
}

TEST(ConfigErrors, Telemetry) {
  EXPECT_EQ(Error2("telemetry:\n  enabled: 1\n"),
            "t.yaml:8:12: telemetry.enabled: '1' is not a boolean; allowed: true or false");
  EXPECT_EQ(Error2("telemetry: [true]\n"),
            "t.yaml:7:12: telemetry: expected a mapping; write the section as indented "
            "'key: value' lines with keys enabled");
}

TEST(ConfigLoad, AppInterfaceDefaultsAndReference) {
  absl::StatusOr<Config> c = LoadConfigString(kMinimal);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->app_interface, AppInterfaceConfig{});
  EXPECT_TRUE(c->app_interface.enabled);
  EXPECT_EQ(c->app_interface.socket_dir, "/run/iwarpd");
  absl::StatusOr<Config> r = LoadConfigFile(ExamplesDir() + "/reference.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->app_interface.allowed_uids, (std::vector<uint32_t>{0, 1000}));
  EXPECT_EQ(r->app_interface.socket_mode, 0660u);
  absl::StatusOr<Config> e = LoadConfigString(
      std::string(kMinimal) +
      "app_interface: {enabled: false, socket_dir: /tmp/x, socket_mode: \"0600\","
      " allowed_uids: [7], max_sessions: 3, max_qps_per_session: 4, max_cqs_per_session: 5,"
      " max_mrs_per_session: 6, max_pds_per_session: 9, max_listeners_per_session: 10,"
      " max_registered_mb_per_session: 7, max_queue_depth: 32,"
      " event_queue_depth: 8, stag_table_size: 100, mpa_crc: false, mpa_markers: true,"
      " zero_copy_tx: true, wire_ack_timeout_ms: 250}\n");
  ASSERT_TRUE(e.ok()) << e.status();
  const AppInterfaceConfig& a = e->app_interface;
  EXPECT_FALSE(a.enabled);
  EXPECT_EQ(a.socket_dir, "/tmp/x");
  EXPECT_EQ(a.socket_mode, 0600u);
  EXPECT_EQ(a.allowed_uids, std::vector<uint32_t>{7});
  EXPECT_EQ(a.max_sessions, 3u);
  EXPECT_EQ(a.max_qps_per_session, 4u);
  EXPECT_EQ(a.max_cqs_per_session, 5u);
  EXPECT_EQ(a.max_mrs_per_session, 6u);
  EXPECT_EQ(a.max_pds_per_session, 9u);
  EXPECT_EQ(a.max_listeners_per_session, 10u);
  EXPECT_EQ(a.max_registered_mb_per_session, 7u);
  EXPECT_EQ(a.max_queue_depth, 32u);
  EXPECT_EQ(a.event_queue_depth, 8u);
  EXPECT_EQ(a.stag_table_size, 100u);
  EXPECT_FALSE(a.mpa_crc);
  EXPECT_TRUE(a.mpa_markers);
  EXPECT_TRUE(a.zero_copy_tx);
  EXPECT_EQ(a.wire_ack_timeout_ms, 250u);
  // Defaults: CRC offered, no Markers, 2 s acknowledgement wait.
  EXPECT_TRUE(r->app_interface.mpa_crc);
  EXPECT_FALSE(r->app_interface.mpa_markers);
  EXPECT_FALSE(r->app_interface.zero_copy_tx);  // copies unless asked
  EXPECT_EQ(r->app_interface.wire_ack_timeout_ms, 2000u);
  // Round trip through the formatter.
  absl::StatusOr<Config> back = LoadConfigString(FormatConfigYaml(*e));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->app_interface, a);
}

TEST(ConfigErrors, AppInterface) {
  EXPECT_EQ(Error2("app_interface:\n  socket_dir: run/iwarpd\n"),
            "t.yaml:8:15: app_interface.socket_dir: 'run/iwarpd' is not usable; allowed: an "
            "absolute directory path of at most 36 printable characters without spaces, e.g. "
            "/run/iwarpd");
  EXPECT_EQ(Error2("app_interface:\n  socket_mode: 660\n"),
            "t.yaml:8:16: app_interface.socket_mode: '660' is not a socket mode; allowed: a "
            "quoted octal mode from \"0600\" to \"0777\", e.g. \"0660\"");
  EXPECT_EQ(Error2("app_interface:\n  socket_mode: \"0460\"\n"),
            "t.yaml:8:16: app_interface.socket_mode: '0460' is not a socket mode; allowed: a "
            "quoted octal mode from \"0600\" to \"0777\", e.g. \"0660\"");
  EXPECT_EQ(Error2("app_interface:\n  max_queue_depth: 100\n"),
            "t.yaml:8:20: app_interface.max_queue_depth: 100 is not a power of two; allowed: a "
            "power of two from 16 to 65536");
  EXPECT_EQ(Error2("app_interface:\n  stag_table_size: 16777216\n"),
            "t.yaml:8:20: app_interface.stag_table_size: 16777216 is out of range; allowed: an "
            "integer from 16 to 16777215");
  EXPECT_EQ(Error2("app_interface:\n  max_sessions: 0\n"),
            "t.yaml:8:17: app_interface.max_sessions: 0 is out of range; allowed: an integer "
            "from 1 to 4096");
  EXPECT_EQ(Error2("app_interface:\n  mpa_crc: maybe\n"),
            "t.yaml:8:12: app_interface.mpa_crc: 'maybe' is not a boolean; allowed: true or false");
  EXPECT_EQ(Error2("app_interface:\n  mpa_markers: 1\n"),
            "t.yaml:8:16: app_interface.mpa_markers: '1' is not a boolean; allowed: true or false");
  EXPECT_EQ(Error2("app_interface:\n  wire_ack_timeout_ms: 99\n"),
            "t.yaml:8:24: app_interface.wire_ack_timeout_ms: 99 is out of range; allowed: an "
            "integer from 100 to 60000");
  EXPECT_NE(Error2("app_interface:\n  allowed_uids: [-1]\n"), "");
  EXPECT_NE(Error2("app_interface:\n  socket_path: /x\n"), "");
}

// ---- hostile input stays on one line ----

TEST(ConfigErrors, HostileTextIsEscaped) {
  EXPECT_EQ(Error2("\"bad\\nkey\": 1\n"),
            "t.yaml:7:1: bad\\nkey: unknown key; allowed keys: version, eal, ports, "
            "interfaces, workers, mempools, arp, logging, telemetry, app_interface, tcp, services, iwarp, sctp, udp_echo, test_mode");
  std::string msg = Error2("logging: {level: \"" + std::string(100, 'x') + "\\u0001\"}\n");
  EXPECT_EQ(msg, "t.yaml:7:18: logging.level: '" + std::string(48, 'x') +
                     "...' is not a known value; allowed: error, warning, notice, info, debug");
  EXPECT_EQ(Error2("? [a]\n: 1\n"),
            "t.yaml:7:3: (document): a key must be a plain word; write keys as plain "
            "snake_case names");
}

TEST(ConfigErrors, SyntaxErrorTextIsEscaped) {
  // yaml-cpp quotes the offending byte in its message (and places the error
  // after it); the byte must come out escaped.
  std::string msg = Error("a: \"\\\xff\"\n");
  EXPECT_EQ(msg, "t.yaml:1:7: (yaml): unknown escape character: \\xff; allowed: well-formed "
                 "YAML (check indentation, ':' after keys, brackets and quotes)");
}

TEST(ConfigErrors, AliasesResolveToTheAnchor) {
  // An alias is read as its anchor's value; the error points at the anchor.
  EXPECT_EQ(Error2("eal: {memory_mb: &m 8}\narp: {retry_ms: *m}\n"),
            "t.yaml:7:18: eal.memory_mb: 8 is out of range; allowed: an integer from 64 to "
            "1048576");
}

// kMinimal's port with an impairment section `imp` (indented under the port).
std::string WithImpairment(const std::string& imp) {
  return Error(std::string("version: 1\nports:\n  - name: p0\n    vdev: net_null0\n"
                           "    impairment:\n") +
               imp + "workers: {lcores: [1]}\n");
}

TEST(ConfigImpairment, ParsesRules) {
  absl::StatusOr<Config> c = LoadConfigString(
      "version: 1\nports:\n  - name: p0\n    vdev: net_null0\n    impairment:\n"
      "      seed: 42\n"
      "      rx:\n"
      "        - {action: drop, protocol: tcp, port: 9, every: 100}\n"
      "        - {action: corrupt, min_payload: 1, first: 5, last: 7, checksum: fixed}\n"
      "      tx:\n"
      "        - {action: delay, delay_ms: 30, probability_ppm: 50000}\n"
      "        - {action: reorder, reorder_gap: 2}\n"
      "        - {action: duplicate, protocol: udp}\n"
      "workers: {lcores: [1]}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const ImpairmentConfig& imp = c->ports[0].impairment;
  EXPECT_EQ(imp.seed, 42u);
  ASSERT_EQ(imp.rx.size(), 2u);
  ASSERT_EQ(imp.tx.size(), 3u);
  EXPECT_EQ(imp.rx[0].action, ImpairAction::kDrop);
  EXPECT_EQ(imp.rx[0].protocol, ImpairProtocol::kTcp);
  EXPECT_EQ(imp.rx[0].l4_port, 9);
  EXPECT_EQ(imp.rx[0].every, 100u);
  EXPECT_EQ(imp.rx[1].action, ImpairAction::kCorrupt);
  EXPECT_EQ(imp.rx[1].first, 5u);
  EXPECT_EQ(imp.rx[1].last, 7u);
  EXPECT_EQ(imp.rx[1].min_payload, 1u);
  EXPECT_EQ(imp.rx[1].corrupt_checksum, CorruptChecksum::kFixed);
  EXPECT_EQ(imp.tx[0].delay_ms, 30u);
  EXPECT_EQ(imp.tx[0].probability_ppm, 50000u);
  EXPECT_EQ(imp.tx[1].reorder_gap, 2u);
  EXPECT_EQ(imp.tx[2].protocol, ImpairProtocol::kUdp);
  // And it survives --check-config's rendering.
  absl::StatusOr<Config> again = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << FormatConfigYaml(*c);
  EXPECT_EQ(again->ports[0].impairment, imp);
}

TEST(ConfigImpairment, Errors) {
  EXPECT_EQ(WithImpairment("      rx:\n        - {protocol: tcp}\n"),
            "t.yaml:7:11: ports[0].impairment.rx[0].action: missing required key; add 'action: "
            "drop|duplicate|reorder|delay|corrupt'");
  EXPECT_EQ(WithImpairment("      rx:\n        - {action: mangle}\n"),
            "t.yaml:7:20: ports[0].impairment.rx[0].action: 'mangle' is not a known value; "
            "allowed: drop, duplicate, reorder, delay, corrupt");
  EXPECT_EQ(WithImpairment("      tx:\n        - {action: drop, every: 0}\n"),
            "t.yaml:7:33: ports[0].impairment.tx[0].every: 0 is out of range; allowed: an "
            "integer from 1 to 1000000");
  EXPECT_EQ(WithImpairment("      tx:\n        - {action: drop, probability_ppm: 1000001}\n"),
            "t.yaml:7:43: ports[0].impairment.tx[0].probability_ppm: 1000001 is out of range; "
            "allowed: an integer from 0 to 1000000");
  EXPECT_EQ(WithImpairment("      rx:\n        - {action: drop, first: 9, last: 3}\n"),
            "t.yaml:7:42: ports[0].impairment.rx[0].last: last 3 is before first 9; allowed: "
            "last >= first (both count matching packets from 1)");
  EXPECT_EQ(WithImpairment("      rx:\n        - {action: drop, delay_ms: 5}\n"),
            "t.yaml:7:11: ports[0].impairment.rx[0].delay_ms: delay_ms does not apply to action "
            "drop; allowed: delay_ms only with action delay");
  EXPECT_EQ(WithImpairment("      rx:\n        - {action: corrupt, checksum: wrong}\n"),
            "t.yaml:7:39: ports[0].impairment.rx[0].checksum: 'wrong' is not a known value; "
            "allowed: stale, fixed");
  EXPECT_EQ(WithImpairment("      rx:\n        - {action: drop, protocol: icmp, port: 7}\n"),
            "t.yaml:7:11: ports[0].impairment.rx[0].port: ICMP has no ports; allowed: port with "
            "protocol tcp, udp or any (remove port or change protocol)");
  EXPECT_EQ(WithImpairment("      rx:\n        - {action: delay, delay_ms: 10001}\n"),
            "t.yaml:7:37: ports[0].impairment.rx[0].delay_ms: 10001 is out of range; allowed: an "
            "integer from 1 to 10000");
  EXPECT_EQ(WithImpairment("      rx: drop\n"),
            "t.yaml:6:11: ports[0].impairment.rx: expected a list; allowed: a list of 0 to 16 "
            "impairment rules");
  EXPECT_EQ(WithImpairment("      rz: []\n"),
            "t.yaml:6:7: ports[0].impairment.rz: unknown key; allowed keys: seed, rx, tx (did "
            "you mean 'rx'?)");
}

TEST(ConfigTcp, MaxSendRecordsAutoCoversTheSendBuffer) {
  // Records bound the FPDUs in flight: auto keeps a larger send buffer from
  // being capped by the default 1024 (1.4 MiB at MTU 1500).
  absl::StatusOr<Config> d = LoadConfigString(std::string(kMinimal));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->tcp.max_send_records, 0u);
  EXPECT_EQ(EffectiveMaxSendRecords(d->tcp), 1024u);  // 256 KiB buffers
  absl::StatusOr<Config> big = LoadConfigString(
      std::string(kMinimal) + "tcp: {send_buffer_bytes: 4194304, max_send_records: auto}\n");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(EffectiveMaxSendRecords(big->tcp), 4096u);
  absl::StatusOr<Config> odd =
      LoadConfigString(std::string(kMinimal) + "tcp: {send_buffer_bytes: 2098177}\n");
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(EffectiveMaxSendRecords(odd->tcp), 2050u);  // rounded up
  absl::StatusOr<Config> again = LoadConfigString(FormatConfigYaml(*big));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tcp.max_send_records, 0u);
  EXPECT_EQ(Error2("tcp:\n  max_send_records: 0\n"),
            "t.yaml:8:21: tcp.max_send_records: 0 is out of range; allowed: auto or an integer "
            "from 1 to 1048576");
  EXPECT_EQ(Error2("tcp:\n  max_send_records: many\n"),
            "t.yaml:8:21: tcp.max_send_records: 'many' is not a decimal integer; allowed: "
            "auto or an integer from 1 to 1048576 (digits only, no leading zero)");
  EXPECT_EQ(Error2("tcp:\n  max_send_records: \"16\"\n"),
            "t.yaml:8:21: tcp.max_send_records: expected an integer, got the string '16'; "
            "allowed: auto or an integer from 1 to 1048576, written without quotes");
  EXPECT_EQ(Error2("tcp:\n  max_send_records: 01024\n"),
            "t.yaml:8:21: tcp.max_send_records: '01024' is not a decimal integer; allowed: "
            "auto or an integer from 1 to 1048576 (digits only, no leading zero)");
}

TEST(ConfigTcp, ParsesEveryKeyAndRoundTrips) {
  absl::StatusOr<Config> c = LoadConfigString(
      std::string(kMinimal) +
      "tcp:\n"
      "  max_connections: 2048\n  max_listeners: 4\n  syn_backlog: 64\n  syn_cookies: always\n"
      "  mss: 1000\n  send_buffer_bytes: 65536\n  receive_buffer_bytes: 131072\n"
      "  max_zero_copy_sends: 8\n  max_send_records: 16\n  max_ooo_segments: 32\n"
      "  window_scale: 7\n  sack: false\n  timestamps: false\n  delayed_ack_us: 0\n"
      "  nagle: true\n  keepalive: true\n  keepalive_idle_s: 10\n  keepalive_interval_s: 2\n"
      "  keepalive_count: 3\n  time_wait_s: 1\n  max_time_wait: 1000\n  rto_min_us: 10000\n"
      "  rto_max_us: 2000000\n  rto_initial_us: 300000\n  max_retransmissions: 5\n"
      "  max_syn_retransmissions: 2\n  congestion_control: newreno\n"
      "  challenge_ack_limit: 10\n  ephemeral_port_min: 40000\n  ephemeral_port_max: 40100\n"
      "  timer_tick_us: 50\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const TcpConfig& t = c->tcp;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.max_connections, 2048u);
  EXPECT_EQ(t.syn_cookies, SynCookies::kAlways);
  EXPECT_EQ(t.mss, 1000);
  EXPECT_EQ(t.receive_buffer_bytes, 131072u);
  EXPECT_EQ(t.window_scale, 7);
  EXPECT_FALSE(t.sack);
  EXPECT_TRUE(t.nagle);
  EXPECT_EQ(t.rto_initial_us, 300000u);
  EXPECT_EQ(t.congestion_control, CongestionControl::kNewReno);
  EXPECT_EQ(t.ephemeral_port_max, 40100);
  EXPECT_EQ(t.timer_tick_us, 50u);
  absl::StatusOr<Config> again = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tcp, t);
  EXPECT_EQ(t.max_send_records, 16u);
  EXPECT_EQ(EffectiveMaxSendRecords(t), 16u);
  // window_scale: auto round-trips too.
  absl::StatusOr<Config> a = LoadConfigString(std::string(kMinimal) + "tcp: {window_scale: auto}\n");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->tcp.window_scale, -1);
  EXPECT_EQ(LoadConfigString(FormatConfigYaml(*a))->tcp.window_scale, -1);
}

TEST(ConfigTcp, Errors) {
  EXPECT_EQ(Error2("tcp:\n  window_scale: 15\n"),
            "t.yaml:8:17: tcp.window_scale: 15 is out of range; allowed: auto or an integer from 0 "
            "to 14");
  EXPECT_EQ(Error2("tcp:\n  mss: 40\n"),
            "t.yaml:8:8: tcp.mss: 40 is out of range; allowed: 0 (port mtu - 40) or an integer "
            "from 88 to 9560");
  EXPECT_EQ(Error2("tcp:\n  congestion_control: bbr\n"),
            "t.yaml:8:23: tcp.congestion_control: 'bbr' is not a known value; allowed: newreno, "
            "cubic");
  EXPECT_EQ(Error2("tcp:\n  rto_min_us: 500000\n  rto_max_us: 400000\n"),
            "t.yaml:9:15: tcp.rto_max_us: 400000 is below tcp.rto_min_us 500000; allowed: "
            "rto_min_us <= rto_initial_us <= rto_max_us");
  EXPECT_EQ(Error2("tcp:\n  rto_initial_us: 100000\n"),
            "t.yaml:8:19: tcp.rto_initial_us: 100000 is outside [200000, 60000000]; allowed: "
            "rto_min_us <= rto_initial_us <= rto_max_us");
  EXPECT_EQ(Error2("tcp:\n  ephemeral_port_min: 50000\n  ephemeral_port_max: 49999\n"),
            "t.yaml:9:23: tcp.ephemeral_port_max: 49999 is below tcp.ephemeral_port_min 50000; "
            "allowed: ephemeral_port_min <= ephemeral_port_max");
  EXPECT_EQ(Error2("tcp:\n  max_connections: 16\n  syn_backlog: 17\n"),
            "t.yaml:9:16: tcp.syn_backlog: 17 is above tcp.max_connections 16; allowed: at most "
            "max_connections (half-open connections take a slot)");
  EXPECT_EQ(Error2("tcp:\n  send_buffer_bytes: 100\n"),
            "t.yaml:8:22: tcp.send_buffer_bytes: 100 is out of range; allowed: an integer from "
            "4096 to 67108864");
  EXPECT_EQ(Error2("tcp:\n  delayed_ack_us: 500001\n"),
            "t.yaml:8:19: tcp.delayed_ack_us: 500001 is out of range; allowed: an integer from 0 "
            "to 500000");
  EXPECT_EQ(Error2("tcp:\n  sack: maybe\n"),
            "t.yaml:8:9: tcp.sack: 'maybe' is not a boolean; allowed: true or false");
}

TEST(ConfigServices, ParsesAndRoundTrips) {
  absl::StatusOr<Config> c = LoadConfigString(
      std::string(kMinimal) +
      "services:\n"
      "  - {name: echo, type: echo, port: 7}\n"
      "  - {name: sink, type: sink, port: 9, sha256: true}\n"
      "  - {name: push, type: source, remote: 198.18.0.2, remote_port: 5001, bytes: 1073741824,\n"
      "     connections: 4, start_delay_ms: 100, sha256: true}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->services.size(), 3u);
  EXPECT_EQ(c->services[0].type, ServiceType::kEcho);
  EXPECT_EQ(c->services[0].port, 7);
  EXPECT_TRUE(c->services[1].sha256);
  const ServiceConfig& src = c->services[2];
  EXPECT_EQ(src.type, ServiceType::kSource);
  EXPECT_EQ(src.remote, 0xc6120002u);
  EXPECT_EQ(src.remote_port, 5001);
  EXPECT_EQ(src.bytes, 1073741824u);
  EXPECT_EQ(src.connections, 4u);
  EXPECT_EQ(src.start_delay_ms, 100u);
  absl::StatusOr<Config> again = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status() << FormatConfigYaml(*c);
  EXPECT_EQ(again->services, c->services);
  EXPECT_NE(DescribeConfig(*c).find("  service push: source to 198.18.0.2:5001, 4 x 1073741824 "
                                    "bytes, sha256\n"),
            std::string::npos)
      << DescribeConfig(*c);
}

TEST(ConfigServices, Errors) {
  EXPECT_EQ(Error2("services:\n  - {name: e, type: chargen, port: 19}\n"),
            "t.yaml:8:21: services[0].type: 'chargen' is not a known value; allowed: echo, sink, "
            "source, iwarp_responder, iwarp_client, iwarp_fpdu_test");
  EXPECT_EQ(Error2("services:\n  - {name: e, type: echo}\n"),
            "t.yaml:8:5: services[0].port: missing required key; add 'port: N' (the TCP port the "
            "echo service listens on)");
  EXPECT_EQ(Error2("services:\n  - {name: e, type: echo, port: 7, sha256: true}\n"),
            "t.yaml:8:5: services[0].sha256: sha256 does not apply to type echo; allowed: sha256 "
            "only with type sink or source or iwarp_client");
  EXPECT_EQ(Error2("services:\n  - {name: s, type: source, remote: 198.18.0.2, bytes: 1}\n"),
            "t.yaml:8:5: services[0].remote_port: missing required key; a source needs remote: "
            "A.B.C.D, remote_port: N and bytes: N");
  EXPECT_EQ(Error2("services:\n  - {name: s, type: source, remote: 224.0.0.1, remote_port: 1, "
                   "bytes: 1}\n"),
            "t.yaml:8:37: services[0].remote: '224.0.0.1' is not a unicast IPv4 address; "
            "allowed: a unicast IPv4 address A.B.C.D");
  EXPECT_EQ(Error2("services:\n  - {name: a, type: echo, port: 7}\n"
                   "  - {name: b, type: sink, port: 7}\n"),
            "t.yaml:9:33: services[1].port: port 7 is already used by service 'a'; give "
            "every listening service its own port");
  EXPECT_EQ(Error2("services:\n  - {name: a, type: echo, port: 7}\n"
                   "  - {name: a, type: sink, port: 9}\n"),
            "t.yaml:9:12: services[1].name: duplicate service name 'a' (first at 8:12); "
            "give every service a unique name");
  EXPECT_EQ(Error2("tcp: {enabled: false}\nservices:\n  - {name: a, type: echo, port: 7}\n"),
            "t.yaml:9:5: services: services need TCP, but tcp.enabled is false; set "
            "tcp.enabled: true or remove the services");
  EXPECT_EQ(Error2("services:\n  - {name: a, type: echo, port: 0}\n"),
            "t.yaml:8:33: services[0].port: 0 is out of range; allowed: an integer from 1 to "
            "65535");
}

TEST(ConfigIwarp, ServicesAndSectionRead) {
  absl::StatusOr<Config> c = LoadConfigString(
      std::string(kMinimal) +
      "iwarp: {qps_per_service: 2, revision: 1, enhanced: false, ird: 4, ord: 8,"
      " rtr_types: [send, read], max_private_data: 508, request_timeout_ms: 1,"
      " reply_timeout_ms: 2, rtr_timeout_ms: 3, sq_depth: 64, rq_depth: 32, cq_depth: 96,"
      " scratch_bytes: 0, recv_buffers: 32, recv_buffer_bytes: 16777216}\n"
      "services:\n"
      "  - {name: r, type: iwarp_responder, port: 9999, crc: false, markers: true}\n"
      "  - {name: c, type: iwarp_client, remote: 198.18.0.2, remote_port: 9999, op: mixed,"
      " message_bytes: 0, count: 7, queue_depth: 4, verify: false, start_delay_ms: 5}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const IwarpConfig& w = c->iwarp;
  EXPECT_EQ(w.qps_per_service, 2u);
  EXPECT_EQ(w.revision, 1);
  EXPECT_FALSE(w.enhanced);
  EXPECT_EQ(w.ird, 4);
  EXPECT_EQ(w.ord, 8);
  EXPECT_EQ(w.rtr_types, kIwarpRtrSend | kIwarpRtrRead);
  EXPECT_EQ(w.max_private_data, 508u);
  EXPECT_EQ(w.request_timeout_ms, 1u);
  EXPECT_EQ(w.reply_timeout_ms, 2u);
  EXPECT_EQ(w.rtr_timeout_ms, 3u);
  EXPECT_EQ(w.sq_depth, 64u);
  EXPECT_EQ(w.rq_depth, 32u);
  EXPECT_EQ(w.cq_depth, 96u);
  EXPECT_EQ(w.scratch_bytes, 0u);
  EXPECT_EQ(w.recv_buffers, 32u);
  EXPECT_EQ(w.recv_buffer_bytes, 16777216u);
  ASSERT_EQ(c->services.size(), 2u);
  EXPECT_EQ(c->services[0].type, ServiceType::kIwarpResponder);
  EXPECT_FALSE(c->services[0].crc);
  EXPECT_TRUE(c->services[0].markers);
  const ServiceConfig& cl = c->services[1];
  EXPECT_EQ(cl.type, ServiceType::kIwarpClient);
  EXPECT_EQ(cl.op, IwarpOp::kMixed);
  EXPECT_EQ(cl.message_bytes, 0u);
  EXPECT_EQ(cl.count, 7u);
  EXPECT_EQ(cl.queue_depth, 4u);
  EXPECT_FALSE(cl.verify);
  EXPECT_EQ(cl.start_delay_ms, 5u);
  EXPECT_TRUE(cl.client_sha256);  // an iwarp_client hashes its run unless told not to
  // The formatter writes everything back.
  absl::StatusOr<Config> back = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << FormatConfigYaml(*c);
  EXPECT_EQ(back->iwarp, c->iwarp);
  EXPECT_EQ(back->services, c->services);
}

// sha256: false turns an iwarp_client's run hash off, and survives the
// formatter (which writes the default true out as well).
TEST(ConfigIwarp, ClientSha256Off) {
  absl::StatusOr<Config> c = LoadConfigString(
      std::string(kMinimal) +
      "services:\n"
      "  - {name: c, type: iwarp_client, remote: 198.18.0.2, remote_port: 9999, sha256: false}\n"
      "  - {name: d, type: iwarp_client, remote: 198.18.0.2, remote_port: 9999}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->services.size(), 2u);
  EXPECT_FALSE(c->services[0].client_sha256);
  EXPECT_TRUE(c->services[1].client_sha256);
  absl::StatusOr<Config> back = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << FormatConfigYaml(*c);
  EXPECT_EQ(back->services, c->services);
}

TEST(ConfigIwarp, Errors) {
  EXPECT_EQ(Error2("services:\n  - {name: c, type: iwarp_client, remote: 198.18.0.2}\n"),
            "t.yaml:8:5: services[0].remote_port: missing required key; an iwarp_client needs "
            "remote: A.B.C.D and remote_port: N");
  EXPECT_EQ(Error2("services:\n  - {name: r, type: iwarp_responder, port: 1, op: read}\n"),
            "t.yaml:8:5: services[0].op: op does not apply to type iwarp_responder; allowed: op "
            "only with type iwarp_client");
  EXPECT_EQ(Error2("services:\n  - {name: e, type: echo, port: 1, crc: true}\n"),
            "t.yaml:8:5: services[0].crc: crc does not apply to type echo; allowed: crc only with "
            "type iwarp_responder or iwarp_client or iwarp_fpdu_test");
  EXPECT_EQ(Error2("services:\n  - {name: c, type: iwarp_client, remote: 198.18.0.2, "
                   "remote_port: 1, op: scatter}\n"),
            "t.yaml:8:75: services[0].op: 'scatter' is not a known value; allowed: write, read, "
            "send, mixed");
  EXPECT_EQ(Error2("services:\n  - {name: c, type: iwarp_client, remote: 198.18.0.2, "
                   "remote_port: 1, message_bytes: 16777217}\n"),
            "t.yaml:8:86: services[0].message_bytes: 16777217 is out of range; allowed: an "
            "integer from 0 to 16777216");
  EXPECT_EQ(Error2("services:\n  - {name: c, type: iwarp_client, remote: 198.18.0.2, "
                   "remote_port: 1, queue_depth: 64}\n"),
            "t.yaml:8:5: services[0].queue_depth: 64 needs iwarp.sq_depth >= 129, iwarp.rq_depth "
            "and iwarp.ord >= 64; lower queue_depth or raise the iwarp: queue sizes");
  EXPECT_EQ(Error2("iwarp:\n  rtr_types: [read, read]\n"),
            "t.yaml:8:21: iwarp.rtr_types[1]: RTR type listed twice; allowed: each of send, "
            "write, read at most once");
  EXPECT_EQ(Error2("iwarp:\n  rtr_types: []\n"),
            "t.yaml:8:14: iwarp.rtr_types: the list is empty; allowed: a list of 1 to 3 RTR "
            "types (send, write, read)");
  EXPECT_EQ(Error2("iwarp:\n  revision: 3\n"),
            "t.yaml:8:13: iwarp.revision: 3 is out of range; allowed: an integer from 1 to 2");
  EXPECT_EQ(Error2("iwarp:\n  recv_buffers: 200\n"),
            "t.yaml:8:17: iwarp.recv_buffers: 200 is above iwarp.rq_depth 128 or half of "
            "iwarp.sq_depth 128; allowed: at most rq_depth and sq_depth / 2 (the echo Sends of "
            "posted and spare buffers)");
  EXPECT_EQ(Error2("iwarp:\n  cq_depth: 100\n"),
            "t.yaml:8:13: iwarp.cq_depth: 100 is below sq_depth + rq_depth 256; allowed: at "
            "least sq_depth + rq_depth (every work request completes)");
}

// tcp_lite's table (tcp_lite/tcp_tunables.h) is the one source of the tcp:
// keys: every entry is read with its range, printed and read back, and the
// configuration's defaults are the engine's.
TEST(ConfigTcp, EveryTunableOfTheEngineTableIsAKeyWithItsRange) {
  absl::StatusOr<Config> d = LoadConfigString(kMinimal);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(static_cast<const tcp::TcpTunables&>(d->tcp), tcp::TcpTunables{});
  std::string printed = FormatConfigYaml(*d);
  int keys = 0;
#define IWARPD_TCP_KEY(kind, type, name, def, lo, hi)                                          \
  {                                                                                           \
    ++keys;                                                                                   \
    const std::string k = #name;                                                              \
    EXPECT_NE(printed.find("\n  " + k + ": "), std::string::npos) << k;                       \
    const std::string kind_name = #kind;                                                      \
    if (kind_name != "Bool" && kind_name != "Enum") {                                         \
      const uint64_t above = uint64_t{hi} + 1;                                                \
      EXPECT_EQ(Error2(absl::StrCat("tcp:\n  ", k, ": ", above, "\n")),                       \
                absl::StrCat("t.yaml:8:", 5 + k.size(), ": tcp.", k, ": ", above,             \
                             " is out of range; allowed: ",                                   \
                             kind_name == "UintOrAuto" ? "auto or " : "",                     \
                             kind_name == "Mss" ? "an integer from 0 to " : "an integer from ", \
                             kind_name == "Mss" ? "" : absl::StrCat(uint64_t{lo}, " to "),    \
                             uint64_t{hi}));                                                  \
    } else {                                                                                  \
      EXPECT_NE(Error2(absl::StrCat("tcp:\n  ", k, ": 7\n")), "") << k;                       \
    }                                                                                         \
  }
  IWARPD_TCP_TUNABLES(IWARPD_TCP_KEY)
#undef IWARPD_TCP_KEY
  EXPECT_EQ(keys, 31);
}

// The key tables of sctp: (sctp/sctp_tunables.h), iwarp: and workers:
// (config.h), row by row: the key is printed with its default, and its range
// is the loader's.
using KeyGetter = std::function<uint64_t(const Config&)>;

// The line "  KEY: VALUE" is on in the document LoadKey loads.
int KeyLine(const std::string& section, const std::string& key) {
  if (section != "workers") return 8;
  return key == "lcores" ? 6 : 7;
}

// Loads kMinimal plus "SECTION:\n  KEY: VALUE" (for workers:, kMinimal's
// section with the key added): "" with *got = get(config) when it loads,
// else the error.
std::string LoadKey(const std::string& section, const std::string& key, const std::string& value,
                    const KeyGetter& get, uint64_t* got) {
  std::string yaml = absl::StrCat(kMinimal, section, ":\n  ", key, ": ", value, "\n");
  if (section == "workers") {
    yaml = absl::StrCat("version: 1\nports:\n  - name: p0\n    vdev: net_null0\nworkers:\n",
                        key == "lcores" ? "" : "  lcores: [1]\n", "  ", key, ": ", value, "\n");
  }
  absl::StatusOr<Config> c = LoadConfigString(yaml, "t.yaml");
  if (!c.ok()) return std::string(c.status().message());
  *got = get(*c);
  return "";
}

uint64_t AsNumber(uint64_t v) { return v; }
// workers.lcores: the last lcore.
uint64_t AsNumber(const std::vector<uint32_t>& v) { return v.empty() ? ~uint64_t{0} : v.back(); }

// The lines of `section` in FormatConfigYaml's output.
std::string PrintedSection(const Config& c, const std::string& section) {
  const std::string printed = FormatConfigYaml(c);
  size_t from = printed.find("\n" + section + ":\n");
  if (from == std::string::npos) return "";
  from += section.size() + 3;
  size_t to = from;
  while (printed.compare(to, 2, "  ") == 0) {
    const size_t end = printed.find('\n', to);
    if (end == std::string::npos) break;
    to = end + 1;
  }
  return printed.substr(from, to - from);
}

// A Uint row: lo and hi pass the key's range (they load, or only a check
// across keys refuses them, e.g. sq_depth 1 against the default
// recv_buffers), lo - 1 and hi + 1 are refused naming the range.
void ExpectUintKey(const std::string& section, const std::string& key, uint64_t lo, uint64_t hi,
                   const KeyGetter& get) {
  SCOPED_TRACE(section + "." + key);
  const std::string range = absl::StrCat("an integer from ", lo, " to ", hi);
  for (uint64_t v : {lo, hi}) {
    uint64_t got = 0;
    const std::string err = LoadKey(section, key, absl::StrCat(v), get, &got);
    if (err.empty()) {
      EXPECT_EQ(got, v);
    } else {
      EXPECT_EQ(err.find("out of range"), std::string::npos) << err;
      EXPECT_EQ(err.find(range), std::string::npos) << err;
    }
  }
  auto refused = [&](uint64_t v) {
    return absl::StrCat("t.yaml:", KeyLine(section, key), ":", 5 + key.size(), ": ", section, ".",
                        key, ": ", v, " is out of range; allowed: ", range);
  };
  uint64_t got = 0;
  EXPECT_EQ(LoadKey(section, key, absl::StrCat(hi + 1), get, &got), refused(hi + 1));
  if (lo > 0) {
    EXPECT_EQ(LoadKey(section, key, absl::StrCat(lo - 1), get, &got), refused(lo - 1));
  }
}

void ExpectIdleSleepUsKey(const std::string& section, const std::string& key, uint64_t lo,
                          uint64_t hi, const KeyGetter& get) {
  ExpectUintKey(section, key, lo, hi, get);
}

// 0 (never block) or lo..hi.
void ExpectIdleBlockAfterUsKey(const std::string& section, const std::string& key, uint64_t lo,
                               uint64_t hi, const KeyGetter& get) {
  SCOPED_TRACE(section + "." + key);
  const std::string at = absl::StrCat("t.yaml:", KeyLine(section, key), ":", 5 + key.size(), ": ",
                                      section, ".", key, ": ");
  uint64_t got = 7;
  EXPECT_EQ(LoadKey(section, key, "0", get, &got), "");
  EXPECT_EQ(got, 0u);
  // kMinimal's net_null port raises no receive interrupts: only that check
  // across keys refuses blocking.
  for (uint64_t v : {lo, hi}) {
    const std::string err = LoadKey(section, key, absl::StrCat(v), get, &got);
    EXPECT_NE(err.find("raises no receive interrupts"), std::string::npos) << err;
  }
  EXPECT_EQ(LoadKey(section, key, absl::StrCat(hi + 1), get, &got),
            absl::StrCat(at, hi + 1, " is out of range; allowed: an integer from 0 to ", hi));
  EXPECT_EQ(LoadKey(section, key, absl::StrCat(lo - 1), get, &got),
            absl::StrCat(at, lo - 1, " us is shorter than a wake-up costs; allowed: 0 (never "
                                     "block) or ",
                         lo, "..", hi));
}

// A required list of distinct lcores lo..hi.
void ExpectLcoresKey(const std::string& section, const std::string& key, uint64_t lo, uint64_t hi,
                     const KeyGetter& get) {
  SCOPED_TRACE(section + "." + key);
  const std::string at = absl::StrCat("t.yaml:", KeyLine(section, key), ":", 5 + key.size() + 1,
                                      ": ", section, ".", key, "[0]: ");
  uint64_t got = 0;
  EXPECT_EQ(LoadKey(section, key, absl::StrCat("[", hi, "]"), get, &got), "");
  EXPECT_EQ(got, hi);
  // lo is eal.main_lcore, so only the check across keys refuses it.
  const std::string err = LoadKey(section, key, absl::StrCat("[", lo, "]"), get, &got);
  EXPECT_NE(err.find("is eal.main_lcore"), std::string::npos) << err;
  EXPECT_EQ(LoadKey(section, key, absl::StrCat("[", hi + 1, "]"), get, &got),
            absl::StrCat(at, hi + 1, " is out of range; allowed: an integer from ", lo, " to ",
                         hi));
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\nworkers:\n  burst: 8\n"),
            "t.yaml:6:3: workers.lcores: missing required key; add 'lcores: [1]' (the lcores "
            "that run workers, not eal.main_lcore)");
}

void ExpectBoolKey(const std::string& section, const std::string& key, uint64_t, uint64_t,
                   const KeyGetter& get) {
  SCOPED_TRACE(section + "." + key);
  uint64_t got = 7;
  EXPECT_EQ(LoadKey(section, key, "true", get, &got), "");
  EXPECT_EQ(got, 1u);
  EXPECT_EQ(LoadKey(section, key, "false", get, &got), "");
  EXPECT_EQ(got, 0u);
  EXPECT_EQ(LoadKey(section, key, "7", get, &got),
            absl::StrCat("t.yaml:8:", 5 + key.size(), ": ", section, ".", key,
                         ": '7' is not a boolean; allowed: true or false"));
}

void ExpectRtrTypesKey(const std::string& section, const std::string& key, uint64_t, uint64_t,
                       const KeyGetter& get) {
  SCOPED_TRACE(section + "." + key);
  uint64_t got = 0;
  EXPECT_EQ(LoadKey(section, key, "[send]", get, &got), "");
  EXPECT_EQ(got, kIwarpRtrSend);
  EXPECT_EQ(LoadKey(section, key, "[read, write, send]", get, &got), "");
  EXPECT_EQ(got, kIwarpRtrSend | kIwarpRtrWrite | kIwarpRtrRead);
  EXPECT_EQ(LoadKey(section, key, "[write, write]", get, &got),
            absl::StrCat("t.yaml:8:", 5 + key.size() + 8, ": ", section, ".", key,
                         "[1]: RTR type listed twice; allowed: each of send, write, read at most "
                         "once"));
  EXPECT_EQ(LoadKey(section, key, "7", get, &got),
            absl::StrCat("t.yaml:8:", 5 + key.size(), ": ", section, ".", key,
                         ": expected a list; allowed: a list of 1 to 3 RTR types (send, write, "
                         "read)"));
}

TEST(ConfigSctp, EveryTunableOfTheEndpointTableIsAKeyWithItsRange) {
  absl::StatusOr<Config> d = LoadConfigString(kMinimal);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(static_cast<const sctp::SctpTunables&>(d->sctp), sctp::SctpTunables{});
  EXPECT_FALSE(d->sctp.enabled);
  const std::string printed = PrintedSection(*d, "sctp");
  EXPECT_EQ(printed.rfind("  enabled: false\n", 0), 0u) << printed;
  int keys = 0;
#define IWARPD_SCTP_KEY(kind, type, name, def, lo, hi, member)                                   \
  {                                                                                              \
    ++keys;                                                                                      \
    EXPECT_EQ(d->sctp.name, type(def)) << #name;                                                 \
    EXPECT_NE(printed.find(absl::StrCat("\n  " #name ": ", uint64_t{def}, "\n")), \
              std::string::npos)                                                                 \
        << #name << "\n"                                                                         \
        << printed;                                                                              \
    ExpectUintKey("sctp", #name, lo, hi,                                                         \
                  [](const Config& c) { return static_cast<uint64_t>(c.sctp.name); });          \
  }
  IWARPD_SCTP_TUNABLES(IWARPD_SCTP_KEY)
#undef IWARPD_SCTP_KEY
  EXPECT_EQ(keys, 12);
}

TEST(ConfigIwarp, EveryKeyOfTheTableIsAKeyWithItsRange) {
  absl::StatusOr<Config> d = LoadConfigString(kMinimal);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->iwarp, IwarpConfig{});
  const std::string printed = PrintedSection(*d, "iwarp");
  EXPECT_NE(printed.find("\n  rtr_types: [write, read]\n"), std::string::npos) << printed;
  int keys = 0;
#define IWARPD_IWARP_KEY(kind, type, name, def, lo, hi)                                        \
  {                                                                                            \
    ++keys;                                                                                    \
    EXPECT_EQ(d->iwarp.name, type(def)) << #name;                                              \
    const std::string k = #name;                                                               \
    EXPECT_NE(printed.find("  " + k + ": "), std::string::npos) << k << "\n" << printed;       \
    if (std::string(#kind) == "Uint") {                                                        \
      EXPECT_NE(printed.find(absl::StrCat("  ", k, ": ", uint64_t(def), "\n")),                \
                std::string::npos)                                                             \
          << k;                                                                                \
    }                                                                                          \
    Expect##kind##Key("iwarp", k, lo, hi,                                                      \
                      [](const Config& c) { return static_cast<uint64_t>(c.iwarp.name); });   \
  }
  IWARPD_IWARP_KEYS(IWARPD_IWARP_KEY)
#undef IWARPD_IWARP_KEY
  EXPECT_EQ(keys, 18);
}

TEST(ConfigWorkers, EveryKeyOfTheTableIsAKeyWithItsRange) {
  absl::StatusOr<Config> d = LoadConfigString(kMinimal);
  ASSERT_TRUE(d.ok()) << d.status();
  WorkerConfig expected;
  expected.lcores = {1};
  EXPECT_EQ(d->workers, expected);
  const std::string printed = PrintedSection(*d, "workers");
  EXPECT_EQ(printed.rfind("  lcores: [1]\n", 0), 0u) << printed;
  int keys = 0;
#define IWARPD_WORKERS_KEY(kind, type, name, def, lo, hi)                                      \
  {                                                                                            \
    ++keys;                                                                                    \
    EXPECT_EQ(WorkerConfig{}.name, type(def)) << #name;                                        \
    const std::string k = #name;                                                               \
    EXPECT_NE(printed.find("  " + k + ": "), std::string::npos) << k << "\n" << printed;       \
    if (k != "lcores") {                                                                       \
      EXPECT_NE(printed.find(absl::StrCat("  ", k, ": ", AsNumber(type(def)), "\n")),          \
                std::string::npos)                                                             \
          << k;                                                                                \
    }                                                                                          \
    Expect##kind##Key("workers", k, lo, hi,                                                    \
                      [](const Config& c) { return AsNumber(c.workers.name); });               \
  }
  IWARPD_WORKERS_KEYS(IWARPD_WORKERS_KEY)
#undef IWARPD_WORKERS_KEY
  EXPECT_EQ(keys, 5);
}

}  // namespace
// iwarp_fpdu_test is refused outside a test configuration, and its keys
// round-trip through the formatter.
TEST(ConfigIwarp, FpduTestNeedsTestMode) {
  const std::string svc =
      "services:\n  - {name: f, type: iwarp_fpdu_test, port: 4791, remote: 198.18.3.2, "
      "remote_port: 40000, loop_bytes: 1024}\n";
  EXPECT_EQ(Error2(svc),
            "t.yaml:8:5: services[0].type: iwarp_fpdu_test is a test mode (a QP established "
            "from configuration, no TCP or MPA handshake); use it only in a test configuration, "
            "which says 'test_mode: true' at the top level");
  absl::StatusOr<Config> c = LoadConfigString(
      std::string(kMinimal) + "test_mode: true\n" +
      "services:\n  - {name: f, type: iwarp_fpdu_test, port: 4791, remote: 198.18.3.2, "
      "remote_port: 40000, local_isn: 7, remote_isn: 4294967295, loop_bytes: 1536, "
      "region_bytes: 65536, markers: true, crc: false}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->test_mode);
  const ServiceConfig& f = c->services[0];
  EXPECT_EQ(f.type, ServiceType::kIwarpFpduTest);
  EXPECT_EQ(f.local_isn, 7u);
  EXPECT_EQ(f.remote_isn, 4294967295u);
  EXPECT_EQ(f.loop_bytes, 1536u);
  EXPECT_EQ(f.region_bytes, 65536u);
  EXPECT_TRUE(f.markers);
  EXPECT_FALSE(f.crc);
  EXPECT_NE(DescribeConfig(*c).find("TEST MODE"), std::string::npos);
  absl::StatusOr<Config> back = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << FormatConfigYaml(*c);
  EXPECT_EQ(back->services, c->services);
  EXPECT_TRUE(back->test_mode);

  EXPECT_EQ(Error2("test_mode: true\nservices:\n  - {name: f, type: iwarp_fpdu_test, port: 1, "
                   "remote: 198.18.3.2, remote_port: 2, loop_bytes: 1000, markers: true}\n"),
            "t.yaml:9:5: services[0].loop_bytes: loop_bytes 1000 with markers: true; allowed: a "
            "multiple of 512, so every pass puts its Markers at the same places (RFC 5044 4.3)");
  EXPECT_EQ(Error2("test_mode: true\nservices:\n  - {name: f, type: iwarp_fpdu_test, port: 1, "
                   "remote: 198.18.3.2, remote_port: 2}\n"),
            "t.yaml:9:5: services[0].loop_bytes: missing required key; an iwarp_fpdu_test needs "
            "remote: A.B.C.D, remote_port: N and loop_bytes: N (the TCP payload bytes of one "
            "pass of the generator's capture)");
  EXPECT_EQ(Error2("services:\n  - {name: r, type: iwarp_responder, port: 1, loop_bytes: 5}\n"),
            "t.yaml:8:5: services[0].loop_bytes: loop_bytes does not apply to type "
            "iwarp_responder; allowed: loop_bytes only with type iwarp_fpdu_test");
  EXPECT_EQ(Error("version: 1\nports:\n  - name: p0\n    vdev: net_null0\nworkers:\n"
                  "  lcores: [1, 2]\ntest_mode: true\n" + svc),
            "t.yaml:9:5: services[0].type: iwarp_fpdu_test with 2 workers; allowed: exactly one "
            "worker lcore (its fixed 4-tuple must reach the worker that holds the connection)");
}

TEST(ConfigUdpEcho, ReadRoundTripsAndRanges) {
  absl::StatusOr<Config> c = LoadConfigString(std::string(kMinimal) + "udp_echo: {port: 7}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->udp_echo.port, 7);
  EXPECT_NE(DescribeConfig(*c).find("udp echo (RFC 862) on port 7"), std::string::npos);
  absl::StatusOr<Config> back = LoadConfigString(FormatConfigYaml(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->udp_echo, c->udp_echo);
  EXPECT_EQ(LoadConfigString(kMinimal)->udp_echo.port, 0) << "off by default";
  EXPECT_EQ(Error2("udp_echo: {port: 65536}\n"),
            "t.yaml:7:18: udp_echo.port: 65536 is out of range; allowed: an integer from 0 to 65535");
}

}  // namespace iwarp::config
