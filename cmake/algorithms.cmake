# The rows "X(name, State, option, fast)" of core/include/ratewarden/algorithm_table.hpp, in table order: the build's
# source and Lua lists follow the table.

# The algorithm names, in table order.
function(ratewarden_read_algorithms table out_var)
  file(READ "${table}" text)
  string(REGEX MATCHALL "\n *X\\([a-z0-9_]+," rows "${text}")
  set(names "")
  foreach(row IN LISTS rows)
    string(REGEX REPLACE "\n *X\\(([a-z0-9_]+)," "\\1" name "${row}")
    list(APPEND names ${name})
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "no algorithm rows found in ${table}")
  endif()
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# The fast column of the row of `algorithm`: the algorithm whose <fast>_fast.lua its script opens with, or "none".
function(ratewarden_fast_paths table algorithm out_var)
  file(READ "${table}" text)
  if(NOT text MATCHES "\n *X\\(${algorithm}, *[A-Za-z0-9_]+, *[a-z0-9_]+, *([a-z0-9_]+)\\)")
    message(FATAL_ERROR "no row X(${algorithm}, State, option, fast) in ${table}")
  endif()
  set(${out_var} ${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()
