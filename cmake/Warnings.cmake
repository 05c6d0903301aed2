# A strict warning set; errors when KEEL_WERROR is on (it is in CI).
function(keel_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wformat=2 -Wconversion -Wno-sign-conversion
    -Wstrict-prototypes -Wmissing-prototypes -Wold-style-definition
    -Wcast-qual -Wpointer-arith -Wundef -Wwrite-strings -Wvla
    -Wimplicit-fallthrough -Wnull-dereference -Wdouble-promotion)
  if(KEEL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
