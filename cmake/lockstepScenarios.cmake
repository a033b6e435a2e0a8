# lockstep_add_scenarios(DIR [STRATEGIES s...] [SEEDS n] [PREFIX p]): each
# scenario file DIR/*.json (sorted by name) becomes CTest tests that run
# `lockstep explore FILE --strategy S --seeds N` with the lockstep CLI of this
# package (lockstep::cli); a test passes when every seed holds (exit 0) and
# fails on a failure (exit 1), liveness (3) or bad input (2), printing the
# seed and the replay command. A file with exact `expect` counts runs under
# fifo only (its counts hold only there); the others under each strategy
# (default random and pct). SEEDS defaults to 100. Test names:
# PREFIX<file's stem>.<strategy> (PREFIX defaults to "lockstep.").
#
#   find_package(lockstep REQUIRED)
#   enable_testing()
#   lockstep_add_scenarios(${CMAKE_CURRENT_SOURCE_DIR}/scenarios SEEDS 200)
function(lockstep_add_scenarios dir)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SEEDS;PREFIX" "STRATEGIES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lockstep_add_scenarios: unknown arguments: ${arg_UNPARSED_ARGUMENTS} "
                        "(expected DIR [STRATEGIES random|pct|fifo ...] [SEEDS n] [PREFIX p])")
  endif()
  if(NOT TARGET lockstep::cli)
    message(FATAL_ERROR "lockstep_add_scenarios: no lockstep::cli target: find_package(lockstep) first")
  endif()
  if(NOT arg_STRATEGIES)
    set(arg_STRATEGIES random pct)
  endif()
  foreach(s IN LISTS arg_STRATEGIES)
    if(NOT s MATCHES "^(random|pct|fifo)$")
      message(FATAL_ERROR "lockstep_add_scenarios: STRATEGIES: expected random, pct or fifo, found '${s}'")
    endif()
  endforeach()
  if(NOT arg_SEEDS)
    set(arg_SEEDS 100)
  endif()
  if(NOT arg_SEEDS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "lockstep_add_scenarios: SEEDS: expected a positive integer, found '${arg_SEEDS}'")
  endif()
  if(NOT DEFINED arg_PREFIX)
    set(arg_PREFIX "lockstep.")
  endif()
  get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  file(GLOB files LIST_DIRECTORIES false "${dir}/*.json")
  list(SORT files)
  if(NOT files)
    message(FATAL_ERROR "lockstep_add_scenarios: ${dir}: expected a directory holding scenario files (*.json), found none")
  endif()
  foreach(f IN LISTS files)
    get_filename_component(stem "${f}" NAME_WE)
    file(READ "${f}" text)
    if(text MATCHES "\"expect\"[ \t\r\n]*:")
      set(strategies fifo)  # exact counts hold only under fifo
    else()
      set(strategies ${arg_STRATEGIES})
      list(REMOVE_ITEM strategies fifo)
    endif()
    foreach(s IN LISTS strategies)
      add_test(NAME "${arg_PREFIX}${stem}.${s}"
               COMMAND lockstep::cli explore "${f}" --strategy ${s} --seeds ${arg_SEEDS}
                       --record-dir "${CMAKE_CURRENT_BINARY_DIR}/lockstep-failures")
      set_tests_properties("${arg_PREFIX}${stem}.${s}" PROPERTIES LABELS lockstep)
    endforeach()
  endforeach()
endfunction()
