target_link_libraries(mw_misc_bench PRIVATE csgi::middleware)
