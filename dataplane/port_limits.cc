#include "dataplane/port_limits.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace iwarp::dataplane {

uint32_t L2Overhead(const DeviceFrameLimits& dev) {
  if (dev.max_mtu != kUnlimitedMtu && dev.max_rx_pktlen > dev.max_mtu) {
    return dev.max_rx_pktlen - dev.max_mtu;
  }
  return kDefaultL2Overhead;
}

uint32_t VirtioUserQueueSize(std::string_view vdev) {
  constexpr std::string_view kKey = "queue_size=";
  constexpr uint32_t kDefault = 256;
  for (size_t at = vdev.find(kKey); at != std::string_view::npos; at = vdev.find(kKey, at + 1)) {
    if (at == 0 || vdev[at - 1] != ',') continue;  // another key ending in queue_size
    const size_t from = at + kKey.size();
    uint32_t n = 0;
    const size_t end = vdev.find(',', from);
    const std::string_view value =
        vdev.substr(from, end == std::string_view::npos ? end : end - from);
    if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &n) || n < 8) {
      return kDefault;
    }
    return n;
  }
  return kDefault;
}

uint32_t DeviceMaxMtu(const DeviceFrameLimits& dev) {
  const uint32_t overhead = L2Overhead(dev);
  const uint32_t by_frame = dev.max_rx_pktlen > overhead ? dev.max_rx_pktlen - overhead : 0;
  return std::min(dev.max_mtu, by_frame);
}

absl::Status CheckPortMtu(const std::string& port, const std::string& driver, uint32_t mtu,
                          const DeviceFrameLimits& dev) {
  const uint32_t overhead = L2Overhead(dev);
  const uint32_t frame = mtu + overhead;
  const uint32_t max_mtu = DeviceMaxMtu(dev);
  if (mtu < dev.min_mtu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "port '", port, "' (", driver, "): mtu ", mtu, " is below the device's minimum ",
        dev.min_mtu, "; raise ports[].mtu to at least ", dev.min_mtu));
  }
  if (frame > dev.max_rx_pktlen || mtu > dev.max_mtu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "port '", port, "' (", driver, "): mtu ", mtu, " needs ", frame, "-byte frames but ",
        driver, " accepts at most ", std::min(dev.max_rx_pktlen, max_mtu + overhead), " (mtu ",
        max_mtu, "); lower ports[].mtu to ", max_mtu,
        " or use a device that carries jumbo frames (a NIC; between two processes "
        "net_vhost and net_virtio_user; or net_pcap on a veth pair with "
        "iface=IF,phy_mac=1)"));
  }
  return absl::OkStatus();
}

uint32_t MbufDataRoomFor(uint32_t mtu, uint32_t l2_overhead, uint32_t headroom,
                         uint32_t configured_data_room) {
  const uint32_t need = headroom + mtu + l2_overhead;
  return std::min<uint32_t>(0xffff, std::max(configured_data_room, need));
}

}  // namespace iwarp::dataplane
