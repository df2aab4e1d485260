# axl_add_plugin(<name> SOURCES ... [NO_INSTALL] [ALLOW_UNDEFINED] [OUTPUT_DIR dir])
#
# Builds libaxl_plugin_<name>.so the way every plugin must be built: hidden
# visibility, the version script that exports axl_plugin_negotiate alone, and
# (unless ALLOW_UNDEFINED, for the broken-plugin tests) no undefined symbols.
function(axl_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL;ALLOW_UNDEFINED" "OUTPUT_DIR;TARGET" "SOURCES" ${ARGN})
  if(NOT P_TARGET)
    set(P_TARGET axl_plugin_${name})
  endif()
  if(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR ${AXL_PLUGIN_DIR})
  endif()
  add_library(${P_TARGET} MODULE ${P_SOURCES})
  target_link_libraries(${P_TARGET} PRIVATE axl::plugin_api Threads::Threads)
  set_target_properties(${P_TARGET} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "axl_plugin_${name}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  target_link_options(${P_TARGET} PRIVATE
    "-Wl,--version-script=${PROJECT_SOURCE_DIR}/plugin-api/axl_plugin.map"
    "-Wl,-Bsymbolic")
  if(NOT P_ALLOW_UNDEFINED AND NOT AXL_SANITIZE AND NOT AXL_TSAN)
    target_link_options(${P_TARGET} PRIVATE "-Wl,--no-undefined")
  endif()
  if(AXL_NO_TRACE_HOOK)
    target_compile_definitions(${P_TARGET} PRIVATE AXL_NO_TRACE_HOOK=1)
  endif()
  if(NOT P_NO_INSTALL)
    install(TARGETS ${P_TARGET} LIBRARY DESTINATION ${AXL_INSTALL_PLUGIN_DIR})
  endif()
endfunction()
