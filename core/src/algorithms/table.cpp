// The state and dispatch of every algorithm, derived from the rows of algorithm_table.hpp.
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

int64_t evaluate(AlgorithmState& state, int64_t now, const Policy& p, int64_t cost, Mode mode, Decision& decision) {
  // The storage key names the algorithm, so a stored state always holds that algorithm's alternative.
  switch (p.algorithm) {
#define RATEWARDEN_EVALUATE(name, State, option, fast) \
  case Algorithm::name: return name(std::get<State>(state), now, p, cost, mode, decision);
    RATEWARDEN_ALGORITHMS(RATEWARDEN_EVALUATE)
#undef RATEWARDEN_EVALUATE
  }
  throw Error(ErrorCode::internal, "unknown algorithm");
}

}  // namespace ratewarden
