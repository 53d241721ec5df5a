#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <torch/utils.h>

#include <ostream>

#include "tests/child_log.h"

namespace {

// When a test case fails, prints the last child processes it ran (tests/child_log.h): their
// commands, how they ended and the end of their stderr, after doctest's own report of the
// failed checks. A failure of a test that runs `relpos` then shows the executable's error.
class ChildProcessReport : public doctest::IReporter {
 public:
  explicit ChildProcessReport(const doctest::ContextOptions& options) : out_(*options.cout) {}

  void test_case_start(const doctest::TestCaseData&) override {
    relpos::test::ChildLog::instance().take();
  }
  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    const auto notes = relpos::test::ChildLog::instance().take();
    if (stats.testCaseSuccess || notes.empty()) return;
    constexpr size_t kShown = 3;
    const size_t first = notes.size() > kShown ? notes.size() - kShown : 0;
    out_ << "\nThe failed test case ran " << notes.size() << " child process(es)";
    if (first > 0) out_ << "; the last " << kShown;
    out_ << ":\n";
    for (size_t i = first; i < notes.size(); ++i) {
      const auto& n = notes[i];
      out_ << "  [" << i + 1 << "] " << n.command << "\n      ended with " << n.ending;
      if (n.err.empty()) {
        out_ << "; it wrote nothing to stderr\n";
        continue;
      }
      out_ << "; the end of its stderr:\n" << n.err;
      if (n.err.back() != '\n') out_ << "\n";
    }
    out_ << std::flush;
  }

  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  std::ostream& out_;
};

}  // namespace

REGISTER_LISTENER("child_processes", 1, ChildProcessReport);

int main(int argc, char** argv) {
  // Tests are small; one thread keeps them deterministic and avoids oversubscription under ctest -j.
  torch::set_num_threads(1);
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
