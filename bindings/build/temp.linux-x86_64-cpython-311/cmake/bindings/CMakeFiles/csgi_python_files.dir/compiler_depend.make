# Empty custom commands generated dependencies file for csgi_python_files.
# This may be replaced when dependencies are built.
