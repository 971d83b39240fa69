# make install / cmake --install, and make deb (CPack). The layout under the
# prefix:
#   bin/luamcp
#   share/luamcp/lua/mcp/       the Lua library, found relative to the binary
#   share/luamcp/plugins/       the example plugins
#   share/luamcp/console/      the console's page (--console), found beside lua/
#   share/luamcp/types/         the LuaLS annotations of the API (luamcp path types)
#   share/lua/5.4/mcp/test.lua  mcp.test, where lua5.4 (and busted) look
#   share/man/man1/luamcp.1
#   share/doc/luamcp/README.md, docs/ (the guide, the references, operations)
include(GNUInstallDirs)
# Installing builds nothing more than it installs (luamcp): not the ASan
# binary, the unit tests or the fuzz targets (cpack's preinstall step too).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

# The binary finds the library at BINDIR/LUAMCP_LUA_REL (src/lua/libdir.c),
# so a moved tree still runs; the source tree's lua/ is the fallback of a build.
file(RELATIVE_PATH LUAMCP_LUA_REL "${CMAKE_INSTALL_FULL_BINDIR}"
     "${CMAKE_INSTALL_FULL_DATADIR}/luamcp/lua")
foreach(bin luamcp luamcp-asan)
  if(TARGET ${bin})
    target_compile_definitions(${bin} PRIVATE LUAMCP_LUA_REL="${LUAMCP_LUA_REL}")
  endif()
endforeach()

file(GLOB LUAMCP_EXAMPLES "${CMAKE_SOURCE_DIR}/plugins/*.lua")
install(TARGETS luamcp RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY lua/ DESTINATION ${CMAKE_INSTALL_DATADIR}/luamcp/lua FILES_MATCHING PATTERN "*.lua")
install(FILES ${LUAMCP_EXAMPLES} DESTINATION ${CMAKE_INSTALL_DATADIR}/luamcp/plugins)
install(DIRECTORY console/ DESTINATION ${CMAKE_INSTALL_DATADIR}/luamcp/console
        FILES_MATCHING PATTERN "*.html" PATTERN "*.js" PATTERN "*.css")
install(DIRECTORY types/ DESTINATION ${CMAKE_INSTALL_DATADIR}/luamcp/types FILES_MATCHING PATTERN "*.lua")
install(FILES lua/mcp/test.lua DESTINATION ${CMAKE_INSTALL_DATADIR}/lua/5.4/mcp)
install(FILES docs/luamcp.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/guide docs/reference docs/operations docs/development
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")

# make deb: a Debian package whose Depends dpkg-shlibdeps computes from the
# libraries the binary links (the runtime libraries only); what mcp.test
# needs is suggested.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME luamcp)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Lua-scriptable Model Context Protocol (MCP) server")
set(CPACK_PACKAGE_CONTACT "luamcp maintainers <luamcp@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "lua5.4, lua-busted, lua-cjson, lua-luv")
include(CPack)
