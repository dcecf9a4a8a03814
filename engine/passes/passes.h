// The optimization passes, one per file; each is a plain function from a trace to a new trace
// whose provenance names the pass as Thunder does and the milliseconds it took.
#pragma once
#include "passes/batch_gradients.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/delete_last_used.h"
#include "passes/fusion.h"
#include "passes/memory.h"
#include "passes/pass_util.h"
#include "passes/remat.h"
#include "passes/residual_epilogues.h"
