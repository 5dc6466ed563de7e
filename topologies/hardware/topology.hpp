#pragma once
// A hardware system as the sim executor sees it: one device type, a scale-up domain
// (NVLink island, ICI slice, one CPU machine) and a scale-out network between domains.
// Read from topologies/catalog/<name>.json or from a file `ibt calibrate` wrote; both
// have the same schema (topologies/README.md):
//
//   name, description, sources{id: {kind: public|measured|assumption, ref}},
//   device{name, peak_tflops{fp32,tf32,bf16,fp8}, memory_GB, memory_bandwidth_GBps,
//          gemm_tiles{compute_units, tile_rows, tile_cols, wave_quantization?}?},
//   scale_up{name, devices_per_domain, bandwidth_GBps, latency_us, algorithms[],
//            torus{links_per_chip, link_bandwidth_GBps, axis_chips}?},
//   scale_out{name, bandwidth_GBps, latency_us, algorithms[]}?   (absent: one domain only)
//   model{collective_launch_us, gemm_efficiency, memory_efficiency, op_overhead_us,
//         scale_up_efficiency, scale_out_efficiency},
//   fits[]?  (collective fits from `ibt calibrate`, see CollectiveFit)
//   reliability{node_mtbf_hours, devices_per_node, checkpoint_write_GBps,
//               restart_minutes}?  (failures and checkpoints, for goodput; see Reliability)
//
// Every figure is {"value": number|null, "unit": "...", "source": "<id in sources>",
// "note": "..."?}: nothing enters the model without saying where it came from. A null
// value needs a note saying why it is unknown. Bandwidths are per device and
// unidirectional, in GB/s (1e9 B/s); latencies in microseconds; FLOP/s dense.
#include <optional>
#include <string>
#include <vector>

#include "topologies/hardware/gemm_shape.hpp"

namespace ibt::topo {

struct Figure {
  std::optional<double> value;  // nullopt: not known for this system (note says why)
  std::string unit;
  std::string source;  // key into Topology::sources
  std::string note;
  double get() const { return value.value_or(0.0); }
  bool known() const { return value.has_value(); }
};

enum class SourceKind { public_ref, measured, assumption };
struct Source {
  std::string id;
  SourceKind kind = SourceKind::public_ref;
  std::string ref;
};

// Collective algorithms a fabric offers. nvls: NVLink SHARP (reduction inside the
// NVSwitch); sharp: in-network reduction in InfiniBand switches (NCCL CollNet).
enum class Algorithm { ring, tree, nvls, sharp };
const char* to_string(Algorithm a);

struct Torus {
  Figure links_per_chip, link_bandwidth_GBps, axis_chips;
};

struct Fabric {
  bool present = false;
  std::string name;
  Figure bandwidth_GBps, latency_us;
  std::vector<Algorithm> algorithms;
  bool offers(Algorithm a) const;
};

struct ScaleUp : Fabric {
  Figure devices_per_domain;
  std::optional<Torus> torus;
};

// How the device cuts a GEMM into work (gemm_shape.hpp): output tiles of tile_rows x
// tile_cols, one tile per compute unit (an SM; a TPU MXU) at a time.
struct GemmTiles {
  Figure compute_units, tile_rows, tile_cols;
  // 1: a last partial wave idles the units it does not fill (priced); 0: the library
  // spreads it over all units (stream-K, split-K), so only partial tiles cost. Absent: 1.
  Figure wave_quantization;
  bool prices_waves() const { return !wave_quantization.known() || wave_quantization.get() != 0; }
  TileGrid grid() const {  // what gemm_shape.hpp prices with
    return {compute_units.get(), tile_rows.get(), tile_cols.get(), prices_waves()};
  }
};

struct Device {
  std::string name;
  Figure fp32, tf32, bf16, fp8;  // peak dense TFLOP/s
  Figure memory_GB, memory_bandwidth_GBps;
  Figure power_W;                       // board power (TDP) per device, optional: energy per token where known
  std::optional<GemmTiles> gemm_tiles;  // absent: GEMMs priced without their shape
  const Figure& peak(const std::string& dtype) const;  // throws UsageError on other names
};

struct ModelParams {
  Figure collective_launch_us, gemm_efficiency, memory_efficiency, op_overhead_us, scale_up_efficiency,
      scale_out_efficiency;
};

// A fitted latency-bandwidth model of one collective from measurements:
// time_us = alpha_us + bytes / (algbw_GBps * 1e3). busbw_GBps is the asymptotic bus
// bandwidth (nccl-tests factor applied), kept for people reading the file.
struct CollectiveFit {
  std::string op;     // all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, ...
  std::string scope;  // intra, inter, world
  int group_size = 0;
  double alpha_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  int points = 0;
  double rms_rel_residual = 0;
  double max_rel_residual = 0;
  double min_bytes = 0, max_bytes = 0;
  std::string source;  // key into sources
};

// What a failing, checkpointing job sees (topologies/goodput/failure_model.hpp): the mean time
// between failures of one node, the devices a node holds (a node failure takes all of
// them), the checkpoint write bandwidth each device gets from storage when all devices
// save at once, and the time from a failure until training resumes from the last
// checkpoint (relaunch, initialisation, checkpoint read).
struct Reliability {
  Figure node_mtbf_hours, devices_per_node, checkpoint_write_GBps, restart_minutes;
};

struct Topology {
  std::string name;
  std::string description;
  std::string origin;  // file it was read from
  std::vector<Source> sources;
  Device device;
  ScaleUp scale_up;
  Fabric scale_out;
  ModelParams model;
  std::vector<CollectiveFit> fits;
  std::optional<Reliability> reliability;  // absent: no failure figures for this system

  int domain_size() const { return static_cast<int>(scale_up.devices_per_domain.get()); }
  // The devices of each scale-up domain a job of `world` devices uses: the largest
  // divisor of `world` that fits in a domain (the whole domain when it divides the job
  // or the job fits in one). A job across domains whose size does not divide it is
  // placed by its scheduler in equal segments, each inside one domain, rather than
  // filling every domain and splitting groups at the edges: Slurm's topology/block
  // plugin with --segment, which NVIDIA recommends on GB200 NVL72 (segment 16 nodes =
  // 64 of a rack's 72 GPUs for jobs of 128 GPUs and more; "Achieving Peak System and
  // Workload Efficiency on NVIDIA GB200 NVL72 with Slurm Block Scheduling", NVIDIA
  // technical blog, 2025), and that Megatron-Core's DeepSeek-V3 GB200 recipe sets so
  // that every EP group lies in one NVLink domain (SEGMENT = EP x TP / 4 nodes,
  // github.com/yanring/Megatron-MoE-ModelZoo best_practice/DeepSeekV3/run_gb200.sh).
  int placement_domain(long long world) const;
  const Source* find_source(const std::string& id) const;
  // Every figure with a path name ("device.peak_tflops.bf16"), for checks and printing.
  std::vector<std::pair<std::string, const Figure*>> figures() const;
};

// $IBT_TOPOLOGIES_DIR, else an installed share/ibt (core/data_dirs.hpp), else the compiled-in
// <source>/topologies/catalog.
std::string catalog_dir();
std::vector<std::string> catalog_names();
// A catalog name ("dgx-h100") or a path (contains '/' or ends in ".json").
Topology load_topology(const std::string& name_or_path);
// Parses and validates; `origin` names the file in every error message. Unknown keys,
// missing figures, a figure without a source or citing an unknown source, a public
// source without an http(s) address and out-of-range values are UsageErrors.
Topology parse_topology(const std::string& json_text, const std::string& origin);
// The same schema back as JSON text (calibrate writes it; runs embed it).
std::string to_json(const Topology& t);

// A copy with a different fabric, for the crossover sweep: `devices_per_domain`
// devices per scale-up domain and `scale_out_gbps` Gb/s of scale-out per device. The
// figures it changes cite a source "crossover-grid" of kind assumption.
Topology with_fabric(const Topology& base, int devices_per_domain, double scale_out_gbps);

}  // namespace ibt::topo
