// The names of the built-in transforms, as an order spells them ("jit" first: the point where the
// module is jitted, not a transform). In a header of its own so that a reader of captures checks an
// order's names without linking the transforms (and LibTorch with them); transform_names() lists
// these, in this order, and any transform registered since.
#pragma once
#include <array>
#include <string_view>

namespace tv {

inline constexpr std::array<std::string_view, 6> kBuiltinTransformNames = {"jit", "ddp", "fsdp", "hsdp", "autocast", "remat"};

}  // namespace tv
