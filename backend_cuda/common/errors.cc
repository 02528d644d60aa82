// library_error, does_not_fit and no_cuda_device (cuda_errors.h).
#include "zerosim/cuda_errors.h"

namespace zerosim::cuda {

Diagnostic library_error(const LibraryError& e, const std::string& where) {
  std::string m = (where.empty() ? "" : where + ": ") + e.call + " failed: " + e.library +
                  " error " + std::to_string(e.code) + " " + e.code_name;
  if (!e.message.empty()) m += " (" + e.message + ")";
  if (!e.last_error.empty()) m += "; NCCL last error: " + e.last_error;
  return Diagnostic{Severity::Error, e.file + ":" + std::to_string(e.line), "", std::move(m), {}};
}

Diagnostic does_not_fit(std::uint32_t rank, std::uint32_t buffer, const std::string& category,
                        std::uint64_t requested, std::uint64_t free_bytes,
                        std::uint64_t total_bytes) {
  return Diagnostic{Severity::Error, "cuda backend", "",
                    "does not fit: rank " + std::to_string(rank) + ", buffer #" +
                        std::to_string(buffer) + " (" + category + "), " +
                        std::to_string(requested) + " bytes requested, " +
                        std::to_string(free_bytes) + " bytes free of " +
                        std::to_string(total_bytes) + " on the device",
                    "a smaller micro-batch, a higher ZeRO stage or more GPUs: zerosim plan"};
}

Diagnostic no_cuda_device(const std::string& code_name, const std::string& message) {
  return Diagnostic{Severity::Error, "cuda backend", "",
                    "no CUDA device: cudaGetDeviceCount: " + code_name + " (" + message + ")",
                    "run on a machine with an NVIDIA GPU and driver, or use --backend host"};
}

}  // namespace zerosim::cuda
