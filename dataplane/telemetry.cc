#include "dataplane/telemetry.h"

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/l3/ipv4.h"

namespace iwarp::dataplane {
namespace {

std::atomic<const TelemetryView*> g_view{nullptr};
std::atomic<int> g_inflight{0};

// Pins the published view for the duration of one callback.
class ViewPin {
 public:
  ViewPin() {
    g_inflight.fetch_add(1, std::memory_order_seq_cst);
    view_ = g_view.load(std::memory_order_seq_cst);
  }
  ~ViewPin() { g_inflight.fetch_sub(1, std::memory_order_seq_cst); }
  const TelemetryView* get() const { return view_; }

 private:
  const TelemetryView* view_;
};

// Telemetry names allow [A-Za-z0-9_/] only.
void AddCounters(rte_tel_data* d, std::span<const LcoreStats> stats) {
#define IWARP_ADD_COUNTER(member, name)                     \
  {                                                         \
    uint64_t v = 0;                                         \
    for (const LcoreStats& s : stats) v += s.member.Get();  \
    rte_tel_data_add_dict_u64(d, name, v);                  \
  }
  IWARP_LCORE_COUNTERS(IWARP_ADD_COUNTER)
#undef IWARP_ADD_COUNTER
  uint64_t total = 0;
  for (const LcoreStats& s : stats) total += s.DroppedTotal();
  rte_tel_data_add_dict_u64(d, "drops", total);
  for (size_t r = 1; r < kNumDropReasons; ++r) {
    uint64_t v = 0;
    for (const LcoreStats& s : stats) v += s.drops[r].Get();
    const std::string key = "drop_" + std::string(DropReasonName(static_cast<DropReason>(r)));
    rte_tel_data_add_dict_u64(d, key.c_str(), v);
  }
}

int StatsCommand(const char*, const char*, rte_tel_data* d) {
  ViewPin pin;
  const TelemetryView* v = pin.get();
  if (v == nullptr) return -EAGAIN;
  rte_tel_data_start_dict(d);
  rte_tel_data* lcores = rte_tel_data_alloc();
  if (lcores == nullptr) return -ENOMEM;
  rte_tel_data_start_array(lcores, RTE_TEL_U64_VAL);
  for (uint32_t l : v->lcores) rte_tel_data_add_array_u64(lcores, l);
  rte_tel_data_add_dict_container(d, "lcores", lcores, 0);
  for (size_t i = 0; i < v->lcores.size(); ++i) {
    rte_tel_data* c = rte_tel_data_alloc();
    if (c == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(c);
    AddCounters(c, v->stats.subspan(i, 1));
    const std::string key = absl::StrCat("lcore_", v->lcores[i]);
    rte_tel_data_add_dict_container(d, key.c_str(), c, 0);
  }
  rte_tel_data* total = rte_tel_data_alloc();
  if (total == nullptr) return -ENOMEM;
  rte_tel_data_start_dict(total);
  AddCounters(total, v->stats);
  rte_tel_data_add_dict_container(d, "total", total, 0);
  return 0;
}

int PortsCommand(const char*, const char*, rte_tel_data* d) {
  ViewPin pin;
  const TelemetryView* v = pin.get();
  if (v == nullptr) return -EAGAIN;
  rte_tel_data_start_dict(d);
  rte_tel_data* ids = rte_tel_data_alloc();
  if (ids == nullptr) return -ENOMEM;
  rte_tel_data_start_array(ids, RTE_TEL_U64_VAL);
  for (const PortRuntime& p : v->ports) rte_tel_data_add_array_u64(ids, p.port_id);
  rte_tel_data_add_dict_container(d, "port_ids", ids, 0);
  for (const PortRuntime& p : v->ports) {
    rte_tel_data* c = rte_tel_data_alloc();
    if (c == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(c);
    rte_tel_data_add_dict_string(c, "name", p.name.c_str());
    rte_tel_data_add_dict_string(c, "ethdev", p.ethdev.c_str());
    rte_tel_data_add_dict_string(c, "driver", p.driver.c_str());
    rte_tel_data_add_dict_string(c, "mac", p.mac.ToString().c_str());
    std::vector<std::string> addrs;
    for (const InterfaceAddress& a : p.addrs) {
      addrs.push_back(absl::StrCat(Ipv4ToString(a.addr), "/", a.prefix_len));
    }
    rte_tel_data_add_dict_string(c, "ipv4", absl::StrJoin(addrs, ",").c_str());
    rte_tel_data_add_dict_string(c, "gateway", p.gateway ? Ipv4ToString(p.gateway).c_str() : "");
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(p.port_id, &link) == 0) {
      rte_tel_data_add_dict_string(c, "link", link.link_status ? "up" : "down");
      rte_tel_data_add_dict_u64(c, "speed_mbps", link.link_speed);
      rte_tel_data_add_dict_string(c, "duplex", link.link_duplex ? "full" : "half");
    }
    rte_tel_data_add_dict_u64(c, "mtu", p.mtu);
    rte_tel_data_add_dict_u64(c, "socket", static_cast<uint64_t>(p.socket));
    rte_tel_data_add_dict_u64(c, "rx_queues", p.nb_rxq);
    rte_tel_data_add_dict_u64(c, "tx_queues", p.nb_txq);
    rte_tel_data_add_dict_u64(c, "rx_descriptors", p.nb_rxd);
    rte_tel_data_add_dict_u64(c, "tx_descriptors", p.nb_txd);
    rte_tel_data_add_dict_string(c, "steering", SteeringName(p.steering));
    rte_eth_stats st{};
    if (rte_eth_stats_get(p.port_id, &st) == 0) {
      rte_tel_data_add_dict_u64(c, "ipackets", st.ipackets);
      rte_tel_data_add_dict_u64(c, "opackets", st.opackets);
      rte_tel_data_add_dict_u64(c, "ibytes", st.ibytes);
      rte_tel_data_add_dict_u64(c, "obytes", st.obytes);
      rte_tel_data_add_dict_u64(c, "imissed", st.imissed);
      rte_tel_data_add_dict_u64(c, "ierrors", st.ierrors);
      rte_tel_data_add_dict_u64(c, "oerrors", st.oerrors);
      rte_tel_data_add_dict_u64(c, "rx_nombuf", st.rx_nombuf);
    }
    const std::string key = absl::StrCat("port_", p.port_id);
    rte_tel_data_add_dict_container(d, key.c_str(), c, 0);
  }
  return 0;
}

}  // namespace

absl::Status RegisterTelemetryCommands() {
  int rc = rte_telemetry_register_cmd(
      "/iwarpd/stats", StatsCommand,
      "Per-lcore and total packet, protocol and drop counters. Takes no parameters.");
  if (rc == 0) {
    rc = rte_telemetry_register_cmd(
        "/iwarpd/ports", PortsCommand,
        "Ports: MAC, addresses, link, queues, steering and ethdev stats. Takes no parameters.");
  }
  if (rc != 0) return absl::InternalError(absl::StrCat("telemetry registration failed: ", rc));
  return absl::OkStatus();
}

void PublishTelemetryView(const TelemetryView* view) {
  g_view.store(view, std::memory_order_seq_cst);
}

void RetractTelemetryView() {
  g_view.store(nullptr, std::memory_order_seq_cst);
  while (g_inflight.load(std::memory_order_seq_cst) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace iwarp::dataplane
