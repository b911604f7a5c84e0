// Message building for the control path. Debian's Abseil does not take
// std::string_view in StrCat (its absl::string_view is its own type), so the
// nfs/ code concatenates with this instead.
#ifndef IWARPD_NFS_TEXT_H_
#define IWARPD_NFS_TEXT_H_

#include <concepts>
#include <string>
#include <string_view>

namespace iwarp::nfs {

inline void CatOne(std::string* out, std::string_view s) { out->append(s); }
inline void CatOne(std::string* out, const char* s) { out->append(s); }
inline void CatOne(std::string* out, const std::string& s) { out->append(s); }
inline void CatOne(std::string* out, char c) { out->push_back(c); }
template <std::integral T>
void CatOne(std::string* out, T v) {
  out->append(std::to_string(v));
}

template <typename... A>
void CatTo(std::string* out, const A&... a) {
  (CatOne(out, a), ...);
}
template <typename... A>
std::string Cat(const A&... a) {
  std::string out;
  CatTo(&out, a...);
  return out;
}

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_TEXT_H_
