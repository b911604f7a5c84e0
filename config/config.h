// iwarpd configuration, schema version 1.
//
// The YAML file is parsed once at start-up (yaml-cpp) into this struct, which
// is validated as a whole and then never changed: every thread may read it
// without synchronisation. See config/examples/reference.yaml for every key
// with its meaning, default and allowed values.
#ifndef IWARPD_CONFIG_CONFIG_H_
#define IWARPD_CONFIG_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sctp/sctp_tunables.h"
#include "tcp_lite/tcp_tunables.h"

namespace iwarp::config {

inline constexpr int kSchemaVersion = 1;
// Larger inputs are rejected before parsing.
inline constexpr size_t kMaxConfigBytes = 1 << 20;

enum class HugepageMode { kAuto, kOn, kOff };
enum class LogLevel { kError, kWarning, kNotice, kInfo, kDebug };

struct EalConfig {
  // lcore that runs the control thread (DPDK main lcore).
  uint32_t main_lcore = 0;
  // Memory for DPDK, MiB.
  uint32_t memory_mb = 512;
  // auto: hugepages when the machine has them mounted and free, otherwise
  // --no-huge (logged). on: fail if there are none. off: always --no-huge.
  HugepageMode hugepages = HugepageMode::kAuto;
  // DPDK --file-prefix; also names the telemetry socket directory.
  std::string file_prefix = "iwarpd";
  // Extra EAL arguments passed through verbatim (after the generated ones).
  std::vector<std::string> extra_args;
  // CPUs the lcores (main and workers) run on. Empty: lcore N runs on CPU N
  // (DPDK -l). Otherwise every lcore floats over these CPUs (DPDK --lcores
  // '(LCORES)@(CPUS)'): more lcores than CPUs, e.g. several workers on a
  // 2-CPU test machine.
  std::vector<uint32_t> cpus;

  friend bool operator==(const EalConfig&, const EalConfig&) = default;
};

// ---- Impairment stage (ports[].impairment) --------------------------------
// Faults the data plane injects on one port and direction, since the test
// machines have no netem. See config/examples/reference.yaml.
enum class ImpairAction { kDrop, kDuplicate, kReorder, kDelay, kCorrupt };
enum class ImpairProtocol { kAny, kTcp, kUdp, kIcmp };
// kStale: the L4 checksum is left as it was, so the receiver's checksum check
// discards the packet. kFixed: the checksum is updated (RFC 1624) so the
// damage reaches the layers above the transport.
enum class CorruptChecksum { kStale, kFixed };

struct ImpairRule {
  ImpairAction action = ImpairAction::kDrop;
  // Filter: which IPv4 packets the rule counts. Non-IPv4 frames never match.
  ImpairProtocol protocol = ImpairProtocol::kAny;
  uint16_t l4_port = 0;        // TCP/UDP source or destination port; 0 = any
  uint32_t min_payload = 0;    // L4 payload bytes at least
  // Selection among the matching packets, all of which must hold: the Nth,
  // 2Nth, ... (every), the 1-based match index within [first, last] (0 = no
  // bound), and a seeded random draw (parts per million).
  uint32_t every = 1;
  uint64_t first = 0;
  uint64_t last = 0;
  uint32_t probability_ppm = 1000000;
  // Action parameters.
  uint32_t delay_ms = 10;      // delay
  uint32_t reorder_gap = 3;    // reorder: later packets that overtake the held one
  CorruptChecksum corrupt_checksum = CorruptChecksum::kStale;

  friend bool operator==(const ImpairRule&, const ImpairRule&) = default;
};

struct ImpairmentConfig {
  uint64_t seed = 1;  // generator seed (mixed with port, direction and worker)
  std::vector<ImpairRule> rx;  // applied to received frames before the stack
  std::vector<ImpairRule> tx;  // applied to frames about to be transmitted

  bool empty() const { return rx.empty() && tx.empty(); }
  friend bool operator==(const ImpairmentConfig&, const ImpairmentConfig&) = default;
};

// Where a key stood in the file ("file:line:column"), for errors found after
// loading (at device start-up). Not part of the configured value: two
// configs that differ only in layout compare equal.
struct SourcePosition {
  std::string text;  // "" when the key was absent

  friend bool operator==(const SourcePosition&, const SourcePosition&) { return true; }
};

// Whether a port hands runs of TCP segments to the device as one TSO frame
// (and accepts the device's coalesced/LRO frames on receive).
enum class TsoMode { kAuto, kOn, kOff };

struct PortConfig {
  std::string name;          // operator's name, unique; used by interfaces
  std::string vdev;          // DPDK vdev spec, e.g. "net_tap0,iface=iw0"
  std::string pci;           // or a PCI address "0000:03:00.0"; exactly one is set
  uint32_t mtu = 1500;       // 68..9600
  uint16_t rx_queues = 0;    // 0 = one per worker
  uint16_t tx_queues = 0;    // 0 = one per worker
  uint16_t rx_descriptors = 1024;
  uint16_t tx_descriptors = 1024;
  bool promiscuous = false;
  // auto: TCP segmentation offload when the device offers it; on: the port
  // refuses to start without it; off: never.
  TsoMode tso = TsoMode::kAuto;
  SourcePosition tso_origin;  // of the tso key, for start-up errors
  ImpairmentConfig impairment;

  friend bool operator==(const PortConfig&, const PortConfig&) = default;
};

struct Ipv4Prefix {
  uint32_t address = 0;  // host byte order
  uint8_t prefix_len = 0;

  friend bool operator==(const Ipv4Prefix&, const Ipv4Prefix&) = default;
};

struct InterfaceConfig {
  std::string port;          // PortConfig::name
  Ipv4Prefix ipv4;
  std::optional<uint32_t> gateway;  // host byte order, inside the prefix

  friend bool operator==(const InterfaceConfig&, const InterfaceConfig&) = default;
};

// The workers: keys, one row each; WorkerConfig, the loader and the printer
// are generated from it.
// X(kind, type, name, default, lo, hi)
//   kind   how the configuration reads and prints it: Uint (lo..hi); Lcores
//          (required: a list of distinct lcores lo..hi); IdleSleepUs (Uint,
//          its place kept for the check against idle_block_after_us);
//          IdleBlockAfterUs (0 or lo..hi, its place kept for that check and
//          for start-up errors).
// clang-format off
#define IWARPD_WORKERS_KEYS(X)                                                                \
  /* Worker lcores; none may be the main lcore. */                                           \
  X(Lcores, std::vector<uint32_t>, lcores, std::vector<uint32_t>{}, 0, 127)                  \
  X(Uint, uint16_t, burst, 32, 1, 256)                                                       \
  /* After this many empty polls in a row a worker sleeps idle_sleep_us before polling */    \
  /* again; 0 = pure busy polling (lowest latency, one core per worker). */                  \
  X(IdleSleepUs, uint32_t, idle_sleep_us, 0, 0, 10000)                                       \
  /* After this long (us) without work a worker blocks until a frame arrives (receive */     \
  /* interrupts), an application posts work, another thread hands it work, or its next */   \
  /* timer is due (at most idle_block_max_ms); 0 = never. Needs receive interrupts on */     \
  /* every port; excludes idle_sleep_us. */                                                  \
  X(IdleBlockAfterUs, uint32_t, idle_block_after_us, 0, 10, 1000000)                         \
  /* The longest a blocked worker sleeps without an event: what the timers nobody */         \
  /* announces may be late by (ARP, SCTP, MPA and accept timeouts, service start delays), */ \
  /* and an idle worker's wake-ups (1000 / this per s). */                                   \
  X(Uint, uint32_t, idle_block_max_ms, 10, 1, 1000)
// clang-format on

struct WorkerConfig {
#define IWARPD_WORKERS_MEMBER(kind, type, name, def, lo, hi) type name = def;
  IWARPD_WORKERS_KEYS(IWARPD_WORKERS_MEMBER)
#undef IWARPD_WORKERS_MEMBER
  SourcePosition idle_block_origin;  // of idle_block_after_us, for start-up errors

  friend bool operator==(const WorkerConfig&, const WorkerConfig&) = default;
};

struct MempoolConfig {
  uint32_t mbufs = 8191;      // per port
  uint32_t cache = 256;       // per-lcore cache, <= 512
  uint32_t data_room = 2176;  // bytes per mbuf incl. headroom

  friend bool operator==(const MempoolConfig&, const MempoolConfig&) = default;
};

struct ArpConfig {
  uint32_t cache_entries = 1024;  // per worker
  uint32_t timeout_s = 300;       // entry lifetime
  uint32_t pending_packets = 64;  // per unresolved address, bounded queue
  uint32_t retry_ms = 1000;       // request retransmit interval

  friend bool operator==(const ArpConfig&, const ArpConfig&) = default;
};

// RFC 862 echo over UDP (udp_echo:): datagrams to `port` on our addresses
// are sent back, for a packet generator's latency probes (pktgen's latency
// mode). 0 = off: UDP is dropped as ipv4_unknown_protocol.
struct UdpEchoConfig {
  uint16_t port = 0;

  friend bool operator==(const UdpEchoConfig&, const UdpEchoConfig&) = default;
};

struct LoggingConfig {
  LogLevel level = LogLevel::kInfo;

  friend bool operator==(const LoggingConfig&, const LoggingConfig&) = default;
};

struct TelemetryConfig {
  bool enabled = true;

  friend bool operator==(const TelemetryConfig&, const TelemetryConfig&) = default;
};

// Application interface (libiwarp sessions over a UNIX socket and shared
// memory). The socket is SOCKET_DIR/FILE_PREFIX.sock (eal.file_prefix).
struct AppInterfaceConfig {
  bool enabled = true;
  std::string socket_dir = "/run/iwarpd";  // absolute; created if missing
  uint32_t socket_mode = 0660;             // permissions of the socket file
  std::vector<uint32_t> allowed_uids;      // SO_PEERCRED allow-list; empty = any
  uint32_t max_sessions = 64;
  uint32_t max_qps_per_session = 256;
  uint32_t max_cqs_per_session = 256;
  uint32_t max_mrs_per_session = 4096;
  uint32_t max_pds_per_session = 1024;
  uint32_t max_listeners_per_session = 64;
  uint32_t max_registered_mb_per_session = 1024;
  uint32_t max_queue_depth = 4096;         // SQ/RQ/CQ entries, power of two
  uint32_t event_queue_depth = 64;         // per session, power of two
  uint32_t stag_table_size = 65536;        // STag slots for the whole daemon
  // MPA framing application QPs on the wire offer by default (RFC 5044 7.1:
  // CRC and Markers are negotiated per connection; an application may still
  // ask for Markers on one connection with iwarp_connect_mpa).
  bool mpa_crc = true;
  bool mpa_markers = false;
  // FPDU payload of application QPs over TCP is read from the registered
  // memory when TCP sends it, without a copy into the TCP send buffer
  // (engine::QpOptions::zero_copy_tx); false (the default) copies every
  // FPDU. Measured on net_memif: no gain (the port copies and the TCP
  // checksum reads the payload anyway), so it is opt-in.
  bool zero_copy_tx = false;
  // How long the control thread waits for worker 0 to acknowledge a wire QP
  // command (destroy, teardown) before it keeps the QP's memory mapped and
  // counts wire_ack_timeouts.
  uint32_t wire_ack_timeout_ms = 2000;

  friend bool operator==(const AppInterfaceConfig&, const AppInterfaceConfig&) = default;
};

// ---- TCP engine (tcp:) ------------------------------------------------------
// Every key of the section but `enabled` is a tunable of tcp_lite's table
// (tcp_lite/tcp_tunables.h: name, type, default and range written once); the
// loader, the printers and the copy into the engine's TcpOptions are generated
// from it. The per-port MTU gives the default MSS.
using SynCookies = tcp::SynCookieMode;
using CongestionControl = tcp::CcAlgorithm;

struct TcpConfig : tcp::TcpTunables {
  bool enabled = true;  // false: TCP segments are dropped as ipv4_unknown_protocol

  friend bool operator==(const TcpConfig&, const TcpConfig&) = default;
};

// ---- Plain TCP services (services:) ----------------------------------------
// echo:   listens on `port`, sends every byte back.
// sink:   listens on `port`, counts (and with sha256 hashes) what it receives;
//         closes when the peer does.
// source: actively opens `connections` connections to remote:remote_port and
//         sends `bytes` bytes of the pattern byte[i] = i % 251 on each, then
//         FIN; hashes what it sent with sha256.
// iwarp_responder: an rping-style iWARP responder on `port` (MPA, a scratch
//         region for RDMA Write/Read, every Send echoed); see
//         dataplane/services/iwarp_services.h.
// iwarp_client: connects to an iwarp_responder at remote:remote_port and runs
//         the workload op / message_bytes / count / queue_depth.
// iwarp_fpdu_test: test configurations only (test_mode: true): a QP on a
//         TCP connection established from configuration with agreed ISNs
//         and MPA settings, so a packet generator replaying FPDUs drives
//         placement; see dataplane/services/iwarp_services.h.
enum class ServiceType { kEcho, kSink, kSource, kIwarpResponder, kIwarpClient, kIwarpFpduTest };

// iwarp_client workload. mixed: message i is op (i mod 3) of write, read, send.
enum class IwarpOp { kWrite, kRead, kSend, kMixed };

// Lower layer of the iwarp_* services: TCP + MPA (RFC 5044) or SCTP with the
// RFC 5043 adaptation (needs sctp.enabled; runs on worker 0).
enum class IwarpTransport { kTcp, kSctp };

struct ServiceConfig {
  std::string name;
  ServiceType type = ServiceType::kEcho;
  uint16_t port = 0;            // echo, sink: listening port
  bool sha256 = false;          // sink, source
  // iwarp_client: hash the run (YAML key sha256 there too, default true).
  bool client_sha256 = true;
  uint32_t remote = 0;          // source: host order
  uint16_t remote_port = 0;     // source
  uint64_t bytes = 0;           // source: per connection
  uint32_t connections = 1;     // source
  uint32_t start_delay_ms = 0;  // source, iwarp_client: after the worker starts
  // iwarp_responder, iwarp_client: MPA C (ask for CRC) and M (ask the peer to
  // insert Markers). A peer's C=1 / M=1 is honoured either way.
  bool crc = true;
  bool markers = false;
  // iwarp_client workload.
  IwarpOp op = IwarpOp::kWrite;
  uint32_t message_bytes = 4096;  // 0 .. 16 MiB
  uint64_t count = 1;             // messages
  uint32_t queue_depth = 1;       // messages outstanding at once
  bool verify = true;             // write: read each message back and compare
  // iwarp_responder, iwarp_client: tcp or sctp (port / remote_port are then
  // SCTP ports).
  IwarpTransport transport = IwarpTransport::kTcp;
  // iwarp_client over sctp: the DDP stream (SCTP stream id) of its QP; -1 =
  // the next stream no earlier client to the same remote:remote_port took.
  // Clients naming the same remote and remote_port share one association.
  int32_t stream = -1;
  // iwarp_fpdu_test: our ISS and the generator's ISN (its first data byte is
  // remote_isn + 1), the TCP payload bytes of one pass of the generator's
  // capture (the receive sequence returns to remote_isn + 1 after it; with
  // markers a multiple of 512) and the region's size.
  uint32_t local_isn = 1000;
  uint32_t remote_isn = 2000;
  uint64_t loop_bytes = 0;
  uint64_t region_bytes = 1 << 20;

  friend bool operator==(const ServiceConfig&, const ServiceConfig&) = default;
};

// ---- iWARP engine on the workers (iwarp:) ------------------------------------
// MPA parameters and pool sizes shared by the iwarp_responder and
// iwarp_client services. Every QP and region is allocated at start-up.
inline constexpr uint8_t kIwarpRtrSend = 1u << 0;   // equal engine::kRtr*
inline constexpr uint8_t kIwarpRtrWrite = 1u << 1;
inline constexpr uint8_t kIwarpRtrRead = 1u << 2;

// The iwarp: keys, one row each; IwarpConfig, the loader and the printer are
// generated from it.
// X(kind, type, name, default, lo, hi)
//   kind   how the configuration reads and prints it: Uint (lo..hi); Bool;
//          RtrTypes (a list of send, write, read, each at most once).
// clang-format off
#define IWARPD_IWARP_KEYS(X)                                                                  \
  /* Responder QPs per worker (concurrent connections). */                                   \
  X(Uint, uint32_t, qps_per_service, 4, 1, 4096)                                             \
  X(Uint, uint8_t, revision, 2, 1, 2)   /* MPA revision an initiator sends */                \
  X(Bool, bool, enhanced, true, 0, 0)   /* RFC 6581 IRD/ORD and RTR negotiation (Rev 2) */   \
  X(Uint, uint16_t, ird, 32, 0, 0x3FFF) /* inbound RDMA Reads served at once */              \
  X(Uint, uint16_t, ord, 32, 0, 0x3FFF) /* outbound RDMA Reads issued at once */             \
  /* RFC 6581 RTR types offered/accepted. */                                                 \
  X(RtrTypes, uint8_t, rtr_types, kIwarpRtrWrite | kIwarpRtrRead, 0, 0)                      \
  /* MPA private data accepted from a peer, bytes (ULP's, IRD/ORD block not counted). */     \
  X(Uint, uint32_t, max_private_data, 256, 0, 508)                                           \
  /* Responder: MPA Request after TCP accept. */                                             \
  X(Uint, uint32_t, request_timeout_ms, 5000, 1, 600000)                                     \
  /* Every iWARP listening port (iwarp_responder services and application listeners): */    \
  /* connections waiting for their MPA Request, in all and from one remote address */        \
  /* (iwarp/mpa_gate.h). */                                                                  \
  X(Uint, uint32_t, max_pending_requests, 256, 1, 65536)                                     \
  X(Uint, uint32_t, max_pending_per_source, 32, 1, 65536)                                    \
  /* Initiator: MPA Reply after the Request; responder: the RTR after the Reply. */          \
  X(Uint, uint32_t, reply_timeout_ms, 10000, 1, 600000)                                      \
  X(Uint, uint32_t, rtr_timeout_ms, 10000, 1, 600000)                                        \
  X(Uint, uint32_t, sq_depth, 128, 1, 65536)                                                 \
  X(Uint, uint32_t, rq_depth, 128, 1, 65536)                                                 \
  X(Uint, uint32_t, cq_depth, 512, 1, 65536)                                                 \
  /* Responder: RDMA Write/Read region per QP. */                                            \
  X(Uint, uint64_t, scratch_bytes, 1 << 20, 0, uint64_t{1} << 30)                            \
  /* Responder: receives posted per QP (<= rq_depth, < sq_depth) and the largest Send */     \
  /* echoed. */                                                                              \
  X(Uint, uint32_t, recv_buffers, 16, 1, 65536)                                              \
  X(Uint, uint32_t, recv_buffer_bytes, 65536, 0, 16 << 20)
// clang-format on

struct IwarpConfig {
#define IWARPD_IWARP_MEMBER(kind, type, name, def, lo, hi) type name = def;
  IWARPD_IWARP_KEYS(IWARPD_IWARP_MEMBER)
#undef IWARPD_IWARP_MEMBER

  friend bool operator==(const IwarpConfig&, const IwarpConfig&) = default;
};

// ---- RDMA over SCTP (sctp:) ---------------------------------------------------
// usrsctp (AF_CONN) hosted on worker 0; IPv4 protocol 132 to our addresses
// goes to it (steered to worker 0 from other workers). The path MTU is the
// smallest port MTU. Every key of the section but `enabled` is a tunable of
// sctp/'s table (sctp/sctp_tunables.h: name, type, default, range and the
// EndpointConfig member written once); the loader, the printer and the copy
// into the endpoint's EndpointConfig are generated from it, and the defaults
// are the endpoint's.
struct SctpConfig : sctp::SctpTunables {
  bool enabled = false;  // false: protocol 132 is dropped as ipv4_unknown_protocol

  friend bool operator==(const SctpConfig&, const SctpConfig&) = default;
};

struct Config {
  int version = kSchemaVersion;
  std::string source;  // file the config came from ("<string>" for tests)
  EalConfig eal;
  std::vector<PortConfig> ports;
  std::vector<InterfaceConfig> interfaces;
  WorkerConfig workers;
  MempoolConfig mempools;
  ArpConfig arp;
  LoggingConfig logging;
  TelemetryConfig telemetry;
  AppInterfaceConfig app_interface;
  TcpConfig tcp;
  std::vector<ServiceConfig> services;
  IwarpConfig iwarp;
  SctpConfig sctp;
  UdpEchoConfig udp_echo;
  // Test configurations only: allows services that bypass a protocol's own
  // setup (iwarp_fpdu_test). Never set on a production daemon.
  bool test_mode = false;

  friend bool operator==(const Config&, const Config&) = default;
};

// Loads and validates a config file. On error the status message is
// "FILE:LINE:COLUMN: KEY.PATH: what is wrong; what is allowed" and nothing
// else is returned.
absl::StatusOr<Config> LoadConfigFile(const std::string& path);

// Same, from a string; `source_name` is used in place of the file name.
absl::StatusOr<Config> LoadConfigString(std::string_view yaml,
                                        std::string_view source_name = "<string>");

std::string_view ToString(HugepageMode m);
std::string_view ToString(LogLevel l);
std::string_view ToString(ImpairAction a);
std::string_view ToString(ImpairProtocol p);
std::string_view ToString(CorruptChecksum c);
std::string_view ToString(SynCookies s);
std::string_view ToString(CongestionControl c);
std::string_view ToString(ServiceType t);
std::string_view ToString(IwarpOp o);
std::string_view ToString(IwarpTransport t);
std::string FormatIpv4(uint32_t host_order_addr);

// MPA records (FPDU boundaries) a TCP connection remembers, which bounds the
// data it has in flight to that many FPDUs: tcp.max_send_records, or for
// auto (0) enough for a full send buffer of FPDUs of 1 KiB or more, at least
// 1024.
uint32_t EffectiveMaxSendRecords(const TcpConfig& tcp);

// Multi-line human summary of a loaded config, for the start-up log. Every
// line ends in '\n'; nothing in it is secret.
std::string DescribeConfig(const Config& config);

// Renders every key of `config` (defaults included) as schema v1 YAML that
// LoadConfigString accepts and turns back into an equal Config (apart from
// `source`). Used by `--check-config` to print the effective configuration.
std::string FormatConfigYaml(const Config& config);

}  // namespace iwarp::config

#endif  // IWARPD_CONFIG_CONFIG_H_
