#include "tools/iwarpctl_format.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace iwarp::tools {
namespace {

constexpr std::string_view kDropPrefix = "drop_";

bool IsDropReason(const std::string& key) {
  return key.size() > kDropPrefix.size() && key.compare(0, kDropPrefix.size(), kDropPrefix) == 0;
}

}  // namespace

absl::StatusOr<std::string> FormatStats(const JsonValue& stats) {
  const JsonValue* lcores = stats.Find("lcores");
  const JsonValue* total = stats.Find("total");
  if (stats.type != JsonValue::Type::kObject || lcores == nullptr ||
      lcores->type != JsonValue::Type::kArray || total == nullptr ||
      total->type != JsonValue::Type::kObject) {
    return absl::InvalidArgumentError("reply is not an /iwarpd/stats object");
  }
  std::vector<std::string> headers;
  std::vector<const JsonValue*> columns;
  for (const JsonValue& l : lcores->array) {
    const JsonValue* c = stats.Find(absl::StrCat("lcore_", l.number_text));
    if (c == nullptr || c->type != JsonValue::Type::kObject) {
      return absl::InvalidArgumentError(absl::StrCat("reply lacks lcore_", l.number_text));
    }
    headers.push_back(absl::StrCat("lcore ", l.number_text));
    columns.push_back(c);
  }
  headers.push_back("total");
  columns.push_back(total);

  size_t name_width = std::string("counter").size();
  for (const auto& [key, value] : total->object) name_width = std::max(name_width, key.size());
  size_t width = 8;
  for (const JsonValue* c : columns) {
    for (const auto& [key, value] : c->object) width = std::max(width, value.number_text.size());
  }
  for (const std::string& h : headers) width = std::max(width, h.size());

  std::string out = absl::StrFormat("%-*s", static_cast<int>(name_width), "counter");
  for (const std::string& h : headers) absl::StrAppend(&out, absl::StrFormat("  %*s", static_cast<int>(width), h));
  absl::StrAppend(&out, "\n");
  auto row = [&](const std::string& label, const std::string& key) {
    absl::StrAppend(&out, absl::StrFormat("%-*s", static_cast<int>(name_width), label));
    for (const JsonValue* c : columns) {
      absl::StrAppend(&out, absl::StrFormat("  %*s", static_cast<int>(width), c->Text(key)));
    }
    absl::StrAppend(&out, "\n");
  };
  for (const auto& [key, value] : total->object) {
    if (!IsDropReason(key)) row(key, key);
  }
  for (const auto& [key, value] : total->object) {
    if (IsDropReason(key) && value.is_uint && value.uint_value != 0) {
      row(absl::StrCat("  ", key.substr(kDropPrefix.size())), key);
    }
  }
  return out;
}

absl::StatusOr<std::string> FormatApp(const JsonValue& app) {
  if (app.type != JsonValue::Type::kObject || app.Find("state") == nullptr) {
    return absl::InvalidArgumentError("reply is not an /iwarpd/app object");
  }
  if (app.Text("state") != "running") {
    return std::string("application interface: off (no app_interface server running)\n");
  }
  std::string out = "application interface: running\n";
  absl::StrAppend(&out, "  sessions       active ", app.Text("sessions_active"), "  opened ",
                  app.Text("sessions_opened"), "  closed ", app.Text("sessions_closed"),
                  "  refused ", app.Text("sessions_refused"), "\n");
  absl::StrAppend(&out, "  objects        PDs ", app.Text("pds_active"), "  MRs ",
                  app.Text("mrs_active"), "  CQs ", app.Text("cqs_active"), "  QPs ",
                  app.Text("qps_active"), "  STags in use ", app.Text("stags_in_use"), "\n");
  absl::StrAppend(&out, "  memory         registered ", app.Text("registered_bytes"),
                  " bytes  mapped ", app.Text("mapped_bytes"), " bytes\n");
  absl::StrAppend(&out, "  work requests  completed ", app.Text("wrs_completed"), "  failed ",
                  app.Text("wrs_failed"), "  flushed ", app.Text("wrs_flushed"), "\n");
  absl::StrAppend(&out, "  bytes moved    ", app.Text("bytes_moved"), "\n");
  absl::StrAppend(&out, "  connections    ", app.Text("connections"), " loopback QP pairs\n");
  absl::StrAppend(&out, "  events         posted ", app.Text("events_posted"), "  dropped ",
                  app.Text("events_dropped"), "  doorbells ", app.Text("doorbells"), "\n");
  absl::StrAppend(&out, "  errors         requests failed ", app.Text("requests_failed"),
                  "  ring corruptions ", app.Text("ring_corruptions"), "\n");
  // iWARP QPs to other hosts (worker 0's wire engine); older daemons do not
  // report these, so each line appears only when its fields do.
  if (app.Find("wire_qps_active") != nullptr) {
    absl::StrAppend(&out, "  wire QPs       active ", app.Text("wire_qps_active"), "  connected ",
                    app.Text("wire_connections"), "  MPA requests ", app.Text("wire_requests"),
                    "  ack timeouts ", app.Text("wire_ack_timeouts"),
                    // Daemons before this field leave it out.
                    app.Find("wire_unacked_held") != nullptr
                        ? absl::StrCat(" (held ", app.Text("wire_unacked_held"), ")")
                        : std::string(),
                    "\n");
  }
  if (app.Find("wire_engine") != nullptr && app.Text("wire_engine") != "on") {
    absl::StrAppend(&out, "  wire engine    off (loopback QPs only)\n");
  } else if (app.Find("wire_commands") != nullptr) {
    absl::StrAppend(&out, "  wire engine    commands ", app.Text("wire_commands"), "  events ",
                    app.Text("wire_events"), " (dropped ", app.Text("wire_events_dropped"),
                    ")  connections ", app.Text("wire_engine_connections"), "\n");
    absl::StrAppend(&out, "  wire WRs       posted ", app.Text("wire_wrs_posted"), "  recvs ",
                    app.Text("wire_recvs_posted"), "  completions ", app.Text("wire_completions"),
                    "  flushed ", app.Text("wire_wrs_flushed"), "\n");
    absl::StrAppend(&out, "  wire errors    bad SQEs ", app.Text("wire_bad_sqes"), "  bad RQEs ",
                    app.Text("wire_bad_rqes"), "  ring corruptions ", app.Text("wire_ring_corruptions"), "  requests ",
                    app.Text("wire_engine_requests"), " (refused ", app.Text("wire_requests_refused"),
                    ")");
    if (app.Find("wire_dereg_aborts") != nullptr) {
      absl::StrAppend(&out, "  QPs aborted by dereg of memory in flight ",
                      app.Text("wire_dereg_aborts"));
    }
    if (app.Find("wire_zero_copy_fpdus") != nullptr) {
      absl::StrAppend(&out, "  zero-copy FPDUs ", app.Text("wire_zero_copy_fpdus"));
    }
    absl::StrAppend(&out, "\n");
    if (app.Find("wire_gate_passive_opens") != nullptr) {
      absl::StrAppend(&out, "  wire setup     accepted by TCP ", app.Text("wire_gate_passive_opens"),
                      "  replies ", app.Text("wire_replies_sent"), "  rejects ",
                      app.Text("wire_rejects_sent"), " (application) + ",
                      app.Text("wire_gate_rejects_sent"), " (no slot ",
                      app.Text("wire_gate_refused_no_qp"), ", private data ",
                      app.Text("wire_gate_refused_private_data"), ")  refused per source ",
                      app.Text("wire_gate_refused_per_source"), "  request timeouts ",
                      app.Text("wire_gate_request_timeouts"), "  bad requests ",
                      app.Text("wire_gate_bad_requests"), "  evicted ",
                      app.Text("wire_gate_evicted"), "\n");
    }
    // Each application listener's connection setup (daemons before these
    // counters leave them out).
    if (app.Find("wire_listeners") != nullptr) {
      for (size_t i = 0;; ++i) {
        const JsonValue* l = app.Find(absl::StrCat("listener_", i));
        if (l == nullptr) break;
        absl::StrAppend(&out, "  listener ", l->Text("listener_id"), " port ", l->Text("port"),
                        ": requests ", l->Text("requests"), ", replies ",
                        l->Text("accepted_by_app"), ", rejects ", l->Text("rejected_by_app"),
                        " (application) + ", l->Text("rejects_sent"), " (no slot ",
                        l->Text("refused_no_qp"),
                        ", private data ", l->Text("refused_private_data"),
                        "), refused per source ", l->Text("refused_per_source"),
                        ", request timeouts ", l->Text("request_timeouts"), ", bad requests ",
                        l->Text("bad_requests"), ", evicted ", l->Text("evicted"), "\n");
      }
    }
    if (app.Find("wire_tcp_port_holds") != nullptr) {
      // Receive steering of application ports to worker 0 (appif/app_ports.h).
      absl::StrAppend(&out, "  wire TCP ports holds ", app.Text("wire_tcp_port_holds"),
                      " (listeners + connections, steered to worker 0)  listens refused on "
                      "built-in service ports ",
                      app.Text("wire_listens_reserved"), "\n");
    }
    if (app.Find("wire_sctp_associations") != nullptr) {
      absl::StrAppend(&out, "  wire SCTP      associations ", app.Text("wire_sctp_associations"),
                      "  active ", app.Text("wire_sctp_associations_active"), "  refused ",
                      app.Text("wire_sctp_associations_refused"), "  Initiates refused ",
                      app.Text("wire_sctp_initiates_refused"), "\n");
    }
  }
  return out;
}

absl::StatusOr<std::string> FormatPorts(const JsonValue& ports) {
  const JsonValue* ids = ports.Find("port_ids");
  if (ports.type != JsonValue::Type::kObject || ids == nullptr ||
      ids->type != JsonValue::Type::kArray) {
    return absl::InvalidArgumentError("reply is not an /iwarpd/ports object");
  }
  std::string out;
  for (const JsonValue& id : ids->array) {
    const JsonValue* p = ports.Find(absl::StrCat("port_", id.number_text));
    if (p == nullptr || p->type != JsonValue::Type::kObject) {
      return absl::InvalidArgumentError(absl::StrCat("reply lacks port_", id.number_text));
    }
    absl::StrAppend(&out, "port ", id.number_text, " '", p->Text("name"), "' ", p->Text("ethdev"),
                    " (", p->Text("driver"), ")\n");
    absl::StrAppend(&out, "  mac ", p->Text("mac"), "  ipv4 ",
                    p->Text("ipv4").empty() ? "none" : p->Text("ipv4"));
    if (!p->Text("gateway").empty()) absl::StrAppend(&out, "  gateway ", p->Text("gateway"));
    absl::StrAppend(&out, "  mtu ", p->Text("mtu"), "\n");
    absl::StrAppend(&out, "  link ", p->Text("link"), " ", p->Text("speed_mbps"), " Mb/s ",
                    p->Text("duplex"), "-duplex  socket ", p->Text("socket"), "\n");
    absl::StrAppend(&out, "  queues rx ", p->Text("rx_queues"), " x ", p->Text("rx_descriptors"),
                    ", tx ", p->Text("tx_queues"), " x ", p->Text("tx_descriptors"),
                    "  steering ", p->Text("steering"),
                    p->Text("tso").empty() ? "" : absl::StrCat("  tso ", p->Text("tso")), "\n");
    absl::StrAppend(&out, "  rx ", p->Text("ipackets"), " packets ", p->Text("ibytes"),
                    " bytes  missed ", p->Text("imissed"), "  errors ", p->Text("ierrors"),
                    "  no_mbuf ", p->Text("rx_nombuf"), "\n");
    absl::StrAppend(&out, "  tx ", p->Text("opackets"), " packets ", p->Text("obytes"),
                    " bytes  errors ", p->Text("oerrors"), "\n");
  }
  return out;
}

absl::StatusOr<std::string> FormatConnections(const std::vector<JsonValue>& pages) {
  constexpr const char* kColumns[] = {"lcore", "local", "remote", "state", "service",
                                      "bytes_in", "bytes_out", "retrans", "timeouts",
                                      "srtt_us", "cwnd", "unacked"};
  std::vector<std::vector<std::string>> rows;
  uint64_t total = 0;
  for (const JsonValue& page : pages) {
    if (page.type != JsonValue::Type::kObject || page.Find("total") == nullptr) {
      return absl::InvalidArgumentError("reply is not an /iwarpd/connections object");
    }
    total = page.Uint("total");
    for (const JsonMember& m : page.object) {
      if (m.key.compare(0, 5, "conn_") != 0 || m.value.type != JsonValue::Type::kObject) continue;
      std::vector<std::string> row;
      for (const char* c : kColumns) row.push_back(m.value.Text(c));
      rows.push_back(std::move(row));
    }
  }
  std::vector<size_t> width;
  for (const char* c : kColumns) width.push_back(std::string(c).size());
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      // Text columns left, numbers right.
      const bool text = i >= 1 && i <= 4;
      const int w = static_cast<int>(width[i]);
      absl::StrAppend(&out, i == 0 ? "" : "  ",
                      text ? absl::StrFormat("%-*s", w, cells[i])
                           : absl::StrFormat("%*s", w, cells[i]));
    }
    // No trailing blanks.
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  };
  line(std::vector<std::string>(std::begin(kColumns), std::end(kColumns)));
  for (const auto& row : rows) line(row);
  absl::StrAppend(&out, rows.size(), " of ", total, " connections\n");
  return out;
}

absl::StatusOr<std::string> FormatServices(const JsonValue& services) {
  const JsonValue* names = services.Find("names");
  if (services.type != JsonValue::Type::kObject || names == nullptr ||
      names->type != JsonValue::Type::kArray) {
    return absl::InvalidArgumentError("reply is not an /iwarpd/services object");
  }
  if (names->array.empty()) return std::string("no services configured\n");
  std::string out;
  for (size_t i = 0; i < names->array.size(); ++i) {
    const JsonValue* s = services.Find(absl::StrCat("svc_", i));
    if (s == nullptr) return absl::InvalidArgumentError(absl::StrCat("reply lacks svc_", i));
    absl::StrAppend(&out, "service ", s->Text("name"), " (", s->Text("type"), ", port ",
                    s->Text("port"), "): active ", s->Text("active"), ", accepted ",
                    s->Text("accepted"), ", connected ", s->Text("connected"), ", closed ",
                    s->Text("closed"), " (abnormal ", s->Text("closed_abnormal"), "), bytes in ",
                    s->Text("bytes_in"), ", out ", s->Text("bytes_out"), "\n");
    if (s->Find("established") != nullptr) {
      absl::StrAppend(&out, "  iwarp: requests ", s->Text("connect_requests"), ", established ",
                      s->Text("established"), ", setup failed ", s->Text("setup_failed"),
                      ", sends echoed ", s->Text("sends_echoed"), ", read responses ",
                      s->Text("read_responses_sent"), ", bytes placed ", s->Text("bytes_placed"),
                      ", crc errors ", s->Text("crc_errors"), ", terminates sent ",
                      s->Text("terminates_sent"), " received ", s->Text("terminates_received"),
                      ", completion errors ", s->Text("completion_errors"), "\n");
      // Connection setup refusals (iwarp/mpa_gate.h); daemons before these
      // counters leave them out.
      if (s->Find("refused_no_qp") != nullptr) {
        absl::StrAppend(&out, "  setup: replies sent ", s->Text("replies_sent"), ", rejects sent ",
                        s->Text("rejects_sent"), " (no QP free ", s->Text("refused_no_qp"),
                        ", private data ", s->Text("refused_private_data"),
                        "), refused per source ", s->Text("refused_per_source"),
                        ", request timeouts ", s->Text("request_timeouts"), ", bad requests ",
                        s->Text("bad_requests"), ", evicted while waiting ",
                        s->Text("pending_evicted"), "\n");
      }
    }
    if (s->Find("run") != nullptr) {
      absl::StrAppend(&out, "  run ", s->Text("run"), ": ", s->Text("run_messages"),
                      " messages, ", s->Text("run_bytes"), " bytes in ", s->Text("run_elapsed_us"),
                      " us, ", s->Text("run_goodput_mbps"), " Mbit/s, ",
                      s->Text("run_messages_per_s"), " msg/s, verify failures ",
                      s->Text("verify_failures"), ", sha256 ", s->Text("run_sha256"), "\n");
    }
    const JsonValue* t = services.Find(absl::StrCat("transfers_", i));
    if (t == nullptr || t->type != JsonValue::Type::kArray) continue;
    for (const JsonValue& line : t->array) absl::StrAppend(&out, "  transfer ", line.string, "\n");
  }
  return out;
}

absl::StatusOr<std::string> FormatQps(const JsonValue& qps) {
  if (qps.type != JsonValue::Type::kObject || qps.Find("total") == nullptr) {
    return absl::InvalidArgumentError("reply is not an /iwarpd/qps object");
  }
  std::string out;
  uint64_t shown = 0;
  for (const JsonMember& m : qps.object) {
    if (m.key.compare(0, 3, "qp_") != 0 || m.value.type != JsonValue::Type::kObject) continue;
    const JsonValue& q = m.value;
    ++shown;
    // Why an ended QP (CLOSED or ERROR) ended; older daemons send no "end".
    std::string state = q.Text("state");
    if (q.Find("end") != nullptr && q.Text("end") != "-") {
      absl::StrAppend(&state, " (", q.Text("end"), ")");
    }
    absl::StrAppend(&out, q.Text("service"), " ", q.Text("local"), " -> ", q.Text("remote"), " ",
                    state, "  mpa rev ", q.Text("mpa_revision"), " crc ", q.Text("crc"),
                    " markers tx ", q.Text("tx_markers"), " rx ", q.Text("rx_markers"), " ird ",
                    q.Text("ird"), " ord ", q.Text("ord"), " rtr ", q.Text("rtr"), "\n");
    absl::StrAppend(&out, "  fpdus in ", q.Text("fpdus_in"), " out ", q.Text("fpdus_out"),
                    "  bytes placed ", q.Text("bytes_placed"), " sent ", q.Text("bytes_sent"),
                    "  read responses ", q.Text("read_responses_sent"), "  crc errors ",
                    q.Text("crc_errors"), "  marker errors ", q.Text("marker_errors"), "\n");
    if (q.Text("terminate_sent") != "-" || q.Text("terminate_received") != "-") {
      absl::StrAppend(&out, "  terminate sent ", q.Text("terminate_sent"), ", received ",
                      q.Text("terminate_received"), "\n");
    }
  }
  absl::StrAppend(&out, shown, " of ", qps.Text("total"), " QPs\n");
  return out;
}

}  // namespace iwarp::tools
