#pragma once
// The `steps` table: one row per training step of a measured run. Two commands write it,
// `ibt train` (StepRow::kTrainLayout) and `ibt import-log` (StepRow::kLoggedLayout, a
// log's steps: no losses, no breakdown it cannot know); calibration's measured train
// runs and the report read it, by column name. The columns keep the names, types and
// order files have always had (core/row_schema.hpp).
#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::tables {

struct StepRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // no value: NaN, never 0
  std::int64_t step = 0, iteration = 0;
  double loss = kNone, aux_loss = kNone, grad_norm = kNone, param_norm = kNone;
  double step_time = kNone, tokens_per_s = kNone, model_tflops = kNone, mfu = kNone;
  double compute = kNone, tp_comm = kNone, pp_comm_and_bubble = kNone, dp_comm = kNone, ep_comm = kNone, other = kNone,
         cp_comm = kNone;
  double ref_loss = kNone, ref_grad_norm = kNone, ref_param_norm = kNone;
  double mfu_gemm_peak = kNone, logged_tflops_per_gpu = kNone;

  static constexpr std::string_view kTable = "steps";
  static constexpr std::array<store::Field<StepRow>, 22> kFields{{
      {"step", &StepRow::step, "", "the step's number; 0 is the untimed first step (or an imported log's warm-up)"},
      {"loss", &StepRow::loss, "nats", "the training loss of the step"},
      {"aux_loss", &StepRow::aux_loss, "", "the MoE balance-loss term added to the objective (0 without one)"},
      {"grad_norm", &StepRow::grad_norm, "", "the global L2 norm of the gradients"},
      {"param_norm", &StepRow::param_norm, "", "the global L2 norm of the parameters after the step"},
      {"step_time", &StepRow::step_time, "s", "the step's time on the slowest rank"},
      {"tokens_per_s", &StepRow::tokens_per_s, "1/s", "tokens of the global batch over the step time"},
      {"model_tflops", &StepRow::model_tflops, "TFLOP/s", "model FLOPs of the step over its time, all ranks"},
      {"mfu", &StepRow::mfu, "", "model FLOPs utilisation against the devices' peak"},
      {"compute", &StepRow::compute, "s", "time in computation, mean over ranks"},
      {"tp_comm", &StepRow::tp_comm, "s", "time in tensor-parallel communication, mean over ranks"},
      {"pp_comm_and_bubble", &StepRow::pp_comm_and_bubble, "s",
       "time in pipeline sends and receives and waiting for them, mean over ranks"},
      {"dp_comm", &StepRow::dp_comm, "s", "time in data-parallel (and ZeRO) communication, mean over ranks"},
      {"ep_comm", &StepRow::ep_comm, "s", "time in expert-parallel all-to-alls, mean over ranks"},
      {"other", &StepRow::other, "s", "the rest of the step's time (optimizer, copies), mean over ranks"},
      {"ref_loss", &StepRow::ref_loss, "nats", "--check: the serial reference's loss at this step (else NaN)"},
      {"ref_grad_norm", &StepRow::ref_grad_norm, "", "--check: the serial reference's gradient norm (else NaN)"},
      {"ref_param_norm", &StepRow::ref_param_norm, "", "--check: the serial reference's parameter norm (else NaN)"},
      {"mfu_gemm_peak", &StepRow::mfu_gemm_peak, "", "MFU against a measured GEMM peak (NaN when none was given)"},
      {"cp_comm", &StepRow::cp_comm, "s", "time in context-parallel K/V traffic, mean over ranks"},
      {"iteration", &StepRow::iteration, "", "an imported log's iteration number"},
      {"logged_tflops_per_gpu", &StepRow::logged_tflops_per_gpu, "TFLOP/s",
       "the TFLOP/s per GPU the imported log reports (NaN when it reports none)"},
  }};
  // What `ibt train` stores: every field but an imported log's own.
  static inline const store::Layout<StepRow> kTrainLayout{
      "step",         "loss",     "aux_loss",      "grad_norm",      "param_norm",         "step_time", "tokens_per_s",
      "model_tflops", "mfu",      "compute",       "tp_comm",        "pp_comm_and_bubble", "dp_comm",   "ep_comm",
      "other",        "ref_loss", "ref_grad_norm", "ref_param_norm", "mfu_gemm_peak",      "cp_comm"};
  // What `ibt import-log` stores: the step, the log's iteration and figures, and the time
  // breakdown a log does not give (NaN), so readers of the breakdown find its columns.
  static inline const store::Layout<StepRow> kLoggedLayout{
      "step",    "iteration", "step_time",          "tokens_per_s", "model_tflops", "mfu",  "logged_tflops_per_gpu",
      "compute", "tp_comm",   "pp_comm_and_bubble", "dp_comm",      "ep_comm",      "other"};
};

}  // namespace ibt::tables
