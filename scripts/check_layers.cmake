# The layer rule of the sources (docs/architecture.md, "Layers"), checked on every build: each
# folder below may include project headers only from the folders listed for it. An include from
# a higher layer (core including analysis/, analysis including core/train/, ...) fails the build
# with the file, the line and what that folder may include.
#
#   cmake -DROOT=<source folder> [-DSTAMP=<file>] -P scripts/check_layers.cmake
#
# STAMP is touched when every file passes (the build's record that the check ran).

# folder|folders it may include (besides itself), lowest layer first
set(RELPOS_LAYERS
    "core/util|"
    "core/config|core/util"
    "core/position|core/util,core/config"
    "core/data|core/util,core/config"
    "core/task|core/util,core/config,core/data"
    "core/model|core/util,core/config,core/position,core/task"
    "core/io|core/util"
    "core/dist|core/util,core/config,core/data,core/io"
    "core/train|core/util,core/config,core/position,core/data,core/task,core/model,core/io,core/dist"
    "core/bench|core/util,core/config,core/position,core/task,core/model"
    # Hugging Face import/export: builds run folders (train's checkpoint and snapshot writers).
    "core/hf|core/util,core/config,core/position,core/data,core/task,core/model,core/io,core/train"
    "analysis|core/util,core/config,core/io,core/task"
    "experiments|core,analysis"
    "app|core,analysis,experiments"
    # tests/ is not checked (tests include what they test); nothing else may include it.
    "tests|")

cmake_policy(SET CMP0007 NEW)  # keep the empty "allowed" field of a rule
if(NOT ROOT)
  message(FATAL_ERROR "check_layers: -DROOT=<source folder> is required")
endif()

set(_folders "")
foreach(rule IN LISTS RELPOS_LAYERS)
  string(REPLACE "|" ";" parts "${rule}")
  list(GET parts 0 folder)
  list(LENGTH parts n)
  set(allowed "")
  if(n GREATER 1)
    list(GET parts 1 allowed)
    string(REPLACE "," ";" allowed "${allowed}")
  endif()
  list(APPEND _folders "${folder}")
  set("_allowed_${folder}" "${folder};${allowed}")
endforeach()

# The folder of RELPOS_LAYERS that `path` (relative to ROOT) lies in, or "" (longest match).
function(layer_of path out)
  set(best "")
  foreach(folder IN LISTS _folders)
    string(LENGTH "${folder}" len)
    string(LENGTH "${best}" best_len)
    if(path MATCHES "^${folder}/" AND len GREATER best_len)
      set(best "${folder}")
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

# True when `included` (a path such as core/train/trainer.h) lies in one of `allowed`.
function(may_include included allowed out)
  set(ok FALSE)
  foreach(a IN LISTS allowed)
    if(included MATCHES "^${a}/")
      set(ok TRUE)
    endif()
  endforeach()
  set(${out} ${ok} PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/core/*.h" "${ROOT}/core/*.cpp"
     "${ROOT}/analysis/*.h" "${ROOT}/analysis/*.cpp" "${ROOT}/experiments/*.h"
     "${ROOT}/experiments/*.cpp" "${ROOT}/app/*.h" "${ROOT}/app/*.cpp")
set(problems "")
foreach(src IN LISTS sources)
  layer_of("${src}" layer)
  if(layer STREQUAL "")
    continue()
  endif()
  file(READ "${ROOT}/${src}" text)
  # One list element per line: characters that CMake lists treat specially go first.
  string(REGEX REPLACE "[][;\\\\]" " " text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(line_no 0)
  foreach(line IN LISTS lines)
    math(EXPR line_no "${line_no} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      continue()
    endif()
    set(included "${CMAKE_MATCH_1}")
    layer_of("${included}" target)
    if(target STREQUAL "")
      continue()  # a system-style or generated header
    endif()
    may_include("${included}" "${_allowed_${layer}}" ok)
    if(NOT ok)
      list(REMOVE_ITEM _allowed_${layer} "${layer}")
      string(REPLACE ";" ", " may "${_allowed_${layer}}")
      if(may STREQUAL "")
        set(may "nothing outside itself")
      endif()
      string(APPEND problems
             "\n  ${src}:${line_no}: includes \"${included}\" (${target}), but ${layer} may "
             "include only ${layer} and: ${may}")
      set(_allowed_${layer} "${layer};${_allowed_${layer}}")
    endif()
  endforeach()
endforeach()

if(NOT problems STREQUAL "")
  message(FATAL_ERROR "layer rule broken (docs/architecture.md, \"Layers\"): a layer includes "
                      "a header of a layer above it or beside it:${problems}\n"
                      "hint: move the code to the layer that owns it, or pass what it needs down "
                      "from the caller")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
