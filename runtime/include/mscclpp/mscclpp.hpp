// The whole public C++/CUDA API in one include: host setup (core.hpp), the device handles that
// CUDA kernels and the CPU backend both use, launchKernel, and the executor of JSON execution
// plans. It includes no internal header: the installed include folder and the flags of
// `pkg-config --cflags mscclpp` are all a program needs. docs/cpp-api.md is the guide.
#ifndef MSCCLPP_MSCCLPP_HPP_
#define MSCCLPP_MSCCLPP_HPP_

#include "mscclpp/algorithm.hpp"
#include "mscclpp/copy_device.hpp"
#include "mscclpp/core.hpp"
#include "mscclpp/datatype.hpp"
#include "mscclpp/device.hpp"
#include "mscclpp/device_syncer.hpp"
#include "mscclpp/executor.hpp"
#include "mscclpp/fifo_device.hpp"
#include "mscclpp/host_launch.hpp"
#include "mscclpp/memory_channel_device.hpp"
#include "mscclpp/packet_device.hpp"
#include "mscclpp/port_channel_device.hpp"
#include "mscclpp/semaphore_device.hpp"
#include "mscclpp/switch_channel_device.hpp"

#endif  // MSCCLPP_MSCCLPP_HPP_
