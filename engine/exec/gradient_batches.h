// Gradient batches: the same-shaped weight and bias gradients of a backward (one per layer of a
// stack of identical blocks), each computed by one batched op when the trace returns them. A
// host-bound step launches two kernels per layer and linear for them (the weight's matmul, the
// bias's sum); batched, four linears of 32 layers take about twenty launches instead of 256. The
// values are those of the statements (a batched matmul's slices, up to the GEMM's rounding).
// Contract: `plan_gradient_batches` picks the top-level statements of `trace` that are a 2-d
// matmul or a sum over constant dims (no dtype) of a floating tensor, whose single output nothing
// but the `return` reads, grouped by symbol, operand shapes, dtypes, devices and dims; a group of
// two or more whose operands take at most `max_bytes` becomes a batch. The executor defers a
// batch's members (PendingGradients::defer, with their evaluated operands, kept alive until then)
// and runs them all just before the `return` (run): one stack per operand, one bmm or sum, a slice
// per member. Deferring relies on the rules' contract (exec/rules.h): no rule updates a tensor in
// place, so an operand holds at the return the value it held at its statement.
// Internal to engine/exec.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/trace.h"

namespace tv::exec {

struct GradientBatches {
  struct Batch {
    bool matmul = false;          // else a sum over `sum_dims`
    std::vector<int64_t> sum_dims;
    std::vector<size_t> members;  // statement indexes, in order
  };
  std::vector<int> batch_of;  // per top-level statement: its batch, or -1
  std::vector<Batch> batches;
};

// reads[i] and writes[i]: the ids statement i of the body reads (its arguments') and writes.
GradientBatches plan_gradient_batches(const Trace& trace, const std::vector<std::vector<uint32_t>>& reads,
                                      const std::vector<std::vector<uint32_t>>& writes,
                                      int64_t max_bytes = int64_t{16} << 20);

class PendingGradients {
 public:
  explicit PendingGradients(const GradientBatches& plan) : plan_(plan), pending_(plan.batches.size()) {}
  bool any() const { return any_; }
  void defer(int batch, uint32_t output, std::vector<at::Tensor> operands);
  // Runs the deferred members batch by batch; `set(output id, value)` binds each one's result.
  void run(const std::function<void(uint32_t, at::Tensor)>& set);

 private:
  struct Member {
    uint32_t output;
    std::vector<at::Tensor> operands;
  };
  const GradientBatches& plan_;
  std::vector<std::vector<Member>> pending_;
  bool any_ = false;
};

}  // namespace tv::exec
