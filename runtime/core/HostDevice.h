//===- HostDevice.h - helpers compiled for the host and the GPU -*- C++ -*-===//

#ifndef PP_RUNTIME_HOSTDEVICE_H
#define PP_RUNTIME_HOSTDEVICE_H

/// Marks a helper for the host and, under nvcc, the device.
#ifdef __CUDACC__
#define PP_HOST_DEVICE __host__ __device__
#else
#define PP_HOST_DEVICE
#endif

#endif // PP_RUNTIME_HOSTDEVICE_H
