// runtime/sched/prefill_order: the least work left first, ties and the starvation bound by age.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/sched/prefill_order.hpp"

namespace fw {
namespace {

TEST(prefill_order, the_prompt_with_the_least_work_left_goes_first) {
  const std::vector<prefill_candidate> c = {{1, 1500, 10.0}, {2, 40, 10.5}, {3, 300, 10.2}};
  EXPECT_EQ(pick_prefill(c, 11.0, 2.0), 1u);
}

TEST(prefill_order, equal_work_goes_in_arrival_order) {
  const std::vector<prefill_candidate> c = {{1, 40, 10.3}, {2, 40, 10.1}, {3, 40, 10.2}};
  EXPECT_EQ(pick_prefill(c, 11.0, 2.0), 1u);
}

TEST(prefill_order, a_prompt_waiting_past_the_bound_goes_first_the_oldest_of_them) {
  const std::vector<prefill_candidate> c = {{1, 1500, 10.0}, {2, 1200, 9.5}, {3, 40, 11.9}};
  EXPECT_EQ(pick_prefill(c, 11.0, 2.0), 2u) << "nobody waited 2 s yet: the shortest";
  EXPECT_EQ(pick_prefill(c, 11.6, 2.0), 1u) << "id 2 waited 2.1 s";
  EXPECT_EQ(pick_prefill(c, 100.0, 0.0), 2u) << "no bound: the shortest however old the others";
}

}  // namespace
}  // namespace fw
