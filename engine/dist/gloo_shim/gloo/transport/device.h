// Stand-in for gloo/transport/device.h (see ../README.txt): only held through smart pointers.
#pragma once
#define TV_GLOO_SHIM 1

namespace gloo {
namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo
