# Writes the bytes of IN into OUT as a C array named NAME, its length in
# NAME_len and a NUL after the last byte (the built-in cartridge, the
# /ui/ page's files). Run as cmake -DIN=... -DOUT=... -DNAME=... -P Embed.cmake.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR n "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
# Bytes above 0x7f (UTF-8) cast, since char may be signed.
string(REGEX REPLACE "0x([89a-f][0-9a-f])," "(char)0x\\1," body "${body}")
file(WRITE ${OUT} "/* generated from ${IN}; do not edit */\n#include <stddef.h>\nextern const char ${NAME}[];\nextern const size_t ${NAME}_len;\nconst char ${NAME}[] = {${body}0};\nconst size_t ${NAME}_len = ${n};\n")
