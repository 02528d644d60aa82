// zerosim command-line entry point.
#include <cstdio>

int main() {
  std::puts("zerosim: under construction");
  return 0;
}
