// The target that builds cmake/test_pch.hpp for the Boost.Test executables to reuse.
