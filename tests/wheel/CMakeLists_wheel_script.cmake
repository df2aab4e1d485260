# scripts/wheel.sh's venv per interpreter, its OUTDIR left as it was but for
# the wheel it replaces, and relative paths: with a stand-in interpreter, so
# seconds rather than a wheel build (tests/wheel/wheel_script_test.sh; the
# real build is tests/wheel/wheel_test.sh, run by scripts/test.sh). Included
# from tests/CMakeLists.txt.
add_test(NAME wheel_script COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/wheel_script_test.sh)
set_tests_properties(wheel_script PROPERTIES LABELS "scripts;wheel" TIMEOUT 120)
