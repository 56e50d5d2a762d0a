// process_group_handles.h: how process groups and works travel through JNI as jlong handles. A
// group handle is a heap ProcessGroup* (a ProcessGroupGloo or, from libddp4j_cuda.so, an
// ProcessGroupNccl); a work handle is a heap std::shared_ptr<Work>*. Both backends' groups and
// works are then served by one set of entry points through ProcessGroup's and Work's virtuals.
#pragma once
#include <jni.h>

#include <memory>

#include "ddp4j/errors.h"
#include "ddp4j/process_group.h"

namespace ddp4j::jni {

/** The handle of a newly created group; the JNI caller owns it until ProcessGroupNatives.destroy. */
inline jlong group_handle(ProcessGroup* group) { return reinterpret_cast<jlong>(group); }

/** The group behind a handle; Error(IllegalState) for 0. */
inline ProcessGroup& group_of(jlong handle) {
  DDP4J_CHECK(handle != 0, IllegalState, "the process group is closed");
  return *reinterpret_cast<ProcessGroup*>(handle);
}

/** A new work handle holding `work`; freed by WorkNatives.free. */
inline jlong work_handle(std::shared_ptr<Work> work) {
  return reinterpret_cast<jlong>(new std::shared_ptr<Work>(std::move(work)));
}

/** The work behind a handle; Error(IllegalState) for 0. */
inline Work& work_of(jlong handle) {
  DDP4J_CHECK(handle != 0, IllegalState, "the Work has been freed");
  return **reinterpret_cast<std::shared_ptr<Work>*>(handle);
}

}  // namespace ddp4j::jni
