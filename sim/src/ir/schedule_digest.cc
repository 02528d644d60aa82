// schedule_digest (schedule_digest.h): FNV-1a 64 over the schedule JSON (dense slots, without the
// model's name and the notes), hashed as it is written.
#include "zerosim/schedule_digest.h"

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <streambuf>

#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

// A streambuf that hashes what is written to it and keeps nothing.
class Fnv1aBuf final : public std::streambuf {
 public:
  std::uint64_t hash = 0xcbf29ce484222325ull;

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) add(static_cast<unsigned char>(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) add(static_cast<unsigned char>(p[i]));
    return n;
  }

 private:
  void add(unsigned char c) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
};

}  // namespace

std::string schedule_digest(const Schedule& s) {
  Fnv1aBuf buf;
  std::ostream out(&buf);
  // The dense slot form: the text every digest was taken over before files wrote slots sparsely,
  // so traces recorded then still compare with `zerosim check` (the IR did not change).
  write_schedule_json(s, out, SlotsForm::Dense, /*names=*/false);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(buf.hash));
  return std::string(kScheduleDigestScheme) + hex;
}

}  // namespace zerosim
