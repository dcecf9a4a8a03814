// Stand-in for gloo/common/error.h (see ../README.txt): nothing of it is used by engine/dist.
#pragma once
#define TV_GLOO_SHIM 1
