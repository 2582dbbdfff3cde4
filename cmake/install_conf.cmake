# Installs conf/ into <prefix>/share/flywheel/conf with its paths made to work from the install:
# "build/plugins" -> the installed plugin folder, "conf/..." -> the installed conf folder (model
# paths stay relative to the current directory: models are the user's). Run by `cmake --install`
# (install(SCRIPT)); FW_CONF_SOURCE names the source conf/ folder.
set(prefix "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
set(dest "${prefix}/share/flywheel/conf")
file(GLOB_RECURSE files RELATIVE "${FW_CONF_SOURCE}" "${FW_CONF_SOURCE}/*")
foreach(rel IN LISTS files)
  get_filename_component(dir "${dest}/${rel}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  if(rel MATCHES "\\.toml$")
    file(READ "${FW_CONF_SOURCE}/${rel}" text)
    string(REPLACE "\"build/plugins\"" "\"${CMAKE_INSTALL_PREFIX}/lib/flywheel/plugins\"" text "${text}")
    string(REPLACE "\"conf/" "\"${CMAKE_INSTALL_PREFIX}/share/flywheel/conf/" text "${text}")
    file(WRITE "${dest}/${rel}" "${text}")
    message(STATUS "Installing: ${dest}/${rel} (paths made absolute)")
  else()
    file(COPY "${FW_CONF_SOURCE}/${rel}" DESTINATION "${dir}")
  endif()
endforeach()
