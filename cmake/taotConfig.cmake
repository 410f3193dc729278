# find_package(taot): the runtime (taot::runtime), the taot command (taot::taot) where it was
# installed, and the functions of TaotLibrary.cmake (taot_add_library, taot_library_targets).
# Installed by runtime/CMakeLists.txt, so a generated library built from a checkout installs it too.
include(CMakeFindDependencyMacro)
find_dependency(CUDAToolkit)
find_dependency(Threads)
if(NOT TARGET taot::runtime)
  include("${CMAKE_CURRENT_LIST_DIR}/taotRuntimeTargets.cmake")
endif()
if(NOT TARGET taot::taot AND EXISTS "${CMAKE_CURRENT_LIST_DIR}/taotToolTargets.cmake")
  include("${CMAKE_CURRENT_LIST_DIR}/taotToolTargets.cmake")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/TaotLibrary.cmake")
