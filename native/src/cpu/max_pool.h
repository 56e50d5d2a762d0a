// max_pool.h: which instruction set MaxPool2d's vectorised forward paths (max_pool.cpp: the 2x2
// stride-2 pool and ResNet's 3x3 stride-2 stem pool) use. Chosen once at load from what the CPU
// has; tests switch it to check every path against plain loops on one machine.
#pragma once

namespace ddp4j::cpu {

/** The code path of the vectorised pools; every path gives the scalar loops' values and indices. */
enum class PoolPath {
  Scalar,  // one window at a time
  Avx2,    // 8 windows per step (the 3x3 stride-2 pool; the 2x2 pool stays scalar)
  Avx512,  // 16 windows per step (both pools)
};

/** The path the pools take now: the widest the CPU has, unless set_pool_path chose another. */
PoolPath pool_path();

/** Whether this CPU can run path (Scalar always). */
bool pool_path_supported(PoolPath path);

/**
 * Makes later pools take path (for tests that compare the paths). Throws Error(InvalidArgument)
 * naming the path when this CPU cannot run it.
 */
void set_pool_path(PoolPath path);

}  // namespace ddp4j::cpu
