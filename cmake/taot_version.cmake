# TAOT_VERSION: taot's version, read from its one home, python/taot/__init__.py (`__version__`),
# where the wheel's metadata reads it too (pyproject.toml).
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../python/taot/__init__.py" _taot_version_line REGEX "^__version__ = ")
string(REGEX REPLACE "^__version__ = \"([0-9.]+)\"$" "\\1" TAOT_VERSION "${_taot_version_line}")
if(NOT TAOT_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "cannot read __version__ from ${CMAKE_CURRENT_LIST_DIR}/../python/taot/__init__.py")
endif()
