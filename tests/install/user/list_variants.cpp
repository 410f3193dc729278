// Lists the variants of the installed axpy library by name.
#include <cstdio>

#include <axpy.h>

int main() {
  for (const taot::VariantInfo& variant : axpy::axpy_variants()) std::printf("%s\n", variant.id());
  return 0;
}
