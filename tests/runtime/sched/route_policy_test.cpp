// The global route policy and the priority gate, with fabricated inputs: co-located on one
// device, when the prefill device is down or full, or when its queue at the measured rate would
// pass the deadline; otherwise physical. The gate serves an urgent waiter before normal ones.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "runtime/base/priority_gate.hpp"
#include "runtime/sched/route_policy.hpp"

namespace fw {
namespace {

route_inputs pair() {
  route_inputs in;
  in.separate_devices = true;
  in.prompt_blocks = 4;
  in.prefill_free_blocks = 100;
  in.prompt_tokens = 60;
  in.deadline_s = 3.0;
  return in;
}

TEST(route_policy_test, physical_unless_a_reason_says_co_located) {
  EXPECT_EQ(choose_route(pair()).route, prefill_route::physical);
  auto one = pair();
  one.separate_devices = false;
  EXPECT_EQ(choose_route(one).route, prefill_route::co_located);
  auto down = pair();
  down.prefill_device_up = false;
  EXPECT_EQ(choose_route(down).reason, "the prefill device's worker is down");
  auto full = pair();
  full.prefill_free_blocks = 3;
  EXPECT_EQ(choose_route(full).route, prefill_route::co_located);
  // 2,000 tokens/s: a queue of 6,000 tokens is 3 s of waiting, at the deadline; one more token is
  // past it. The prompt's own compute does not count (it is needed on either device).
  auto busy = pair();
  busy.prefill_tokens_per_s = 2000;
  busy.queued_tokens = 6000;
  busy.prompt_tokens = 100000;
  EXPECT_EQ(choose_route(busy).route, prefill_route::physical);
  busy.queued_tokens = 6001;
  const auto d = choose_route(busy);
  EXPECT_EQ(d.route, prefill_route::co_located);
  EXPECT_NE(d.reason.find("3.00 s for its queue before this prompt"), std::string::npos) << d.reason;
  // Not measured yet, or no deadline: the queue does not decide.
  busy.prefill_tokens_per_s = 0;
  EXPECT_EQ(choose_route(busy).route, prefill_route::physical);
  busy.prefill_tokens_per_s = 2000;
  busy.deadline_s = INFINITY;
  EXPECT_EQ(choose_route(busy).route, prefill_route::physical);
}

TEST(route_policy_test, deadline_and_rate) {
  EXPECT_FALSE(prefill_overdue(10.0, 13.0, 3.0));
  EXPECT_TRUE(prefill_overdue(10.0, 13.01, 3.0));
  EXPECT_FALSE(prefill_overdue(10.0, 1e9, 0.0));
  EXPECT_FALSE(prefill_overdue(10.0, 1e9, INFINITY));
  // A running 2,048-token prompt at 330 tokens/s may take 2 x 6.2 s before it counts as stalled;
  // with no rate measured yet, the deadline.
  EXPECT_FALSE(running_prefill_overdue(10.0, 2048, 330, 22.0, 3.0));
  EXPECT_TRUE(running_prefill_overdue(10.0, 2048, 330, 22.5, 3.0));
  EXPECT_TRUE(running_prefill_overdue(10.0, 2048, 0, 13.1, 3.0));
  EXPECT_FALSE(running_prefill_overdue(10.0, 10, 330, 12.9, 3.0));  // never less than the deadline
  EXPECT_DOUBLE_EQ(update_rate(0, 1000, 0.5), 2000);
  EXPECT_DOUBLE_EQ(update_rate(2000, 1000, 1.0, 0.5), 1500);
  EXPECT_DOUBLE_EQ(update_rate(2000, 0, 1.0), 2000);  // nothing measured
}

TEST(priority_gate_test, an_urgent_waiter_goes_before_waiting_normal_ones) {
  for (bool prioritize : {true, false}) {
    priority_gate g(prioritize);
    g.lock(false);  // the holder: a prefill chunk in progress
    std::vector<char> order;
    std::mutex m;
    auto waiter = [&](bool urgent, char tag) {
      return std::thread([&, urgent, tag] {
        g.lock(urgent);
        {
          std::lock_guard l(m);
          order.push_back(tag);
        }
        g.unlock();
      });
    };
    // Three normal waiters queue first, then an urgent one.
    std::vector<std::thread> ts;
    for (char c : {'a', 'b', 'c'}) ts.push_back(waiter(false, c));
    while (g.waiting() < 3) std::this_thread::yield();  // all three blocked in lock()
    ts.push_back(waiter(true, 'U'));
    while (g.waiting() < 4) std::this_thread::yield();
    g.unlock();
    for (auto& t : ts) t.join();
    ASSERT_EQ(order.size(), 4u);
    if (prioritize) {
      EXPECT_EQ(order.front(), 'U');
      EXPECT_GE(g.yielded(), 1u);
    } else {
      EXPECT_EQ(g.yielded(), 0u);
    }
  }
}

}  // namespace
}  // namespace fw
