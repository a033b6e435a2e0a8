// Goal: check-determinism's comparison names the first line where two traces
// differ, each side's text there and the step it belongs to — including a
// trace that stops early and one that differs only in its last byte.
#define BOOST_TEST_MODULE tools_trace_diff
#include <boost/test/unit_test.hpp>

#include <string>

#include "tools/cli/trace_diff.hpp"

using lockstep::cli::first_trace_difference;
using lockstep::cli::step_of_line;

namespace {

const std::string head =
    "{\"ev\":\"run\",\"seed\":1,\"cores\":1}\n"
    "{\"ev\":\"spawn\",\"t\":0,\"fiber\":0,\"core\":0,\"parent\":-1,\"name\":\"main\"}\n"
    "{\"ev\":\"step\",\"n\":1,\"t\":0,\"fiber\":0,\"of\":1}\n"
    "{\"ev\":\"spawn\",\"t\":0,\"fiber\":1,\"core\":0,\"parent\":0,\"name\":\"a\"}\n"
    "{\"ev\":\"step\",\"n\":2,\"t\":0,\"fiber\":1,\"of\":2}\n";

}  // namespace

BOOST_AUTO_TEST_CASE(equal_traces_have_no_difference) {
  BOOST_TEST(!first_trace_difference(head, head).has_value());
  BOOST_TEST(!first_trace_difference("", "").has_value());
}

BOOST_AUTO_TEST_CASE(a_changed_line_is_named_with_its_step_on_each_side) {
  const std::string a = head + "{\"ev\":\"block\",\"t\":0,\"fiber\":1,\"on\":\"sleep\",\"object\":0}\n";
  const std::string b = head + "{\"ev\":\"block\",\"t\":0,\"fiber\":1,\"on\":\"notify\",\"object\":3}\n";
  const auto d = first_trace_difference(a, b);
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->line == 6u);
  BOOST_TEST(d->a.text == "{\"ev\":\"block\",\"t\":0,\"fiber\":1,\"on\":\"sleep\",\"object\":0}");
  BOOST_TEST(d->b.text == "{\"ev\":\"block\",\"t\":0,\"fiber\":1,\"on\":\"notify\",\"object\":3}");
  BOOST_TEST(d->a.present);
  BOOST_TEST(d->b.present);
  BOOST_REQUIRE(d->a.step.has_value());
  BOOST_TEST(*d->a.step == 2u);
  BOOST_TEST(*d->b.step == 2u);
}

BOOST_AUTO_TEST_CASE(differing_step_lines_carry_their_own_numbers) {
  // Runs that picked different fibers at step 3 differ on the step line itself.
  const std::string a = head + "{\"ev\":\"step\",\"n\":3,\"t\":0,\"fiber\":0,\"of\":2}\n";
  const std::string b = head + "{\"ev\":\"step\",\"n\":3,\"t\":0,\"fiber\":1,\"of\":2}\n";
  const auto d = first_trace_difference(a, b);
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->line == 6u);
  BOOST_TEST(*d->a.step == 3u);
  BOOST_TEST(*d->b.step == 3u);
}

BOOST_AUTO_TEST_CASE(a_trace_that_ends_early_is_the_missing_side) {
  const std::string longer = head + "{\"ev\":\"end\",\"t\":5}\n";
  const auto d = first_trace_difference(head, longer);
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->line == 6u);
  BOOST_TEST(!d->a.present);
  BOOST_TEST(d->a.text.empty());
  BOOST_TEST(d->b.present);
  BOOST_TEST(d->b.text == "{\"ev\":\"end\",\"t\":5}");
  BOOST_TEST(*d->a.step == 2u);  // the step the missing line would have belonged to
}

BOOST_AUTO_TEST_CASE(a_missing_final_newline_is_a_difference_on_the_last_line) {
  const std::string cut = head.substr(0, head.size() - 1);
  const auto d = first_trace_difference(head, cut);
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->line == 5u);
  BOOST_TEST(d->a.text == d->b.text);
}

BOOST_AUTO_TEST_CASE(before_the_first_step_there_is_no_step) {
  const auto d = first_trace_difference("{\"ev\":\"run\",\"seed\":1,\"cores\":1}\n", "{\"ev\":\"run\",\"seed\":2,\"cores\":1}\n");
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->line == 1u);
  BOOST_TEST(!d->a.step.has_value());
  BOOST_TEST(!d->b.step.has_value());
}

BOOST_AUTO_TEST_CASE(step_numbers_are_read_only_from_step_lines) {
  BOOST_TEST(*step_of_line("{\"ev\":\"step\",\"n\":1234,\"t\":9,\"fiber\":0,\"of\":1}") == 1234u);
  BOOST_TEST(!step_of_line("{\"ev\":\"steps\",\"n\":1}").has_value());
  BOOST_TEST(!step_of_line("{\"ev\":\"shards.submitted\",\"t\":0,\"fiber\":3,\"n\":0}").has_value());
  BOOST_TEST(!step_of_line("{\"ev\":\"step\",\"n\":}").has_value());
}
