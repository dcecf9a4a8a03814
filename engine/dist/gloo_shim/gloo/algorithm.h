// Stand-in for gloo/algorithm.h (see README.txt): nothing of it is used by engine/dist.
#pragma once
#define TV_GLOO_SHIM 1
#include "gloo/context.h"
