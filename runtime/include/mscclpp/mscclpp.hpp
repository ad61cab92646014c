// The whole public C++/CUDA API in one include (docs/cpp-api.md is the guide):
//  * host setup (core.hpp): bootstrap, communicator, registered memory, connections, semaphores,
//    the proxy service and the channels whose deviceHandle() kernels use;
//  * device handles, usable in CUDA kernels and, compiled by a host compiler, on the CPU backend:
//    memory/port/switch channel handles, semaphores, the FIFO, LL packets, cooperative copies and
//    the grid barrier DeviceSyncer;
//  * launchKernel (host_launch.hpp): one kernel body for both backends;
//  * the executor of JSON execution plans (executor.hpp) and the datatypes of collectives.
// Nothing here includes the library's internal headers: the installed include/ directory and the
// flags of `pkg-config --cflags mscclpp` are all a program needs.
#ifndef MSCCLPP_MSCCLPP_HPP_
#define MSCCLPP_MSCCLPP_HPP_

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
