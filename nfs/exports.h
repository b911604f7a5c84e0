// iwarp-nfsd configuration: listen addresses, state directory, I/O threads
// and the exports, read from YAML (yaml-cpp) once at start-up and validated
// as a whole. Errors follow config/'s form
//   FILE:LINE:COLUMN: key.path: problem; allowed values
// so an operator can fix the line without reading code. See
// nfs/examples/nfsd.yaml for every key.
#ifndef IWARPD_NFS_EXPORTS_H_
#define IWARPD_NFS_EXPORTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iwarp::nfs {

// An IPv4 address or prefix (host order).
struct ClientPrefix {
  uint32_t address = 0;
  uint8_t length = 32;
  bool Matches(uint32_t ipv4) const {
    const uint32_t mask = length == 0 ? 0 : ~uint32_t{0} << (32 - length);
    return (ipv4 & mask) == (address & mask);
  }
  friend bool operator==(const ClientPrefix&, const ClientPrefix&) = default;
};
// "A.B.C.D" or "A.B.C.D/LEN"; false if malformed or host bits are set.
bool ParseClientPrefix(std::string_view text, ClientPrefix* out);
bool ParseIpv4(std::string_view text, uint32_t* out);

struct Export {
  std::string path;       // absolute, normalized; also the MOUNT dirpath
  uint32_t id = 0;        // in every file handle; stable across restarts
  std::vector<ClientPrefix> clients;
  bool read_only = false;
  bool root_squash = true;
  uint32_t anon_uid = 65534;
  uint32_t anon_gid = 65534;

  bool Allows(uint32_t ipv4) const {
    for (const ClientPrefix& p : clients) {
      if (p.Matches(ipv4)) return true;
    }
    return false;
  }
};

enum class RpcbindMode { kAuto, kOn, kOff };

// NFS over RPC-over-RDMA (RFC 8166, RFC 8267) through an iwarpd instance:
// iwarp-nfsd is an application of that daemon (libiwarp) and listens on its
// data-plane address. Off unless the configuration has an `rdma:` section.
struct RdmaListen {
  bool enabled = false;
  std::string socket;       // iwarpd's application socket; "" = libiwarp's default
  uint32_t ipv4 = 0;        // 0: every address of the daemon
  uint16_t port = 20049;    // NFS/RDMA's port
  bool sctp = false;        // RDMA over SCTP (RFC 5043) instead of MPA/TCP
  uint32_t credits = 32;    // RPC-over-RDMA credits granted per connection
  uint32_t max_connections = 8;
};

struct NfsdConfig {
  uint32_t listen_ipv4 = 0;   // 0: every address
  uint16_t nfs_port = 2049;
  uint16_t mount_port = 20048;
  std::string state_dir = "/var/lib/iwarp-nfsd";
  uint32_t io_threads = 4;
  RpcbindMode rpcbind = RpcbindMode::kAuto;
  RdmaListen rdma;
  // Where SIGUSR1 writes the counters; empty: STATE_DIR/stats.
  std::string stats_file;
  std::vector<Export> exports;

  const Export* FindById(uint32_t id) const;
  const Export* FindByPath(std::string_view path) const;
};

// Parses and validates `text` (`source` names it in errors).
absl::StatusOr<NfsdConfig> ParseNfsdConfig(std::string_view text, std::string_view source);
absl::StatusOr<NfsdConfig> LoadNfsdConfigFile(const std::string& path);
// Checks the host: every export path is an existing directory whose file
// system gives file handles (name_to_handle_at) short enough for ours.
absl::Status CheckExportsOnHost(const NfsdConfig& config);

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_EXPORTS_H_
