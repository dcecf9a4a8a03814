// Rules for scaled_dot_product_attention and its backward (ltorch.scaled_dot_product_attention_backward,
// recorded by its gradient rule). On CUDA with LibTorch 2.1 or later, 4-d q, k and v of one dtype
// (f32, f16, bf16), no mask, head dims a multiple of 8 and the last dim dense run LibTorch's
// memory-efficient attention kernels: one call each way (one kernel forward, four backward), where
// the matmuls, scale, mask, softmax, their backward and the operands' copies took about fifteen
// kernels. PyTorch documents that backward as not deterministic: two runs can differ in the last
// bits. The forward keeps the kernel's log-sum-exp by its output (forward_residues.h) for the
// backward, which recomputes it on a miss. Anything else runs softmax(q k^T / sqrt(E), masked) v as
// single at:: calls, the backward with the probabilities recomputed.
#include <torch/version.h>

#include <array>
#include <cmath>
#include <limits>
#include <tuple>

#include "exec/forward_residues.h"
#include "exec/rule_util.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TV_FUSED_ATTENTION 1
#else
#define TV_FUSED_ATTENTION 0
#endif

namespace tv::exec {

namespace {

using namespace rules;
using TT = const at::Tensor&;

bool causal_at(Args a, size_t i, Kw k) { return flag_at(a, i, k, "is_causal"); }

at::Tensor mask_at(Args a, size_t i, Kw k) {
  const RValue* v = argument(a, i, k, "attn_mask");
  return v && v->is_tensor() ? v->t : at::Tensor();
}

// softmax(q k^T / sqrt(E)) with causal keeping j <= i, a bool mask keeping where true, a float mask
// added.
at::Tensor attention_probabilities(TT q, TT k, TT mask, bool causal) {
  at::Tensor scores = rules::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  double minus_inf = -std::numeric_limits<double>::infinity();
  if (causal) {
    at::Tensor keep = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), minus_inf);
  }
  if (mask.defined())
    scores = mask.scalar_type() == at::kBool ? scores.masked_fill(mask.logical_not(), minus_inf) : scores + mask;
  return at::softmax(scores, -1);
}

#if TV_FUSED_ATTENTION
bool fused_kernel_applies(TT q, TT k, TT v, TT mask, bool causal) {
  if (!q.is_cuda() || mask.defined() || q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    return false;
  at::ScalarType st = q.scalar_type();
  if ((st != at::kFloat && st != at::kHalf && st != at::kBFloat16) || k.scalar_type() != st || v.scalar_type() != st)
    return false;
  for (int64_t d : {0, 1})
    if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) return false;
  if (k.size(2) != v.size(2) || k.size(3) != q.size(3) || (causal && q.size(2) != k.size(2))) return false;
  if (q.size(3) % 8 != 0 || v.size(3) % 8 != 0) return false;
  return q.stride(-1) == 1 && k.stride(-1) == 1 && v.stride(-1) == 1;
}

// The fused forward's log-sum-exp and random state, by its output, with the inputs it came from.
struct AttentionResidue {
  at::Tensor log_sumexp, philox_seed, philox_offset;
  SeenTensor q, k, v;
  bool causal;
};

ResiduesByTensor<AttentionResidue>& attention_residues() {
  thread_local ResiduesByTensor<AttentionResidue> residues;
  return residues;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_forward(TT q, TT k, TT v, bool causal) {
  return at::_scaled_dot_product_efficient_attention(q, k, v, {}, /*compute_log_sumexp=*/true, /*dropout_p=*/0.0,
                                                     causal);
}
#endif

RValue attention(Args a, Kw kw) {
  TT q = tensor_at(a, 0, "query"), k = tensor_at(a, 1, "key"), v = tensor_at(a, 2, "value");
  at::Tensor mask = mask_at(a, 3, kw);
  bool causal = causal_at(a, 4, kw);
#if TV_FUSED_ATTENTION
  if (fused_kernel_applies(q, k, v, mask, causal)) {
    auto [out, lse, seed, offset] = fused_forward(q, k, v, causal);
    attention_residues().remember(out, {lse, seed, offset, SeenTensor::of(q), SeenTensor::of(k), SeenTensor::of(v),
                                        causal});
    return RValue::of(out);
  }
#endif
  return RValue::of(rules::matmul(attention_probabilities(q, k, mask, causal), v));
}

RValue attention_backward(Args a, Kw kw) {
  at::Tensor g = tensor_at(a, 0, "grad");
  TT q = tensor_at(a, 1, "query"), k = tensor_at(a, 2, "key"), v = tensor_at(a, 3, "value");
  at::Tensor mask = mask_at(a, 4, kw);
  bool causal = causal_at(a, 6, kw);
#if TV_FUSED_ATTENTION
  if (fused_kernel_applies(q, k, v, mask, causal)) {
    TT out = tensor_at(a, 5, "output");
    at::Tensor o = out, lse, seed, offset;
    const AttentionResidue* r = attention_residues().recall(out);
    if (r && r->causal == causal && r->q.is(q) && r->k.is(k) && r->v.is(v))
      lse = r->log_sumexp, seed = r->philox_seed, offset = r->philox_offset;
    else
      std::tie(o, lse, seed, offset) = fused_forward(q, k, v, causal);
    if (g.stride(-1) != 1) g = g.contiguous();
    auto [gq, gk, gv, unused] = at::_scaled_dot_product_efficient_attention_backward(
        g, q, k, v, at::Tensor(), o, lse, seed, offset, /*dropout_p=*/0.0, std::array<bool, 4>{true, true, true, false},
        causal);
    return RValue::tuple({RValue::of(gq), RValue::of(gk), RValue::of(gv)});
  }
#endif
  at::Tensor p = attention_probabilities(q, k, mask, causal);
  at::Tensor gv = rules::matmul(p.transpose(-2, -1), g);
  at::Tensor gp = rules::matmul(g, v.transpose(-2, -1));
  double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor gs = at::_softmax_backward_data(gp, p, -1, p.scalar_type()).mul_(scale);
  at::Tensor gq = rules::matmul(gs, k), gk = rules::matmul(gs.transpose(-2, -1), q);
  return RValue::tuple({RValue::of(gq), RValue::of(gk), RValue::of(gv)});
}

}  // namespace

bool rules::fused_attention_on(const Device& device) {
  return TV_FUSED_ATTENTION && device.kind == Device::Kind::cuda;
}

void detail::register_attention_rules() {
  auto simple = [](RValue (*fn)(Args, Kw)) {
    return [fn](const ExecContext&, Args a, Kw k) { return fn(a, k); };
  };
  detail::add_builtin("ltorch.scaled_dot_product_attention", simple(attention));
  detail::add_builtin("ltorch.scaled_dot_product_attention_backward", simple(attention_backward));
  alias("torch.nn.functional.scaled_dot_product_attention", "ltorch.scaled_dot_product_attention");
}

}  // namespace tv::exec
