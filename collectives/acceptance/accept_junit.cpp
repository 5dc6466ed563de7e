// ibt accept's JUnit XML report: one testcase per metric plus "correctness", or, when the
// run ended before its verdict, one failed testcase "run" with the reason.
#include "collectives/acceptance/accept_junit.hpp"

#include <sstream>

#include "collectives/acceptance/accept_where.hpp"
#include "core/output_file.hpp"

namespace ibt::suites {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

void write_junit(const std::string& path, const AcceptReference& ref, const std::vector<Verdict>& verdicts,
                 std::uint64_t wrong, const std::vector<std::string>& wrong_where, double seconds,
                 const std::string& run_failure) {
  std::ostringstream out;
  const std::string suite = "ibt.accept." + ref.system;
  if (!run_failure.empty()) {
    const std::size_t tests = ref.metrics.size() + 1;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<testsuites name=\"ibt accept\" tests=\"" << tests << "\" failures=\"1\">\n"
        << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << tests
        << "\" failures=\"1\" errors=\"0\" skipped=\"" << ref.metrics.size() << "\" time=\"" << seconds << "\">\n"
        << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"run\">\n"
        << "      <failure message=\"" << xml_escape(run_failure) << "\" type=\"run\"/>\n    </testcase>\n";
    for (const auto& m : ref.metrics)
      out << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"" << xml_escape(m.name)
          << "\">\n      <skipped message=\"not judged: the run ended first\"/>\n    </testcase>\n";
    out << "  </testsuite>\n</testsuites>\n";
    write_output_file(path, out.str(), "--junit");
    return;
  }
  int failures = wrong > 0;
  for (const auto& v : verdicts) failures += !v.judgement.pass;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"ibt accept\" tests=\"" << verdicts.size() + 1 << "\" failures=\"" << failures << "\">\n"
      << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << verdicts.size() + 1 << "\" failures=\""
      << failures << "\" errors=\"0\" time=\"" << seconds << "\">\n";
  for (const auto& v : verdicts) {
    const AcceptMetric& m = *v.metric;
    out << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"" << xml_escape(m.name) << "\">\n";
    const std::string detail = "measured " + m.quantity + " " + format_judged_value(v.judgement.measured) + " " +
                               m.unit + ", target " + format_judged_value(m.target) + " " + m.unit + ", bounds [" +
                               format_judged_value(m.lower_bound()) + ", " + format_judged_value(m.upper_bound()) +
                               "], margin " + format_judged_value(v.judgement.margin) +
                               (v.note.empty() ? "" : "; " + v.note);
    if (!v.judgement.pass)
      out << "      <failure message=\"" << xml_escape(m.name + ": " + detail) << "\" type=\"threshold\"/>\n";
    out << "      <system-out>" << xml_escape(detail) << "</system-out>\n    </testcase>\n";
  }
  out << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"correctness\">\n";
  if (wrong > 0)
    out << "      <failure message=\"" << xml_escape(wrong_values_summary(wrong, wrong_where))
        << "\" type=\"wrong\"/>\n";
  out << "    </testcase>\n  </testsuite>\n</testsuites>\n";
  write_output_file(path, out.str(), "--junit");
}

}  // namespace ibt::suites
