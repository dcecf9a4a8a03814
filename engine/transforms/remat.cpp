// The `remat` transform: rematerialization as a post-optimization hook.
#include "passes/remat.h"
#include "transforms/remat.h"

namespace tv {
namespace {

class Remat : public Transform {
 public:
  std::string name() const override { return "remat"; }
  void post_optimization(StageHistory& h, const TransformContext&) const override {
    auto fwd = h.last(TraceKind::forward), bwd = h.last(TraceKind::backward);
    if (!fwd || !bwd) return;  // nothing to rematerialize without a backward
    auto r = passes::rematerialize(*fwd, *bwd);
    double ms = r.forward->provenance && r.forward->provenance->milliseconds ? *r.forward->provenance->milliseconds : 0;
    h.record(TraceKind::forward, "Rematerialization", r.forward, ms);
    h.record(TraceKind::backward, "Rematerialization", r.backward, ms);
  }
};

}  // namespace

std::unique_ptr<Transform> make_remat_transform() { return std::make_unique<Remat>(); }
}  // namespace tv
