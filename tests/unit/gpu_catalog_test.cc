// GPU catalog: every required GPU, aliases, the memory convention, unknown names, bad catalogs.
#include "zerosim/gpu_catalog.h"

#include <gtest/gtest.h>

namespace zerosim {
namespace {

TEST(GpuCatalog, EveryRequiredGpuIsPresentWithASource) {
  for (const char* name : {"A100-40GB", "A100-80GB", "H100-SXM-80GB", "H100-PCIe-80GB",
                           "H200-141GB", "B200", "MI300X", "L40S", "RTX-4090", "V100-32GB"}) {
    auto g = find_gpu(name);
    ASSERT_TRUE(g.ok()) << name << ": " << g.diagnostics().to_string();
    EXPECT_EQ(g->name, name);
    EXPECT_EQ(g->source.rfind("https://", 0), 0u) << name;
    EXPECT_GT(g->memory_bytes, 0u) << name;
    EXPECT_GT(g->fp16_tflops, g->fp32_tflops) << name;
    EXPECT_GT(g->hbm_gbps, 0) << name;
    EXPECT_GT(g->intra_node_gbps, 0) << name;
    EXPECT_GT(g->network_gbps, 0) << name;
    EXPECT_GT(g->pcie_gbps, 0) << name;
  }
  EXPECT_EQ(gpu_catalog().size(), 10u);
  EXPECT_EQ(gpu_catalog().front().name, "A100-40GB");  // file order
}

TEST(GpuCatalog, PublishedNumbers) {
  auto h100 = find_gpu("H100-SXM-80GB");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->memory_bytes, 85899345920u);  // 80 GiB of HBM3
  EXPECT_EQ(h100->bf16_tflops, 989.5);          // half the data sheet's sparse 1979
  EXPECT_EQ(h100->intra_node_gbps, 450);        // NVLink 4: 900 GB/s bidirectional
  EXPECT_EQ(h100->network_gbps, 50);            // 400 Gb/s NDR
  auto h200 = find_gpu("H200-141GB");
  EXPECT_EQ(h200->memory_bytes, 141ULL << 30);
  EXPECT_EQ(h200->hbm_gbps, 4800);
  auto v100 = find_gpu("V100-32GB");
  EXPECT_EQ(v100->bf16_tflops, 0);  // Volta has no bf16
  EXPECT_EQ(v100->memory_bytes, 32ULL << 30);
  auto mi = find_gpu("MI300X");
  EXPECT_EQ(mi->memory_bytes, 192ULL << 30);
}

TEST(GpuCatalog, AliasesAndSpellings) {
  EXPECT_EQ(find_gpu("H100")->name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("h100-80gb")->name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("h100_sxm")->name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("H100 SXM 80GB")->name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("h100-pcie")->name, "H100-PCIe-80GB");
  EXPECT_EQ(find_gpu("a100")->name, "A100-80GB");
  EXPECT_EQ(find_gpu("h200")->name, "H200-141GB");
  EXPECT_EQ(find_gpu("rtx4090")->name, "RTX-4090");
  EXPECT_EQ(find_gpu("mi300x")->name, "MI300X");
}

TEST(GpuCatalog, UnknownNameListsKnownOnesAndSuggests) {
  auto g = find_gpu("H1000", "--gpu");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.diagnostics().to_string(),
            "--gpu: unknown GPU \"H1000\"; known GPUs: A100-40GB, A100-80GB, H100-SXM-80GB, "
            "H100-PCIe-80GB, H200-141GB, B200, MI300X, L40S, RTX-4090, V100-32GB "
            "(did you mean \"H100\"?)\n");
  auto far = find_gpu("toaster");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.diagnostics().items()[0].hint, "");
}

TEST(GpuCatalog, BadCatalogTextIsReportedWithPointers) {
  const std::string text = R"({"format": "zerosim-gpu-catalog", "version": 1, "gpus": [
    {"name": "X1", "aliases": ["x"], "memroy_bytes": 10, "bf16_tflops": 1, "fp16_tflops": 1,
     "fp32_tflops": "fast", "hbm_gbps": 1, "intra_node_gbps": 1, "network_gbps": 1, "pcie_gbps": 1},
    {"name": "X2", "aliases": ["X"], "memory_bytes": 10, "bf16_tflops": 1, "fp16_tflops": 1,
     "fp32_tflops": 1, "hbm_gbps": -1, "intra_node_gbps": 1, "network_gbps": 1, "pcie_gbps": 1,
     "source": "https://example.org"}]})";
  auto r = load_gpu_catalog_text(text, "cat.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.diagnostics().to_string(),
      "cat.json: /gpus/0: missing required key \"memory_bytes\"\n"
      "cat.json: /gpus/0/fp32_tflops: expected a number in [0, 1e+07], got \"fast\"\n"
      "cat.json: /gpus/0: missing required key \"source\" (every entry names its data sheet)\n"
      "cat.json: /gpus/0/memroy_bytes: unknown key \"memroy_bytes\" (did you mean "
      "\"memory_bytes\"?)\n"
      "cat.json: /gpus/1/hbm_gbps: expected a number in [0, 1e+07], got -1\n"
      "cat.json: /gpus/1: name or alias \"X\" is used by more than one GPU\n");
}

TEST(GpuCatalog, WrongFormatAndSyntax) {
  auto fmt = load_gpu_catalog_text(R"({"format": "other", "version": 2, "gpus": []})", "c.json");
  ASSERT_FALSE(fmt.ok());
  EXPECT_EQ(fmt.diagnostics().to_string(),
            "c.json: /format: expected \"zerosim-gpu-catalog\", got \"other\"\n"
            "c.json: /version: expected an integer 1..1, got 2\n");
  auto syntax = load_gpu_catalog_text("{\"gpus\": [", "c.json");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.diagnostics().to_string().find("c.json: invalid JSON at line 1"),
            std::string::npos);
}

TEST(GpuCatalog, ClusterWorldSize) {
  Cluster c;
  c.nodes = 4;
  c.gpus_per_node = 8;
  EXPECT_EQ(c.world_size(), 32u);
}

}  // namespace
}  // namespace zerosim
