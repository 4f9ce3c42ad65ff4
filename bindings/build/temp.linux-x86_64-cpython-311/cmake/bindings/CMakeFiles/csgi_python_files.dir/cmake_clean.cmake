file(REMOVE_RECURSE
  "CMakeFiles/csgi_python_files"
  "python/csgi/__init__.py"
  "python/csgi/__init__.pyi"
  "python/csgi/_wsgi.py"
  "python/csgi/mw.pyi"
  "python/csgi/py.typed"
  "python/csgi/testing.py"
  "python/csgi/testing.pyi"
)

# Per-language clean rules from dependency scanning.
foreach(lang )
  include(CMakeFiles/csgi_python_files.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
