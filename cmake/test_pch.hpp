// Precompiled once per build for every Boost.Test executable
// (lockstep_add_test): Boost.Test and the simulator's headers cost about
// 3.5 s of g++ in each of some thirty test files.
//
// Not <boost/test/unit_test.hpp> itself: each test file defines
// BOOST_TEST_MODULE before including it, and what that macro selects — main,
// the init function, the master suite's name — is in unit_test.hpp and
// unit_test_suite.hpp, which must therefore still be read in the test file,
// after its #define. Boost.Test derives BOOST_TEST_MAIN from BOOST_TEST_MODULE
// in detail/config.hpp, which is read here, before the #define: so it is set
// here, as that derivation would set it for every one of these files (each
// defines BOOST_TEST_MODULE and is its executable's only file).
#define BOOST_TEST_MAIN
#include <boost/test/framework.hpp>
#include <boost/test/test_tools.hpp>
#include <boost/test/tree/auto_registration.hpp>
#include <boost/test/tree/global_fixture.hpp>
#include <boost/test/tree/test_case_template.hpp>

#include "sim/runtime.hpp"
