// A driver for the normal-mixture boundaries of confseq (Howard, Ramdas, McAuliffe & Sekhon's
// reference implementation, github.com/gostevehoward/confseq, MIT; not vendored here), used by
// generate_sequential_fixtures.py --confseq DIR as a third reference. Build:
//   g++ -O2 -std=c++14 -I DIR confseq_normal_mixture.cpp -o confseq_normal_mixture
// where DIR holds confseq's src/confseq/uniform_boundaries.h (Debian's libboost-dev suffices).
// Input lines: "s v v_opt alpha alpha_opt one_sided(0|1)"; output lines: "log_mixture bound" (%.17g).
#include <cstdio>

#include "uniform_boundaries.h"

int main() {
  double s, v, v_opt, alpha, alpha_opt;
  int one_sided;
  while (std::scanf("%lf %lf %lf %lf %lf %d", &s, &v, &v_opt, &alpha, &alpha_opt, &one_sided) == 6) {
    const double log_mixture = confseq::normal_log_mixture(s, v, v_opt, alpha_opt, one_sided != 0);
    const double bound = confseq::normal_mixture_bound(v, alpha, v_opt, alpha_opt, one_sided != 0);
    std::printf("%.17g %.17g\n", log_mixture, bound);
  }
  return 0;
}
