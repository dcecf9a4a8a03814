// Tolerances that scale (engine/replay/replay.h): a gradient summed over W ranks may differ from
// eager by the rounding of a W-term sum, and no more; a wrong gradient still fails.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "replay/replay.h"

using tv::check_against_reference;
using tv::DType;
using tv::tolerance;

TEST(Tolerance, GrowsLikeTheSquareRootOfTheRanksSummed) {
  EXPECT_DOUBLE_EQ(tolerance(DType::f32, 1), tolerance(DType::f32));
  EXPECT_DOUBLE_EQ(tolerance(DType::f32, 2), tolerance(DType::f32));
  EXPECT_DOUBLE_EQ(tolerance(DType::f32, 8), 2 * tolerance(DType::f32));
  EXPECT_NEAR(tolerance(DType::f32, 64), std::sqrt(32.0) * 1e-5, 1e-12);
  EXPECT_DOUBLE_EQ(tolerance(DType::bf16, 8), 2 * tolerance(DType::bf16));
  EXPECT_DOUBLE_EQ(tolerance(DType::f64, 8), 2 * tolerance(DType::f64));
}

TEST(Tolerance, RoundingOfASixtyFourRankSumPassesAndAWrongGradientFails) {
  // The reference is the mean of 64 ranks' gradients summed in one order; the pipeline sums them
  // in another (as a ring all-reduce does): f32 rounding, ~1e-5 relative where terms cancel.
  at::manual_seed(0);
  auto parts = at::randn({64, 256}, at::kFloat);
  auto reference = parts.to(at::kDouble).sum(0).div(64).to(at::kFloat);
  auto reordered = at::zeros({256}, at::kFloat);
  for (int r = 63; r >= 0; --r) reordered.add_(parts[r]);
  reordered.div_(64);

  auto summed = check_against_reference("grad[w]", reordered, reference, 0, 64);
  EXPECT_TRUE(summed.pass) << "max_rel " << summed.max_rel << " tolerance " << summed.tolerance;
  EXPECT_NEAR(summed.tolerance, std::sqrt(32.0) * 1e-5, 1e-12);

  // A gradient wrong by one part in ten thousand in one element still fails at world 64.
  auto wrong = reordered.clone();
  wrong[7] += 1e-4 * reference.abs().max().item<float>();
  auto bad = check_against_reference("grad[w]", wrong, reference, 0, 64);
  EXPECT_FALSE(bad.pass) << "max_rel " << bad.max_rel << " tolerance " << bad.tolerance;
  // Missing the average (a sum instead of a mean) fails too.
  EXPECT_FALSE(check_against_reference("grad[w]", reordered * 64, reference, 0, 64).pass);
}

TEST(Tolerance, NaNWhereTheReferenceHasNaNIsTheSameResultAndNaNElsewhereFails) {
  auto reference = at::tensor({1.0, std::nan(""), INFINITY, -INFINITY}, at::kFloat);
  EXPECT_TRUE(check_against_reference("output[0]", reference.clone(), reference).pass);
  auto nan_elsewhere = reference.clone();
  nan_elsewhere[0] = std::nan("");
  EXPECT_FALSE(check_against_reference("output[0]", nan_elsewhere, reference).pass);
  auto finite_for_nan = reference.clone();
  finite_for_nan[1] = 0.0;
  EXPECT_FALSE(check_against_reference("output[0]", finite_for_nan, reference).pass);
  auto other_infinity = reference.clone();
  other_infinity[2] = -INFINITY;
  EXPECT_FALSE(check_against_reference("output[0]", other_infinity, reference).pass);
  auto off = reference.clone();
  off[0] = 1.5;
  EXPECT_FALSE(check_against_reference("output[0]", off, reference).pass);
}
