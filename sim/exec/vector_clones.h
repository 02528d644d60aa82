// ZEROSIM_VECTOR_CLONES: data mode's element loops compiled for the CPU they run on. An entry point
// marked with it is built three times (x86-64-v4: AVX-512; x86-64-v3: AVX2; the baseline) and the
// loader binds the widest one the CPU has (GCC's target_clones: an ifunc resolved once at start);
// `flatten` inlines the typed loops it calls into each copy, so they vectorise to that width (the
// 64-bit multiplies of SyntheticGrads' hash need AVX-512's vpmullq to vectorise at all). Measured
// on the build machine (AMD EPYC with AVX-512, GPT-2 small stage 2 at 4 ranks, one step): 7.5 s of
// user time before, 4.0 s with AVX-512 loops. Every copy computes the same bits: the loops are
// integer hashing and IEEE float adds, multiplies, divides and square roots, and their sources are
// compiled with -ffp-contract=off (sim/CMakeLists.txt) so no copy fuses a multiply-add (GCC
// contracts by default in C++ modes once FMA is available, as it is in x86-64-v3). Elsewhere (other
// compilers, other architectures, clang-tidy's parse) and in sanitizer builds (an ifunc resolver
// runs during relocation, before a sanitizer's runtime is up; the sanitizers check the baseline
// loops) the macro is empty: one portable copy. Private to sim/exec.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) &&                       \
    !defined(ZEROSIM_NO_VECTOR_CLONES)
#define ZEROSIM_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), flatten))
#else
#define ZEROSIM_VECTOR_CLONES
#endif
