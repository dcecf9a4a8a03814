#include "record/verdict.h"

namespace tv {

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::passed: return "passed";
    case Outcome::failed: return "failed";
    case Outcome::refused: return "refused";
  }
  return "?";
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::equivalent: return "equivalent";
    case Verdict::different: return "different";
    case Verdict::not_comparable: return "not comparable";
  }
  return "?";
}

std::string_view verdict_meaning(Verdict v) {
  switch (v) {
    case Verdict::equivalent: return "canonically equal traces at every stage, equal numbers on every rank";
    case Verdict::different: return "both orders ran; their traces or numbers differ";
    case Verdict::not_comparable: return "one side failed or was refused, so there is nothing to compare";
  }
  return "?";
}

bool parse_outcome(std::string_view s, Outcome* out) {
  for (auto o : {Outcome::passed, Outcome::failed, Outcome::refused})
    if (outcome_name(o) == s) return *out = o, true;
  return false;
}

bool parse_verdict(std::string_view s, Verdict* out) {
  for (auto v : {Verdict::equivalent, Verdict::different, Verdict::not_comparable})
    if (verdict_name(v) == s) return *out = v, true;
  return false;
}

std::string PipelineOutcome::line() const {
  std::string out(outcome_name(kind));
  if (!reasons.empty()) out += ": " + reasons.front().substr(0, reasons.front().find('\n'));
  return out;
}

}  // namespace tv
