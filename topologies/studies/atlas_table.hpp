#pragma once
// The "atlas" table of an `ibt crossover --atlas` run, one row per atlas cell
// (core/row_schema.hpp; the cells in atlas.hpp). The columns keep the names, types,
// units and order files have always had. Where no split fits, the MFUs and bands are
// NaN, never 0; the gain is stored as `ibt crossover` stores it (NaN where nothing fits,
// 1e300 where only PP fits).
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::topo {

struct AtlasRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string model, topology;
  std::int64_t devices = 0, global_batch = 0, domain_size = 0;
  double scale_out_gbps = 0;
  std::string framework, scale, scale_source;
  double mfu_with_pp = kNone, mfu_with_pp_low = kNone, mfu_with_pp_high = kNone;
  std::string split_with_pp;
  double mfu_no_pp = kNone, mfu_no_pp_low = kNone, mfu_no_pp_high = kNone;
  std::string split_no_pp, band_families;
  double gain = kNone, uncertainty = 0;
  std::string verdict, practice, practice_source, agreement, deciding_term, why;

  static constexpr std::string_view kTable = "atlas";
  static constexpr std::array<store::Field<AtlasRow>, 26> kFields{{
      {"model", &AtlasRow::model, "", "the catalog model"},
      {"topology", &AtlasRow::topology, "", "the catalog system"},
      {"devices", &AtlasRow::devices, "devices", "the devices of the job"},
      {"global_batch", &AtlasRow::global_batch, "sequences", "the global batch"},
      {"domain_size", &AtlasRow::domain_size, "devices", "the system's devices per scale-up domain"},
      {"scale_out_gbps", &AtlasRow::scale_out_gbps, "Gb/s", "the system's scale-out rate per device"},
      {"framework", &AtlasRow::framework, "", "the framework profile the cell applies"},
      {"scale", &AtlasRow::scale, "", "\"published\" or \"chosen\": where devices and batch come from"},
      {"scale_source", &AtlasRow::scale_source, "", "the source of the scale (a key of the atlas's sources)"},
      {"mfu_with_pp", &AtlasRow::mfu_with_pp, "fraction", "the best MFU with pipeline parallelism"},
      {"mfu_with_pp_low", &AtlasRow::mfu_with_pp_low, "fraction", "the low end of its MFU band (NaN when none)"},
      {"mfu_with_pp_high", &AtlasRow::mfu_with_pp_high, "fraction", "the high end of its MFU band (NaN when none)"},
      {"split_with_pp", &AtlasRow::split_with_pp, "", "the best split with PP and its strategy, or (none fits)"},
      {"mfu_no_pp", &AtlasRow::mfu_no_pp, "fraction", "the best MFU without pipeline parallelism"},
      {"mfu_no_pp_low", &AtlasRow::mfu_no_pp_low, "fraction", "the low end of its MFU band (NaN when none)"},
      {"mfu_no_pp_high", &AtlasRow::mfu_no_pp_high, "fraction", "the high end of its MFU band (NaN when none)"},
      {"split_no_pp", &AtlasRow::split_no_pp, "", "the best split without PP and its strategy, or (none fits)"},
      {"band_families", &AtlasRow::band_families, "",
       "the topology family whose validation error gives the MFU band (empty when none)"},
      {"gain", &AtlasRow::gain, "", "PP's relative gain in the ranking figure"},
      {"uncertainty", &AtlasRow::uncertainty, "",
       "the projection's relative uncertainty on the system (0 where no band is known)"},
      {"verdict", &AtlasRow::verdict, "", "pp_verdict()'s words (topologies/studies/verdict.hpp)"},
      {"practice", &AtlasRow::practice, "", "the published practice for the pair: pp, no-pp or none"},
      {"practice_source", &AtlasRow::practice_source, "", "the source of the practice"},
      {"agreement", &AtlasRow::agreement, "", "the verdict against practice (atlas.hpp's rules)"},
      {"deciding_term", &AtlasRow::deciding_term, "", "the part of the step that separates the two bests"},
      {"why", &AtlasRow::why, "", "one sentence with the deciding term's seconds on each side"},
  }};
};

}  // namespace ibt::topo
