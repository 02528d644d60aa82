// The IR's copy modes (Op::copy_mode Assign/Add, Op::scale, Op::zero_fill), read where the Op
// carries them. They are being added to schedule.h on another branch (ops012, "IR: copy modes");
// until it is merged these read as the defaults (assign, x1, no zero fill), so a schedule that
// needs them is refused by the data check (an accumulator read before anything wrote it) rather
// than run wrongly. Once merged, replace each with the field. Private to sim/exec.
#pragma once

#include "zerosim/schedule.h"

namespace zerosim::exec {

template <class O>
bool op_adds(const O& op) {  // copy_mode == CopyMode::Add (Assign 0, Add 1)
  if constexpr (requires { op.copy_mode; })
    return static_cast<int>(op.copy_mode) == 1;
  else
    return false;
}

template <class O>
double op_scale(const O& op) {
  if constexpr (requires { op.scale; })
    return op.scale;
  else
    return 1.0;
}

template <class O>
bool op_zero_fill(const O& op) {
  if constexpr (requires { op.zero_fill; })
    return op.zero_fill;
  else
    return false;
}

}  // namespace zerosim::exec
