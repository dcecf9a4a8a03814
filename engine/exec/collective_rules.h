// Execution rules of the collectives (ops/collectives.h), installed with the built-in rules.
// Contract: the rules read the communicator from ExecOptions::user as
// `std::any_cast<dist::Communicator*>(options.user)`. A collective starts asynchronously and
// yields a pending-work handle; wait completes it. Without a communicator they compute what one
// rank alone would (identity).
#pragma once
#include <cstddef>

namespace tv::dist {
class Communicator;
}

namespace tv::exec {
struct ExecOptions;

// The communicator in `options.user`, which the collective rules run on; null when there is none.
dist::Communicator* communicator(const ExecOptions& options);
// Collectives started and not yet waited, over all executors (a leak check for tests).
size_t pending_collectives();

}  // namespace tv::exec
