# cmake --install (GNUInstallDirs): the binary, its resources (example sessions and run configs),
# the docs and the papers' references, the man page generated from the real --help text, bash
# completion, and with the GUI the desktop entry, icons, AppStream metainfo and the session MIME
# type. The installed binary finds its resources relative to its prefix (app/src/gui/document/app_paths.cpp).
install(TARGETS tensorscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY resources/sessions resources/examples resources/sweeps resources/lessons DESTINATION ${CMAKE_INSTALL_DATADIR}/tensorscope)
install(FILES README.md resources/desktop/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian's changelog.gz of a native package, compressed reproducibly at build time.
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/doc/changelog.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/doc
  COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/resources/desktop/changelog ${CMAKE_BINARY_DIR}/doc/changelog
  COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/doc/changelog
  DEPENDS ${PROJECT_SOURCE_DIR}/resources/desktop/changelog)
add_custom_target(tensorscope_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/doc/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/doc/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        PATTERN "demo_training.txt" EXCLUDE)
install(FILES resources/completion/tensorscope.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME tensorscope)

# The man page, from `tensorscope --help` of this build.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  # Compressed, as Debian policy asks (gzip -n: no name or time stamp, reproducible).
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/tensorscope.1.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/make_manpage.py $<TARGET_FILE:tensorscope>
            ${PROJECT_VERSION} ${CMAKE_BINARY_DIR}/man/tensorscope.1
    COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/man/tensorscope.1
    DEPENDS tensorscope ${PROJECT_SOURCE_DIR}/scripts/make_manpage.py
    COMMENT "Generating the man page from tensorscope --help")
  add_custom_target(tensorscope_man ALL DEPENDS ${CMAKE_BINARY_DIR}/man/tensorscope.1.gz)
  install(FILES ${CMAKE_BINARY_DIR}/man/tensorscope.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

if(TENSORSCOPE_BUILD_GUI)
  add_executable(render_icon resources/desktop/render_icon.cpp)
  target_link_libraries(render_icon PRIVATE Qt6::Gui Qt6::Svg)
  set(TS_ICON_STAMP ${CMAKE_BINARY_DIR}/icons/stamp)
  add_custom_command(OUTPUT ${TS_ICON_STAMP}
    COMMAND render_icon ${PROJECT_SOURCE_DIR}/resources/desktop/tensorscope.svg ${CMAKE_BINARY_DIR}/icons
    COMMAND ${CMAKE_COMMAND} -E touch ${TS_ICON_STAMP}
    DEPENDS render_icon ${PROJECT_SOURCE_DIR}/resources/desktop/tensorscope.svg
    COMMENT "Rendering the icon's PNG sizes")
  add_custom_target(tensorscope_icons ALL DEPENDS ${TS_ICON_STAMP})
  foreach(size 16 24 32 48 64 128 256 512)
    install(FILES ${CMAKE_BINARY_DIR}/icons/${size}x${size}/tensorscope.png
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
  endforeach()
  install(FILES resources/desktop/tensorscope.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  install(FILES resources/desktop/tensorscope.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES resources/desktop/io.github.tensorscope.Tensorscope.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  install(FILES resources/desktop/tensorscope-session.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages)
endif()

# The Debian package (scripts/package.sh): CPack's DEB generator on the install rules above. Depends
# come from dpkg-shlibdeps (the Debian 12 packages of every library the binary links: Qt 6,
# LibTorch, QCustomPlot, Graphviz, ...); OpenBLAS is chosen at run time through Debian's BLAS
# alternatives, so the fast OpenMP build is recommended rather than linked. No maintainer scripts:
# Debian's triggers refresh the desktop, MIME and icon caches and man-db's index.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tensorscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "explorer of attention mechanisms as tensor networks")
set(CPACK_PACKAGE_DESCRIPTION "Tensorscope renders attention mechanisms as executable tensor diagrams:
Tuformer's tunable-head attention with its core matrix C, fixed head size,
TP-attention with role vectors, multi-linear block-term attention and
dimension-wise attention. It trains small models with live views, exports
models and figures, and also runs headless.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Tensorscope developers <tensorscope@localhost.invalid>")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenblas0-openmp")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "dataset-fashion-mnist, bible-kjv, python3-torch")
set(CPACK_STRIP_FILES ON)
include(CPack)
