// sm90.cuh — the sm90 PTX family (Hopper, built for sm_90a).
//
// Today this family runs the sm80 stages: the kbit and nvfp4 kernels are bound
// by memory and by dequantization work at the shapes we measure, and wgmma /
// TMA / setmaxnreg have not yet been shown to pay there (docs/design.md lists
// the plan). Building for sm_90a keeps those instructions available to the
// stages as they are added.
#pragma once

#include "sm80.cuh"
