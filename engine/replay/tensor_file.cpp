#include "replay/tensor_file.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tv {
namespace {

constexpr uintmax_t kLargest = uintmax_t{16} << 30;

bool has_prefix(const std::string& s, const char* prefix, std::string* rest) {
  const std::string p(prefix);
  if (s.compare(0, p.size(), p) != 0) return false;
  *rest = s.substr(p.size());
  return !rest->empty();
}

}  // namespace

CapturedTensors load_tensor_file(const std::string& path) {
  auto fail = [&](const std::string& what) { return std::invalid_argument(path + ": " + what); };
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw fail("cannot read the capture's tensors file: " + ec.message());
  if (size > kLargest) throw fail("the tensors file is larger than 16 GiB");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes(size);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) throw fail("cannot read the capture's tensors file");
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(bytes);
  } catch (const c10::Error& e) {
    throw fail(std::string("not a file torch.save wrote: ") + e.what_without_backtrace());
  }
  if (!value.isGenericDict()) throw fail("holds no dict of tensors (save a {name: tensor} dict with torch.save)");
  CapturedTensors out;
  auto reference = std::make_shared<StoredReference>();
  std::map<int, at::Tensor> outputs;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) throw fail("a key that is not a string");
    const std::string key = entry.key().toStringRef();
    if (!entry.value().isTensor()) throw fail("'" + key + "' is not a tensor");
    at::Tensor t = entry.value().toTensor().cpu();
    std::string rest;
    if (has_prefix(key, "parameter:", &rest) || has_prefix(key, "buffer:", &rest) || has_prefix(key, "input:", &rest)) {
      out.held[key] = t;
    } else if (has_prefix(key, "output:", &rest)) {
      size_t used = 0;
      int index = -1;
      try {
        index = std::stoi(rest, &used);
      } catch (const std::exception&) {
      }
      if (index < 0 || used != rest.size() || index > 1 << 20) throw fail("'" + key + "': the output index is not a count");
      outputs[index] = t;
    } else if (has_prefix(key, "grad:", &rest)) {
      reference->gradients[rest] = t;
    } else if (key == "cotangent_seed") {
      if (t.numel() != 1 || t.is_floating_point() || t.item<int64_t>() < 0)
        throw fail("'cotangent_seed' is not a non-negative integer");
      reference->cotangent_seed = static_cast<uint64_t>(t.item<int64_t>());
    } else {
      throw fail("unknown key '" + key + "' (parameter:, buffer:, input:, output:, grad:, cotangent_seed)");
    }
  }
  for (const auto& [index, t] : outputs) {
    if (index != static_cast<int>(reference->outputs.size()))
      throw fail("output:" + std::to_string(reference->outputs.size()) + " is missing");
    reference->outputs.push_back(t);
  }
  if (!reference->outputs.empty()) out.reference = std::move(reference);
  return out;
}

}  // namespace tv
