#pragma once
// Checkpoint/restart arithmetic for a job that fails as a Poisson process: the optimal
// checkpoint interval and the fraction of wall time that is useful training (goodput).
// All times in seconds. Symbols as in Daly (2006):
//   M      mean time between failures of the whole job (job MTBF)
//   delta  time to write one checkpoint (training is paused meanwhile)
//   R      restart time after a failure: relaunch, re-initialise, read the checkpoint
//   tau    compute time between two checkpoints
//   T_s    useful compute time of the whole run (the run without failures or checkpoints)
//
// Model (Daly's "complete" cost function, exact for exponential failures): the run is
// T_s / tau segments, each tau of compute followed by a checkpoint of delta. A failure
// at any moment -- computing, writing a checkpoint or restarting -- loses everything
// since the last completed checkpoint and costs a restart R, which can itself fail.
//
// References:
// - J. W. Young, "A first order approximation to the optimum checkpoint interval",
//   CACM 17(9), 1974: tau = sqrt(2 delta M).
// - J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
//   dumps", Future Generation Computer Systems 22(3), 2006, doi:10.1016/j.future.2004.11.016:
//   expected wall time T_w = M e^{R/M} (e^{(tau+delta)/M} - 1) T_s / tau, its exact
//   minimiser through the Lambert W function, and the perturbation estimate
//   tau = sqrt(2 delta M) [1 + 1/3 sqrt(delta/2M) + 1/9 (delta/2M)] - delta for
//   delta < 2M, tau = M otherwise.

namespace ibt::topo {

// Young (1974).
double young_interval(double delta, double mtbf);
// Daly (2006), higher-order estimate (the series above); M when delta >= 2M.
double daly_interval(double delta, double mtbf);
// The exact minimiser of Daly's T_w: e^{(tau+delta)/M} (1 - tau/M) = 1, i.e.
// tau = M (1 + W0(-e^{-(1 + delta/M)})). For checking the two estimates.
double optimal_interval_exact(double delta, double mtbf);
// Principal branch of the Lambert W function on [-1/e, 0] (Halley's iteration).
double lambert_w0(double x);

// Daly's expected wall time of a run of `solve` seconds of compute (exact under the
// model above; `solve` / `interval` segments, fractional allowed).
double expected_wall_time(double solve, double interval, double delta, double restart, double mtbf);
// goodput = T_s / T_w: useful compute over wall time, counting checkpoint writes, work
// lost to failures and restarts. Independent of T_s.
double goodput_exact(double interval, double delta, double restart, double mtbf);
// First-order form (Young's accounting): each failure costs R plus half a segment on
// average, so T_w (1 - (tau + delta) / 2M - R / M) = T_s (1 + delta / tau). Good while
// tau + delta + R << M; 0 when the bracket goes negative.
double goodput_first_order(double interval, double delta, double restart, double mtbf);
// Expected time lost to failures over a run: T_w - T_s - (T_s / tau) delta, i.e. the
// recomputed work, the partial checkpoints and the restarts.
double expected_lost_time(double solve, double interval, double delta, double restart, double mtbf);

}  // namespace ibt::topo
