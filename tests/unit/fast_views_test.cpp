// Views made without the dispatcher (runtime/fast_views.h) against ATen's own view ops: the same
// sizes, strides, storage offset and storage, for contiguous and strided inputs, negative dims,
// an inferred size, uneven splits; the same copies and errors where no view exists; ATen's own
// call for a tensor autograd records; the version counter shared with the base.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/fast_views.h"

using namespace tv;

namespace {

void expect_same_view(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  EXPECT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.strides(), want.strides()) << what;
  EXPECT_EQ(got.storage_offset(), want.storage_offset()) << what;
  EXPECT_EQ(got.is_alias_of(want), want.is_alias_of(got)) << what;
  EXPECT_EQ(got.is_contiguous(), want.is_contiguous()) << what;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_TRUE(at::equal(got, want)) << what;
}

void expect_same_views(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) expect_same_view(got[i], want[i], what + " piece " + std::to_string(i));
}

// On the CPU, and on the GPU too where this LibTorch has one.
std::vector<std::pair<std::string, at::Tensor>> inputs() {
  at::manual_seed(5);
  std::vector<std::pair<std::string, at::Tensor>> out;
  std::vector<at::Device> devices{at::kCPU};
  if (at::hasCUDA()) devices.push_back(at::Device(at::kCUDA, 0));
  for (const auto& device : devices) {
    const std::string on = device.is_cuda() ? " (cuda)" : "";
    at::Tensor x = at::randn({2, 3, 4, 5}).to(device);
    out.insert(out.end(), {{"contiguous" + on, x},
                           {"transposed" + on, x.transpose(1, 3)},
                           {"sliced" + on, x.slice(2, 1, 3)},
                           {"offset" + on, x.select(0, 1)},
                           {"expanded" + on, at::randn({1, 5}).to(device).expand({4, 5})},
                           {"integer" + on, at::arange(24, at::kLong).to(device).view({2, 3, 4})},
                           {"one element" + on, at::randn({1}).to(device)}});
  }
  return out;
}

}  // namespace

TEST(FastViews, MatchATensorsOwnViewOps) {
  at::NoGradGuard no_grad;
  for (const auto& [name, t] : inputs()) {
    const int64_t n = t.dim();
    for (int64_t d0 = -n; d0 < n; ++d0)
      for (int64_t d1 = -n; d1 < n; ++d1)
        expect_same_view(exec::fast_transpose(t, d0, d1), t.transpose(d0, d1),
                         name + " transpose " + std::to_string(d0) + "," + std::to_string(d1));
    std::vector<int64_t> reversed;
    for (int64_t d = n - 1; d >= 0; --d) reversed.push_back(d == 0 ? -n : d);
    expect_same_view(exec::fast_permute(t, reversed), t.permute(reversed), name + " permute");
    for (int64_t d = -n - 1; d <= n; ++d) {
      expect_same_view(exec::fast_unsqueeze(t, d), t.unsqueeze(d), name + " unsqueeze " + std::to_string(d));
      if (d < -n || d >= n) continue;
      expect_same_views(exec::fast_unbind(t, d), at::unbind(t, d), name + " unbind " + std::to_string(d));
      for (int64_t size : {1, 2, 3, 7})
        expect_same_views(exec::fast_split(t, size, d), at::split(t, size, d),
                          name + " split " + std::to_string(size) + " dim " + std::to_string(d));
    }
    std::vector<int64_t> wider{3};
    for (int64_t d = 0; d < n; ++d) wider.push_back(d == 0 ? -1 : t.size(d));
    expect_same_view(exec::fast_expand(t, wider), t.expand(wider), name + " expand");
    expect_same_view(exec::fast_expand(t, t.sizes()), t.expand(t.sizes()), name + " expand to its own shape");
    expect_same_view(exec::fast_reshape(t, {-1}), t.reshape({-1}), name + " reshape -1");
    std::vector<int64_t> first_and_rest{t.size(0), -1};
    if (n >= 2) expect_same_view(exec::fast_reshape(t, first_and_rest), t.reshape(first_and_rest), name + " reshape first, -1");
  }
}

TEST(FastViews, CopyOrFailAsATenDoes) {
  at::NoGradGuard no_grad;
  at::Tensor x = at::randn({4, 6});
  at::Tensor strided = x.t();
  at::Tensor copied = exec::fast_reshape(strided, {24});
  EXPECT_FALSE(copied.is_alias_of(strided)) << "a transposed matrix has no flat view: reshape copies";
  EXPECT_TRUE(at::equal(copied, strided.reshape({24})));
  EXPECT_THROW(exec::fast_reshape(x, {5, -1}), std::exception) << "24 elements in rows of 5 (ATen's own error)";
  EXPECT_THROW(exec::fast_transpose(x, 0, 2), c10::Error);
  EXPECT_THROW(exec::fast_permute(x, {0, 0}), c10::Error);
  EXPECT_THROW(exec::fast_unbind(x, 3), c10::Error);
  EXPECT_THROW(exec::fast_split(x, 2, -3), c10::Error);
  EXPECT_THROW(exec::fast_expand(x, {4, 7}), c10::Error);
  EXPECT_THROW(exec::fast_expand(x, {6}), c10::Error) << "fewer dims than the tensor";
  at::Tensor column = at::randn({4, 1});
  expect_same_view(exec::fast_expand(column, {2, 4, 6}), column.expand({2, 4, 6}), "a column to a stack");
  auto empty = exec::fast_split(at::randn({0, 3}), 2, 0);
  expect_same_views(empty, at::split(at::randn({0, 3}), 2, 0), "an empty dim");
}

TEST(FastViews, SharesTheVersionCounterAndLeavesAutogradToATen) {
  at::Tensor x = at::randn({2, 8});
  {
    at::NoGradGuard no_grad;
    at::Tensor v = exec::fast_reshape(x, {16});
    auto before = v._version();
    x.add_(1);
    EXPECT_EQ(v._version(), before + 1) << "an in-place op on the base shows in the view's version";
    EXPECT_TRUE(at::equal(v, x.reshape({16})));
  }
  at::Tensor w = at::randn({2, 8}).requires_grad_(true);
  at::Tensor v = exec::fast_transpose(w, 0, 1);
  ASSERT_TRUE(v.requires_grad()) << "ATen's transpose, which autograd records";
  v.sum().backward();
  EXPECT_TRUE(at::equal(w.grad(), at::ones({2, 8})));
}
