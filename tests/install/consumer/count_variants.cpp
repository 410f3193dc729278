// Prints the number of compiled variants of axpy: links the library taot_add_library built.
#include <cstdio>

#include "axpy.h"

int main() {
  std::printf("%zu\n", axpy::axpy_variants().size());
  return 0;
}
