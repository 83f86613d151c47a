# Checks that docs/examples.md shows each example's current output: every
# examples/expected/<name>.txt must appear in it word for word.
#   cmake -DDOC=<docs/examples.md> -DEXPECTED_DIR=<examples/expected> -P check_docs_outputs.cmake
file(READ ${DOC} doc)
file(GLOB expected_files ${EXPECTED_DIR}/*.txt)
set(missing "")
foreach(f IN LISTS expected_files)
  file(READ ${f} text)
  string(STRIP "${text}" text)
  string(FIND "${doc}" "${text}" at)
  if(at EQUAL -1)
    get_filename_component(name ${f} NAME_WE)
    list(APPEND missing ${name})
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "docs/examples.md does not show the current output of: ${missing} "
                      "(copy examples/expected/<name>.txt into its section)")
endif()
