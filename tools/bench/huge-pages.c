// Reading anonymous memory with 4 KB pages and with transparent huge pages (MADV_HUGEPAGE), as the
// expert cache, the streamed spine's buffers and the RAM bandwidth probe map theirs. Prints, for
// each page size, how long mlock takes to populate the buffer and the rate of one sequential read
// pass, twice (the second time the machine has backed the memory before).
//   cc -O2 -o /tmp/huge-pages tools/bench/huge-pages.c && /tmp/huge-pages 4   (GiB)
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const size_t n = (size_t)(atof(argc > 1 ? argv[1] : "4") * (1ull << 30));
  for (int huge = 0; huge < 2; ++huge)
    for (int rep = 0; rep < 2; ++rep) {
      unsigned long* p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return perror("mmap"), 1;
      if (huge) madvise(p, n, MADV_HUGEPAGE);
      const double t0 = now();
      const int locked = mlock(p, n) == 0;
      const double t1 = now();
      volatile unsigned long sum = 0;
      for (size_t i = 0; i < n / sizeof *p; ++i) sum += p[i];
      const double t2 = now();
      printf("%s pages, pass %d: mlock%s %.2f s, sequential read %.2f GB/s\n", huge ? "huge" : "4 KB", rep + 1,
             locked ? "" : " (failed: not populated)", t1 - t0, n / 1e9 / (t2 - t1));
      munmap(p, n);
    }
  return 0;
}
