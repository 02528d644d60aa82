// Data files compiled into the binary (model zoo, GPU catalog); see cmake/ZerosimEmbed.cmake.
#pragma once

#include <span>
#include <string_view>

namespace zerosim {

struct EmbeddedFile {
  std::string_view name;     ///< file name, e.g. "llama2-7b.json"
  std::string_view content;  ///< the file's text
};

std::span<const EmbeddedFile> zoo_files();          ///< models/zoo/*.json, sorted by name
std::span<const EmbeddedFile> gpu_catalog_files();  ///< models/gpu_catalog.json

}  // namespace zerosim
