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
                    "  steering ", p->Text("steering"), "\n");
    absl::StrAppend(&out, "  rx ", p->Text("ipackets"), " packets ", p->Text("ibytes"),
                    " bytes  missed ", p->Text("imissed"), "  errors ", p->Text("ierrors"),
                    "  no_mbuf ", p->Text("rx_nombuf"), "\n");
    absl::StrAppend(&out, "  tx ", p->Text("opackets"), " packets ", p->Text("obytes"),
                    " bytes  errors ", p->Text("oerrors"), "\n");
  }
  return out;
}

}  // namespace iwarp::tools
