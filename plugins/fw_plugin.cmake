# fw_add_plugin(TARGET SOURCES src... [VERSION v] [OUTPUT_DIR dir] [LIBS lib...] [DEFINES d...])
# Builds a flywheel plugin: a MODULE library lib<TARGET>.so that includes only
# include/flywheel/plugin_sdk.h from the project, exports only fw_plugin_entry, and can really be
# unloaded (STACK.md, Boost.DLL hot-reload pitfalls):
#   -fvisibility=hidden -fvisibility-inlines-hidden  export nothing but FW_PLUGIN_EXPORT symbols
#   -fno-gnu-unique (GCC)                             no STB_GNU_UNIQUE symbols (they make dlclose a no-op; clang makes none)
#   -Wl,--exclude-libs,ALL                            static libraries linked in export nothing
#   -Wl,--no-undefined                                an unresolved symbol is a link error, not a load error
#                                                     (not in sanitizer builds: their runtime is in the executable)
# FW_PLUGIN_VERSION (a string) is defined from VERSION (default: the project version).
function(fw_add_plugin target)
  cmake_parse_arguments(P "" "VERSION;OUTPUT_DIR" "SOURCES;LIBS;DEFINES" ${ARGN})
  if(NOT P_VERSION)
    set(P_VERSION "${PROJECT_VERSION}")
  endif()
  if(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR "${CMAKE_BINARY_DIR}/plugins")
  endif()
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    LIBRARY_OUTPUT_DIRECTORY "${P_OUTPUT_DIR}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_compile_options(${target} PRIVATE -fvisibility=hidden $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-fno-gnu-unique>)
  target_compile_definitions(${target} PRIVATE FW_PLUGIN_VERSION="${P_VERSION}" ${P_DEFINES})
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL)
  # Sanitizer runtimes live in the executable, so an instrumented plugin has undefined symbols.
  if(NOT FW_TSAN AND NOT FW_SANITIZE AND NOT FW_FUZZ)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  if(P_LIBS)
    target_link_libraries(${target} PRIVATE ${P_LIBS})
  endif()
endfunction()
