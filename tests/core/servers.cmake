# The test servers' C++ side (redis_server.hpp: RedisServer, RedisCluster, PostgresServer, from
# tests/servers/launch.py) as a library of its own, test_servers: tests/core's test_support links it, and so do the
# benchmarks that start servers (bench/CMakeLists.txt), built with or without the tests. Whichever includes this file
# first defines it.
if(NOT TARGET test_servers)
  find_package(nlohmann_json 3 REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
  pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
  add_library(test_servers STATIC ${CMAKE_CURRENT_LIST_DIR}/redis_server.cpp ${CMAKE_CURRENT_LIST_DIR}/toxiproxy.cpp)
  target_include_directories(test_servers PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(test_servers PUBLIC nlohmann_json::nlohmann_json PkgConfig::HIREDIS PkgConfig::LIBPQ)
  # Every test server comes from the one launcher.
  target_compile_definitions(test_servers PRIVATE RATEWARDEN_LAUNCHER="${PROJECT_SOURCE_DIR}/tests/servers/launch.py")
endif()
