# Fails unless libaxl.so exports functions named axl_* and nothing else: no
# data symbol (docs/abi.md, "The application ABI": an exported variable is
# copied into a non-PIE executable by a copy relocation, which freezes its
# size), no C++ symbol, no symbol outside the axl_ prefix.
#
#   cmake -DNM=<nm> -DLIB=<libaxl.so> [-DEXPECT=<name>...] -P check_core_exports.cmake
#
# EXPECT (optional, ;-list): functions that must be among the exports, so a
# check that read an empty or wrong file cannot pass.

cmake_minimum_required(VERSION 3.24)

if(NOT NM OR NOT LIB)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DLIB=<libaxl.so> -P check_core_exports.cmake")
endif()
execute_process(COMMAND ${NM} -D --defined-only ${LIB}
                OUTPUT_VARIABLE _out RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "FAIL ${LIB}: nm failed: ${_err}")
endif()
string(REPLACE "\n" ";" _lines "${_out}")
set(_bad "")
set(_functions "")
foreach(_l IN LISTS _lines)
  if(NOT _l MATCHES "^[0-9a-fA-F]* *([A-Za-z]) (.+)$")
    continue()
  endif()
  set(_type "${CMAKE_MATCH_1}")
  set(_name "${CMAKE_MATCH_2}")
  # The version node the script defines is an absolute symbol (type A).
  if(_type STREQUAL "A" AND _name MATCHES "^AXL_[0-9]+$")
    continue()
  endif()
  if(_name MATCHES "^(_init|_fini|__bss_start|_edata|_end)$")
    continue()
  endif()
  string(REGEX REPLACE "@.*$" "" _name "${_name}")
  if(_type STREQUAL "T" AND _name MATCHES "^axl_[a-z0-9_]+$")
    list(APPEND _functions "${_name}")
  else()
    list(APPEND _bad "${_name} (${_type})")
  endif()
endforeach()
if(_bad)
  list(JOIN _bad ", " _j)
  message(FATAL_ERROR "FAIL ${LIB}: exports other than axl_* functions: ${_j}")
endif()
foreach(_e IN LISTS EXPECT)
  if(NOT _e IN_LIST _functions)
    message(FATAL_ERROR "FAIL ${LIB}: ${_e} is not exported")
  endif()
endforeach()
list(LENGTH _functions _n)
message(STATUS "PASS ${LIB}: ${_n} axl_* functions, nothing else")
