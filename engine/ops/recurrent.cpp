// Recurrent layers, in the layout of torch.lstm and torch.gru (what nn.LSTM and nn.GRU call):
//   ltorch.lstm(input, hx=[h0, c0], params, has_biases, num_layers, dropout, train, bidirectional,
//               batch_first) -> (output, h_n, c_n)
//   ltorch.gru(input, hx=h0, params, has_biases, num_layers, dropout, train, bidirectional,
//              batch_first) -> (output, h_n)
// input [T, B, I] ([B, T, I] when batch_first); h0, c0, h_n, c_n [layers * directions, B, H]; output
// [T, B, directions * H]. params: per layer, per direction (forward, then reverse), w_ih [G*H, I],
// w_hh [G*H, H] and, with biases, b_ih [G*H] and b_hh [G*H]; the G gates are (i, f, g, o) for lstm,
// (r, z, n) for gru. The decomposition unrolls the time steps: per layer and direction one linear
// projects every step's input, then each step adds the hidden state's projection, applies the gates
// (sigmoid, tanh, mul, add) and gives the new state; the steps' outputs are stacked along time and
// the directions concatenated along features. Dropout between layers draws random numbers: refused
// unless p == 0 or train is False. Gradient: through the decomposition. Execution: one at::lstm or
// at::gru call.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ops {

namespace {

using namespace tv::ltorch;
using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

enum class Cell { lstm, gru };

const char* name_of(Cell cell) { return cell == Cell::lstm ? "lstm" : "gru"; }
int64_t gates_of(Cell cell) { return cell == Cell::lstm ? 4 : 3; }

struct Weights {
  T w_ih, w_hh, b_ih, b_hh;  // the biases null without has_biases
};

struct State {
  T h, c;  // c: lstm's cell state, null for gru
};

struct RecurrentArgs {
  T input;
  T h0, c0;  // [layers * directions, B, H]; c0 for lstm only
  std::vector<Weights> weights;  // per layer, per direction
  int64_t layers = 1, directions = 1, hidden = 0;
  bool batch_first = false;
};

std::vector<T> tensor_list(const Value& v, const char* name, const char* op) {
  if (!v.is_sequence()) throw OpError(std::string(op) + ": " + name + " must be a list of tensors, got " + python_text(v));
  std::vector<T> out;
  for (size_t i = 0; i < v.items.size(); ++i) {
    if (!v.items[i].is_proxy() || !v.items[i].proxy->is_tensor())
      throw OpError(std::string(op) + ": " + name + "[" + std::to_string(i) + "] is not a tensor");
    out.push_back(v.items[i].proxy);
  }
  return out;
}

void require_shape(const T& t, const Shape& shape, const std::string& what, const char* op) {
  if (t->shape != shape)
    throw OpError(std::string(op) + ": " + what + " " + shape_text(t->shape) + " must be " + shape_text(shape));
}

// The weights of each layer and direction, their shapes checked against the input's features and
// the hidden size (w_hh's second dim).
std::vector<Weights> layer_weights(const std::vector<T>& params, const RecurrentArgs& r, bool has_biases, Cell cell,
                                   int64_t input_size) {
  const char* op = name_of(cell);
  size_t per = has_biases ? 4 : 2;
  if (params.size() != static_cast<size_t>(r.layers * r.directions) * per)
    throw OpError(std::string(op) + ": expected " + std::to_string(r.layers * r.directions * static_cast<int64_t>(per)) +
                  " parameters (w_ih, w_hh" + (has_biases ? ", b_ih, b_hh" : "") + " per layer and direction), got " +
                  std::to_string(params.size()) + " (a projection, proj_size, is not supported)");
  int64_t rows = gates_of(cell) * r.hidden;
  std::vector<Weights> out;
  for (int64_t k = 0; k < r.layers * r.directions; ++k) {
    const T* p = &params[static_cast<size_t>(k) * per];
    Weights w{p[0], p[1], has_biases ? p[2] : nullptr, has_biases ? p[3] : nullptr};
    int64_t in = k < r.directions ? input_size : r.hidden * r.directions;
    std::string at = " of layer " + std::to_string(k / r.directions) + (k % r.directions ? " (reverse)" : "");
    require_shape(w.w_ih, {rows, in}, "w_ih" + at, op);
    require_shape(w.w_hh, {rows, r.hidden}, "w_hh" + at, op);
    if (has_biases) {
      require_shape(w.b_ih, {rows}, "b_ih" + at, op);
      require_shape(w.b_hh, {rows}, "b_hh" + at, op);
    }
    out.push_back(w);
  }
  return out;
}

RecurrentArgs recurrent_args(Args args, Kw kwargs, Cell cell) {
  const char* op = name_of(cell);
  std::vector<Value> in = by_position(args, kwargs, {"input", "hx", "params", "has_biases", "num_layers", "dropout",
                                                     "train", "bidirectional", "batch_first"});
  RecurrentArgs r;
  r.input = tensor_arg(in, 0, "input");
  require_floating(r.input, op);
  if (r.input->shape.size() != 3 || r.input->shape[0] == 0 || r.input->shape[1] == 0)
    throw OpError(std::string(op) + " takes a non-empty 3-D input [T, B, I] (or [B, T, I]), got " + shape_text(r.input->shape));
  bool has_biases = bool_arg(in, 3, "has_biases");
  r.layers = int_arg(in, 4, "num_layers");
  double dropout = number_arg(in, 5, "dropout");
  bool train = bool_arg(in, 6, "train");
  r.directions = bool_arg(in, 7, "bidirectional") ? 2 : 1;
  r.batch_first = bool_arg(in, 8, "batch_first");
  if (r.layers < 1) throw OpError(std::string(op) + ": num_layers must be at least 1, got " + std::to_string(r.layers));
  if (dropout != 0 && train && r.layers > 1)
    throw OpError(std::string(op) + ": dropout between layers in training is not supported (it draws random numbers); "
                  "use dropout=0 or train=False");
  std::vector<T> params = tensor_list(arg(in, 2, "params"), "params", op);
  if (params.size() < 2) throw OpError(std::string(op) + ": params must hold at least w_ih and w_hh");
  r.hidden = params[1]->shape.size() == 2 ? params[1]->shape[1] : 0;
  int64_t batch = r.input->shape[r.batch_first ? 0 : 1];
  Shape state = {r.layers * r.directions, batch, r.hidden};
  if (cell == Cell::lstm) {
    std::vector<T> hx = tensor_list(arg(in, 1, "hx"), "hx", op);
    if (hx.size() != 2) throw OpError("lstm: hx must be [h0, c0], got " + std::to_string(hx.size()) + " tensors");
    r.h0 = hx[0];
    r.c0 = hx[1];
    require_shape(r.c0, state, "c0", op);
  } else {
    r.h0 = tensor_arg(in, 1, "hx");
  }
  require_shape(r.h0, state, "h0", op);
  r.weights = layer_weights(params, r, has_biases, cell, r.input->shape[2]);
  return r;
}

// One lstm step from the step's projected input [B, 4H]: c' = f c + i g, h' = o tanh(c').
State lstm_step(TraceBuilder& b, const T& projected, const Weights& w, const State& s, int64_t hidden) {
  T recurrent = linear(b, s.h, w.w_hh, w.b_hh);
  T gates = add(b, V(projected), V(recurrent));
  std::vector<T> g = split(b, gates, hidden, -1);
  T input_gate = sigmoid(b, g[0]);
  T forget_gate = sigmoid(b, g[1]);
  T candidate = tanh(b, g[2]);
  T output_gate = sigmoid(b, g[3]);
  T kept = mul(b, V(forget_gate), V(s.c));
  T added = mul(b, V(input_gate), V(candidate));
  T c = add(b, V(kept), V(added));
  T squashed = tanh(b, c);
  return {mul(b, V(output_gate), V(squashed)), c};
}

// One gru step from the step's projected input [B, 3H]: r and z gate, n = tanh(x_n + r (W_hn h +
// b_hn)), h' = (1 - z) n + z h, computed as n + z (h - n).
State gru_step(TraceBuilder& b, const T& projected, const Weights& w, const State& s, int64_t hidden) {
  T recurrent = linear(b, s.h, w.w_hh, w.b_hh);
  std::vector<T> from_input = split(b, projected, hidden, -1);
  std::vector<T> from_state = split(b, recurrent, hidden, -1);
  T reset = sigmoid(b, add(b, V(from_input[0]), V(from_state[0])));
  T update = sigmoid(b, add(b, V(from_input[1]), V(from_state[1])));
  T gated = mul(b, V(reset), V(from_state[2]));
  T candidate = tanh(b, add(b, V(from_input[2]), V(gated)));
  T change = sub(b, V(s.h), V(candidate));
  T kept = mul(b, V(update), V(change));
  return {add(b, V(candidate), V(kept)), nullptr};
}

// One direction of one layer over x [T, B, I]: the outputs [T, B, H] in time order, and the last state.
std::pair<T, State> run_direction(TraceBuilder& b, Cell cell, const T& x, const Weights& w, State s, int64_t hidden,
                                  bool reverse) {
  T projected = linear(b, x, w.w_ih, w.b_ih);
  std::vector<T> steps = unbind(b, projected, 0);
  std::vector<T> outputs(steps.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    size_t t = reverse ? steps.size() - 1 - k : k;
    s = cell == Cell::lstm ? lstm_step(b, steps[t], w, s, hidden) : gru_step(b, steps[t], w, s, hidden);
    outputs[t] = s.h;
  }
  return {stack(b, outputs, 0), s};
}

SymbolImpl recurrent_impl(Cell cell) {
  return [cell](TraceBuilder& b, Args args, Kw kwargs) {
    RecurrentArgs r = recurrent_args(args, kwargs, cell);
    std::vector<T> h0 = unbind(b, r.h0, 0);
    std::vector<T> c0 = cell == Cell::lstm ? unbind(b, r.c0, 0) : std::vector<T>(h0.size());
    T x = r.batch_first ? transpose(b, r.input, 0, 1) : r.input;
    std::vector<T> h_n, c_n;
    for (int64_t layer = 0; layer < r.layers; ++layer) {
      std::vector<T> outputs;
      for (int64_t direction = 0; direction < r.directions; ++direction) {
        size_t k = static_cast<size_t>(layer * r.directions + direction);
        auto [out, last] = run_direction(b, cell, x, r.weights[k], State{h0[k], c0[k]}, r.hidden, direction == 1);
        outputs.push_back(out);
        h_n.push_back(last.h);
        c_n.push_back(last.c);
      }
      x = outputs.size() == 1 ? outputs[0] : cat(b, outputs, 2);
    }
    T output = r.batch_first ? transpose(b, x, 0, 1) : x;
    T h_last = stack(b, h_n, 0);
    if (cell == Cell::gru) return Value::tuple({V(output), V(h_last)});
    T c_last = stack(b, c_n, 0);
    return Value::tuple({V(output), V(h_last), V(c_last)});
  };
}

}  // namespace

}  // namespace tv::ops

// ---- Execution rules: one LibTorch call each ----

namespace tv::exec {

namespace {

using namespace rules;

// (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first), by position.
struct RecurrentCall {
  std::vector<at::Tensor> params;
  bool has_biases, train, bidirectional, batch_first;
  int64_t layers;
  double dropout;
};

RecurrentCall recurrent_call(Args a) {
  return {tensors_of(rarg(a, 2, "params")), flag_at(a, 3, {}, "has_biases"), flag_at(a, 6, {}, "train"),
          flag_at(a, 7, {}, "bidirectional"), flag_at(a, 8, {}, "batch_first"), int_at(a, 4, "num_layers"),
          number_at(a, 5, "dropout")};
}

void register_recurrent_execution() {
  ops::exec_rule("ltorch.lstm", [](Args a, Kw) {
    RecurrentCall c = recurrent_call(a);
    auto [out, h, cell] = at::lstm(tensor_at(a, 0, "input"), tensors_of(rarg(a, 1, "hx")), c.params, c.has_biases,
                                   c.layers, c.dropout, c.train, c.bidirectional, c.batch_first);
    return RValue::tuple({RValue::of(out), RValue::of(h), RValue::of(cell)});
  });
  ops::exec_rule("ltorch.gru", [](Args a, Kw) {
    RecurrentCall c = recurrent_call(a);
    auto [out, h] = at::gru(tensor_at(a, 0, "input"), tensor_at(a, 1, "hx"), c.params, c.has_biases, c.layers, c.dropout,
                            c.train, c.bidirectional, c.batch_first);
    return RValue::tuple({RValue::of(out), RValue::of(h)});
  });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_recurrent() {
  define("ltorch.lstm", false, {}, recurrent_impl(Cell::lstm));
  define("ltorch.gru", false, {}, recurrent_impl(Cell::gru));
  for (const char* n : {"ltorch.lstm", "ltorch.gru"}) register_grad_through_decomposition(op(n));
  exec::register_recurrent_execution();
}

}  // namespace tv::ops
