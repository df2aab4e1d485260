# Install layout and the packages consumers use to find axl.
#
#   include/axl/                axl.h, axl.hpp (core), plugin.h, status.h, enums.h, cpu_kernel.h
#   lib/libaxl.so*              the core
#   lib/axl/plugins/            libaxl_plugin_<name>.so (installed by axl_add_plugin)
#   lib/cmake/axl/              axlConfig.cmake, axlConfigVersion.cmake, axlTargets*.cmake,
#                               AxlPlugin.cmake (axl_add_plugin) and axl_plugin.map
#   lib/axl-cts/                libaxl_cts_kernels.so, the CTS's module for cpu devices
#   lib/pkgconfig/axl.pc        pkg-config, with a `plugindir` variable
#   bin/axl-info, bin/axl-cts
#
# Everything is relative to the prefix: the CMake package through
# configure_package_config_file, axl.pc through ${pcfiledir}, and the core
# finds its plugins next to its own real path. So an installed tree can be
# moved or unpacked anywhere and still works without environment variables.
# Included last from the top-level CMakeLists.txt, once every target exists.

include(CMakePackageConfigHelpers)

set(AXL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/axl CACHE STRING
    "Where axlConfig.cmake is installed, relative to the prefix")
set(AXL_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig CACHE STRING
    "Where axl.pc is installed, relative to the prefix")

# Backend authors need only these headers; core/ installs its own.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plugin-api/include/axl
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

# axl links axl_plugin_api PUBLIC (axl.h includes plugin.h), so the export set
# is incomplete without it; it also gives plugin authors axl::plugin_api.
install(TARGETS axl_plugin_api EXPORT axlTargets)
install(EXPORT axlTargets
        NAMESPACE axl::
        FILE axlTargets.cmake
        DESTINATION ${AXL_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/axlConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/axlConfig.cmake
  INSTALL_DESTINATION ${AXL_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR AXL_INSTALL_PLUGIN_DIR)
# A consumer asking for X.Y accepts any later X.*: releases keep the
# application ABI within a major version.
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/cmake/axlConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
# axl_add_plugin for backend authors, with the version script it links by
# (axlConfig.cmake includes it; cmake/AxlPlugin.cmake finds the map beside it).
install(FILES
          ${CMAKE_BINARY_DIR}/cmake/axlConfig.cmake
          ${CMAKE_BINARY_DIR}/cmake/axlConfigVersion.cmake
          ${CMAKE_CURRENT_LIST_DIR}/AxlPlugin.cmake
          ${PROJECT_SOURCE_DIR}/plugin-api/axl_plugin.map
        DESTINATION ${AXL_INSTALL_CMAKEDIR})

# pkg-config: ${pcfiledir} keeps the file valid wherever the prefix moves.
# The relative hop from the .pc folder back to the prefix depends on the
# (possibly multi-level, e.g. lib/x86_64-linux-gnu) libdir.
if(IS_ABSOLUTE "${AXL_INSTALL_PKGCONFIGDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}"
   OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  # Absolute install dirs cannot move with the prefix anyway.
  set(AXL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _axl_pc_up "/${AXL_INSTALL_PKGCONFIGDIR}" "/")
  string(REGEX REPLACE "/$" "" _axl_pc_up "${_axl_pc_up}")
  set(AXL_PC_PREFIX "\${pcfiledir}/${_axl_pc_up}")
endif()
foreach(_axl_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_axl_dir}}")
    set(AXL_PC_${_axl_dir} "${CMAKE_INSTALL_${_axl_dir}}")
  else()
    set(AXL_PC_${_axl_dir} "\${prefix}/${CMAKE_INSTALL_${_axl_dir}}")
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/axl.pc.in ${CMAKE_BINARY_DIR}/cmake/axl.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/axl.pc DESTINATION ${AXL_INSTALL_PKGCONFIGDIR})
