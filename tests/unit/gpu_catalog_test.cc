// GPU catalog: every required GPU, aliases, the memory convention, unknown names, bad catalogs.
#include "zerosim/gpu_catalog.h"

#include <gtest/gtest.h>

namespace zerosim {
namespace {

TEST(GpuCatalog, EveryRequiredGpuIsPresentWithASource) {
  for (const char* name :
       {"A100-40GB", "A100-80GB",  "H100-SXM-80GB", "H100-PCIe-80GB", "H200-141GB", "B200",
        "MI300X",    "L40S",       "RTX-4090",      "V100-32GB",      "A10",        "A10G",
        "L4",        "RTX-A6000",  "RTX-3090",      "H800-SXM-80GB",  "H20",        "V100-16GB",
        "MI250X",    "GH200-96GB", "GH200-144GB"}) {
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
  EXPECT_EQ(gpu_catalog().size(), 21u);
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

// Issue 11: the GPUs people fine-tune on, from their data sheets (dense rates, memory as GiB).
TEST(GpuCatalog, PublishedNumbersOfTheAddedGpus) {
  const auto g = [](const char* n) { return find_gpu(n).value(); };
  EXPECT_EQ(g("A10G").memory_bytes, 24ULL << 30);
  EXPECT_EQ(g("A10G").hbm_gbps, 600);
  EXPECT_EQ(g("A10").bf16_tflops, 125);  // data sheet 250 with sparsity
  EXPECT_EQ(g("L4").bf16_tflops, 121);   // data sheet 242 with sparsity
  EXPECT_EQ(g("L4").hbm_gbps, 300);
  EXPECT_EQ(g("RTX-A6000").memory_bytes, 48ULL << 30);
  EXPECT_EQ(g("RTX-3090").bf16_tflops, 71);  // GA102 whitepaper: fp32 accumulate
  EXPECT_EQ(g("RTX-3090").hbm_gbps, 936);
  EXPECT_EQ(g("H800").bf16_tflops, g("H100-SXM-80GB").bf16_tflops);  // same tensor cores
  EXPECT_EQ(g("H800").intra_node_gbps, 200);                         // NVLink 400 GB/s bidir
  EXPECT_EQ(g("H20").memory_bytes, 96ULL << 30);
  EXPECT_EQ(g("H20").bf16_tflops, 148);
  EXPECT_EQ(g("V100-16GB").memory_bytes, 16ULL << 30);
  EXPECT_EQ(g("V100-16GB").bf16_tflops, 0);          // Volta: no bf16
  EXPECT_EQ(g("MI250X").memory_bytes, 64ULL << 30);  // one GCD: half the 128 GB package
  EXPECT_EQ(g("MI250X").generation, GpuGeneration::Unknown);
  EXPECT_EQ(g("GH200-96GB").pcie_gbps, 450);  // NVLink-C2C 900 GB/s bidirectional to the CPU
  EXPECT_EQ(g("GH200-144GB").memory_bytes, 144ULL << 30);
}

// A name people type for these GPUs finds that GPU, never a "did you mean" to another one.
TEST(GpuCatalog, EverydayNamesOfTheAddedGpusResolve) {
  const std::pair<const char*, const char*> cases[] = {{"A10G", "A10G"},
                                                       {"a10g", "A10G"},
                                                       {"A10", "A10"},
                                                       {"L4", "L4"},
                                                       {"A6000", "RTX-A6000"},
                                                       {"RTX A6000", "RTX-A6000"},
                                                       {"rtx_a6000", "RTX-A6000"},
                                                       {"RTX 3090", "RTX-3090"},
                                                       {"3090", "RTX-3090"},
                                                       {"rtx3090", "RTX-3090"},
                                                       {"H800", "H800-SXM-80GB"},
                                                       {"H20", "H20"},
                                                       {"V100-16GB", "V100-16GB"},
                                                       {"MI250X", "MI250X"},
                                                       {"gh200-hbm3e", "GH200-144GB"}};
  for (const auto& [typed, name] : cases) {
    auto g = find_gpu(typed);
    ASSERT_TRUE(g.ok()) << typed << ": " << g.diagnostics().to_string();
    EXPECT_EQ(g->name, name) << typed;
  }
}

// "A100" used to mean the 80 GB part silently; a bare name sold in several versions is refused
// with the versions, their memory and what they are.
TEST(GpuCatalog, AmbiguousNamesAreRefusedWithTheChoices) {
  auto a100 = find_gpu("A100", "--gpu");
  ASSERT_FALSE(a100.ok());
  EXPECT_EQ(a100.diagnostics().to_string(),
            "--gpu: \"A100\" names more than one GPU; give one of: A100-40GB (40.00 GiB, NVIDIA "
            "A100 SXM4 40 GB), A100-80GB (80.00 GiB, NVIDIA A100 SXM4 80 GB)\n");
  for (const char* n : {"a100", "H100", "h100", "V100", "GH200"}) {
    auto g = find_gpu(n, "--gpu");
    ASSERT_FALSE(g.ok()) << n;
    EXPECT_NE(g.diagnostics().to_string().find("names more than one GPU"), std::string::npos)
        << g.diagnostics().to_string();
  }
  EXPECT_NE(find_gpu("V100").diagnostics().to_string().find("V100-16GB (16.00 GiB"),
            std::string::npos);
  ASSERT_EQ(ambiguous_gpu_names().size(), 4u);
  for (const auto& a : ambiguous_gpu_names())
    for (const auto& c : a.choices) EXPECT_TRUE(find_gpu(c).ok()) << c;
}

TEST(GpuCatalog, AmbiguousSectionIsChecked) {
  const std::string gpu =
      R"({"name": "X1", "memory_bytes": 1, "bf16_tflops": 1, "fp16_tflops": 1, "fp32_tflops": 1,
          "hbm_gbps": 1, "intra_node_gbps": 1, "network_gbps": 1, "pcie_gbps": 1, "source": "s"})";
  std::vector<AmbiguousGpuName> amb;
  auto r = load_gpu_catalog_text(R"({"format": "zerosim-gpu-catalog", "version": 1, "gpus": [)" +
                                     gpu + R"(], "ambiguous": [{"name": "x1", "choices": ["X1",
                                     "X2"]}, {"name": "Y", "choices": ["X1"], "why": 1}]})",
                                 "cat.json", &amb);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().to_string(),
            "cat.json: /ambiguous/0/name: ambiguous name \"x1\" is also a GPU's name or alias\n"
            "cat.json: /ambiguous/0/choices/1: expected the name of a GPU in \"gpus\", got \"X2\"\n"
            "cat.json: /ambiguous/1/choices: expected at least two choices\n"
            "cat.json: /ambiguous/1/why: unknown key \"why\"\n");
}

TEST(GpuCatalog, AliasesAndSpellings) {
  EXPECT_EQ(find_gpu("h100-80gb")->name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("h100_sxm")->name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("H100 SXM 80GB")->name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("h100-pcie")->name, "H100-PCIe-80GB");
  EXPECT_EQ(find_gpu("a100-80g")->name, "A100-80GB");
  EXPECT_EQ(find_gpu("h200")->name, "H200-141GB");
  EXPECT_EQ(find_gpu("rtx4090")->name, "RTX-4090");
  EXPECT_EQ(find_gpu("mi300x")->name, "MI300X");
}

TEST(GpuCatalog, UnknownNameListsKnownOnesAndSuggests) {
  auto g = find_gpu("H1000", "--gpu");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.diagnostics().to_string(),
            "--gpu: unknown GPU \"H1000\"; known GPUs: A100-40GB, A100-80GB, H100-SXM-80GB, "
            "H100-PCIe-80GB, H200-141GB, B200, MI300X, L40S, RTX-4090, V100-32GB, A10, A10G, L4, "
            "RTX-A6000, RTX-3090, H800-SXM-80GB, H20, V100-16GB, MI250X, GH200-96GB, GH200-144GB "
            "(did you mean \"H200\"? A GPU not in the catalog: --gpu-memory SIZE)\n");
  // Nothing close: no guess, but the way to give any GPU.
  auto far = find_gpu("toaster");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.diagnostics().items()[0].hint,
            "a GPU not in the catalog: --gpu-memory SIZE [--gpu-tflops X] [--gpu-bandwidth X]");
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
