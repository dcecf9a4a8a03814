// Execution rules of the collectives (ops/collectives.h), installed with the built-in rules.
// Contract: the rules read the communicators from ExecOptions::user, which holds either a
// `dist::Communicator*` (the world: every collective runs on it) or a `const dist::ProcessGroups*`
// (a collective runs on the communicator of its group argument's name; the world's group on
// `world`). A group name with no communicator is an ExecError naming it. A collective starts
// asynchronously and yields a pending-work handle; wait completes it. Without any communicator
// they compute what one rank alone would (identity).
#pragma once
#include <cstddef>

#include <string>
#include <vector>

namespace tv::dist {
class Communicator;
}

namespace tv::exec {
struct ExecOptions;

// The communicator the collectives of `group` (a group name) run on; null when `options.user`
// holds none. Throws ExecError when it holds groups but none of that name.
dist::Communicator* communicator(const ExecOptions& options, const std::string& group = {});
// Every communicator `options.user` holds (the world first); empty when none.
std::vector<dist::Communicator*> communicators(const ExecOptions& options);
// Collectives started and not yet waited, over all executors (a leak check for tests).
size_t pending_collectives();

}  // namespace tv::exec
