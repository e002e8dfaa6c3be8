# install.cmake — `cmake --install` layout: libkeel + keel.h + keel.pc, the Lua
# module and Lua files where Lua 5.4 looks for them, the keel program, and the
# bundled kinds and scenes as data.
set(KEEL_LUA_CDIR ${CMAKE_INSTALL_LIBDIR}/lua/5.4 CACHE STRING "where Lua 5.4 C modules go")
set(KEEL_LUA_LDIR ${CMAKE_INSTALL_DATADIR}/lua/5.4 CACHE STRING "where Lua 5.4 modules go")

# Where the installed keel program finds its Lua files and bundled data (tools/embed.c): the
# absolute directories, and the same relative to its bindir (a moved or staged prefix).
get_filename_component(KEEL_FULL_LDIR ${KEEL_LUA_LDIR} ABSOLUTE BASE_DIR ${CMAKE_INSTALL_PREFIX})
file(RELATIVE_PATH KEEL_LDIR_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${KEEL_FULL_LDIR})
file(RELATIVE_PATH KEEL_DATA_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_DATADIR}/keel)
if(TARGET keel)
  target_compile_definitions(keel PRIVATE
    KEEL_INSTALL_LUADIR="${KEEL_FULL_LDIR}"
    KEEL_INSTALL_DATADIR="${CMAKE_INSTALL_FULL_DATADIR}/keel"
    KEEL_LUADIR_FROM_BINDIR="${KEEL_LDIR_FROM_BIN}"
    KEEL_DATADIR_FROM_BINDIR="${KEEL_DATA_FROM_BIN}")
endif()

install(TARGETS keel_static keel_shared
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/core/keel.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/core/keel_merge.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/core/keel_stats.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(KEEL_NET)
  install(FILES ${CMAKE_SOURCE_DIR}/core/keel_net.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

configure_file(${CMAKE_SOURCE_DIR}/tools/keel.pc.in ${CMAKE_BINARY_DIR}/keel.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/keel.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET keel_lua)
  install(TARGETS keel_lua LIBRARY DESTINATION ${KEEL_LUA_CDIR}/keel)
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/lua/keel DESTINATION ${KEEL_LUA_LDIR}
  FILES_MATCHING PATTERN "*.lua")
# the inspector page (keel serve's static files), found next to the Lua files through package.path
install(DIRECTORY ${CMAKE_SOURCE_DIR}/lua/keel/inspector DESTINATION ${KEEL_LUA_LDIR}/keel)
# `keel new`'s templates (the scene, README.md, the dot.* files too), found beside keel/cli/new.lua
install(DIRECTORY ${CMAKE_SOURCE_DIR}/lua/keel/cli/new DESTINATION ${KEEL_LUA_LDIR}/keel/cli)
if(TARGET keel)
  install(TARGETS keel RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/lua/kinds DESTINATION ${CMAKE_INSTALL_DATADIR}/keel
  FILES_MATCHING PATTERN "*.lua")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scenes/ DESTINATION ${CMAKE_INSTALL_DATADIR}/keel/scenes)
