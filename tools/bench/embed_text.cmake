# cmake -DINPUT=file -DOUTPUT=file.cpp -DFUNCTION=name -P embed_text.cmake
# Writes OUTPUT defining `const std::string& kvikio::bench::FUNCTION()`: INPUT's bytes.
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
string(REGEX REPLACE "(('\\\\x[0-9a-f][0-9a-f]',){16})" "\\1\n    " bytes "${bytes}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${name} by embed_text.cmake at build time: do not edit.\n"
  "#include <string>\n\n"
  "namespace kvikio::bench {\n\n"
  "const std::string& ${FUNCTION}()\n{\n"
  "  static const char bytes[] = {\n    ${bytes}};\n"
  "  static const std::string text(bytes, sizeof bytes);\n"
  "  return text;\n}\n\n"
  "}  // namespace kvikio::bench\n")
# Only a changed text rewrites the file (and rebuilds what depends on it).
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
