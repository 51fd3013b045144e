/* sim/device.c: the one simulated device (an H100-like compute capability 9.0 part named
 * "Simulated CUDA device (syncspy)"): its properties and attributes, and the names and
 * descriptions of CUDA's error codes. Pure data: no locks, no timeline. */
#include "sim/sim_internal.h"
#include "sim/device_facts.h"

#include <stdio.h>
#include <string.h>

/* Facts that cudaDeviceGetAttribute reports, and CUDA 12's cudaDeviceProp as well (CUDA 13 moved
 * them out of the structure). */
enum {
    SIM_CLOCK_KHZ = 1980000,
    SIM_MEMORY_CLOCK_KHZ = 2619000,
    SIM_SINGLE_TO_DOUBLE_PERF_RATIO = 2,
    SIM_NUMA_ID = -1, /* no NUMA node: the device's and its host's */
};

cudaError_t sim_device_check(int device)
{
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t sim_device_properties(struct cudaDeviceProp *prop, int device)
{
    if (prop == NULL)
        return cudaErrorInvalidValue;
    if (device != 0)
        return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "%s", SIM_DEVICE_NAME);
    memcpy(prop->uuid.bytes, SIM_DEVICE_UUID, 16);
    prop->totalGlobalMem = SIM_DEVICE_BYTES;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->memPitch = 2147483647;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 64 * 1024;
    prop->major = 9;
    prop->minor = 0;
    prop->textureAlignment = 512;
    prop->texturePitchAlignment = 32;
    prop->multiProcessorCount = 132;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->ECCEnabled = 1;
    prop->pciBusID = 0x1b;
    prop->asyncEngineCount = 3;
    prop->unifiedAddressing = 1;
    prop->memoryBusWidth = 5120;
    prop->l2CacheSize = 50 * 1024 * 1024;
    prop->persistingL2CacheMaxSize = 31 * 1024 * 1024;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->streamPrioritiesSupported = 1;
    prop->globalL1CacheSupported = 1;
    prop->localL1CacheSupported = 1;
    prop->sharedMemPerMultiprocessor = 228 * 1024;
    prop->regsPerMultiprocessor = 65536;
    prop->managedMemory = 1;
    prop->concurrentManagedAccess = 1;
    prop->computePreemptionSupported = 1;
    prop->canUseHostPointerForRegisteredMem = 1;
    prop->cooperativeLaunch = 1;
    prop->sharedMemPerBlockOptin = 227 * 1024;
    prop->maxBlocksPerMultiProcessor = 32;
    prop->accessPolicyMaxWindowSize = 134213632;
    prop->reservedSharedMemPerBlock = 1024;
    prop->hostRegisterSupported = 1;
    prop->memoryPoolsSupported = 1;
    prop->clusterLaunch = 1;
    prop->unifiedFunctionPointers = 1;
#if CUDART_VERSION >= 13000
    prop->deviceNumaId = SIM_NUMA_ID;
    prop->hostNumaId = SIM_NUMA_ID;
#else
    prop->clockRate = SIM_CLOCK_KHZ;
    prop->memoryClockRate = SIM_MEMORY_CLOCK_KHZ;
    prop->deviceOverlap = 1;
    prop->computeMode = cudaComputeModeDefault;
    prop->singleToDoublePrecisionPerfRatio = SIM_SINGLE_TO_DOUBLE_PERF_RATIO;
#endif
    return cudaSuccess;
}

cudaError_t sim_device_attribute(int *value, enum cudaDeviceAttr attr, int device)
{
    struct cudaDeviceProp p;
    if (value == NULL)
        return cudaErrorInvalidValue;
    cudaError_t err = sim_device_properties(&p, device);
    if (err != cudaSuccess)
        return err;
    int v;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: v = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: v = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: v = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: v = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: v = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: v = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: v = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: v = p.warpSize; break;
    case cudaDevAttrMaxPitch: v = (int)p.memPitch; break;
    case cudaDevAttrMaxRegistersPerBlock: v = p.regsPerBlock; break;
    case cudaDevAttrClockRate: v = SIM_CLOCK_KHZ; break;
    case cudaDevAttrMemoryClockRate: v = SIM_MEMORY_CLOCK_KHZ; break;
    case cudaDevAttrTextureAlignment: v = (int)p.textureAlignment; break;
    case cudaDevAttrTexturePitchAlignment: v = (int)p.texturePitchAlignment; break;
    case cudaDevAttrGpuOverlap: v = 1; break;
    case cudaDevAttrMultiProcessorCount: v = p.multiProcessorCount; break;
    case cudaDevAttrIntegrated: v = p.integrated; break;
    case cudaDevAttrCanMapHostMemory: v = p.canMapHostMemory; break;
    case cudaDevAttrComputeMode: v = cudaComputeModeDefault; break;
    case cudaDevAttrConcurrentKernels: v = p.concurrentKernels; break;
    case cudaDevAttrEccEnabled: v = p.ECCEnabled; break;
    case cudaDevAttrPciBusId: v = p.pciBusID; break;
    case cudaDevAttrPciDeviceId: v = p.pciDeviceID; break;
    case cudaDevAttrPciDomainId: v = p.pciDomainID; break;
    case cudaDevAttrGlobalMemoryBusWidth: v = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: v = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrAsyncEngineCount: v = p.asyncEngineCount; break;
    case cudaDevAttrUnifiedAddressing: v = p.unifiedAddressing; break;
    case cudaDevAttrComputeCapabilityMajor: v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: v = p.minor; break;
    case cudaDevAttrStreamPrioritiesSupported: v = p.streamPrioritiesSupported; break;
    case cudaDevAttrGlobalL1CacheSupported: v = p.globalL1CacheSupported; break;
    case cudaDevAttrLocalL1CacheSupported: v = p.localL1CacheSupported; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: v = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: v = p.regsPerMultiprocessor; break;
    case cudaDevAttrManagedMemory: v = p.managedMemory; break;
    case cudaDevAttrConcurrentManagedAccess: v = p.concurrentManagedAccess; break;
    case cudaDevAttrComputePreemptionSupported: v = p.computePreemptionSupported; break;
    case cudaDevAttrCanUseHostPointerForRegisteredMem:
        v = p.canUseHostPointerForRegisteredMem;
        break;
    case cudaDevAttrCooperativeLaunch: v = p.cooperativeLaunch; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: v = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: v = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrMaxPersistingL2CacheSize: v = p.persistingL2CacheMaxSize; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: v = p.accessPolicyMaxWindowSize; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: v = (int)p.reservedSharedMemPerBlock; break;
    case cudaDevAttrHostRegisterSupported: v = p.hostRegisterSupported; break;
    case cudaDevAttrMemoryPoolsSupported: v = p.memoryPoolsSupported; break;
    case cudaDevAttrClusterLaunch: v = p.clusterLaunch; break;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio: v = SIM_SINGLE_TO_DOUBLE_PERF_RATIO; break;
    case cudaDevAttrNumaId: v = SIM_NUMA_ID; break;
    case cudaDevAttrHostNumaId: v = SIM_NUMA_ID; break;
    default: v = 0; break; /* everything else: absent or unsupported */
    }
    *value = v;
    return cudaSuccess;
}

/* --- error codes --------------------------------------------------------------------------- */

/* Every cudaError_t of the CUDA 13 headers; the descriptions are the real runtime's where the
 * simulator may return the code or programs commonly print it, else the name. */
static const struct {
    cudaError_t code;
    const char *name, *text;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorProfilerDisabled, "cudaErrorProfilerDisabled", NULL},
    {cudaErrorProfilerNotInitialized, "cudaErrorProfilerNotInitialized", NULL},
    {cudaErrorProfilerAlreadyStarted, "cudaErrorProfilerAlreadyStarted", NULL},
    {cudaErrorProfilerAlreadyStopped, "cudaErrorProfilerAlreadyStopped", NULL},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidHostPointer, "cudaErrorInvalidHostPointer", "invalid host pointer"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidTexture, "cudaErrorInvalidTexture", NULL},
    {cudaErrorInvalidTextureBinding, "cudaErrorInvalidTextureBinding", NULL},
    {cudaErrorInvalidChannelDescriptor, "cudaErrorInvalidChannelDescriptor",
     "invalid channel descriptor"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorAddressOfConstant, "cudaErrorAddressOfConstant", NULL},
    {cudaErrorTextureFetchFailed, "cudaErrorTextureFetchFailed", NULL},
    {cudaErrorTextureNotBound, "cudaErrorTextureNotBound", NULL},
    {cudaErrorSynchronizationError, "cudaErrorSynchronizationError", NULL},
    {cudaErrorInvalidFilterSetting, "cudaErrorInvalidFilterSetting", NULL},
    {cudaErrorInvalidNormSetting, "cudaErrorInvalidNormSetting", NULL},
    {cudaErrorMixedDeviceExecution, "cudaErrorMixedDeviceExecution", NULL},
    {cudaErrorNotYetImplemented, "cudaErrorNotYetImplemented", NULL},
    {cudaErrorMemoryValueTooLarge, "cudaErrorMemoryValueTooLarge", NULL},
    {cudaErrorStubLibrary, "cudaErrorStubLibrary", "CUDA driver is a stub library"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorCallRequiresNewerDriver, "cudaErrorCallRequiresNewerDriver", NULL},
    {cudaErrorInvalidSurface, "cudaErrorInvalidSurface", NULL},
    {cudaErrorDuplicateVariableName, "cudaErrorDuplicateVariableName", NULL},
    {cudaErrorDuplicateTextureName, "cudaErrorDuplicateTextureName", NULL},
    {cudaErrorDuplicateSurfaceName, "cudaErrorDuplicateSurfaceName", NULL},
    {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable", NULL},
    {cudaErrorIncompatibleDriverContext, "cudaErrorIncompatibleDriverContext", NULL},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration",
     "__global__ function call is not configured"},
    {cudaErrorPriorLaunchFailure, "cudaErrorPriorLaunchFailure", NULL},
    {cudaErrorLaunchMaxDepthExceeded, "cudaErrorLaunchMaxDepthExceeded", NULL},
    {cudaErrorLaunchFileScopedTex, "cudaErrorLaunchFileScopedTex", NULL},
    {cudaErrorLaunchFileScopedSurf, "cudaErrorLaunchFileScopedSurf", NULL},
    {cudaErrorSyncDepthExceeded, "cudaErrorSyncDepthExceeded", NULL},
    {cudaErrorLaunchPendingCountExceeded, "cudaErrorLaunchPendingCountExceeded", NULL},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceNotLicensed, "cudaErrorDeviceNotLicensed", NULL},
    {cudaErrorSoftwareValidityNotEstablished, "cudaErrorSoftwareValidityNotEstablished", NULL},
    {cudaErrorStartupFailure, "cudaErrorStartupFailure", NULL},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", NULL},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", NULL},
    {cudaErrorMapBufferObjectFailed, "cudaErrorMapBufferObjectFailed", NULL},
    {cudaErrorUnmapBufferObjectFailed, "cudaErrorUnmapBufferObjectFailed", NULL},
    {cudaErrorArrayIsMapped, "cudaErrorArrayIsMapped", NULL},
    {cudaErrorAlreadyMapped, "cudaErrorAlreadyMapped", NULL},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice", NULL},
    {cudaErrorAlreadyAcquired, "cudaErrorAlreadyAcquired", NULL},
    {cudaErrorNotMapped, "cudaErrorNotMapped", NULL},
    {cudaErrorNotMappedAsArray, "cudaErrorNotMappedAsArray", NULL},
    {cudaErrorNotMappedAsPointer, "cudaErrorNotMappedAsPointer", NULL},
    {cudaErrorECCUncorrectable, "cudaErrorECCUncorrectable", NULL},
    {cudaErrorUnsupportedLimit, "cudaErrorUnsupportedLimit",
     "limit is not supported on this architecture"},
    {cudaErrorDeviceAlreadyInUse, "cudaErrorDeviceAlreadyInUse", NULL},
    {cudaErrorPeerAccessUnsupported, "cudaErrorPeerAccessUnsupported",
     "peer access is not supported between these two devices"},
    {cudaErrorInvalidPtx, "cudaErrorInvalidPtx", NULL},
    {cudaErrorInvalidGraphicsContext, "cudaErrorInvalidGraphicsContext", NULL},
    {cudaErrorNvlinkUncorrectable, "cudaErrorNvlinkUncorrectable", NULL},
    {cudaErrorJitCompilerNotFound, "cudaErrorJitCompilerNotFound", NULL},
    {cudaErrorUnsupportedPtxVersion, "cudaErrorUnsupportedPtxVersion", NULL},
    {cudaErrorJitCompilationDisabled, "cudaErrorJitCompilationDisabled", NULL},
    {cudaErrorUnsupportedExecAffinity, "cudaErrorUnsupportedExecAffinity", NULL},
    {cudaErrorUnsupportedDevSideSync, "cudaErrorUnsupportedDevSideSync", NULL},
    {cudaErrorContained, "cudaErrorContained", NULL},
    {cudaErrorInvalidSource, "cudaErrorInvalidSource", NULL},
    {cudaErrorFileNotFound, "cudaErrorFileNotFound", NULL},
    {cudaErrorSharedObjectSymbolNotFound, "cudaErrorSharedObjectSymbolNotFound", NULL},
    {cudaErrorSharedObjectInitFailed, "cudaErrorSharedObjectInitFailed", NULL},
    {cudaErrorOperatingSystem, "cudaErrorOperatingSystem", NULL},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", NULL},
    {cudaErrorLossyQuery, "cudaErrorLossyQuery", NULL},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", NULL},
    {cudaErrorLaunchIncompatibleTexturing, "cudaErrorLaunchIncompatibleTexturing", NULL},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled",
     "peer access is already enabled"},
    {cudaErrorPeerAccessNotEnabled, "cudaErrorPeerAccessNotEnabled",
     "peer access has not been enabled"},
    {cudaErrorSetOnActiveProcess, "cudaErrorSetOnActiveProcess", NULL},
    {cudaErrorContextIsDestroyed, "cudaErrorContextIsDestroyed", NULL},
    {cudaErrorAssert, "cudaErrorAssert", NULL},
    {cudaErrorTooManyPeers, "cudaErrorTooManyPeers", NULL},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", NULL},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", NULL},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", NULL},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace", NULL},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", NULL},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorCooperativeLaunchTooLarge, "cudaErrorCooperativeLaunchTooLarge",
     "too many blocks in cooperative launch"},
    {cudaErrorTensorMemoryLeak, "cudaErrorTensorMemoryLeak", NULL},
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "operation not permitted"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorSystemNotReady, "cudaErrorSystemNotReady", NULL},
    {cudaErrorSystemDriverMismatch, "cudaErrorSystemDriverMismatch", NULL},
    {cudaErrorCompatNotSupportedOnDevice, "cudaErrorCompatNotSupportedOnDevice", NULL},
    {cudaErrorMpsConnectionFailed, "cudaErrorMpsConnectionFailed", NULL},
    {cudaErrorMpsRpcFailure, "cudaErrorMpsRpcFailure", NULL},
    {cudaErrorMpsServerNotReady, "cudaErrorMpsServerNotReady", NULL},
    {cudaErrorMpsMaxClientsReached, "cudaErrorMpsMaxClientsReached", NULL},
    {cudaErrorMpsMaxConnectionsReached, "cudaErrorMpsMaxConnectionsReached", NULL},
    {cudaErrorMpsClientTerminated, "cudaErrorMpsClientTerminated", NULL},
    {cudaErrorCdpNotSupported, "cudaErrorCdpNotSupported", NULL},
    {cudaErrorCdpVersionMismatch, "cudaErrorCdpVersionMismatch", NULL},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", NULL},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge", NULL},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched", NULL},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", NULL},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation", NULL},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit", NULL},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent", NULL},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread", NULL},
    {cudaErrorTimeout, "cudaErrorTimeout", NULL},
    {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure", NULL},
    {cudaErrorExternalDevice, "cudaErrorExternalDevice", NULL},
    {cudaErrorInvalidClusterSize, "cudaErrorInvalidClusterSize", NULL},
    {cudaErrorFunctionNotLoaded, "cudaErrorFunctionNotLoaded", NULL},
    {cudaErrorInvalidResourceType, "cudaErrorInvalidResourceType", NULL},
    {cudaErrorInvalidResourceConfiguration, "cudaErrorInvalidResourceConfiguration", NULL},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const char *sim_error_name(cudaError_t err)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == err)
            return errors[i].name;
    return "unrecognized error code";
}

const char *sim_error_string(cudaError_t err)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == err)
            return errors[i].text != NULL ? errors[i].text : errors[i].name;
    return "unrecognized error code";
}
