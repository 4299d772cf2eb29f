// SPDX-License-Identifier: Apache-2.0
// TenantAdmission: per-tenant running and queued quotas, FIFO hand-over of a released slot,
// tenants independent of each other, the message naming tenant and quota.
#include "ops/tenant_admission.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gcompute::server::ops {
namespace {

TenantQuotaLookup quotas_of(std::uint64_t running, std::uint64_t queued) {
  return [=](const std::string& tenant) {
    TenantQuotas q;
    if (tenant == "limited") {
      q.running = running;
      q.queued = queued;
    }
    return q;
  };
}

TEST(TenantAdmission, RunsQueuesThenRefusesAndHandsSlotsOverInOrder) {
  TenantAdmission admission(quotas_of(2, 1));
  std::vector<int> launched;
  auto launch = [&](int i) { return [&launched, i] { launched.push_back(i); }; };
  ASSERT_TRUE(admission.admit("limited", launch(1)).ok());
  ASSERT_TRUE(admission.admit("limited", launch(2)).ok());
  ASSERT_TRUE(admission.admit("limited", launch(3)).ok());  // waits
  EXPECT_EQ(launched, (std::vector<int>{1, 2}));
  EXPECT_EQ(admission.running("limited"), 2u);
  EXPECT_EQ(admission.waiting("limited"), 1u);

  const absl::Status refused = admission.admit("limited", launch(4));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  for (const char* part :
       {"\"limited\"", "quota running=2", "quota queued=1", "2 requests running", "1 queued"}) {
    EXPECT_NE(refused.message().find(part), std::string::npos) << refused.message();
  }
  // Another tenant is not limited by this one.
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(admission.admit("other", [] {}).ok());
  EXPECT_EQ(admission.running("other"), 100u);

  admission.release("limited");  // 3 takes the slot
  EXPECT_EQ(launched, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(admission.running("limited"), 2u);
  EXPECT_EQ(admission.waiting("limited"), 0u);
  admission.release("limited");
  admission.release("limited");
  EXPECT_EQ(admission.running("limited"), 0u);
  ASSERT_TRUE(admission.admit("limited", launch(5)).ok());
  EXPECT_EQ(launched.back(), 5);
}

TEST(TenantAdmission, ZeroRunningRefusesEverything) {
  TenantAdmission admission(quotas_of(0, 10));
  bool ran = false;
  const absl::Status st = admission.admit("limited", [&] { ran = true; });
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(ran);
  EXPECT_EQ(admission.waiting("limited"), 0u);
}

TEST(TenantAdmission, LaunchMayReleaseAtOnce) {
  // An engine that refuses the request releases inside launch; the next waiter starts then.
  TenantAdmission admission(quotas_of(1, 5));
  int launched = 0;
  ASSERT_TRUE(admission.admit("limited", [&] { ++launched; }).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(admission
                    .admit("limited",
                           [&] {
                             ++launched;
                             admission.release("limited");
                           })
                    .ok());
  }
  EXPECT_EQ(launched, 1);
  admission.release("limited");  // the chain runs all five, each releasing its slot
  EXPECT_EQ(launched, 6);
  EXPECT_EQ(admission.running("limited"), 0u);
  EXPECT_EQ(admission.waiting("limited"), 0u);
}

}  // namespace
}  // namespace gcompute::server::ops
