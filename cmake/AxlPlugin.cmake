# axl_add_plugin(<name> SOURCES ... [NO_INSTALL] [ALLOW_UNDEFINED] [OUTPUT_DIR dir] [TARGET t])
#
# Builds libaxl_plugin_<name>.so the way every plugin must be built: hidden
# visibility, the version script that exports axl_plugin_negotiate alone,
# -Bsymbolic, and (unless ALLOW_UNDEFINED, for the broken-plugin tests) no
# undefined symbols. The target is axl_plugin_<name> unless TARGET names it.
#
# One file for the axl tree and for backend authors: the installed package
# includes it from axlConfig.cmake (cmake/AxlInstall.cmake installs it with
# the version script beside it), so `find_package(axl)` gives a third
# party's project the same rules. There the plugin is written to the
# project's own build folder and installed into <libdir>/axl/plugins of the
# project's prefix, unless OUTPUT_DIR or NO_INSTALL say otherwise; the
# sanitizer switches below are the axl tree's own and are off.

# Captured here: inside the function CMAKE_CURRENT_LIST_DIR is the caller's.
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/axl_plugin.map")  # installed, beside this file
  set(_AXL_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/axl_plugin.map")
else()  # the source tree
  set(_AXL_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/../plugin-api/axl_plugin.map")
endif()

function(axl_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL;ALLOW_UNDEFINED" "OUTPUT_DIR;TARGET" "SOURCES" ${ARGN})
  if(NOT P_TARGET)
    set(P_TARGET axl_plugin_${name})
  endif()
  if(NOT P_OUTPUT_DIR)
    if(DEFINED AXL_PLUGIN_DIR)  # the axl tree's plugin folder
      set(P_OUTPUT_DIR ${AXL_PLUGIN_DIR})
    else()
      set(P_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  if(NOT TARGET Threads::Threads)
    find_package(Threads REQUIRED)
  endif()
  add_library(${P_TARGET} MODULE ${P_SOURCES})
  target_link_libraries(${P_TARGET} PRIVATE axl::plugin_api Threads::Threads)
  set_target_properties(${P_TARGET} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "axl_plugin_${name}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR}
    LINK_DEPENDS ${_AXL_PLUGIN_MAP})
  target_link_options(${P_TARGET} PRIVATE
    "-Wl,--version-script=${_AXL_PLUGIN_MAP}"
    "-Wl,-Bsymbolic")
  if(NOT P_ALLOW_UNDEFINED AND NOT AXL_SANITIZE AND NOT AXL_TSAN)
    target_link_options(${P_TARGET} PRIVATE "-Wl,--no-undefined")
  endif()
  if(AXL_NO_TRACE_HOOK)
    target_compile_definitions(${P_TARGET} PRIVATE AXL_NO_TRACE_HOOK=1)
  endif()
  if(NOT P_NO_INSTALL)
    set(_dest ${AXL_INSTALL_PLUGIN_DIR})
    if(NOT _dest)
      include(GNUInstallDirs)
      set(_dest ${CMAKE_INSTALL_LIBDIR}/axl/plugins)
    endif()
    install(TARGETS ${P_TARGET} LIBRARY DESTINATION ${_dest})
  endif()
endfunction()
