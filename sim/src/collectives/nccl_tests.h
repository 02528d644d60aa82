// Private to the nccl-tests calibration: the tables read from nccl-tests text output
// (nccl_tests_parser.cc) and the least-squares fit that turns one into a CalibratedCollective
// (nccl_tests_fit.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/collective_model.h"

namespace zerosim::collectives {

/// One data row: out-of-place columns only (in-place measures the same call; the fit uses one).
struct NcclTestsRow {
  std::size_t line = 0;   ///< 1-based line in the file
  Bytes size = 0;         ///< S, bytes
  double time_us = 0;     ///< mean time per call, µs (> 0)
  double algbw_gbps = 0;  ///< S / time
  double busbw_gbps = 0;  ///< algbw × factor
};

/// One result table of one nccl-tests program run.
struct NcclTestsTable {
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::size_t first_line = 0;  ///< where the run (or, for a bare table, its header) starts
  std::uint32_t ranks = 0;     ///< from the "#  Rank" lines of the first group; 0 if none listed
  std::uint32_t nodes = 0;     ///< distinct host names in those lines; 0 if none listed
  std::vector<NcclTestsRow> rows;
};

/// Fits t(S) = alpha + S × factor / busBw to the rows (relative least squares). Errors and
/// warnings are reported against `source` with line numbers.
Result<CalibratedCollective> fit_nccl_tests_table(const NcclTestsTable& table,
                                                  const std::string& source);

}  // namespace zerosim::collectives
