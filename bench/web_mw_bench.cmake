target_link_libraries(web_mw_bench PRIVATE csgi::middleware)
if(TARGET csgi::middleware_redis)
  target_link_libraries(web_mw_bench PRIVATE csgi::middleware_redis)
  target_compile_definitions(web_mw_bench PRIVATE CSGI_BENCH_HAVE_REDIS)
  # The suite's server (an app library) and its WebSocket fan-out client, built by bench/suites/web_mw.sh
  # when it runs, not by the default build.
  csgi_add_app(web_mw_app web_mw_app.cpp LINK csgi::middleware_redis)
  find_package(Boost 1.74 REQUIRED)
  add_executable(ws_fanout_client ws_fanout_client.cpp)
  target_link_libraries(ws_fanout_client PRIVATE Boost::headers Threads::Threads)
  set_target_properties(web_mw_app ws_fanout_client PROPERTIES EXCLUDE_FROM_ALL ON)
endif()
