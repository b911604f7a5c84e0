#include "dataplane/telemetry.h"

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/app_interface.h"
#include "dataplane/l3/ipv4.h"
#include "dataplane/worker.h"

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
    rte_tel_data_add_dict_string(c, "tso", p.tso ? "on" : "off");
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

// Snapshots are requested one at a time (each worker has one buffer).
std::mutex g_snapshot_mu;
constexpr uint32_t kSnapshotTimeoutMs = 1000;
constexpr size_t kTransfersPerService = 24;

// Fills `out` with one snapshot per worker (nullptr where the worker did not
// answer: not running, or TCP disabled).
void TakeSnapshots(const TelemetryView& v, std::vector<const TcpSnapshot*>* out) {
  out->clear();
  for (Worker* w : v.workers) {
    const TcpSnapshot* s = w->RequestTcpSnapshot(kSnapshotTimeoutMs);
    out->push_back(s != nullptr && s->enabled ? s : nullptr);
  }
}

void AddTcpCounters(rte_tel_data* d, std::span<const TcpSnapshot* const> snaps) {
  tcp::TcpStackStats sum;
  for (const TcpSnapshot* s : snaps) {
    if (s == nullptr) continue;
#define IWARP_SUM_TCP(field, name) sum.field += s->stats.field;
    IWARP_TCP_STACK_COUNTERS(IWARP_SUM_TCP)
#undef IWARP_SUM_TCP
    for (size_t r = 0; r < kNumDropReasons; ++r) sum.drops[r] += s->stats.drops[r];
  }
  sum.ForEachCounter([d](std::string_view name, uint64_t v) {
    rte_tel_data_add_dict_u64(d, std::string(name).c_str(), v);
  });
  for (size_t r = 1; r < kNumDropReasons; ++r) {
    const std::string_view name = DropReasonName(static_cast<DropReason>(r));
    if (name.substr(0, 4) != "tcp_") continue;
    const std::string key = "drop_" + std::string(name);
    rte_tel_data_add_dict_u64(d, key.c_str(), sum.drops[r]);
  }
}

int TcpCommand(const char*, const char*, rte_tel_data* d) {
  ViewPin pin;
  const TelemetryView* v = pin.get();
  if (v == nullptr) return -EAGAIN;
  std::lock_guard<std::mutex> lock(g_snapshot_mu);
  std::vector<const TcpSnapshot*> snaps;
  TakeSnapshots(*v, &snaps);
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "enabled",
                               v->config != nullptr && v->config->tcp.enabled ? "yes" : "no");
  rte_tel_data* lcores = rte_tel_data_alloc();
  if (lcores == nullptr) return -ENOMEM;
  rte_tel_data_start_array(lcores, RTE_TEL_U64_VAL);
  for (uint32_t l : v->lcores) rte_tel_data_add_array_u64(lcores, l);
  rte_tel_data_add_dict_container(d, "lcores", lcores, 0);
  for (size_t i = 0; i < snaps.size() && i < v->lcores.size(); ++i) {
    rte_tel_data* c = rte_tel_data_alloc();
    if (c == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(c);
    AddTcpCounters(c, std::span<const TcpSnapshot* const>(&snaps[i], 1));
    rte_tel_data_add_dict_u64(c, "connections", snaps[i] != nullptr ? snaps[i]->conn_count : 0);
    const std::string key = absl::StrCat("lcore_", v->lcores[i]);
    rte_tel_data_add_dict_container(d, key.c_str(), c, 0);
  }
  rte_tel_data* total = rte_tel_data_alloc();
  if (total == nullptr) return -ENOMEM;
  rte_tel_data_start_dict(total);
  AddTcpCounters(total, snaps);
  uint64_t conns = 0;
  for (const TcpSnapshot* s : snaps) conns += s != nullptr ? s->conn_count : 0;
  rte_tel_data_add_dict_u64(total, "connections", conns);
  rte_tel_data_add_dict_container(d, "total", total, 0);
  return 0;
}

// The paging parameter of /iwarpd/connections and /iwarpd/qps: the index of
// the first entry to show, decimal; absent or empty means 0.
bool ParseFirstIndex(const char* params, size_t* first) {
  *first = 0;
  if (params == nullptr || *params == '\0') return true;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(params, &end, 10);
  if (end == params || *end != '\0') return false;
  *first = static_cast<size_t>(x);
  return true;
}

std::string TupleText(uint32_t addr, uint16_t port) {
  return absl::StrCat(Ipv4ToString(addr), ":", port);
}

int ConnectionsCommand(const char*, const char* params, rte_tel_data* d) {
  ViewPin pin;
  const TelemetryView* v = pin.get();
  if (v == nullptr) return -EAGAIN;
  size_t first = 0;
  if (!ParseFirstIndex(params, &first)) return -EINVAL;
  std::lock_guard<std::mutex> lock(g_snapshot_mu);
  std::vector<const TcpSnapshot*> snaps;
  TakeSnapshots(*v, &snaps);
  size_t total = 0;
  for (const TcpSnapshot* s : snaps) total += s != nullptr ? s->conn_count : 0;
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_u64(d, "total", total);
  rte_tel_data_add_dict_u64(d, "first", first);
  size_t index = 0, shown = 0;
  for (size_t w = 0; w < snaps.size(); ++w) {
    const TcpSnapshot* s = snaps[w];
    if (s == nullptr) continue;
    for (size_t i = 0; i < s->conn_count; ++i, ++index) {
      if (index < first || shown == kConnectionsPerReply) continue;
      const tcp::TcpConnInfo& c = s->conns[i];
      rte_tel_data* e = rte_tel_data_alloc();
      if (e == nullptr) return -ENOMEM;
      rte_tel_data_start_dict(e);
      rte_tel_data_add_dict_u64(e, "lcore", v->lcores[w]);
      rte_tel_data_add_dict_string(e, "local",
                                   TupleText(c.tuple.local_addr, c.tuple.local_port).c_str());
      rte_tel_data_add_dict_string(e, "remote",
                                   TupleText(c.tuple.remote_addr, c.tuple.remote_port).c_str());
      rte_tel_data_add_dict_string(e, "state", std::string(tcp::TcpStateName(c.state)).c_str());
      const int16_t svc = s->conn_service[i];
      rte_tel_data_add_dict_string(
          e, "service",
          svc >= 0 && v->config != nullptr && static_cast<size_t>(svc) < v->config->services.size()
              ? v->config->services[static_cast<size_t>(svc)].name.c_str()
              : "");
      rte_tel_data_add_dict_u64(e, "bytes_in", c.bytes_in);
      rte_tel_data_add_dict_u64(e, "bytes_out", c.bytes_out);
      rte_tel_data_add_dict_u64(e, "segs_in", c.segments_in);
      rte_tel_data_add_dict_u64(e, "segs_out", c.segments_out);
      rte_tel_data_add_dict_u64(e, "retrans", c.retransmitted_segments);
      rte_tel_data_add_dict_u64(e, "timeouts", c.timeouts);
      rte_tel_data_add_dict_u64(e, "srtt_us", c.srtt_us);
      rte_tel_data_add_dict_u64(e, "rto_us", c.rto_us);
      rte_tel_data_add_dict_u64(e, "cwnd", c.cwnd);
      rte_tel_data_add_dict_u64(e, "snd_wnd", c.snd_wnd);
      rte_tel_data_add_dict_u64(e, "unacked", c.unacked_bytes);
      // Negotiated options (RFC 2018, RFC 7323): "sack ts wscale:SND,RCV".
      rte_tel_data_add_dict_string(
          e, "options",
          absl::StrCat(c.sack ? "sack " : "", c.timestamps ? "ts " : "", "wscale:", c.snd_wscale,
                       ",", c.rcv_wscale)
              .c_str());
      const std::string key = absl::StrCat("conn_", index);
      rte_tel_data_add_dict_container(d, key.c_str(), e, 0);
      ++shown;
    }
  }
  rte_tel_data_add_dict_u64(d, "shown", shown);
  return 0;
}

std::string TermText(bool has, const rdmap::TerminateCode& t) {
  if (!has) return "-";
  return absl::StrCat("layer ", t.layer, " etype ", t.etype, " code ", t.code);
}

// The iWARP counters and client result of service `i`, summed over workers
// (nothing for plain TCP services).
void AddIwarpServiceFields(rte_tel_data* c, std::span<const TcpSnapshot* const> snaps, size_t i) {
  IwarpServiceCounters sum;
  IwarpRunResult run;
  std::optional<rdmap::TerminateCode> term_sent, term_received;
  IwarpService::TestRegion region;
  bool iwarp = false;
  for (const TcpSnapshot* s : snaps) {
    if (s == nullptr || i >= s->services.size() || !s->services[i].iwarp) continue;
    iwarp = true;
    const TcpSnapshot::Service& ss = s->services[i];
#define IWARP_SVC_SUM(f) sum.f += ss.iwarp_counters.f;
    IWARP_SERVICE_COUNTERS(IWARP_SVC_SUM)
#undef IWARP_SVC_SUM
    if (ss.run.started) run = ss.run;  // a client runs on one worker
    if (ss.term_sent) term_sent = ss.term_sent;
    if (ss.term_received) term_received = ss.term_received;
    if (ss.test_region.present) region = ss.test_region;
  }
  if (!iwarp) return;
#define IWARP_SVC_TEL(f) rte_tel_data_add_dict_u64(c, #f, sum.f);
  IWARP_SERVICE_COUNTERS(IWARP_SVC_TEL)
#undef IWARP_SVC_TEL
  if (region.present) {
    rte_tel_data_add_dict_u64(c, "test_stag", region.stag);
    rte_tel_data_add_dict_u64(c, "test_to", region.to);
    rte_tel_data_add_dict_u64(c, "test_region_bytes", region.length);
  }
  rte_tel_data_add_dict_string(
      c, "last_terminate_sent",
      TermText(term_sent.has_value(), term_sent.value_or(rdmap::TerminateCode{})).c_str());
  rte_tel_data_add_dict_string(
      c, "last_terminate_received",
      TermText(term_received.has_value(), term_received.value_or(rdmap::TerminateCode{})).c_str());
  if (!run.started) return;
  rte_tel_data_add_dict_string(c, "run", run.finished ? (run.ok ? "ok" : "failed") : "running");
  rte_tel_data_add_dict_u64(c, "run_messages", run.messages);
  rte_tel_data_add_dict_u64(c, "run_bytes", run.bytes);
  rte_tel_data_add_dict_u64(c, "run_elapsed_us", run.elapsed_us);
  // Payload goodput of the run, megabits per second (bytes * 8 / us).
  rte_tel_data_add_dict_u64(c, "run_goodput_mbps",
                            run.elapsed_us != 0 ? run.bytes * 8 / run.elapsed_us : 0);
  rte_tel_data_add_dict_u64(c, "run_messages_per_s",
                            run.elapsed_us != 0 ? run.messages * 1000000 / run.elapsed_us : 0);
  rte_tel_data_add_dict_string(c, "run_sha256",
                               run.finished && run.has_sha256 ? ToHex(run.sha256).c_str() : "-");
  rte_tel_data_add_dict_string(c, "run_connect_error",
                               std::string(engine::ConnectErrorName(run.connect_error)).c_str());
}

// iWARP QPs with a connection, kQpsPerReply from index FIRST (the parameter,
// default 0) in worker then service order.
int QpsCommand(const char*, const char* params, rte_tel_data* d) {
  ViewPin pin;
  const TelemetryView* v = pin.get();
  if (v == nullptr || v->config == nullptr) return -EAGAIN;
  size_t first = 0;
  if (!ParseFirstIndex(params, &first)) return -EINVAL;
  std::lock_guard<std::mutex> lock(g_snapshot_mu);
  std::vector<const TcpSnapshot*> snaps;
  TakeSnapshots(*v, &snaps);
  size_t total = 0;
  for (const TcpSnapshot* s : snaps) total += s != nullptr ? s->qp_count : 0;
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_u64(d, "total", total);
  rte_tel_data_add_dict_u64(d, "first", first);
  size_t index = 0, shown = 0;
  for (size_t w = 0; w < snaps.size(); ++w) {
    const TcpSnapshot* s = snaps[w];
    if (s == nullptr) continue;
    for (size_t i = 0; i < s->qp_count; ++i, ++index) {
      if (index < first || shown == kQpsPerReply) continue;
      const IwarpQpInfo& q = s->qps[i];
      rte_tel_data* e = rte_tel_data_alloc();
      if (e == nullptr) return -ENOMEM;
      rte_tel_data_start_dict(e);
      rte_tel_data_add_dict_u64(e, "lcore", v->lcores[w]);
      rte_tel_data_add_dict_string(
          e, "service",
          q.service >= 0 && static_cast<size_t>(q.service) < v->config->services.size()
              ? v->config->services[static_cast<size_t>(q.service)].name.c_str()
              : "");
      rte_tel_data_add_dict_string(e, "state", std::string(engine::QpStateName(q.state)).c_str());
      rte_tel_data_add_dict_string(e, "end", std::string(engine::QpEndName(q.end)).c_str());
      rte_tel_data_add_dict_string(e, "local",
                                   TupleText(q.tuple.local_addr, q.tuple.local_port).c_str());
      rte_tel_data_add_dict_string(e, "remote",
                                   TupleText(q.tuple.remote_addr, q.tuple.remote_port).c_str());
      const engine::Negotiated& n = q.negotiated;
      rte_tel_data_add_dict_u64(e, "mpa_revision", n.revision);
      rte_tel_data_add_dict_u64(e, "crc", n.crc ? 1 : 0);
      rte_tel_data_add_dict_u64(e, "tx_markers", n.tx_markers ? 1 : 0);
      rte_tel_data_add_dict_u64(e, "rx_markers", n.rx_markers ? 1 : 0);
      rte_tel_data_add_dict_u64(e, "enhanced", n.enhanced ? 1 : 0);
      rte_tel_data_add_dict_u64(e, "ird", n.ird);
      rte_tel_data_add_dict_u64(e, "ord", n.ord);
      rte_tel_data_add_dict_string(e, "rtr",
                                   n.rtr == engine::kRtrWrite  ? "write"
                                   : n.rtr == engine::kRtrRead ? "read"
                                   : n.rtr == engine::kRtrSend ? "send"
                                                               : "none");
#define IWARP_QP_TEL(f) rte_tel_data_add_dict_u64(e, #f, q.stats.f);
      IWARP_QP_COUNTERS(IWARP_QP_TEL)
#undef IWARP_QP_TEL
      rte_tel_data_add_dict_string(e, "terminate_sent",
                                   TermText(q.has_term_sent, q.term_sent).c_str());
      rte_tel_data_add_dict_string(e, "terminate_received",
                                   TermText(q.has_term_received, q.term_received).c_str());
      rte_tel_data_add_dict_container(d, absl::StrCat("qp_", index).c_str(), e, 0);
      ++shown;
    }
  }
  rte_tel_data_add_dict_u64(d, "shown", shown);
  return 0;
}

int ServicesCommand(const char*, const char*, rte_tel_data* d) {
  ViewPin pin;
  const TelemetryView* v = pin.get();
  if (v == nullptr || v->config == nullptr) return -EAGAIN;
  std::lock_guard<std::mutex> lock(g_snapshot_mu);
  std::vector<const TcpSnapshot*> snaps;
  TakeSnapshots(*v, &snaps);
  rte_tel_data_start_dict(d);
  rte_tel_data* names = rte_tel_data_alloc();
  if (names == nullptr) return -ENOMEM;
  rte_tel_data_start_array(names, RTE_TEL_STRING_VAL);
  for (const config::ServiceConfig& sc : v->config->services) {
    rte_tel_data_add_array_string(names, sc.name.c_str());
  }
  rte_tel_data_add_dict_container(d, "names", names, 0);
  for (size_t i = 0; i < v->config->services.size(); ++i) {
    const config::ServiceConfig& sc = v->config->services[i];
    ServiceCounters sum;
    // Finished transfers of every worker, as "bytes sha256|- complete|reason
    // remote" strings (telemetry strings hold 128 bytes), the newest
    // kTransfersPerService in all.
    rte_tel_data* transfers = rte_tel_data_alloc();
    if (transfers == nullptr) return -ENOMEM;
    rte_tel_data_start_array(transfers, RTE_TEL_STRING_VAL);
    for (const TcpSnapshot* s : snaps) {
      if (s == nullptr || i >= s->services.size()) continue;
      const TcpSnapshot::Service& ss = s->services[i];
      sum.accepted += ss.counters.accepted;
      sum.connected += ss.counters.connected;
      sum.connect_failed += ss.counters.connect_failed;
      sum.closed += ss.counters.closed;
      sum.closed_abnormal += ss.counters.closed_abnormal;
      sum.bytes_in += ss.counters.bytes_in;
      sum.bytes_out += ss.counters.bytes_out;
      sum.active += ss.counters.active;
      const size_t from =
          ss.recent_count > kTransfersPerService ? ss.recent_count - kTransfersPerService : 0;
      for (size_t r = from; r < ss.recent_count; ++r) {
        const TransferRecord& t = ss.recent[r];
        const std::string line = absl::StrCat(
            t.bytes, " ", t.has_sha256 ? ToHex(t.sha256) : std::string("-"), " ",
            t.complete ? std::string("complete") : std::string(tcp::CloseReasonName(t.reason)),
            " ", TupleText(t.tuple.remote_addr, t.tuple.remote_port));
        rte_tel_data_add_array_string(transfers, line.c_str());
      }
    }
    rte_tel_data* c = rte_tel_data_alloc();
    if (c == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(c);
    rte_tel_data_add_dict_string(c, "type", std::string(config::ToString(sc.type)).c_str());
    const bool active =
        sc.type == config::ServiceType::kSource || sc.type == config::ServiceType::kIwarpClient;
    rte_tel_data_add_dict_u64(c, "port", active ? sc.remote_port : sc.port);
    rte_tel_data_add_dict_u64(c, "accepted", sum.accepted);
    rte_tel_data_add_dict_u64(c, "connected", sum.connected);
    rte_tel_data_add_dict_u64(c, "connect_failed", sum.connect_failed);
    rte_tel_data_add_dict_u64(c, "active", sum.active);
    rte_tel_data_add_dict_u64(c, "closed", sum.closed);
    rte_tel_data_add_dict_u64(c, "closed_abnormal", sum.closed_abnormal);
    rte_tel_data_add_dict_u64(c, "bytes_in", sum.bytes_in);
    rte_tel_data_add_dict_u64(c, "bytes_out", sum.bytes_out);
    rte_tel_data_add_dict_string(c, "name", sc.name.c_str());
    AddIwarpServiceFields(c, snaps, i);
    // Containers do not nest deeper than one level: the transfers are a
    // top-level entry of their own.
    rte_tel_data_add_dict_container(d, absl::StrCat("svc_", i).c_str(), c, 0);
    rte_tel_data_add_dict_container(d, absl::StrCat("transfers_", i).c_str(), transfers, 0);
  }
  return 0;
}

// The application interface (libiwarp sessions) and its loopback QP engine.
int AppCommand(const char*, const char*, rte_tel_data* d) {
  appif::SessionServerStats s;
  appif::WireEngineStats w;
  bool has_wire = false;
  rte_tel_data_start_dict(d);
  const bool running = AppInterfaceStats(&s, &w, &has_wire);
  rte_tel_data_add_dict_string(d, "state", running ? "running" : "off");
  if (!running) return 0;
  const std::pair<const char*, uint64_t> fields[] = {
      {"sessions_active", s.sessions_active},   {"sessions_opened", s.sessions_opened},
      {"sessions_closed", s.sessions_closed},   {"sessions_refused", s.sessions_refused},
      {"pds_active", s.pds_active},             {"mrs_active", s.mrs_active},
      {"cqs_active", s.cqs_active},             {"qps_active", s.qps_active},
      {"stags_in_use", s.stags_in_use},         {"registered_bytes", s.registered_bytes},
      {"mapped_bytes", s.mapped_bytes},         {"connections", s.connections},
      {"wrs_completed", s.wrs_completed},       {"wrs_failed", s.wrs_failed},
      {"wrs_flushed", s.wrs_flushed},           {"bytes_moved", s.bytes_moved},
      {"events_posted", s.events_posted},       {"events_dropped", s.events_dropped},
      {"ring_corruptions", s.ring_corruptions}, {"doorbells", s.doorbells},
      {"requests_failed", s.requests_failed},   {"wire_qps_active", s.wire_qps_active},
      {"wire_connections", s.wire_connections}, {"wire_ack_timeouts", s.wire_ack_timeouts},
      {"wire_requests", s.wire_requests},       {"wire_unacked_held", s.wire_unacked_held}};
  for (const auto& [name, value] : fields) rte_tel_data_add_dict_u64(d, name, value);
  // Worker 0's wire engine (iWARP QPs to other hosts); absent without one.
  rte_tel_data_add_dict_string(d, "wire_engine", has_wire ? "on" : "off");
  if (!has_wire) return 0;
  const std::pair<const char*, uint64_t> wire_fields[] = {
      {"wire_commands", w.commands},
      {"wire_events", w.events},
      {"wire_events_dropped", w.events_dropped},
      {"wire_wrs_posted", w.wrs_posted},
      {"wire_recvs_posted", w.recvs_posted},
      {"wire_completions", w.completions},
      {"wire_wrs_flushed", w.wrs_flushed},
      {"wire_bad_sqes", w.bad_sqes},
      {"wire_bad_rqes", w.bad_rqes},
      {"wire_ring_corruptions", w.ring_corruptions},
      {"wire_engine_requests", w.requests},
      {"wire_requests_refused", w.requests_refused},
      {"wire_engine_connections", w.connections},
      // Local TCP ports steered to worker 0 for application QPs/listeners.
      {"wire_tcp_port_holds", w.tcp_port_holds},
      {"wire_listens_reserved", w.listens_reserved},
      {"wire_dereg_aborts", w.dereg_aborts},
      {"wire_zero_copy_fpdus", w.zero_copy_fpdus},
      // RDMA over SCTP application QPs (RFC 5043 associations).
      {"wire_sctp_associations", w.sctp_associations},
      {"wire_sctp_associations_active", w.sctp_associations_active},
      {"wire_sctp_associations_refused", w.sctp_associations_refused},
      {"wire_sctp_initiates_refused", w.sctp_initiates_refused}};
  for (const auto& [name, value] : wire_fields) rte_tel_data_add_dict_u64(d, name, value);
  rte_tel_data_add_dict_u64(d, "wire_replies_sent", w.replies_sent);
  rte_tel_data_add_dict_u64(d, "wire_rejects_sent", w.rejects_sent);
  // Application listeners' MPA gates (iwarp/mpa_gate.h), before any Request.
#define IWARP_WIRE_GATE_FIELD(f) rte_tel_data_add_dict_u64(d, "wire_gate_" #f, w.gate.f);
  IWARP_MPA_GATE_COUNTERS(IWARP_WIRE_GATE_FIELD)
#undef IWARP_WIRE_GATE_FIELD
  // Each application listener (TCP) open now: listener_0, listener_1, ...
  rte_tel_data_add_dict_u64(d, "wire_listeners", w.listeners.size());
  for (size_t i = 0; i < w.listeners.size(); ++i) {
    const appif::WireListenerStats& l = w.listeners[i];
    rte_tel_data* ld = rte_tel_data_alloc();
    if (ld == nullptr) break;
    rte_tel_data_start_dict(ld);
    rte_tel_data_add_dict_u64(ld, "listener_id", l.listener_id);
    rte_tel_data_add_dict_u64(ld, "port", l.port);
    rte_tel_data_add_dict_u64(ld, "accepted_by_app", l.replies_sent);
    rte_tel_data_add_dict_u64(ld, "rejected_by_app", l.rejects_sent);
#define IWARP_LISTENER_FIELD(f) rte_tel_data_add_dict_u64(ld, #f, l.gate.f);
    IWARP_MPA_GATE_COUNTERS(IWARP_LISTENER_FIELD)
#undef IWARP_LISTENER_FIELD
    rte_tel_data_add_dict_container(d, absl::StrCat("listener_", i).c_str(), ld, 0);
  }
  return 0;
}

// /iwarpd/sctp: worker 0's SCTP endpoint (usrsctp host counters, endpoint
// counters, associations, DDP session counters of the live associations).
int SctpCommand(const char*, const char*, rte_tel_data* d) {
  ViewPin pin;
  const TelemetryView* v = pin.get();
  if (v == nullptr) return -EAGAIN;
  std::lock_guard<std::mutex> lock(g_snapshot_mu);
  const TcpSnapshot* s =
      v->workers.empty() ? nullptr : v->workers[0]->RequestTcpSnapshot(kSnapshotTimeoutMs);
  rte_tel_data_start_dict(d);
  const bool on = s != nullptr && s->sctp.enabled;
  rte_tel_data_add_dict_string(d, "enabled", on ? "yes" : "no");
  if (!on) return 0;
  const TcpSnapshot::Sctp& o = s->sctp;
  rte_tel_data_add_dict_u64(d, "lcore", v->lcores.empty() ? 0 : v->lcores[0]);
  rte_tel_data_add_dict_u64(d, "associations", o.associations);
  rte_tel_data_add_dict_u64(d, "associations_up", o.associations_up);
  rte_tel_data_add_dict_u64(d, "peers", o.peers);
  rte_tel_data_add_dict_u64(d, "outbound_pending", o.outbound_pending);
  for (size_t i = 0; i < o.host.size(); ++i) {
    const std::string_view n = sctp::HostCounterName(static_cast<sctp::HostCounter>(i));
    rte_tel_data_add_dict_u64(d, std::string(n).c_str(), o.host[i]);
  }
  for (size_t i = 0; i < o.endpoint.size(); ++i) {
    const std::string_view n = sctp::EndpointCounterName(static_cast<sctp::EndpointCounter>(i));
    rte_tel_data_add_dict_u64(d, std::string(n).c_str(), o.endpoint[i]);
  }
  for (size_t i = 0; i < o.ddp.size(); ++i) {
    const std::string_view n = sctp::DdpCounterName(static_cast<sctp::DdpCounter>(i));
    rte_tel_data_add_dict_u64(d, std::string(n).c_str(), o.ddp[i]);
  }
  for (size_t i = 0; i < o.ends.size(); ++i) {
    const std::string key =
        "sctp_stream_end_" + std::string(sctp::StreamEndName(static_cast<sctp::StreamEnd>(i)));
    rte_tel_data_add_dict_u64(d, key.c_str(), o.ends[i]);
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
  if (rc == 0) {
    rc = rte_telemetry_register_cmd(
        "/iwarpd/tcp", TcpCommand,
        "TCP engine counters and TCP drops per lcore and in total. Takes no parameters.");
  }
  if (rc == 0) {
    rc = rte_telemetry_register_cmd(
        "/iwarpd/connections", ConnectionsCommand,
        "TCP connections (state, service, bytes, retransmissions, RTT). Parameter: index of "
        "the first connection shown.");
  }
  if (rc == 0) {
    rc = rte_telemetry_register_cmd(
        "/iwarpd/services", ServicesCommand,
        "TCP services: counters and finished transfers with SHA-256. Takes no parameters.");
  }
  if (rc == 0) {
    rc = rte_telemetry_register_cmd(
        "/iwarpd/qps", QpsCommand,
        "iWARP QPs of the iwarp_* services: state, negotiated MPA, counters, Terminates. "
        "Parameter: first QP index.");
  }
  if (rc == 0) {
    rc = rte_telemetry_register_cmd(
        "/iwarpd/app", AppCommand,
        "libiwarp sessions: QPs, MRs, STags, registered bytes, work requests, bytes moved. "
        "No parameters.");
  }
  if (rc == 0) {
    rc = rte_telemetry_register_cmd(
        "/iwarpd/sctp", SctpCommand,
        "RDMA over SCTP (worker 0): usrsctp, endpoint and DDP session counters, "
        "associations. No parameters.");
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
