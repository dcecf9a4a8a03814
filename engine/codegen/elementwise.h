// Elementwise kernels for fusion regions: which members of a region (passes/fusion.h) can run as
// one generated kernel, and that kernel's source.
// Contract: plan_region(region) splits the region's members, in order, into steps. A step is
// one member run as usual, a member with a residual rule and the add that alone reads its first
// output (residual_epilogue, passes/residual_epilogues.h: neither another member nor the region's
// outputs read that output), or a kernel: a maximal run
// of two or more consecutive members (or, on the CPU, a `where` alone) that are pointwise ops the
// generator knows (add, sub, mul, div, neg, exp, log, erf, tanh, sqrt, rsqrt, sigmoid, pow, where,
// in their ltorch and prims spellings) whose output tensors all have the same shape and the same
// floating dtype, whose tensor arguments have that dtype (a `where` condition may be bool) and whose
// other arguments are number literals.
// A kernel reads its `inputs` (at most 8 proxies the run reads and does not define, in order of
// first read) and writes its `outputs` (at most 8: the run's values read after the run or returned
// by the region, in definition order); values used only inside the run are never stored. `source`
// is a CUDA C++ function template for ATen's jiterator (at::cuda::CompileAndLaunchKernel, outputs
// returned by reference): `template <typename T> void <name>(T in0, ..., T& out0, ...)`, computed
// in T, the opmath type the jiterator instantiates it with (float for f32, bf16 and f16). The same
// members give the same source and name, whatever the shapes, so one compiled kernel serves every
// layer.
// `program` is the same computation as data, one instruction per member, for an evaluator that
// runs it element by element (the CPU's: exec/pointwise_cpu.h); it follows ATen's CPU kernels where
// they special-case (pow by 2, 0.5, 1 or -1; a number operand rounded to the dtype first).
// Pure text and data: no CUDA here (exec/ runs the plan).
#pragma once
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tv::codegen {

enum class PointwiseOp { add, sub, mul, div, neg, exp, log, erf, tanh, sqrt, rsqrt, sigmoid, pow, square, reciprocal, copy, where };

// An operand: kernel input `index`, the value of instruction `index`, or a number.
struct PointwiseOperand {
  enum class Kind { input, value, number };
  Kind kind = Kind::number;
  size_t index = 0;
  double number = 0;
};

// value = op(operands) (add and sub: operands[0] op alpha * operands[1]).
struct PointwiseInstruction {
  PointwiseOp op = PointwiseOp::copy;
  std::vector<PointwiseOperand> operands;
  double alpha = 1;
};

struct ElementwiseKernel {
  std::string name;                 // "tv_pointwise_<hash>", the function's name in `source`
  std::string source;               // the function template
  std::vector<std::string> inputs;  // proxy names, in0.. in order
  std::vector<bool> bool_inputs;    // per input: a bool tensor (a where condition) rather than `dtype`
  std::vector<std::string> outputs; // proxy names, out0.. in order
  DType dtype = DType::f32;         // of the outputs and of every non-bool input
  size_t first_member = 0;          // the members it replaces: [first_member, first_member + members)
  size_t members = 0;
  std::vector<PointwiseInstruction> program;  // instruction i computes member first_member + i
  std::vector<size_t> output_values;          // per output, the instruction whose value it stores
};

struct RegionStep {
  bool is_kernel = false;
  size_t member = 0;  // !is_kernel: the index of the member to run
  ElementwiseKernel kernel;
  // A member with a residual rule (`member`: a linear, layer norm's backward) and the add after it
  // that alone reads its first output (passes/residual_epilogues.h): one kernel that adds the
  // add's argument `residual_arg` where the rule can, else the two members one by one.
  bool residual_epilogue = false;
  size_t residual_arg = 0;
};

struct RegionPlan {
  std::vector<RegionStep> steps;
  size_t kernels() const;  // how many steps are kernels
};

RegionPlan plan_region(const BoundSymbol& region);

// Whether the generator knows `symbol` (a pointwise op name such as "ltorch.mul").
bool is_generated_pointwise(std::string_view symbol);

}  // namespace tv::codegen
