# Writes the bytes of IN as a C array into OUT (the built-in cartridge).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR n "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE ${OUT} "/* generated from ${IN}; do not edit */\n#include <stddef.h>\nextern const char keel_fleet_cartridge_json[];\nextern const size_t keel_fleet_cartridge_json_len;\nconst char keel_fleet_cartridge_json[] = {${body}0};\nconst size_t keel_fleet_cartridge_json_len = ${n};\n")
