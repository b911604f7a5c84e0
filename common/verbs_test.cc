#include "common/verbs.h"

#include "gtest/gtest.h"

namespace iwarp::verbs {
namespace {

TEST(Verbs, NamesAreStableAndOutOfRangeIsInvalid) {
  EXPECT_EQ(WrOpcodeName(WrOpcode::kSendSeInvalidate), "send_se_invalidate");
  EXPECT_EQ(WrOpcodeName(static_cast<WrOpcode>(kNumWrOpcodes)), "invalid");
  EXPECT_EQ(WcOpcodeName(WcOpcode::kRecv), "recv");
  EXPECT_EQ(WcStatusName(WcStatus::kRemoteInvalidRequest), "remote_invalid_request");
  EXPECT_EQ(WcStatusName(static_cast<WcStatus>(200)), "invalid");
}

TEST(Verbs, RingBytesAreCheckedBeforeTheyBecomeEnums) {
  for (unsigned b = 0; b < 256; ++b) {
    const std::optional<WrOpcode> op = WrOpcodeFromByte(static_cast<uint8_t>(b));
    EXPECT_EQ(op.has_value(), b < 6) << b;
    if (op) {
      EXPECT_EQ(static_cast<unsigned>(*op), b);
      EXPECT_NE(WrOpcodeName(*op), "invalid");
    }
    const std::optional<WcStatus> st = WcStatusFromByte(static_cast<uint8_t>(b));
    EXPECT_EQ(st.has_value(), b < 9) << b;
  }
}

}  // namespace
}  // namespace iwarp::verbs
