// The fresh state of every algorithm, derived from the rows of algorithm_table.hpp (their dispatch, evaluate, is
// inline in algorithms.hpp).
#include "ratewarden/algorithms.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {

AlgorithmState fresh_state(Algorithm algorithm) {
  switch (algorithm) {
#define RATEWARDEN_FRESH(name, State, option, fast) \
  case Algorithm::name: return State{};
    RATEWARDEN_ALGORITHMS(RATEWARDEN_FRESH)
#undef RATEWARDEN_FRESH
  }
  throw Error(ErrorCode::internal, "unknown algorithm");
}

}  // namespace ratewarden
