# Fails unless a plugin exports axl_plugin_negotiate and nothing else
# (docs/abi.md, "One exported symbol"). Anything more can interpose on, or be
# interposed by, another library in the process, since the core cannot stop
# a plugin's dependencies from being loaded globally.
#
#   cmake -DNM=<nm> -DPLUGIN=<file.so or folder> -P check_exports.cmake
#
# A folder means every libaxl_plugin_*.so directly in it; an empty folder is
# a failure, so a check that saw nothing cannot pass.
#
# Tolerated besides the entry point: the linker's section markers (_init,
# _fini, __bss_start, _edata, _end), and the absolute symbol GNU ld emits for
# a version node (AXL_PLUGIN_1), which names no code or data.

cmake_minimum_required(VERSION 3.24)  # script mode: sets the policies (IN_LIST)

if(NOT NM OR NOT PLUGIN)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DPLUGIN=<file.so|folder> -P check_exports.cmake")
endif()

set(_markers _init _fini __bss_start _edata _end)

if(IS_DIRECTORY "${PLUGIN}")
  file(GLOB _files LIST_DIRECTORIES false "${PLUGIN}/libaxl_plugin_*.so")
  list(SORT _files)
  if(NOT _files)
    message(FATAL_ERROR "check_exports: no libaxl_plugin_*.so in ${PLUGIN}")
  endif()
elseif(EXISTS "${PLUGIN}")
  set(_files "${PLUGIN}")
else()
  message(FATAL_ERROR "check_exports: ${PLUGIN} does not exist")
endif()

set(_failed "")
foreach(_file IN LISTS _files)
  execute_process(COMMAND "${NM}" -D --defined-only "${_file}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "check_exports: ${NM} failed on ${_file}: ${_err}")
  endif()

  # Lines look like "<value> <type> <name>[@@<version>]"; the value is
  # missing for some types, so take the last two fields.
  string(REPLACE "\n" ";" _lines "${_out}")
  set(_entry FALSE)
  set(_versions "")
  set(_absolute "")
  set(_extra "")
  foreach(_line IN LISTS _lines)
    if(NOT _line MATCHES "([A-Za-z?]) ([^ ]+)$")
      continue()
    endif()
    set(_type "${CMAKE_MATCH_1}")
    set(_sym "${CMAKE_MATCH_2}")
    set(_version "")
    if(_sym MATCHES "^([^@]+)@@?(.+)$")
      set(_sym "${CMAKE_MATCH_1}")
      set(_version "${CMAKE_MATCH_2}")
    endif()
    if(_sym STREQUAL "axl_plugin_negotiate" AND _type STREQUAL "T")
      set(_entry TRUE)
      if(_version)
        list(APPEND _versions "${_version}")
      endif()
    elseif(_sym IN_LIST _markers)
    elseif(_type STREQUAL "A")
      list(APPEND _absolute "${_sym}")  # judged below, once versions are known
    else()
      list(APPEND _extra "${_sym}")
    endif()
  endforeach()
  # An absolute symbol passes only as the version node of the entry point
  # (or, where nm prints no versions, as a node named AXL_PLUGIN_<n>).
  foreach(_sym IN LISTS _absolute)
    if(_sym IN_LIST _versions)
    elseif(NOT _versions AND _sym MATCHES "^AXL_PLUGIN_[0-9]+$")
    else()
      list(APPEND _extra "${_sym}")
    endif()
  endforeach()

  set(_problems "")
  if(NOT _entry)
    list(APPEND _problems "does not export axl_plugin_negotiate (as code)")
  endif()
  if(_extra)
    list(JOIN _extra " " _extra_text)
    list(APPEND _problems "unexpected exported symbol(s): ${_extra_text}")
  endif()
  if(_problems)
    list(JOIN _problems "; " _text)
    message(STATUS "check_exports: FAIL ${_file}: ${_text}")
    list(APPEND _failed "${_file}")
  else()
    message(STATUS "check_exports: ok ${_file}")
  endif()
endforeach()

if(_failed)
  list(LENGTH _failed _n)
  message(FATAL_ERROR "check_exports: ${_n} plugin(s) export more or other than "
                      "axl_plugin_negotiate; build them with axl_add_plugin "
                      "(hidden visibility and plugin-api/axl_plugin.map)")
endif()
