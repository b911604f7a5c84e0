// Fuzz target: arbitrary frames through an impairment stage that applies
// every action (corrupt with the checksum fixed and left stale, duplicate,
// reorder, delay, drop). Checks that every packet handed in comes out exactly
// once (forwarded or released) plus the copies, and that corruption never
// writes outside the frame (ASan).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "dataplane/impair/impairment.h"

namespace {

using iwarp::dataplane::ImpairmentStage;
using iwarp::dataplane::ImpairSink;
using iwarp::dataplane::PacketHandle;

struct Buf {
  std::vector<uint8_t> bytes;
};

class CountingSink : public ImpairSink {
 public:
  void Forward(PacketHandle p) override {
    delete static_cast<Buf*>(p);
    ++out;
  }
  PacketHandle Copy(PacketHandle p) override {
    ++copies;
    return new Buf(*static_cast<Buf*>(p));
  }
  void Release(PacketHandle p) override {
    delete static_cast<Buf*>(p);
    ++out;
  }
  size_t out = 0;
  size_t copies = 0;
};

std::vector<iwarp::config::ImpairRule> Rules() {
  using iwarp::config::ImpairAction;
  using iwarp::config::ImpairRule;
  std::vector<ImpairRule> rules;
  const ImpairAction actions[] = {ImpairAction::kCorrupt, ImpairAction::kDuplicate,
                                  ImpairAction::kReorder, ImpairAction::kDelay,
                                  ImpairAction::kDrop, ImpairAction::kCorrupt};
  uint32_t every = 2;
  for (ImpairAction a : actions) {
    ImpairRule r;
    r.action = a;
    r.every = every++;
    r.corrupt_checksum = every % 2 == 0 ? iwarp::config::CorruptChecksum::kFixed
                                        : iwarp::config::CorruptChecksum::kStale;
    r.reorder_gap = 2;
    r.delay_ms = 3;
    rules.push_back(r);
  }
  return rules;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<iwarp::config::ImpairRule> rules = Rules();
  iwarp::dataplane::LcoreStats stats;
  CountingSink sink;
  ImpairmentStage stage(rules, size, &stats, &sink, 4);
  constexpr size_t kRounds = 12;
  for (size_t i = 0; i < kRounds; ++i) {
    auto* b = new Buf{std::vector<uint8_t>(data, data + size)};
    stage.Process(b, iwarp::MutableByteSpan(b->bytes), i);
    stage.Poll(i);
  }
  stage.ReleaseAll();
  if (sink.out != kRounds + sink.copies) std::abort();
  return 0;
}
