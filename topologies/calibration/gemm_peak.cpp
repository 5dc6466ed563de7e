#include "topologies/calibration/gemm_peak.hpp"

#include <variant>

#include "core/errors.hpp"
#include "reports/store/store.hpp"
#include "topologies/calibration/gemm_table.hpp"

namespace ibt::topo {

namespace {
// ibt gemm's own acceptance of a product (models/cuda/gemm_bench.hpp, kGemmTolerance):
// rows above it were wrong and do not count as a peak.
constexpr double kCorrectRelError = 1e-2;

std::string text(const store::Value& v) {
  const auto* s = std::get_if<std::string>(&v);
  return s ? *s : "";
}
}  // namespace

MeasuredGemmPeak measured_gemm_peak(const std::string& path, const std::string& gpu_name, const std::string& dtype) {
  const std::vector<store::RunInfo> runs = store::list_runs(path);
  std::string seen;
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    if (run->attr_string("kind") != "gemm" || run->attr_string("status") != "complete") continue;
    const std::string gpu = run->attr_string("gpu_name");
    if (gpu != gpu_name) {
      if (seen.find(gpu) == std::string::npos) seen += (seen.empty() ? "" : ", ") + gpu;
      continue;
    }
    const store::TableData t = store::read_table(path, run->id, std::string(GemmRow::kTable));
    const int c_dtype = t.column_index(store::column_name(&GemmRow::dtype)),
              c_tflops = t.column_index(store::column_name(&GemmRow::tflops)),
              c_err = t.column_index(store::column_name(&GemmRow::rel_error)),
              c_name = t.column_index(store::column_name(&GemmRow::name));
    if (c_dtype < 0 || c_tflops < 0 || c_err < 0 || c_name < 0)
      throw UsageError(path + ": run " + run->id + " has no gemm table with dtype, tflops, rel_error and name");
    MeasuredGemmPeak best;
    for (const store::Row& row : t.rows) {
      if (text(row[c_dtype]) != dtype || !(store::as_number(row[c_err]) <= kCorrectRelError)) continue;
      if (store::as_number(row[c_tflops]) > best.tflops) {
        best.tflops = store::as_number(row[c_tflops]);
        best.shape = text(row[c_name]);
        best.run_id = run->id;
      }
    }
    if (best.tflops > 0) return best;
    throw UsageError(path + ": the newest complete gemm run on " + gpu_name + " (run " + run->id + ") has no correct " +
                     dtype + " product");
  }
  throw UsageError(path + ": no complete `ibt gemm` run on " + gpu_name +
                   (seen.empty() ? std::string(" (it has no gemm runs)") : " (it has runs on: " + seen + ")"));
}

}  // namespace ibt::topo
