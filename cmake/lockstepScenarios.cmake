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

# lockstep_add_regressions(DIR [PREFIX p]): each failure record DIR/*.json
# (as lockstep writes them: explore, run, shrink, replay --continue) becomes
# a CTest test that replays it with lockstep::cli and passes only when it
# reproduces its recorded failure byte for byte ("reproduced: the same trace
# hash H", H the record's trace_hash). A record that diverges after an
# intended change is re-recorded with
#   lockstep replay RECORD --continue --record RECORD
# (the continued run's record replaces it; a run that now holds writes
# nothing: the failure is gone, and the record is removed by hand). Test
# names: PREFIX<file's stem> (PREFIX defaults to "lockstep.regression.").
#
#   lockstep_add_regressions(${CMAKE_CURRENT_SOURCE_DIR}/regressions)
function(lockstep_add_regressions dir)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PREFIX" "")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lockstep_add_regressions: unknown arguments: ${arg_UNPARSED_ARGUMENTS} (expected DIR [PREFIX p])")
  endif()
  if(NOT TARGET lockstep::cli)
    message(FATAL_ERROR "lockstep_add_regressions: no lockstep::cli target: find_package(lockstep) first")
  endif()
  if(NOT DEFINED arg_PREFIX)
    set(arg_PREFIX "lockstep.regression.")
  endif()
  get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  file(GLOB files LIST_DIRECTORIES false CONFIGURE_DEPENDS "${dir}/*.json")
  list(SORT files)
  if(NOT files)
    message(FATAL_ERROR "lockstep_add_regressions: ${dir}: expected a directory holding failure records (*.json), found none")
  endif()
  foreach(f IN LISTS files)
    get_filename_component(stem "${f}" NAME_WLE)
    # A re-recorded file changes its hash: configure again.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${f}")
    file(READ "${f}" text)
    string(JSON hash ERROR_VARIABLE error GET "${text}" trace_hash)
    if(error OR NOT hash MATCHES "^[0-9a-f]+$")
      message(FATAL_ERROR "lockstep_add_regressions: ${f}: /trace_hash: expected a failure record's trace hash (hex), found '${hash}' ${error}")
    endif()
    add_test(NAME "${arg_PREFIX}${stem}" COMMAND lockstep::cli replay "${f}")
    # Only a reproduction prints this line with the record's own hash (replay exits 1 then: the failure).
    set_tests_properties("${arg_PREFIX}${stem}" PROPERTIES LABELS "lockstep;regressions"
                         PASS_REGULAR_EXPRESSION "reproduced: the same trace hash ${hash} ")
  endforeach()
endfunction()
