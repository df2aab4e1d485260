# ctest: slot_append (tests/plugins/slot_append_test.cpp). Runs the dump of
# the slot list as built (BASE) and with one slot appended (APPENDED), and
# requires every consumer of the list to have grown by exactly that slot:
# the table, the loader, the CTS probe, the CTS slot-to-case table (the
# append's own CTS case) and plugins/common. An append touches plugin.h's
# list, the backend that implements it, a CTS case named in
# tools/axl-cts/slot_cases.hpp, and docs/abi.md.
#   cmake -DBASE=<exe> -DAPPENDED=<exe> -P slot_append_check.cmake
foreach(which BASE APPENDED)
  execute_process(COMMAND ${${which}} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${${which}} failed (${rc}):\n${out}")
  endif()
  string(REGEX REPLACE "\n$" "" out "${out}")
  string(REPLACE "\n" ";" lines_${which} "${out}")
  foreach(line IN LISTS lines_${which})
    if(line MATCHES "^([a-z_0-9]+) ([0-9]+)$")
      set(${which}_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    endif()
  endforeach()
endforeach()

set(errors "")
macro(expect key delta)
  if(NOT DEFINED BASE_${key} OR NOT DEFINED APPENDED_${key})
    string(APPEND errors "  ${key}: missing from the output\n")
  else()
    math(EXPR want "${BASE_${key}} + ${delta}")
    if(NOT APPENDED_${key} EQUAL want)
      string(APPEND errors "  ${key}: ${BASE_${key}} as built, ${APPENDED_${key}} with a slot appended; expected ${want}\n")
    endif()
  endif()
endmacro()
expect(table_size 8)
expect(slot_count 1)
expect(loader_slots 1)
expect(cts_slots 1)
expect(cts_cases 1)
expect(common_struct_size 8)
expect(common_filled_count 1)
# Appended slots are optional and leave the 1.0 floor where it is.
expect(loader_required 0)
expect(cts_required 0)
expect(cts_table_size_1_0 0)

# The appended build's lines are the base build's plus the new slot's own:
# at the old table's end, optional, filled by the backend that has a body.
set(new_lines ${lines_APPENDED})
list(REMOVE_ITEM new_lines ${lines_BASE})
set(want_lines
  "slot fake_appended_slot ${BASE_table_size} required=0 minor=[0-9]+"
  "common_filled fake_appended_slot"
  "cts_case fake_appended_slot cts.fake.appended_slot")
foreach(pattern IN LISTS want_lines)
  set(found FALSE)
  foreach(line IN LISTS new_lines)
    if(line MATCHES "^${pattern}$")
      set(found TRUE)
      list(REMOVE_ITEM new_lines "${line}")
      break()
    endif()
  endforeach()
  if(NOT found)
    string(APPEND errors "  no line '${pattern}' in the appended build\n")
  endif()
endforeach()
foreach(line IN LISTS new_lines)
  if(NOT line MATCHES "^(table_size|slot_count|loader_slots|cts_slots|cts_cases|common_struct_size|common_filled_count) ")
    string(APPEND errors "  unexpected new line: ${line}\n")
  endif()
endforeach()
foreach(line IN LISTS lines_BASE)
  list(FIND lines_APPENDED "${line}" at)
  if(at EQUAL -1 AND NOT line MATCHES "^(table_size|slot_count|loader_slots|cts_slots|cts_cases|common_struct_size|common_filled_count) ")
    string(APPEND errors "  line gone with a slot appended: ${line}\n")
  endif()
endforeach()

if(errors)
  message(FATAL_ERROR "appending a slot did not reach every consumer of the list:\n${errors}")
endif()
message(STATUS "slot_append: table ${BASE_table_size} -> ${APPENDED_table_size} bytes, "
               "${BASE_slot_count} -> ${APPENDED_slot_count} slots in the table, the loader, the CTS (probe and cases) and plugins/common")
