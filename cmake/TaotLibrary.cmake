# The CMake side of taot's kernel libraries (docs/cmake.md). Two functions:
#
#   taot_add_library(NAME SPEC [PYTHON] [TARGETS target...] [TUNING [KERNEL=]FILE...] [OPTIONS arg...])
#     Runs `taot build SPEC` at build time into ${CMAKE_CURRENT_BINARY_DIR}/taot/NAME, again whenever
#     the spec, a kernel source or a module they import changes (taot build writes a depfile), and
#     defines the library target NAME (alias NAME::NAME) and with PYTHON the module target NAME_python.
#     NAME must be the spec's library name. TARGETS replaces the spec's GPU targets (sm_90 ...),
#     TUNING bakes tuned tables in, OPTIONS passes further arguments to `taot build`.
#
#   taot_library_targets(NAME DIR dir [PYTHON] [DEPENDS file...])
#     Defines the targets of a library whose sources `taot gen` wrote into DIR, with install and export
#     rules: `cmake --install` puts the library, its headers (include/NAME/) and a CMake package
#     (find_package(NAME), target NAME::NAME) under the prefix, and the Python module in
#     NAME_PYTHON_INSTALL_DIR. The CMakeLists.txt that taot gen writes calls it.
include_guard(GLOBAL)
# Inside the functions below: depfiles of add_custom_command are rewritten for Ninja (CMP0116), so
# absolute paths in them work whatever the calling project's minimum version.
if(POLICY CMP0116)
  cmake_policy(SET CMP0116 NEW)
endif()
include(GNUInstallDirs)
set(TAOT_LIBRARY_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}" CACHE INTERNAL "Where TaotLibrary.cmake and its templates lie")

function(taot_library_targets NAME)
  cmake_parse_arguments(PARSE_ARGV 1 arg "PYTHON" "DIR" "DEPENDS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_DIR)
    message(FATAL_ERROR "taot_library_targets(${NAME} DIR dir [PYTHON] [DEPENDS file...]): "
                        "got ${ARGN}")
  endif()
  option(${NAME}_shared "Build ${NAME} as a shared library" OFF)
  set(kind STATIC)
  if(${NAME}_shared)
    set(kind SHARED)
  endif()
  # The data (tables and cubins) is compiled once, for the library and the Python module.
  add_library(${NAME}_data OBJECT "${arg_DIR}/${NAME}_tables.cpp" "${arg_DIR}/${NAME}_cubins.cpp" ${arg_DEPENDS})
  target_link_libraries(${NAME}_data PRIVATE taot::runtime)  # its headers only: an object library links nothing
  set_target_properties(${NAME}_data PROPERTIES POSITION_INDEPENDENT_CODE ON)
  add_library(${NAME} ${kind} "${arg_DIR}/${NAME}.cpp" $<TARGET_OBJECTS:${NAME}_data> ${arg_DEPENDS})
  add_library(${NAME}::${NAME} ALIAS ${NAME})
  target_include_directories(${NAME} PUBLIC "$<BUILD_INTERFACE:${arg_DIR}>"
                                            "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/${NAME}>")
  target_compile_features(${NAME} PUBLIC cxx_std_17)
  target_link_libraries(${NAME} PUBLIC taot::runtime)
  set_target_properties(${NAME} PROPERTIES POSITION_INDEPENDENT_CODE ON)

  set(package_dir "${CMAKE_INSTALL_LIBDIR}/cmake/${NAME}")
  install(TARGETS ${NAME} EXPORT ${NAME}Targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES "${arg_DIR}/${NAME}.h" "${arg_DIR}/${NAME}_c.h" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/${NAME}")
  install(EXPORT ${NAME}Targets NAMESPACE ${NAME}:: DESTINATION "${package_dir}")
  set(TAOT_LIBRARY_NAME ${NAME})
  configure_file("${TAOT_LIBRARY_CMAKE_DIR}/libraryConfig.cmake.in" "${CMAKE_CURRENT_BINARY_DIR}/${NAME}Config.cmake"
                 @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/${NAME}Config.cmake" DESTINATION "${package_dir}")

  if(NOT arg_PYTHON)
    return()
  endif()
  option(${NAME}_python "Build the Python module ${NAME}" ON)
  if(NOT ${NAME}_python)
    return()
  endif()
  # The module holds the library's tables and cubins and hands them to taot's one Python binding,
  # taot._native (taot/python_module.h), at import: it needs Python's headers to build, and the
  # taot package importable to run. It links no runtime: the binding's is the process's one.
  find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
  Python_add_library(${NAME}_python MODULE WITH_SOABI "${arg_DIR}/${NAME}_python.cpp" $<TARGET_OBJECTS:${NAME}_data>)
  set_target_properties(${NAME}_python PROPERTIES OUTPUT_NAME ${NAME} CXX_VISIBILITY_PRESET hidden)
  target_include_directories(${NAME}_python PRIVATE $<TARGET_PROPERTY:taot::runtime,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_features(${NAME}_python PRIVATE cxx_std_17)
  # Small modules: stripped in release builds, and the tables' pointers relocated in packed form
  # (RELR; where the linker has it) rather than 24 bytes each.
  target_link_options(${NAME}_python PRIVATE $<$<CONFIG:Release,MinSizeRel>:-s>)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-Wl,-z,pack-relative-relocs" TAOT_LINKER_PACKS_RELATIVE_RELOCS)
  if(TAOT_LINKER_PACKS_RELATIVE_RELOCS)
    target_link_options(${NAME}_python PRIVATE -Wl,-z,pack-relative-relocs)
  endif()
  set(${NAME}_PYTHON_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/site-packages"
      CACHE PATH "Where `cmake --install` puts the Python module ${NAME} (relative: under the prefix)")
  install(TARGETS ${NAME}_python LIBRARY DESTINATION "${${NAME}_PYTHON_INSTALL_DIR}")
endfunction()

function(taot_add_library NAME SPEC)
  cmake_parse_arguments(PARSE_ARGV 2 arg "PYTHON" "" "TARGETS;TUNING;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "taot_add_library(${NAME} ${SPEC} ...): unexpected arguments ${arg_UNPARSED_ARGUMENTS} "
                        "(it takes PYTHON, TARGETS target..., TUNING [KERNEL=]FILE..., OPTIONS arg...)")
  endif()
  if(CMAKE_VERSION VERSION_LESS 3.20)
    message(FATAL_ERROR "taot_add_library needs CMake 3.20 or newer (depfiles); this is ${CMAKE_VERSION}")
  endif()
  if(TARGET taot::taot)
    set(taot_command taot::taot)
  else()
    find_program(TAOT_EXECUTABLE taot DOC "The taot command that taot_add_library runs")
    if(NOT TAOT_EXECUTABLE)
      message(FATAL_ERROR "taot_add_library(${NAME}): no taot command (this taot package has none, and none is on "
                          "PATH): install taot with pip, or set TAOT_EXECUTABLE")
    endif()
    set(taot_command "${TAOT_EXECUTABLE}")
  endif()
  cmake_path(ABSOLUTE_PATH SPEC BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE OUTPUT_VARIABLE spec)
  if(NOT EXISTS "${spec}")
    message(FATAL_ERROR "taot_add_library(${NAME}): the spec ${spec} does not exist")
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/taot/${NAME}")
  set(arguments build "${spec}" -o "${dir}" --library-name ${NAME} --depfile "${dir}/taot-build.d")
  set(generated "${dir}/${NAME}.h" "${dir}/${NAME}_c.h" "${dir}/${NAME}.cpp" "${dir}/${NAME}_tables.cpp"
                "${dir}/${NAME}_cubins.cpp")
  if(arg_PYTHON)
    list(APPEND arguments --python)
    list(APPEND generated "${dir}/${NAME}_python.cpp")
  endif()
  if(arg_TARGETS)
    list(APPEND arguments --target ${arg_TARGETS})
  endif()
  foreach(table IN LISTS arg_TUNING)
    # [KERNEL=]FILE, FILE relative to this CMakeLists.txt's folder.
    if(table MATCHES "^([A-Za-z_][A-Za-z0-9_]*)=(.+)$")
      set(kernel "${CMAKE_MATCH_1}=")
      set(file "${CMAKE_MATCH_2}")
    else()
      set(kernel "")
      set(file "${table}")
    endif()
    cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    list(APPEND arguments --tuning "${kernel}${file}")
  endforeach()
  list(APPEND arguments ${arg_OPTIONS})

  # The stamp is the command's output: taot build touches it on success and names it in the depfile.
  # The sources are byproducts, rewritten only when their bytes change, so an edit that changes one
  # kernel's cubins recompiles NAME_tables.cpp and NAME_cubins.cpp alone.
  add_custom_command(OUTPUT "${dir}/taot-build.stamp"
                     BYPRODUCTS ${generated} "${dir}/manifest.json"
                     COMMAND ${taot_command} ${arguments}
                     DEPFILE "${dir}/taot-build.d"
                     DEPENDS "${spec}" ${taot_command}
                     WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
                     COMMENT "taot build ${NAME} from ${SPEC}"
                     USES_TERMINAL VERBATIM)
  set(python_flag)
  if(arg_PYTHON)
    set(python_flag PYTHON)
  endif()
  taot_library_targets(${NAME} DIR "${dir}" ${python_flag} DEPENDS "${dir}/taot-build.stamp")
endfunction()
