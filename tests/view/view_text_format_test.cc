// The summary panel's time lines (draw/text_format.h step_time_lines): the steady step's own
// compute and exposed communication beside its step time. Before, the panel printed the whole
// run's compute and exposed communication next to one step's time (485 ms of compute beside a
// 276 ms step at 2 steps), so compute looked larger than the step.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "draw/text_format.h"

namespace zerosim::view {
namespace {

TEST(StepTimeLines, AreTheSteadyStepsOwnFigures) {
  Summary s;
  s.total_ns = 560'000'000;
  s.compute_ns = 485'000'000;  // both steps
  s.exposed_comm_ns = 61'100'000;
  StepSummary a, b;
  a.step = 0;
  a.start_ns = 0;
  a.end_ns = 284'000'000;
  a.compute_ns = 242'000'000;
  a.exposed_comm_ns = 31'900'000;
  b.step = 1;
  b.start_ns = 284'000'000;
  b.end_ns = 560'000'000;
  b.compute_ns = 243'000'000;
  b.exposed_comm_ns = 29'200'000;
  s.steps = {a, b};
  EXPECT_EQ(step_time_lines(s),
            (std::vector<std::string>{"steady step 1 of 2",
                                      "step time      " + format_duration(276'000'000),
                                      "compute        " + format_duration(243'000'000),
                                      "exposed comm   " + format_duration(29'200'000)}));
  s.steps.clear();  // a trace without steps: the run's figures, named as such
  EXPECT_EQ(step_time_lines(s).front(), "run time       " + format_duration(560'000'000));
}

}  // namespace
}  // namespace zerosim::view
