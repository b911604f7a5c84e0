#include "nfs/exports.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/escaping.h"
#include "nfs/text.h"
#include "common/sha256.h"
#include "nfs/handle.h"
#include "yaml-cpp/yaml.h"

namespace iwarp::nfs {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr size_t kMaxExports = 256;
constexpr size_t kMaxClients = 1024;

std::string Quote(std::string_view raw) {
  std::string shown = absl::CHexEscape(absl::string_view(raw.data(), std::min<size_t>(raw.size(), 48)));
  if (raw.size() > 48) shown += "...";
  return Cat("'", shown, "'");
}

std::string Position(const YAML::Mark& m) {
  return Cat(std::max(m.line, 0) + 1, ":", std::max(m.column, 0) + 1);
}

// Walks the document; the first problem ends the walk with its message.
class Loader {
 public:
  explicit Loader(std::string_view source) : source_(source) {}

  bool Fail(const YAML::Mark& mark, std::string_view path, std::string_view what, std::string_view allowed) {
    error_ = Cat(source_, ":", Position(mark), ": ", path, ": ", what, "; ", allowed);
    return false;
  }
  const std::string& error() const { return error_; }

  using Reader = std::function<bool(const YAML::Node& key, const YAML::Node& value, const std::string& path)>;
  struct Field {
    std::string_view key;
    Reader read;
    std::string_view required_hint = {};
  };

  bool WalkMap(const YAML::Node& map, const YAML::Mark& mark, const std::string& path,
               const std::vector<Field>& fields) {
    std::set<std::string> seen;
    if (!map.IsMap() && !map.IsNull()) {
      return Fail(map.Mark(), path.empty() ? "(document)" : path, "expected a mapping",
                  "write indented 'key: value' lines");
    }
    if (map.IsMap()) {
      for (auto it = map.begin(); it != map.end(); ++it) {
        // Copies: the iterator's value is a temporary (node handles are cheap).
        const YAML::Node key = it->first;
        const YAML::Node value = it->second;
        if (!key.IsScalar()) return Fail(key.Mark(), path.empty() ? "(document)" : path, "a key must be a plain word", "");
        const std::string name = key.Scalar();
        const std::string key_path = path.empty() ? name : Cat(path, ".", name);
        if (!seen.insert(name).second) return Fail(key.Mark(), key_path, "duplicate key", "give each key once");
        auto f = std::find_if(fields.begin(), fields.end(), [&](const Field& x) { return x.key == name; });
        if (f == fields.end()) {
          std::string keys;
          for (const Field& x : fields) CatTo(&keys, keys.empty() ? "" : ", ", x.key);
          return Fail(key.Mark(), key_path, "unknown key", Cat("allowed keys: ", keys));
        }
        if (!f->read(key, value, key_path)) return false;
      }
    }
    for (const Field& f : fields) {
      if (!f.required_hint.empty() && seen.count(std::string(f.key)) == 0) {
        return Fail(mark, path.empty() ? std::string(f.key) : Cat(path, ".", f.key), "missing key",
                    f.required_hint);
      }
    }
    return true;
  }

  bool Scalar(const YAML::Node& key, const YAML::Node& v, const std::string& path, std::string* out,
              std::string_view allowed) {
    if (v.IsNull()) return Fail(key.Mark(), path, "missing value", allowed);
    if (!v.IsScalar()) return Fail(v.Mark(), path, "expected a single value", allowed);
    *out = v.Scalar();
    return true;
  }

  bool Uint(const YAML::Node& key, const YAML::Node& v, const std::string& path, uint64_t lo, uint64_t hi,
            uint64_t* out) {
    const std::string allowed = Cat("allowed values: integers ", lo, "..", hi);
    std::string raw;
    if (!Scalar(key, v, path, &raw, allowed)) return false;
    uint64_t x = 0;
    auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), x);
    if (ec != std::errc() || p != raw.data() + raw.size() || raw.empty()) {
      return Fail(v.Mark(), path, Cat(Quote(raw), " is not a decimal integer"), allowed);
    }
    if (x < lo || x > hi) return Fail(v.Mark(), path, Cat(x, " is out of range"), allowed);
    *out = x;
    return true;
  }

  bool Bool(const YAML::Node& key, const YAML::Node& v, const std::string& path, bool* out) {
    constexpr std::string_view kAllowed = "allowed values: true, false";
    std::string raw;
    if (!Scalar(key, v, path, &raw, kAllowed)) return false;
    if (raw == "true") {
      *out = true;
    } else if (raw == "false") {
      *out = false;
    } else {
      return Fail(v.Mark(), path, Cat(Quote(raw), " is not a boolean"), kAllowed);
    }
    return true;
  }

 private:
  std::string source_;
  std::string error_;
};

// Absolute, no empty / "." / ".." components, no trailing slash (but "/").
bool NormalPath(std::string_view p) {
  if (p.empty() || p[0] != '/' || p.find('\0') != std::string_view::npos || p.size() > kMaxPath) return false;
  if (p == "/") return true;
  if (p.back() == '/') return false;
  size_t i = 1;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    const std::string_view c = p.substr(i, j - i);
    if (c.empty() || c == "." || c == "..") return false;
    i = j + 1;
  }
  return true;
}

}  // namespace

bool ParseIpv4(std::string_view text, uint32_t* out) {
  uint32_t v = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (p == end || *p != '.') return false;
      ++p;
    }
    unsigned octet = 0;
    auto [q, ec] = std::from_chars(p, end, octet);
    if (ec != std::errc() || q == p || q - p > 3 || octet > 255) return false;
    p = q;
    v = (v << 8) | octet;
  }
  if (p != end) return false;
  *out = v;
  return true;
}

bool ParseClientPrefix(std::string_view text, ClientPrefix* out) {
  const size_t slash = text.find('/');
  ClientPrefix c;
  if (!ParseIpv4(text.substr(0, slash), &c.address)) return false;
  if (slash != std::string_view::npos) {
    const std::string_view len = text.substr(slash + 1);
    unsigned n = 0;
    auto [q, ec] = std::from_chars(len.data(), len.data() + len.size(), n);
    if (ec != std::errc() || q != len.data() + len.size() || len.empty() || n > 32) return false;
    c.length = static_cast<uint8_t>(n);
    const uint32_t mask = n == 0 ? 0 : ~uint32_t{0} << (32 - n);
    if ((c.address & ~mask) != 0) return false;
  }
  *out = c;
  return true;
}

const Export* NfsdConfig::FindById(uint32_t id) const {
  for (const Export& e : exports) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

const Export* NfsdConfig::FindByPath(std::string_view path) const {
  // MOUNT clients may send a trailing slash.
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  for (const Export& e : exports) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

absl::StatusOr<NfsdConfig> ParseNfsdConfig(std::string_view text, std::string_view source) {
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(Cat(source, ": larger than ", kMaxConfigBytes, " bytes"));
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        Cat(source, ":", Position(e.mark), ": (document): not valid YAML: ", e.msg, "; fix the syntax"));
  }
  NfsdConfig c;
  Loader l(source);
  std::map<uint32_t, YAML::Mark> ids;
  std::map<std::string, YAML::Mark> paths;

  auto listen = [&](const YAML::Node&, const YAML::Node& v, const std::string& path) {
    return l.WalkMap(v, v.Mark(), path,
                     {{"address",
                       [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                         constexpr std::string_view kAllowed = "allowed values: an IPv4 address, 0.0.0.0 for all";
                         std::string raw;
                         if (!l.Scalar(k, x, p, &raw, kAllowed)) return false;
                         if (!ParseIpv4(raw, &c.listen_ipv4)) {
                           return l.Fail(x.Mark(), p, Cat(Quote(raw), " is not an IPv4 address"), kAllowed);
                         }
                         return true;
                       }},
                      {"nfs_port",
                       [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                         uint64_t v64;
                         if (!l.Uint(k, x, p, 0, 65535, &v64)) return false;
                         c.nfs_port = static_cast<uint16_t>(v64);
                         return true;
                       }},
                      {"mount_port", [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                         uint64_t v64;
                         if (!l.Uint(k, x, p, 0, 65535, &v64)) return false;
                         c.mount_port = static_cast<uint16_t>(v64);
                         return true;
                       }}});
  };

  auto rdma = [&](const YAML::Node&, const YAML::Node& v, const std::string& path) {
    c.rdma.enabled = true;
    return l.WalkMap(
        v, v.Mark(), path,
        {{"socket",
          [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
            constexpr std::string_view kAllowed = "allowed values: the absolute path of iwarpd's application socket";
            if (!l.Scalar(k, x, p, &c.rdma.socket, kAllowed)) return false;
            if (!NormalPath(c.rdma.socket)) return l.Fail(x.Mark(), p, Cat(Quote(c.rdma.socket), " is not normal"), kAllowed);
            return true;
          }},
         {"address",
          [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
            constexpr std::string_view kAllowed = "allowed values: an IPv4 address of the daemon, 0.0.0.0 for all";
            std::string raw;
            if (!l.Scalar(k, x, p, &raw, kAllowed)) return false;
            if (!ParseIpv4(raw, &c.rdma.ipv4)) return l.Fail(x.Mark(), p, Cat(Quote(raw), " is not an IPv4 address"), kAllowed);
            return true;
          }},
         {"port",
          [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
            uint64_t v64;
            if (!l.Uint(k, x, p, 1, 65535, &v64)) return false;
            c.rdma.port = static_cast<uint16_t>(v64);
            return true;
          }},
         {"transport",
          [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
            constexpr std::string_view kAllowed = "allowed values: tcp (iWARP over MPA/TCP), sctp (RDMA over SCTP)";
            std::string raw;
            if (!l.Scalar(k, x, p, &raw, kAllowed)) return false;
            if (raw == "tcp") {
              c.rdma.sctp = false;
            } else if (raw == "sctp") {
              c.rdma.sctp = true;
            } else {
              return l.Fail(x.Mark(), p, Cat(Quote(raw), " is not a known transport"), kAllowed);
            }
            return true;
          }},
         {"credits",
          [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
            uint64_t v64;
            if (!l.Uint(k, x, p, 1, 128, &v64)) return false;
            c.rdma.credits = static_cast<uint32_t>(v64);
            return true;
          }},
         {"max_connections", [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
            uint64_t v64;
            if (!l.Uint(k, x, p, 1, 64, &v64)) return false;
            c.rdma.max_connections = static_cast<uint32_t>(v64);
            return true;
          }}});
  };

  auto one_export = [&](const YAML::Node& item, const std::string& path, Export* e) {
    bool have_id = false;
    YAML::Mark path_mark = item.Mark();
    if (!l.WalkMap(
            item, item.Mark(), path,
            {{"path",
              [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                constexpr std::string_view kAllowed = "allowed values: an absolute directory path without '.', '..' "
                                                      "or a trailing '/'";
                if (!l.Scalar(k, x, p, &e->path, kAllowed)) return false;
                path_mark = x.Mark();
                if (!NormalPath(e->path)) return l.Fail(x.Mark(), p, Cat(Quote(e->path), " is not normal"), kAllowed);
                if (!paths.emplace(e->path, x.Mark()).second) {
                  return l.Fail(x.Mark(), p, Cat(Quote(e->path), " is exported twice"),
                                Cat("first at line ", paths[e->path].line + 1, "; give each path once"));
                }
                return true;
              },
              "add 'path: /srv/data' (the directory to export)"},
             {"id",
              [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                uint64_t v64;
                if (!l.Uint(k, x, p, 1, 0xffffffffu, &v64)) return false;
                e->id = static_cast<uint32_t>(v64);
                have_id = true;
                if (!ids.emplace(e->id, x.Mark()).second) {
                  return l.Fail(x.Mark(), p, Cat("export id ", e->id, " is used twice"), "give each export its own id");
                }
                return true;
              }},
             {"clients",
              [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                constexpr std::string_view kAllowed = "allowed values: a list of IPv4 addresses or prefixes "
                                                      "(A.B.C.D or A.B.C.D/LEN, host bits zero)";
                if (x.IsNull()) return l.Fail(k.Mark(), p, "missing value", kAllowed);
                if (!x.IsSequence()) return l.Fail(x.Mark(), p, "expected a list", kAllowed);
                if (x.size() == 0) return l.Fail(x.Mark(), p, "the list is empty", kAllowed);
                if (x.size() > kMaxClients) return l.Fail(x.Mark(), p, "too many entries", kAllowed);
                for (size_t i = 0; i < x.size(); ++i) {
                  const std::string ip = Cat(p, "[", i, "]");
                  std::string raw;
                  if (!l.Scalar(x[i], x[i], ip, &raw, kAllowed)) return false;
                  ClientPrefix cp;
                  if (!ParseClientPrefix(raw, &cp)) {
                    return l.Fail(x[i].Mark(), ip, Cat(Quote(raw), " is not an IPv4 address or prefix"), kAllowed);
                  }
                  e->clients.push_back(cp);
                }
                return true;
              },
              "add 'clients: [127.0.0.1]' (who may mount it)"},
             {"access",
              [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                constexpr std::string_view kAllowed = "allowed values: rw, ro";
                std::string raw;
                if (!l.Scalar(k, x, p, &raw, kAllowed)) return false;
                if (raw != "rw" && raw != "ro") return l.Fail(x.Mark(), p, Cat(Quote(raw), " is not a known value"), kAllowed);
                e->read_only = raw == "ro";
                return true;
              }},
             {"root_squash",
              [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) { return l.Bool(k, x, p, &e->root_squash); }},
             {"anon_uid",
              [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                uint64_t v64;
                if (!l.Uint(k, x, p, 0, 0xfffffffeu, &v64)) return false;
                e->anon_uid = static_cast<uint32_t>(v64);
                return true;
              }},
             {"anon_gid", [&](const YAML::Node& k, const YAML::Node& x, const std::string& p) {
                uint64_t v64;
                if (!l.Uint(k, x, p, 0, 0xfffffffeu, &v64)) return false;
                e->anon_gid = static_cast<uint32_t>(v64);
                return true;
              }}})) {
      return false;
    }
    if (!have_id) {
      // Derived from the path, so it is the same on every start.
      const auto d = Sha256::Hash(ByteSpan(reinterpret_cast<const uint8_t*>(e->path.data()), e->path.size()));
      e->id = LoadBe32(d.data()) | 0x80000000u;  // configured ids below 2^31 never collide with these
      if (!ids.emplace(e->id, path_mark).second) {
        return l.Fail(path_mark, path + ".id", "the id derived from the path collides with another export",
                      "set 'id:' explicitly");
      }
    }
    return true;
  };

  const bool ok = l.WalkMap(
      root, root.Mark(), "",
      {{"version",
        [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
          uint64_t x;
          return l.Uint(k, v, p, 1, 1, &x);
        },
        "add 'version: 1' as the first line"},
       {"listen", listen},
       {"rdma", rdma},
       {"state_dir",
        [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
          constexpr std::string_view kAllowed = "allowed values: an absolute directory path";
          if (!l.Scalar(k, v, p, &c.state_dir, kAllowed)) return false;
          if (!NormalPath(c.state_dir)) return l.Fail(v.Mark(), p, Cat(Quote(c.state_dir), " is not normal"), kAllowed);
          return true;
        }},
       {"stats_file",
        [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
          constexpr std::string_view kAllowed = "allowed values: an absolute file path";
          if (!l.Scalar(k, v, p, &c.stats_file, kAllowed)) return false;
          if (!NormalPath(c.stats_file)) return l.Fail(v.Mark(), p, Cat(Quote(c.stats_file), " is not normal"), kAllowed);
          return true;
        }},
       {"io_threads",
        [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
          uint64_t x;
          if (!l.Uint(k, v, p, 1, 64, &x)) return false;
          c.io_threads = static_cast<uint32_t>(x);
          return true;
        }},
       {"rpcbind",
        [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
          constexpr std::string_view kAllowed = "allowed values: auto, on, off";
          std::string raw;
          if (!l.Scalar(k, v, p, &raw, kAllowed)) return false;
          if (raw == "auto") {
            c.rpcbind = RpcbindMode::kAuto;
          } else if (raw == "on") {
            c.rpcbind = RpcbindMode::kOn;
          } else if (raw == "off") {
            c.rpcbind = RpcbindMode::kOff;
          } else {
            return l.Fail(v.Mark(), p, Cat(Quote(raw), " is not a known value"), kAllowed);
          }
          return true;
        }},
       {"exports",
        [&](const YAML::Node& k, const YAML::Node& v, const std::string& p) {
          constexpr std::string_view kAllowed = "a list of exports, each with path and clients";
          if (v.IsNull()) return l.Fail(k.Mark(), p, "missing value", kAllowed);
          if (!v.IsSequence()) return l.Fail(v.Mark(), p, "expected a list", kAllowed);
          if (v.size() == 0) return l.Fail(v.Mark(), p, "the list is empty", kAllowed);
          if (v.size() > kMaxExports) return l.Fail(v.Mark(), p, "too many exports", "at most 256");
          for (size_t i = 0; i < v.size(); ++i) {
            Export e;
            if (!one_export(v[i], Cat(p, "[", i, "]"), &e)) return false;
            c.exports.push_back(std::move(e));
          }
          return true;
        },
        "add an 'exports:' list"}});
  if (!ok) return absl::InvalidArgumentError(l.error());
  if (c.nfs_port != 0 && c.nfs_port == c.mount_port) {
    return absl::InvalidArgumentError(Cat(source, ":1:1: listen.mount_port: equals listen.nfs_port ", c.nfs_port,
                                                   "; give MOUNT its own port (e.g. 20048)"));
  }
  return c;
}

absl::StatusOr<NfsdConfig> LoadNfsdConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(Cat(path, ": cannot open: ", strerror(errno)));
  std::string text;
  text.resize(kMaxConfigBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return ParseNfsdConfig(text, path);
}

absl::Status CheckExportsOnHost(const NfsdConfig& config) {
  for (size_t i = 0; i < config.exports.size(); ++i) {
    const Export& e = config.exports[i];
    const int fd = open(e.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(Cat("exports[", i, "].path: ", e.path, ": ", strerror(errno),
                                              "; create the directory or fix the path"));
    }
    alignas(struct file_handle) unsigned char buf[sizeof(struct file_handle) + 128];
    auto* fh = reinterpret_cast<struct file_handle*>(buf);
    fh->handle_bytes = 128;
    int mount_id = 0;
    const int rc = name_to_handle_at(fd, "", fh, &mount_id, AT_EMPTY_PATH);
    const int err = errno;
    close(fd);
    if (rc != 0) {
      return absl::FailedPreconditionError(Cat("exports[", i, "].path: ", e.path,
                                                        ": the file system gives no file handles (name_to_handle_at: ",
                                                        strerror(err), "); export a directory on ext4, xfs, btrfs or tmpfs"));
    }
    if (fh->handle_bytes > kMaxKernelHandle) {
      return absl::FailedPreconditionError(Cat("exports[", i, "].path: ", e.path, ": file handles of ",
                                                        fh->handle_bytes, " bytes exceed the ", kMaxKernelHandle,
                                                        " that fit an NFSv3 handle with its MAC"));
    }
  }
  return absl::OkStatus();
}

}  // namespace iwarp::nfs
