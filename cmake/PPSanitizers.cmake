# Sanitizer and libFuzzer instrumentation of pp's own code, for
# scripts/sanitize.sh and scripts/fuzz.sh (separate build directories). The
# Debian libraries pp links (MLIR/LLVM, LibTorch, OpenBLAS, protobuf,
# ONNX) and the stage libraries pp-opt compiles at test time stay
# uninstrumented.
set(PP_SANITIZE "" CACHE STRING
    "Sanitizers for all of pp: address,undefined or thread (empty: none)")
option(PP_LIBFUZZER
       "Link the fuzz targets (test/Fuzz) with libFuzzer; needs clang" OFF)

set(_pp_c_cxx "$<COMPILE_LANGUAGE:C,CXX>")
if(PP_SANITIZE)
  # -fno-sanitize-recover: an UndefinedBehaviorSanitizer report fails the
  # process (and so the test) instead of scrolling past.
  add_compile_options(
    "$<${_pp_c_cxx}:-fsanitize=${PP_SANITIZE};-fno-sanitize-recover=all;-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=${PP_SANITIZE})
  message(STATUS "pp: built with -fsanitize=${PP_SANITIZE}")
endif()

if(PP_LIBFUZZER)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PP_LIBFUZZER needs clang (libFuzzer), not "
                        "${CMAKE_CXX_COMPILER_ID}; scripts/fuzz.sh sets it up")
  endif()
  # Coverage feedback from all of pp; test/Fuzz links libFuzzer's main().
  add_compile_options("$<${_pp_c_cxx}:-fsanitize=fuzzer-no-link>")
  message(STATUS "pp: fuzz targets linked with libFuzzer")
endif()
