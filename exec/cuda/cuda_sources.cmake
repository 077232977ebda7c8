# Sources of the CUDA backend and the NCCL search, shared by
# exec/cuda/CMakeLists.txt and the standalone build in exec/cuda/standalone/.
# Paths are absolute (relative to this file).

set(DTSIM_CUDA_BACKEND_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/cuda_check.cc
  ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cu
  ${CMAKE_CURRENT_LIST_DIR}/cuda_conv.cu
  ${CMAKE_CURRENT_LIST_DIR}/cuda_elementwise.cu
  ${CMAKE_CURRENT_LIST_DIR}/cuda_norm.cu
  ${CMAKE_CURRENT_LIST_DIR}/cuda_attention.cu
  ${CMAKE_CURRENT_LIST_DIR}/cuda_recurrent.cu)
set(DTSIM_NCCL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/nccl_communicator.cc)

# NCCL ships with NVIDIA's HPC SDK / CUDA containers in the toolkit's
# folders, or as libnccl-dev. Sets DTSIM_HAVE_NCCL and target dtsim::nccl.
find_path(NCCL_INCLUDE_DIR nccl.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(NCCL_LIBRARY nccl
             HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(DTSIM_HAVE_NCCL ON)
  if(NOT TARGET dtsim::nccl)
    add_library(dtsim::nccl UNKNOWN IMPORTED)
    set_target_properties(dtsim::nccl PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
                          INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
  endif()
  message(STATUS "dtsim: NCCL found (${NCCL_LIBRARY}), building NcclCommunicator")
else()
  set(DTSIM_HAVE_NCCL OFF)
  message(STATUS "dtsim: NCCL not found (no nccl.h / libnccl in the CUDA toolkit), "
                 "building without NcclCommunicator")
endif()
