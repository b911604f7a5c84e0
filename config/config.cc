// Schema v1 loader: yaml-cpp builds a node tree, Loader walks it into Config
// and validates every value. Everything that comes from the file is checked
// and reported as "FILE:LINE:COLUMN: KEY.PATH: what is wrong; what is allowed";
// no yaml-cpp exception leaves this file.
#include "config/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace iwarp::config {
namespace {

// Ranges of schema v1. config/examples/reference.yaml documents the same
// numbers; keep them in step.
constexpr uint64_t kMaxLcore = 127;  // Debian DPDK 22.11: RTE_MAX_LCORE 128
constexpr uint64_t kMinMemoryMb = 64;
constexpr uint64_t kMaxMemoryMb = 1 << 20;
constexpr size_t kMaxFilePrefix = 64;
constexpr size_t kMaxExtraArgs = 64;
constexpr size_t kMaxExtraArgLength = 256;
constexpr size_t kMaxPorts = 32;  // RTE_MAX_ETHPORTS
constexpr size_t kMaxPortName = 32;
constexpr size_t kMaxVdev = 256;
// sctp: RFC 5043 10 (at most 32767 DDP segments of a stream unacknowledged)
// and the control packets the host queue must hold beside one send buffer.
constexpr uint64_t kMaxSctpWindowChunks = 32767;
constexpr uint64_t kSctpControlPackets = 64;
constexpr uint64_t kMinMtu = 68;  // RFC 791: every host must take 68 octets
constexpr uint64_t kMaxMtu = 9600;
constexpr uint64_t kMaxQueues = 64;
constexpr uint64_t kMinDescriptors = 64;
constexpr uint64_t kMaxDescriptors = 16384;
constexpr size_t kMaxInterfaces = 64;
// The upper bound of `key` in a key table X(kind, type, name, default, lo, hi)
// (tcp:, iwarp:, workers:), for the checks below that tie a table's range to
// a limit used elsewhere; 0 when no row names it.
#define IWARPD_ROW_HI(kind, type, name, def, lo, hi) \
  if (key == #name) return hi;
// workers: the ranges are in the table (config.h); lcores share eal's.
constexpr uint64_t WorkersKeyHi(std::string_view key) {
  IWARPD_WORKERS_KEYS(IWARPD_ROW_HI)
  return 0;
}
static_assert(WorkersKeyHi("lcores") == kMaxLcore, "workers.lcores has eal.main_lcore's range");
constexpr uint64_t kMinMbufs = 1024;
constexpr uint64_t kMaxMbufs = (1u << 24) - 1;
constexpr uint64_t kMaxCache = 512;  // RTE_MEMPOOL_CACHE_MAX_SIZE
constexpr uint64_t kMinDataRoom = 1024;
constexpr uint64_t kMaxDataRoom = 65535;  // rte_pktmbuf_pool_create takes uint16_t
constexpr uint64_t kMinArpEntries = 16;
constexpr uint64_t kMaxArpEntries = 1 << 20;
constexpr uint64_t kMaxArpTimeoutS = 86400;
constexpr uint64_t kMaxArpPending = 1024;
constexpr uint64_t kMinArpRetryMs = 10;
constexpr uint64_t kMaxArpRetryMs = 60000;
// app_interface: sun_path holds 108 bytes, the file name up to 64 + ".sock".
constexpr size_t kMaxSocketDir = 36;
constexpr size_t kMaxAllowedUids = 64;
constexpr uint64_t kMaxUid = 0xFFFFFFFEu;  // (uid_t)-1 means "no change"
constexpr uint64_t kMaxSessions = 4096;
constexpr uint64_t kMaxQpsPerSession = 65536;
constexpr uint64_t kMaxMrsPerSession = 1 << 20;
constexpr uint64_t kMaxRegisteredMb = 1 << 22;  // 4 TiB
constexpr uint64_t kMinQueueDepth = 16;
constexpr uint64_t kMaxQueueDepth = 65536;
constexpr uint64_t kMinEventQueueDepth = 4;
constexpr uint64_t kMaxEventQueueDepth = 4096;
constexpr uint64_t kMinStagTable = 16;
constexpr uint64_t kMaxStagTable = (1u << 24) - 1;  // 24-bit STag index
constexpr uint64_t kMinWireAckTimeoutMs = 100;
constexpr uint64_t kMaxWireAckTimeoutMs = 60000;
// ports[].impairment
constexpr size_t kMaxImpairRules = 16;  // per port and direction
constexpr uint64_t kMaxImpairEvery = 1000000;
constexpr uint64_t kMaxImpairPpm = 1000000;
constexpr uint64_t kMaxImpairDelayMs = 10000;
constexpr uint64_t kMaxImpairReorderGap = 64;
constexpr uint64_t kMaxImpairMinPayload = 65535;
// tcp: the ranges are tcp_lite's table (tcp_lite/tcp_tunables.h).
constexpr uint64_t TcpTunableHi(std::string_view key) {
  IWARPD_TCP_TUNABLES(IWARPD_ROW_HI)
  return 0;
}
static_assert(TcpTunableHi("mss") == kMaxMtu - 40, "tcp.mss must fit the largest port MTU");
// services:
constexpr size_t kMaxServices = 64;
constexpr size_t kMaxServiceName = 32;
constexpr uint64_t kMaxSourceConnections = 65536;
// iwarp_* services; the iwarp: keys have theirs in their table (config.h),
// which shares these two.
constexpr uint64_t kMaxIwarpMessage = 16 << 20;  // 16 MiB
constexpr uint64_t kMaxIwarpRegion = uint64_t{1} << 30;
constexpr uint64_t IwarpKeyHi(std::string_view key) {
  IWARPD_IWARP_KEYS(IWARPD_ROW_HI)
  return 0;
}
#undef IWARPD_ROW_HI
static_assert(IwarpKeyHi("recv_buffer_bytes") == kMaxIwarpMessage,
              "a service's message_bytes is bounded like iwarp.recv_buffer_bytes");
static_assert(IwarpKeyHi("scratch_bytes") == kMaxIwarpRegion,
              "a client's region is bounded like iwarp.scratch_bytes");

// EAL options that a schema key owns; passing them in extra_args would make
// two sources of truth.
struct OwnedOption {
  absl::string_view option;
  absl::string_view key;
};
constexpr OwnedOption kOwnedOptions[] = {
    {"-l", "workers.lcores and eal.main_lcore"},
    {"--lcores", "workers.lcores and eal.main_lcore"},
    {"-c", "workers.lcores and eal.main_lcore"},
    {"--main-lcore", "eal.main_lcore"},
    {"-m", "eal.memory_mb"},
    {"--socket-mem", "eal.memory_mb"},
    {"--no-huge", "eal.hugepages"},
    {"--file-prefix", "eal.file_prefix"},
    {"--vdev", "ports[].vdev"},
    {"-a", "ports[].pci"},
    {"--allow", "ports[].pci"},
    {"--no-pci", "ports[].pci"},
    {"--log-level", "logging.level"},
    {"--no-telemetry", "telemetry.enabled"},
    {"--telemetry", "telemetry.enabled"},
};

// A value from the file, made safe to print on one line.
std::string Quote(absl::string_view raw) {
  constexpr size_t kMaxShown = 48;
  std::string shown = absl::CHexEscape(raw.substr(0, kMaxShown));
  if (raw.size() > kMaxShown) shown += "...";
  return absl::StrCat("'", shown, "'");
}

// A key from the file as a path element: escaped and shortened.
std::string SafeKey(absl::string_view raw) {
  constexpr size_t kMaxShown = 48;
  std::string shown = absl::CHexEscape(raw.substr(0, kMaxShown));
  if (raw.size() > kMaxShown) shown += "...";
  return shown;
}

std::string Position(const YAML::Mark& m) {
  return absl::StrCat(std::max(m.line, 0) + 1, ":", std::max(m.column, 0) + 1);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
unsigned HexValue(char c) {
  return static_cast<unsigned>(IsDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
}

// Strict decimal: digits only, no sign, no leading zero (YAML 1.1 reads
// "010" as octal), at most 19 digits.
std::optional<uint64_t> ParseDecimal(absl::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  if (s.size() > 1 && s[0] == '0') return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// "a.b.c.d" in host byte order; four decimal octets without leading zeros.
std::optional<uint32_t> ParseIpv4Address(absl::string_view s) {
  uint32_t addr = 0;
  for (int i = 0; i < 4; ++i) {
    size_t dot = s.find('.');
    absl::string_view part = i < 3 ? s.substr(0, dot) : s;
    if (i < 3 && dot == absl::string_view::npos) return std::nullopt;
    if (part.size() > 3) return std::nullopt;
    std::optional<uint64_t> octet = ParseDecimal(part);
    if (!octet || *octet > 255) return std::nullopt;
    addr = (addr << 8) | static_cast<uint32_t>(*octet);
    if (i < 3) s.remove_prefix(dot + 1);
  }
  return addr;
}

uint32_t PrefixMask(uint8_t len) { return len == 0 ? 0 : ~uint32_t{0} << (32 - len); }

std::string FormatPrefix(uint32_t addr, uint8_t len) {
  return absl::StrCat(FormatIpv4(addr), "/", len);
}

// Unicast host address usable on a link: not in 0/8 ("this network"),
// 127/8 (loopback) or 224/3 (multicast and reserved).
bool IsUsableUnicast(uint32_t addr) {
  uint32_t first = addr >> 24;
  return first != 0 && first != 127 && first < 224;
}

// DPDK device name of a vdev spec: the part before the first ','.
absl::string_view VdevDevice(absl::string_view vdev) { return vdev.substr(0, vdev.find(',')); }

// The log2 ring size of a net_memif client in zero-copy mode (devargs
// zero-copy=yes, role client, DPDK's default; rsize, DPDK's default 10), or
// nullopt for any other device. Such a client receives into its own mbufs:
// every descriptor of its receive rings holds one (rx_descriptors does not
// size net_memif rings). A value DPDK will refuse is left to DPDK.
std::optional<uint32_t> MemifZeroCopyRsize(absl::string_view vdev) {
  if (!absl::StartsWith(VdevDevice(vdev), "net_memif")) return std::nullopt;
  bool zero_copy = false, client = true;
  uint32_t rsize = 10;
  for (absl::string_view arg : absl::StrSplit(vdev, ',')) {
    const size_t eq = arg.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (key == "zero-copy") zero_copy = value == "yes";
    if (key == "role") client = value != "server";
    if (key == "rsize" && !value.empty() && value.size() <= 2 &&
        std::all_of(value.begin(), value.end(), IsDigit)) {
      rsize = 0;
      for (char d : value) rsize = rsize * 10 + static_cast<uint32_t>(d - '0');
    }
  }
  if (!zero_copy || !client || rsize > 16) return std::nullopt;
  return rsize;
}

// The driver of a vdev spec whose DPDK 22.11 driver raises no receive
// interrupts (measured: rte_eth_dev_rx_intr_ctl_q answers -ENOTSUP), or
// nullopt (net_tap and net_vhost have them; other drivers are checked when
// the port starts).
std::optional<absl::string_view> VdevWithoutRxInterrupts(absl::string_view vdev) {
  static constexpr absl::string_view kWithout[] = {"net_memif", "net_ring", "net_af_packet",
                                                   "net_pcap", "net_null"};
  for (absl::string_view d : kWithout) {
    if (absl::StartsWith(VdevDevice(vdev), d)) return d;
  }
  return std::nullopt;
}

// "DDDD:BB:DD.F" or "BB:DD.F" (hex); returns the long lowercase form.
std::optional<std::string> NormalizePci(absl::string_view s) {
  std::string full = s.size() == 7 ? absl::StrCat("0000:", s) : std::string(s);
  if (full.size() != 12 || full[4] != ':' || full[7] != ':' || full[10] != '.') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!IsHex(full[i])) return std::nullopt;
    if (full[i] >= 'A' && full[i] <= 'F') full[i] = static_cast<char>(full[i] - 'A' + 'a');
  }
  // PCI: 32 devices per bus, 8 functions per device.
  unsigned device = HexValue(full[8]) * 16 + HexValue(full[9]);
  if (device > 0x1f || full[11] > '7') return std::nullopt;
  return full;
}

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Counts parser events and stops the parse past a budget. yaml-cpp 0.7 can
// loop forever on some malformed flow collections, emitting nodes without
// consuming input; a document cannot honestly produce more events than a few
// per input byte, so a parse that exceeds the budget is cut short.
class EventBudget : public YAML::EventHandler {
 public:
  explicit EventBudget(size_t events) : left_(events) {}

  void OnDocumentStart(const YAML::Mark& mark) override { Spend(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Spend(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Spend(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Spend(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Spend(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Spend(mark);
  }
  void OnMapEnd() override {}

 private:
  void Spend(const YAML::Mark& mark) {
    if (left_ == 0) throw YAML::ParserException(mark, "the parser stopped making progress here");
    --left_;
  }

  size_t left_;
};

// Runs the whole input through EventBudget; throws YAML::Exception on a
// syntax error or an exhausted budget.
void CheckParseTerminates(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  EventBudget budget(4 * text.size() + 64);
  while (parser.HandleNextDocument(budget)) {
  }
}

// The YAML names of an enum, for the readers generated from a table and for
// NameOf (specialised after the names arrays, one line per enum).
template <typename E>
struct EnumNames;

struct UintRange {
  uint64_t lo;
  uint64_t hi;
};

std::string DescribeRange(UintRange r) {
  return absl::StrCat("an integer from ", r.lo, " to ", r.hi);
}

// Walks one YAML document into a Config. The first error is kept in error_
// and every reader returns false from then on, unwinding the walk.
class Loader {
 public:
  explicit Loader(absl::string_view source) : source_(source) { config_.source = source_; }

  absl::StatusOr<Config> Run(absl::string_view yaml);

 private:
  // Reads one value; `key` is the key node (its mark is used for missing
  // values), `path` the full key path.
  using Reader =
      std::function<bool(const YAML::Node& key, const YAML::Node& value, const std::string& path)>;
  struct Field {
    absl::string_view key;
    Reader read;
    // Non-empty for required keys: the fix shown when the key is missing.
    absl::string_view required_hint = {};
  };

  bool Fail(const YAML::Mark& mark, absl::string_view path, absl::string_view what,
            absl::string_view allowed) {
    error_ = absl::StrCat(source_, ":", Position(mark), ": ", path, ": ", what, "; ", allowed);
    return false;
  }

  static std::string Join(const std::string& path, absl::string_view key) {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  }

  bool WalkMap(const YAML::Node& map, const YAML::Mark& map_mark, const std::string& path,
               const std::vector<Field>& fields);
  bool ReadSection(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                   const std::vector<Field>& fields);
  bool ReadList(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                size_t min_items, size_t max_items, absl::string_view what,
                const std::function<bool(const YAML::Node&, const std::string&)>& read_item);

  bool ReadScalar(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                  absl::string_view allowed, std::string* out);
  // `also`, when not empty, is a word the value may be instead (the caller
  // checks for it); errors name it among the allowed values.
  bool ReadUint(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                UintRange range, uint64_t* out, absl::string_view also = {});
  template <typename T>
  Reader Uint(T* out, UintRange range) {
    return [this, out, range](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
      uint64_t x = 0;
      if (!ReadUint(k, v, p, range, &x)) return false;
      *out = static_cast<T>(x);
      return true;
    };
  }
  // An integer in `range`, or auto (stored as `auto_value`).
  template <typename T>
  Reader UintOrAuto(T* out, UintRange range, T auto_value) {
    return [this, out, range, auto_value](const YAML::Node& k, const YAML::Node& v,
                                          const std::string& p) {
      if (v.IsScalar() && v.Scalar() == "auto") {
        *out = auto_value;
        return true;
      }
      uint64_t x = 0;
      if (!ReadUint(k, v, p, range, &x, "auto")) return false;
      *out = static_cast<T>(x);
      return true;
    };
  }
  Reader Bool(bool* out);
  template <typename E, size_t N>
  Reader Enum(E* out, const std::pair<absl::string_view, E> (&names)[N]);
  // Wraps `read` to remember where the key's value was in `marks`, for the
  // checks across keys.
  Reader Marked(std::map<std::string, YAML::Mark, std::less<>>* marks, absl::string_view name,
                Reader read) {
    return [marks, name, read](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
      (*marks)[std::string(name)] = v.Mark();
      return read(k, v, p);
    };
  }
  // The readers of the kinds of the key tables (tcp_lite/tcp_tunables.h,
  // sctp/sctp_tunables.h, IWARPD_IWARP_KEYS in config.h).
  Reader TunableBool(bool* out, UintRange, bool) { return Bool(out); }
  template <typename T>
  Reader TunableUint(T* out, UintRange range, T) {
    return Uint(out, range);
  }
  template <typename T>
  Reader TunableUintOrAuto(T* out, UintRange range, T auto_value) {
    return UintOrAuto(out, range, auto_value);
  }
  // 0 (the port's MTU - 40) or an integer in `range`.
  template <typename T>
  Reader TunableMss(T* out, UintRange range, T) {
    return [this, out, range](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
      uint64_t x = 0;
      if (!ReadUint(k, v, p, {0, range.hi}, &x)) return false;
      if (x != 0 && x < range.lo) {
        return Fail(v.Mark(), p, absl::StrCat(x, " is out of range"),
                    absl::StrCat("allowed: 0 (port mtu - 40) or an integer from ", range.lo,
                                 " to ", range.hi));
      }
      *out = static_cast<T>(x);
      return true;
    };
  }
  template <typename E>
  Reader TunableEnum(E* out, UintRange, E) {
    return Enum(out, EnumNames<E>::kNames);
  }
  // iwarp.rtr_types: a list of send, write, read, each at most once.
  Reader TunableRtrTypes(uint8_t* out, UintRange, uint8_t);
  // workers: lcores, idle_sleep_us, idle_block_after_us.
  Reader TunableLcores(std::vector<uint32_t>* out, UintRange range, const std::vector<uint32_t>&);
  Reader TunableIdleSleepUs(uint32_t* out, UintRange range, uint32_t);
  Reader TunableIdleBlockAfterUs(uint32_t* out, UintRange range, uint32_t);

  bool ReadVersion(const YAML::Node& top);
  bool ReadEal(const YAML::Node& key, const YAML::Node& value, const std::string& path);
  bool ReadPort(const YAML::Node& item, const std::string& path);
  bool ReadInterface(const YAML::Node& item, const std::string& path);
  bool ReadImpairment(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                      ImpairmentConfig* out);
  bool ReadImpairRule(const YAML::Node& item, const std::string& path,
                      std::vector<ImpairRule>* out);
  bool ReadWorkers(const YAML::Node& key, const YAML::Node& value, const std::string& path);
  bool ReadAppInterface(const YAML::Node& key, const YAML::Node& value, const std::string& path);
  Reader PowerOfTwo(uint32_t* out, UintRange range);
  bool ReadTcp(const YAML::Node& key, const YAML::Node& value, const std::string& path);
  bool ReadService(const YAML::Node& item, const std::string& path);
  bool ReadIwarp(const YAML::Node& key, const YAML::Node& value, const std::string& path);
  bool ReadSctp(const YAML::Node& key, const YAML::Node& value, const std::string& path);
  bool CheckTcpAndServices();
  bool CheckWhole();

  std::string source_;
  std::string error_;
  Config config_;

  // Marks kept for the checks that need the whole document.
  YAML::Mark main_lcore_mark_;
  YAML::Mark mbufs_mark_;
  YAML::Mark top_mark_;
  YAML::Mark idle_sleep_mark_;
  YAML::Mark idle_block_mark_;
  bool saw_mbufs_ = false;
  std::vector<YAML::Mark> lcore_marks_;
  struct InterfaceMarks {
    YAML::Mark port;
    YAML::Mark ipv4;
    YAML::Mark gateway;
  };
  std::vector<InterfaceMarks> interface_marks_;
  // tcp: and services: marks for the whole-document checks.
  std::map<std::string, YAML::Mark, std::less<>> tcp_marks_;
  std::map<std::string, YAML::Mark, std::less<>> iwarp_marks_;
  std::map<std::string, YAML::Mark, std::less<>> sctp_marks_;
  struct ServiceMarks {
    YAML::Mark item;
    YAML::Mark name;
    YAML::Mark port;
    YAML::Mark remote;
  };
  std::vector<ServiceMarks> service_marks_;
  std::map<std::string, YAML::Mark, std::less<>> port_names_;
  std::map<std::string, std::pair<std::string, YAML::Mark>, std::less<>> devices_;
};

bool Loader::WalkMap(const YAML::Node& map, const YAML::Mark& map_mark, const std::string& path,
                     const std::vector<Field>& fields) {
  std::vector<bool> seen(fields.size(), false);
  std::map<std::string, YAML::Mark, std::less<>> keys;
  if (map.IsDefined() && !map.IsNull()) {
    for (const auto& kv : map) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) {
        return Fail(key.Mark(), path.empty() ? "(document)" : path, "a key must be a plain word",
                    "write keys as plain snake_case names");
      }
      const std::string& name = key.Scalar();
      std::string key_path = Join(path, SafeKey(name));
      auto [it, inserted] = keys.emplace(name, key.Mark());
      if (!inserted) {
        return Fail(key.Mark(), key_path,
                    absl::StrCat("duplicate key (first at ", Position(it->second), ")"),
                    "allowed: each key once per mapping (remove one of them)");
      }
      size_t i = 0;
      while (i < fields.size() && fields[i].key != name) ++i;
      if (i == fields.size()) {
        std::vector<absl::string_view> names;
        absl::string_view closest;
        size_t best = 3;  // suggest only near misses
        for (const Field& f : fields) {
          names.push_back(f.key);
          size_t d = EditDistance(name, f.key);
          if (d < best) best = d, closest = f.key;
        }
        std::string hint = absl::StrCat("allowed keys: ", absl::StrJoin(names, ", "));
        if (!closest.empty()) absl::StrAppend(&hint, " (did you mean '", closest, "'?)");
        return Fail(key.Mark(), key_path, "unknown key", hint);
      }
      seen[i] = true;
      if (!fields[i].read(key, kv.second, key_path)) return false;
    }
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!seen[i] && !fields[i].required_hint.empty()) {
      return Fail(map_mark, Join(path, fields[i].key), "missing required key",
                  fields[i].required_hint);
    }
  }
  return true;
}

bool Loader::ReadSection(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                         const std::vector<Field>& fields) {
  // An empty section ("eal:" with everything commented out) means defaults.
  if (value.IsNull()) return WalkMap(value, key.Mark(), path, fields);
  if (!value.IsMap()) {
    return Fail(value.Mark(), path, "expected a mapping",
                absl::StrCat("write the section as indented 'key: value' lines with keys ",
                             absl::StrJoin(fields, ", ",
                                           [](std::string* out, const Field& f) {
                                             out->append(f.key.data(), f.key.size());
                                           })));
  }
  return WalkMap(value, value.Mark(), path, fields);
}

bool Loader::ReadList(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                      size_t min_items, size_t max_items, absl::string_view what,
                      const std::function<bool(const YAML::Node&, const std::string&)>& read_item) {
  std::string allowed = absl::StrCat("allowed: a list of ", min_items, " to ", max_items, " ", what);
  if (value.IsNull()) {
    if (min_items == 0) return true;
    return Fail(key.Mark(), path, "missing value", allowed);
  }
  if (!value.IsSequence()) return Fail(value.Mark(), path, "expected a list", allowed);
  if (value.size() < min_items) return Fail(value.Mark(), path, "the list is empty", allowed);
  if (value.size() > max_items) {
    return Fail(value.Mark(), path, absl::StrCat("the list has ", value.size(), " items"), allowed);
  }
  size_t index = 0;
  for (const auto& item : value) {
    if (!read_item(item, absl::StrCat(path, "[", index, "]"))) return false;
    ++index;
  }
  return true;
}

bool Loader::ReadScalar(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                        absl::string_view allowed, std::string* out) {
  if (value.IsNull()) return Fail(key.Mark(), path, "missing value", allowed);
  if (!value.IsScalar()) {
    return Fail(value.Mark(), path,
                value.IsMap() ? "expected a single value, got a mapping"
                              : "expected a single value, got a list",
                allowed);
  }
  *out = value.Scalar();
  return true;
}

bool Loader::ReadUint(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                      UintRange range, uint64_t* out, absl::string_view also) {
  std::string allowed =
      absl::StrCat("allowed: ", also, also.empty() ? "" : " or ", DescribeRange(range));
  std::string raw;
  if (!ReadScalar(key, value, path, allowed, &raw)) return false;
  // Plain scalars only: a quoted "5" is a string in YAML.
  if (value.Tag() != "?" && value.Tag() != "tag:yaml.org,2002:int") {
    return Fail(value.Mark(), path, absl::StrCat("expected an integer, got the string ", Quote(raw)),
                absl::StrCat(allowed, ", written without quotes"));
  }
  std::optional<uint64_t> v = ParseDecimal(raw);
  if (!v) {
    bool signed_digits = raw.size() > 1 && (raw[0] == '-' || raw[0] == '+') &&
                         std::all_of(raw.begin() + 1, raw.end(), IsDigit);
    bool long_digits = !raw.empty() && raw[0] != '0' && std::all_of(raw.begin(), raw.end(), IsDigit);
    if (signed_digits || long_digits) {
      return Fail(value.Mark(), path, absl::StrCat(Quote(raw), " is out of range"), allowed);
    }
    return Fail(value.Mark(), path, absl::StrCat(Quote(raw), " is not a decimal integer"),
                absl::StrCat(allowed, " (digits only, no leading zero)"));
  }
  if (*v < range.lo || *v > range.hi) {
    return Fail(value.Mark(), path, absl::StrCat(*v, " is out of range"), allowed);
  }
  *out = *v;
  return true;
}

Loader::Reader Loader::Bool(bool* out) {
  return [this, out](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
    constexpr absl::string_view kAllowed = "allowed: true or false";
    std::string raw;
    if (!ReadScalar(k, v, p, kAllowed, &raw)) return false;
    if (raw == "true" || raw == "True" || raw == "TRUE") {
      *out = true;
    } else if (raw == "false" || raw == "False" || raw == "FALSE") {
      *out = false;
    } else {
      return Fail(v.Mark(), p, absl::StrCat(Quote(raw), " is not a boolean"), kAllowed);
    }
    return true;
  };
}

template <typename E, size_t N>
Loader::Reader Loader::Enum(E* out, const std::pair<absl::string_view, E> (&names)[N]) {
  return [this, out, &names](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
    std::vector<absl::string_view> words;
    for (const auto& n : names) words.push_back(n.first);
    std::string allowed = absl::StrCat("allowed: ", absl::StrJoin(words, ", "));
    std::string raw;
    if (!ReadScalar(k, v, p, allowed, &raw)) return false;
    for (const auto& n : names) {
      if (n.first == raw) {
        *out = n.second;
        return true;
      }
    }
    return Fail(v.Mark(), p, absl::StrCat(Quote(raw), " is not a known value"), allowed);
  };
}

constexpr std::pair<absl::string_view, HugepageMode> kHugepageNames[] = {
    {"auto", HugepageMode::kAuto}, {"on", HugepageMode::kOn}, {"off", HugepageMode::kOff}};
constexpr std::pair<absl::string_view, LogLevel> kLogLevelNames[] = {
    {"error", LogLevel::kError}, {"warning", LogLevel::kWarning}, {"notice", LogLevel::kNotice},
    {"info", LogLevel::kInfo},   {"debug", LogLevel::kDebug}};
constexpr std::pair<absl::string_view, ImpairAction> kImpairActionNames[] = {
    {"drop", ImpairAction::kDrop},   {"duplicate", ImpairAction::kDuplicate},
    {"reorder", ImpairAction::kReorder}, {"delay", ImpairAction::kDelay},
    {"corrupt", ImpairAction::kCorrupt}};
constexpr std::pair<absl::string_view, ImpairProtocol> kImpairProtocolNames[] = {
    {"any", ImpairProtocol::kAny}, {"tcp", ImpairProtocol::kTcp},
    {"udp", ImpairProtocol::kUdp}, {"icmp", ImpairProtocol::kIcmp}};
constexpr std::pair<absl::string_view, CorruptChecksum> kCorruptChecksumNames[] = {
    {"stale", CorruptChecksum::kStale}, {"fixed", CorruptChecksum::kFixed}};

constexpr std::pair<absl::string_view, SynCookies> kSynCookieNames[] = {
    {"off", SynCookies::kOff}, {"on_pressure", SynCookies::kOnPressure},
    {"always", SynCookies::kAlways}};
constexpr std::pair<absl::string_view, TsoMode> kTsoModeNames[] = {
    {"auto", TsoMode::kAuto}, {"on", TsoMode::kOn}, {"off", TsoMode::kOff}};
constexpr std::pair<absl::string_view, CongestionControl> kCongestionControlNames[] = {
    {"newreno", CongestionControl::kNewReno}, {"cubic", CongestionControl::kCubic}};
constexpr std::pair<absl::string_view, ServiceType> kServiceTypeNames[] = {
    {"echo", ServiceType::kEcho},
    {"sink", ServiceType::kSink},
    {"source", ServiceType::kSource},
    {"iwarp_responder", ServiceType::kIwarpResponder},
    {"iwarp_client", ServiceType::kIwarpClient},
    {"iwarp_fpdu_test", ServiceType::kIwarpFpduTest}};
constexpr std::pair<absl::string_view, IwarpOp> kIwarpOpNames[] = {
    {"write", IwarpOp::kWrite}, {"read", IwarpOp::kRead}, {"send", IwarpOp::kSend},
    {"mixed", IwarpOp::kMixed}};
constexpr std::pair<absl::string_view, IwarpTransport> kIwarpTransportNames[] = {
    {"tcp", IwarpTransport::kTcp}, {"sctp", IwarpTransport::kSctp}};
constexpr std::pair<absl::string_view, uint8_t> kRtrTypeNames[] = {
    {"send", kIwarpRtrSend}, {"write", kIwarpRtrWrite}, {"read", kIwarpRtrRead}};

#define IWARPD_ENUM_NAMES(E, table)              \
  template <>                                    \
  struct EnumNames<E> {                          \
    static constexpr const auto& kNames = table; \
  };
IWARPD_ENUM_NAMES(HugepageMode, kHugepageNames)
IWARPD_ENUM_NAMES(LogLevel, kLogLevelNames)
IWARPD_ENUM_NAMES(ImpairAction, kImpairActionNames)
IWARPD_ENUM_NAMES(ImpairProtocol, kImpairProtocolNames)
IWARPD_ENUM_NAMES(CorruptChecksum, kCorruptChecksumNames)
IWARPD_ENUM_NAMES(SynCookies, kSynCookieNames)
IWARPD_ENUM_NAMES(TsoMode, kTsoModeNames)
IWARPD_ENUM_NAMES(CongestionControl, kCongestionControlNames)
IWARPD_ENUM_NAMES(ServiceType, kServiceTypeNames)
IWARPD_ENUM_NAMES(IwarpOp, kIwarpOpNames)
IWARPD_ENUM_NAMES(IwarpTransport, kIwarpTransportNames)
#undef IWARPD_ENUM_NAMES

template <typename E, size_t N>
absl::string_view NameOf(E e, const std::pair<absl::string_view, E> (&names)[N]) {
  for (const auto& n : names) {
    if (n.second == e) return n.first;
  }
  return "unknown";
}
// The YAML name of `e` ("unknown" for a value outside its table).
template <typename E>
absl::string_view NameOf(E e) {
  return NameOf(e, EnumNames<E>::kNames);
}

// The printers of the kinds of the key tables (tcp_lite/tcp_tunables.h,
// sctp/sctp_tunables.h, IWARPD_IWARP_KEYS in config.h), in the form the
// loader reads back.
std::string FormatTunableBool(bool v, bool) { return v ? "true" : "false"; }
template <typename T>
std::string FormatTunableUint(T v, T) {
  return absl::StrCat(v);
}
template <typename T>
std::string FormatTunableUintOrAuto(T v, T auto_value) {
  return v == auto_value ? std::string("auto") : absl::StrCat(v);
}
template <typename T>
std::string FormatTunableMss(T v, T d) {
  return FormatTunableUint(v, d);
}
template <typename E>
std::string FormatTunableEnum(E v, E) {
  return std::string(NameOf(v));
}
std::string FormatTunableLcores(const std::vector<uint32_t>& v, const std::vector<uint32_t>&) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}
std::string FormatTunableIdleSleepUs(uint32_t v, uint32_t) { return absl::StrCat(v); }
std::string FormatTunableIdleBlockAfterUs(uint32_t v, uint32_t) { return absl::StrCat(v); }
std::string FormatTunableRtrTypes(uint8_t v, uint8_t) {
  std::vector<absl::string_view> rtr;
  for (const auto& [name, bit] : kRtrTypeNames) {
    if ((v & bit) != 0) rtr.push_back(name);
  }
  return absl::StrCat("[", absl::StrJoin(rtr, ", "), "]");
}


bool Loader::ReadVersion(const YAML::Node& top) {
  constexpr absl::string_view kAllowed = "allowed: 1 (this iwarpd reads schema version 1)";
  for (const auto& kv : top) {
    if (!kv.first.IsScalar() || kv.first.Scalar() != "version") continue;
    const YAML::Node& v = kv.second;
    std::string raw;
    if (!ReadScalar(kv.first, v, "version", kAllowed, &raw)) return false;
    if (raw == "1" && v.Tag() == "?") return true;
    if (raw == "1") {
      return Fail(v.Mark(), "version", "expected the integer 1, got the string '1'",
                  "allowed: 1 written without quotes");
    }
    return Fail(v.Mark(), "version", absl::StrCat("schema version ", Quote(raw), " is not supported"),
                kAllowed);
  }
  return Fail(top.Mark(), "version", "missing required key",
              "add 'version: 1' as the first line (schema version 1)");
}

bool Loader::ReadEal(const YAML::Node& key, const YAML::Node& value, const std::string& path) {
  EalConfig& eal = config_.eal;
  return ReadSection(
      key, value, path,
      {
          {"main_lcore",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             main_lcore_mark_ = v.Mark();
             return Uint(&config_.eal.main_lcore, {0, kMaxLcore})(k, v, p);
           }},
          {"memory_mb", Uint(&eal.memory_mb, {kMinMemoryMb, kMaxMemoryMb})},
          {"hugepages", Enum(&eal.hugepages, kHugepageNames)},
          {"file_prefix",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             std::string allowed = absl::StrCat(
                 "allowed: 1 to ", kMaxFilePrefix,
                 " characters from A-Z a-z 0-9 '_' '-', starting with a letter or digit");
             std::string s;
             if (!ReadScalar(k, v, p, allowed, &s)) return false;
             bool ok = !s.empty() && s.size() <= kMaxFilePrefix && (IsAlpha(s[0]) || IsDigit(s[0]));
             for (char c : s) ok = ok && (IsAlpha(c) || IsDigit(c) || c == '_' || c == '-');
             if (!ok) return Fail(v.Mark(), p, absl::StrCat(Quote(s), " is not a safe file prefix"), allowed);
             config_.eal.file_prefix = s;
             return true;
           }},
          {"extra_args",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadList(k, v, p, 0, kMaxExtraArgs, "EAL arguments (strings)",
                             [this](const YAML::Node& item, const std::string& ip) {
                               std::string allowed = absl::StrCat(
                                   "allowed: 1 to ", kMaxExtraArgLength,
                                   " printable ASCII characters, one argument per item");
                               std::string s;
                               if (!ReadScalar(item, item, ip, allowed, &s)) return false;
                               bool ok = !s.empty() && s.size() <= kMaxExtraArgLength;
                               for (char c : s) ok = ok && c >= 0x20 && c <= 0x7e;
                               if (!ok) {
                                 return Fail(item.Mark(), ip,
                                             absl::StrCat(Quote(s), " is not a usable argument"),
                                             allowed);
                               }
                               absl::string_view option = absl::string_view(s).substr(0, s.find('='));
                               for (const OwnedOption& o : kOwnedOptions) {
                                 if (option == o.option) {
                                   return Fail(item.Mark(), ip,
                                               absl::StrCat(Quote(s), " is generated from ", o.key),
                                               absl::StrCat("set ", o.key, " instead"));
                                 }
                               }
                               config_.eal.extra_args.push_back(s);
                               return true;
                             });
           }},
          {"cpus",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadList(k, v, p, 0, kMaxLcore + 1,
                             absl::StrCat("distinct CPUs from 0 to ", kMaxLcore),
                             [this](const YAML::Node& item, const std::string& ip) {
                               uint64_t cpu = 0;
                               if (!ReadUint(item, item, ip, {0, kMaxLcore}, &cpu)) return false;
                               for (uint32_t c : config_.eal.cpus) {
                                 if (c == cpu) {
                                   return Fail(item.Mark(), ip,
                                               absl::StrCat("CPU ", cpu, " is listed twice"),
                                               "list every CPU once");
                                 }
                               }
                               config_.eal.cpus.push_back(static_cast<uint32_t>(cpu));
                               return true;
                             });
           }},
      });
}

bool Loader::ReadPort(const YAML::Node& item, const std::string& path) {
  const YAML::Mark mark = item.Mark();
  if (!item.IsMap()) {
    return Fail(mark, path, "expected a mapping",
                "write each port as '- name: NAME' followed by 'vdev: SPEC' or 'pci: ADDRESS'");
  }
  PortConfig port;
  YAML::Mark vdev_mark, pci_mark, name_mark;
  bool has_vdev = false, has_pci = false;
  if (!WalkMap(
          item, mark, path,
          {
              {"name",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 std::string allowed = absl::StrCat(
                     "allowed: 1 to ", kMaxPortName,
                     " characters from A-Z a-z 0-9 '_' '-', starting with a letter");
                 if (!ReadScalar(k, v, p, allowed, &port.name)) return false;
                 const std::string& s = port.name;
                 bool ok = !s.empty() && s.size() <= kMaxPortName && IsAlpha(s[0]);
                 for (char c : s) ok = ok && (IsAlpha(c) || IsDigit(c) || c == '_' || c == '-');
                 if (!ok) return Fail(v.Mark(), p, absl::StrCat(Quote(s), " is not a valid port name"), allowed);
                 name_mark = v.Mark();
                 return true;
               },
               "add 'name: NAME' (unique, interfaces refer to the port by it)"},
              {"vdev",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 std::string allowed = absl::StrCat(
                     "allowed: a DPDK vdev spec DRIVERN[,key=value...] of at most ", kMaxVdev,
                     " printable characters without spaces, e.g. net_tap0,iface=iw0");
                 if (!ReadScalar(k, v, p, allowed, &port.vdev)) return false;
                 const std::string& s = port.vdev;
                 absl::string_view device = VdevDevice(s);
                 bool ok = !device.empty() && s.size() <= kMaxVdev && IsAlpha(device[0]);
                 for (char c : device) ok = ok && (IsAlpha(c) || IsDigit(c) || c == '_');
                 for (char c : s) ok = ok && c > 0x20 && c <= 0x7e;
                 if (!ok) return Fail(v.Mark(), p, absl::StrCat(Quote(s), " is not a vdev spec"), allowed);
                 has_vdev = true;
                 vdev_mark = v.Mark();
                 return true;
               }},
              {"pci",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 constexpr absl::string_view kAllowed =
                     "allowed: a PCI address DDDD:BB:DD.F or BB:DD.F in hex, e.g. 0000:03:00.0";
                 std::string s;
                 if (!ReadScalar(k, v, p, kAllowed, &s)) return false;
                 std::optional<std::string> pci = NormalizePci(s);
                 if (!pci) return Fail(v.Mark(), p, absl::StrCat(Quote(s), " is not a PCI address"), kAllowed);
                 port.pci = *pci;
                 has_pci = true;
                 pci_mark = v.Mark();
                 return true;
               }},
              {"mtu", Uint(&port.mtu, {kMinMtu, kMaxMtu})},
              {"rx_queues", Uint(&port.rx_queues, {0, kMaxQueues})},
              {"tx_queues", Uint(&port.tx_queues, {0, kMaxQueues})},
              {"rx_descriptors",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 uint64_t x = 0;
                 if (!ReadUint(k, v, p, {kMinDescriptors, kMaxDescriptors}, &x)) return false;
                 if ((x & (x - 1)) != 0) {
                   return Fail(v.Mark(), p, absl::StrCat(x, " is not a power of two"),
                               absl::StrCat("allowed: a power of two from ", kMinDescriptors, " to ",
                                            kMaxDescriptors));
                 }
                 port.rx_descriptors = static_cast<uint16_t>(x);
                 return true;
               }},
              {"tx_descriptors",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 uint64_t x = 0;
                 if (!ReadUint(k, v, p, {kMinDescriptors, kMaxDescriptors}, &x)) return false;
                 if ((x & (x - 1)) != 0) {
                   return Fail(v.Mark(), p, absl::StrCat(x, " is not a power of two"),
                               absl::StrCat("allowed: a power of two from ", kMinDescriptors, " to ",
                                            kMaxDescriptors));
                 }
                 port.tx_descriptors = static_cast<uint16_t>(x);
                 return true;
               }},
              {"promiscuous", Bool(&port.promiscuous)},
              {"tso",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 if (!Enum(&port.tso, kTsoModeNames)(k, v, p)) return false;
                 port.tso_origin.text = absl::StrCat(source_, ":", Position(v.Mark()));
                 return true;
               }},
              {"impairment",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 return ReadImpairment(k, v, p, &port.impairment);
               }},
          })) {
    return false;
  }
  if (has_vdev && has_pci) {
    return Fail(pci_mark, path + ".pci", "both vdev and pci are set",
                "set exactly one of vdev (virtual device) or pci (physical NIC)");
  }
  if (!has_vdev && !has_pci) {
    return Fail(mark, path + ".vdev", "neither vdev nor pci is set",
                "set exactly one of vdev (e.g. net_tap0,iface=iw0) or pci (e.g. 0000:03:00.0)");
  }
  auto [it, inserted] = port_names_.emplace(port.name, name_mark);
  if (!inserted) {
    return Fail(name_mark, path + ".name",
                absl::StrCat("duplicate port name ", Quote(port.name), " (first at ",
                             Position(it->second), ")"),
                "give every port a unique name");
  }
  std::string device = has_vdev ? std::string(VdevDevice(port.vdev)) : port.pci;
  auto [dev, fresh] = devices_.emplace(device, std::make_pair(port.name, has_vdev ? vdev_mark : pci_mark));
  if (!fresh) {
    return Fail(has_vdev ? vdev_mark : pci_mark, path + (has_vdev ? ".vdev" : ".pci"),
                absl::StrCat("device ", Quote(device), " is already used by port ",
                             Quote(dev->second.first), " (at ", Position(dev->second.second), ")"),
                "each port must name a different device (vdev names carry a number, e.g. net_tap1)");
  }
  config_.ports.push_back(std::move(port));
  return true;
}

bool Loader::ReadImpairment(const YAML::Node& key, const YAML::Node& value,
                            const std::string& path, ImpairmentConfig* out) {
  auto rules = [this](std::vector<ImpairRule>* list) {
    return [this, list](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
      return ReadList(k, v, p, 0, kMaxImpairRules, "impairment rules",
                      [this, list](const YAML::Node& item, const std::string& ip) {
                        return ReadImpairRule(item, ip, list);
                      });
    };
  };
  return ReadSection(key, value, path,
                     {
                         {"seed", Uint(&out->seed, {0, UINT64_MAX / 2})},
                         {"rx", rules(&out->rx)},
                         {"tx", rules(&out->tx)},
                     });
}

bool Loader::ReadImpairRule(const YAML::Node& item, const std::string& path,
                            std::vector<ImpairRule>* out) {
  const YAML::Mark mark = item.Mark();
  if (!item.IsMap()) {
    return Fail(mark, path, "expected a mapping",
                "write each rule as '- action: drop|duplicate|reorder|delay|corrupt' followed by "
                "its filter and selection keys");
  }
  ImpairRule r;
  YAML::Mark first_mark, last_mark;
  bool has_first = false, has_last = false;
  std::vector<absl::string_view> given;
  auto note = [&given](absl::string_view key, Reader read) {
    return [&given, key, read](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
      given.push_back(key);
      return read(k, v, p);
    };
  };
  if (!WalkMap(
          item, mark, path,
          {
              {"action", Enum(&r.action, kImpairActionNames),
               "add 'action: drop|duplicate|reorder|delay|corrupt'"},
              {"protocol", Enum(&r.protocol, kImpairProtocolNames)},
              {"port", Uint(&r.l4_port, {0, 65535})},
              {"min_payload", Uint(&r.min_payload, {0, kMaxImpairMinPayload})},
              {"every", Uint(&r.every, {1, kMaxImpairEvery})},
              {"first",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 has_first = true;
                 first_mark = v.Mark();
                 return Uint(&r.first, {1, UINT64_MAX / 2})(k, v, p);
               }},
              {"last",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 has_last = true;
                 last_mark = v.Mark();
                 return Uint(&r.last, {1, UINT64_MAX / 2})(k, v, p);
               }},
              {"probability_ppm", Uint(&r.probability_ppm, {0, kMaxImpairPpm})},
              {"delay_ms", note("delay_ms", Uint(&r.delay_ms, {1, kMaxImpairDelayMs}))},
              {"reorder_gap", note("reorder_gap", Uint(&r.reorder_gap, {1, kMaxImpairReorderGap}))},
              {"checksum", note("checksum", Enum(&r.corrupt_checksum, kCorruptChecksumNames))},
          })) {
    return false;
  }
  if (has_first && has_last && r.last < r.first) {
    return Fail(last_mark, path + ".last",
                absl::StrCat("last ", r.last, " is before first ", r.first),
                "allowed: last >= first (both count matching packets from 1)");
  }
  if (r.protocol == ImpairProtocol::kIcmp && r.l4_port != 0) {
    return Fail(mark, path + ".port", "ICMP has no ports",
                "allowed: port with protocol tcp, udp or any (remove port or change protocol)");
  }
  // An action parameter on a rule of another action is a mistake, not a no-op.
  struct Param {
    absl::string_view key;
    ImpairAction action;
  };
  constexpr Param kParams[] = {{"delay_ms", ImpairAction::kDelay},
                               {"reorder_gap", ImpairAction::kReorder},
                               {"checksum", ImpairAction::kCorrupt}};
  for (absl::string_view key : given) {
    for (const Param& prm : kParams) {
      if (prm.key == key && prm.action != r.action) {
        return Fail(mark, Join(path, key),
                    absl::StrCat(key, " does not apply to action ", NameOf(r.action)),
                    absl::StrCat("allowed: ", key, " only with action ", NameOf(prm.action)));
      }
    }
  }
  out->push_back(r);
  return true;
}

bool Loader::ReadInterface(const YAML::Node& item, const std::string& path) {
  const YAML::Mark mark = item.Mark();
  if (!item.IsMap()) {
    return Fail(mark, path, "expected a mapping",
                "write each interface as '- port: NAME' followed by 'ipv4: A.B.C.D/LEN'");
  }
  InterfaceConfig itf;
  InterfaceMarks marks;
  if (!WalkMap(
          item, mark, path,
          {
              {"port",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 marks.port = v.Mark();
                 return ReadScalar(k, v, p, "allowed: the name of a port in 'ports'", &itf.port);
               },
               "add 'port: NAME' naming one of the ports"},
              {"ipv4",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 constexpr absl::string_view kAllowed =
                     "allowed: A.B.C.D/LEN with LEN 1 to 32, a unicast host address that is "
                     "neither the network nor the broadcast address, e.g. 198.18.0.1/24";
                 std::string s;
                 if (!ReadScalar(k, v, p, kAllowed, &s)) return false;
                 marks.ipv4 = v.Mark();
                 size_t slash = s.find('/');
                 std::optional<uint32_t> addr;
                 std::optional<uint64_t> len;
                 if (slash != std::string::npos) {
                   addr = ParseIpv4Address(absl::string_view(s).substr(0, slash));
                   len = ParseDecimal(absl::string_view(s).substr(slash + 1));
                 }
                 if (!addr || !len) {
                   return Fail(v.Mark(), p, absl::StrCat(Quote(s), " is not an IPv4 prefix"), kAllowed);
                 }
                 if (*len < 1 || *len > 32) {
                   return Fail(v.Mark(), p, absl::StrCat("prefix length ", *len, " is out of range"), kAllowed);
                 }
                 uint8_t l = static_cast<uint8_t>(*len);
                 uint32_t host = *addr & ~PrefixMask(l);
                 if (!IsUsableUnicast(*addr)) {
                   return Fail(v.Mark(), p, absl::StrCat(FormatIpv4(*addr), " is not a unicast host address"),
                               kAllowed);
                 }
                 if (l <= 30 && (host == 0 || host == ~PrefixMask(l))) {
                   return Fail(v.Mark(), p,
                               absl::StrCat(FormatIpv4(*addr), " is the ",
                                            host == 0 ? "network" : "broadcast", " address of ",
                                            FormatPrefix(*addr & PrefixMask(l), l)),
                               kAllowed);
                 }
                 itf.ipv4 = {*addr, l};
                 return true;
               },
               "add 'ipv4: A.B.C.D/LEN', e.g. ipv4: 198.18.0.1/24"},
              {"gateway",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 constexpr absl::string_view kAllowed =
                     "allowed: an IPv4 address A.B.C.D inside the interface's ipv4 prefix";
                 std::string s;
                 if (!ReadScalar(k, v, p, kAllowed, &s)) return false;
                 std::optional<uint32_t> gw = ParseIpv4Address(s);
                 if (!gw) return Fail(v.Mark(), p, absl::StrCat(Quote(s), " is not an IPv4 address"), kAllowed);
                 itf.gateway = *gw;
                 marks.gateway = v.Mark();
                 return true;
               }},
          })) {
    return false;
  }
  // RFC 1122 3.3.1: the gateway must be on a directly connected network.
  if (itf.gateway) {
    const Ipv4Prefix& pfx = itf.ipv4;
    uint32_t mask = PrefixMask(pfx.prefix_len);
    uint32_t net = pfx.address & mask;
    std::string gw_path = path + ".gateway";
    std::string where = FormatPrefix(net, pfx.prefix_len);
    if ((*itf.gateway & mask) != net) {
      return Fail(marks.gateway, gw_path,
                  absl::StrCat(FormatIpv4(*itf.gateway), " is outside ", where),
                  absl::StrCat("allowed: an address inside ", where, " other than the interface's own"));
    }
    uint32_t host = *itf.gateway & ~mask;
    if (*itf.gateway == pfx.address ||
        (pfx.prefix_len <= 30 && (host == 0 || host == ~mask))) {
      return Fail(marks.gateway, gw_path,
                  absl::StrCat(FormatIpv4(*itf.gateway),
                               *itf.gateway == pfx.address ? " is the interface's own address"
                                                           : " is not a host address in " + where),
                  absl::StrCat("allowed: a host address inside ", where,
                               " other than the interface's own"));
    }
  }
  config_.interfaces.push_back(std::move(itf));
  interface_marks_.push_back(marks);
  return true;
}

Loader::Reader Loader::TunableLcores(std::vector<uint32_t>* out, UintRange range,
                                     const std::vector<uint32_t>&) {
  return [this, out, range](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
    return ReadList(k, v, p, 1, range.hi,
                    absl::StrCat("distinct lcores from ", range.lo, " to ", range.hi),
                    [this, out, range](const YAML::Node& item, const std::string& ip) {
                      uint64_t lcore = 0;
                      if (!ReadUint(item, item, ip, range, &lcore)) return false;
                      for (size_t i = 0; i < out->size(); ++i) {
                        if ((*out)[i] == lcore) {
                          return Fail(item.Mark(), ip,
                                      absl::StrCat("lcore ", lcore, " is listed twice (first at ",
                                                   Position(lcore_marks_[i]), ")"),
                                      "list every worker lcore once");
                        }
                      }
                      out->push_back(static_cast<uint32_t>(lcore));
                      lcore_marks_.push_back(item.Mark());
                      return true;
                    });
  };
}

Loader::Reader Loader::TunableIdleSleepUs(uint32_t* out, UintRange range, uint32_t) {
  return [this, out, range](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
    idle_sleep_mark_ = v.Mark();
    return Uint(out, range)(k, v, p);
  };
}

// 0 (never block) or lo..hi: a shorter wait than lo costs more in wake-ups
// than it saves.
Loader::Reader Loader::TunableIdleBlockAfterUs(uint32_t* out, UintRange range, uint32_t) {
  return [this, out, range](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
    if (!Uint(out, {0, range.hi})(k, v, p)) return false;
    if (*out != 0 && *out < range.lo) {
      return Fail(v.Mark(), p, absl::StrCat(*out, " us is shorter than a wake-up costs"),
                  absl::StrCat("allowed: 0 (never block) or ", range.lo, "..", range.hi));
    }
    idle_block_mark_ = v.Mark();
    config_.workers.idle_block_origin.text = absl::StrCat(source_, ":", Position(v.Mark()));
    return true;
  };
}

bool Loader::ReadWorkers(const YAML::Node& key, const YAML::Node& value, const std::string& path) {
  WorkerConfig& w = config_.workers;
  std::vector<Field> fields;
#define IWARPD_WORKERS_KEY(kind, type, name, def, lo, hi) \
  fields.push_back({#name, Tunable##kind(&w.name, UintRange{lo, hi}, type(def))});
  IWARPD_WORKERS_KEYS(IWARPD_WORKERS_KEY)
#undef IWARPD_WORKERS_KEY
  // lcores has no default: a config says which lcores run workers.
  for (Field& f : fields) {
    if (f.key == "lcores") {
      f.required_hint = "add 'lcores: [1]' (the lcores that run workers, not eal.main_lcore)";
    }
  }
  return ReadSection(key, value, path, fields);
}

bool Loader::ReadTcp(const YAML::Node& key, const YAML::Node& value, const std::string& path) {
  TcpConfig& t = config_.tcp;
  std::vector<Field> fields = {{"enabled", Bool(&t.enabled)}};
#define IWARPD_TCP_KEY(kind, type, name, def, lo, hi)                                   \
  fields.push_back({#name, Marked(&tcp_marks_, #name,                                   \
                                  Tunable##kind(&t.name, UintRange{lo, hi}, type(def)))});
  IWARPD_TCP_TUNABLES(IWARPD_TCP_KEY)
#undef IWARPD_TCP_KEY
  return ReadSection(key, value, path, fields);
}

bool Loader::ReadService(const YAML::Node& item, const std::string& path) {
  const YAML::Mark mark = item.Mark();
  if (!item.IsMap()) {
    return Fail(mark, path, "expected a mapping",
                "write each service as '- name: NAME' followed by 'type: echo|sink|source'");
  }
  ServiceConfig svc;
  ServiceMarks marks;
  marks.item = mark;
  std::vector<absl::string_view> given;
  auto note = [&given](absl::string_view k, Reader read) {
    return [&given, k, read](const YAML::Node& kn, const YAML::Node& v, const std::string& p) {
      given.push_back(k);
      return read(kn, v, p);
    };
  };
  if (!WalkMap(
          item, mark, path,
          {
              {"name",
               [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                 std::string allowed = absl::StrCat(
                     "allowed: 1 to ", kMaxServiceName,
                     " characters from A-Z a-z 0-9 '_' '-', starting with a letter");
                 if (!ReadScalar(k, v, p, allowed, &svc.name)) return false;
                 const std::string& n = svc.name;
                 bool ok = !n.empty() && n.size() <= kMaxServiceName && IsAlpha(n[0]);
                 for (char c : n) ok = ok && (IsAlpha(c) || IsDigit(c) || c == '_' || c == '-');
                 if (!ok) {
                   return Fail(v.Mark(), p, absl::StrCat(Quote(n), " is not a valid service name"),
                               allowed);
                 }
                 marks.name = v.Mark();
                 return true;
               },
               "add 'name: NAME' (unique; telemetry and iwarpctl show it)"},
              {"type", Enum(&svc.type, kServiceTypeNames), "add 'type: echo|sink|source'"},
              {"port",
               note("port",
                    [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                      marks.port = v.Mark();
                      return Uint(&svc.port, {1, 65535})(k, v, p);
                    })},
              {"sha256", note("sha256", Bool(&svc.sha256))},
              {"remote",
               note("remote",
                    [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
                      constexpr absl::string_view kAllowed =
                          "allowed: a unicast IPv4 address A.B.C.D";
                      std::string s;
                      if (!ReadScalar(k, v, p, kAllowed, &s)) return false;
                      std::optional<uint32_t> a = ParseIpv4Address(s);
                      if (!a || !IsUsableUnicast(*a)) {
                        return Fail(v.Mark(), p,
                                    absl::StrCat(Quote(s), " is not a unicast IPv4 address"),
                                    kAllowed);
                      }
                      svc.remote = *a;
                      marks.remote = v.Mark();
                      return true;
                    })},
              {"remote_port", note("remote_port", Uint(&svc.remote_port, {1, 65535}))},
              {"bytes", note("bytes", Uint(&svc.bytes, {0, uint64_t{1} << 50}))},
              {"connections",
               note("connections", Uint(&svc.connections, {1, kMaxSourceConnections}))},
              {"start_delay_ms", note("start_delay_ms", Uint(&svc.start_delay_ms, {0, 3600000}))},
              {"crc", note("crc", Bool(&svc.crc))},
              {"markers", note("markers", Bool(&svc.markers))},
              {"op", note("op", Enum(&svc.op, kIwarpOpNames))},
              {"message_bytes", note("message_bytes", Uint(&svc.message_bytes, {0, kMaxIwarpMessage}))},
              {"count", note("count", Uint(&svc.count, {1, uint64_t{1} << 40}))},
              {"queue_depth", note("queue_depth", Uint(&svc.queue_depth, {1, 1024}))},
              {"verify", note("verify", Bool(&svc.verify))},
              {"transport", note("transport", Enum(&svc.transport, kIwarpTransportNames))},
              {"stream", note("stream", Uint(&svc.stream, {0, 65534}))},
              {"local_isn", note("local_isn", Uint(&svc.local_isn, {0, UINT32_MAX}))},
              {"remote_isn", note("remote_isn", Uint(&svc.remote_isn, {0, UINT32_MAX}))},
              {"loop_bytes", note("loop_bytes", Uint(&svc.loop_bytes, {1, uint64_t{1} << 30}))},
              {"region_bytes", note("region_bytes", Uint(&svc.region_bytes, {1, uint64_t{1} << 30}))},
          })) {
    return false;
  }
  // Keys that belong to other service types are mistakes, not no-ops.
  struct KeyUse {
    absl::string_view key;
    bool echo, sink, source, responder, client, fpdu_test;
  };
  constexpr KeyUse kUses[] = {
      {"port", true, true, false, true, false, true},
      {"sha256", false, true, true, false, true, false},
      {"remote", false, false, true, false, true, true},
      {"remote_port", false, false, true, false, true, true},
      {"bytes", false, false, true, false, false, false},
      {"connections", false, false, true, false, false, false},
      {"start_delay_ms", false, false, true, false, true, false},
      {"crc", false, false, false, true, true, true},
      {"markers", false, false, false, true, true, true},
      {"op", false, false, false, false, true, false},
      {"message_bytes", false, false, false, false, true, false},
      {"count", false, false, false, false, true, false},
      {"queue_depth", false, false, false, false, true, false},
      {"verify", false, false, false, false, true, false},
      {"transport", false, false, false, true, true, false},
      {"stream", false, false, false, false, true, false},
      {"local_isn", false, false, false, false, false, true},
      {"remote_isn", false, false, false, false, false, true},
      {"loop_bytes", false, false, false, false, false, true},
      {"region_bytes", false, false, false, false, false, true},
  };
  const absl::string_view type = NameOf(svc.type);
  for (absl::string_view k : given) {
    for (const KeyUse& u : kUses) {
      if (u.key != k) continue;
      bool ok = false;
      switch (svc.type) {
        case ServiceType::kEcho: ok = u.echo; break;
        case ServiceType::kSink: ok = u.sink; break;
        case ServiceType::kSource: ok = u.source; break;
        case ServiceType::kIwarpResponder: ok = u.responder; break;
        case ServiceType::kIwarpClient: ok = u.client; break;
        case ServiceType::kIwarpFpduTest: ok = u.fpdu_test; break;
      }
      if (!ok) {
        std::vector<absl::string_view> types;
        if (u.echo) types.push_back("echo");
        if (u.sink) types.push_back("sink");
        if (u.source) types.push_back("source");
        if (u.responder) types.push_back("iwarp_responder");
        if (u.client) types.push_back("iwarp_client");
        if (u.fpdu_test) types.push_back("iwarp_fpdu_test");
        return Fail(mark, Join(path, k), absl::StrCat(k, " does not apply to type ", type),
                    absl::StrCat("allowed: ", k, " only with type ", absl::StrJoin(types, " or ")));
      }
    }
  }
  auto has = [&given](absl::string_view k) {
    return std::find(given.begin(), given.end(), k) != given.end();
  };
  // The key sha256 of an iwarp_client (default true) is its own field, so a
  // ServiceConfig made in code hashes a client's run like a config file does.
  if (svc.type == ServiceType::kIwarpClient) {
    svc.client_sha256 = has("sha256") ? svc.sha256 : true;
    svc.sha256 = false;
  }
  const bool active = svc.type == ServiceType::kSource || svc.type == ServiceType::kIwarpClient;
  if (!active && !has("port")) {
    return Fail(mark, path + ".port", "missing required key",
                absl::StrCat("add 'port: N' (the TCP port the ", type, " service listens on)"));
  }
  if (svc.type == ServiceType::kSource) {
    for (absl::string_view k : {"remote", "remote_port", "bytes"}) {
      if (!has(k)) {
        return Fail(mark, Join(path, k), "missing required key",
                    "a source needs remote: A.B.C.D, remote_port: N and bytes: N");
      }
    }
  }
  if (has("stream") && svc.transport != IwarpTransport::kSctp) {
    return Fail(mark, Join(path, "stream"), "stream applies to transport: sctp only",
                "add 'transport: sctp' or remove stream (TCP connections have no DDP streams)");
  }
  if (has("markers") && svc.markers && svc.transport == IwarpTransport::kSctp) {
    return Fail(mark, Join(path, "markers"), "markers: true with transport: sctp",
                "allowed: markers only over TCP (RFC 5043 has no MPA framing)");
  }
  if (svc.type == ServiceType::kIwarpClient) {
    for (absl::string_view k : {"remote", "remote_port"}) {
      if (!has(k)) {
        return Fail(mark, Join(path, k), "missing required key",
                    "an iwarp_client needs remote: A.B.C.D and remote_port: N");
      }
    }
  }
  if (svc.type == ServiceType::kIwarpFpduTest) {
    for (absl::string_view k : {"remote", "remote_port", "loop_bytes"}) {
      if (!has(k)) {
        return Fail(mark, Join(path, k), "missing required key",
                    "an iwarp_fpdu_test needs remote: A.B.C.D, remote_port: N and loop_bytes: N "
                    "(the TCP payload bytes of one pass of the generator's capture)");
      }
    }
    if (svc.markers && svc.loop_bytes % 512 != 0) {
      return Fail(mark, Join(path, "loop_bytes"),
                  absl::StrCat("loop_bytes ", svc.loop_bytes, " with markers: true"),
                  "allowed: a multiple of 512, so every pass puts its Markers at the same "
                  "places (RFC 5044 4.3)");
    }
  }
  config_.services.push_back(std::move(svc));
  service_marks_.push_back(marks);
  return true;
}

Loader::Reader Loader::TunableRtrTypes(uint8_t* out, UintRange, uint8_t) {
  return [this, out](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
    *out = 0;
    return ReadList(k, v, p, 1, 3, "RTR types (send, write, read)",
                    [this, out](const YAML::Node& item, const std::string& ip) {
                      uint8_t bit = 0;
                      if (!Enum(&bit, kRtrTypeNames)(item, item, ip)) return false;
                      if ((*out & bit) != 0) {
                        return Fail(item.Mark(), ip, "RTR type listed twice",
                                    "allowed: each of send, write, read at most once");
                      }
                      *out |= bit;
                      return true;
                    });
  };
}

bool Loader::ReadIwarp(const YAML::Node& key, const YAML::Node& value, const std::string& path) {
  IwarpConfig& w = config_.iwarp;
  std::vector<Field> fields;
#define IWARPD_IWARP_KEY(kind, type, name, def, lo, hi)                                 \
  fields.push_back({#name, Marked(&iwarp_marks_, #name,                                 \
                                  Tunable##kind(&w.name, UintRange{lo, hi}, type(def)))});
  IWARPD_IWARP_KEYS(IWARPD_IWARP_KEY)
#undef IWARPD_IWARP_KEY
  return ReadSection(key, value, path, fields);
}

bool Loader::ReadSctp(const YAML::Node& key, const YAML::Node& value, const std::string& path) {
  SctpConfig& c = config_.sctp;
  std::vector<Field> fields = {{"enabled", Marked(&sctp_marks_, "enabled", Bool(&c.enabled))}};
#define IWARPD_SCTP_KEY(kind, type, name, def, lo, hi, member)                          \
  fields.push_back({#name, Marked(&sctp_marks_, #name,                                  \
                                  Tunable##kind(&c.name, UintRange{lo, hi}, type(def)))});
  IWARPD_SCTP_TUNABLES(IWARPD_SCTP_KEY)
#undef IWARPD_SCTP_KEY
  return ReadSection(key, value, path, fields);
}

bool Loader::CheckTcpAndServices() {
  const TcpConfig& t = config_.tcp;
  auto mark_of = [this](absl::string_view k) {
    auto it = tcp_marks_.find(k);
    return it != tcp_marks_.end() ? it->second : top_mark_;
  };
  // RFC 6298 2.4 / 2.5: min <= initial <= max.
  if (t.rto_min_us > t.rto_max_us) {
    return Fail(mark_of("rto_max_us"), "tcp.rto_max_us",
                absl::StrCat(t.rto_max_us, " is below tcp.rto_min_us ", t.rto_min_us),
                "allowed: rto_min_us <= rto_initial_us <= rto_max_us");
  }
  if (t.rto_initial_us < t.rto_min_us || t.rto_initial_us > t.rto_max_us) {
    return Fail(mark_of("rto_initial_us"), "tcp.rto_initial_us",
                absl::StrCat(t.rto_initial_us, " is outside [", t.rto_min_us, ", ", t.rto_max_us,
                             "]"),
                "allowed: rto_min_us <= rto_initial_us <= rto_max_us");
  }
  if (t.ephemeral_port_min > t.ephemeral_port_max) {
    return Fail(mark_of("ephemeral_port_max"), "tcp.ephemeral_port_max",
                absl::StrCat(t.ephemeral_port_max, " is below tcp.ephemeral_port_min ",
                             t.ephemeral_port_min),
                "allowed: ephemeral_port_min <= ephemeral_port_max");
  }
  if (t.syn_backlog > t.max_connections) {
    return Fail(mark_of("syn_backlog"), "tcp.syn_backlog",
                absl::StrCat(t.syn_backlog, " is above tcp.max_connections ", t.max_connections),
                "allowed: at most max_connections (half-open connections take a slot)");
  }
  std::map<std::string, size_t, std::less<>> names;
  std::map<std::pair<IwarpTransport, uint16_t>, size_t> ports;
  size_t listeners = 0;
  for (size_t i = 0; i < config_.services.size(); ++i) {
    const ServiceConfig& svc = config_.services[i];
    const std::string p = absl::StrCat("services[", i, "]");
    auto [it, fresh] = names.emplace(svc.name, i);
    if (!fresh) {
      return Fail(service_marks_[i].name, p + ".name",
                  absl::StrCat("duplicate service name ", Quote(svc.name), " (first at ",
                               Position(service_marks_[it->second].name), ")"),
                  "give every service a unique name");
    }
    if (svc.type == ServiceType::kIwarpFpduTest) {
      if (!config_.test_mode) {
        return Fail(service_marks_[i].item, p + ".type",
                    "iwarp_fpdu_test is a test mode (a QP established from configuration, "
                    "no TCP or MPA handshake)",
                    "use it only in a test configuration, which says 'test_mode: true' at the "
                    "top level");
      }
      if (config_.workers.lcores.size() != 1) {
        return Fail(service_marks_[i].item, p + ".type",
                    absl::StrCat("iwarp_fpdu_test with ", config_.workers.lcores.size(),
                                 " workers"),
                    "allowed: exactly one worker lcore (its fixed 4-tuple must reach the "
                    "worker that holds the connection)");
      }
    }
    if (svc.type == ServiceType::kSource || svc.type == ServiceType::kIwarpClient ||
        svc.type == ServiceType::kIwarpFpduTest) {
      continue;
    }
    ++listeners;
    auto [pit, pfresh] = ports.emplace(std::make_pair(svc.transport, svc.port), i);
    if (!pfresh) {
      return Fail(service_marks_[i].port, p + ".port",
                  absl::StrCat("port ", svc.port, " is already used by service ",
                               Quote(config_.services[pit->second].name)),
                  "give every listening service its own port");
    }
  }
  // sctp: RFC 9260 15 / RFC 6298: min <= initial <= max.
  const SctpConfig& sc = config_.sctp;
  auto sctp_mark = [this](absl::string_view k) {
    auto it = sctp_marks_.find(k);
    return it != sctp_marks_.end() ? it->second : top_mark_;
  };
  if (sc.rto_min_ms > sc.rto_initial_ms || sc.rto_initial_ms > sc.rto_max_ms) {
    return Fail(sctp_mark("rto_initial_ms"), "sctp.rto_initial_ms",
                absl::StrCat(sc.rto_initial_ms, " is outside [", sc.rto_min_ms, ", ",
                             sc.rto_max_ms, "]"),
                "allowed: rto_min_ms <= rto_initial_ms <= rto_max_ms");
  }
  if (sc.enabled && !config_.ports.empty()) {
    // Buffers against the path MTU (the smallest port MTU): a full-size DATA
    // chunk carries (MTU - IPv4 20 - SCTP common header 12 - DATA header 16)
    // rounded down to 4 bytes (RFC 5043 9: DDP segments are never
    // fragmented). The data plane sizes its DDP reorder store and window
    // from the larger buffer in these chunks (sctp/ddp_session.h
    // SizeReorderStore).
    uint32_t mtu = UINT32_MAX;
    for (const PortConfig& p : config_.ports) mtu = std::min(mtu, p.mtu);
    const uint64_t chunk = mtu > 48 ? ((mtu - 48) & ~uint64_t{3}) : 4;
    const bool send_larger = sc.send_buffer_bytes >= sc.receive_buffer_bytes;
    const uint64_t window = std::max(sc.send_buffer_bytes, sc.receive_buffer_bytes);
    const uint64_t window_chunks = (window + chunk - 1) / chunk;
    if (window_chunks > kMaxSctpWindowChunks) {
      const char* key = send_larger ? "send_buffer_bytes" : "receive_buffer_bytes";
      return Fail(sctp_mark(key), absl::StrCat("sctp.", key),
                  absl::StrCat(window, " bytes are ", window_chunks,
                               " full-size DATA chunks at MTU ", mtu, "; more than ",
                               kMaxSctpWindowChunks,
                               " chunks in flight make DDP-SSNs ambiguous (RFC 5043 10)"),
                  absl::StrCat("allowed: at most ", kMaxSctpWindowChunks * chunk,
                               " bytes at this MTU (lower it or raise ports[].mtu)"));
    }
    // usrsctp may release a whole send buffer in one loop iteration; the
    // host queue must hold it and the SACKs and control chunks around it,
    // or the packets are lost before they reach the port (sctp_tx_queue_full).
    const uint64_t send_packets =
        (uint64_t{sc.send_buffer_bytes} + chunk - 1) / chunk + kSctpControlPackets;
    if (sc.tx_queue_packets < send_packets) {
      return Fail(sctp_mark("tx_queue_packets"), "sctp.tx_queue_packets",
                  absl::StrCat(sc.tx_queue_packets, " cannot hold one send buffer (",
                               sc.send_buffer_bytes, " bytes = ", send_packets - kSctpControlPackets,
                               " full-size packets at MTU ", mtu, ") plus ", kSctpControlPackets,
                               " control packets"),
                  absl::StrCat("allowed: at least ", send_packets,
                               ", or lower sctp.send_buffer_bytes"));
    }
  }
  for (size_t i = 0; i < config_.services.size(); ++i) {
    const ServiceConfig& svc = config_.services[i];
    if (svc.transport != IwarpTransport::kSctp || sc.enabled) continue;
    return Fail(service_marks_[i].item, absl::StrCat("services[", i, "].transport"),
                "transport: sctp needs sctp.enabled: true",
                "add 'sctp: {enabled: true}' or use transport: tcp");
  }
  if (!config_.services.empty() && !t.enabled) {
    return Fail(service_marks_[0].item, "services",
                "services need TCP, but tcp.enabled is false",
                "set tcp.enabled: true or remove the services");
  }
  // iwarp: queue sizes against each other (every responder receive buffer
  // may have its echo Send outstanding at once, each of them completing).
  const IwarpConfig& w = config_.iwarp;
  auto iwarp_mark = [this](absl::string_view k) {
    auto it = iwarp_marks_.find(k);
    return it != iwarp_marks_.end() ? it->second : top_mark_;
  };
  if (w.recv_buffers > w.rq_depth || 2 * uint64_t{w.recv_buffers} > w.sq_depth) {
    return Fail(iwarp_mark("recv_buffers"), "iwarp.recv_buffers",
                absl::StrCat(w.recv_buffers, " is above iwarp.rq_depth ", w.rq_depth,
                             " or half of iwarp.sq_depth ", w.sq_depth),
                "allowed: at most rq_depth and sq_depth / 2 (the echo Sends of posted and "
                "spare buffers)");
  }
  if (w.cq_depth < w.sq_depth + w.rq_depth) {
    return Fail(iwarp_mark("cq_depth"), "iwarp.cq_depth",
                absl::StrCat(w.cq_depth, " is below sq_depth + rq_depth ", w.sq_depth + w.rq_depth),
                "allowed: at least sq_depth + rq_depth (every work request completes)");
  }
  for (size_t i = 0; i < config_.services.size(); ++i) {
    const ServiceConfig& svc = config_.services[i];
    if (svc.type != ServiceType::kIwarpClient) continue;
    if (2 * uint64_t{svc.queue_depth} + 1 > w.sq_depth || svc.queue_depth > w.rq_depth ||
        svc.queue_depth > w.ord) {
      return Fail(service_marks_[i].item, absl::StrCat("services[", i, "].queue_depth"),
                  absl::StrCat(svc.queue_depth, " needs iwarp.sq_depth >= ",
                               2 * uint64_t{svc.queue_depth} + 1, ", iwarp.rq_depth and iwarp.ord >= ",
                               svc.queue_depth),
                  "lower queue_depth or raise the iwarp: queue sizes");
    }
    if (uint64_t{svc.queue_depth} * svc.message_bytes > kMaxIwarpRegion) {
      return Fail(service_marks_[i].item, absl::StrCat("services[", i, "].queue_depth"),
                  "queue_depth x message_bytes exceeds 1 GiB", "lower either");
    }
  }
  if (listeners > t.max_listeners) {
    return Fail(service_marks_.back().item, "services",
                absl::StrCat(listeners, " listening services exceed tcp.max_listeners ",
                             t.max_listeners),
                "raise tcp.max_listeners or remove services");
  }
  return true;
}

// Checks that need the whole document (keys may come in any order).
Loader::Reader Loader::PowerOfTwo(uint32_t* out, UintRange range) {
  return [this, out, range](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
    uint64_t x = 0;
    if (!ReadUint(k, v, p, range, &x)) return false;
    if ((x & (x - 1)) != 0) {
      return Fail(v.Mark(), p, absl::StrCat(x, " is not a power of two"),
                  absl::StrCat("allowed: a power of two from ", range.lo, " to ", range.hi));
    }
    *out = static_cast<uint32_t>(x);
    return true;
  };
}

bool Loader::ReadAppInterface(const YAML::Node& key, const YAML::Node& value,
                              const std::string& path) {
  AppInterfaceConfig& a = config_.app_interface;
  return ReadSection(
      key, value, path,
      {
          {"enabled", Bool(&a.enabled)},
          {"socket_dir",
           [this, &a](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             const std::string allowed = absl::StrCat(
                 "allowed: an absolute directory path of at most ", kMaxSocketDir,
                 " printable characters without spaces, e.g. /run/iwarpd");
             if (!ReadScalar(k, v, p, allowed, &a.socket_dir)) return false;
             bool ok = !a.socket_dir.empty() && a.socket_dir[0] == '/' &&
                       a.socket_dir.size() <= kMaxSocketDir;
             for (char c : a.socket_dir) ok = ok && c > 0x20 && c <= 0x7e;
             if (!ok) return Fail(v.Mark(), p, absl::StrCat(Quote(a.socket_dir), " is not usable"), allowed);
             return true;
           }},
          {"socket_mode",
           [this, &a](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             constexpr absl::string_view kAllowed =
                 "allowed: a quoted octal mode from \"0600\" to \"0777\", e.g. \"0660\"";
             std::string s;
             if (!ReadScalar(k, v, p, kAllowed, &s)) return false;
             bool ok = s.size() == 4 && s[0] == '0';
             uint32_t mode = 0;
             for (size_t i = 1; ok && i < s.size(); ++i) {
               ok = s[i] >= '0' && s[i] <= '7';
               mode = mode * 8 + static_cast<uint32_t>(s[i] - '0');
             }
             // The owner must keep read and write, or the daemon locks itself out.
             if (!ok || (mode & 0600) != 0600) {
               return Fail(v.Mark(), p, absl::StrCat(Quote(s), " is not a socket mode"), kAllowed);
             }
             a.socket_mode = mode;
             return true;
           }},
          {"allowed_uids",
           [this, &a](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadList(k, v, p, 0, kMaxAllowedUids, "user ids (numbers)",
                             [this, &a](const YAML::Node& item, const std::string& ip) {
                               uint64_t uid = 0;
                               if (!ReadUint(item, item, ip, {0, kMaxUid}, &uid)) return false;
                               a.allowed_uids.push_back(static_cast<uint32_t>(uid));
                               return true;
                             });
           }},
          {"max_sessions", Uint(&a.max_sessions, {1, kMaxSessions})},
          {"max_qps_per_session", Uint(&a.max_qps_per_session, {1, kMaxQpsPerSession})},
          {"max_cqs_per_session", Uint(&a.max_cqs_per_session, {1, kMaxQpsPerSession})},
          {"max_mrs_per_session", Uint(&a.max_mrs_per_session, {1, kMaxMrsPerSession})},
          {"max_pds_per_session", Uint(&a.max_pds_per_session, {1, kMaxQpsPerSession})},
          {"max_listeners_per_session", Uint(&a.max_listeners_per_session, {1, kMaxQpsPerSession})},
          {"max_registered_mb_per_session",
           Uint(&a.max_registered_mb_per_session, {1, kMaxRegisteredMb})},
          {"max_queue_depth", PowerOfTwo(&a.max_queue_depth, {kMinQueueDepth, kMaxQueueDepth})},
          {"event_queue_depth",
           PowerOfTwo(&a.event_queue_depth, {kMinEventQueueDepth, kMaxEventQueueDepth})},
          {"stag_table_size", Uint(&a.stag_table_size, {kMinStagTable, kMaxStagTable})},
          {"mpa_crc", Bool(&a.mpa_crc)},
          {"mpa_markers", Bool(&a.mpa_markers)},
          {"zero_copy_tx", Bool(&a.zero_copy_tx)},
          {"wire_ack_timeout_ms",
           Uint(&a.wire_ack_timeout_ms, {kMinWireAckTimeoutMs, kMaxWireAckTimeoutMs})},
      });
}

bool Loader::CheckWhole() {
  if (!CheckTcpAndServices()) return false;
  const Config& c = config_;
  for (size_t i = 0; i < c.workers.lcores.size(); ++i) {
    if (c.workers.lcores[i] == c.eal.main_lcore) {
      return Fail(lcore_marks_[i], absl::StrCat("workers.lcores[", i, "]"),
                  absl::StrCat("lcore ", c.eal.main_lcore, " is eal.main_lcore"),
                  "allowed: any lcore other than eal.main_lcore (pick another one)");
    }
  }
  std::vector<absl::string_view> names;
  for (const PortConfig& p : c.ports) names.push_back(p.name);
  for (size_t i = 0; i < c.interfaces.size(); ++i) {
    const InterfaceConfig& itf = c.interfaces[i];
    if (!port_names_.contains(itf.port)) {
      return Fail(interface_marks_[i].port, absl::StrCat("interfaces[", i, "].port"),
                  absl::StrCat("unknown port ", Quote(itf.port)),
                  absl::StrCat("allowed: a name from ports: ", absl::StrJoin(names, ", ")));
    }
    for (size_t j = 0; j < i; ++j) {
      const Ipv4Prefix& a = c.interfaces[j].ipv4;
      const Ipv4Prefix& b = itf.ipv4;
      uint32_t mask = PrefixMask(std::min(a.prefix_len, b.prefix_len));
      if ((a.address & mask) == (b.address & mask)) {
        return Fail(interface_marks_[i].ipv4, absl::StrCat("interfaces[", i, "].ipv4"),
                    absl::StrCat(FormatPrefix(b.address, b.prefix_len), " overlaps interfaces[", j,
                                 "].ipv4 ", FormatPrefix(a.address, a.prefix_len)),
                    "interface prefixes must not overlap");
      }
    }
  }
  // A blocked worker wakes on receive interrupts; a timed sleep is the
  // other way to idle, not both.
  if (c.workers.idle_block_after_us != 0) {
    if (c.workers.idle_sleep_us != 0) {
      return Fail(idle_sleep_mark_, "workers.idle_sleep_us",
                  "set together with workers.idle_block_after_us",
                  "choose one way to idle: remove idle_sleep_us (a timed sleep after a few empty "
                  "polls) or idle_block_after_us (block until woken after a quiet spell)");
    }
    for (size_t i = 0; i < c.ports.size(); ++i) {
      const std::optional<absl::string_view> d = VdevWithoutRxInterrupts(c.ports[i].vdev);
      if (!d.has_value()) continue;
      const auto dev = devices_.find(std::string(VdevDevice(c.ports[i].vdev)));
      return Fail(dev != devices_.end() ? dev->second.second : top_mark_,
                  absl::StrCat("ports[", i, "].vdev"),
                  absl::StrCat(*d, " raises no receive interrupts, and workers.idle_block_after_us ",
                               "(", Position(idle_block_mark_), ") blocks until one"),
                  "set workers.idle_block_after_us to 0, or use workers.idle_sleep_us (a timed "
                  "sleep) with this port");
    }
  }
  // Each port's pool must fill every RX ring and still have mbufs for the
  // lcore caches and one burst per lcore in flight.
  uint64_t lcores = c.workers.lcores.size() + 1;
  for (size_t i = 0; i < c.ports.size(); ++i) {
    const PortConfig& p = c.ports[i];
    uint64_t rxq = p.rx_queues != 0 ? p.rx_queues : c.workers.lcores.size();
    uint64_t txq = p.tx_queues != 0 ? p.tx_queues : c.workers.lcores.size();
    uint64_t need = rxq * p.rx_descriptors + txq * p.tx_descriptors +
                    lcores * (c.mempools.cache + c.workers.burst);
    if (c.mempools.mbufs < need) {
      return Fail(saw_mbufs_ ? mbufs_mark_ : top_mark_, "mempools.mbufs",
                  absl::StrCat(c.mempools.mbufs, " mbufs are too few for port ", Quote(p.name),
                               " (needs ", need, ")"),
                  "allowed: at least rx_queues*rx_descriptors + tx_queues*tx_descriptors + "
                  "(workers+1)*(cache+burst) (raise mempools.mbufs or lower the descriptors)");
    }
    // A net_memif zero-copy client whose pool cannot fill its receive rings
    // never receives a frame, with no error from DPDK (measured: rsize=14
    // with 16383 mbufs; 65535 mbufs or rsize=13 work).
    if (std::optional<uint32_t> rsize = MemifZeroCopyRsize(p.vdev); rsize.has_value()) {
      const uint64_t spare = lcores * (c.mempools.cache + c.workers.burst);
      const uint64_t zc_need = rxq * (uint64_t{1} << *rsize) + spare;
      if (c.mempools.mbufs < zc_need) {
        uint32_t fits = 0;  // the largest rsize this pool fills
        while (fits < 16 && rxq * (uint64_t{2} << fits) + spare <= c.mempools.mbufs) ++fits;
        const auto dev = devices_.find(std::string(VdevDevice(p.vdev)));
        return Fail(dev != devices_.end() ? dev->second.second : top_mark_,
                    absl::StrCat("ports[", i, "].vdev"),
                    absl::StrCat("net_memif zero-copy client with rsize=", *rsize, " receives into ",
                                 rxq, " ring(s) of ", uint64_t{1} << *rsize,
                                 " of this port's own mbufs, more than mempools.mbufs ",
                                 c.mempools.mbufs, " leaves after the lcore caches (needs ",
                                 zc_need, "); the link would stay silent"),
                    absl::StrCat("raise mempools.mbufs to at least ", zc_need,
                                 " or lower rsize to at most ", fits));
      }
    }
  }
  return true;
}

absl::StatusOr<Config> Loader::Run(absl::string_view yaml) {
  if (yaml.size() > kMaxConfigBytes) {
    Fail(YAML::Mark(), "(file)", absl::StrCat("the file is ", yaml.size(), " bytes"),
         absl::StrCat("allowed: at most ", kMaxConfigBytes, " bytes"));
    return absl::InvalidArgumentError(error_);
  }
  std::vector<YAML::Node> docs;
  try {
    std::string text(yaml);
    CheckParseTerminates(text);
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    Fail(e.mark, "(yaml)", e.msg.empty() ? "syntax error" : SafeKey(e.msg),
         "allowed: well-formed YAML (check indentation, ':' after keys, brackets and quotes)");
    return absl::InvalidArgumentError(error_);
  }
  if (docs.empty()) {
    Fail(YAML::Mark(), "(document)", "the file holds no YAML document",
         "a config needs at least version, ports and workers (see config/examples/default.yaml)");
    return absl::InvalidArgumentError(error_);
  }
  if (docs.size() > 1) {
    Fail(docs[1].Mark(), "(document)", "a second YAML document starts here",
         "allowed: one document per file (remove the '---' separator and what follows)");
    return absl::InvalidArgumentError(error_);
  }
  const YAML::Node& top = docs[0];
  top_mark_ = top.Mark();
  if (!top.IsMap()) {
    Fail(top.Mark(), "(document)", "the document is not a mapping",
         "write top-level 'key: value' sections starting with 'version: 1'");
    return absl::InvalidArgumentError(error_);
  }
  if (!ReadVersion(top)) return absl::InvalidArgumentError(error_);
  bool ok = WalkMap(
      top, top.Mark(), "",
      {
          {"version", [](const YAML::Node&, const YAML::Node&, const std::string&) { return true; },
           "add 'version: 1'"},
          {"eal", [this](const YAML::Node& k, const YAML::Node& v,
                         const std::string& p) { return ReadEal(k, v, p); }},
          {"ports",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadList(k, v, p, 1, kMaxPorts, "ports",
                             [this](const YAML::Node& item, const std::string& ip) {
                               return ReadPort(item, ip);
                             });
           },
           "add a 'ports' list, e.g. ports: [{name: p0, vdev: \"net_tap0,iface=iw0\"}]"},
          {"interfaces",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadList(k, v, p, 0, kMaxInterfaces, "interfaces",
                             [this](const YAML::Node& item, const std::string& ip) {
                               return ReadInterface(item, ip);
                             });
           }},
          {"workers", [this](const YAML::Node& k, const YAML::Node& v,
                             const std::string& p) { return ReadWorkers(k, v, p); },
           "add a 'workers' section, e.g. workers: {lcores: [1]}"},
          {"mempools",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             MempoolConfig& m = config_.mempools;
             return ReadSection(
                 k, v, p,
                 {
                     {"mbufs",
                      [this](const YAML::Node& mk, const YAML::Node& mv, const std::string& mp) {
                        saw_mbufs_ = true;
                        mbufs_mark_ = mv.Mark();
                        return Uint(&config_.mempools.mbufs, {kMinMbufs, kMaxMbufs})(mk, mv, mp);
                      }},
                     {"cache", Uint(&m.cache, {0, kMaxCache})},
                     {"data_room", Uint(&m.data_room, {kMinDataRoom, kMaxDataRoom})},
                 });
           }},
          {"arp",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             ArpConfig& a = config_.arp;
             return ReadSection(
                 k, v, p,
                 {
                     {"cache_entries", Uint(&a.cache_entries, {kMinArpEntries, kMaxArpEntries})},
                     {"timeout_s", Uint(&a.timeout_s, {1, kMaxArpTimeoutS})},
                     {"pending_packets", Uint(&a.pending_packets, {1, kMaxArpPending})},
                     {"retry_ms", Uint(&a.retry_ms, {kMinArpRetryMs, kMaxArpRetryMs})},
                 });
           }},
          {"logging",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadSection(k, v, p, {{"level", Enum(&config_.logging.level, kLogLevelNames)}});
           }},
          {"telemetry",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadSection(k, v, p, {{"enabled", Bool(&config_.telemetry.enabled)}});
           }},
          {"app_interface", [this](const YAML::Node& k, const YAML::Node& v,
                                   const std::string& p) { return ReadAppInterface(k, v, p); }},
          {"tcp", [this](const YAML::Node& k, const YAML::Node& v,
                         const std::string& p) { return ReadTcp(k, v, p); }},
          {"services",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadList(k, v, p, 0, kMaxServices, "services",
                             [this](const YAML::Node& item, const std::string& ip) {
                               return ReadService(item, ip);
                             });
           }},
          {"iwarp", [this](const YAML::Node& k, const YAML::Node& v,
                           const std::string& p) { return ReadIwarp(k, v, p); }},
          {"sctp", [this](const YAML::Node& k, const YAML::Node& v,
                          const std::string& p) { return ReadSctp(k, v, p); }},
          {"udp_echo",
           [this](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
             return ReadSection(k, v, p, {{"port", Uint(&config_.udp_echo.port, {0, 65535})}});
           }},
          {"test_mode", Bool(&config_.test_mode)},
      });
  if (!ok || !CheckWhole()) return absl::InvalidArgumentError(error_);
  return std::move(config_);
}

absl::StatusOr<Config> LoadGuarded(absl::string_view yaml, absl::string_view source) {
  // Loader converts yaml-cpp exceptions itself; this is the last line for
  // anything else (std::bad_alloc, a yaml-cpp exception from a node access).
  try {
    Loader loader(source);
    return loader.Run(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", Position(e.mark), ": (yaml): ", SafeKey(e.msg),
                     "; allowed: well-formed YAML within the schema"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":1:1: (file): cannot be loaded (",
                                                   absl::CHexEscape(e.what()),
                                                   "); allowed: a well-formed YAML config"));
  } catch (...) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":1:1: (file): cannot be loaded; allowed: a well-formed YAML config"));
  }
}

// NameOf for the public ToString overloads.
template <typename E>
std::string_view ToStdString(E e) {
  absl::string_view n = NameOf(e);
  return {n.data(), n.size()};
}

void AppendYamlString(std::string* out, absl::string_view s) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  out->push_back('"');
}

}  // namespace

absl::StatusOr<Config> LoadConfigFile(const std::string& path) {
  auto file_error = [&path](int err) {
    std::string msg = absl::StrCat(path, ":1:1: (file): cannot read (", std::strerror(err),
                                   "); allowed: the path of a readable YAML config file");
    return err == ENOENT ? absl::NotFoundError(msg) : absl::InvalidArgumentError(msg);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return file_error(errno);
  struct stat st = {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return file_error(err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) return file_error(EISDIR);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":1:1: (file): not a regular file; allowed: the path of a readable "
                           "YAML config file"));
  }
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return file_error(err);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) break;  // Run reports the size
  }
  ::close(fd);
  return LoadGuarded(text, path);
}

absl::StatusOr<Config> LoadConfigString(std::string_view yaml, std::string_view source_name) {
  return LoadGuarded(absl::string_view(yaml.data(), yaml.size()),
                     absl::string_view(source_name.data(), source_name.size()));
}

std::string_view ToString(HugepageMode m) { return ToStdString(m); }
std::string_view ToString(LogLevel l) { return ToStdString(l); }
std::string_view ToString(ImpairAction a) { return ToStdString(a); }
std::string_view ToString(ImpairProtocol p) { return ToStdString(p); }
std::string_view ToString(CorruptChecksum c) { return ToStdString(c); }
std::string_view ToString(SynCookies s) { return ToStdString(s); }
std::string_view ToString(CongestionControl c) { return ToStdString(c); }
std::string_view ToString(ServiceType t) { return ToStdString(t); }
std::string_view ToString(IwarpOp o) { return ToStdString(o); }
std::string_view ToString(IwarpTransport t) { return ToStdString(t); }

std::string FormatIpv4(uint32_t a) {
  return absl::StrFormat("%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

uint32_t EffectiveMaxSendRecords(const TcpConfig& t) {
  return tcp::EffectiveMaxSendRecords(t.max_send_records, t.send_buffer_bytes);
}

std::string DescribeConfig(const Config& c) {
  std::string out;
  absl::StrAppend(&out, "config ", absl::CHexEscape(c.source), " (schema version ", c.version, ")\n");
  std::vector<std::string> args;
  for (const std::string& a : c.eal.extra_args) args.push_back(absl::CHexEscape(a));
  absl::StrAppend(&out, "  eal: main lcore ", c.eal.main_lcore, ", memory ", c.eal.memory_mb,
                  " MiB, hugepages ", NameOf(c.eal.hugepages), ", file prefix ",
                  absl::CHexEscape(c.eal.file_prefix), ", extra args [",
                  absl::StrJoin(args, " "), "]",
                  c.eal.cpus.empty() ? ""
                                     : absl::StrCat(", lcores float over CPUs ",
                                                    absl::StrJoin(c.eal.cpus, ",")),
                  "\n");
  size_t workers = c.workers.lcores.size();
  auto queues = [workers](uint16_t q) {
    return q != 0 ? absl::StrCat(q) : absl::StrCat(workers, " (one per worker)");
  };
  for (const PortConfig& p : c.ports) {
    absl::StrAppend(&out, "  port ", absl::CHexEscape(p.name), ": ",
                    p.vdev.empty() ? absl::StrCat("pci ", absl::CHexEscape(p.pci))
                                   : absl::StrCat("vdev ", absl::CHexEscape(p.vdev)),
                    ", mtu ", p.mtu, ", rx queues ", queues(p.rx_queues), " x ",
                    p.rx_descriptors, " descriptors, tx queues ", queues(p.tx_queues), " x ",
                    p.tx_descriptors, " descriptors, promiscuous ",
                    p.promiscuous ? "on" : "off", ", tso ", NameOf(p.tso), "\n");
    if (!p.impairment.empty()) {
      absl::StrAppend(&out, "  port ", absl::CHexEscape(p.name), " impairment: seed ",
                      p.impairment.seed, ", ", p.impairment.rx.size(), " rx rules, ",
                      p.impairment.tx.size(), " tx rules\n");
    }
  }
  if (c.interfaces.empty()) absl::StrAppend(&out, "  interfaces: none\n");
  for (const InterfaceConfig& i : c.interfaces) {
    absl::StrAppend(&out, "  interface on ", absl::CHexEscape(i.port), ": ",
                    FormatPrefix(i.ipv4.address, i.ipv4.prefix_len), ", gateway ",
                    i.gateway ? FormatIpv4(*i.gateway) : std::string("none"), "\n");
  }
  absl::StrAppend(&out, "  workers: lcores [", absl::StrJoin(c.workers.lcores, ","), "], burst ",
                  c.workers.burst, ", ",
                  c.workers.idle_block_after_us != 0
                      ? absl::StrCat("block after ", c.workers.idle_block_after_us,
                                     " us idle, at most ", c.workers.idle_block_max_ms, " ms")
                  : c.workers.idle_sleep_us == 0
                      ? std::string("busy polling")
                      : absl::StrCat("idle sleep ", c.workers.idle_sleep_us, " us"),
                  "\n");
  absl::StrAppend(&out, "  mempools: ", c.mempools.mbufs, " mbufs per port, cache ",
                  c.mempools.cache, ", data room ", c.mempools.data_room, " bytes\n");
  if (c.udp_echo.port != 0) {
    absl::StrAppend(&out, "  udp echo (RFC 862) on port ", c.udp_echo.port, "\n");
  }
  absl::StrAppend(&out, "  arp: ", c.arp.cache_entries, " entries per worker, timeout ",
                  c.arp.timeout_s, " s, ", c.arp.pending_packets,
                  " pending packets per address, retry ", c.arp.retry_ms, " ms\n");
  absl::StrAppend(&out, "  logging: ", NameOf(c.logging.level), "; telemetry: ",
                  c.telemetry.enabled ? "enabled" : "disabled", "\n");
  const AppInterfaceConfig& ai = c.app_interface;
  if (ai.enabled) {
    absl::StrAppendFormat(&out,
                          "  app interface: %s/%s.sock mode %04o, %u sessions, per session %u QPs "
                          "%u CQs %u MRs %u MiB, queues <= %u, %u STags\n",
                          ai.socket_dir, c.eal.file_prefix, ai.socket_mode, ai.max_sessions,
                          ai.max_qps_per_session, ai.max_cqs_per_session, ai.max_mrs_per_session,
                          ai.max_registered_mb_per_session, ai.max_queue_depth,
                          ai.stag_table_size);
  } else {
    out += "  app interface: disabled\n";
  }
  const TcpConfig& t = c.tcp;
  if (!t.enabled) {
    absl::StrAppend(&out, "  tcp: disabled\n");
  } else {
    absl::StrAppend(&out, "  tcp: ", t.max_connections, " connections per worker, buffers ",
                    t.send_buffer_bytes, "/", t.receive_buffer_bytes, " bytes (",
                    EffectiveMaxSendRecords(t), " FPDUs in flight at most), ",
                    NameOf(t.congestion_control), ", sack ",
                    t.sack ? "on" : "off", ", timestamps ", t.timestamps ? "on" : "off",
                    ", syn cookies ", NameOf(t.syn_cookies), "\n");
  }
  if (c.sctp.enabled) {
    absl::StrAppend(&out, "  sctp: on worker 0, ", c.sctp.streams, " DDP streams, buffers ",
                    c.sctp.send_buffer_bytes, "/", c.sctp.receive_buffer_bytes, " bytes, rto ",
                    c.sctp.rto_min_ms, "..", c.sctp.rto_max_ms, " ms\n");
  }
  for (const ServiceConfig& svc : c.services) {
    absl::StrAppend(&out, "  service ", absl::CHexEscape(svc.name), ": ",
                    NameOf(svc.type));
    if (svc.type == ServiceType::kSource) {
      absl::StrAppend(&out, " to ", FormatIpv4(svc.remote), ":", svc.remote_port, ", ",
                      svc.connections, " x ", svc.bytes, " bytes");
    } else if (svc.type == ServiceType::kIwarpClient) {
      absl::StrAppend(&out, " to ", FormatIpv4(svc.remote), ":", svc.remote_port, ", ",
                      NameOf(svc.op), " ", svc.count, " x ", svc.message_bytes,
                      " bytes, depth ", svc.queue_depth, ", crc ", svc.crc ? "on" : "off",
                      ", markers ", svc.markers ? "on" : "off");
    } else if (svc.type == ServiceType::kIwarpFpduTest) {
      absl::StrAppend(&out, " (TEST MODE) port ", svc.port, " to ", FormatIpv4(svc.remote), ":",
                      svc.remote_port, ", isn ", svc.local_isn, "/", svc.remote_isn, ", loop ",
                      svc.loop_bytes, " bytes, region ", svc.region_bytes, " bytes, crc ",
                      svc.crc ? "on" : "off", ", markers ", svc.markers ? "on" : "off");
    } else {
      absl::StrAppend(&out, " on port ", svc.port);
    }
    if (svc.sha256) absl::StrAppend(&out, ", sha256");
    if (svc.type == ServiceType::kIwarpClient && !svc.client_sha256) {
      absl::StrAppend(&out, ", no run hash");
    }
    if (svc.transport == IwarpTransport::kSctp) absl::StrAppend(&out, ", over sctp");
    out += "\n";
  }
  return out;
}

std::string FormatConfigYaml(const Config& c) {
  std::string out;
  absl::StrAppend(&out, "version: ", c.version, "\n");
  absl::StrAppend(&out, "eal:\n  main_lcore: ", c.eal.main_lcore, "\n  memory_mb: ",
                  c.eal.memory_mb, "\n  hugepages: ", NameOf(c.eal.hugepages),
                  "\n  file_prefix: ");
  AppendYamlString(&out, c.eal.file_prefix);
  out += "\n  extra_args: [";
  for (size_t i = 0; i < c.eal.extra_args.size(); ++i) {
    if (i != 0) out += ", ";
    AppendYamlString(&out, c.eal.extra_args[i]);
  }
  absl::StrAppend(&out, "]\n  cpus: [", absl::StrJoin(c.eal.cpus, ", "), "]\nports:\n");
  for (const PortConfig& p : c.ports) {
    out += "  - name: ";
    AppendYamlString(&out, p.name);
    out += p.vdev.empty() ? "\n    pci: " : "\n    vdev: ";
    AppendYamlString(&out, p.vdev.empty() ? p.pci : p.vdev);
    absl::StrAppend(&out, "\n    mtu: ", p.mtu, "\n    rx_queues: ", p.rx_queues,
                    "\n    tx_queues: ", p.tx_queues, "\n    rx_descriptors: ", p.rx_descriptors,
                    "\n    tx_descriptors: ", p.tx_descriptors,
                    "\n    promiscuous: ", p.promiscuous ? "true" : "false",
                    "\n    tso: ", NameOf(p.tso), "\n");
    if (!p.impairment.empty()) {
      absl::StrAppend(&out, "    impairment:\n      seed: ", p.impairment.seed, "\n");
      auto rules = [&out](absl::string_view dir, const std::vector<ImpairRule>& list) {
        absl::StrAppend(&out, "      ", dir, ":", list.empty() ? " []" : "", "\n");
        for (const ImpairRule& r : list) {
          absl::StrAppend(&out, "        - {action: ", NameOf(r.action),
                          ", protocol: ", NameOf(r.protocol), ", port: ", r.l4_port,
                          ", min_payload: ", r.min_payload, ", every: ", r.every,
                          r.first != 0 ? absl::StrCat(", first: ", r.first) : "",
                          r.last != 0 ? absl::StrCat(", last: ", r.last) : "",
                          ", probability_ppm: ", r.probability_ppm);
          if (r.action == ImpairAction::kDelay) absl::StrAppend(&out, ", delay_ms: ", r.delay_ms);
          if (r.action == ImpairAction::kReorder) {
            absl::StrAppend(&out, ", reorder_gap: ", r.reorder_gap);
          }
          if (r.action == ImpairAction::kCorrupt) {
            absl::StrAppend(&out, ", checksum: ", NameOf(r.corrupt_checksum));
          }
          out += "}\n";
        }
      };
      rules("rx", p.impairment.rx);
      rules("tx", p.impairment.tx);
    }
  }
  out += c.interfaces.empty() ? "interfaces: []\n" : "interfaces:\n";
  for (const InterfaceConfig& i : c.interfaces) {
    out += "  - port: ";
    AppendYamlString(&out, i.port);
    absl::StrAppend(&out, "\n    ipv4: ", FormatPrefix(i.ipv4.address, i.ipv4.prefix_len), "\n");
    if (i.gateway) absl::StrAppend(&out, "    gateway: ", FormatIpv4(*i.gateway), "\n");
  }
  out += "workers:\n";
#define IWARPD_WORKERS_KEY(kind, type, name, def, lo, hi) \
  absl::StrAppend(&out, "  " #name ": ", FormatTunable##kind(c.workers.name, type(def)), "\n");
  IWARPD_WORKERS_KEYS(IWARPD_WORKERS_KEY)
#undef IWARPD_WORKERS_KEY
  absl::StrAppend(&out, "mempools:\n  mbufs: ", c.mempools.mbufs, "\n  cache: ", c.mempools.cache,
                  "\n  data_room: ", c.mempools.data_room, "\n");
  absl::StrAppend(&out, "arp:\n  cache_entries: ", c.arp.cache_entries,
                  "\n  timeout_s: ", c.arp.timeout_s, "\n  pending_packets: ", c.arp.pending_packets,
                  "\n  retry_ms: ", c.arp.retry_ms, "\n");
  absl::StrAppend(&out, "logging:\n  level: ", NameOf(c.logging.level), "\n");
  absl::StrAppend(&out, "telemetry:\n  enabled: ", c.telemetry.enabled ? "true" : "false", "\n");
  const AppInterfaceConfig& ai = c.app_interface;
  absl::StrAppend(&out, "app_interface:\n  enabled: ", ai.enabled ? "true" : "false",
                  "\n  socket_dir: ");
  AppendYamlString(&out, ai.socket_dir);
  absl::StrAppendFormat(&out, "\n  socket_mode: \"%04o\"\n", ai.socket_mode);
  absl::StrAppend(&out, "  allowed_uids: [", absl::StrJoin(ai.allowed_uids, ", "), "]\n",
                  "  max_sessions: ", ai.max_sessions, "\n",
                  "  max_qps_per_session: ", ai.max_qps_per_session, "\n",
                  "  max_cqs_per_session: ", ai.max_cqs_per_session, "\n",
                  "  max_mrs_per_session: ", ai.max_mrs_per_session, "\n",
                  "  max_pds_per_session: ", ai.max_pds_per_session, "\n",
                  "  max_listeners_per_session: ", ai.max_listeners_per_session, "\n",
                  "  max_registered_mb_per_session: ", ai.max_registered_mb_per_session, "\n",
                  "  max_queue_depth: ", ai.max_queue_depth, "\n",
                  "  event_queue_depth: ", ai.event_queue_depth, "\n",
                  "  stag_table_size: ", ai.stag_table_size, "\n",
                  "  mpa_crc: ", ai.mpa_crc ? "true" : "false", "\n",
                  "  mpa_markers: ", ai.mpa_markers ? "true" : "false", "\n",
                  "  zero_copy_tx: ", ai.zero_copy_tx ? "true" : "false", "\n",
                  "  wire_ack_timeout_ms: ", ai.wire_ack_timeout_ms, "\n");
  const TcpConfig& t = c.tcp;
  auto b = [](bool v) { return v ? "true" : "false"; };
  absl::StrAppend(&out, "tcp:\n  enabled: ", b(t.enabled), "\n");
#define IWARPD_TCP_KEY(kind, type, name, def, lo, hi) \
  absl::StrAppend(&out, "  " #name ": ", FormatTunable##kind(t.name, type(def)), "\n");
  IWARPD_TCP_TUNABLES(IWARPD_TCP_KEY)
#undef IWARPD_TCP_KEY
  out += c.services.empty() ? "services: []\n" : "services:\n";
  for (const ServiceConfig& svc : c.services) {
    out += "  - name: ";
    AppendYamlString(&out, svc.name);
    absl::StrAppend(&out, "\n    type: ", NameOf(svc.type), "\n");
    if (svc.type == ServiceType::kSource) {
      absl::StrAppend(&out, "    remote: ", FormatIpv4(svc.remote),
                      "\n    remote_port: ", svc.remote_port, "\n    bytes: ", svc.bytes,
                      "\n    connections: ", svc.connections,
                      "\n    start_delay_ms: ", svc.start_delay_ms, "\n");
    } else if (svc.type == ServiceType::kIwarpClient) {
      absl::StrAppend(&out, "    remote: ", FormatIpv4(svc.remote),
                      "\n    remote_port: ", svc.remote_port,
                      "\n    start_delay_ms: ", svc.start_delay_ms,
                      "\n    op: ", NameOf(svc.op),
                      "\n    message_bytes: ", svc.message_bytes, "\n    count: ", svc.count,
                      "\n    queue_depth: ", svc.queue_depth, "\n    verify: ", b(svc.verify),
                      "\n");
    } else if (svc.type == ServiceType::kIwarpFpduTest) {
      absl::StrAppend(&out, "    port: ", svc.port, "\n    remote: ", FormatIpv4(svc.remote),
                      "\n    remote_port: ", svc.remote_port, "\n    local_isn: ", svc.local_isn,
                      "\n    remote_isn: ", svc.remote_isn, "\n    loop_bytes: ", svc.loop_bytes,
                      "\n    region_bytes: ", svc.region_bytes, "\n    crc: ", b(svc.crc),
                      "\n    markers: ", b(svc.markers), "\n");
      continue;
    } else {
      absl::StrAppend(&out, "    port: ", svc.port, "\n");
    }
    if (svc.type == ServiceType::kIwarpClient || svc.type == ServiceType::kIwarpResponder) {
      absl::StrAppend(&out, "    crc: ", b(svc.crc), "\n    markers: ", b(svc.markers),
                      "\n    transport: ", NameOf(svc.transport), "\n");
      if (svc.stream >= 0) absl::StrAppend(&out, "    stream: ", svc.stream, "\n");
      if (svc.type == ServiceType::kIwarpClient) {
        absl::StrAppend(&out, "    sha256: ", b(svc.client_sha256), "\n");
      }
    } else if (svc.type != ServiceType::kEcho) {
      absl::StrAppend(&out, "    sha256: ", b(svc.sha256), "\n");
    }
  }
  const IwarpConfig& w = c.iwarp;
  out += "iwarp:\n";
#define IWARPD_IWARP_KEY(kind, type, name, def, lo, hi) \
  absl::StrAppend(&out, "  " #name ": ", FormatTunable##kind(w.name, type(def)), "\n");
  IWARPD_IWARP_KEYS(IWARPD_IWARP_KEY)
#undef IWARPD_IWARP_KEY
  const SctpConfig& sc = c.sctp;
  absl::StrAppend(&out, "sctp:\n  enabled: ", b(sc.enabled), "\n");
#define IWARPD_SCTP_KEY(kind, type, name, def, lo, hi, member) \
  absl::StrAppend(&out, "  " #name ": ", FormatTunable##kind(sc.name, type(def)), "\n");
  IWARPD_SCTP_TUNABLES(IWARPD_SCTP_KEY)
#undef IWARPD_SCTP_KEY
  absl::StrAppend(&out, "udp_echo:\n  port: ", c.udp_echo.port, "\n");
  if (c.test_mode) out += "test_mode: true\n";
  return out;
}

}  // namespace iwarp::config
