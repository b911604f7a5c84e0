// iwarpctl: shows what a running iwarpd reports through DPDK telemetry.
//
//   iwarpctl [--prefix P] [--json] stats        per-lcore counters and drop reasons,
//                                               then the TCP counters
//   iwarpctl [--prefix P] [--json] ports        ports, addresses, link, ethdev stats
//   iwarpctl [--prefix P] [--json] tcp          TCP engine counters and drops
//   iwarpctl [--prefix P] [--json] connections  TCP connections
//   iwarpctl [--prefix P] [--json] services     TCP services and finished transfers
//   iwarpctl [--prefix P] [--json] app          application interface (libiwarp)
//   iwarpctl [--prefix P] [--json] qps          iWARP QPs of the iwarp_* services
//
// Not a DPDK process: it speaks the telemetry v2 protocol on the daemon's
// UNIX socket (SOCK_SEQPACKET): read the JSON greeting, send the command,
// read one JSON reply.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tools/iwarpctl_format.h"
#include "tools/iwarpctl_json.h"

namespace {

using iwarp::tools::JsonValue;

constexpr char kUsage[] =
    "usage: iwarpctl [--prefix FILE_PREFIX | --socket PATH] [--json]\n"
    "                stats|ports|tcp|connections|services|app|qps|sctp\n"
    "\n"
    "  stats     per worker lcore and total: packets, bytes, ARP, ICMP and impairment\n"
    "            counters, the poll loop's time (poll_us) and its part in polls that\n"
    "            found work (busy_us), drops by named reason (reasons with a zero\n"
    "            total are not shown); then the same table for TCP\n"
    "  ports     ports, MAC and IPv4 addresses, link, queues, steering, ethdev stats\n"
    "  tcp       TCP engine counters and TCP drops per worker lcore and in total\n"
    "  connections  every TCP connection: addresses, state, service, bytes,\n"
    "            retransmissions, RTT, congestion window\n"
    "  services  TCP services (services: in the config): counters and the last\n"
    "            finished transfers with their byte count and SHA-256; iwarp_*\n"
    "            services add their iWARP counters and the client's run (messages,\n"
    "            bytes, elapsed time, goodput, SHA-256)\n"
    "  app       the application interface (libiwarp sessions): sessions, PDs, MRs,\n"
    "            CQs, QPs, STags in use, registered bytes, work requests completed,\n"
    "            failed and flushed, bytes moved\n"
    "  qps       iWARP QPs of the iwarp_responder / iwarp_client services: state\n"
    "            (RTS, CLOSING, ...; CLOSED after a graceful close, ERROR after a\n"
    "            Terminate, reset, timeout or abort) with why an ended QP ended,\n"
    "            negotiated MPA revision, CRC, Markers, IRD/ORD, RTR, FPDUs, bytes,\n"
    "            CRC errors and the Terminates sent and received\n"
    "  sctp      RDMA over SCTP on worker 0: associations (tracked, up), peers,\n"
    "            usrsctp packet counters (CRC drops, queue), endpoint counters and\n"
    "            the DDP session counters of the live associations\n"
    "  --prefix  the daemon's eal.file_prefix (default: iwarpd)\n"
    "  --socket  the telemetry socket path (default: DPDK's runtime directory for\n"
    "            the prefix, e.g. /var/run/dpdk/iwarpd/dpdk_telemetry.v2 for root)\n"
    "  --json    print the daemon's JSON reply as it is (connections, qps: one reply\n"
    "            per line, each holding up to 24 connections or 8 QPs)\n";

// DPDK's runtime directory rule: /var/run for root, else $XDG_RUNTIME_DIR
// or /tmp.
std::string DefaultSocket(const std::string& prefix) {
  std::string base = "/var/run";
  if (getuid() != 0) {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    base = xdg != nullptr ? xdg : "/tmp";
  }
  return absl::StrCat(base, "/dpdk/", prefix, "/dpdk_telemetry.v2");
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "iwarpctl: %s\n", msg.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string prefix = "iwarpd";
  std::string socket_path;
  bool json = false;
  std::string command;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--json") {
      json = true;
    } else if (a == "--prefix" && i + 1 < argc) {
      prefix = argv[++i];
    } else if (a == "--socket" && i + 1 < argc) {
      socket_path = argv[++i];
    } else if ((a == "stats" || a == "ports" || a == "tcp" || a == "connections" ||
                a == "services" || a == "app" || a == "qps" || a == "sctp") &&
               command.empty()) {
      command = a;
    } else {
      std::fprintf(stderr, "iwarpctl: unexpected argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (command.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (socket_path.empty()) socket_path = DefaultSocket(prefix);

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return Fail("socket path too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return Fail(absl::StrCat("socket: ", std::strerror(errno)));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    if (err == ENOENT || err == ECONNREFUSED) {
      return Fail(absl::StrCat("iwarpd is not running with file prefix '", prefix, "' (",
                               socket_path, ": ", std::strerror(err), ")"));
    }
    return Fail(absl::StrCat("cannot connect to ", socket_path, ": ", std::strerror(err)));
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

  std::vector<char> buf(1 << 16);
  ssize_t n = recv(fd, buf.data(), buf.size(), 0);
  if (n <= 0) {
    close(fd);
    return Fail(absl::StrCat("no greeting from ", socket_path, " (",
                             n == 0 ? "closed: too many clients?" : std::strerror(errno), ")"));
  }
  absl::StatusOr<JsonValue> greeting = iwarp::tools::ParseJson(std::string_view(buf.data(), n));
  if (greeting.ok()) {
    const uint64_t max_len = greeting->Uint("max_output_len", buf.size());
    if (max_len + 1 > buf.size()) buf.resize(max_len + 1);
  }
  // One command on the open connection: the raw reply and its body.
  std::string raw;
  auto query = [&](const std::string& cmd, JsonValue* body) -> absl::Status {
    if (send(fd, cmd.data(), cmd.size(), 0) != static_cast<ssize_t>(cmd.size())) {
      return absl::UnavailableError(absl::StrCat("send: ", std::strerror(errno)));
    }
    const ssize_t got = recv(fd, buf.data(), buf.size(), 0);
    if (got <= 0) {
      return absl::UnavailableError(
          absl::StrCat("no reply (", got == 0 ? "closed" : std::strerror(errno), ")"));
    }
    raw.assign(buf.data(), static_cast<size_t>(got));
    absl::StatusOr<JsonValue> doc = iwarp::tools::ParseJson(raw);
    if (!doc.ok()) return doc.status();
    const std::string key = cmd.substr(0, cmd.find(','));
    const JsonValue* b = doc->Find(key);
    if (b == nullptr || b->type == JsonValue::Type::kNull) {
      return absl::UnavailableError(absl::StrCat(
          "the daemon did not answer ", cmd, " (an older iwarpd, or it is shutting down)"));
    }
    *body = *b;
    return absl::OkStatus();
  };
  auto finish = [&](const absl::StatusOr<std::string>& text) {
    close(fd);
    if (!text.ok()) return Fail(std::string(text.status().message()));
    std::fputs(text->c_str(), stdout);
    return 0;
  };
  auto print_raw = [&raw]() {
    std::fwrite(raw.data(), 1, raw.size(), stdout);
    std::fputc('\n', stdout);
  };

  JsonValue body;
  if (command == "qps") {
    // Paged like connections; the pages are merged into one object.
    JsonValue all;
    all.type = JsonValue::Type::kObject;
    uint64_t first = 0, total = 0;
    for (;;) {
      if (absl::Status st = query(absl::StrCat("/iwarpd/qps,", first), &body); !st.ok()) {
        return finish(st);
      }
      if (json) print_raw();
      const uint64_t shown = body.Uint("shown");
      total = body.Uint("total");
      for (const iwarp::tools::JsonMember& m : body.object) {
        if (m.key.compare(0, 3, "qp_") == 0) all.object.push_back(m);
      }
      first += shown;
      if (shown == 0 || first >= total) break;
    }
    if (json) return finish(std::string());
    JsonValue t;
    t.type = JsonValue::Type::kNumber;
    t.number_text = std::to_string(total);
    t.is_uint = true;
    t.uint_value = total;
    all.object.push_back(iwarp::tools::JsonMember{"total", t});
    return finish(iwarp::tools::FormatQps(all));
  }
  if (command == "connections") {
    // Paged: the daemon answers a bounded number of connections per command.
    std::vector<JsonValue> pages;
    uint64_t first = 0;
    for (;;) {
      if (absl::Status st = query(absl::StrCat("/iwarpd/connections,", first), &body); !st.ok()) {
        return finish(st);
      }
      if (json) print_raw();
      const uint64_t shown = body.Uint("shown");
      const uint64_t total = body.Uint("total");
      pages.push_back(body);
      first += shown;
      if (shown == 0 || first >= total) break;
    }
    if (json) return finish(std::string());
    return finish(iwarp::tools::FormatConnections(pages));
  }
  if (absl::Status st = query("/iwarpd/" + command, &body); !st.ok()) return finish(st);
  if (json) {
    print_raw();
    return finish(std::string());
  }
  if (command == "ports") return finish(iwarp::tools::FormatPorts(body));
  if (command == "services") return finish(iwarp::tools::FormatServices(body));
  if (command == "app") return finish(iwarp::tools::FormatApp(body));
  if (command == "qps") return finish(iwarp::tools::FormatQps(body));
  if (command == "sctp") {
    // One "name value" line per field, in the daemon's order.
    std::string out;
    for (const iwarp::tools::JsonMember& m : body.object) {
      absl::StrAppend(&out, m.key, " ",
                      m.value.is_uint ? absl::StrCat(m.value.uint_value) : m.value.string, "\n");
    }
    return finish(out);
  }
  absl::StatusOr<std::string> text = iwarp::tools::FormatStats(body);
  if (command == "stats" && text.ok()) {
    // The TCP table follows the packet counters.
    JsonValue tcp;
    if (query("/iwarpd/tcp", &tcp).ok()) {
      absl::StatusOr<std::string> t = iwarp::tools::FormatStats(tcp);
      if (t.ok()) *text += "\ntcp\n" + *t;
    }
  }
  return finish(text);
}
